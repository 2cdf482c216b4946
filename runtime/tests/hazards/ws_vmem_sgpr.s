// out[i] = in[i] + 1, with the high word of the load's scalar address rewritten by a VALU
// (v_readfirstlane of its own value) right before the load: VMEM reading an SGPR a VALU wrote
// needs 5 wait states on gfx9. The test deletes the line marked NOP.
  .text
  .globl ws_vmem_sgpr
  .p2align 8
  .type ws_vmem_sgpr,@function
ws_vmem_sgpr:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v3, s5
  s_nop 0
  v_readfirstlane_b32 s5, v3
  s_nop 4 // NOP
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  v_add_u32 v2, 1, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
