// out[i] = in[i] + 1 with the load's result used after `s_waitcnt vmcnt(0)`.
// The hazard test deletes the line marked WAIT: the add then reads v2 while the load may be in
// flight, which the device must report.
  .text
  .globl vm_wait
  .p2align 8
  .type vm_wait,@function
vm_wait:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0) // WAIT
  v_add_u32 v2, 1, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
