//! Two LDS dword accesses through one address register as one two-address instruction: takes
//! the selected machine function, gives it with pairs of `ds_read_b32` turned into
//! `ds_read2_b32`/`ds_read2st64_b32` (the two results `Extract`ed from one VGPR pair, which
//! the allocator's sub-register coalescing lays out on the pair's registers, so the halves
//! are read in place) and pairs of `ds_write_b32` into `ds_write2_b32`/`ds_write2st64_b32`
//! (two single data operands, no pair to build). One instruction fewer per pair.
//!
//! The two-address forms take two 8-bit offsets in dwords (`read2`) or in 64-dword steps
//! (`read2st64`) from one address, so a pair's byte offsets must both be below 1024 (or both
//! multiples of 256 below 65536). Reads whose offsets do not fit from their address (matmul's
//! tile `b` at 1024 + 64·i) take a new address `v_add_u32 addr, B, a` when that makes at least
//! two pairs (clang-19 does the same).
//!
//! Legal because LDS accesses of one wave to different addresses take effect in program order
//! and nothing else of the wave can change LDS or the lanes in between: reads are merged only
//! where no LDS write, atomic, barrier, LDS-DMA load, flat access or EXEC write comes between
//! them (the merged read goes to the first one's place); writes only where no LDS access,
//! barrier or EXEC write comes between them (the merged write goes to the second's place, where
//! both data values are defined). Accesses pair only with the same `lds_region` (the waits
//! count per region).

use crate::isa::{Format, Operand};
use cranelift_entity::EntityRef;

use crate::mir::{implicit, MInst, MOpcode, MOperand, MachineFunction, RegClass, VReg};

use super::dce::writes_exec;
use super::op;

/// How one pair of accesses is encoded: two-address opcode and its two offset fields.
#[derive(Clone, Copy)]
struct Encoded {
    st64: bool,
    offset0: u8,
    offset1: u8,
}

/// The two-address encoding of byte offsets `a < b` from one address, if one exists.
fn encode(a: u32, b: u32) -> Option<Encoded> {
    let field =
        |x: u32, unit: u32| (x.is_multiple_of(unit) && x / unit <= 255).then_some((x / unit) as u8);
    if let (Some(offset0), Some(offset1)) = (field(a, 4), field(b, 4)) {
        return Some(Encoded {
            st64: false,
            offset0,
            offset1,
        });
    }
    let (offset0, offset1) = (field(a, 256)?, field(b, 256)?);
    Some(Encoded {
        st64: true,
        offset0,
        offset1,
    })
}

/// A single-address dword access: `ds_read_b32 d, a` (`write` false) or `ds_write_b32 a, d`.
#[derive(Clone, Copy)]
struct Access {
    /// Index in the block.
    at: usize,
    addr: VReg,
    /// The read's result or the write's data.
    data: VReg,
    offset: u32,
    region: u8,
}

/// `inst` as a plain `ds_read_b32` (`write` false) or `ds_write_b32` at index `at`.
fn access(inst: &MInst, at: usize, write: bool) -> Option<Access> {
    let MOpcode::Isa(o) = inst.opcode else {
        return None;
    };
    let name = if write { "ds_write_b32" } else { "ds_read_b32" };
    if o.info().name != name || inst.tied.is_some() || inst.mods.gds {
        return None;
    }
    let (addr, data) = match (write, inst.ops.as_slice()) {
        (false, [MOperand::Def(d), MOperand::Use(a)]) => (*a, *d),
        (true, [MOperand::Use(a), MOperand::Use(d)]) => (*a, *d),
        _ => return None,
    };
    Some(Access {
        at,
        addr,
        data,
        offset: u32::try_from(inst.mods.offset).ok()?,
        region: inst.mods.lds_region,
    })
}

/// What an instruction between two accesses does to merging them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Between {
    /// Nothing the accesses depend on.
    Free,
    /// Reads LDS (ends a window of writes only).
    Reads,
    /// May change LDS or the lanes: ends every window.
    Clobbers,
}

fn between(inst: &MInst) -> Between {
    if writes_exec(inst) || inst.implicit_defs & implicit::EXEC != 0 {
        return Between::Clobbers;
    }
    let MOpcode::Isa(o) = inst.opcode else {
        return Between::Free;
    };
    let info = o.info();
    match info.format {
        Format::Ds if info.name.starts_with("ds_read") => Between::Reads,
        Format::Ds | Format::Flat | Format::Sopp => Between::Clobbers,
        _ if inst.mods.lds => Between::Clobbers,
        _ => Between::Free,
    }
}

