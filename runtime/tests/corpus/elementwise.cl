// Element-wise f32, f64 and f16 math: one output per work-item, n may leave a partial wave.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "common.h"

kernel void ew_f32(global const float* a, global const float* b, global float* out, uint n) {
  uint i = GID_X();
  if (i >= n) return;
  float x = a[i], y = b[i];
  float r = __builtin_fmaf(x, y, 1.5f) + x / y;
  r += __builtin_sqrtf(__builtin_fabsf(x)) - __builtin_fminf(x, y) * __builtin_fmaxf(x, 0.25f);
  r += __builtin_floorf(x * 3.0f) + __builtin_ceilf(y) + (float)(int)(y * 7.0f);
  out[i] = r;
}

kernel void ew_f64(global const double* a, global const double* b, global double* out, uint n) {
  uint i = GID_X();
  if (i >= n) return;
  double x = a[i], y = b[i];
  double r = __builtin_fma(x, y, -0.75) + x / y + __builtin_sqrt(__builtin_fabs(y));
  r += __builtin_fmin(x, y) + __builtin_floor(x * 5.0) + (double)(long)(x * 1000.0);
  out[i] = r;
}

kernel void ew_f16(global const half* a, global const half* b, global half* out, global float* wide, uint n) {
  uint i = GID_X();
  if (i >= n) return;
  half x = a[i], y = b[i];
  half r = x * y + (half)0.5f - x;
  out[i] = r;
  wide[i] = (float)x * (float)y;
}
