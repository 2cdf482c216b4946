#include "common.h"
// Cross-lane operations: ds_bpermute, ds_swizzle, DPP moves, readfirstlane, ballot-like code.
__kernel void cross_lane(__global int *out, __global const int *a) {
  int i = GID();
  int v = a[i];
  int l = LID();
  int p = __builtin_amdgcn_ds_bpermute(((l + 1) & 63) * 4, v);
  int q = __builtin_amdgcn_ds_swizzle(v, 0x041f);
  int d = __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, false);
  int e = __builtin_amdgcn_mov_dpp(v, 0x1b, 0xf, 0xf, true);
  int f = __builtin_amdgcn_readfirstlane(v);
  int g = __builtin_amdgcn_update_dpp(0, v, 0x142, 0xa, 0xf, false);
  out[i] = p + q + d + e + f + g + __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0));
}
__kernel void wave_reduce(__global float *out, __global const float *a) {
  int i = GID();
  float v = a[i];
  for (int off = 32; off > 0; off >>= 1)
    v += __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(((LID() + off) & 63) << 2, __builtin_bit_cast(int, v)));
  if (LID() == 0) out[i >> 6] = v;
}
