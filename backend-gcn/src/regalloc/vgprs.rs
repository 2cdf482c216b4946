//! Where regalloc2's VGPR registers and the VGPR tuple area go. Takes regalloc2's output (its
//! used `Float` singles and `Vector` pairs) and the tuple webs; gives the PReg → VGPR tables,
//! the base of the tuple area and the end of the layout.
//!
//! regalloc2 spreads values over every register it is given, so a kernel whose search had to
//! grow the `Float` class past the pressure (a spill at a smaller count) uses every register
//! of the class even where few values are live at once. The dense layout gives each used
//! PReg its own VGPR (singles, then pairs, then the tuple area). The packed layout places
//! them by first fit over their live intervals (`locs::intervals`), as the `Int` PRegs are
//! placed on SGPRs: the tuple area first (one block at a multiple of 4, around the work-item
//! id registers), then pairs (even), then singles, each in order of first position, on the
//! lowest VGPRs where nothing placed before is live at the same time. Equal positions count as
//! overlapping, so an instruction's last read and another PReg's write there never share a
//! VGPR (regalloc2's moves at one point and early defs stay correct).
//!
//! A single copied into or out of a pair or a tuple dword (`Build`/`Extract`), or moved to or
//! from another single by regalloc2, prefers that register where it is free: the copy is then a
//! self-move the peepholes drop. First fit in order of first position can take such a register
//! for an earlier single and leave the copy, so the packing is also made with the singles whose
//! hinted register is free placed first (tuple copies before regalloc2's moves). Of the two,
//! the one with the most waves per SIMD, then the fewest copies left, then the fewest VGPRs is
//! kept, and only when it ends below the dense layout.

use regalloc2 as ra;

use cranelift_entity::EntityRef;

use super::prep::Prepared;
use super::ra2::RaFunc;
use super::webs::{Intervals, Webs};
use super::{bits, locs, NO_REG};
use crate::mir::{MOpcode, MOperand, RegClass};

/// VGPRs a layout may use (the architectural VGPRs of one lane).
const MAX_VGPRS: usize = 256;

/// Where regalloc2's used `Float` and `Vector` PRegs and the VGPR tuple area go.
pub struct VgprLayout {
    pub float_map: [u16; 64],
    pub pair_map: [u16; 64],
    pub vweb_base: u16,
    /// One past the last VGPR of the layout (spare-VGPR slots go above).
    pub top: u16,
}

/// The best of the dense and the packed layouts (module doc) of `out`'s VGPR PRegs (`used`:
/// masks per class) for allocator `a`; `waves` gives the occupancy of a layout ending at a VGPR.
pub fn layout(
    a: &super::Allocator,
    out: &ra::Output,
    used: &[u64; 3],
    waves: &dyn Fn(u32) -> u32,
) -> VgprLayout {
    let dense = dense(used, a.abi_n, a.vweb_size);
    let packing = Packing::new(a, out, used);
    let key = |(l, misses): &(VgprLayout, usize)| {
        (std::cmp::Reverse(waves(l.top as u32)), *misses, l.top)
    };
    let packed = [false, true]
        .into_iter()
        .filter_map(|hinted_first| packing.place(hinted_first))
        .min_by_key(key)
        .map(|(l, _)| l);
    match packed {
        Some(l) if l.top < dense.top => l,
        _ => dense,
    }
}

/// A register a single would rather share: a dword of a pair or of the tuple area, or another
/// single's.
#[derive(Clone, Copy)]
enum Hint {
    Pair(usize, u16),
    Area(u16),
    Single(usize),
}

