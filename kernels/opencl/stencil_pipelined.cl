// OpenCL twin of kjit's `stencil_pipelined` (kernels/src/pipelined.rs) at its default of 2
// stages: one Jacobi step of the 5-point stencil on a width x height row-major grid (the border
// copied). Workgroups of 256 take tiles g, g + grid, ... of 4 output rows by 254 columns; a tile
// and its halo (6 x 256 words, 0 outside the grid) go through two LDS buffers: after the
// barrier that ends every work-item's reads of the other buffer, the next tile is copied into
// it while this one is computed. Like the kjit kernel the tile loop runs in pairs (a tile past
// the last reads and writes nothing).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL FP_CONTRACT OFF
#define ROWS 4u
#define BLOCK 256u
#define BARRIER()                                              \
  do {                                                         \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");     \
    __builtin_amdgcn_s_barrier();                              \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");     \
  } while (0)

static uint at(int r, int c, int w, int h) {
  return (r >= 0 && r < h && c >= 0 && c < w) ? (uint)(r * w + c) : 0xffffffffu;
}

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void stencil_pipelined(global const float* in, uint in_len, uint width, uint height,
                              global float* out, uint out_len) {
  local float tile[2][(ROWS + 2) * BLOCK];
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint g = __builtin_amdgcn_workgroup_id_x();
  uint grid = __builtin_amdgcn_grid_size_x() / BLOCK;
  uint inner = BLOCK - 2;
  uint strips = (width + inner - 1) / inner;
  uint tiles = strips * ((height + ROWS - 1) / ROWS);
  int w = (int)width, h = (int)height;
#define ORIGIN(t, row0, col0)                                  \
  uint id = g + (t) * grid;                                    \
  int row0 = (int)(id / strips * ROWS);                        \
  int col0 = (int)(id % strips * inner) - 1
#define FILL(s, t)                                             \
  do {                                                         \
    ORIGIN(t, row0, col0);                                     \
    int c = col0 + (int)lid;                                   \
    for (uint rr = 0; rr < ROWS + 2; rr++) {                   \
      uint i = at(row0 + (int)rr - 1, c, w, h);                \
      tile[s][rr * BLOCK + lid] = i < in_len ? in[i] : 0.0f;   \
    }                                                          \
  } while (0)
  FILL(0, 0u);
  for (uint t = 0; g + t * grid < tiles; t += 2) {
    for (uint s = 0; s < 2; s++) {
      BARRIER();
      FILL(1 - s, t + s + 1);
      ORIGIN(t + s, row0, col0);
      int c = col0 + (int)lid;
      uint left = (lid > 1u ? lid : 1u) - 1u;
      uint right = (lid < BLOCK - 2 ? lid : BLOCK - 2) + 1u;
      for (uint rr = 0; rr < ROWS; rr++) {
        int r = row0 + (int)rr;
        uint mid = (rr + 1) * BLOCK;
        float up = tile[s][lid + rr * BLOCK], down = tile[s][lid + (rr + 2) * BLOCK];
        float l = tile[s][left + mid], rt = tile[s][right + mid], centre = tile[s][lid + mid];
        bool interior = r > 0 && c > 0 && r + 1 < h && c + 1 < w;
        float v = interior ? (up + down + l + rt) * 0.25f : centre;
        uint o = (lid > 0 && lid < BLOCK - 1) ? at(r, c, w, h) : 0xffffffffu;
        if (o < out_len) out[o] = v;
      }
    }
  }
}
