// OpenCL twin of kjit's `stencil_pipelined` (kernels/src/pipelined.rs): one Jacobi step of the
// 5-point stencil on a width x height row-major grid (the border copied), over the same
// persistent tiles (workgroups of 256 take tiles g, g + grid, ... of 4 output rows by 254
// columns), but reading the neighbours straight from global memory instead of through an LDS
// halo (a twin of the computation, not of the LDS pipeline).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL FP_CONTRACT OFF
#define ROWS 4u
#define BLOCK 256u

static uint at(int r, int c, int w, int h) {
  return (r >= 0 && r < h && c >= 0 && c < w) ? (uint)(r * w + c) : 0xffffffffu;
}

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void stencil_pipelined(global const float* in, uint in_len, uint width, uint height,
                              global float* out, uint out_len) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint g = __builtin_amdgcn_workgroup_id_x();
  uint grid = __builtin_amdgcn_grid_size_x() / BLOCK;
  uint inner = BLOCK - 2;
  uint strips = (width + inner - 1) / inner;
  uint tiles = strips * ((height + ROWS - 1) / ROWS);
  int w = (int)width, h = (int)height;
  if (lid == 0 || lid >= BLOCK - 1) return;
  for (uint id = g; id < tiles; id += grid) {
    int row0 = (int)(id / strips * ROWS);
    int c = (int)(id % strips * inner) - 1 + (int)lid;
    for (uint rr = 0; rr < ROWS; rr++) {
      int r = row0 + (int)rr;
      uint o = at(r, c, w, h);
      if (o >= out_len) continue;
      bool interior = r > 0 && c > 0 && r + 1 < h && c + 1 < w;
      float v = in[o];
      if (interior)
        v = (in[o - width] + in[o + width] + in[o - 1] + in[o + 1]) * 0.25f;
      out[o] = v;
    }
  }
}
