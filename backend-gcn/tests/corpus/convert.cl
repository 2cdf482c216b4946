#include "common.h"
// Conversions between integer and float types of every width.
__kernel void conversions(__global float *f, __global double *d, __global int *n, __global uint *u,
                          __global long *l, __global const int *a, __global const float *b, __global const double *c,
                          __global const uchar *bytes) {
  int i = GID();
  f[i] = (float)a[i] + (float)(uint)a[i] + (float)c[i] + (float)bytes[i];
  d[i] = (double)b[i] + (double)a[i] + (double)(uint)a[i] + (double)(long)a[i];
  n[i] = (int)b[i] + (int)c[i];
  u[i] = (uint)b[i] + (uint)c[i] + bytes[i + 1];
  l[i] = (long)b[i] + (long)c[i] + (long)(ulong)c[i];
}
