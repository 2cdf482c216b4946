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

use crate::mir::{implicit, MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass, VReg};

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

/// Byte offset `x` as an 8-bit offset field in units of `unit` bytes, if it is one.
fn field(x: u32, unit: u32) -> Option<u8> {
    (x.is_multiple_of(unit) && x / unit <= 255).then_some((x / unit) as u8)
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
    // Only a group of at least 4 reads of one window is paired (`Plan::window`): a block with
    // fewer candidate reads is left as it is, and a function without such a block needs
    // neither the read counts nor a copy of any block.
    let busy: Vec<MBlock> = mf
        .blocks
        .iter()
        .filter(|(_, bd)| {
            bd.insts
                .iter()
                .enumerate()
                .filter(|&(k, i)| access(i, k, false).is_some())
                .nth(3)
                .is_some()
        })
        .map(|(b, _)| b)
        .collect();
    if busy.is_empty() {
        return 0;
    }
    let mut pairs = 0;
    let mut reads = vec![0u32; mf.vregs.len()];
    for (_, bd) in mf.blocks.iter() {
        let args = bd.term.successors().into_iter().flat_map(|(_, a)| a.iter());
        for v in bd.insts.iter().flat_map(|i| i.uses()).chain(args.copied()) {
            reads[v.index()] += 1;
        }
    }
    let mut hoisted = Vec::new();
    for b in busy {
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
            let levels = plan_reads(&g, true, 0);
            // A lone pair saves one instruction, but its halves want an aligned pair of VGPRs
            // (reduce_sum's one pair per round: 4 → 6 VGPRs): two pairs at least.
            let n: usize = levels.iter().map(|(_, p)| p.len()).sum();
            if n < 2 {
                continue;
            }
            for (base, planned) in levels {
                self.commit(mf, planned, base, false);
            }
        }
    }

    /// Makes the planned pairs `(lower offset, higher offset, encoding)`, from their address
    /// plus `rebase` when given (a new address register made before the first pair's place).
    fn commit(
        &mut self,
        mf: &mut MachineFunction,
        planned: Pairs,
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

/// The pairs of one address's reads `g` (sorted by offset), by the address they are read
/// from: the address itself (`None`, when `from_addr`) and new addresses `addr + B`
/// (`Some(B)`, each at the lowest offset left, a `v_add_u32` that must make two pairs at
/// least; a lowest offset that makes fewer is left unpaired). From each address, either the
/// dword offsets pair first and the 64-dword steps among the rest, or the other way round;
/// of the ways tried, the one saving the most instructions (pairs less new addresses), then
/// the one with fewer addresses, then the first. stencil_pipelined's row reads at 0, 1020, 1024, 1028, … 5120: three
/// `read2st64` pairs from the address and two from each of `addr + 1020` and `addr + 1028`,
/// where pairing the neighbours' dword offsets first found one pair in all. `depth`: addresses
/// planned so far; from the [`PLAN_DEPTH`]th on, only the first way (linear time).
fn plan_reads(g: &[Access], from_addr: bool, depth: usize) -> Vec<(Option<u32>, Pairs)> {
    // Instructions saved, then fewer addresses (a new address that every read of the
    // address goes through replaces it from its definition on: matmul's, out of the loop).
    let saved = |levels: &[(Option<u32>, Pairs)]| {
        let n: usize = levels
            .iter()
            .map(|(b, p)| p.len() - usize::from(b.is_some()))
            .sum();
        (n, std::cmp::Reverse(levels.len()))
    };
    let mut g = g;
    let ways: &[bool] = if depth < PLAN_DEPTH {
        &[false, true]
    } else {
        &[false]
    };
    while let Some(first) = g.first() {
        let base = if from_addr { 0 } else { first.offset };
        let mut best: Option<Vec<(Option<u32>, Pairs)>> = None;
        for &st64_first in ways {
            let (pairs, rest) = pair_from(g, base, st64_first);
            if !from_addr && pairs.len() < 2 {
                continue;
            }
            let mut levels = Vec::new();
            if !pairs.is_empty() {
                levels.push(((!from_addr).then_some(base), pairs));
            }
            levels.extend(plan_reads(&rest, false, depth + 1));
            if best.as_ref().is_none_or(|b| saved(&levels) > saved(b)) {
                best = Some(levels);
            }
        }
        if from_addr {
            // Or every read from new addresses (matmul's tile `b`: one for all 16 reads,
            // rather than two `read2st64` pairs from the address and one for the rest).
            let levels = plan_reads(g, false, depth + 1);
            if best.as_ref().is_none_or(|b| saved(&levels) > saved(b)) {
                best = Some(levels);
            }
        }
        if let Some(best) = best {
            return best;
        }
        g = &g[1..];
    }
    Vec::new()
}

/// Addresses [`plan_reads`] tries both ways of pairing from.
const PLAN_DEPTH: usize = 3;

/// Planned pairs: (lower offset, higher offset, encoding).
type Pairs = Vec<(Access, Access, Encoded)>;

/// Pairs of `g`'s reads (sorted by offset) at or above `base`, from the address `base` bytes
/// up: neighbours among the dword offsets (below 1024), then among the 64-dword steps of those
/// left, or (`st64_first`) the other way round; gives the pairs and the reads left (sorted).
fn pair_from(g: &[Access], base: u32, st64_first: bool) -> (Pairs, Vec<Access>) {
    let above: Vec<Access> = g.iter().filter(|a| a.offset >= base).copied().collect();
    let (first, then) = if st64_first { (256, 4) } else { (4, 256) };
    let (mut pairs, rest) = pair_encodable(&above, base, first);
    let (more, mut rest) = pair_encodable(&rest, base, then);
    pairs.extend(more);
    rest.extend(g.iter().filter(|a| a.offset < base).copied());
    rest.sort_by_key(|a| (a.offset, a.at));
    (pairs, rest)
}

/// [`pair_sorted`] among the reads of `g` whose offset less `base` is a field of `unit` bytes
/// (4: `read2`, 256: `read2st64`); the others are left (all sorted).
fn pair_encodable(g: &[Access], base: u32, unit: u32) -> (Pairs, Vec<Access>) {
    let (ok, mut other): (Vec<Access>, Vec<Access>) = g
        .iter()
        .partition(|a| field(a.offset - base, unit).is_some());
    let enc = |a: u32, b: u32| encode(a, b).filter(|e| e.st64 == (unit == 256));
    let (pairs, rest) = pair_sorted(&ok, base, enc);
    other.extend(rest);
    other.sort_by_key(|a| (a.offset, a.at));
    (pairs, other)
}

/// Pairs neighbours of `g` (sorted by offset) whose offsets less `base` `enc` encodes; gives
/// the pairs and the accesses left.
fn pair_sorted(
    g: &[Access],
    base: u32,
    enc: impl Fn(u32, u32) -> Option<Encoded>,
) -> (Pairs, Vec<Access>) {
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

    fn reads_at(offsets: &[u32]) -> Vec<Access> {
        let mut g: Vec<Access> = offsets
            .iter()
            .enumerate()
            .map(|(k, &offset)| Access {
                at: k,
                addr: VReg::new(0),
                data: VReg::new(k + 1),
                offset,
                region: 0,
            })
            .collect();
        g.sort_by_key(|a| (a.offset, a.at));
        g
    }

    /// (new address, pairs' byte offsets) per address of a plan.
    fn shape(levels: &[(Option<u32>, Pairs)]) -> Vec<(Option<u32>, Vec<(u32, u32)>)> {
        levels
            .iter()
            .map(|(b, p)| (*b, p.iter().map(|(x, y, _)| (x.offset, y.offset)).collect()))
            .collect()
    }

    #[test]
    fn row_reads_pair_in_64_dword_steps_from_two_new_addresses() {
        // A 256-dword-row stencil's reads: the centre column and its neighbours of 5 rows.
        let mut offsets = vec![0, 1024, 2048, 3072, 4096, 5120];
        for r in 1..5 {
            offsets.extend([1024 * r - 4, 1024 * r + 4]);
        }
        let plan = shape(&plan_reads(&reads_at(&offsets), true, 0));
        assert_eq!(
            plan,
            vec![
                (None, vec![(0, 1024), (2048, 3072), (4096, 5120)]),
                (Some(1020), vec![(1020, 2044), (3068, 4092)]),
                (Some(1028), vec![(1028, 2052), (3076, 4100)]),
            ]
        );
    }

    #[test]
    fn a_new_address_is_made_only_for_two_pairs() {
        // matmul's tile `b` column: 1024 + 64·i, out of `read2`'s reach from the address.
        let offsets: Vec<u32> = (0..16).map(|i| 1024 + 64 * i).collect();
        let plan = shape(&plan_reads(&reads_at(&offsets), true, 0));
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].0, Some(1024));
        assert_eq!(plan[0].1.len(), 8);
        // One pair's worth from a new address is left unpaired.
        let plan = shape(&plan_reads(&reads_at(&[2000, 2004, 9000]), true, 0));
        assert!(plan.is_empty(), "{plan:?}");
    }
}
