//! The vector-ALU opcode table: every VOP1/VOP2/VOP3/VOP3P mnemonic the device implements
//! (compares and MFMA are parametric, see [`ValuOp`]), mapped once at decode time from the
//! instruction layer's mnemonic.

use super::compare::{FloatPred, IntPred};
use super::mfma::MfmaShape;

mnemonic_enum! {
    /// A named vector-ALU operation (the mnemonic without encoding suffix).
    Op {
    // ---- VOP1
    Nop = "v_nop", MovB32 = "v_mov_b32", ReadfirstlaneB32 = "v_readfirstlane_b32",
    CvtI32F64 = "v_cvt_i32_f64", CvtF64I32 = "v_cvt_f64_i32", CvtF32I32 = "v_cvt_f32_i32",
    CvtF32U32 = "v_cvt_f32_u32", CvtU32F32 = "v_cvt_u32_f32", CvtI32F32 = "v_cvt_i32_f32",
    CvtF16F32 = "v_cvt_f16_f32", CvtF32F16 = "v_cvt_f32_f16", CvtRpiI32F32 = "v_cvt_rpi_i32_f32",
    CvtFlrI32F32 = "v_cvt_flr_i32_f32", CvtOffF32I4 = "v_cvt_off_f32_i4", CvtF32F64 = "v_cvt_f32_f64",
    CvtF64F32 = "v_cvt_f64_f32", CvtF32Ubyte0 = "v_cvt_f32_ubyte0", CvtF32Ubyte1 = "v_cvt_f32_ubyte1",
    CvtF32Ubyte2 = "v_cvt_f32_ubyte2", CvtF32Ubyte3 = "v_cvt_f32_ubyte3", CvtU32F64 = "v_cvt_u32_f64",
    CvtF64U32 = "v_cvt_f64_u32", TruncF64 = "v_trunc_f64", CeilF64 = "v_ceil_f64",
    RndneF64 = "v_rndne_f64", FloorF64 = "v_floor_f64", FractF32 = "v_fract_f32",
    TruncF32 = "v_trunc_f32", CeilF32 = "v_ceil_f32", RndneF32 = "v_rndne_f32",
    FloorF32 = "v_floor_f32", ExpF32 = "v_exp_f32", LogF32 = "v_log_f32", RcpF32 = "v_rcp_f32",
    RcpIflagF32 = "v_rcp_iflag_f32", RsqF32 = "v_rsq_f32", RcpF64 = "v_rcp_f64", RsqF64 = "v_rsq_f64",
    SqrtF32 = "v_sqrt_f32", SqrtF64 = "v_sqrt_f64", SinF32 = "v_sin_f32", CosF32 = "v_cos_f32",
    NotB32 = "v_not_b32", BfrevB32 = "v_bfrev_b32", FfbhU32 = "v_ffbh_u32", FfblB32 = "v_ffbl_b32",
    FfbhI32 = "v_ffbh_i32", FrexpExpI32F64 = "v_frexp_exp_i32_f64", FrexpMantF64 = "v_frexp_mant_f64",
    FractF64 = "v_fract_f64", FrexpExpI32F32 = "v_frexp_exp_i32_f32", FrexpMantF32 = "v_frexp_mant_f32",
    Clrexcp = "v_clrexcp", MovB64 = "v_mov_b64", CvtF16U16 = "v_cvt_f16_u16", CvtF16I16 = "v_cvt_f16_i16",
    CvtU16F16 = "v_cvt_u16_f16", CvtI16F16 = "v_cvt_i16_f16", RcpF16 = "v_rcp_f16", SqrtF16 = "v_sqrt_f16",
    RsqF16 = "v_rsq_f16", LogF16 = "v_log_f16", ExpF16 = "v_exp_f16", FrexpMantF16 = "v_frexp_mant_f16",
    FrexpExpI16F16 = "v_frexp_exp_i16_f16", FloorF16 = "v_floor_f16", CeilF16 = "v_ceil_f16",
    TruncF16 = "v_trunc_f16", RndneF16 = "v_rndne_f16", FractF16 = "v_fract_f16", SinF16 = "v_sin_f16",
    CosF16 = "v_cos_f16", ExpLegacyF32 = "v_exp_legacy_f32", LogLegacyF32 = "v_log_legacy_f32",
    CvtNormI16F16 = "v_cvt_norm_i16_f16", CvtNormU16F16 = "v_cvt_norm_u16_f16",
    SatPkU8I16 = "v_sat_pk_u8_i16", SwapB32 = "v_swap_b32", AccvgprMovB32 = "v_accvgpr_mov_b32",
    CvtF32Fp8 = "v_cvt_f32_fp8", CvtF32Bf8 = "v_cvt_f32_bf8", CvtPkF32Fp8 = "v_cvt_pk_f32_fp8",
    CvtPkF32Bf8 = "v_cvt_pk_f32_bf8", MovrelsB32 = "v_movrels_b32", MovreldB32 = "v_movreld_b32",
    MovrelsdB32 = "v_movrelsd_b32",
    // ---- VOP2
    CndmaskB32 = "v_cndmask_b32", AddF32 = "v_add_f32", SubF32 = "v_sub_f32", SubrevF32 = "v_subrev_f32",
    MulLegacyF32 = "v_mul_legacy_f32", MulF32 = "v_mul_f32", MulI32I24 = "v_mul_i32_i24",
    MulHiI32I24 = "v_mul_hi_i32_i24", MulU32U24 = "v_mul_u32_u24", MulHiU32U24 = "v_mul_hi_u32_u24",
    MinF32 = "v_min_f32", MaxF32 = "v_max_f32", MinI32 = "v_min_i32", MaxI32 = "v_max_i32",
    MinU32 = "v_min_u32", MaxU32 = "v_max_u32", LshrrevB32 = "v_lshrrev_b32", AshrrevI32 = "v_ashrrev_i32",
    LshlrevB32 = "v_lshlrev_b32", AndB32 = "v_and_b32", OrB32 = "v_or_b32", XorB32 = "v_xor_b32",
    MacF32 = "v_mac_f32", MadmkF32 = "v_madmk_f32", MadakF32 = "v_madak_f32",
    AddCoU32 = "v_add_co_u32", SubCoU32 = "v_sub_co_u32", SubrevCoU32 = "v_subrev_co_u32",
    AddcCoU32 = "v_addc_co_u32", SubbCoU32 = "v_subb_co_u32", SubbrevCoU32 = "v_subbrev_co_u32",
    AddF16 = "v_add_f16", SubF16 = "v_sub_f16", SubrevF16 = "v_subrev_f16", MulF16 = "v_mul_f16",
    MacF16 = "v_mac_f16", MadmkF16 = "v_madmk_f16", MadakF16 = "v_madak_f16", AddU16 = "v_add_u16",
    SubU16 = "v_sub_u16", SubrevU16 = "v_subrev_u16", MulLoU16 = "v_mul_lo_u16",
    LshlrevB16 = "v_lshlrev_b16", LshrrevB16 = "v_lshrrev_b16", AshrrevI16 = "v_ashrrev_i16",
    MaxF16 = "v_max_f16", MinF16 = "v_min_f16", MaxU16 = "v_max_u16", MaxI16 = "v_max_i16",
    MinU16 = "v_min_u16", MinI16 = "v_min_i16", LdexpF16 = "v_ldexp_f16", AddU32 = "v_add_u32",
    SubU32 = "v_sub_u32", SubrevU32 = "v_subrev_u32", FmacF32 = "v_fmac_f32", FmacF64 = "v_fmac_f64",
    FmamkF32 = "v_fmamk_f32", FmaakF32 = "v_fmaak_f32", XnorB32 = "v_xnor_b32",
    Dot2cF32F16 = "v_dot2c_f32_f16", Dot2cI32I16 = "v_dot2c_i32_i16", Dot4cI32I8 = "v_dot4c_i32_i8",
    Dot8cI32I4 = "v_dot8c_i32_i4", PkFmacF16 = "v_pk_fmac_f16",
    // ---- VOP3 only
    MadLegacyF32 = "v_mad_legacy_f32", MadF32 = "v_mad_f32", MadI32I24 = "v_mad_i32_i24",
    MadU32U24 = "v_mad_u32_u24", BfeU32 = "v_bfe_u32", BfeI32 = "v_bfe_i32", BfiB32 = "v_bfi_b32",
    FmaF32 = "v_fma_f32", FmaF64 = "v_fma_f64", LerpU8 = "v_lerp_u8", AlignbitB32 = "v_alignbit_b32",
    AlignbyteB32 = "v_alignbyte_b32", Min3F32 = "v_min3_f32", Min3I32 = "v_min3_i32",
    Min3U32 = "v_min3_u32", Max3F32 = "v_max3_f32", Max3I32 = "v_max3_i32", Max3U32 = "v_max3_u32",
    Med3F32 = "v_med3_f32", Med3I32 = "v_med3_i32", Med3U32 = "v_med3_u32", SadU8 = "v_sad_u8",
    SadHiU8 = "v_sad_hi_u8", SadU16 = "v_sad_u16", SadU32 = "v_sad_u32", CvtPkU8F32 = "v_cvt_pk_u8_f32",
    DivFixupF32 = "v_div_fixup_f32", DivFixupF64 = "v_div_fixup_f64", DivScaleF32 = "v_div_scale_f32",
    DivScaleF64 = "v_div_scale_f64", DivFmasF32 = "v_div_fmas_f32", DivFmasF64 = "v_div_fmas_f64",
    MsadU8 = "v_msad_u8", QsadPkU16U8 = "v_qsad_pk_u16_u8", MqsadPkU16U8 = "v_mqsad_pk_u16_u8",
    MqsadU32U8 = "v_mqsad_u32_u8", MadU64U32 = "v_mad_u64_u32", MadI64I32 = "v_mad_i64_i32",
    MadLegacyF16 = "v_mad_legacy_f16", MadLegacyU16 = "v_mad_legacy_u16", MadLegacyI16 = "v_mad_legacy_i16",
    PermB32 = "v_perm_b32", FmaLegacyF16 = "v_fma_legacy_f16", DivFixupLegacyF16 = "v_div_fixup_legacy_f16",
    CvtPkaccumU8F32 = "v_cvt_pkaccum_u8_f32", MadU32U16 = "v_mad_u32_u16", MadI32I16 = "v_mad_i32_i16",
    XadU32 = "v_xad_u32", Min3F16 = "v_min3_f16", Min3I16 = "v_min3_i16", Min3U16 = "v_min3_u16",
    Max3F16 = "v_max3_f16", Max3I16 = "v_max3_i16", Max3U16 = "v_max3_u16", Med3F16 = "v_med3_f16",
    Med3I16 = "v_med3_i16", Med3U16 = "v_med3_u16", LshlAddU32 = "v_lshl_add_u32",
    AddLshlU32 = "v_add_lshl_u32", Add3U32 = "v_add3_u32", LshlOrB32 = "v_lshl_or_b32",
    AndOrB32 = "v_and_or_b32", Or3B32 = "v_or3_b32", MadF16 = "v_mad_f16", MadU16 = "v_mad_u16",
    MadI16 = "v_mad_i16", FmaF16 = "v_fma_f16", DivFixupF16 = "v_div_fixup_f16",
    LshlAddU64 = "v_lshl_add_u64", AddF64 = "v_add_f64", MulF64 = "v_mul_f64", MinF64 = "v_min_f64",
    MaxF64 = "v_max_f64", LdexpF64 = "v_ldexp_f64", MulLoU32 = "v_mul_lo_u32", MulHiU32 = "v_mul_hi_u32",
    MulHiI32 = "v_mul_hi_i32", LdexpF32 = "v_ldexp_f32", ReadlaneB32 = "v_readlane_b32",
    WritelaneB32 = "v_writelane_b32", BcntU32B32 = "v_bcnt_u32_b32", MbcntLoU32B32 = "v_mbcnt_lo_u32_b32",
    MbcntHiU32B32 = "v_mbcnt_hi_u32_b32", LshlrevB64 = "v_lshlrev_b64", LshrrevB64 = "v_lshrrev_b64",
    AshrrevI64 = "v_ashrrev_i64", TrigPreopF64 = "v_trig_preop_f64", BfmB32 = "v_bfm_b32",
    CvtPknormI16F32 = "v_cvt_pknorm_i16_f32", CvtPknormU16F32 = "v_cvt_pknorm_u16_f32",
    CvtPkrtzF16F32 = "v_cvt_pkrtz_f16_f32", CvtPkU16U32 = "v_cvt_pk_u16_u32", CvtPkI16I32 = "v_cvt_pk_i16_i32",
    CvtPknormI16F16 = "v_cvt_pknorm_i16_f16", CvtPknormU16F16 = "v_cvt_pknorm_u16_f16",
    AddI32 = "v_add_i32", SubI32 = "v_sub_i32", AddI16 = "v_add_i16", SubI16 = "v_sub_i16",
    PackB32F16 = "v_pack_b32_f16", CvtPkFp8F32 = "v_cvt_pk_fp8_f32", CvtPkBf8F32 = "v_cvt_pk_bf8_f32",
    CvtSrFp8F32 = "v_cvt_sr_fp8_f32", CvtSrBf8F32 = "v_cvt_sr_bf8_f32",
    // ---- VOP3P
    PkMadI16 = "v_pk_mad_i16", PkMulLoU16 = "v_pk_mul_lo_u16", PkAddI16 = "v_pk_add_i16",
    PkSubI16 = "v_pk_sub_i16", PkLshlrevB16 = "v_pk_lshlrev_b16", PkLshrrevB16 = "v_pk_lshrrev_b16",
    PkAshrrevI16 = "v_pk_ashrrev_i16", PkMaxI16 = "v_pk_max_i16", PkMinI16 = "v_pk_min_i16",
    PkMadU16 = "v_pk_mad_u16", PkAddU16 = "v_pk_add_u16", PkSubU16 = "v_pk_sub_u16",
    PkMaxU16 = "v_pk_max_u16", PkMinU16 = "v_pk_min_u16", PkFmaF16 = "v_pk_fma_f16",
    PkAddF16 = "v_pk_add_f16", PkMulF16 = "v_pk_mul_f16", PkMinF16 = "v_pk_min_f16",
    PkMaxF16 = "v_pk_max_f16", MadMixF32 = "v_mad_mix_f32", MadMixloF16 = "v_mad_mixlo_f16",
    MadMixhiF16 = "v_mad_mixhi_f16", FmaMixF32 = "v_fma_mix_f32", FmaMixloF16 = "v_fma_mixlo_f16",
    FmaMixhiF16 = "v_fma_mixhi_f16", Dot2F32F16 = "v_dot2_f32_f16", Dot2I32I16 = "v_dot2_i32_i16",
    Dot2U32U16 = "v_dot2_u32_u16", Dot4I32I8 = "v_dot4_i32_i8", Dot4U32U8 = "v_dot4_u32_u8",
    Dot8I32I4 = "v_dot8_i32_i4", Dot8U32U4 = "v_dot8_u32_u4", PkFmaF32 = "v_pk_fma_f32",
    PkMulF32 = "v_pk_mul_f32", PkAddF32 = "v_pk_add_f32", PkMovB32 = "v_pk_mov_b32",
    AccvgprReadB32 = "v_accvgpr_read_b32", AccvgprWriteB32 = "v_accvgpr_write_b32",
    }
}

