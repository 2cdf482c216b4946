// OpenCL twin of kjit's `vector_add` (kernels/src/vector.rs): c[i] = a[i] + b[i].
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. kjit's buffers are raw buffers whose out-of-range loads give
// 0 and whose out-of-range stores are dropped; the explicit length checks below do the same.
// Compile: clang-19 -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx942 -nogpulib -O3 -c
//          vector_add.cl -o vector_add.o && ld.lld-19 -shared vector_add.o -o vector_add.hsaco
#pragma OPENCL FP_CONTRACT OFF

#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void vector_add(global const float* a, uint a_len,
                       global const float* b, uint b_len,
                       global float* c, uint c_len) {
  uint i = GID_X();
  float x = i < a_len ? a[i] : 0.0f;
  float y = i < b_len ? b[i] : 0.0f;
  if (i < c_len) c[i] = x + y;
}
