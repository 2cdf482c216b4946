#include "common.h"
// Divergent control flow: nested branches, loops with data-dependent trip counts, switch.
__kernel void control(__global int *out, __global const int *a, int n) {
  int i = GID();
  int v = a[i];
  int acc = 0;
  if (v & 1) {
    for (int j = 0; j < (v & 15); ++j) acc += j * v;
  } else if (v & 2) {
    while (v > 1) { v = (v & 1) ? 3 * v + 1 : v >> 1; ++acc; }
  } else {
    switch (v & 12) {
    case 0: acc = 7; break;
    case 4: acc = v * v; break;
    case 8: acc = -v; break;
    default: acc = n;
    }
  }
  if (acc > n) return;
  out[i] = acc;
}
