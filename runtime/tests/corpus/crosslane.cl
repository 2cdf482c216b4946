// Cross-lane operations: ds_bpermute rotation, DPP row shifts (an inclusive scan within rows of
// 16 lanes), ds_swizzle, readfirstlane.
#include "common.h"

kernel void rotate(global const int* in, global int* out, int shift) {
  uint i = GID_X();
  uint lane = LID_X() & 63;
  int v = in[i];
  int src = (int)((lane + (uint)shift) & 63);
  out[i] = __builtin_amdgcn_ds_bpermute(src * 4, v);
}

kernel void row_scan(global const int* in, global int* out) {
  uint i = GID_X();
  int v = in[i];
  // Inclusive scan over each row of 16 lanes with row_shr:1,2,4,8 (dpp_ctrl 0x111, 0x112, 0x114,
  // 0x118); bound_ctrl so that lanes shifted in from outside the row read 0.
  v += __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x112, 0xf, 0xf, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x114, 0xf, 0xf, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x118, 0xf, 0xf, true);
  out[i] = v;
}

kernel void swizzle_first(global const int* in, global int* out) {
  uint i = GID_X();
  int v = in[i];
  // Quad mode 0x80aa... swap neighbours in bit-mask mode: and 0x1f, xor 1.
  int s = __builtin_amdgcn_ds_swizzle(v, 0x041f);
  int f = __builtin_amdgcn_readfirstlane(v);
  out[i] = s * 1000 + f;
}
