// OpenCL twin of kjit's `saxpy` (kernels/src/vector.rs): y[i] = alpha * x[i] + y[i] for
// i < len(y). The kjit kernel allows contraction to fma; so does this one (OpenCL's default).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0 (kjit's raw-buffer rule).
#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void saxpy(float alpha,
                  global const float* x, uint x_len,
                  global float* y, uint y_len) {
  uint i = GID_X();
  if (i < y_len) {
    float xv = i < x_len ? x[i] : 0.0f;
    y[i] = alpha * xv + y[i];
  }
}
