//! What the timing model needs to know about each instruction of a kernel, derived once per
//! launch from the decoded program and the opcode table's timing facts (`OpInfo::timing`).

use kjit_backend_gcn::isa::opcodes::target_index;
use kjit_backend_gcn::isa::{Opcode, Unit};
use kjit_backend_gcn::Target;

use crate::emu::ds::DsOp;
use crate::emu::program::{Decoded, Op, Program};
use crate::emu::scalar::{waitcnt_counts, ScalarOp};
use crate::emu::scoreboard::RegSet;
use crate::emu::vmem::VmemOp;

/// How the issue model treats an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Vector ALU (full, reduced or quarter rate: see `busy`).
    Valu,
    /// Matrix core.
    Mfma,
    /// Scalar ALU.
    Salu,
    /// Scalar memory (lgkmcnt).
    Smem,
    /// Vector memory (vmcnt).
    Vmem {
        /// Writes memory (acknowledged by L2) rather than returning data.
        store: bool,
    },
    /// LDS (lgkmcnt); `port_cycles` is the time its SIMD pair's port is busy.
    Lds {
        /// Port cycles: address and data in, data out (`docs/timing.md`).
        port_cycles: u16,
    },
    /// Branch.
    Branch,
    /// `s_waitcnt` with its counts (vmcnt, lgkmcnt; expcnt is not modelled).
    Waitcnt {
        /// vmcnt.
        vm: u8,
        /// lgkmcnt.
        lgkm: u8,
    },
    /// `s_nop N`: N+1 wait states.
    Nop(u8),
    /// `s_barrier`.
    Barrier,
    /// `s_endpgm`.
    End,
    /// Other instructions the scheduler retires without a unit (`s_setprio`, ...).
    Internal,
}

impl Kind {
    /// The issue category index (≤ 1 instruction per category per cycle), or `None` for
    /// instructions the scheduler retires itself.
    pub fn category(self) -> Option<usize> {
        match self {
            Kind::Valu | Kind::Mfma => Some(0),
            Kind::Vmem { .. } => Some(1),
            Kind::Salu | Kind::Smem => Some(2),
            Kind::Lds { .. } => Some(3),
            Kind::Branch => Some(4),
            _ => None,
        }
    }
}

/// One instruction's timing facts.
#[derive(Clone, Debug)]
pub struct InstFacts {
    /// Issue behaviour.
    pub kind: Kind,
    /// Cycles its unit is busy (VALU rate, MFMA passes).
    pub busy: u16,
    /// Cycles until a dependent instruction may read its result.
    pub latency: u16,
    /// Cycles before the SIMD's VALU may issue again (MFMA co-execution).
    pub valu_block: u16,
    /// Registers it reads and writes (for dependencies on long-latency results).
    pub reads: RegSet,
    /// Registers it writes.
    pub writes: RegSet,
    /// An MFMA that accumulates in place (SrcC is exactly its destination, A and B do not
    /// overlap it): those registers. See [`accumulates_in_place`].
    pub accumulates: Option<RegSet>,
    /// Instruction-cache line (pc / 64).
    pub fetch_line: u64,
    /// FLOPs per active lane (vector ALU) or per wave (MFMA).
    pub flops: u32,
    /// Whether `flops` is per wave (MFMA) rather than per lane.
    pub flops_per_wave: bool,
    /// Code-object pc and text, for the profile.
    pub pc: u64,
    /// Assembler text.
    pub text: String,
}

