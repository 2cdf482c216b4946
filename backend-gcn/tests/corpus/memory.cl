#include "common.h"
// Global memory of every width and vector loads/stores; private arrays (scratch).
__kernel void vectors(__global float4 *o4, __global const float4 *i4, __global float2 *o2,
                      __global const float2 *i2, __global uchar *ob, __global const ushort *is) {
  int i = GID();
  float4 v = i4[i];
  o4[i] = v.wzyx * 2.0f;
  o2[i] = i2[i] + i2[i + 1];
  ob[i] = (uchar)is[i];
}
__kernel void scratch_array(__global int *out, __global const int *idx) {
  int buf[40];
  for (int j = 0; j < 40; ++j) buf[j] = j * GID();
  out[GID()] = buf[idx[GID()] % 40] + buf[idx[GID() + 1] % 40];
}
