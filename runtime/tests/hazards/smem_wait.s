// The kernarg pointer loads go through SMEM; the WAIT line is the only thing that makes s[4:7]
// valid before the first vector memory instruction uses them.
  .text
  .globl smem_wait
  .p2align 8
  .type smem_wait,@function
smem_wait:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0) // WAIT
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  v_add_u32 v2, 1, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
