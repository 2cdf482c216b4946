// Data-dependent, divergent loops: Collatz step counts (capped) and a nested data-driven loop.
#include "common.h"

kernel void collatz(global const uint* in, global uint* out, uint n) {
  uint i = GID_X();
  if (i >= n) return;
  uint x = in[i];
  uint steps = 0;
  while (x != 1 && steps < 1000) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    steps++;
  }
  out[i] = steps;
}

kernel void nested(global const uint* in, global uint* out) {
  uint i = GID_X();
  uint a = in[i] & 15;
  uint acc = 0;
  for (uint j = 0; j < a; j++) {
    if ((j ^ a) & 1) {
      for (uint k = 0; k <= j; k++) acc += k * j;
    } else {
      acc ^= j << 3;
    }
  }
  out[i] = acc;
}
