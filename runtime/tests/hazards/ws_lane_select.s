// out[i] = in[i] + 1, where the 1 comes
// from v_readlane with a lane select that a VALU just wrote (v_readfirstlane of lane 0's id, 0):
// the lane select needs 4 wait states after the VALU write. The test deletes the line marked NOP.
  .text
  .globl ws_lane_select
  .p2align 8
  .type ws_lane_select,@function
ws_lane_select:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v4, 1
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
  v_readfirstlane_b32 s9, v0
  s_nop 3 // NOP
  v_readlane_b32 s10, v4, s9
  s_nop 1
  s_waitcnt vmcnt(0)
  v_add_u32 v2, s10, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
