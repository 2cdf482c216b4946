// Integer dot products (gfx90a/gfx942: dot1/dot2 instructions).
typedef short short2v __attribute__((ext_vector_type(2)));

kernel void dots(global int* o, global const int* a, global const int* b) {
  int i = __builtin_amdgcn_workitem_id_x();
  o[3*i+0] = __builtin_amdgcn_sdot4(a[i], b[i], 7, false);
  o[3*i+1] = __builtin_amdgcn_sdot2(__builtin_astype(a[i], short2v), __builtin_astype(b[i], short2v), 1, false);
  o[3*i+2] = __builtin_amdgcn_sdot8(a[i], b[i], 0, true);
}
