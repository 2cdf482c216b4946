//! Scalar ALU and program control: SOP1, SOP2, SOPK, SOPC semantics, and the SOPP instructions
//! that do not need the scheduler (branches; `s_waitcnt`, `s_barrier`, `s_endpgm` come back to the
//! caller as a [`Flow`]).
//!
//! Takes a [`ScalarInst`] (the opcode mapped once, at decode time, from its mnemonic to a
//! [`ScalarOp`], with operand codes resolved) and the wave; gives the new wave state and what the
//! scheduler must do next. Semantics follow the Vega and CDNA3 ISA guides ("Scalar ALU
//! Operations", "Program Flow Control"); SCC is written exactly by the instructions the guides
//! say write it.

use super::wave::{code, EmuError, SrcType, Wave, PRIVATE_APERTURE, SHARED_APERTURE};

/// What the scheduler does after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Continue at the next instruction.
    Next,
    /// Continue at this byte address.
    Jump(u64),
    /// `s_waitcnt vmcnt(vm) expcnt(exp) lgkmcnt(lgkm)`.
    Wait {
        /// vmcnt.
        vm: u32,
        /// expcnt.
        exp: u32,
        /// lgkmcnt.
        lgkm: u32,
    },
    /// `s_barrier`.
    Barrier,
    /// `s_endpgm`.
    End,
}

mnemonic_enum! {
    /// A scalar-unit operation (SOP1/SOP2/SOPK/SOPC/SOPP), named as in the ISA.
    ScalarOp {
    // SOP2
    AddU32 = "s_add_u32", SubU32 = "s_sub_u32", AddI32 = "s_add_i32", SubI32 = "s_sub_i32",
    AddcU32 = "s_addc_u32", SubbU32 = "s_subb_u32",
    MinI32 = "s_min_i32", MinU32 = "s_min_u32", MaxI32 = "s_max_i32", MaxU32 = "s_max_u32",
    CselectB32 = "s_cselect_b32", CselectB64 = "s_cselect_b64",
    AndB32 = "s_and_b32", AndB64 = "s_and_b64", OrB32 = "s_or_b32", OrB64 = "s_or_b64",
    XorB32 = "s_xor_b32", XorB64 = "s_xor_b64", Andn2B32 = "s_andn2_b32", Andn2B64 = "s_andn2_b64",
    Orn2B32 = "s_orn2_b32", Orn2B64 = "s_orn2_b64", NandB32 = "s_nand_b32", NandB64 = "s_nand_b64",
    NorB32 = "s_nor_b32", NorB64 = "s_nor_b64", XnorB32 = "s_xnor_b32", XnorB64 = "s_xnor_b64",
    LshlB32 = "s_lshl_b32", LshlB64 = "s_lshl_b64", LshrB32 = "s_lshr_b32", LshrB64 = "s_lshr_b64",
    AshrI32 = "s_ashr_i32", AshrI64 = "s_ashr_i64", BfmB32 = "s_bfm_b32", BfmB64 = "s_bfm_b64",
    MulI32 = "s_mul_i32", BfeU32 = "s_bfe_u32", BfeI32 = "s_bfe_i32", BfeU64 = "s_bfe_u64",
    BfeI64 = "s_bfe_i64", AbsdiffI32 = "s_absdiff_i32", MulHiU32 = "s_mul_hi_u32",
    MulHiI32 = "s_mul_hi_i32", Lshl1AddU32 = "s_lshl1_add_u32", Lshl2AddU32 = "s_lshl2_add_u32",
    Lshl3AddU32 = "s_lshl3_add_u32", Lshl4AddU32 = "s_lshl4_add_u32",
    PackLlB32B16 = "s_pack_ll_b32_b16", PackLhB32B16 = "s_pack_lh_b32_b16",
    PackHhB32B16 = "s_pack_hh_b32_b16",
    // SOP1
    MovB32 = "s_mov_b32", MovB64 = "s_mov_b64", CmovB32 = "s_cmov_b32", CmovB64 = "s_cmov_b64",
    NotB32 = "s_not_b32", NotB64 = "s_not_b64", WqmB32 = "s_wqm_b32", WqmB64 = "s_wqm_b64",
    BrevB32 = "s_brev_b32", BrevB64 = "s_brev_b64", Bcnt0I32B32 = "s_bcnt0_i32_b32",
    Bcnt0I32B64 = "s_bcnt0_i32_b64", Bcnt1I32B32 = "s_bcnt1_i32_b32", Bcnt1I32B64 = "s_bcnt1_i32_b64",
    Ff0I32B32 = "s_ff0_i32_b32", Ff0I32B64 = "s_ff0_i32_b64", Ff1I32B32 = "s_ff1_i32_b32",
    Ff1I32B64 = "s_ff1_i32_b64", FlbitI32B32 = "s_flbit_i32_b32", FlbitI32B64 = "s_flbit_i32_b64",
    FlbitI32 = "s_flbit_i32", FlbitI32I64 = "s_flbit_i32_i64", SextI32I8 = "s_sext_i32_i8",
    SextI32I16 = "s_sext_i32_i16", Bitset0B32 = "s_bitset0_b32", Bitset0B64 = "s_bitset0_b64",
    Bitset1B32 = "s_bitset1_b32", Bitset1B64 = "s_bitset1_b64", GetpcB64 = "s_getpc_b64",
    SetpcB64 = "s_setpc_b64", SwappcB64 = "s_swappc_b64",
    AndSaveexecB64 = "s_and_saveexec_b64", OrSaveexecB64 = "s_or_saveexec_b64",
    XorSaveexecB64 = "s_xor_saveexec_b64", Andn2SaveexecB64 = "s_andn2_saveexec_b64",
    Orn2SaveexecB64 = "s_orn2_saveexec_b64", NandSaveexecB64 = "s_nand_saveexec_b64",
    NorSaveexecB64 = "s_nor_saveexec_b64", XnorSaveexecB64 = "s_xnor_saveexec_b64",
    Andn1SaveexecB64 = "s_andn1_saveexec_b64", Orn1SaveexecB64 = "s_orn1_saveexec_b64",
    Andn1WrexecB64 = "s_andn1_wrexec_b64", Andn2WrexecB64 = "s_andn2_wrexec_b64",
    QuadmaskB32 = "s_quadmask_b32", QuadmaskB64 = "s_quadmask_b64",
    MovrelsB32 = "s_movrels_b32", MovrelsB64 = "s_movrels_b64",
    MovreldB32 = "s_movreld_b32", MovreldB64 = "s_movreld_b64",
    AbsI32 = "s_abs_i32", BitreplicateB64B32 = "s_bitreplicate_b64_b32",
    // SOPK
    MovkI32 = "s_movk_i32", CmovkI32 = "s_cmovk_i32",
    CmpkEqI32 = "s_cmpk_eq_i32", CmpkLgI32 = "s_cmpk_lg_i32", CmpkGtI32 = "s_cmpk_gt_i32",
    CmpkGeI32 = "s_cmpk_ge_i32", CmpkLtI32 = "s_cmpk_lt_i32", CmpkLeI32 = "s_cmpk_le_i32",
    CmpkEqU32 = "s_cmpk_eq_u32", CmpkLgU32 = "s_cmpk_lg_u32", CmpkGtU32 = "s_cmpk_gt_u32",
    CmpkGeU32 = "s_cmpk_ge_u32", CmpkLtU32 = "s_cmpk_lt_u32", CmpkLeU32 = "s_cmpk_le_u32",
    AddkI32 = "s_addk_i32", MulkI32 = "s_mulk_i32", GetregB32 = "s_getreg_b32",
    SetregB32 = "s_setreg_b32", SetregImm32B32 = "s_setreg_imm32_b32", CallB64 = "s_call_b64",
    // SOPC
    CmpEqI32 = "s_cmp_eq_i32", CmpLgI32 = "s_cmp_lg_i32", CmpGtI32 = "s_cmp_gt_i32",
    CmpGeI32 = "s_cmp_ge_i32", CmpLtI32 = "s_cmp_lt_i32", CmpLeI32 = "s_cmp_le_i32",
    CmpEqU32 = "s_cmp_eq_u32", CmpLgU32 = "s_cmp_lg_u32", CmpGtU32 = "s_cmp_gt_u32",
    CmpGeU32 = "s_cmp_ge_u32", CmpLtU32 = "s_cmp_lt_u32", CmpLeU32 = "s_cmp_le_u32",
    Bitcmp0B32 = "s_bitcmp0_b32", Bitcmp1B32 = "s_bitcmp1_b32", Bitcmp0B64 = "s_bitcmp0_b64",
    Bitcmp1B64 = "s_bitcmp1_b64", CmpEqU64 = "s_cmp_eq_u64", CmpLgU64 = "s_cmp_lg_u64",
    // SOPP
    Nop = "s_nop", Endpgm = "s_endpgm", Branch = "s_branch", Wakeup = "s_wakeup",
    CbranchScc0 = "s_cbranch_scc0", CbranchScc1 = "s_cbranch_scc1", CbranchVccz = "s_cbranch_vccz",
    CbranchVccnz = "s_cbranch_vccnz", CbranchExecz = "s_cbranch_execz",
    CbranchExecnz = "s_cbranch_execnz", Barrier = "s_barrier", Setkill = "s_setkill",
    Waitcnt = "s_waitcnt", Sethalt = "s_sethalt", Sleep = "s_sleep", Setprio = "s_setprio",
    Sendmsg = "s_sendmsg", Sendmsghalt = "s_sendmsghalt", Trap = "s_trap", IcacheInv = "s_icache_inv",
    Incperflevel = "s_incperflevel", Decperflevel = "s_decperflevel", Ttracedata = "s_ttracedata",
    CodeEnd = "s_code_end",
    // SMEM cache control without memory traffic (no counter effect on data)
    DcacheInv = "s_dcache_inv", DcacheWb = "s_dcache_wb", DcacheInvVol = "s_dcache_inv_vol",
    DcacheWbVol = "s_dcache_wb_vol", Memtime = "s_memtime", Memrealtime = "s_memrealtime",
    }
}