/// Per `Float` PReg, the registers its copies go to or come from (module doc), with the
/// position of the copy.
fn hints(p: &Prepared, func: &RaFunc, out: &ra::Output, w: &Webs) -> Vec<Vec<(Hint, u32)>> {
    let mut hints: Vec<Vec<(Hint, u32)>> = vec![Vec::new(); 64];
    let reg = |a: ra::Allocation| a.as_reg().map(|r| (r.class(), r.hw_enc()));
    for (b, bd) in p.mf.blocks.iter() {
        for (k, mi) in bd.insts.iter().enumerate() {
            let gi = p.first_inst[b.index()] as usize + k;
            let allocs = out.inst_allocs(ra::Inst::new(gi));
            let map = func.map.get(gi);
            // Where operand `i` (vreg `v`) is: a PReg, or the tuple area's dword.
            let at = |i: usize, v: crate::mir::VReg| -> Option<Hint> {
                match map[i] {
                    Some(x) => match reg(allocs[x as usize])? {
                        (ra::RegClass::Float, h) => Some(Hint::Single(h)),
                        (ra::RegClass::Vector, h) => Some(Hint::Pair(h, 0)),
                        (ra::RegClass::Int, _) => None,
                    },
                    None => {
                        let web = &w.webs[*w.web_of.get(&v)?];
                        (web.class == RegClass::Vgpr).then_some(Hint::Area(web.reg?))
                    }
                }
            };
            let offset = |h: Hint, d: u16| match h {
                Hint::Pair(x, o) => Hint::Pair(x, o + d),
                Hint::Area(r) => Hint::Area(r + d),
                s => s,
            };
            let mut link = |a: Option<Hint>, b: Option<Hint>| {
                if let (Some(Hint::Single(x)), Some(t)) | (Some(t), Some(Hint::Single(x))) = (a, b)
                {
                    hints[x].push((t, 2 * gi as u32));
                }
            };
            match (mi.opcode, mi.ops.as_slice()) {
                (MOpcode::Build, [MOperand::Def(d), parts @ ..]) => {
                    let Some(tuple) = at(0, *d) else { continue };
                    let mut dw = 0u16;
                    for (i, o) in parts.iter().enumerate() {
                        if let MOperand::Use(u) = *o {
                            link(at(i + 1, u), Some(offset(tuple, dw)));
                            dw += p.mf.vregs[u].dwords as u16;
                        }
                    }
                }
                (MOpcode::Extract(k), [MOperand::Def(d), MOperand::Use(s)])
                    if p.mf.vregs[*d].dwords == 1 =>
                {
                    link(at(0, *d), at(1, *s).map(|t| offset(t, k as u16)));
                }
                _ => {}
            }
        }
    }
    for (at, ra::Edit::Move { from, to }) in &out.edits {
        if let (Some((ra::RegClass::Float, a)), Some((ra::RegClass::Float, b))) =
            (reg(*from), reg(*to))
        {
            let pos = 2 * at.inst().index() as u32 + u32::from(at.pos() == ra::InstPosition::After);
            hints[a].push((Hint::Single(b), pos));
            hints[b].push((Hint::Single(a), pos));
        }
    }
    hints
}

/// ABI singles keep their numbers, other singles follow densely, then even-aligned pairs,
/// then the tuple area (aligned to 4).
fn dense(used: &[u64; 3], abi_n: u32, vweb_size: u32) -> VgprLayout {
    let mut float_map = [NO_REG; 64];
    let mut next = abi_n as u16;
    for h in bits(used[ra::RegClass::Float as usize]) {
        if (h as u32) < abi_n {
            float_map[h] = h as u16;
        } else {
            float_map[h] = next;
            next += 1;
        }
    }
    let mut top = next.max(abi_n as u16);
    let mut pair_map = [NO_REG; 64];
    if used[ra::RegClass::Vector as usize] != 0 {
        top = top.next_multiple_of(2);
        for h in bits(used[ra::RegClass::Vector as usize]) {
            pair_map[h] = top;
            top += 2;
        }
    }
    let vweb_base = top.next_multiple_of(4);
    if vweb_size > 0 {
        top = vweb_base + vweb_size as u16;
    }
    VgprLayout {
        float_map,
        pair_map,
        vweb_base,
        top,
    }
}

/// What is live on each VGPR so far, for first fit.
struct Occupancy<'a> {
    regs: Vec<Vec<&'a Intervals>>,
    top: usize,
}

impl<'a> Occupancy<'a> {
    /// The lowest multiple of `align` from which `lives[j]` fits on VGPR `base + j` for every
    /// `j` (`None`: past the file).
    fn first_fit(&self, lives: &[&Intervals], align: usize) -> Option<usize> {
        (0..=MAX_VGPRS.checked_sub(lives.len())?)
            .step_by(align)
            .find(|&base| {
                lives
                    .iter()
                    .enumerate()
                    .all(|(j, l)| self.regs[base + j].iter().all(|o| !o.overlaps(l)))
            })
    }

    fn take(&mut self, base: usize, lives: &[&'a Intervals]) {
        for (j, l) in lives.iter().enumerate() {
            self.regs[base + j].push(l);
        }
        self.top = self.top.max(base + lives.len());
    }
}

/// What the packed layouts are made from.
struct Packing<'a> {
    used: &'a [u64; 3],
    abi_n: u32,
    vweb_size: u32,
    /// Live intervals of `Float` PReg `h` at `h`, of `Vector` PReg `h` at `64 + h`.
    ivs: Vec<Intervals>,
    /// Per register of the tuple area: where any web on it is live.
    area: Vec<Intervals>,
    hints: Vec<Vec<(Hint, u32)>>,
}

