#include "common.h"
// f32 and f64 arithmetic, division, square roots, transcendental builtins.
__kernel void f32_math(__global float *out, __global const float *a, __global const float *b, float k) {
  int i = GID();
  float x = a[i], y = b[i];
  float r = __builtin_fmaf(x, y, k) + x / y + __builtin_sqrtf(__builtin_fabsf(x));
  r += __builtin_amdgcn_rcpf(y) * __builtin_amdgcn_rsqf(y * y + 1.0f);
  r += __builtin_floorf(x) + __builtin_ceilf(y) + __builtin_truncf(x * 0.5f) + __builtin_rintf(y);
  r += __builtin_fminf(x, y) * __builtin_fmaxf(x, 2.0f);
  r += __builtin_expf(x) + __builtin_logf(__builtin_fabsf(y) + 1.0f) + __builtin_exp2f(x) + __builtin_log2f(y + 4.0f);
  r += __builtin_amdgcn_sinf(x) + __builtin_amdgcn_cosf(y) + __builtin_amdgcn_fractf(x);
  r += __builtin_copysignf(r, y) + __builtin_ldexpf(x, 3);
  out[i] = r;
}
__kernel void f64_math(__global double *out, __global const double *a, __global const double *b, double k) {
  int i = GID();
  double x = a[i], y = b[i];
  double r = __builtin_fma(x, y, k) + x / y + __builtin_sqrt(__builtin_fabs(x));
  r += __builtin_floor(x) + __builtin_trunc(y) + __builtin_rint(x);
  r += __builtin_fmin(x, y) * __builtin_fmax(x, 0.25);
  r += __builtin_amdgcn_rcp(y) + __builtin_ldexp(x, -2);
  out[i] = r * 1.5;
}
