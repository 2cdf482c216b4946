// One 32x32x8 f16 MFMA tile (gfx90a/gfx942).
typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16 __attribute__((ext_vector_type(16)));
kernel void mfma(global float16* o, global const half4* a, global const half4* b) {
  int i = __builtin_amdgcn_workitem_id_x();
  float16 c = 0;
  c = __builtin_amdgcn_mfma_f32_32x32x8f16(a[i], b[i], c, 0, 0, 0);
  o[i] = c;
}
