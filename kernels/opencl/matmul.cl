// OpenCL twin of kjit's `matmul` (kernels/src/matmul.rs): c[m x n] = a[m x k] * b[k x n],
// row-major, 16x16 workgroups, one output element per work-item; per step along k a 16x16 tile
// of a and of b is staged in LDS (zeros outside the matrices), with barriers around its use.
// The kjit kernel allows contraction to fma; so does this one (OpenCL's default).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#define TILE 16u
#include "barrier.h"

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void matmul(global const float* a, uint a_len,
                   global const float* b, uint b_len,
                   global float* c, uint c_len,
                   uint m, uint n, uint k) {
  local float tile_a[TILE * TILE];
  local float tile_b[TILE * TILE];
  uint lx = __builtin_amdgcn_workitem_id_x();
  uint ly = __builtin_amdgcn_workitem_id_y();
  uint row = __builtin_amdgcn_workgroup_id_y() * TILE + ly;
  uint col = __builtin_amdgcn_workgroup_id_x() * TILE + lx;
  float acc = 0.0f;
  for (uint t = 0; t < k; t += TILE) {
    uint a_col = t + lx;
    uint ai = row * k + a_col;
    float av = ai < a_len ? a[ai] : 0.0f;
    tile_a[ly * TILE + lx] = (row < m && a_col < k) ? av : 0.0f;
    uint b_row = t + ly;
    uint bi = b_row * n + col;
    float bv = bi < b_len ? b[bi] : 0.0f;
    tile_b[ly * TILE + lx] = (b_row < k && col < n) ? bv : 0.0f;
    BARRIER();
    for (uint i = 0; i < TILE; i++) acc = acc + tile_a[ly * TILE + i] * tile_b[i * TILE + lx];
    BARRIER();
  }
  if (row < m && col < n) {
    uint ci = row * n + col;
    if (ci < c_len) c[ci] = acc;
  }
}
