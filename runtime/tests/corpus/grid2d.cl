// A 2-D kernel: global ids from group ids and group sizes in x and y, the grid size from the
// dispatch packet.
#include "common.h"

kernel void grid2d(global const int* in, global int* out, uint width, uint height) {
  uint x = GID_X();
  uint y = GID_Y();
  uint gw = __builtin_amdgcn_grid_size_x();
  if (x >= width || y >= height) return;
  uint i = y * width + x;
  out[i] = in[i] * 3 + (int)x - 2 * (int)y + (int)(gw & 0xff) * 1000;
}
