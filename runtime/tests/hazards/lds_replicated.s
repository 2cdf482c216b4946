// 256 work-items (four waves) hold replicated data: every wave writes lane l's value to LDS slot
// l with no barrier between the waves' writes, reads its own slot back, and after a barrier
// reads the neighbouring lane's slot. Every wave writes the same bytes (the lane), so this is
// no race. Without the REPLICATED line each wave writes its work-item id, which differs between
// waves: the second wave's write must be reported as an LDS race.
  .text
  .globl lds_replicated
  .p2align 8
  .type lds_replicated,@function
lds_replicated:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  v_and_b32 v1, 63, v0
  v_mov_b32 v2, v0
  v_and_b32 v2, 63, v0 // REPLICATED
  v_lshlrev_b32 v3, 2, v1
  ds_write_b32 v3, v2
  s_waitcnt lgkmcnt(0)
  ds_read_b32 v4, v3
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_xor_b32 v5, 1, v1
  v_lshlrev_b32 v5, 2, v5
  ds_read_b32 v6, v5
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32 v6, 8, v6
  v_or_b32 v6, v6, v4
  v_lshlrev_b32 v7, 2, v0
  global_store_dword v7, v6, s[4:5]
  s_endpgm
