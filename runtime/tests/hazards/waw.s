// A load into v2 followed by an ALU write of v2: without the WAIT line the load would land after
// the ALU result and overwrite it.
  .text
  .globl waw
  .p2align 8
  .type waw,@function
waw:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0) // WAIT
  v_mov_b32 v2, v0
  global_store_dword v1, v2, s[6:7]
  s_endpgm
