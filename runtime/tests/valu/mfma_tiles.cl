// MFMA tiles beyond the 32x32x8 f16 one of the emulator corpus (gfx90a/gfx942).
typedef half half4 __attribute__((ext_vector_type(4)));
typedef short short4 __attribute__((ext_vector_type(4)));
typedef float float4v __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));

// One 16x16x16 f16 tile: lane l holds A[l%16][4*(l/16)..+3] and B[4*(l/16)..+3][l%16].
kernel void mfma_16x16x16_f16(global const half4* a, global const half4* b, global const float4v* c, global float4v* d) {
  uint l = __builtin_amdgcn_workitem_id_x();
  d[l] = __builtin_amdgcn_mfma_f32_16x16x16f16(a[l], b[l], c[l], 0, 0, 0);
}

// One 32x32x8 bf16 tile (the gfx90a "_1k" form).
kernel void mfma_32x32x8_bf16(global const short4* a, global const short4* b, global float16v* d) {
  uint l = __builtin_amdgcn_workitem_id_x();
  d[l] = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a[l], b[l], (float16v)0.0f, 0, 0, 0);
}
