// Kernels that must fail cleanly on the device: an out-of-bounds store and an endless loop.
#include "common.h"

kernel void oob(global int* out, uint offset) {
  uint i = GID_X();
  out[i + offset] = (int)i;
}

kernel void spin(global volatile int* flag, global int* out) {
  uint i = GID_X();
  int n = 0;
  while (flag[0] == 0) n++;
  out[i] = n;
}
