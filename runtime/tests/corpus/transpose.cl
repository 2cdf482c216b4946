// LDS transpose of 32x32 tiles (block 32x8, each work-item moves 4 elements), padded rows to
// avoid bank conflicts.
#include "common.h"

#define TILE 32
kernel void transpose(global const float* in, global float* out, uint width, uint height) {
  local float tile[TILE][TILE + 1];
  uint bx = __builtin_amdgcn_workgroup_id_x() * TILE;
  uint by = __builtin_amdgcn_workgroup_id_y() * TILE;
  uint tx = LID_X(), ty = LID_Y();
  for (uint j = 0; j < TILE; j += 8) {
    uint x = bx + tx, y = by + ty + j;
    if (x < width && y < height) tile[ty + j][tx] = in[y * width + x];
  }
  BARRIER();
  for (uint j = 0; j < TILE; j += 8) {
    uint x = by + tx, y = bx + ty + j;
    if (x < height && y < width) out[y * height + x] = tile[tx][ty + j];
  }
}
