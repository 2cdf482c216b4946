// OpenCL twin of kjit's `wave_permute` (kernels/src/wave_permute.rs):
// out[i] = input[(i & ~63) + idx[i] % 64], a lane shuffle within each wave of 64 (ds_bpermute,
// whose byte address selects lane (addr / 4) % 64).
// All lanes take part in the shuffle, also those past the end (they loaded 0), as in kjit.
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint). Out-of-range loads give 0, out-of-range stores are dropped.
#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void wave_permute(global const float* input, uint input_len,
                         global const uint* idx, uint idx_len,
                         global float* out, uint out_len) {
  uint i = GID_X();
  float v = i < input_len ? input[i] : 0.0f;
  uint src = i < idx_len ? idx[i] : 0u;
  int r = __builtin_amdgcn_ds_bpermute((int)(src << 2), __builtin_bit_cast(int, v));
  if (i < out_len) out[i] = __builtin_bit_cast(float, r);
}
