//! Peepholes on the allocated function: takes the [`PhysFunction`] that `regalloc` gives and
//! gives the same function with fewer moves, before `waitcnt` and `hazards` see it.
//!
//! - A move of a register to itself (`s_mov_b32 s4, s4`, `s_mov_b64 s[4:5], s[4:5]`,
//!   `v_mov_b32 v3, v3` without modifiers) is dropped: the allocator's phi and tuple copies
//!   leave these when source and destination got the same register.
//! - Two adjacent `s_mov_b32`s that copy an even-aligned SGPR pair half by half (the
//!   allocator's parallel copies of a 64-bit mask or pointer) become one `s_mov_b64`.

use crate::isa::{Encoding, Inst, Modifiers, Opcode, Operand};
use crate::phys::PhysFunction;

/// A plain register-to-register move: (opcode, destination, source).
fn plain_move(i: &Inst) -> Option<(Opcode, Operand, Operand)> {
    if !matches!(i.op, Opcode::SMovB32 | Opcode::SMovB64 | Opcode::VMovB32)
        || i.mods != Modifiers::default()
        || !matches!(i.encoding, Encoding::Native | Encoding::E64)
    {
        return None;
    }
    match i.operands[..] {
        [d @ (Operand::Sgpr { .. } | Operand::Vgpr { .. }), s] => Some((i.op, d, s)),
        _ => None,
    }
}

/// The single SGPR `s_mov_b32` copies: (destination, source), both ordinary SGPRs.
fn sgpr_move32(i: &Inst) -> Option<(u16, u16)> {
    match plain_move(i)? {
        (
            Opcode::SMovB32,
            Operand::Sgpr { first: d, count: 1 },
            Operand::Sgpr { first: s, count: 1 },
        ) if d <= 101 && s <= 101 => Some((d, s)),
        _ => None,
    }
}

/// `s_mov_b64` of the even pairs starting at `lo_d` and `lo_s` if the two moves `a` then `b`
/// copy those pairs half by half (in either order).
fn pair_move(a: (u16, u16), b: (u16, u16)) -> Option<Inst> {
    let (lo, hi) = if a.0 < b.0 { (a, b) } else { (b, a) };
    let aligned = lo.0 % 2 == 0 && lo.1 % 2 == 0;
    if !aligned || hi.0 != lo.0 + 1 || hi.1 != lo.1 + 1 || lo.0 == lo.1 {
        return None;
    }
    Some(Inst::new(
        Opcode::SMovB64,
        &[
            Operand::Sgpr {
                first: lo.0,
                count: 2,
            },
            Operand::Sgpr {
                first: lo.1,
                count: 2,
            },
        ],
    ))
}

/// Runs the peepholes over every block of `f`; returns how many instructions they removed.
pub fn run_peepholes(f: &mut PhysFunction) -> u32 {
    let mut removed = 0;
    for b in &mut f.blocks {
        let before = b.insts.len();
        b.insts
            .retain(|i| !matches!(plain_move(i), Some((_, d, s)) if d == s));
        let mut out: Vec<Inst> = Vec::with_capacity(b.insts.len());
        for i in b.insts.drain(..) {
            let merged = match (out.last().and_then(sgpr_move32), sgpr_move32(&i)) {
                (Some(a), Some(c)) => pair_move(a, c),
                _ => None,
            };
            match merged {
                Some(m) => *out.last_mut().expect("a previous move") = m,
                None => out.push(i),
            }
        }
        b.insts = out;
        removed += (before - b.insts.len()) as u32;
    }
    removed
}
