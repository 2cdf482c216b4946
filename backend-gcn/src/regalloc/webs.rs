//! Tuple vregs outside regalloc2: SGPR tuples (pointers, exec masks, buffer descriptors),
//! VGPR tuples of three or more dwords and AGPRs. Vregs joined by phis, ties and (when their
//! live ranges do not overlap) copies form a *web*; every web gets one aligned register range
//! for all of its life, chosen over live intervals: a scalar result first at the registers of a
//! source of its width that dies at its instruction, else first fit. These values are few and
//! long-lived; they are never spilled. A web may also hold narrower webs at a dword offset:
//! a `Build` part or an `Extract` result whose registers are free there is put inside its
//! tuple (sub-register coalescing), so a buffer descriptor built from two pairs is computed
//! in place and its `Build` emits no move.

use rustc_hash::FxHashMap as HashMap;

use cranelift_entity::EntityRef;

use crate::mir::{MBlock, MOpcode, MOperand, RegClass, VReg};

use super::prep::{kind_of, Kind, Liveness, Prepared};
use super::RegallocError;

/// Closed intervals of program positions (use of instruction `i` at `2i`, defs at `2i`,
/// a copy's def at `2i + 1`), sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub struct Intervals(pub Vec<(u32, u32)>);

impl Intervals {
    /// The normalized union of `(start, length)` spans (tests' random interval lists).
    #[cfg(test)]
    pub fn from_spans(spans: &[(u32, u32)]) -> Intervals {
        let mut iv = Intervals::default();
        for &(a, len) in spans {
            iv.add(a, a + len);
        }
        iv.normalize();
        iv
    }

