// Private (scratch) memory: a per-work-item array indexed by data, so it cannot live in
// registers (buffer_* through the scratch V# on gfx900/gfx90a, scratch_* on gfx942).
#include "common.h"

kernel void private_array(global const uint* in, global uint* out) {
  uint i = GID_X();
  uint a[48];
  for (uint k = 0; k < 48; k++) a[k] = k * 3u + i;
  uint x = in[i];
  uint s = 0;
  for (uint k = 0; k < 8; k++) {
    uint j = (x >> (k * 4)) % 48u;
    a[j] += k;
    s += a[(j * 7u) % 48u];
  }
  out[i] = s;
}