impl<'a> Packing<'a> {
    fn new(a: &super::Allocator, out: &ra::Output, used: &'a [u64; 3]) -> Packing<'a> {
        let (func, w) = (&a.func, &a.w);
        let evs = locs::events(func, out, |a| {
            a.as_reg().and_then(|r| match r.class() {
                ra::RegClass::Float => Some(r.hw_enc()),
                ra::RegClass::Vector => Some(64 + r.hw_enc()),
                ra::RegClass::Int => None,
            })
        },
            |_| false,
        );
        let ivs = locs::intervals(func, &evs, 128);
        let mut area = vec![Intervals::default(); a.vweb_size as usize];
        for (r, span) in w.dword_spans(RegClass::Vgpr) {
            area[r].0.extend_from_slice(&span.0);
        }
        for r in &mut area {
            r.normalize();
        }
        Packing {
            used,
            abi_n: a.abi_n,
            vweb_size: a.vweb_size,
            ivs,
            area,
            hints: hints(&a.p, func, out, w),
        }
    }

    /// First fit over the live intervals with the hints (module doc), the singles whose
    /// hinted register is free first when `hinted_first`; with the number of hinted singles
    /// that got none of their registers (`None`: past the file).
    fn place(&self, hinted_first: bool) -> Option<(VgprLayout, usize)> {
        let Packing {
            used,
            abi_n,
            vweb_size,
            ref ivs,
            ref area,
            ref hints,
        } = *self;
        let mut occ = Occupancy {
            regs: vec![Vec::new(); MAX_VGPRS],
            top: abi_n as usize,
        };
        let mut float_map = [NO_REG; 64];
        let mut pair_map = [NO_REG; 64];
        let used_f = used[ra::RegClass::Float as usize];
        for h in bits(used_f).filter(|&h| (h as u32) < abi_n) {
            float_map[h] = h as u16;
            occ.take(h, &[&ivs[h]]);
        }
        let mut vweb_base = 0;
        if vweb_size > 0 {
            let lives: Vec<&Intervals> = area.iter().collect();
            let base = occ.first_fit(&lives, 4)?;
            occ.take(base, &lives);
            vweb_base = base as u16;
        }
        let by_start = |mask: u64, off: usize| {
            let mut order: Vec<usize> = bits(mask).collect();
            order.sort_by_key(|&h| (ivs[off + h].start(), h));
            order
        };
        for h in by_start(used[ra::RegClass::Vector as usize], 64) {
            let l = &ivs[64 + h];
            let base = occ.first_fit(&[l, l], 2)?;
            occ.take(base, &[l, l]);
            pair_map[h] = base as u16;
        }
        let singles = by_start(used_f, 0);
        let mut misses = 0;
        // With `hinted_first`, the singles whose hinted register is free go first: those copied to
        // or from a pair or the tuple area (placed already), then those of regalloc2's moves.
        let passes: &[Pass] = if hinted_first {
            &[Pass::TupleHints, Pass::Hints, Pass::All]
        } else {
            &[Pass::All]
        };
        for (&pass, h) in passes
            .iter()
            .flat_map(|p| singles.iter().map(move |&h| (p, h)))
        {
            if float_map[h] != NO_REG {
                continue;
            }
            let l = &ivs[h];
            // The hinted registers placed so far, with what lives there for the copy.
            let wanted = hints[h].iter().filter_map(|&(t, pos)| {
                if pass == Pass::TupleHints && matches!(t, Hint::Single(_)) {
                    return None;
                }
                let (r, live) = match t {
                    Hint::Pair(x, o) if pair_map[x] != NO_REG => {
                        ((pair_map[x] + o) as usize, &ivs[64 + x])
                    }
                    Hint::Area(r) if vweb_size > 0 => {
                        (vweb_base as usize + r as usize, &area[r as usize])
                    }
                    Hint::Single(x) if float_map[x] != NO_REG => (float_map[x] as usize, &ivs[x]),
                    _ => return None,
                };
                Some((r, live, pos))
            });
            // Free but for the copy's own source or destination, which may meet `l` only at the
            // copy.
            let hinted = wanted
                .clone()
                .find(|&(r, live, pos)| {
                    occ.regs[r].iter().all(|o| {
                        if std::ptr::eq(*o, live) {
                            meets_at_most_at(o, l, pos)
                        } else {
                            !o.overlaps(l)
                        }
                    })
                })
                .map(|(r, _, _)| r);
            if hinted.is_none() && pass != Pass::All {
                continue;
            }
            if hinted.is_none() && wanted.clone().next().is_some() {
                misses += 1;
            }
            let base = hinted.or_else(|| occ.first_fit(&[l], 1))?;
            occ.take(base, &[l]);
            float_map[h] = base as u16;
        }
        let layout = VgprLayout {
            float_map,
            pair_map,
            vweb_base,
            top: occ.top as u16,
        };
        Some((layout, misses))
    }
}

/// Which singles a pass of [`packed`] places.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Those whose hinted pair or tuple-area register is free.
    TupleHints,
    /// Those whose hinted register is free.
    Hints,
    /// All that are left.
    All,
}

/// Whether `a` and `b` have no position in common but `pos`.
fn meets_at_most_at(a: &Intervals, b: &Intervals, pos: u32) -> bool {
    a.0.iter().all(|&(a0, a1)| {
        b.0.iter().all(|&(b0, b1)| {
            let (lo, hi) = (a0.max(b0), a1.min(b1));
            lo > hi || (lo == pos && hi == pos)
        })
    })
}
