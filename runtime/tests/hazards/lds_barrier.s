// 128 work-items (two waves): each writes its id to LDS, then reads the slot of work-item
// (id + 64) % 128, which the other wave wrote. The BARRIER lines (wait for the LDS write, then
// s_barrier) order the exchange; without them the device must report an LDS race.
  .text
  .globl lds_barrier
  .p2align 8
  .type lds_barrier,@function
lds_barrier:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  ds_write_b32 v1, v0
  s_waitcnt lgkmcnt(0) // BARRIER
  s_barrier // BARRIER
  v_add_u32 v2, 64, v0
  v_and_b32 v2, 0x7f, v2
  v_lshlrev_b32 v2, 2, v2
  ds_read_b32 v3, v2
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v3, s[4:5]
  s_endpgm
