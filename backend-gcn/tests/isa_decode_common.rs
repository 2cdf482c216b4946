//! Decoder + printer against LLVM on the instructions compilers use most: each line is assembled
//! by `llvm-mc-19`, and kjit's decoder must consume exactly the encoded dwords and print LLVM's
//! own text for them (whitespace-normalised).

mod isa_common;

use isa_common::{mc_assemble, normalize, words_of};
use kjit_backend_gcn::isa::decode;
use kjit_backend_gcn::llvm_oracle::{require, Tool};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;

const COMMON: &str = r#"
s_mov_b32 s0, s1
s_mov_b64 s[0:1], exec
s_mov_b32 s5, 0x12345678
s_mov_b32 s5, -7
s_movk_i32 s3, 0x1234
s_add_u32 s0, s1, 64
s_addc_u32 s1, s2, 0
s_lshl_b64 s[2:3], s[4:5], 2
s_and_saveexec_b64 s[4:5], vcc
s_andn2_b64 exec, exec, s[4:5]
s_cmp_lg_u32 s3, 0
s_cmp_eq_u64 s[2:3], 0
s_cselect_b32 s1, s2, 1.0
s_cbranch_scc1 12
s_cbranch_execz 3
s_branch 65533
s_waitcnt vmcnt(0) lgkmcnt(0)
s_waitcnt lgkmcnt(0)
s_barrier
s_endpgm
s_nop 0
s_getpc_b64 s[0:1]
s_load_dwordx2 s[0:1], s[4:5], 0x0
s_load_dwordx4 s[8:11], s[4:5], 0x10
s_load_dword s6, s[4:5], 0x1c
s_buffer_load_dword s1, s[4:7], 0x4
s_store_dword s1, s[2:3], 0x8 glc
v_mov_b32_e32 v0, s2
v_mov_b32_e32 v1, 0x3f800000
v_mov_b32_e32 v1, 1.0
v_add_f32_e32 v0, v1, v2
v_add_f32_e64 v0, -v1, |v2|
v_add_u32_e32 v0, s4, v0
v_add_co_u32_e32 v0, vcc, s4, v0
v_addc_co_u32_e32 v1, vcc, 0, v1, vcc
v_add_co_u32_e64 v0, s[2:3], v1, v2
v_sub_u32_e32 v3, v4, v5
v_mul_lo_u32 v0, v1, v2
v_mul_hi_u32 v0, s1, v2
v_mad_u64_u32 v[0:1], s[2:3], v4, v5, v[6:7]
v_lshlrev_b32_e32 v0, 2, v0
v_lshlrev_b64 v[0:1], 2, v[0:1]
v_ashrrev_i32_e32 v1, 31, v0
v_and_b32_e32 v0, 0xff, v0
v_or_b32_e32 v0, v1, v2
v_cndmask_b32_e32 v0, v1, v2, vcc
v_cndmask_b32_e64 v0, 0, 1, s[4:5]
v_cmp_gt_u32_e32 vcc, s4, v0
v_cmp_lt_f32_e64 s[2:3], v0, 0.5
v_cmp_eq_u32_e64 vcc, 0, v1
v_cmpx_gt_i32_e32 vcc, 1, v0
v_fma_f32 v0, v1, v2, v3
v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]
v_add_f64 v[0:1], v[2:3], -v[4:5]
v_mul_f64 v[0:1], v[2:3], 0.5
v_rcp_f32_e32 v0, v1
v_rsq_f64_e32 v[0:1], v[2:3]
v_sqrt_f32_e32 v0, v1
v_exp_f32_e32 v0, v1
v_cvt_f32_i32_e32 v0, v1
v_cvt_u32_f32_e32 v0, v1
v_cvt_f64_f32_e32 v[0:1], v2
v_cvt_f32_f16_e32 v0, v1
v_cvt_f16_f32_e32 v0, v1
v_cvt_pkrtz_f16_f32 v0, v1, v2
v_add_f16_e32 v0, v1, v2
v_fma_f16 v0, v1, v2, v3
v_pk_add_f16 v0, v1, v2
v_pk_fma_f16 v0, v1, v2, v3 op_sel_hi:[0,1,1]
v_max_f32_e32 v0, v1, v2
v_min3_f32 v0, v1, v2, v3
v_med3_i32 v0, v1, v2, v3
v_bfe_u32 v0, v1, 8, 8
v_alignbit_b32 v0, v1, v2, 16
v_lshl_add_u32 v0, v1, 2, v2
v_add3_u32 v0, v1, v2, v3
v_xad_u32 v0, v1, v2, v3
v_perm_b32 v0, v1, v2, v3
v_mbcnt_lo_u32_b32 v0, -1, 0
v_mbcnt_hi_u32_b32 v0, -1, v0
v_readfirstlane_b32 s0, v1
v_readlane_b32 s0, v1, 63
v_writelane_b32 v1, s0, 5
v_div_scale_f32 v0, vcc, v1, v2, v1
v_div_fmas_f32 v0, v1, v2, v3
v_div_fixup_f32 v0, v1, v2, v3
v_frexp_mant_f64_e32 v[0:1], v[2:3]
v_ldexp_f32 v0, v1, v2
v_bfi_b32 v0, v1, v2, v3
v_ffbh_u32_e32 v0, v1
v_bcnt_u32_b32 v0, v1, 0
v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_add_u32_dpp v0, v1, v0 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1
v_mov_b32_sdwa v0, v1 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0
ds_read_b32 v0, v1
ds_read_b32 v0, v1 offset:1024
ds_write_b32 v1, v2 offset:4
ds_read2_b32 v[0:1], v2 offset1:1
ds_write2_b32 v0, v1, v2 offset0:2 offset1:3
ds_read_b64 v[0:1], v2
ds_write_b128 v0, v[4:7]
ds_add_u32 v0, v1
ds_add_rtn_u32 v0, v1, v2
ds_bpermute_b32 v0, v1, v2
ds_swizzle_b32 v0, v1 offset:swizzle(SWAP,1)
ds_cmpst_rtn_b32 v0, v1, v2, v3
buffer_load_dword v2, v1, s[16:19], 0 offen
buffer_store_dword v2, off, s[0:3], s5 offset:4
buffer_load_dwordx4 v[0:3], v4, s[8:11], s12 idxen offset:16
global_load_dword v0, v[0:1], off
global_load_dwordx4 v[0:3], v4, s[2:3] offset:16
global_store_dword v[0:1], v2, off offset:-4
global_store_dwordx2 v0, v[2:3], s[0:1]
global_atomic_add_x2 v[0:1], v[2:3], off
flat_load_dword v0, v[0:1]
flat_store_dword v[0:1], v2 offset:8
scratch_load_dword v0, off, s4 offset:16
scratch_store_dword v1, v2, off
"#;

