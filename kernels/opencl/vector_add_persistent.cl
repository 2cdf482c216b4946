// OpenCL twin of kjit's `vector_add_persistent` (kernels/src/vector.rs): a fixed grid strides
// over the vector, c[i] = a[i] + b[i] for i = global_id, global_id + global_size, ... < len(c).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint). Out-of-range loads give 0 (kjit's raw-buffer rule). The buffers are
// `restrict`, as kjit's kernel declares them (`noalias`), so that both compilers may assume it.
#pragma OPENCL FP_CONTRACT OFF

#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void vector_add_persistent(global const float* restrict a, uint a_len,
                                  global const float* restrict b, uint b_len,
                                  global float* restrict c, uint c_len) {
  uint stride = __builtin_amdgcn_grid_size_x();
  for (uint i = GID_X(); i < c_len; i += stride) {
    float x = i < a_len ? a[i] : 0.0f;
    float y = i < b_len ? b[i] : 0.0f;
    c[i] = x + y;
  }
}
