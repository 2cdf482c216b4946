// A global store of 16 bytes reads its data VGPRs after issue: a VALU overwriting them needs 1
// wait state (2 on gfx942). Lane i stores in[i] + 1 four times to out[4i..4i+4) for lanes < 32
// (the 128-entry output); the data VGPRs are then overwritten. The test deletes the line marked NOP.
  .text
  .globl ws_wide_store
  .p2align 8
  .type ws_wide_store,@function
ws_wide_store:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  v_lshlrev_b32 v3, 4, v0
  v_cmp_gt_u32 vcc, 32, v0
  s_and_saveexec_b64 s[8:9], vcc
  s_waitcnt vmcnt(0)
  v_add_u32 v4, 1, v2
  v_mov_b32 v5, v4
  v_mov_b32 v6, v4
  v_mov_b32 v7, v4
  global_store_dwordx4 v3, v[4:7], s[6:7]
  s_nop 1 // NOP
  v_mov_b32 v4, 0
  s_endpgm
