// Arithmetic, conversions, compares/selects and cross-lane builtins as ordinary OpenCL kernels
// compile them (clang-19 -O3, no device libraries).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
kernel void f32ops(global float* o, global const float* a, global const float* b, global int* oi) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  float x = a[i], y = b[i];
  o[8*i+0] = x / y;
  o[8*i+1] = sqrt(fabs(x)) + rsqrt(fabs(y) + 1.0f);
  o[8*i+2] = exp(x * 0.01f) + log(fabs(y) + 1.0f);
  o[8*i+3] = sin(x) * cos(y);
  o[8*i+4] = fmin(x, y) + fmax(x, y) + floor(x) + ceil(y) + trunc(x) + rint(y);
  o[8*i+5] = fma(x, y, 1.5f) + ldexp(x, 3) + fract(x, &o[8*i+7]);
  o[8*i+6] = (x < y) ? x : y * 2.0f;
  oi[4*i+0] = (int)x; oi[4*i+1] = (uint)y; oi[4*i+2] = isnan(x) | isinf(y) << 1; oi[4*i+3] = ilogb(x);
}
kernel void f64ops(global double* o, global const double* a, global const double* b, global long* ol) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  double x = a[i], y = b[i];
  o[6*i+0] = x / y;
  o[6*i+1] = sqrt(fabs(x));
  o[6*i+2] = fma(x, y, 0.5) + fmin(x, y) + floor(x) + trunc(y);
  o[6*i+3] = (double)(float)x + (double)(int)y;
  o[6*i+4] = ldexp(x, 5) + rint(y);
  o[6*i+5] = (x > y) ? x - y : y;
  ol[i] = (long)x * (long)y + ((long)x >> 3);
}
kernel void f16ops(global half* o, global const half* a, global const half* b, global float* of) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  half x = a[i], y = b[i];
  o[4*i+0] = x * y + x;
  o[4*i+1] = fmax(x, y) - fmin(x, y);
  o[4*i+2] = sqrt(fabs(x));
  o[4*i+3] = fma(x, y, (half)1.0);
  of[i] = (float)x + (float)(int)y;
}
kernel void intops(global uint* o, global const uint* a, global const uint* b) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  uint x = a[i], y = b[i];
  o[10*i+0] = x / (y | 1) + x % (y | 1);
  o[10*i+1] = (int)x / ((int)y | 1);
  o[10*i+2] = mul_hi(x, y) + mad24(x, y, 7u) + mul24(x, y);
  o[10*i+3] = clz(x) + popcount(y) + ctz(x);
  o[10*i+4] = rotate(x, y) ^ (x >> (y & 31)) ^ ((int)x >> 7);
  o[10*i+5] = min(x, y) + max((int)x, (int)y) + abs((int)x) + (x ^ ~y);
  o[10*i+6] = (x & 0xff00) | ((y >> 8) & 0xff) | ((x >> 3) & 0x7f) << 20;
  o[10*i+7] = (uchar)x * (ushort)y + (x > y);
  ulong p = (ulong)x * y + a[i+1]; o[10*i+8] = (uint)(p >> 32) + (uint)p;
  o[10*i+9] = hadd(x, y) + add_sat(x, y) + sub_sat((int)x, (int)y);
}
kernel void cross(global int* o, global const int* a) {
  int i = __builtin_amdgcn_workitem_id_x();
  int v = a[i];
  v += __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, 0);
  v += __builtin_amdgcn_update_dpp(0, v, 0x112, 0xf, 0xf, 0);
  v += __builtin_amdgcn_update_dpp(0, v, 0x142, 0xa, 0xf, 0);
  v += __builtin_amdgcn_mov_dpp(v, 0x143, 0xc, 0xf, 0);
  v += __builtin_amdgcn_ds_bpermute(((i + 1) & 63) << 2, v);
  v += __builtin_amdgcn_readfirstlane(v) + __builtin_amdgcn_readlane(v, 5);
  o[i] = v + __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