/// Pairs the LDS dword reads and writes of every block (module doc); returns how many pairs.
pub fn pair_lds_accesses(mf: &mut MachineFunction) -> usize {
    let mut pairs = 0;
    let mut reads = vec![0u32; mf.vregs.len()];
    for (_, bd) in mf.blocks.iter() {
        let args = bd.term.successors().into_iter().flat_map(|(_, a)| a.iter());
        for v in bd.insts.iter().flat_map(|i| i.uses()).chain(args.copied()) {
            reads[v.index()] += 1;
        }
    }
    let mut hoisted = Vec::new();
    for b in mf.blocks.keys().collect::<Vec<_>>() {
        // Writes are not paired: a merged write in gemm_f32 (tuning parameters of
        // `tests/tuning_params.rs`) raced another wave's write on the device; not analysed.
        for write in [false] {
            let insts = std::mem::take(&mut mf.blocks[b].insts);
            let mut plan = Plan::new(insts.len(), &reads);
            let mut window: Vec<Access> = Vec::new();
            for (k, inst) in insts.iter().enumerate() {
                if let Some(a) = access(inst, k, write) {
                    window.push(a);
                    continue;
                }
                let ends = match between(inst) {
                    Between::Free => false,
                    Between::Reads => write,
                    Between::Clobbers => true,
                };
                if ends {
                    plan.window(mf, &window, write);
                    window.clear();
                }
            }
            plan.window(mf, &window, write);
            pairs += plan.pairs;
            hoisted.append(&mut plan.after_def);
            mf.blocks[b].insts = plan.apply(insts);
        }
    }
    for (addr, add) in hoisted {
        let at = mf.blocks.keys().find_map(|b| {
            let k = mf.blocks[b]
                .insts
                .iter()
                .position(|i| i.defs().any(|d| d == addr))?;
            Some((b, k))
        });
        if let Some((b, k)) = at {
            mf.blocks[b].insts.insert(k + 1, add);
        }
    }
    pairs
}

/// Whether a new address `addr + B` can be made right after `addr`'s definition instead of
/// before the reads: a real instruction without a tie (no partial write, so its lanes are the
/// reads' lanes), found in some block.
fn hoistable(mf: &MachineFunction, addr: VReg) -> bool {
    mf.blocks.values().any(|bd| {
        bd.insts.iter().any(|i| {
            i.defs().any(|d| d == addr) && matches!(i.opcode, MOpcode::Isa(_)) && i.tied.is_none()
        })
    })
}

/// The edits of one block: instructions to put before index `k`, and the indices replaced.
struct Plan<'r> {
    before: Vec<Vec<MInst>>,
    removed: Vec<bool>,
    pairs: usize,
    /// New addresses to make right after the definition of the address they add to.
    after_def: Vec<(VReg, MInst)>,
    /// Per vreg: how many operands and branch arguments read it.
    reads: &'r [u32],
}

