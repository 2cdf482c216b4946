// gfx90a/gfx942 MFMA wait states (LLVM 19 GCNHazardRecognizer: checkMAIHazards90A,
// checkMAIVALUHazards; the numbers are in backend-gcn/src/mfma_hazards.rs). out[i] = in[i] + 1:
// every MFMA multiplies zeros, its results are 0 and are added in. Each `// NOP_x` line gives the
// wait states of one rule (the larger of the two targets' needs); the test deletes one marker at
// a time and expects that rule's report.
  .text
  .globl ws_mfma
  .p2align 8
  .type ws_mfma,@function
ws_mfma:
  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_mov_b32 v4, 0
  v_mov_b32 v12, 0
  v_mov_b32 v13, 0
  v_mov_b32 v14, 0
  v_mov_b32 v15, 0
  s_waitcnt lgkmcnt(0)
  global_load_dword v2, v1, s[4:5]
// A: a VALU writes v5, an MFMA reads it as SrcA/B: 2.
  v_mov_b32 v5, 0
  s_nop 1 // NOP_A
  v_mfma_f32_4x4x4f16 v[8:11], v[4:5], v[4:5], v[12:15]
// C: an MFMA reads the same registers as SrcC: gfx942 2 (2 passes), gfx90a 0.
  s_nop 1 // NOP_C
  v_mfma_f32_4x4x4f16 v[8:11], v[4:5], v[4:5], v[8:11]
// B: an MFMA reads overlapping registers as SrcC: gfx90a 2 (P), gfx942 3 (XDL: P + 1).
  s_nop 2 // NOP_B
  v_mfma_f32_4x4x4f16 v[16:19], v[4:5], v[4:5], v[10:13]
// D: an MFMA reads the result as SrcA/B: 5 (P + 3).
  s_nop 4 // NOP_D
  v_mfma_f32_4x4x4f16 v[20:23], v[16:17], v[16:17], v[12:15]
// H: a VALU overwrites an MFMA result (WAW): 5.
  s_nop 4 // NOP_H
  v_mov_b32 v20, 0
// J: a VALU writes EXEC (v_cmpx; every lane passes), then an MFMA: 4.
  v_cmpx_le_u32_e64 s[10:11], 0, v0
  s_nop 3 // NOP_J
// I: an LDS write reads an MFMA result: 5.
  v_mfma_f32_4x4x4f16 v[24:27], v[4:5], v[4:5], v[12:15]
  s_nop 4 // NOP_I
  ds_write_b32 v1, v24
// K: a VALU refills a DGEMM result after the WAW wait (11, 16x16), then an LDS write reads
// it: the DGEMM's memory-read wait (18) still counts from the DGEMM (LLVM looks back for the
// MFMA def over the VALU def in between), 6 more.
  v_mfma_f64_16x16x4f64 v[32:39], v[4:5], v[4:5], 0
  s_nop 7
  s_nop 2
  v_mov_b32 v32, 0
  s_nop 5 // NOP_K
  ds_write_b32 v1, v32
// F: v_accvgpr_write, then an MFMA reads the AGPR as SrcC: 2.
  v_accvgpr_write_b32 a16, 0
  v_accvgpr_write_b32 a17, 0
  v_accvgpr_write_b32 a18, 0
  v_accvgpr_write_b32 a19, 0
  s_nop 1 // NOP_F
  v_mfma_f32_4x4x4f16 a[20:23], v[4:5], v[4:5], a[16:19]
// E: v_accvgpr_read of an MFMA result: gfx90a 19 (32x32x8f16, 16 passes), gfx942 11 (8 passes).
  v_mfma_f32_32x32x8f16 a[0:15], v[4:5], v[4:5], 0
  s_nop 7 // NOP_E
  s_nop 7 // NOP_E
  s_nop 2 // NOP_E
  v_accvgpr_read_b32 v6, a0
// G: a VALU overwrites what an MFMA still reads as SrcC (WAR): gfx90a 7 (16x16x16f16, 8
// passes: P - 1), gfx942 3 (4 passes).
  v_mfma_f32_16x16x16f16 a[24:27], v[4:5], v[4:5], a[16:19]
  s_nop 6 // NOP_G
  v_accvgpr_write_b32 a16, 0
  s_waitcnt vmcnt(0)
  v_add_u32 v2, 1, v2
  v_add_u32 v2, v6, v2
  v_add_u32 v2, v21, v2
  global_store_dword v1, v2, s[6:7]
  s_endpgm
