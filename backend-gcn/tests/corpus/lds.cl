#include "common.h"
// LDS: tree reduction with barriers, transpose through LDS, 64-bit LDS traffic.
__kernel void lds_reduce(__global float *out, __global const float *a) {
  __local float tile[256];
  int l = LID();
  tile[l] = a[GID()];
  BARRIER();
  for (int s = 128; s > 0; s >>= 1) {
    if (l < s) tile[l] += tile[l + s];
    BARRIER();
  }
  if (l == 0) out[__builtin_amdgcn_workgroup_id_x()] = tile[0];
}
__kernel void lds_transpose(__global double *out, __global const double *a) {
  __local double t[16][17];
  int l = LID();
  int r = l / 16, c = l % 16;
  t[r][c] = a[GID()];
  BARRIER();
  out[GID()] = t[c][r] + t[(c + 1) & 15][r];
}
