#include "common.h"
// 32- and 64-bit integer arithmetic, shifts, bit counting, division. Written without OpenCL
// library calls (min/max/abs/rotate/mul_hi need device libraries, which -nogpulib leaves out);
// clang still selects v_mul_hi/v_max/v_min/v_alignbit for the open-coded forms.
__kernel void int32_ops(__global int *out, __global const int *a, __global const uint *b, int s) {
  int i = GID();
  int x = a[i];
  uint y = b[i];
  int r = x * s + (x >> 3) - (int)(y << 5);
  r ^= (int)(y >> (s & 31));
  r += __builtin_popcount(y) + __builtin_clz(y | 1) + __builtin_ctz(y | 0x100);
  r += (int)(uint)(((ulong)(uint)x * (ulong)y) >> 32) + x / (s | 1) + (int)(y % 7u);
  r = (r > x ? r : x) - ((int)y < s ? (int)y : s);
  r += (x < 0 ? -x : x) + (int)(((uint)x << 7) | ((uint)x >> 25)) + (int)(y & 0xff00ff);
  r += (x > 0) ? (int)y : -x;
  out[i] = r;
}
__kernel void int64_ops(__global long *out, __global const long *a, __global const ulong *b, long s) {
  int i = GID();
  long x = a[i];
  ulong y = b[i];
  long r = x * s + (x >> 9) - (long)(y << 13);
  r += (long)(y / 3ul) + x % (s | 1);
  r += (long)__builtin_popcountl(y) + (long)__builtin_clzl(y | 1);
  r = (r < x) ? r : x ^ (long)y;
  out[i] = r + (x >> 32) * (s >> 32);
}
__kernel void int16_8(__global short *o16, __global uchar *o8, __global const short *a, __global const char *c) {
  int i = GID();
  short v = a[i];
  char w = c[i];
  o16[i] = (short)(v * 3 + (v >> 2) - w);
  o8[i] = (uchar)(w + (char)v) | (uchar)(v & 0x5);
}
