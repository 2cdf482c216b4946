// OpenCL twin of kjit's `vector_add_pipelined` (kernels/src/pipelined.rs): c = a + b with a
// persistent grid striding over 256-element tiles, both inputs staged through two LDS buffers
// per input (double buffering): the prologue fills tiles 0 and 1; each tile is read from its
// buffer, the tile two rounds ahead is copied into the same buffer, then the sum is stored.
// Each work-item reads only the LDS words it wrote, so there is no barrier. Tiles past the end
// load 0 and store nothing, as in the kjit kernel.
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint). Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL FP_CONTRACT OFF

#define LOAD(p, len, i) ((i) < (len) ? (p)[i] : 0.0f)

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void vector_add_pipelined(global const float* a, uint a_len,
                                 global const float* b, uint b_len,
                                 global float* c, uint c_len) {
  local float ta[2][256];
  local float tb[2][256];
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint first = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x();
  uint stride = __builtin_amdgcn_grid_size_x();
  for (uint s = 0; s < 2; s++) {
    uint i = first + s * stride + lid;
    ta[s][lid] = LOAD(a, a_len, i);
    tb[s][lid] = LOAD(b, b_len, i);
  }
  for (uint t = 0; first + t * stride < c_len; t += 2) {
    for (uint s = 0; s < 2; s++) {
      uint i = first + (t + s) * stride + lid;
      float x = ta[s][lid] + tb[s][lid];
      if (i < c_len) c[i] = x;
      uint j = i + 2 * stride;
      ta[s][lid] = LOAD(a, a_len, j);
      tb[s][lid] = LOAD(b, b_len, j);
    }
  }
}
