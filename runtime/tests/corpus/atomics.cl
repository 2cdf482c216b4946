// Global atomics: a histogram (atomic add), a global maximum, and a float sum via
// compare-exchange loops.
#include "common.h"

kernel void histogram(global const uint* in, global uint* bins, uint n, uint nbins) {
  uint i = GID_X();
  if (i >= n) return;
  __atomic_fetch_add(&bins[in[i] % nbins], 1u, __ATOMIC_RELAXED);
}

kernel void global_max(global const uint* in, global uint* result) {
  uint i = GID_X();
  __atomic_fetch_max(result, in[i], __ATOMIC_RELAXED);
}

kernel void count_and_slot(global uint* counter, global uint* slots) {
  uint i = GID_X();
  uint s = __atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED);
  slots[s] = i;
}

// LDS atomics from all four waves of a group (no race: atomics), then one global add per bin.
kernel void local_histogram(global const uint* in, global uint* bins) {
  local uint h[16];
  uint t = LID_X();
  if (t < 16) h[t] = 0;
  BARRIER();
  __atomic_fetch_add(&h[in[GID_X()] & 15], 1u, __ATOMIC_RELAXED);
  BARRIER();
  if (t < 16) __atomic_fetch_add(&bins[t], h[t], __ATOMIC_RELAXED);
}

// An LDS compare-exchange loop (`ds_cmpst_rtn_b32`: data0 is the compare value, data1 the new
// one): each group sums its inputs' low bytes.
kernel void local_cas_sum(global const uint* in, global uint* sums) {
  local uint s;
  if (LID_X() == 0) s = 0;
  BARRIER();
  uint v = in[GID_X()] & 255u;
  // A first guess of 0, not a load: a plain LDS read of `s` would race with other waves'
  // exchanges (the device reports it); a failed exchange returns the current value.
  uint old = 0;
  while (!__atomic_compare_exchange_n(&s, &old, old + v, false, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  BARRIER();
  if (LID_X() == 0) sums[__builtin_amdgcn_workgroup_id_x()] = s;
}
