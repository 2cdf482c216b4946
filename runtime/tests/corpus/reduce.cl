// LDS tree reduction with barriers: 256 work-items (4 waves) per group, one sum per group.
#include "common.h"

kernel void reduce_sum(global const float* in, global float* out) {
  local float s[256];
  uint t = LID_X();
  s[t] = in[__builtin_amdgcn_workgroup_id_x() * 256 + t];
  for (uint k = 128; k > 0; k >>= 1) {
    BARRIER();
    if (t < k) s[t] += s[t + k];
  }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = s[0];
}

kernel void reduce_max_u32(global const uint* in, global uint* out) {
  local uint s[256];
  uint t = LID_X();
  s[t] = in[__builtin_amdgcn_workgroup_id_x() * 256 + t];
  for (uint k = 128; k > 0; k >>= 1) {
    BARRIER();
    if (t < k) s[t] = s[t] > s[t + k] ? s[t] : s[t + k];
  }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = s[0];
}
