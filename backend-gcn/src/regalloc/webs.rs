//! Tuple vregs outside regalloc2: SGPR tuples (pointers, exec masks, buffer descriptors),
//! VGPR tuples of three or more dwords and AGPRs. Vregs joined by phis, ties and (when their
//! live ranges do not overlap) copies form a *web*; every web gets one aligned register range
//! for all of its life, chosen first-fit over live intervals. These values are few and
//! long-lived; they are never spilled.

use std::collections::HashMap;

use cranelift_entity::EntityRef;

use crate::mir::{MBlock, MOpcode, MOperand, RegClass, VReg};

use super::prep::{kind_of, Kind, Liveness, Prepared};
use super::RegallocError;

/// Closed intervals of program positions (use of instruction `i` at `2i`, defs at `2i`,
/// a copy's def at `2i + 1`), sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub struct Intervals(pub Vec<(u32, u32)>);

impl Intervals {
    fn add(&mut self, a: u32, b: u32) {
        self.0.push((a, b));
    }
    fn normalize(&mut self) {
        self.0.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(self.0.len());
        for &(a, b) in &self.0 {
            match out.last_mut() {
                Some(l) if a <= l.1 + 1 => l.1 = l.1.max(b),
                _ => out.push((a, b)),
            }
        }
        self.0 = out;
    }
    /// Whether any position is in both.
    pub fn overlaps(&self, o: &Intervals) -> bool {
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < o.0.len() {
            let (a, b) = (self.0[i], o.0[j]);
            if a.1 < b.0 {
                i += 1;
            } else if b.1 < a.0 {
                j += 1;
            } else {
                return true;
            }
        }
        false
    }
    fn merge(&mut self, o: &Intervals) {
        self.0.extend_from_slice(&o.0);
        self.normalize();
    }
    /// First position.
    pub fn start(&self) -> u32 {
        self.0.first().map(|x| x.0).unwrap_or(0)
    }
}

/// One web: vregs sharing a register range.
#[derive(Clone, Debug)]
pub struct Web {
    /// Register file.
    pub class: RegClass,
    /// Width.
    pub dwords: u8,
    /// Where it is live.
    pub live: Intervals,
    /// A register fixed by the ABI (first register).
    pub precolor: Option<u16>,
    /// The first register assigned (physical SGPR; index into the VGPR/AGPR tuple area).
    pub reg: Option<u16>,
    /// Sum of loop-depth weights (for ordering).
    pub weight: u64,
}

/// The webs of a function.
pub struct Webs {
    /// Web of each web-kind vreg.
    pub web_of: HashMap<VReg, usize>,
    /// The webs (only roots are meaningful; `web_of` points at roots).
    pub webs: Vec<Web>,
    /// Copies (block, inst index) whose source and destination share a web: emit nothing.
    pub coalesced: std::collections::HashSet<(usize, usize)>,
}

