// OpenCL twin of kjit's `reduce_sum` (kernels/src/reduce.rs): partial[g] = sum of the 256
// elements x[g*256 .. g*256+256] (missing elements count as 0), by an LDS tree reduction that
// halves the active work-items each step with a barrier between steps. Workgroups of 256,
// declared (`reqd_work_group_size`), as the kjit kernel declares its workgroup size: both fold
// the group size to a constant.
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint). Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL FP_CONTRACT OFF

#define BLOCK 256u
#include "barrier.h"

__attribute__((reqd_work_group_size(BLOCK, 1, 1)))
kernel void reduce_sum(global const float* x, uint x_len,
                       global float* partial, uint partial_len) {
  local float tile[BLOCK];
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint group = __builtin_amdgcn_workgroup_id_x();
  uint gid = group * BLOCK + lid;
  tile[lid] = gid < x_len ? x[gid] : 0.0f;
  BARRIER();
  for (uint s = BLOCK / 2; s > 0; s >>= 1) {
    if (lid < s) tile[lid] = tile[lid] + tile[lid + s];
    BARRIER();
  }
  if (lid == 0 && group < partial_len) partial[group] = tile[0];
}
