#include "common.h"
// Compares of every type, selects, and NaN checks.
__kernel void compares(__global int *out, __global const float *a, __global const float *b,
                       __global const double *c, __global const long *l, __global const uint *u) {
  int i = GID();
  float x = a[i], y = b[i];
  int r = (x < y) + (x == y) * 2 + (x >= y) * 4 + (x != x) * 8;
  r += (c[i] > 1.0) ? 16 : 0;
  r += (l[i] < 0) ? 32 : (l[i] == 7 ? 64 : 0);
  r += (u[i] > 10u) ? (int)u[i] : -1;
  float s = (x > 0.0f) ? x : y;
  r += (__builtin_isnan(s) || __builtin_isinf(y)) ? 128 : 0;
  out[i] = r;
}
