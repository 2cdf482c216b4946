// gfx942 only: an SGPR written by v_readfirstlane and read as a constant by the next VALU needs
// 2 wait states (the forwarding hazard of CDNA3). out[i] = in[i] + 1. The test deletes the line
// marked NOP.
  .text
  .globl ws_forward_const
  .p2align 8
  .type ws_forward_const,@function
ws_forward_const:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v4, 1
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  v_readfirstlane_b32 s9, v4
  s_nop 1 // NOP
  v_add_u32 v2, s9, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
