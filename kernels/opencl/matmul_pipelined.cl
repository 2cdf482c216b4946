// OpenCL twin of kjit's `matmul_pipelined` (kernels/src/pipelined.rs) at its default of 2
// stages: c[m x n] = a[m x k] * b[k x n], row-major, 16x16 workgroups; the k loop streams 16x16
// tiles of a and b through two LDS buffers each: after the barrier that ends every work-item's
// reads of the other buffer, tile t + 1 is copied into it while tile t is multiplied. Elements
// outside the matrices are 0. Like the kjit kernel it runs the k loop in pairs of tiles (a
// tile past the end is all zeros and adds nothing).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#define TILE 16u
#include "barrier.h"

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void matmul_pipelined(global const float* a, uint a_len,
                             global const float* b, uint b_len,
                             global float* c, uint c_len,
                             uint m, uint n, uint k) {
  local float tile_a[2][TILE * TILE];
  local float tile_b[2][TILE * TILE];
  uint lx = __builtin_amdgcn_workitem_id_x();
  uint ly = __builtin_amdgcn_workitem_id_y();
  uint row = __builtin_amdgcn_workgroup_id_y() * TILE + ly;
  uint col = __builtin_amdgcn_workgroup_id_x() * TILE + lx;
  float acc = 0.0f;
#define FILL(s, t)                                                             \
  do {                                                                         \
    uint a_col = (t) * TILE + lx;                                              \
    uint ai = (row < m && a_col < k) ? row * k + a_col : 0xffffffffu;          \
    tile_a[s][ly * TILE + lx] = ai < a_len ? a[ai] : 0.0f;                     \
    uint b_row = (t) * TILE + ly;                                              \
    uint bi = (b_row < k && col < n) ? b_row * n + col : 0xffffffffu;          \
    tile_b[s][ly * TILE + lx] = bi < b_len ? b[bi] : 0.0f;                     \
  } while (0)
  FILL(0, 0u);
  for (uint t = 0; t * TILE < k; t += 2) {
    for (uint s = 0; s < 2; s++) {
      BARRIER();
      FILL(1 - s, t + s + 1);
      for (uint i = 0; i < TILE; i++)
        acc = acc + tile_a[s][ly * TILE + i] * tile_b[s][i * TILE + lx];
    }
  }
  uint ci = (row < m && col < n) ? row * n + col : 0xffffffffu;
  if (ci < c_len) c[ci] = acc;
}