/// FLOPs per lane of a vector instruction, by mnemonic: an FMA counts 2, add/mul 1, packed forms
/// twice that.
fn valu_flops(name: &str) -> u32 {
    let float = name.contains("_f32") || name.contains("_f64") || name.contains("_f16");
    if !float || name.starts_with("v_cmp") || name.starts_with("v_cvt") {
        return 0;
    }
    let base = if [
        "v_fma_",
        "v_fmac_",
        "v_mac_",
        "v_mad_",
        "v_pk_fma_",
        "v_fmamk",
        "v_fmaak",
    ]
    .iter()
    .any(|p| name.starts_with(p))
    {
        2
    } else if [
        "v_add_",
        "v_sub_",
        "v_subrev_",
        "v_mul_",
        "v_pk_add_",
        "v_pk_mul_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
    {
        1
    } else {
        0
    };
    if name.starts_with("v_pk_") {
        2 * base
    } else {
        base
    }
}

/// FLOPs of one MFMA: 2·M·N·K per block, from the gfx940 spelling (`v_mfma_f32_32x32x1_2b_f32`
/// has 2 blocks). Sparse (`smfmac`) forms count the dense work they stand for.
fn mfma_flops(name940: &str) -> u32 {
    let mut dims = None;
    let mut blocks = 1u32;
    for part in name940.split('_') {
        let nums: Vec<u32> = part
            .split('x')
            .map(|p| {
                p.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse()
                    .unwrap_or(0)
            })
            .collect();
        if nums.len() == 3 && nums.iter().all(|&n| n > 0) && dims.is_none() {
            dims = Some((nums[0], nums[1], nums[2]));
        } else if let Some(b) = part.strip_suffix('b').and_then(|b| b.parse().ok()) {
            blocks = b;
        }
    }
    dims.map(|(m, n, k)| 2 * m * n * k * blocks).unwrap_or(0)
}

/// The facts of every instruction of `program` on `target`.
pub fn program_facts(program: &Program, target: Target) -> Vec<InstFacts> {
    program
        .insts
        .iter()
        .map(|d| inst_facts(d, target, program.image_base))
        .collect()
}

fn inst_facts(d: &Decoded, target: Target, image_base: u64) -> InstFacts {
    let ti = target_index(target);
    let timing = d.opcode.map(|o: Opcode| o.info().timing);
    let (busy, latency, valu_block) = timing
        .map(|t| {
            (
                t.busy[ti].max(1) as u16,
                t.latency[ti].max(1) as u16,
                t.valu_block[ti].max(1) as u16,
            )
        })
        .unwrap_or((1, 1, 1));
    let unit = timing.map(|t| t.unit);
    let kind = match &d.op {
        Op::Scalar(s) => match s.op {
            ScalarOp::Waitcnt => {
                let (vm, _, lgkm) = waitcnt_counts(s.simm16);
                Kind::Waitcnt {
                    vm: vm as u8,
                    lgkm: lgkm as u8,
                }
            }
            ScalarOp::Nop => Kind::Nop((s.simm16 & 0xf) as u8),
            ScalarOp::Barrier => Kind::Barrier,
            ScalarOp::Endpgm => Kind::End,
            _ => match unit {
                Some(Unit::Branch) => Kind::Branch,
                Some(Unit::Internal) => Kind::Internal,
                _ => Kind::Salu,
            },
        },
        Op::Smem(_) => Kind::Smem,
        Op::Vmem(v) => Kind::Vmem {
            store: matches!(v.op, VmemOp::Store(_)),
        },
        Op::Ds(ds) => Kind::Lds {
            port_cycles: lds_port_cycles(&ds.op),
        },
        Op::Valu(_) => match unit {
            Some(Unit::Mfma) => Kind::Mfma,
            _ => Kind::Valu,
        },
        Op::Unsupported(_) | Op::Invalid(_) => Kind::Internal,
    };
    let (flops, flops_per_wave) = match (kind, d.opcode) {
        (Kind::Mfma, Some(o)) => (mfma_flops(o.info().name_gfx940), true),
        (Kind::Valu, Some(o)) => (valu_flops(o.info().name), false),
        _ => (0, false),
    };
    InstFacts {
        kind,
        busy,
        latency,
        valu_block,
        reads: d.reads,
        writes: d.writes,
        accumulates: (kind == Kind::Mfma)
            .then(|| accumulates_in_place(d))
            .flatten(),
        fetch_line: d.pc / 64,
        flops,
        flops_per_wave,
        pc: d.pc.wrapping_sub(image_base),
        text: d.text.clone(),
    }
}

/// The destination of an MFMA whose SrcC is exactly that destination and whose A/B operands do
/// not overlap it (`c = mfma(a, b, c)`). LLVM's GCNHazardRecognizer asks for no wait states
/// between two such MFMAs on the same registers (`mfma_hazards.rs`: "MFMA reads the same range
/// as SrcC: 0"): the matrix unit forwards the accumulator, so a chain issues at its pass rate
/// rather than waiting for each result's latency. (gfx942's 2-pass MFMAs need 2 wait states,
/// which their latency of at most 4 already covers.)
fn accumulates_in_place(d: &Decoded) -> Option<RegSet> {
    let Op::Valu(v) = &d.op else {
        return None;
    };
    let regs = |code: u16, agpr: bool, n: u32| -> Option<RegSet> {
        let first = u32::from(code).checked_sub(256)?;
        let mut set = RegSet::EMPTY;
        if agpr {
            set.add_a(first, n);
        } else {
            set.add_v(first, n);
        }
        Some(set)
    };
    let count = |set: &RegSet| -> u32 {
        set.v
            .iter()
            .chain(&set.a)
            .map(|w| w.count_ones())
            .sum::<u32>()
    };
    let dst_regs = count(&d.writes);
    let acc_bit = |k: u8| v.acc >> k & 1 != 0;
    let c = regs(v.src[2], acc_bit(3), dst_regs)?;
    if c != d.writes {
        return None;
    }
    // A and B: whatever else the instruction reads, apart from C and EXEC.
    for k in 0..2 {
        if let Some(ab) = regs(v.src[k], acc_bit(k as u8 + 1), 1) {
            if ab.intersects(&c) {
                return None;
            }
        }
    }
    Some(c)
}

/// Cycles an LDS instruction keeps its SIMD pair's port busy at 64 bytes per clock: a store moves
/// address and data through the input port (4 + data bytes per lane: 8 cycles for 4 B, 20 for
/// 16 B, as AMD documents); a load sends 4 address bytes in and its data out.
fn lds_port_cycles(op: &DsOp) -> u16 {
    let data = |bytes: u8, dwords: u8| {
        if bytes == 4 {
            4 * dwords as u16
        } else {
            4
        }
    };
    match *op {
        DsOp::Write { bytes, dwords, .. } => 4 + data(bytes, dwords),
        DsOp::Write2 { dwords, .. } => 4 + 8 * dwords as u16,
        DsOp::Read { bytes, dwords, .. } => 4u16.max(data(bytes, dwords)),
        DsOp::Read2 { dwords, .. } => 4u16.max(8 * dwords as u16),
        DsOp::Atomic { wide, .. } => 4 + if wide { 8 } else { 4 },
        DsOp::Wrxchg2 { wide, .. } => 4 + if wide { 16 } else { 8 },
        DsOp::WriteAddtid => 8,
        DsOp::Swizzle | DsOp::Permute | DsOp::Bpermute | DsOp::ReadAddtid => 8,
        DsOp::Nop => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_are_counted_from_mnemonics() {
        assert_eq!(valu_flops("v_fma_f32"), 2);
        assert_eq!(valu_flops("v_pk_fma_f32"), 4);
        assert_eq!(valu_flops("v_add_f32"), 1);
        assert_eq!(valu_flops("v_add_u32"), 0);
        assert_eq!(valu_flops("v_cmp_lt_f32"), 0);
        assert_eq!(mfma_flops("v_mfma_f32_32x32x8_f16"), 16384);
        assert_eq!(mfma_flops("v_mfma_f32_32x32x1_2b_f32"), 4096);
        assert_eq!(mfma_flops("v_mfma_f64_16x16x4_f64"), 2048);
    }

    #[test]
    fn lds_ports_match_amd_store_rates() {
        let w = |bytes, dwords| DsOp::Write {
            bytes,
            dwords,
            hi: false,
        };
        assert_eq!(lds_port_cycles(&w(4, 1)), 8);
        assert_eq!(lds_port_cycles(&w(4, 4)), 20);
    }
}
