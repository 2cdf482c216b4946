// gfx942 only: a transcendental result read by the next non-transcendental VALU needs 1 wait
// state. out[i] = in[i] + 1 (the product rcp(1.0) * 0 is 0). The test deletes the line marked NOP.
  .text
  .globl ws_trans
  .p2align 8
  .type ws_trans,@function
ws_trans:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v4, 1.0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  v_rcp_f32 v3, v4
  s_nop 0 // NOP
  v_mul_f32 v5, 0, v3
  s_waitcnt vmcnt(0)
  v_add_u32 v2, 1, v2
  v_add_u32 v2, v5, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
