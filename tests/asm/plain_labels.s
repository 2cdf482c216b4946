// Hand-written gfx942 kernel whose branch labels are plain names (local symbols in .text, not
// assembler-temporary `.L` labels), and whose kernel symbol has no `.size`: out[gid] =
// sum over i < n of (gid + i + 3), by an outer loop over i and an inner loop of three steps.
  .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
  .text
  .globl plain_labels
  .p2align 8
  .type plain_labels,@function
plain_labels:
  s_load_dwordx2 s[4:5], s[0:1], 0x0
  s_load_dword s6, s[0:1], 0x8
  s_lshl_b32 s8, s2, 6
  v_add_u32 v3, s8, v0
  v_mov_b32 v1, 0
  s_mov_b32 s7, 0
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s6, 0
  s_cbranch_scc1 L_done
L_outer:
  v_add_u32 v1, v1, v3
  v_add_u32 v1, s7, v1
  s_mov_b32 s9, 3
L_inner:
  v_add_u32 v1, 1, v1
  s_sub_u32 s9, s9, 1
  s_cmp_lg_u32 s9, 0
  s_cbranch_scc1 L_inner
  s_add_u32 s7, s7, 1
  s_cmp_lt_u32 s7, s6
  s_cbranch_scc1 L_outer
L_done:
  v_lshlrev_b32 v2, 2, v3
  global_store_dword v2, v1, s[4:5]
  s_endpgm

  .rodata
  .p2align 6
  .amdhsa_kernel plain_labels
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_next_free_vgpr 4
  .amdhsa_next_free_sgpr 16
  .amdhsa_accum_offset 4
  .amdhsa_kernarg_size 16
  .end_amdhsa_kernel
  .amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: plain_labels
    .symbol: plain_labels.kd
    .kernarg_segment_size: 16
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 4
    .max_flat_workgroup_size: 256
    .args:
      - { .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }
      - { .name: count, .offset: 8, .size: 4, .value_kind: by_value }
...
  .end_amdgpu_metadata
