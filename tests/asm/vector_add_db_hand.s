// The hand-written design of issue 17 for gfx942: a persistent vector add c = a + b (256
// work-items per workgroup, 1-D), buffer descriptors with num_records = n * 4 (lanes past the end
// load 0 and their stores are dropped, no EXEC masking), two LDS buffers (a at +0, b at +1024;
// buffer 1 at +2048); the prologue fills both (tiles 0 and 1); each half-iteration reads its
// buffer with ds_read, prefetches tile t + 2 into the same buffer with buffer_load_dword ... lds
// (M0 = the wave's LDS base), adds, stores, and waits vmcnt(3) (the three operations of the
// half: two prefetches and the store), so every prefetch has a whole half-iteration to land.
// Kernel arguments: a, b, c (8 bytes each), n (u32), stride = workgroups * 256 (u32).
  .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
  .text
  .globl vector_add_db_hand
  .p2align 8
  .type vector_add_db_hand,@function
vector_add_db_hand:
  s_load_dwordx4 s[4:7], s[0:1], 0x0       // a, b
  s_load_dwordx4 s[8:11], s[0:1], 0x10     // c, n, stride
  v_readfirstlane_b32 s3, v0               // the wave's first work-item
  s_lshl_b32 s2, s2, 8                     // workgroup * 256: element of tile 0
  v_add_u32 v1, s2, v0
  v_lshlrev_b32 v1, 2, v1                  // byte offset of the lane's element of tile 0
  v_lshlrev_b32 v2, 2, v0                  // the lane's LDS word
  s_lshl_b32 s3, s3, 2                     // the wave's LDS base
  s_mov_b32 s15, 0x27000
  s_mov_b32 s19, 0x27000
  s_mov_b32 s23, 0x27000
  s_waitcnt lgkmcnt(0)
  s_lshl_b32 s14, s10, 2                   // num_records = n * 4
  s_mov_b32 s18, s14
  s_mov_b32 s22, s14
  s_mov_b32 s12, s4
  s_and_b32 s13, s5, 0xffff
  s_mov_b32 s16, s6
  s_and_b32 s17, s7, 0xffff
  s_mov_b32 s20, s8
  s_and_b32 s21, s9, 0xffff
  s_lshl_b32 s24, s11, 2                   // stride in bytes
  s_lshl_b32 s25, s11, 1                   // two strides, elements
  s_mov_b32 m0, s3
  s_lshl_b32 s26, s11, 3                   // two strides, bytes
  buffer_load_dword v1, s[12:15], 0 offen lds
  s_add_u32 m0, s3, 0x400
  v_add_u32 v3, s24, v1                    // tile 1
  buffer_load_dword v1, s[16:19], 0 offen lds
  s_add_u32 m0, s3, 0x800
  s_nop 0
  buffer_load_dword v3, s[12:15], 0 offen lds
  s_add_u32 m0, s3, 0xc00
  s_nop 0
  buffer_load_dword v3, s[16:19], 0 offen lds
  s_waitcnt vmcnt(2)
.Lloop:
  ds_read_b32 v4, v2
  ds_read_b32 v5, v2 offset:1024
  v_add_u32 v6, s26, v1                    // tile t + 2
  s_mov_b32 m0, s3
  s_nop 0
  buffer_load_dword v6, s[12:15], 0 offen lds
  s_add_u32 m0, s3, 0x400
  s_nop 0
  buffer_load_dword v6, s[16:19], 0 offen lds
  s_waitcnt lgkmcnt(0)
  v_add_f32 v4, v4, v5
  buffer_store_dword v4, v1, s[20:23], 0 offen
  v_add_u32 v1, s24, v1
  s_waitcnt vmcnt(3)
  ds_read_b32 v4, v2 offset:2048
  ds_read_b32 v5, v2 offset:3072
  v_add_u32 v6, s26, v1
  s_add_u32 m0, s3, 0x800
  s_nop 0
  buffer_load_dword v6, s[12:15], 0 offen lds
  s_add_u32 m0, s3, 0xc00
  s_nop 0
  buffer_load_dword v6, s[16:19], 0 offen lds
  s_waitcnt lgkmcnt(0)
  v_add_f32 v4, v4, v5
  buffer_store_dword v4, v1, s[20:23], 0 offen
  v_add_u32 v1, s24, v1
  s_waitcnt vmcnt(3)
  s_add_u32 s2, s2, s25
  s_cmp_lt_u32 s2, s10
  s_cbranch_scc1 .Lloop
  s_endpgm

  .rodata
  .p2align 6
  .amdhsa_kernel vector_add_db_hand
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_next_free_vgpr 7
  .amdhsa_next_free_sgpr 27
  .amdhsa_accum_offset 8
  .amdhsa_group_segment_fixed_size 4096
  .end_amdhsa_kernel
  .amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: vector_add_db_hand
    .symbol: vector_add_db_hand.kd
    .kernarg_segment_size: 32
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 4096
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 33
    .vgpr_count: 7
    .max_flat_workgroup_size: 256
    .args:
      - { .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .offset: 8, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .offset: 16, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .offset: 24, .size: 4, .value_kind: by_value }
      - { .offset: 28, .size: 4, .value_kind: by_value }
...
  .end_amdgpu_metadata