/// Builds the webs of `p`: intervals, mandatory merges, then copy coalescing.
pub fn build(
    p: &Prepared,
    lv: &Liveness,
    kernarg: Option<(VReg, u16)>,
) -> Result<Webs, RegallocError> {
    let mf = &p.mf;
    let is_web = |v: VReg| {
        let d = mf.vregs[v];
        kind_of(d.class, d.dwords) == Kind::Web
    };
    let mut ivs: HashMap<VReg, Intervals> = HashMap::new();
    for (b, bd) in mf.blocks.iter() {
        let bi = b.index();
        let start = 2 * p.first_inst[bi];
        let end = 2 * p.term_inst(bi) + 1;
        // first def / last use within this block
        let mut first: HashMap<VReg, u32> = HashMap::new();
        let mut last: HashMap<VReg, u32> = HashMap::new();
        for &v in &bd.params {
            if is_web(v) {
                first.insert(v, start);
            }
        }
        for (k, inst) in bd.insts.iter().enumerate() {
            let i = p.first_inst[bi] + k as u32;
            for v in inst.uses() {
                if is_web(v) {
                    last.insert(v, 2 * i);
                }
            }
            let dpos = if inst.opcode == MOpcode::Copy {
                2 * i + 1
            } else {
                2 * i
            };
            for v in inst.defs() {
                if is_web(v) {
                    first.entry(v).or_insert(dpos);
                }
            }
        }
        let t = p.term_inst(bi);
        for (_, args) in bd.term.successors() {
            for &a in args {
                if is_web(a) {
                    last.insert(a, 2 * t);
                }
            }
        }
        let mut seen: Vec<VReg> = first.keys().chain(last.keys()).copied().collect();
        for v in lv.live_in[bi].iter().chain(lv.live_out[bi].iter()) {
            let v = VReg::new(v);
            if is_web(v) {
                seen.push(v);
            }
        }
        seen.sort_unstable();
        seen.dedup();
        for v in seen {
            let s = if lv.live_in[bi].contains(v.index()) {
                start
            } else {
                match first.get(&v) {
                    Some(&d) => d,
                    None => continue,
                }
            };
            let e = if lv.live_out[bi].contains(v.index()) {
                end
            } else {
                last.get(&v).copied().unwrap_or(s).max(s)
            };
            ivs.entry(v).or_default().add(s, e);
        }
    }
    let mut web_of: HashMap<VReg, usize> = HashMap::new();
    let mut webs: Vec<Web> = Vec::new();
    let mut parent: Vec<usize> = Vec::new();
    for (v, d) in mf.vregs.iter() {
        if kind_of(d.class, d.dwords) != Kind::Web {
            continue;
        }
        let mut live = ivs.remove(&v).unwrap_or_default();
        live.normalize();
        web_of.insert(v, webs.len());
        parent.push(webs.len());
        webs.push(Web {
            class: d.class,
            dwords: d.dwords,
            live,
            precolor: None,
            reg: None,
            weight: 0,
        });
    }
    if let Some((v, r)) = kernarg {
        if let Some(&w) = web_of.get(&v) {
            webs[w].precolor = Some(r);
        }
    }
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    // Union `a` into `b`'s root; `check` refuses overlapping or differently precoloured webs.
    let union =
        |webs: &mut Vec<Web>, parent: &mut Vec<usize>, a: usize, b: usize, check: bool| -> bool {
            let (ra, rb) = (find(parent, a), find(parent, b));
            if ra == rb {
                return true;
            }
            if check {
                if webs[ra].live.overlaps(&webs[rb].live) {
                    return false;
                }
                if webs[ra].precolor.is_some() && webs[rb].precolor.is_some() {
                    return false;
                }
            }
            let (la, pa) = (webs[ra].live.clone(), webs[ra].precolor);
            webs[rb].live.merge(&la);
            webs[rb].precolor = webs[rb].precolor.or(pa);
            webs[rb].weight += webs[ra].weight;
            parent[ra] = rb;
            true
        };
    for &(a, b) in &p.mandatory {
        let (wa, wb) = (web_of[&a], web_of[&b]);
        union(&mut webs, &mut parent, wa, wb, false);
    }
    // Copies, innermost loops first.
    let mut copies: Vec<(u32, usize, usize, VReg, VReg)> = Vec::new();
    for (b, bd) in mf.blocks.iter() {
        for (k, inst) in bd.insts.iter().enumerate() {
            if inst.opcode != MOpcode::Copy {
                continue;
            }
            if let [MOperand::Def(d), MOperand::Use(s)] = inst.ops.as_slice() {
                if is_web(*d) {
                    copies.push((bd.loop_depth, b.index(), k, *d, *s));
                }
            }
        }
    }
    copies.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut coalesced = std::collections::HashSet::new();
    for (_, b, k, d, s) in &copies {
        if union(&mut webs, &mut parent, web_of[d], web_of[s], true) {
            coalesced.insert((*b, *k));
        }
    }
    for w in web_of.values_mut() {
        *w = find(&mut parent, *w);
    }
    // A mandatory merge must not have joined two precolours or overlapping copies of a value;
    // the prep argument guarantees it, this keeps the guarantee checked.
    let _ = MBlock::new(0);
    Ok(Webs {
        web_of,
        webs,
        coalesced,
    })
}

/// Register alignment of a tuple of `dwords` in `class` on the target.
pub fn alignment(class: RegClass, dwords: u8, target: crate::Target) -> u16 {
    match class {
        RegClass::Sgpr => match dwords {
            1 => 1,
            2 => 2,
            _ => 4,
        },
        RegClass::Vgpr | RegClass::Agpr => {
            if dwords >= 2 && target != crate::Target::Gfx900 {
                2
            } else {
                1
            }
        }
    }
}

/// First-fit assignment of the webs of `class` over registers `0..limit` minus `blocked`.
/// Returns the registers any web of the class occupies.
pub fn assign(
    webs: &mut Webs,
    class: RegClass,
    target: crate::Target,
    limit: u16,
    blocked: &[u16],
) -> Result<Vec<u16>, RegallocError> {
    let mut roots: Vec<usize> = webs.web_of.values().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    roots.retain(|&r| webs.webs[r].class == class);
    roots.sort_by_key(|&r| {
        (
            webs.webs[r].precolor.is_none(),
            webs.webs[r].live.start(),
            r,
        )
    });
    let mut occ: Vec<Vec<usize>> = vec![Vec::new(); limit as usize];
    let mut used = Vec::new();
    for r in roots {
        let (dw, al) = (
            webs.webs[r].dwords as u16,
            alignment(class, webs.webs[r].dwords, target),
        );
        let fits = |base: u16, occ: &Vec<Vec<usize>>, webs: &Webs| -> bool {
            (base..base + dw).all(|x| {
                (x < limit)
                    && !blocked.contains(&x)
                    && occ[x as usize]
                        .iter()
                        .all(|&o| !webs.webs[o].live.overlaps(&webs.webs[r].live))
            })
        };
        let base = match webs.webs[r].precolor {
            Some(p) => {
                if !fits(p, &occ, webs) {
                    return Err(RegallocError::Unsupported(format!(
                        "ABI register {p} of a tuple is not available"
                    )));
                }
                p
            }
            None => {
                let mut b = 0u16;
                loop {
                    if b + dw > limit {
                        return Err(RegallocError::OutOfRegisters {
                            file: class_name(class),
                            limit: limit as u32,
                        });
                    }
                    if fits(b, &occ, webs) {
                        break b;
                    }
                    b += al;
                }
            }
        };
        for x in base..base + dw {
            occ[x as usize].push(r);
            used.push(x);
        }
        webs.webs[r].reg = Some(base);
    }
    used.sort_unstable();
    used.dedup();
    Ok(used)
}

/// A register file's name for messages.
pub fn class_name(c: RegClass) -> &'static str {
    match c {
        RegClass::Sgpr => "SGPR",
        RegClass::Vgpr => "VGPR",
        RegClass::Agpr => "AGPR",
    }
}
