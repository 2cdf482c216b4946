// OpenCL twin of kjit's `seed_2d` (kernels/src/seed_2d.rs):
// dst[gy * width + gx] = lid_x * a + lid_y * b[0] where gx < width and gy < height.
// The kjit kernel does not contract (its reference is bit-exact), so neither does this one.
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL FP_CONTRACT OFF

#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define GID_Y() (__builtin_amdgcn_workgroup_id_y() * __builtin_amdgcn_workgroup_size_y() + __builtin_amdgcn_workitem_id_y())

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void seed_2d(float a,
                    global const float* b, uint b_len,
                    global float* dst, uint dst_len,
                    uint width, uint height) {
  uint gx = GID_X();
  uint gy = GID_Y();
  if (gx < width && gy < height) {
    uint gid = gy * width + gx;
    float lx = (float)__builtin_amdgcn_workitem_id_x();
    float ly = (float)__builtin_amdgcn_workitem_id_y();
    float b0 = 0 < b_len ? b[0] : 0.0f;
    float v = lx * a + ly * b0;
    if (gid < dst_len) dst[gid] = v;
  }
}