/// A scalar instruction with its operands resolved to hardware codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarInst {
    /// The operation.
    pub op: ScalarOp,
    /// Destination scalar code (SOPK: also the first source).
    pub dst: u16,
    /// First source code.
    pub src0: u16,
    /// Second source code.
    pub src1: u16,
    /// The literal, when a source is 255.
    pub literal: u32,
    /// SOPK/SOPP 16-bit immediate.
    pub simm16: u16,
    /// Byte size of the instruction (4 or 8), for `s_getpc`/branches.
    pub size: u8,
}

/// HW register ids for `s_getreg`/`s_setreg` on gfx9.
mod hwreg {
    pub const MODE: u32 = 1;
    pub const STATUS: u32 = 2;
    pub const TRAPSTS: u32 = 3;
    pub const HW_ID: u32 = 4;
    pub const GPR_ALLOC: u32 = 5;
    pub const LDS_ALLOC: u32 = 6;
    pub const IB_STS: u32 = 7;
    pub const SH_MEM_BASES: u32 = 15;
}

fn s_bfe64(v: u64, ctl: u32, signed: bool) -> u64 {
    let off = ctl & 0x3f;
    let width = (ctl >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    let width = width.min(64);
    let shifted = v >> off;
    if width >= 64 {
        return shifted;
    }
    let mask = (1u64 << width) - 1;
    let x = shifted & mask;
    if signed && (x >> (width - 1)) & 1 != 0 {
        x | !mask
    } else {
        x
    }
}

fn s_bfe32(v: u32, ctl: u32, signed: bool) -> u32 {
    let off = ctl & 0x1f;
    let width = ((ctl >> 16) & 0x7f).min(32);
    if width == 0 {
        return 0;
    }
    let shifted = v >> off;
    if width >= 32 {
        return shifted;
    }
    let mask = (1u32 << width) - 1;
    let x = shifted & mask;
    if signed && (x >> (width - 1)) & 1 != 0 {
        x | !mask
    } else {
        x
    }
}

/// Index of the first bit equal to `bit` from the LSB, or -1.
fn find_first(v: u64, width: u32, bit: bool) -> u32 {
    let x = if bit { v } else { !v };
    let x = if width == 32 { x & 0xffff_ffff } else { x };
    if x == 0 {
        u32::MAX
    } else {
        x.trailing_zeros()
    }
}

/// Leading zeros counted from the MSB of a `width`-bit value, or -1 when the value is zero.
fn flbit(v: u64, width: u32) -> u32 {
    if v == 0 {
        u32::MAX
    } else {
        v.leading_zeros() - (64 - width)
    }
}

/// Position of the first bit from the MSB that differs from the sign bit, or -1.
fn flbit_signed(v: u64, width: u32) -> u32 {
    let sign = (v >> (width - 1)) & 1;
    let x = if sign != 0 { !v } else { v };
    let x = if width == 32 { x & 0xffff_ffff } else { x };
    if x == 0 {
        u32::MAX
    } else {
        x.leading_zeros() - (64 - width)
    }
}

fn wqm(v: u64, groups: u32) -> u64 {
    let mut r = 0;
    for g in 0..groups {
        if (v >> (4 * g)) & 0xf != 0 {
            r |= 0xf << (4 * g);
        }
    }
    r
}

fn quadmask(v: u64, groups: u32) -> u64 {
    let mut r = 0;
    for g in 0..groups {
        if (v >> (4 * g)) & 0xf != 0 {
            r |= 1 << g;
        }
    }
    r
}

/// Reads a 32-bit scalar source.
#[inline]
fn s32(w: &Wave, c: u16, lit: u32) -> Result<u32, EmuError> {
    w.read_scalar(c, lit, SrcType::B32)
}

/// Reads a 64-bit scalar source.
#[inline]
fn s64(w: &Wave, c: u16, lit: u32) -> Result<u64, EmuError> {
    w.read_scalar64(c, lit, SrcType::B64)
}

/// Executes one scalar instruction.
pub fn execute(w: &mut Wave, i: &ScalarInst) -> Result<Flow, EmuError> {
    use ScalarOp::*;
    let (d, a, b, lit) = (i.dst, i.src0, i.src1, i.literal);
    let simm = i.simm16 as i16 as i32;
    let next = w.pc + i.size as u64;
    let branch_target = (next as i64 + simm as i64 * 4) as u64;
    macro_rules! bin32 {
        ($f:expr) => {{
            let x = s32(w, a, lit)?;
            let y = s32(w, b, lit)?;
            let (r, scc): (u32, Option<bool>) = $f(x, y);
            w.write_scalar(d, r)?;
            if let Some(s) = scc {
                w.scc = s;
            }
        }};
    }
    macro_rules! bin64 {
        ($f:expr) => {{
            let x = s64(w, a, lit)?;
            let y = s64(w, b, lit)?;
            let (r, scc): (u64, Option<bool>) = $f(x, y);
            w.write_scalar64(d, r)?;
            if let Some(s) = scc {
                w.scc = s;
            }
        }};
    }
    macro_rules! shift64 {
        ($f:expr) => {{
            let x = s64(w, a, lit)?;
            let y = s32(w, b, lit)?;
            let r: u64 = $f(x, y & 63);
            w.write_scalar64(d, r)?;
            w.scc = r != 0;
        }};
    }
    macro_rules! cmp32 {
        ($f:expr) => {{
            let x = s32(w, a, lit)?;
            let y = s32(w, b, lit)?;
            w.scc = $f(x, y);
        }};
    }
    macro_rules! cmpk {
        ($f:expr, $signed:expr) => {{
            let x = s32(w, d, lit)?;
            let k = if $signed {
                simm as u32
            } else {
                i.simm16 as u32
            };
            w.scc = $f(x, k);
        }};
    }
    macro_rules! saveexec {
        ($f:expr) => {{
            let s = s64(w, a, lit)?;
            let old = w.exec;
            let new: u64 = $f(s, old);
            w.exec = new;
            w.write_scalar64(d, old)?;
            w.scc = new != 0;
        }};
    }
    macro_rules! un32 {
        ($f:expr, $scc:expr) => {{
            let x = s32(w, a, lit)?;
            let r: u32 = $f(x);
            w.write_scalar(d, r)?;
            if $scc {
                w.scc = r != 0;
            }
        }};
    }
    macro_rules! un64 {
        ($f:expr, $scc:expr) => {{
            let x = s64(w, a, lit)?;
            let r: u64 = $f(x);
            w.write_scalar64(d, r)?;
            if $scc {
                w.scc = r != 0;
            }
        }};
    }
    macro_rules! un64to32 {
        ($f:expr, $scc:expr) => {{
            let x = s64(w, a, lit)?;
            let r: u32 = $f(x);
            w.write_scalar(d, r)?;
            if $scc {
                w.scc = r != 0;
            }
        }};
    }
    match i.op {
        AddU32 => bin32!(|x: u32, y: u32| {
            let (r, c) = x.overflowing_add(y);
            (r, Some(c))
        }),
        SubU32 => bin32!(|x: u32, y: u32| {
            let (r, c) = x.overflowing_sub(y);
            (r, Some(c))
        }),
        AddI32 => bin32!(|x: u32, y: u32| {
            let (r, o) = (x as i32).overflowing_add(y as i32);
            (r as u32, Some(o))
        }),
        SubI32 => bin32!(|x: u32, y: u32| {
            let (r, o) = (x as i32).overflowing_sub(y as i32);
            (r as u32, Some(o))
        }),
        AddcU32 => {
            let c = w.scc as u64;
            bin32!(|x: u32, y: u32| {
                let t = x as u64 + y as u64 + c;
                (t as u32, Some(t >> 32 != 0))
            })
        }
        SubbU32 => {
            let c = w.scc as u64;
            bin32!(|x: u32, y: u32| {
                let borrow = (y as u64 + c) > x as u64;
                (x.wrapping_sub(y).wrapping_sub(c as u32), Some(borrow))
            })
        }
        MinI32 => bin32!(|x: u32, y: u32| if (x as i32) < (y as i32) {
            (x, Some(true))
        } else {
            (y, Some(false))
        }),
        MinU32 => bin32!(|x: u32, y: u32| if x < y {
            (x, Some(true))
        } else {
            (y, Some(false))
        }),
        MaxI32 => bin32!(|x: u32, y: u32| if (x as i32) > (y as i32) {
            (x, Some(true))
        } else {
            (y, Some(false))
        }),
        MaxU32 => bin32!(|x: u32, y: u32| if x > y {
            (x, Some(true))
        } else {
            (y, Some(false))
        }),
        CselectB32 => {
            let s = w.scc;
            bin32!(|x: u32, y: u32| (if s { x } else { y }, None))
        }
        CselectB64 => {
            let s = w.scc;
            bin64!(|x: u64, y: u64| (if s { x } else { y }, None))
        }
        AndB32 => bin32!(|x: u32, y: u32| (x & y, Some(x & y != 0))),
        AndB64 => bin64!(|x: u64, y: u64| (x & y, Some(x & y != 0))),
        OrB32 => bin32!(|x: u32, y: u32| (x | y, Some(x | y != 0))),
        OrB64 => bin64!(|x: u64, y: u64| (x | y, Some(x | y != 0))),
        XorB32 => bin32!(|x: u32, y: u32| (x ^ y, Some(x ^ y != 0))),
        XorB64 => bin64!(|x: u64, y: u64| (x ^ y, Some(x ^ y != 0))),
        Andn2B32 => bin32!(|x: u32, y: u32| (x & !y, Some(x & !y != 0))),
        Andn2B64 => bin64!(|x: u64, y: u64| (x & !y, Some(x & !y != 0))),
        Orn2B32 => bin32!(|x: u32, y: u32| (x | !y, Some(x | !y != 0))),
        Orn2B64 => bin64!(|x: u64, y: u64| (x | !y, Some(x | !y != 0))),
        NandB32 => bin32!(|x: u32, y: u32| (!(x & y), Some(!(x & y) != 0))),
        NandB64 => bin64!(|x: u64, y: u64| (!(x & y), Some(!(x & y) != 0))),
        NorB32 => bin32!(|x: u32, y: u32| (!(x | y), Some(!(x | y) != 0))),
        NorB64 => bin64!(|x: u64, y: u64| (!(x | y), Some(!(x | y) != 0))),
        XnorB32 => bin32!(|x: u32, y: u32| (!(x ^ y), Some(!(x ^ y) != 0))),
        XnorB64 => bin64!(|x: u64, y: u64| (!(x ^ y), Some(!(x ^ y) != 0))),
        LshlB32 => bin32!(|x: u32, y: u32| {
            let r = x << (y & 31);
            (r, Some(r != 0))
        }),
        LshrB32 => bin32!(|x: u32, y: u32| {
            let r = x >> (y & 31);
            (r, Some(r != 0))
        }),
        AshrI32 => bin32!(|x: u32, y: u32| {
            let r = ((x as i32) >> (y & 31)) as u32;
            (r, Some(r != 0))
        }),
        LshlB64 => shift64!(|x: u64, y: u32| x << y),
        LshrB64 => shift64!(|x: u64, y: u32| x >> y),
        AshrI64 => shift64!(|x: u64, y: u32| ((x as i64) >> y) as u64),
        BfmB32 => bin32!(|x: u32, y: u32| {
            let width = x & 31;
            ((((1u64 << width) - 1) as u32) << (y & 31), None)
        }),
        BfmB64 => {
            let x = s32(w, a, lit)?;
            let y = s32(w, b, lit)?;
            let width = x & 63;
            let r = ((1u128 << width) - 1) as u64;
            w.write_scalar64(d, r << (y & 63))?;
        }
        MulI32 => bin32!(|x: u32, y: u32| (x.wrapping_mul(y), None)),
        MulHiU32 => bin32!(|x: u32, y: u32| (((x as u64 * y as u64) >> 32) as u32, None)),
        MulHiI32 => {
            bin32!(|x: u32, y: u32| ((((x as i32 as i64) * (y as i32 as i64)) >> 32) as u32, None))
        }
        BfeU32 => bin32!(|x: u32, y: u32| {
            let r = s_bfe32(x, y, false);
            (r, Some(r != 0))
        }),
        BfeI32 => bin32!(|x: u32, y: u32| {
            let r = s_bfe32(x, y, true);
            (r, Some(r != 0))
        }),
        BfeU64 | BfeI64 => {
            let x = s64(w, a, lit)?;
            let y = s32(w, b, lit)?;
            let r = s_bfe64(x, y, i.op == BfeI64);
            w.write_scalar64(d, r)?;
            w.scc = r != 0;
        }
        AbsdiffI32 => bin32!(|x: u32, y: u32| {
            let r = (x as i32 as i64 - y as i32 as i64).unsigned_abs() as u32;
            (r, Some(r != 0))
        }),
        Lshl1AddU32 | Lshl2AddU32 | Lshl3AddU32 | Lshl4AddU32 => {
            let n = match i.op {
                Lshl1AddU32 => 1,
                Lshl2AddU32 => 2,
                Lshl3AddU32 => 3,
                _ => 4,
            };
            bin32!(|x: u32, y: u32| {
                let t = ((x as u64) << n) + y as u64;
                (t as u32, Some(t >> 32 != 0))
            })
        }
        PackLlB32B16 => bin32!(|x: u32, y: u32| ((x & 0xffff) | (y << 16), None)),
        PackLhB32B16 => bin32!(|x: u32, y: u32| ((x & 0xffff) | (y & 0xffff_0000), None)),
        PackHhB32B16 => bin32!(|x: u32, y: u32| ((x >> 16) | (y & 0xffff_0000), None)),

        MovB32 => un32!(|x| x, false),
        MovB64 => un64!(|x| x, false),
        CmovB32 => {
            if w.scc {
                un32!(|x| x, false)
            }
        }
        CmovB64 => {
            if w.scc {
                un64!(|x| x, false)
            }
        }
        NotB32 => un32!(|x: u32| !x, true),
        NotB64 => un64!(|x: u64| !x, true),
        WqmB32 => un32!(|x: u32| wqm(x as u64, 8) as u32, true),
        WqmB64 => un64!(|x: u64| wqm(x, 16), true),
        BrevB32 => un32!(|x: u32| x.reverse_bits(), false),
        BrevB64 => un64!(|x: u64| x.reverse_bits(), false),
        Bcnt0I32B32 => un32!(|x: u32| x.count_zeros(), true),
        Bcnt0I32B64 => un64to32!(|x: u64| x.count_zeros(), true),
        Bcnt1I32B32 => un32!(|x: u32| x.count_ones(), true),
        Bcnt1I32B64 => un64to32!(|x: u64| x.count_ones(), true),
        Ff0I32B32 => un32!(|x: u32| find_first(x as u64, 32, false), false),
        Ff0I32B64 => un64to32!(|x: u64| find_first(x, 64, false), false),
        Ff1I32B32 => un32!(|x: u32| find_first(x as u64, 32, true), false),
        Ff1I32B64 => un64to32!(|x: u64| find_first(x, 64, true), false),
        FlbitI32B32 => un32!(|x: u32| flbit(x as u64, 32), false),
        FlbitI32B64 => un64to32!(|x: u64| flbit(x, 64), false),
        FlbitI32 => un32!(|x: u32| flbit_signed(x as u64, 32), false),
        FlbitI32I64 => un64to32!(|x: u64| flbit_signed(x, 64), false),
        SextI32I8 => un32!(|x: u32| x as u8 as i8 as i32 as u32, false),
        SextI32I16 => un32!(|x: u32| x as u16 as i16 as i32 as u32, false),
        Bitset0B32 | Bitset1B32 => {
            let bit = s32(w, a, lit)? & 31;
            let old = w.read_scalar(d, 0, SrcType::B32)?;
            let v = if i.op == Bitset1B32 {
                old | 1 << bit
            } else {
                old & !(1 << bit)
            };
            w.write_scalar(d, v)?;
        }
        Bitset0B64 | Bitset1B64 => {
            let bit = s32(w, a, lit)? & 63;
            let old = w.read_scalar64(d, 0, SrcType::B64)?;
            let v = if i.op == Bitset1B64 {
                old | 1 << bit
            } else {
                old & !(1 << bit)
            };
            w.write_scalar64(d, v)?;
        }
        GetpcB64 => w.write_scalar64(d, next)?,
        SetpcB64 => return Ok(Flow::Jump(s64(w, a, lit)?)),
        SwappcB64 => {
            let target = s64(w, a, lit)?;
            w.write_scalar64(d, next)?;
            return Ok(Flow::Jump(target));
        }
        AndSaveexecB64 => saveexec!(|s: u64, e: u64| s & e),
        OrSaveexecB64 => saveexec!(|s: u64, e: u64| s | e),
        XorSaveexecB64 => saveexec!(|s: u64, e: u64| s ^ e),
        Andn2SaveexecB64 => saveexec!(|s: u64, e: u64| s & !e),
        Orn2SaveexecB64 => saveexec!(|s: u64, e: u64| s | !e),
        NandSaveexecB64 => saveexec!(|s: u64, e: u64| !(s & e)),
        NorSaveexecB64 => saveexec!(|s: u64, e: u64| !(s | e)),
        XnorSaveexecB64 => saveexec!(|s: u64, e: u64| !(s ^ e)),
        Andn1SaveexecB64 => saveexec!(|s: u64, e: u64| !s & e),
        Orn1SaveexecB64 => saveexec!(|s: u64, e: u64| !s | e),
        Andn1WrexecB64 | Andn2WrexecB64 => {
            let s = s64(w, a, lit)?;
            let new = if i.op == Andn1WrexecB64 {
                !s & w.exec
            } else {
                s & !w.exec
            };
            w.exec = new;
            w.write_scalar64(d, new)?;
            w.scc = new != 0;
        }
        QuadmaskB32 => un32!(|x: u32| quadmask(x as u64, 8) as u32, true),
        QuadmaskB64 => un64!(|x: u64| quadmask(x, 16), true),
        MovrelsB32 => {
            let src = a as u32 + w.m0;
            let v = relative_sgpr(w, src, 1)?;
            w.write_scalar(d, v as u32)?;
        }
        MovrelsB64 => {
            let src = a as u32 + w.m0;
            let v = relative_sgpr(w, src, 2)?;
            w.write_scalar64(d, v)?;
        }
        MovreldB32 => {
            let v = s32(w, a, lit)?;
            let dst = d as u32 + w.m0;
            relative_sgpr(w, dst, 1)?;
            w.write_scalar(dst as u16, v)?;
        }
        MovreldB64 => {
            let v = s64(w, a, lit)?;
            let dst = d as u32 + w.m0;
            relative_sgpr(w, dst, 2)?;
            w.write_scalar64(dst as u16, v)?;
        }
        AbsI32 => un32!(|x: u32| (x as i32).unsigned_abs(), true),
        BitreplicateB64B32 => {
            let x = s32(w, a, lit)?;
            let mut r = 0u64;
            for k in 0..32 {
                if x >> k & 1 != 0 {
                    r |= 3 << (2 * k);
                }
            }
            w.write_scalar64(d, r)?;
        }

        MovkI32 => w.write_scalar(d, simm as u32)?,
        CmovkI32 => {
            if w.scc {
                w.write_scalar(d, simm as u32)?
            }
        }
        CmpkEqI32 => cmpk!(|x: u32, k: u32| x as i32 == k as i32, true),
        CmpkLgI32 => cmpk!(|x: u32, k: u32| x as i32 != k as i32, true),
        CmpkGtI32 => cmpk!(|x: u32, k: u32| (x as i32) > k as i32, true),
        CmpkGeI32 => cmpk!(|x: u32, k: u32| x as i32 >= k as i32, true),
        CmpkLtI32 => cmpk!(|x: u32, k: u32| (x as i32) < k as i32, true),
        CmpkLeI32 => cmpk!(|x: u32, k: u32| x as i32 <= k as i32, true),
        CmpkEqU32 => cmpk!(|x: u32, k: u32| x == k, false),
        CmpkLgU32 => cmpk!(|x: u32, k: u32| x != k, false),
        CmpkGtU32 => cmpk!(|x: u32, k: u32| x > k, false),
        CmpkGeU32 => cmpk!(|x: u32, k: u32| x >= k, false),
        CmpkLtU32 => cmpk!(|x: u32, k: u32| x < k, false),
        CmpkLeU32 => cmpk!(|x: u32, k: u32| x <= k, false),
        AddkI32 => {
            let x = s32(w, d, lit)? as i32;
            let (r, o) = x.overflowing_add(simm);
            w.write_scalar(d, r as u32)?;
            w.scc = o;
        }
        MulkI32 => {
            let x = s32(w, d, lit)? as i32;
            w.write_scalar(d, x.wrapping_mul(simm) as u32)?;
        }
        GetregB32 => {
            let v = getreg(w, i.simm16 as u32);
            w.write_scalar(d, v)?;
        }
        SetregB32 => {
            let v = s32(w, d, lit)?;
            setreg(w, i.simm16 as u32, v)?;
        }
        SetregImm32B32 => setreg(w, i.simm16 as u32, lit)?,
        CallB64 => {
            w.write_scalar64(d, next)?;
            return Ok(Flow::Jump(branch_target));
        }

        CmpEqI32 | CmpEqU32 => cmp32!(|x: u32, y: u32| x == y),
        CmpLgI32 | CmpLgU32 => cmp32!(|x: u32, y: u32| x != y),
        CmpGtI32 => cmp32!(|x: u32, y: u32| (x as i32) > (y as i32)),
        CmpGeI32 => cmp32!(|x: u32, y: u32| (x as i32) >= (y as i32)),
        CmpLtI32 => cmp32!(|x: u32, y: u32| (x as i32) < (y as i32)),
        CmpLeI32 => cmp32!(|x: u32, y: u32| (x as i32) <= (y as i32)),
        CmpGtU32 => cmp32!(|x: u32, y: u32| x > y),
        CmpGeU32 => cmp32!(|x: u32, y: u32| x >= y),
        CmpLtU32 => cmp32!(|x: u32, y: u32| x < y),
        CmpLeU32 => cmp32!(|x: u32, y: u32| x <= y),
        Bitcmp0B32 => cmp32!(|x: u32, y: u32| x >> (y & 31) & 1 == 0),
        Bitcmp1B32 => cmp32!(|x: u32, y: u32| x >> (y & 31) & 1 == 1),
        Bitcmp0B64 | Bitcmp1B64 => {
            let x = s64(w, a, lit)?;
            let y = s32(w, b, lit)?;
            let bit = x >> (y & 63) & 1;
            w.scc = if i.op == Bitcmp1B64 {
                bit == 1
            } else {
                bit == 0
            };
        }
        CmpEqU64 | CmpLgU64 => {
            let x = s64(w, a, lit)?;
            let y = s64(w, b, lit)?;
            w.scc = (x == y) == (i.op == CmpEqU64);
        }

        Nop | Wakeup | Setkill | Sleep | Setprio | Sendmsg | IcacheInv | Incperflevel
        | Decperflevel | Ttracedata | DcacheInv | DcacheWb | DcacheInvVol | DcacheWbVol => {}
        Memtime | Memrealtime => {
            // A deterministic clock: the pc, so that reruns give the same result.
            w.write_scalar64(d, w.pc)?;
        }
        Endpgm | Sendmsghalt => return Ok(Flow::End),
        Sethalt => {
            if i.simm16 & 1 != 0 {
                return Ok(Flow::End);
            }
        }
        Trap => {
            return Err(EmuError::illegal(format!(
                "s_trap {} executed (no trap handler)",
                i.simm16 & 0xff
            )))
        }
        CodeEnd => {
            return Err(EmuError::illegal(
                "executed s_code_end: the wave ran past its code",
            ))
        }
        Branch => return Ok(Flow::Jump(branch_target)),
        CbranchScc0 => {
            return Ok(if !w.scc {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        CbranchScc1 => {
            return Ok(if w.scc {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        CbranchVccz => {
            return Ok(if w.vcc == 0 {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        CbranchVccnz => {
            return Ok(if w.vcc != 0 {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        CbranchExecz => {
            return Ok(if w.exec == 0 {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        CbranchExecnz => {
            return Ok(if w.exec != 0 {
                Flow::Jump(branch_target)
            } else {
                Flow::Next
            })
        }
        Barrier => return Ok(Flow::Barrier),
        Waitcnt => {
            let (vm, exp, lgkm) = waitcnt_counts(i.simm16);
            return Ok(Flow::Wait { vm, exp, lgkm });
        }
    }
    Ok(Flow::Next)
}

/// The counts of an `s_waitcnt` immediate on gfx9: `(vmcnt, expcnt, lgkmcnt)`; vmcnt is split
/// over bits 3:0 and 15:14.
pub fn waitcnt_counts(simm16: u16) -> (u32, u32, u32) {
    let s = simm16 as u32;
    (
        (s & 0xf) | ((s >> 14) & 3) << 4,
        (s >> 4) & 7,
        (s >> 8) & 0xf,
    )
}

/// Checks (and reads) `n` SGPRs at absolute code `at`, for `s_movrels/movreld`.
fn relative_sgpr(w: &Wave, at: u32, n: u32) -> Result<u64, EmuError> {
    if at + n > 102 {
        return Err(EmuError::illegal(format!(
            "relative SGPR index s{at} (M0 = {}) is out of range",
            w.m0
        )));
    }
    if n == 1 {
        w.read_scalar(at as u16, 0, SrcType::B32).map(|v| v as u64)
    } else {
        w.read_scalar64(at as u16, 0, SrcType::B64)
    }
}

/// Splits a `hwreg(id, offset, size)` immediate.
fn hwreg_fields(simm: u32) -> (u32, u32, u32) {
    (simm & 0x3f, (simm >> 6) & 0x1f, ((simm >> 11) & 0x1f) + 1)
}

fn getreg(w: &Wave, simm: u32) -> u32 {
    let (id, off, size) = hwreg_fields(simm);
    let full = match id {
        hwreg::MODE => w.mode,
        hwreg::STATUS => {
            // SCC (0), EXECZ (9), VCCZ (10), IN_BARRIER etc. left 0.
            w.scc as u32 | ((w.exec == 0) as u32) << 9 | ((w.vcc == 0) as u32) << 10
        }
        hwreg::TRAPSTS => w.trapsts,
        hwreg::HW_ID => {
            // WAVE_ID [3:0], SIMD_ID [5:4], CU_ID [11:8]: wave index spread over SIMDs.
            let wave = w.id.wave;
            (wave / 4) & 0xf | (wave % 4) << 4
        }
        hwreg::GPR_ALLOC => {
            let v = (w.vgpr_limit.max(1).div_ceil(4) - 1) & 0x3f;
            let s = (w.sgpr_limit.max(1).div_ceil(16) - 1) & 0xf;
            v << 8 | s << 24
        }
        hwreg::LDS_ALLOC | hwreg::IB_STS => 0,
        hwreg::SH_MEM_BASES => {
            // Bits 63:48 of the private (15:0) and shared (31:16) apertures.
            ((PRIVATE_APERTURE >> 48) as u32) | ((SHARED_APERTURE >> 48) as u32) << 16
        }
        _ => 0,
    };
    let mask = if size >= 32 {
        u32::MAX
    } else {
        (1u32 << size) - 1
    };
    (full >> off) & mask
}

fn setreg(w: &mut Wave, simm: u32, v: u32) -> Result<(), EmuError> {
    let (id, off, size) = hwreg_fields(simm);
    let mask = if size >= 32 {
        u32::MAX
    } else {
        (1u32 << size) - 1
    } << off;
    let bits = (v << off) & mask;
    match id {
        hwreg::MODE => w.mode = (w.mode & !mask) | bits,
        hwreg::TRAPSTS => w.trapsts = (w.trapsts & !mask) | bits,
        // Writes to read-only or scheduling registers have no architectural effect here.
        hwreg::STATUS | hwreg::HW_ID | hwreg::GPR_ALLOC | hwreg::LDS_ALLOC | hwreg::IB_STS => {}
        _ => {
            return Err(EmuError::unsupported(format!(
                "s_setreg of hardware register {id}"
            )))
        }
    }
    Ok(())
}

/// Whether an operation is program control (counted as a branch) rather than scalar ALU.
pub fn is_control(op: ScalarOp) -> bool {
    use ScalarOp::*;
    matches!(
        op,
        Endpgm
            | Branch
            | CbranchScc0
            | CbranchScc1
            | CbranchVccz
            | CbranchVccnz
            | CbranchExecz
            | CbranchExecnz
            | Barrier
            | Waitcnt
            | SetpcB64
            | SwappcB64
            | CallB64
            | Sleep
            | Nop
            | Setprio
            | Sethalt
            | Trap
            | Wakeup
            | Sendmsg
            | Sendmsghalt
    )
}

/// Scalar codes an operation reads or writes implicitly (beyond its operand fields):
/// `(reads exec, reads vcc, writes exec)`. SCC is not tracked by the scoreboard (no memory
/// operation writes it).
pub fn implicit(op: ScalarOp) -> (bool, bool, bool) {
    use ScalarOp::*;
    match op {
        AndSaveexecB64 | OrSaveexecB64 | XorSaveexecB64 | Andn2SaveexecB64 | Orn2SaveexecB64
        | NandSaveexecB64 | NorSaveexecB64 | XnorSaveexecB64 | Andn1SaveexecB64
        | Orn1SaveexecB64 | Andn1WrexecB64 | Andn2WrexecB64 => (true, false, true),
        CbranchExecz | CbranchExecnz => (true, false, false),
        CbranchVccz | CbranchVccnz => (false, true, false),
        _ => (false, false, false),
    }
}

/// Whether `c` names a scalar register (not a constant).
pub fn is_register(c: u16) -> bool {
    c < 128 && c != 125 || c == code::SCC
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::wave::WaveId;
    use kjit_backend_gcn::Target;

    fn wave() -> Wave {
        let mut w = Wave::new(WaveId::default(), Target::Gfx942, 102, 16, 0);
        w.pc = 0x100;
        w
    }

    fn run(
        w: &mut Wave,
        op: ScalarOp,
        dst: u16,
        src0: u16,
        src1: u16,
        literal: u32,
        simm16: u16,
    ) -> Flow {
        let size = if src0 == 255 || src1 == 255 || op == ScalarOp::SetregImm32B32 {
            8
        } else {
            4
        };
        execute(
            w,
            &ScalarInst {
                op,
                dst,
                src0,
                src1,
                literal,
                simm16,
                size,
            },
        )
        .unwrap()
    }

    #[test]
    fn carries_and_overflow_set_scc() {
        let mut w = wave();
        w.sgpr[0] = 0xffff_ffff;
        w.sgpr[1] = 2;
        run(&mut w, ScalarOp::AddU32, 2, 0, 1, 0, 0);
        assert_eq!((w.sgpr[2], w.scc), (1, true));
        run(&mut w, ScalarOp::AddcU32, 3, 128, 128, 0, 0);
        assert_eq!((w.sgpr[3], w.scc), (1, false), "carry-in from SCC");
        w.sgpr[4] = 0x7fff_ffff;
        run(&mut w, ScalarOp::AddI32, 5, 4, 129, 0, 0);
        assert_eq!((w.sgpr[5], w.scc), (0x8000_0000, true), "signed overflow");
        run(&mut w, ScalarOp::SubU32, 6, 128, 129, 0, 0);
        assert_eq!((w.sgpr[6], w.scc), (u32::MAX, true), "borrow");
        run(&mut w, ScalarOp::SubbU32, 7, 129, 128, 0, 0);
        assert_eq!((w.sgpr[7], w.scc), (0, false), "1 - 0 - borrow");
    }

    #[test]
    fn bit_field_and_bit_scan_ops() {
        let mut w = wave();
        w.sgpr[0] = 0xf0f0_0000;
        // bfe: offset 20, width 8 -> 0x0f (0xf0f0_0000 >> 20 = 0xf0f, & 0xff = 0x0f)
        run(&mut w, ScalarOp::BfeU32, 1, 0, 255, 20 | 8 << 16, 0);
        assert_eq!(w.sgpr[1], 0x0f);
        run(&mut w, ScalarOp::BfeI32, 1, 0, 255, 24 | 8 << 16, 0);
        assert_eq!(w.sgpr[1], 0xffff_fff0);
        run(&mut w, ScalarOp::FlbitI32B32, 2, 0, 0, 0, 0);
        assert_eq!(w.sgpr[2], 0);
        run(&mut w, ScalarOp::Ff1I32B32, 2, 0, 0, 0, 0);
        assert_eq!(w.sgpr[2], 20);
        run(&mut w, ScalarOp::FlbitI32B32, 2, 128, 0, 0, 0);
        assert_eq!(w.sgpr[2], u32::MAX);
        run(&mut w, ScalarOp::FlbitI32, 2, 193, 0, 0, 0);
        assert_eq!(w.sgpr[2], u32::MAX, "all sign bits");
        run(&mut w, ScalarOp::Bcnt1I32B32, 3, 0, 0, 0, 0);
        assert_eq!((w.sgpr[3], w.scc), (8, true));
        run(&mut w, ScalarOp::BfmB32, 4, 132, 136, 0, 0);
        assert_eq!(w.sgpr[4], 0xf00, "4 bits at offset 8");
        run(&mut w, ScalarOp::PackLhB32B16, 5, 0, 255, 0x1234_5678, 0);
        assert_eq!(w.sgpr[5], 0x1234_0000);
    }

    #[test]
    fn saveexec_and_branches() {
        let mut w = wave();
        w.exec = 0xff;
        w.vcc = 0x0f0f;
        run(&mut w, ScalarOp::AndSaveexecB64, 10, code::VCC_LO, 0, 0, 0);
        assert_eq!((w.exec, w.sgpr[10], w.scc), (0x0f, 0xff, true));
        assert_eq!(
            run(&mut w, ScalarOp::CbranchExecz, 0, 0, 0, 0, 5),
            Flow::Next
        );
        w.exec = 0;
        assert_eq!(
            run(&mut w, ScalarOp::CbranchExecz, 0, 0, 0, 0, 5),
            Flow::Jump(0x100 + 4 + 20)
        );
        assert_eq!(
            run(&mut w, ScalarOp::Branch, 0, 0, 0, 0, (-2i16) as u16),
            Flow::Jump(0x100 + 4 - 8)
        );
        run(&mut w, ScalarOp::GetpcB64, 12, 0, 0, 0, 0);
        assert_eq!((w.sgpr[12], w.sgpr[13]), (0x104, 0));
    }

    #[test]
    fn waitcnt_fields_decode() {
        let mut w = wave();
        // s_waitcnt vmcnt(3) -> 0x0f73 per GCN_NOTES
        assert_eq!(
            run(&mut w, ScalarOp::Waitcnt, 0, 0, 0, 0, 0x0f73),
            Flow::Wait {
                vm: 3,
                exp: 7,
                lgkm: 15
            }
        );
        // s_waitcnt lgkmcnt(0) -> 0xc07f
        assert_eq!(
            run(&mut w, ScalarOp::Waitcnt, 0, 0, 0, 0, 0xc07f),
            Flow::Wait {
                vm: 63,
                exp: 7,
                lgkm: 0
            }
        );
    }

    #[test]
    fn sopk_compares_sign_or_zero_extend_the_immediate() {
        let mut w = wave();
        w.sgpr[0] = 0xffff_ffff;
        run(&mut w, ScalarOp::CmpkEqI32, 0, 0, 0, 0, 0xffff);
        assert!(w.scc);
        run(&mut w, ScalarOp::CmpkEqU32, 0, 0, 0, 0, 0xffff);
        assert!(!w.scc);
        run(&mut w, ScalarOp::MovkI32, 1, 0, 0, 0, 0x8000);
        assert_eq!(w.sgpr[1], 0xffff_8000);
        run(&mut w, ScalarOp::AddkI32, 1, 0, 0, 0, 0x10);
        assert_eq!(w.sgpr[1], 0xffff_8010);
    }

    #[test]
    fn mode_register_round_trips_through_setreg_and_getreg() {
        let mut w = wave();
        // hwreg(HW_REG_MODE, 4, 2) = id 1, offset 4, size 2 -> simm = 1 | 4 << 6 | 1 << 11
        let simm = (1 | 4 << 6 | 1 << 11) as u16;
        run(&mut w, ScalarOp::SetregImm32B32, 0, 0, 0, 3, simm);
        assert_eq!(w.mode & 0x30, 0x30);
        run(&mut w, ScalarOp::GetregB32, 2, 0, 0, 0, simm);
        assert_eq!(w.sgpr[2], 3);
    }

    #[test]
    fn every_op_name_round_trips() {
        for &op in ScalarOp::ALL {
            assert_eq!(ScalarOp::from_name(op.name()), Some(op));
        }
    }
}