impl<'r> Plan<'r> {
    fn new(n: usize, reads: &'r [u32]) -> Plan<'r> {
        Plan {
            before: vec![Vec::new(); n],
            removed: vec![false; n],
            pairs: 0,
            after_def: Vec::new(),
            reads,
        }
    }

    fn apply(self, insts: Vec<MInst>) -> Vec<MInst> {
        let mut out = Vec::with_capacity(insts.len());
        for ((inst, before), removed) in insts.into_iter().zip(self.before).zip(self.removed) {
            out.extend(before);
            if !removed {
                out.push(inst);
            }
        }
        out
    }

    /// Pairs the accesses of one window (no clobber between any two of them).
    fn window(&mut self, mf: &mut MachineFunction, window: &[Access], write: bool) {
        if write {
            // Consecutive writes only: the first moves down to the second, past no other
            // write that might alias it.
            let mut planned = Vec::new();
            let mut i = 0;
            while i + 1 < window.len() {
                let (a, b) = (window[i], window[i + 1]);
                let (lo, hi) = if a.offset < b.offset { (a, b) } else { (b, a) };
                let e = (a.addr == b.addr && a.region == b.region && lo.offset < hi.offset)
                    .then(|| encode(lo.offset, hi.offset))
                    .flatten();
                match e {
                    Some(e) => {
                        planned.push((lo, hi, e));
                        i += 2;
                    }
                    None => i += 1,
                }
            }
            self.commit(mf, planned, None, true);
            return;
        }
        let mut groups: Vec<Vec<Access>> = Vec::new();
        for a in window {
            match groups
                .iter_mut()
                .find(|g| g[0].addr == a.addr && g[0].region == a.region)
            {
                Some(g) => g.push(*a),
                None => groups.push(vec![*a]),
            }
        }
        for mut g in groups.into_iter().filter(|g| g.len() >= 4) {
            g.sort_by_key(|a| (a.offset, a.at));
            // From the address itself: dword offsets, then 64-dword steps among the rest.
            let (plain, rest) = pair_sorted(&g, 0, |a, b| encode(a, b).filter(|e| !e.st64));
            let (st64, rest) = pair_sorted(&rest, 0, encode);
            // Reads left over: from a new address at the lowest offset when that makes two
            // pairs (one `v_add_u32` for two instructions saved at least).
            let rebased = match rest.first() {
                Some(a) => Some((a.offset, pair_sorted(&rest, a.offset, encode).0))
                    .filter(|(_, p)| p.len() >= 2),
                None => None,
            };
            // A lone pair saves one instruction, but its halves want an aligned pair of VGPRs
            // (reduce_sum's one pair per round: 4 → 6 VGPRs): two pairs at least.
            let n = plain.len() + st64.len() + rebased.as_ref().map_or(0, |(_, p)| p.len());
            if n < 2 {
                continue;
            }
            self.commit(mf, plain, None, false);
            self.commit(mf, st64, None, false);
            if let Some((base, planned)) = rebased {
                self.commit(mf, planned, Some(base), false);
            }
        }
    }

    /// Makes the planned pairs `(lower offset, higher offset, encoding)`, from their address
    /// plus `rebase` when given (a new address register made before the first pair's place).
    fn commit(
        &mut self,
        mf: &mut MachineFunction,
        planned: Vec<(Access, Access, Encoded)>,
        rebase: Option<u32>,
        write: bool,
    ) {
        let Some(&(first, _, _)) = planned.first() else {
            return;
        };
        let mut addr = first.addr;
        if let Some(b) = rebase {
            let at = planned.iter().map(|(x, y, _)| x.at.min(y.at)).min();
            let a = mf.vreg(RegClass::Vgpr, 1);
            let imm = super::valu::inline32(b).unwrap_or(Operand::Literal(b));
            let mut add = MInst::isa(
                op("v_add_u32"),
                &[MOperand::Def(a), MOperand::Phys(imm), MOperand::Use(addr)],
            );
            add.implicit_uses = implicit::EXEC;
            // Where the pairs are the address's only readers, the new address replaces it from
            // its definition on (matmul: made once before the loop, not per step).
            if self.reads[addr.index()] as usize == 2 * planned.len() && hoistable(mf, addr) {
                self.after_def.push((addr, add));
            } else {
                self.before[at.unwrap_or(first.at)].push(add);
            }
            addr = a;
        }
        for (lo, hi, e) in planned {
            self.pairs += 1;
            let name = match (write, e.st64) {
                (false, false) => "ds_read2_b32",
                (false, true) => "ds_read2st64_b32",
                (true, false) => "ds_write2_b32",
                (true, true) => "ds_write2st64_b32",
            };
            let (first, last) = (lo.at.min(hi.at), lo.at.max(hi.at));
            // A read goes to the first read's place (its results are defined there), a write
            // to the last write's (both data values are defined there).
            let (at, gone) = if write { (last, first) } else { (first, last) };
            self.removed[gone] = true;
            self.removed[at] = true;
            let pair = (!write).then(|| mf.vreg(RegClass::Vgpr, 2));
            let ops = match pair {
                Some(p) => vec![MOperand::Def(p), MOperand::Use(addr)],
                None => [addr, lo.data, hi.data].map(MOperand::Use).to_vec(),
            };
            let mut inst = MInst::isa(op(name), &ops);
            inst.mods.offset = e.offset0 as i32;
            inst.mods.offset1 = e.offset1;
            inst.mods.lds_region = lo.region;
            inst.implicit_uses = implicit::EXEC;
            self.before[at].push(inst);
            if let Some(pair) = pair {
                for (k, half) in [lo, hi].iter().enumerate() {
                    self.before[at].push(MInst::pseudo(
                        MOpcode::Extract(k as u8),
                        &[MOperand::Def(half.data), MOperand::Use(pair)],
                    ));
                }
            }
        }
    }
}

/// Pairs neighbours of `g` (sorted by offset) whose offsets less `base` `enc` encodes; gives
/// the pairs and the accesses left.
#[allow(clippy::type_complexity)]
fn pair_sorted(
    g: &[Access],
    base: u32,
    enc: impl Fn(u32, u32) -> Option<Encoded>,
) -> (Vec<(Access, Access, Encoded)>, Vec<Access>) {
    let (mut planned, mut rest) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < g.len() {
        let e = g
            .get(i + 1)
            .filter(|b| b.offset > g[i].offset)
            .and_then(|b| enc(g[i].offset - base, b.offset - base));
        match e {
            Some(e) => {
                planned.push((g[i], g[i + 1], e));
                i += 2;
            }
            None => {
                rest.push(g[i]);
                i += 1;
            }
        }
    }
    (planned, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Opcode;

    #[test]
    fn two_address_forms_are_in_the_table() {
        for name in [
            "ds_read2_b32",
            "ds_read2st64_b32",
            "ds_write2_b32",
            "ds_write2st64_b32",
        ] {
            assert!(Opcode::from_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn offsets_encode_in_dwords_then_in_64_dword_steps() {
        let e = encode(0, 1020).unwrap();
        assert!(!e.st64 && e.offset0 == 0 && e.offset1 == 255);
        let e = encode(0, 1024).unwrap();
        assert!(e.st64 && e.offset0 == 0 && e.offset1 == 4);
        assert!(encode(1024, 1088).is_none());
        assert!(encode(2, 6).is_none());
        assert!(encode(256 * 256, 256 * 257).is_none());
    }
}
