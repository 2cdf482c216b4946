// buffer_load_dword with the lds bit: each lane's dword goes to LDS at M0 + lane*4 (encoded as
// raw words: LLVM's assembler rejects the lds modifier). The WAIT line (vmcnt) must precede the
// ds_read of that LDS; without it the device must report the read as a hazard.
  .text
  .globl lds_dma
  .p2align 8
  .type lds_dma,@function
lds_dma:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  // Buffer resource over `in`: base s[4:5], num_records 256 bytes, raw dword format.
  s_mov_b32 s8, s4
  s_and_b32 s9, s5, 0xffff
  s_mov_b32 s10, 256
  s_mov_b32 s11, 0x00027000
  s_mov_b32 m0, 0
  v_lshlrev_b32 v1, 2, v0
  // buffer_load_dword v1, s[8:11], 0 offen lds  (0xE0511000 0x80020001)
  .long 0xE0511000, 0x80020001
  s_waitcnt vmcnt(0) // WAIT
  ds_read_b32 v2, v1
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v2, s[6:7]
  s_endpgm
