#include "common.h"
// Matrix cores (gfx90a/gfx942 only): f16, f32, bf16, i8 MFMA and AGPR traffic.
#if defined(__gfx90a__) || defined(__gfx942__)
typedef float float16_t __attribute__((ext_vector_type(16)));
typedef float float4_t __attribute__((ext_vector_type(4)));
typedef half half4_t __attribute__((ext_vector_type(4)));
typedef int int4_t __attribute__((ext_vector_type(4)));
typedef int int16_t __attribute__((ext_vector_type(16)));
typedef short short4_t __attribute__((ext_vector_type(4)));
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void mfma_f16(__global float16_t *c, __global const half4_t *a, __global const half4_t *b) {
  int i = GID();
  float16_t acc = c[i >> 6];
  for (int k = 0; k < 4; ++k)
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a[i + k], b[i + k], acc, 0, 0, 0);
  c[i >> 6] = acc;
}
__kernel void mfma_small(__global float4_t *c, __global const float *a, __global const float *b,
                         __global const half4_t *h, __global int4_t *ci, __global const int *ia) {
  int i = GID();
  float4_t acc = c[i];
  acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a[i], b[i], acc, 0, 0, 0);
  acc = __builtin_amdgcn_mfma_f32_16x16x16f16(h[i], h[i + 1], acc, 0, 0, 0);
  acc = __builtin_amdgcn_mfma_f32_4x4x1f32(a[i], b[i], acc, 1, 2, 3);
  c[i] = acc;
#if defined(__gfx90a__)
  ci[i] = __builtin_amdgcn_mfma_i32_16x16x16i8(ia[i], ia[i + 1], ci[i], 0, 0, 0);
#else  // gfx940+: the i8 MFMAs take 8 bytes per lane
  long la = ((long)ia[i] << 32) | (uint)ia[i + 2];
  ci[i] = __builtin_amdgcn_mfma_i32_16x16x32_i8(la, la + 1, ci[i], 0, 0, 0);
#endif
}
__kernel void mfma_bf16(__global float4_t *c, __global const short4_t *a) {
  int i = GID();
  c[i] = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a[i], a[i + 1], c[i], 0, 0, 0);
}
#else
__kernel void mfma_f16(__global float *c) { c[GID()] = 0.0f; }
#endif
