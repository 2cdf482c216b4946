#include "common.h"
// Global and LDS atomics (integer and float, returning and not).
__kernel void atomics(__global int *cnt, __global uint *m, __global long *l, __global float *fs,
                      __global int *old) {
  __local int hist[64];
  int i = GID();
  if (LID() < 64) hist[LID()] = 0;
  BARRIER();
  __atomic_fetch_add(&hist[i & 63], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(cnt, 1, __ATOMIC_RELAXED);
  old[i] = __atomic_fetch_max(&cnt[1], i, __ATOMIC_RELAXED);
  __atomic_fetch_or(&m[i & 7], 1u << (i & 31), __ATOMIC_RELAXED);
  __atomic_fetch_add(&l[0], (long)i, __ATOMIC_RELAXED);
  int expected = 0;
  __atomic_compare_exchange_n(&cnt[2], &expected, i, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  __atomic_fetch_add(&fs[i & 3], 1.0f, __ATOMIC_RELAXED);
  BARRIER();
  if (LID() < 64) __atomic_fetch_add(&cnt[3 + LID()], hist[LID()], __ATOMIC_RELAXED);
}