const CDNA: &str = r#"
v_fmac_f32_e32 v0, v1, v2
v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]
v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], 0
v_mfma_f32_16x16x16f16 v[0:3], v[4:5], v[6:7], v[0:3] cbsz:1 abid:1 blgp:2
v_mfma_f32_4x4x1f32 a[0:3], v0, v1, a[0:3]
v_accvgpr_read_b32 v0, a1
v_accvgpr_write_b32 a0, v1
v_accvgpr_write_b32 a0, 0
v_accvgpr_mov_b32 a0, a1
v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]
v_pk_mul_f32 v[0:1], v[2:3], v[4:5] op_sel_hi:[0,1]
v_pk_add_f32 v[0:1], v[2:3], v[4:5]
v_pk_mov_b32 v[0:1], v[2:3], v[4:5] op_sel:[1,0]
global_load_dword a0, v[0:1], off
ds_read_b64 a[0:1], v0
buffer_store_dword a1, v1, s[0:3], 0 offen
"#;

const GFX942: &str = r#"
buffer_atomic_add v0, v1, s[4:7], 0 offen sc0
global_atomic_add v0, v[0:1], v2, off sc0
global_atomic_cmpswap_x2 v[0:1], v2, v[4:7], s[0:1] sc0 sc1
flat_atomic_inc v0, v[0:1], v2 sc0
v_lshl_add_u64 v[0:1], v[2:3], 2, v[4:5]
v_mov_b64_e32 v[0:1], v[2:3]
global_load_dword v0, v[0:1], off sc0 sc1
global_store_dword v[0:1], v2, off nt
buffer_load_dword v2, v1, s[16:19], 0 offen sc0 nt sc1
buffer_inv sc1
buffer_wbl2 sc0 sc1
"#;

const PRE940: &str = r#"
v_mac_f32_e32 v0, v1, v2
v_mad_f32 v0, v1, v2, v3
buffer_atomic_add v0, v1, s[4:7], 0 offen glc
global_atomic_add v0, v[0:1], v2, off glc
global_atomic_cmpswap v0, v[0:1], v[2:3], off glc
flat_atomic_inc v0, v[0:1], v2 glc
ds_swizzle_b32 v0, v1
ds_swizzle_b32 v0, v1 offset:swizzle(QUAD_PERM,1,0,3,2)
ds_swizzle_b32 v0, v1 offset:swizzle(REVERSE,8)
ds_swizzle_b32 v0, v1 offset:swizzle(BROADCAST,8,3)
ds_swizzle_b32 v0, v1 offset:0x1234
global_load_dword v0, v[0:1], off glc slc
buffer_wbinvl1_vol
"#;

fn lines_for(t: Target) -> Vec<String> {
    let mut text = COMMON.to_string();
    if t.has_agprs() {
        text.push_str(CDNA);
    }
    if t.is_gfx940_family() {
        text.push_str(GFX942);
    } else {
        text.push_str(PRE940);
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn decoder_prints_llvm_text_for_common_instructions() {
    let Some(mc) = require(Tool::Mc, "decoder_prints_llvm_text_for_common_instructions") else {
        return;
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for t in ALL_TARGETS {
        let lines = lines_for(t);
        let assembled = mc_assemble(&mc, t, &lines);
        for (line, res) in lines.iter().zip(assembled) {
            let Some((text, bytes)) = res else {
                failures.push(format!("{t}: llvm-mc rejected the test line `{line}`"));
                continue;
            };
            let words = words_of(&bytes);
            match decode(&words, t) {
                Ok((inst, n)) => {
                    let ours = inst.display(t).to_string();
                    if n != words.len() {
                        failures.push(format!(
                            "{t}: `{text}` is {} dwords, we used {n}",
                            words.len()
                        ));
                    } else if normalize(&ours) != normalize(&text) {
                        failures.push(format!("{t}: LLVM `{text}`, kjit `{ours}`"));
                    } else {
                        checked += 1;
                    }
                }
                Err(e) => failures.push(format!("{t}: `{text}` {words:08x?}: {e}")),
            }
        }
    }
    println!("decoded and printed {checked} instructions like LLVM");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
