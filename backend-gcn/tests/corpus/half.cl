#include "common.h"
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// f16 arithmetic (scalar and packed) and conversions.
__kernel void f16_math(__global half *out, __global const half *a, __global const half *b, __global const half2 *p, __global half2 *q) {
  int i = GID();
  half x = a[i], y = b[i];
  half r = x * y + (half)1.5 - x / y;
  r = __builtin_fmaf16(r, x, y) + __builtin_sqrtf16(__builtin_fabsf16(x));
  r = (r > y) ? r : __builtin_fminf16(x, y);
  out[i] = r;
  half2 v = p[i];
  q[i] = v * v + (half2)(0.5h, 2.0h);
}
__kernel void f16_convert(__global float *f, __global half *h, __global short *s, __global const half *a, __global const float *b) {
  int i = GID();
  f[i] = (float)a[i] * 2.0f;
  h[i] = (half)b[i];
  s[i] = (short)a[i] + (short)(ushort)b[i];
}
