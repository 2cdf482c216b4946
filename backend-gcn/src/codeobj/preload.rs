//! The backward-compatibility prologue of a kernel whose arguments are preloaded into user
//! SGPRs (AMDGPUUsage "Preloaded Kernel Arguments"; the layout of LLVM's
//! `AMDGPUPreloadKernArgProlog`, LLVM 20+).
//!
//! Takes the target and the kernel's [`UserSgprs`] (where the kernarg pointer and the preloaded
//! dwords sit); gives the 256 bytes of code that start the kernel. Firmware that preloads enters
//! at entry + 256 with the dwords already in the SGPRs; older firmware enters at the entry, where
//! these instructions load the same dwords into the same SGPRs from the kernarg segment, wait for
//! them and branch to entry + 256:
//!
//! ```text
//!  s_load_dword{,x2,x4,x8} (widest that fits the rest and the SGPR alignment), from byte 0 on
//!  s_waitcnt lgkmcnt(0)
//!  s_branch <entry + 256>
//!  s_nop 0 ...                  (padding to 256 bytes)
//! ```
//! LLVM 19 itself writes `s_trap 2` and 63 `s_nop 0` there (a kernel that traps on old
//! firmware); kjit's prologue runs on both.

use super::descriptor::UserSgprs;
use crate::isa::{Inst, Opcode, Operand};
use crate::waitcnt::Wait;
use crate::Target;

/// Bytes of the prologue: preloading firmware starts the kernel this far past its entry.
pub const PROLOGUE_BYTES: u32 = 256;

/// The first SGPR of the kernarg segment pointer among the enabled user SGPRs.
pub fn kernarg_ptr_sgpr(u: &UserSgprs) -> u16 {
    (4 * u.private_segment_buffer as u16) + 2 * u.dispatch_ptr as u16 + 2 * u.queue_ptr as u16
}

/// The `s_load`s that fill the preloaded SGPRs from the kernarg segment, in order: at each
/// SGPR the widest load (8, 4, 2, 1 dwords) that the remaining count allows and whose tuple is
/// aligned there (4 for 4 and 8 dwords, 2 for pairs), as LLVM picks them.
pub fn loads(u: &UserSgprs) -> Vec<Inst> {
    let base = Operand::sr(kernarg_ptr_sgpr(u), 2);
    let mut sgpr = u.first_preload_sgpr() as u16;
    let mut left = u.kernarg_preload;
    let mut byte = 0i64;
    let mut out = Vec::new();
    while left > 0 {
        let (n, op) = [
            (8, Opcode::SLoadDwordx8),
            (4, Opcode::SLoadDwordx4),
            (2, Opcode::SLoadDwordx2),
            (1, Opcode::SLoadDword),
        ]
        .into_iter()
        .find(|&(n, _)| left >= n && sgpr % n.min(4) as u16 == 0)
        .unwrap_or((1, Opcode::SLoadDword));
        out.push(Inst::new(
            op,
            &[Operand::sr(sgpr, n as u8), base, Operand::Imm(byte)],
        ));
        sgpr += n as u16;
        byte += 4 * n as i64;
        left -= n;
    }
    out
}

/// The whole prologue: [`loads`], `s_waitcnt lgkmcnt(0)`, the branch to [`PROLOGUE_BYTES`]
/// and `s_nop 0` up to it, 256 bytes in all. Empty when nothing is preloaded.
pub fn prologue(target: Target, u: &UserSgprs) -> Vec<Inst> {
    if u.kernarg_preload == 0 {
        return Vec::new();
    }
    let mut out = loads(u);
    out.push(
        Wait {
            vm: None,
            exp: None,
            lgkm: Some(0),
        }
        .inst(target),
    );
    // The loads (SMEM) are 2 dwords each, the wait (SOPP) 1.
    let dwords: u32 = 2 * (out.len() as u32 - 1) + 1;
    let branch_at = dwords;
    // At most 16 user SGPRs (the descriptor refuses more): at most 16 loads, so the branch
    // always lies inside the 256 bytes and jumps forward.
    out.push(Inst::new(
        Opcode::SBranch,
        &[Operand::Imm(
            PROLOGUE_BYTES as i64 / 4 - (branch_at as i64 + 1),
        )],
    ));
    for _ in branch_at + 1..PROLOGUE_BYTES / 4 {
        out.push(Inst::new(Opcode::SNop, &[Operand::Imm(0)]));
    }
    out
}