    /// Adds `a..=b` (call [`Intervals::normalize`] after the last).
    pub fn add(&mut self, a: u32, b: u32) {
        self.0.push((a, b));
    }
    /// Sorts and merges touching intervals, in place (the write index never passes the
    /// read one): most lists come sorted and are normalized once per web build or
    /// location, where a new vector each was a fifth of the gemm's web builds.
    pub fn normalize(&mut self) {
        self.0.sort_unstable();
        let mut w: usize = 0;
        for r in 0..self.0.len() {
            let (a, b) = self.0[r];
            match w.checked_sub(1).map(|l| &mut self.0[l]) {
                Some(l) if a <= l.1 + 1 => l.1 = l.1.max(b),
                _ => {
                    self.0[w] = (a, b);
                    w += 1;
                }
            }
        }
        self.0.truncate(w);
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
    /// Whether any position of `o` is in `self`, when `self` is sorted and disjoint (a binary
    /// search per interval of `o`): what [`Intervals::overlaps`] tells, for a long `self`.
    pub fn meets(&self, o: &Intervals) -> bool {
        o.0.iter().any(|&(a, b)| {
            let i = self.0.partition_point(|iv| iv.1 < a);
            self.0.get(i).is_some_and(|iv| iv.0 <= b)
        })
    }
    /// Adds every position of `o`, both sorted (every caller's are normalized: a web's or a
    /// register's union, a live range): the normalized union, without a new vector.
    pub fn merge(&mut self, o: &Intervals) {
        debug_assert!(self.0.is_sorted() && o.0.is_sorted());
        let b = &o.0;
        let Some(&first) = b.first() else {
            return;
        };
        // Touching intervals become one as they are written.
        fn put(out: &mut [(u32, u32)], w: &mut usize, next: (u32, u32)) {
            match w.checked_sub(1).map(|l| &mut out[l]) {
                Some(l) if next.0 <= l.1 + 1 => l.1 = l.1.max(next.1),
                _ => {
                    out[*w] = next;
                    *w += 1;
                }
            }
        }
        let la = self.0.len();
        // `o` starting at or after `self`'s last interval (a register's union growing in
        // order of first position, a web taking a later one): only the tail changes.
        if self.0.last().is_none_or(|l| *l <= first) {
            self.0.extend_from_slice(b);
            let mut w = la;
            for r in la..self.0.len() {
                let next = self.0[r];
                put(&mut self.0, &mut w, next);
            }
            self.0.truncate(w);
            return;
        }
        // `self` moved behind room for `o`, then both merged into the front: the write index
        // never passes the next unread interval of `self`.
        let (lb, n) = (b.len(), la + b.len());
        self.0.extend_from_slice(b);
        self.0.copy_within(0..la, lb);
        let (mut i, mut j, mut w) = (lb, 0, 0);
        while i < n || j < lb {
            let next = if j == lb || (i < n && self.0[i] <= b[j]) {
                i += 1;
                self.0[i - 1]
            } else {
                j += 1;
                b[j - 1]
            };
            put(&mut self.0, &mut w, next);
        }
        self.0.truncate(w);
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
    /// Where it is live (any of its dwords).
    pub live: Intervals,
    /// Where each dword is live, with Build/Extract defs starting after their instruction
    /// (what coalescing a part into its tuple checks); empty where that is `dword_span` (no
    /// such def in the web: every VGPR/AGPR tuple), which is then neither copied nor merged
    /// twice. Made by [`build`] only, for its checks ([`Web::dword_live`]).
    pub dword_live: Vec<Intervals>,
    /// Where each dword is live, defs at their instruction (what first-fit assignment checks:
    /// a dword of a tuple whose last reader was an `Extract` of other dwords is free).
    pub dword_span: Vec<Intervals>,
    /// A register fixed by the ABI (first register).
    pub precolor: Option<u16>,
    /// The first register assigned (physical SGPR; index into the VGPR/AGPR tuple area).
    pub reg: Option<u16>,
    /// Sum of loop-depth weights (for ordering).
    pub weight: u64,
    /// For a vreg placed inside another web's registers (a coalesced `Build` part or `Extract`
    /// result at a non-zero offset): that web and the dword offset. `assign` sets `reg`.
    pub inside: Option<(usize, u16)>,
}

impl Web {
    /// Where dword `j` is live for coalescing ([`Web::dword_live`]).
    fn dword_live(&self, j: usize) -> &Intervals {
        self.dword_live.get(j).unwrap_or(&self.dword_span[j])
    }
}

/// The webs of a function.
#[derive(Clone)]
pub struct Webs {
    /// Web of each web-kind vreg.
    pub web_of: HashMap<VReg, usize>,
    /// The webs (only roots are meaningful; `web_of` points at roots).
    pub webs: Vec<Web>,
    /// Copies (block, inst index) whose source and destination share a web: emit nothing.
    pub coalesced: rustc_hash::FxHashSet<(usize, usize)>,
    /// `(result, source)` of the scalar instructions that may write a result over a source of
    /// its width dying there ([`reads_before_writing`]): `assign` tries the source's registers
    /// first (`s_bfe_u64 s[6:7], s[6:7], ..` needs no second pair).
    pub in_place: Vec<(VReg, VReg)>,
}

impl Webs {
    /// Each register the assigned webs of `class` hold (web roots only), with where that dword
    /// is live (`Web::dword_span`).
    pub fn dword_spans(&self, class: RegClass) -> Vec<(usize, &Intervals)> {
        let mut roots: Vec<usize> = self.web_of.values().copied().collect();
        roots.sort_unstable();
        roots.dedup();
        let mut out = Vec::new();
        for k in roots {
            let web = &self.webs[k];
            if let Some(base) = web.reg.filter(|_| web.class == class) {
                for (j, span) in web.dword_span.iter().enumerate() {
                    out.push((base as usize + j, span));
                }
            }
        }
        out
    }
}

/// Whether `inst` is a scalar ALU operation or scalar load: it reads all its SGPR sources
/// before it writes its destination, so the destination may be a source that dies there
/// (`s_bfe_u64 s[4:5], s[4:5], ..`, `s_load_dwordx4 s[0:3], s[0:1], ..` as LLVM emits
/// them). Its web defs start just after the instruction (`2i + 1`).
pub(super) fn reads_before_writing(inst: &crate::mir::MInst) -> bool {
    use crate::isa::Format;
    matches!(inst.opcode, MOpcode::Isa(op) if matches!(
        op.info().format,
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Smem
    ))
}

/// Where each web vreg is live: one segment per block it is live in (unsorted, as the walk
/// of the blocks adds them), for all of it and per dword (empty: never live), indexed by the
/// web vregs' order (the `k`-th web vreg of the function's vregs at `k`: tables of the webs
/// alone, which are few), and the in-place candidates ([`Webs::in_place`]). What [`build`]
/// merges and coalesces.
#[derive(Clone, Default)]
pub struct Live {
    ivs: Vec<Intervals>,
    dword_ivs: Vec<Vec<Intervals>>,
    in_place: Vec<(VReg, VReg)>,
}

/// The live segments of `p`'s web vregs for both def rules, from one walk of the blocks: with
/// late scalar defs (a result of [`reads_before_writing`] begins just after its instruction,
/// and may take the registers of a source of its width dying there), and without (it begins
/// at its instruction; no in-place candidates). The two differ only in the segments such a
/// def begins, which the walk records and moves back for the second.
pub fn live(p: &Prepared, lv: &Liveness) -> (Live, Live) {
    let mf = &p.mf;
    let is_web = |v: VReg| {
        let d = mf.vregs[v];
        kind_of(d.class, d.dwords) == Kind::Web
    };
    // Each web vreg's place in the tables ([`Live`]).
    let mut web_ix = vec![u32::MAX; mf.vregs.len()];
    let mut n_webs = 0usize;
    for (v, _) in mf.vregs.iter() {
        if is_web(v) {
            web_ix[v.index()] = n_webs as u32;
            n_webs += 1;
        }
    }
    let mut ivs: Vec<Intervals> = vec![Intervals::default(); n_webs];
    // The same per dword: an `Extract` reads only its dwords, so the others of its source may
    // end earlier (the pairs extracted from a loaded quad each land in their own half).
    let mut dword_ivs: Vec<Vec<Intervals>> = vec![Vec::new(); n_webs];
    let mut in_place = Vec::new();
    // Segments begun by a late scalar def: (web's place, segment index, late start, early
    // start).
    let mut moved: Vec<(usize, usize, u32, u32)> = Vec::new();
    // First def / last use within the block being walked, per vreg and per vreg dword
    // (`UNSET`: none), and the vregs given one, to list and clear at the block's end: dense
    // tables made once instead of hash maps per block. `early_first`: the first def's
    // position without late scalar defs, where it differs.
    const UNSET: u32 = u32::MAX;
    let mut first = vec![UNSET; mf.vregs.len()];
    let mut early_first = vec![UNSET; mf.vregs.len()];
    let mut last = vec![UNSET; mf.vregs.len()];
    let mut dword_at = Vec::with_capacity(mf.vregs.len() + 1);
    let mut total = 0usize;
    for (_, d) in mf.vregs.iter() {
        dword_at.push(total);
        total += d.dwords as usize;
    }
    let mut dword_last = vec![UNSET; total];
    let mut touched: Vec<VReg> = Vec::new();
    // The web vregs with a segment in the block being walked, each once (`listed`: the block
    // that listed it last).
    let mut seen: Vec<VReg> = Vec::new();
    let mut listed = vec![u32::MAX; n_webs];
    for (b, bd) in mf.blocks.iter() {
        let bi = b.index();
        let start = 2 * p.first_inst[bi];
        let end = 2 * p.term_inst(bi) + 1;
        for &v in &touched {
            first[v.index()] = UNSET;
            early_first[v.index()] = UNSET;
            last[v.index()] = UNSET;
            let at = dword_at[v.index()];
            dword_last[at..at + mf.vregs[v].dwords as usize].fill(UNSET);
        }
        touched.clear();
        // Dword `j` of `v` read at `pos` (dwords past `v`'s own are never looked up).
        let read_dword = |dword_last: &mut Vec<u32>, v: VReg, j: u16, pos: u32| {
            if j < mf.vregs[v].dwords as u16 {
                dword_last[dword_at[v.index()] + j as usize] = pos;
            }
        };
        for &v in &bd.params {
            if is_web(v) {
                first[v.index()] = start;
                touched.push(v);
            }
        }
        for (k, inst) in bd.insts.iter().enumerate() {
            let i = p.first_inst[bi] + k as u32;
            for v in inst.uses() {
                if is_web(v) {
                    last[v.index()] = 2 * i;
                    touched.push(v);
                    let read = match (inst.opcode, inst.ops.first()) {
                        (MOpcode::Extract(x), Some(MOperand::Def(d))) => {
                            x as u16..x as u16 + mf.vregs[*d].dwords as u16
                        }
                        _ => 0..mf.vregs[v].dwords as u16,
                    };
                    for j in read {
                        read_dword(&mut dword_last, v, j, 2 * i);
                    }
                }
            }
            let late = reads_before_writing(inst);
            let dpos = if inst.opcode == MOpcode::Copy || late {
                2 * i + 1
            } else {
                2 * i
            };
            if late {
                for d in inst.defs().filter(|&d| is_web(d)) {
                    for u in inst.uses() {
                        if is_web(u) && mf.vregs[u].dwords == mf.vregs[d].dwords {
                            in_place.push((d, u));
                        }
                    }
                }
            }
            for v in inst.defs() {
                if is_web(v) && first[v.index()] == UNSET {
                    first[v.index()] = dpos;
                    if late && inst.opcode != MOpcode::Copy {
                        early_first[v.index()] = 2 * i;
                    }
                    touched.push(v);
                }
            }
        }
        let t = p.term_inst(bi);
        for (_, args) in bd.term.successors() {
            for &a in args {
                if is_web(a) {
                    last[a.index()] = 2 * t;
                    touched.push(a);
                    for j in 0..mf.vregs[a].dwords as u16 {
                        read_dword(&mut dword_last, a, j, 2 * t);
                    }
                }
            }
        }
        // Each vreg's segments are its own: the order the vregs are visited in changes none.
        seen.clear();
        let candidates = lv.live_in[bi]
            .iter()
            .chain(lv.live_out[bi].iter())
            .map(VReg::new);
        for v in touched
            .iter()
            .copied()
            .chain(candidates.filter(|&v| is_web(v)))
        {
            let x = web_ix[v.index()] as usize;
            if listed[x] != bi as u32 {
                listed[x] = bi as u32;
                seen.push(v);
            }
        }
        for &v in &seen {
            let live_in = lv.live_in[bi].contains(v.index());
            let s = if live_in {
                start
            } else {
                match first[v.index()] {
                    UNSET => continue,
                    d => d,
                }
            };
            let live_out = lv.live_out[bi].contains(v.index());
            let last_or = |x: u32| if x == UNSET { s } else { x };
            let e = if live_out {
                end
            } else {
                last_or(last[v.index()]).max(s)
            };
            let x = web_ix[v.index()] as usize;
            let whole = &mut ivs[x];
            if !live_in && early_first[v.index()] != UNSET {
                moved.push((x, whole.0.len(), s, early_first[v.index()]));
            }
            whole.add(s, e);
            let n = mf.vregs[v].dwords as usize;
            let per = &mut dword_ivs[x];
            if per.is_empty() {
                per.resize(n, Intervals::default());
            }
            for (j, iv) in per.iter_mut().enumerate() {
                let e = if live_out {
                    end
                } else {
                    last_or(dword_last[dword_at[v.index()] + j]).max(s)
                };
                iv.add(s, e);
            }
        }
    }
    let late = Live {
        ivs,
        dword_ivs,
        in_place,
    };
    let mut early = Live {
        ivs: late.ivs.clone(),
        dword_ivs: late.dword_ivs.clone(),
        in_place: Vec::new(),
    };
    // A segment begun at `at` (late) begins at `to` instead; one that ended there (no read
    // after the def in its block, reads are at even positions) ends there too.
    let back = |seg: &mut (u32, u32), at: u32, to: u32| {
        debug_assert_eq!(seg.0, at);
        *seg = (to, if seg.1 == at { to } else { seg.1 });
    };
    for &(x, k, at, to) in &moved {
        back(&mut early.ivs[x].0[k], at, to);
        for iv in early.dword_ivs[x].iter_mut() {
            back(&mut iv.0[k], at, to);
        }
    }
    (late, early)
}

/// What may join webs besides the mandatory merges, and the `Build`/`Extract` results'
/// positions: the same for both def rules, so [`joins`] walks the function once for the two
/// [`build`]s.
pub struct Joins {
    /// `Build`/`Extract` defs are moves, like copies: for coalescing with their parts they
    /// begin just after the instruction (`2i + 1`); against other webs they begin at `2i` (an
    /// uncoalesced `Build` moves its parts one after the other, so its registers must not be
    /// any part's). Their `2i`, by vreg.
    late_def: HashMap<VReg, u32>,
    /// Copies between webs: (loop depth, block, index, destination, source), innermost loops
    /// first.
    copies: Vec<(u32, usize, usize, VReg, VReg)>,
    /// `Build` parts and `Extract` results: (loop depth, part, tuple, dword offset of the part
    /// in the tuple), innermost loops first.
    parts: Vec<(u32, VReg, VReg, u16)>,
}

/// The [`Joins`] of `p`.
pub fn joins(p: &Prepared) -> Joins {
    let mf = &p.mf;
    let is_web = |v: VReg| {
        let d = mf.vregs[v];
        kind_of(d.class, d.dwords) == Kind::Web
    };
    let mut late_def: HashMap<VReg, u32> = HashMap::default();
    let mut copies: Vec<(u32, usize, usize, VReg, VReg)> = Vec::new();
    let mut parts: Vec<(u32, VReg, VReg, u16)> = Vec::new();
    for (b, bd) in mf.blocks.iter() {
        for (k, inst) in bd.insts.iter().enumerate() {
            if matches!(inst.opcode, MOpcode::Build | MOpcode::Extract(_)) {
                if let Some(MOperand::Def(d)) = inst.ops.first() {
                    if is_web(*d) {
                        late_def.insert(*d, 2 * (p.first_inst[b.index()] + k as u32));
                    }
                }
            }
            match (inst.opcode, inst.ops.as_slice()) {
                (MOpcode::Copy, [MOperand::Def(d), MOperand::Use(s)]) if is_web(*d) => {
                    copies.push((bd.loop_depth, b.index(), k, *d, *s));
                }
                (MOpcode::Build, [MOperand::Def(d), rest @ ..]) if is_web(*d) => {
                    let mut at = 0u16;
                    for o in rest {
                        match o {
                            MOperand::Use(u) => {
                                if is_web(*u) {
                                    parts.push((bd.loop_depth, *u, *d, at));
                                }
                                at += mf.vregs[*u].dwords as u16;
                            }
                            // A constant dword.
                            MOperand::Phys(_) => at += 1,
                            _ => {}
                        }
                    }
                }
                (MOpcode::Extract(x), [MOperand::Def(d), MOperand::Use(s)])
                    if is_web(*d) && is_web(*s) =>
                {
                    parts.push((bd.loop_depth, *d, *s, x as u16));
                }
                _ => {}
            }
        }
    }
    copies.sort_by_key(|c| std::cmp::Reverse(c.0));
    parts.sort_by_key(|c| std::cmp::Reverse(c.0));
    Joins {
        late_def,
        copies,
        parts,
    }
}

/// Builds the webs of `p` from its live segments ([`live`]: the def rule is theirs) and its
/// [`joins`]: mandatory merges, then copy coalescing.
pub fn build(
    p: &Prepared,
    live: Live,
    joins: &Joins,
    kernarg: Option<(VReg, u16)>,
) -> Result<Webs, RegallocError> {
    let mf = &p.mf;
    let Live {
        mut ivs,
        mut dword_ivs,
        in_place,
    } = live;
    let Joins {
        late_def,
        copies,
        parts,
    } = joins;
    let mut web_of: HashMap<VReg, usize> = HashMap::default();
    let mut webs: Vec<Web> = Vec::new();
    let mut parent: Vec<usize> = Vec::new();
    // Dword offset of each web inside its parent.
    let mut off: Vec<u16> = Vec::new();
    for (v, d) in mf.vregs.iter() {
        if kind_of(d.class, d.dwords) != Kind::Web {
            continue;
        }
        // The web vregs come in the tables' order.
        let x = webs.len();
        let mut live = std::mem::take(&mut ivs[x]);
        live.normalize();
        let late = |mut iv: Intervals, at: u32| {
            for seg in iv.0.iter_mut() {
                if seg.0 == at {
                    seg.0 = at + 1;
                    seg.1 = seg.1.max(at + 1);
                }
            }
            iv
        };
        let mut dword_span = std::mem::take(&mut dword_ivs[x]);
        if dword_span.is_empty() {
            dword_span = vec![Intervals::default(); d.dwords as usize];
        }
        for iv in &mut dword_span {
            iv.normalize();
        }
        // Without a late def the dwords' live intervals are their spans (left empty).
        let dword_live: Vec<Intervals> = match late_def.get(&v) {
            Some(&at) => dword_span.iter().map(|iv| late(iv.clone(), at)).collect(),
            None => Vec::new(),
        };
        web_of.insert(v, webs.len());
        parent.push(webs.len());
        off.push(0);
        webs.push(Web {
            class: d.class,
            dwords: d.dwords,
            dword_live,
            dword_span,
            live,
            precolor: None,
            reg: None,
            weight: 0,
            inside: None,
        });
    }
    if let Some((v, r)) = kernarg {
        if let Some(&w) = web_of.get(&v) {
            webs[w].precolor = Some(r);
        }
    }
    fn find(parent: &mut [usize], off: &mut [u16], x: usize) -> (usize, u16) {
        // Path to the root, then compress it with accumulated offsets.
        let mut path = Vec::new();
        let mut r = x;
        while parent[r] != r {
            path.push(r);
            r = parent[r];
        }
        let mut acc = 0u16;
        for &n in path.iter().rev() {
            acc += off[n];
            off[n] = acc;
            parent[n] = r;
        }
        (r, if x == r { 0 } else { off[x] })
    }
    let target = mf.abi.target;
    // Puts web `a` at `b`'s registers plus `k` dwords. `check` refuses when a dword would hold
    // two values live at once, when precolours disagree, or when the shapes do not nest
    // (alignment included).
    let union = |webs: &mut Vec<Web>,
                 parent: &mut Vec<usize>,
                 off: &mut Vec<u16>,
                 a: usize,
                 b: usize,
                 k: u16,
                 check: bool|
     -> bool {
        let (ra, oa) = find(parent, off, a);
        let (rb, ob) = find(parent, off, b);
        // base(ra) = base(rb) + delta
        let delta = (ob + k) as i32 - oa as i32;
        if ra == rb {
            return delta == 0;
        }
        let (child, host, at) = if delta >= 0
            && delta as u16 + webs[ra].dwords as u16 <= webs[rb].dwords as u16
        {
            (ra, rb, delta as u16)
        } else if delta <= 0 && (-delta) as u16 + webs[rb].dwords as u16 <= webs[ra].dwords as u16 {
            (rb, ra, (-delta) as u16)
        } else {
            return false;
        };
        if at % alignment(webs[child].class, webs[child].dwords, target) != 0 {
            return false;
        }
        let cp = match webs[child].precolor {
            Some(p) if p < at => return false,
            Some(p) => Some(p - at),
            None => None,
        };
        if check {
            if (0..webs[child].dwords as usize).any(|j| {
                webs[child]
                    .dword_live(j)
                    .overlaps(webs[host].dword_live(at as usize + j))
            }) {
                return false;
            }
            if cp.is_some() && webs[host].precolor.is_some() && cp != webs[host].precolor {
                return false;
            }
        }
        // A merged web is no longer a root: only roots' intervals are read.
        let child_live = std::mem::take(&mut webs[child].live);
        let child_dwords = std::mem::take(&mut webs[child].dword_live);
        let child_spans = std::mem::take(&mut webs[child].dword_span);
        // The host's live dwords are its spans until a part with late defs joins it: they
        // are copied from the spans before these grow, then kept apart.
        if !child_dwords.is_empty() && webs[host].dword_live.is_empty() {
            webs[host].dword_live = webs[host].dword_span.clone();
        }
        for (j, l) in child_spans.iter().enumerate() {
            webs[host].dword_span[at as usize + j].merge(l);
        }
        webs[host].live.merge(&child_live);
        if !webs[host].dword_live.is_empty() {
            let lives = if child_dwords.is_empty() {
                &child_spans
            } else {
                &child_dwords
            };
            for (j, l) in lives.iter().enumerate() {
                webs[host].dword_live[at as usize + j].merge(l);
            }
        }
        webs[host].precolor = webs[host].precolor.or(cp);
        webs[host].weight += webs[child].weight;
        parent[child] = host;
        off[child] = at;
        true
    };
    for &(a, b) in &p.mandatory {
        let (wa, wb) = (web_of[&a], web_of[&b]);
        union(&mut webs, &mut parent, &mut off, wa, wb, 0, false);
    }
    // Copies, innermost loops first.
    let mut coalesced = rustc_hash::FxHashSet::default();
    for (_, b, k, d, s) in copies {
        if union(
            &mut webs,
            &mut parent,
            &mut off,
            web_of[d],
            web_of[s],
            0,
            true,
        ) {
            coalesced.insert((*b, *k));
        }
    }
    // A part that lands in its tuple's registers needs no move.
    for (_, u, t, at) in parts {
        union(
            &mut webs,
            &mut parent,
            &mut off,
            web_of[u],
            web_of[t],
            *at,
            true,
        );
    }
    // A vreg inside its web at a non-zero offset gets its own entry, placed by `assign`
    // relative to the root, so that `web_of[v]`'s register is always `v`'s first register.
    let mut vregs: Vec<VReg> = web_of.keys().copied().collect();
    vregs.sort_unstable();
    for v in vregs {
        let (r, o) = find(&mut parent, &mut off, web_of[&v]);
        if o == 0 {
            web_of.insert(v, r);
        } else {
            web_of.insert(v, webs.len());
            webs.push(Web {
                class: webs[r].class,
                dwords: mf.vregs[v].dwords,
                live: Intervals::default(),
                dword_live: Vec::new(),
                dword_span: Vec::new(),
                precolor: None,
                reg: None,
                weight: 0,
                inside: Some((r, o)),
            });
        }
    }
    let _ = MBlock::new(0);
    Ok(Webs {
        web_of,
        webs,
        coalesced,
        in_place,
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

/// The root web `v` is in and `v`'s dword offset there.
fn root_of(webs: &Webs, v: VReg) -> (usize, u16) {
    let w = webs.web_of[&v];
    webs.webs[w].inside.unwrap_or((w, 0))
}

/// First-fit assignment of the webs of `class` over registers `0..limit` minus `blocked`,
/// each at the registers of a source it may be computed over ([`Webs::in_place`]) when they
/// fit, else at the lowest that fit. Returns the registers any web of the class occupies.
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
    roots.retain(|&r| webs.webs[r].class == class && webs.webs[r].inside.is_none());
    roots.sort_by_key(|&r| {
        (
            webs.webs[r].precolor.is_none(),
            webs.webs[r].live.start(),
            r,
        )
    });
    // Per root: the registers of already placed sources to try first (by source, then offset).
    let mut hints: HashMap<usize, Vec<(VReg, i32)>> = HashMap::default();
    for &(d, s) in &webs.in_place {
        let (rd, od) = root_of(webs, d);
        let (rs, os) = root_of(webs, s);
        if rd != rs {
            hints
                .entry(rd)
                .or_default()
                .push((s, os as i32 - od as i32));
        }
    }
    // Per register: where the web dwords placed on it are live (their union: one binary
    // search per interval tells a fit, where a walk over every web on the register and its
    // intervals did), and whether it is blocked.
    let mut occ: Vec<Intervals> = vec![Intervals::default(); limit as usize];
    let mut is_blocked = vec![false; limit as usize];
    for &x in blocked.iter().filter(|&&x| x < limit) {
        is_blocked[x as usize] = true;
    }
    let mut used = Vec::new();
    for r in roots {
        let (dw, al) = (
            webs.webs[r].dwords as u16,
            alignment(class, webs.webs[r].dwords, target),
        );
        let fits = |base: u16, occ: &Vec<Intervals>, webs: &Webs| -> bool {
            (base..base + dw).all(|x| {
                (x < limit)
                    && !is_blocked[x as usize]
                    && !occ[x as usize].meets(&webs.webs[r].dword_span[(x - base) as usize])
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
                let hinted = hints.get(&r).into_iter().flatten().find_map(|&(s, rel)| {
                    let base = webs.webs[root_of(webs, s).0].reg? as i32 + rel;
                    let base = u16::try_from(base).ok()?;
                    (base % al == 0 && fits(base, &occ, webs)).then_some(base)
                });
                let mut b = hinted.unwrap_or(0);
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
            occ[x as usize].merge(&webs.webs[r].dword_span[(x - base) as usize]);
            used.push(x);
        }
        webs.webs[r].reg = Some(base);
    }
    for k in 0..webs.webs.len() {
        if let Some((r, o)) = webs.webs[k].inside {
            if webs.webs[r].class == class {
                webs.webs[k].reg = webs.webs[r].reg.map(|b| b + o);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A register's merged union of the dwords placed on it meets an interval list
        /// exactly when one of them overlaps it (what `assign` checked web by web before).
        #[test]
        fn the_union_meets_what_one_of_its_parts_overlaps(
            placed in proptest::collection::vec(
                proptest::collection::vec((0u32..200, 0u32..20), 1..4),
                0..12,
            ),
            probe in proptest::collection::vec((0u32..200, 0u32..20), 0..4),
        ) {
            let parts: Vec<Intervals> = placed.iter().map(|v| Intervals::from_spans(v)).collect();
            let mut union = Intervals::default();
            for p in &parts {
                union.merge(p);
            }
            let probe = Intervals::from_spans(&probe);
            prop_assert_eq!(union.meets(&probe), parts.iter().any(|p| p.overlaps(&probe)));
            // The union is what normalizing every part's intervals together gives.
            let mut all = Intervals(parts.iter().flat_map(|p| p.0.iter().copied()).collect());
            all.normalize();
            prop_assert_eq!(&union.0, &all.0);
        }
    }
}