/// Operand type of a compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpType {
    /// f16.
    F16,
    /// f32.
    F32,
    /// f64.
    F64,
    /// i16.
    I16,
    /// u16.
    U16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// i64.
    I64,
    /// u64.
    U64,
}

/// What a compare tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpKind {
    /// A float predicate.
    Float(FloatPred),
    /// An integer predicate.
    Int(IntPred),
    /// `v_cmp_class`.
    Class,
}

/// A VOPC operation: `v_cmp[x]_<pred>_<type>` or `v_cmp[x]_class_<type>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CmpOp {
    /// The predicate.
    pub kind: CmpKind,
    /// The operand type.
    pub ty: CmpType,
    /// `v_cmpx`: the result is also written to EXEC.
    pub writes_exec: bool,
}

/// A vector-ALU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValuOp {
    /// A named operation.
    Op(Op),
    /// A compare.
    Cmp(CmpOp),
    /// A matrix multiply-add.
    Mfma(MfmaShape),
}

impl ValuOp {
    /// Maps a mnemonic (an `_e32/_e64/_dpp/_sdwa/_vop3` suffix is ignored) to the operation.
    pub fn from_name(name: &str) -> Option<ValuOp> {
        let mut n = name;
        for suf in ["_e32", "_e64", "_dpp", "_sdwa", "_vop3"] {
            if let Some(s) = n.strip_suffix(suf) {
                n = s;
            }
        }
        if let Some(op) = Op::from_name(n) {
            return Some(ValuOp::Op(op));
        }
        if let Some(rest) = n.strip_prefix("v_mfma_") {
            return MfmaShape::from_name(rest).map(ValuOp::Mfma);
        }
        let (rest, writes_exec) = if let Some(r) = n.strip_prefix("v_cmpx_") {
            (r, true)
        } else if let Some(r) = n.strip_prefix("v_cmp_") {
            (r, false)
        } else {
            return None;
        };
        let (pred, ty) = rest.rsplit_once('_')?;
        let ty = match ty {
            "f16" => CmpType::F16,
            "f32" => CmpType::F32,
            "f64" => CmpType::F64,
            "i16" => CmpType::I16,
            "u16" => CmpType::U16,
            "i32" => CmpType::I32,
            "u32" => CmpType::U32,
            "i64" => CmpType::I64,
            "u64" => CmpType::U64,
            _ => return None,
        };
        let float = matches!(ty, CmpType::F16 | CmpType::F32 | CmpType::F64);
        let kind = if pred == "class" {
            if !float {
                return None;
            }
            CmpKind::Class
        } else if float {
            const P: [&str; 16] = [
                "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle",
                "neq", "nlt", "tru",
            ];
            CmpKind::Float(FloatPred::from_index(
                P.iter().position(|p| *p == pred)? as u32
            )?)
        } else {
            const P: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];
            CmpKind::Int(IntPred::from_index(
                P.iter().position(|p| *p == pred)? as u32
            )?)
        };
        Some(ValuOp::Cmp(CmpOp {
            kind,
            ty,
            writes_exec,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_map_to_operations() {
        assert_eq!(
            ValuOp::from_name("v_add_f32_e32"),
            Some(ValuOp::Op(Op::AddF32))
        );
        assert_eq!(
            ValuOp::from_name("v_add_co_u32_e64"),
            Some(ValuOp::Op(Op::AddCoU32))
        );
        let c = ValuOp::from_name("v_cmpx_nlt_f64_e32").unwrap();
        assert_eq!(
            c,
            ValuOp::Cmp(CmpOp {
                kind: CmpKind::Float(FloatPred::Nlt),
                ty: CmpType::F64,
                writes_exec: true
            })
        );
        assert!(matches!(
            ValuOp::from_name("v_cmp_class_f16"),
            Some(ValuOp::Cmp(_))
        ));
        assert!(ValuOp::from_name("v_cmp_class_u32").is_none());
        assert!(ValuOp::from_name("v_cmp_lg_u32").is_none());
        assert!(matches!(
            ValuOp::from_name("v_mfma_f32_32x32x8f16"),
            Some(ValuOp::Mfma(_))
        ));
        assert!(ValuOp::from_name("v_frobnicate").is_none());
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(*op));
        }
    }
}
