//! Preparation of a working copy of the machine function for allocation: critical-edge splitting
//! (regalloc2 requires it, and tuple phis need a place for their copies), copies for block
//! arguments and tied uses of tuple vregs (which are allocated outside regalloc2), and the
//! linear numbering and liveness every later step shares.

use cranelift_entity::EntityRef;

use crate::mir::{
    implicit, MBlock, MBlockData, MInst, MOpcode, MOperand, MachineFunction, RegClass, Terminator,
    VReg,
};

use super::RegallocError;

/// How a virtual register is allocated (see the module doc of `regalloc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One SGPR: regalloc2 class `Int`.
    Int,
    /// One VGPR: regalloc2 class `Float`.
    Float,
    /// An even-aligned VGPR pair: regalloc2 class `Vector`.
    Pair,
    /// Everything else (SGPR tuples, VGPR tuples of 3+ dwords, AGPRs): one register range for
    /// the whole life of its web (see `webs`).
    Web,
}

/// The allocation kind of a vreg.
pub fn kind_of(class: RegClass, dwords: u8) -> Kind {
    match (class, dwords) {
        (RegClass::Sgpr, 1) => Kind::Int,
        (RegClass::Vgpr, 1) => Kind::Float,
        (RegClass::Vgpr, 2) => Kind::Pair,
        _ => Kind::Web,
    }
}

/// A merge the web builder must make (the two vregs must share a register range).
pub type MandatoryMerge = (VReg, VReg);

/// The prepared function: blocks `0..original` are the input's, the rest split edges.
pub struct Prepared {
    /// The working copy, its blocks in reverse postorder (regalloc2's checker visits blocks
    /// in index order first and needs predecessors before successors).
    pub mf: MachineFunction,
    /// For each working block, the block it is in the output (input blocks keep their
    /// numbers, split edges follow them).
    pub orig_of: Vec<MBlock>,
    /// Web merges required by tuple phis and ties.
    pub mandatory: Vec<MandatoryMerge>,
    /// Per block: the first global instruction index; the block's instructions are
    /// `first..first+len`, then one terminator instruction.
    pub first_inst: Vec<u32>,
    /// Total instructions, terminators included.
    pub num_insts: u32,
    /// Predecessors of every block.
    pub preds: Vec<Vec<MBlock>>,
    /// Per global instruction: EXEC may be partial just before it runs.
    pub partial_before: Vec<bool>,
    /// Per global instruction: EXEC may be partial just after it ran.
    pub partial_after: Vec<bool>,
}

impl Prepared {
    /// Index of the terminator instruction of block `b`.
    pub fn term_inst(&self, b: usize) -> u32 {
        self.first_inst[b] + self.mf.blocks[MBlock::new(b)].insts.len() as u32
    }
}

/// Whether `inst` writes EXEC.
pub fn writes_exec(inst: &MInst) -> bool {
    if inst.implicit_defs & implicit::EXEC != 0 {
        return true;
    }
    if let MOpcode::Isa(op) = inst.opcode {
        for (i, o) in inst.ops.iter().enumerate() {
            if let MOperand::Phys(crate::isa::Operand::Special(s)) = o {
                use crate::isa::SpecialReg::*;
                if matches!(s, Exec | ExecLo | ExecHi)
                    && crate::isa::operand_infos(op, inst.encoding, inst.mods.glc)
                        .get(i)
                        .map(|x| x.access.writes())
                        .unwrap_or(i == 0)
                {
                    return true;
                }
            }
        }
    }
    false
}

fn malformed(s: String) -> RegallocError {
    RegallocError::Malformed(s)
}

/// Checks the MIR invariants the allocator relies on.
pub fn validate(mf: &MachineFunction) -> Result<(), RegallocError> {
    if mf.blocks.is_empty() {
        return Err(malformed("no blocks".into()));
    }
    let nv = mf.vregs.len();
    let mut defined = vec![false; nv];
    let mut def = |v: VReg, what: &str| -> Result<(), RegallocError> {
        let i = v.index();
        if i >= nv {
            return Err(malformed(format!(
                "{what}: {v} is not a vreg of the function"
            )));
        }
        if std::mem::replace(&mut defined[i], true) {
            return Err(malformed(format!("{v} is defined more than once")));
        }
        Ok(())
    };
    for (b, bd) in mf.blocks.iter() {
        if b.index() == 0 && !bd.params.is_empty() {
            return Err(malformed("the entry block has parameters".into()));
        }
        for &p in &bd.params {
            def(p, "block parameter")?;
        }
        let mut in_prefix = b.index() == 0;
        for (i, inst) in bd.insts.iter().enumerate() {
            let is_livein = matches!(inst.opcode, MOpcode::LiveIn(_));
            if is_livein && !in_prefix {
                return Err(malformed(format!(
                    "{b} inst {i}: LiveIn is only allowed at the start of the entry block"
                )));
            }
            in_prefix &= is_livein;
            for v in inst.defs() {
                def(v, "def")?;
            }
            for v in inst.uses() {
                if v.index() >= nv {
                    return Err(malformed(format!("{b} inst {i}: use of unknown {v}")));
                }
            }
            match inst.opcode {
                MOpcode::Copy => {
                    let (d, s) = match inst.ops.as_slice() {
                        [MOperand::Def(d), MOperand::Use(s)] => (*d, *s),
                        _ => return Err(malformed(format!("{b} inst {i}: Copy needs Def, Use"))),
                    };
                    if mf.vregs[d] != mf.vregs[s] {
                        return Err(malformed(format!(
                            "{b} inst {i}: Copy between different classes or widths"
                        )));
                    }
                }
                MOpcode::ImplicitDef | MOpcode::LiveIn(_) => {
                    if !matches!(inst.ops.as_slice(), [MOperand::Def(_)]) {
                        return Err(malformed(format!("{b} inst {i}: pseudo needs one Def")));
                    }
                }
                MOpcode::Build => {
                    let mut it = inst.ops.iter();
                    let d = match it.next() {
                        Some(MOperand::Def(d)) => mf.vregs[*d],
                        _ => {
                            return Err(malformed(format!("{b} inst {i}: Build needs a Def first")))
                        }
                    };
                    let mut width = 0u32;
                    for o in it {
                        match o {
                            MOperand::Use(u) if mf.vregs[*u].class == d.class => {
                                width += mf.vregs[*u].dwords as u32
                            }
                            // A constant dword of an SGPR tuple (`s_mov_b32` at the Build).
                            MOperand::Phys(crate::isa::Operand::Literal(_))
                                if d.class == RegClass::Sgpr =>
                            {
                                width += 1
                            }
                            _ => {
                                return Err(malformed(format!(
                                    "{b} inst {i}: Build parts must be uses of the tuple's class"
                                )))
                            }
                        }
                    }
                    if width != d.dwords as u32 {
                        return Err(malformed(format!(
                            "{b} inst {i}: Build parts cover {width} of {} dwords",
                            d.dwords
                        )));
                    }
                }
                MOpcode::Extract(k) => {
                    let (d, s) = match inst.ops.as_slice() {
                        [MOperand::Def(d), MOperand::Use(s)] => (mf.vregs[*d], mf.vregs[*s]),
                        _ => {
                            return Err(malformed(format!("{b} inst {i}: Extract needs Def, Use")))
                        }
                    };
                    if d.class != s.class || k as u32 + d.dwords as u32 > s.dwords as u32 {
                        return Err(malformed(format!(
                            "{b} inst {i}: Extract({k}) of {:?} from {:?}",
                            d, s
                        )));
                    }
                }
                MOpcode::Isa(_) => {}
            }
            if let MOpcode::LiveIn(a) = inst.opcode {
                let v = inst.defs().next().unwrap_or(VReg::new(0));
                let d = mf.vregs[v];
                let ok = match a {
                    crate::mir::AbiValue::KernargPtr => d.class == RegClass::Sgpr && d.dwords == 2,
                    crate::mir::AbiValue::KernargPreload => {
                        d.class == RegClass::Sgpr && d.dwords >= 2
                    }
                    crate::mir::AbiValue::WorkgroupId(k) => {
                        k < 3 && d.class == RegClass::Sgpr && d.dwords == 1
                    }
                    crate::mir::AbiValue::WorkitemId(k) => {
                        k < 3 && d.class == RegClass::Vgpr && d.dwords == 1
                    }
                };
                if !ok {
                    return Err(malformed(format!("{b} inst {i}: {a:?} into {v} of {d:?}")));
                }
            }
            if let Some((d, u)) = inst.tied {
                let (dv, uv) = match (inst.ops.get(d as usize), inst.ops.get(u as usize)) {
                    (Some(MOperand::Def(dv)), Some(MOperand::Use(uv))) => (*dv, *uv),
                    _ => {
                        return Err(malformed(format!(
                            "{b} inst {i}: tied ({d}, {u}) does not name a Def and a Use"
                        )))
                    }
                };
                if mf.vregs[dv] != mf.vregs[uv] {
                    return Err(malformed(format!(
                        "{b} inst {i}: tied {dv} and {uv} differ in class or width"
                    )));
                }
            }
        }
        for (s, args) in bd.term.successors() {
            if s.index() >= mf.blocks.len() {
                return Err(malformed(format!("{b}: branch to unknown {s}")));
            }
            let params = &mf.blocks[s].params;
            if params.len() != args.len() {
                return Err(malformed(format!(
                    "{b}: {} arguments for the {} parameters of {s}",
                    args.len(),
                    params.len()
                )));
            }
            for (a, p) in args.iter().zip(params) {
                if a.index() >= nv || mf.vregs[*a] != mf.vregs[*p] {
                    return Err(malformed(format!("{b}: argument {a} does not match {p}")));
                }
            }
            if s.index() == 0 {
                return Err(RegallocError::Unsupported(
                    "a branch to the entry block".into(),
                ));
            }
        }
    }
    Ok(())
}

fn preds_of(mf: &MachineFunction) -> Vec<Vec<MBlock>> {
    let mut preds = vec![Vec::new(); mf.blocks.len()];
    for (b, bd) in mf.blocks.iter() {
        for (s, _) in bd.term.successors() {
            preds[s.index()].push(b);
        }
    }
    preds
}

/// Splits critical edges, inserts the copies tuple vregs need and numbers instructions.
pub fn prepare(input: &MachineFunction) -> Prepared {
    let mut mf = input.clone();
    let original_blocks = mf.blocks.len();
    let mut mandatory = Vec::new();

    // 1. Critical edges (a block with two successor edges to a block with several predecessor
    // edges). Both edges of `Branch` to the same block count separately.
    let preds = preds_of(&mf);
    for bi in 0..original_blocks {
        let b = MBlock::new(bi);
        // Only conditional branches can have critical edges; the others keep their terminator.
        if !matches!(mf.blocks[b].term, Terminator::Branch { .. })
            || mf.blocks[b]
                .term
                .successors()
                .iter()
                .all(|(s, _)| preds[s.index()].len() < 2)
        {
            continue;
        }
        let writes = mf.blocks[b].insts.iter().any(writes_exec);
        let term = mf.blocks[b].term.clone();
        if let Terminator::Branch {
            cond,
            taken,
            taken_args,
            not_taken,
            not_taken_args,
        } = term
        {
            let split =
                |mf: &mut MachineFunction, s: MBlock, args: Vec<VReg>| -> (MBlock, Vec<VReg>) {
                    if preds[s.index()].len() < 2 {
                        return (s, args);
                    }
                    let n = mf.block();
                    let exec_partial =
                        mf.blocks[b].exec_partial || mf.blocks[s].exec_partial || writes;
                    let loop_depth = mf.blocks[b].loop_depth.min(mf.blocks[s].loop_depth);
                    mf.blocks[n] = MBlockData {
                        params: Vec::new(),
                        insts: Vec::new(),
                        term: Terminator::Jump { target: s, args },
                        exec_partial,
                        loop_depth,
                    };
                    (n, Vec::new())
                };
            let (t, ta) = split(&mut mf, taken, taken_args);
            let (nt, nta) = split(&mut mf, not_taken, not_taken_args);
            mf.blocks[b].term = Terminator::Branch {
                cond,
                taken: t,
                taken_args: ta,
                not_taken: nt,
                not_taken_args: nta,
            };
        }
    }

    // 2. Tuple phis: a fresh copy of each argument at the end of the predecessor, merged with
    // the parameter (no interference: after splitting, the parameter is never live there).
    let nblocks = mf.blocks.len();
    for bi in 0..nblocks {
        let b = MBlock::new(bi);
        // Most branches pass no tuple: leave those terminators alone (no clone).
        let passes_tuple = mf.blocks[b].term.successors().iter().any(|(s, args)| {
            (0..args.len()).any(|k| {
                let d = mf.vregs[mf.blocks[*s].params[k]];
                kind_of(d.class, d.dwords) == Kind::Web
            })
        });
        if !passes_tuple {
            continue;
        }
        let mut term = mf.blocks[b].term.clone();
        let mut copies = Vec::new();
        {
            let mut fix = |s: MBlock, args: &mut Vec<VReg>| {
                for (k, a) in args.iter_mut().enumerate() {
                    let p = mf.blocks[s].params[k];
                    let d = mf.vregs[p];
                    if kind_of(d.class, d.dwords) == Kind::Web {
                        let t = mf.vregs.push(d);
                        copies.push(MInst::pseudo(
                            MOpcode::Copy,
                            &[MOperand::Def(t), MOperand::Use(*a)],
                        ));
                        mandatory.push((p, t));
                        *a = t;
                    }
                }
            };
            match &mut term {
                Terminator::Jump { target, args } => fix(*target, args),
                Terminator::Branch {
                    taken,
                    taken_args,
                    not_taken,
                    not_taken_args,
                    ..
                } => {
                    fix(*taken, taken_args);
                    fix(*not_taken, not_taken_args);
                }
                Terminator::Return => {}
            }
        }
        mf.blocks[b].insts.extend(copies);
        mf.blocks[b].term = term;
    }

    // 3. Tied tuple uses: copy the use first, so the tie never forces two live values into
    // one range; the copy is coalesced away when the use dies at the tie.
    for bi in 0..nblocks {
        let b = MBlock::new(bi);
        if mf.blocks[b].insts.iter().all(|i| i.tied.is_none()) {
            continue;
        }
        let insts = std::mem::take(&mut mf.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            if let Some((d, u)) = inst.tied {
                if let (MOperand::Def(dv), MOperand::Use(uv)) =
                    (inst.ops[d as usize], inst.ops[u as usize])
                {
                    let data = mf.vregs[uv];
                    let web = kind_of(data.class, data.dwords) == Kind::Web;
                    // A tied use whose vreg the instruction also reads elsewhere gets its own
                    // copy: the reused register is overwritten while the other operand still
                    // names the value (regalloc2 does not model that case).
                    let shared = inst
                        .ops
                        .iter()
                        .enumerate()
                        .any(|(k, o)| k != u as usize && *o == MOperand::Use(uv));
                    if web || shared {
                        let t = mf.vregs.push(data);
                        out.push(MInst::pseudo(
                            MOpcode::Copy,
                            &[MOperand::Def(t), MOperand::Use(uv)],
                        ));
                        inst.ops[u as usize] = MOperand::Use(t);
                        if web {
                            mandatory.push((dv, t));
                        }
                    }
                }
            }
            out.push(inst);
        }
        mf.blocks[b].insts = out;
    }

    // 4. Reverse postorder; unreachable blocks last, in layout order.
    let mut order: Vec<usize> = Vec::with_capacity(nblocks);
    {
        let mut seen = vec![false; nblocks];
        let mut post = Vec::with_capacity(nblocks);
        let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
        seen[0] = true;
        while let Some(&mut (b, ref mut k)) = stack.last_mut() {
            let succs = mf.blocks[MBlock::new(b)].term.successors();
            if let Some((s, _)) = succs.get(*k) {
                *k += 1;
                let s = s.index();
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(b);
                stack.pop();
            }
        }
        order.extend(post.into_iter().rev());
        order.extend((0..nblocks).filter(|&b| !seen[b]));
    }
    let mut new_of = vec![0usize; nblocks];
    for (n, &o) in order.iter().enumerate() {
        new_of[o] = n;
    }
    let remap = |b: MBlock| MBlock::new(new_of[b.index()]);
    let mut blocks = cranelift_entity::PrimaryMap::with_capacity(nblocks);
    // Move the blocks into the new order instead of cloning them.
    let mut old: Vec<Option<MBlockData>> = std::mem::take(&mut mf.blocks)
        .into_iter()
        .map(|(_, bd)| Some(bd))
        .collect();
    for &o in &order {
        let Some(mut bd) = old[o].take() else {
            continue;
        };
        bd.term = match bd.term {
            Terminator::Jump { target, args } => Terminator::Jump {
                target: remap(target),
                args,
            },
            Terminator::Branch {
                cond,
                taken,
                taken_args,
                not_taken,
                not_taken_args,
            } => Terminator::Branch {
                cond,
                taken: remap(taken),
                taken_args,
                not_taken: remap(not_taken),
                not_taken_args,
            },
            Terminator::Return => Terminator::Return,
        };
        blocks.push(bd);
    }
    mf.blocks = blocks;
    let orig_of: Vec<MBlock> = order.iter().map(|&o| MBlock::new(o)).collect();

    // 5. Numbering and EXEC state.
    let mut first_inst = Vec::with_capacity(nblocks);
    let mut partial_before = Vec::new();
    let mut partial_after = Vec::new();
    let mut n = 0u32;
    for (_, bd) in mf.blocks.iter() {
        first_inst.push(n);
        let mut partial = bd.exec_partial;
        for inst in &bd.insts {
            partial_before.push(partial);
            partial |= writes_exec(inst);
            partial_after.push(partial);
        }
        partial_before.push(partial);
        partial_after.push(partial);
        n += bd.insts.len() as u32 + 1;
    }
    let preds = preds_of(&mf);
    Prepared {
        mf,
        orig_of,
        mandatory,
        first_inst,
        num_insts: n,
        preds,
        partial_before,
        partial_after,
    }
}

/// A dense bit set over vreg indices.
#[derive(Clone, PartialEq, Eq)]
pub struct BitSet(Vec<u64>);

impl BitSet {
    /// Empty set for `n` elements.
    pub fn new(n: usize) -> BitSet {
        BitSet(vec![0; n.div_ceil(64)])
    }
    /// Adds `i`.
    pub fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    /// Removes `i`.
    pub fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
    /// Whether `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 != 0
    }
    /// `self &= other`.
    pub fn intersect_with(&mut self, other: &BitSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= *b;
        }
    }
    /// `self |= other`; whether anything changed.
    pub fn union_with(&mut self, other: &BitSet) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            let n = *a | *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
    /// Elements, ascending. Walks set bits only (`trailing_zeros`), not all 64 of each word:
    /// liveness sets are sparse and iterated per block and per instruction.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut rest = bits;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + b)
            })
        })
    }
    /// Empties the set, keeping its size.
    pub fn clear(&mut self) {
        self.0.fill(0);
    }
    /// Adds `i`; whether it was absent.
    pub fn insert_new(&mut self, i: usize) -> bool {
        let (w, m) = (i / 64, 1u64 << (i % 64));
        let new = self.0[w] & m == 0;
        self.0[w] |= m;
        new
    }
    /// Removes `i`; whether it was present.
    pub fn remove_old(&mut self, i: usize) -> bool {
        let (w, m) = (i / 64, 1u64 << (i % 64));
        let old = self.0[w] & m != 0;
        self.0[w] &= !m;
        old
    }
}

/// Block-level liveness of every vreg (block parameters are defined at the block start,
/// branch arguments used at the end of the predecessor).
pub struct Liveness {
    /// Live on entry (parameters excluded).
    pub live_in: Vec<BitSet>,
    /// Live on exit (arguments passed by the terminator excluded).
    pub live_out: Vec<BitSet>,
}

/// Computes [`Liveness`] by backward iteration to a fixed point.
pub fn liveness(mf: &MachineFunction) -> Liveness {
    let nv = mf.vregs.len();
    let nb = mf.blocks.len();
    let mut gen = vec![BitSet::new(nv); nb];
    let mut kill = vec![BitSet::new(nv); nb];
    for (b, bd) in mf.blocks.iter() {
        let (g, k) = (&mut gen[b.index()], &mut kill[b.index()]);
        for &p in &bd.params {
            k.insert(p.index());
        }
        for inst in &bd.insts {
            for u in inst.uses() {
                if !k.contains(u.index()) {
                    g.insert(u.index());
                }
            }
            for d in inst.defs() {
                k.insert(d.index());
            }
        }
        for (_, args) in bd.term.successors() {
            for a in args {
                if !k.contains(a.index()) {
                    g.insert(a.index());
                }
            }
        }
    }
    let mut live_in = gen.clone();
    let mut live_out = vec![BitSet::new(nv); nb];
    // Scratch sets reused across iterations (no allocation per block and round).
    let mut out = BitSet::new(nv);
    let mut inn = BitSet::new(nv);
    let mut changed = true;
    while changed {
        changed = false;
        for bi in (0..nb).rev() {
            let b = MBlock::new(bi);
            out.clear();
            for (s, _) in mf.blocks[b].term.successors() {
                out.union_with(&live_in[s.index()]);
            }
            for (w, (o, (g, k))) in inn
                .0
                .iter_mut()
                .zip(out.0.iter().zip(gen[bi].0.iter().zip(&kill[bi].0)))
            {
                *w = (*o & !k) | g;
            }
            if inn != live_in[bi] {
                std::mem::swap(&mut live_in[bi], &mut inn);
                changed = true;
            }
            live_out[bi].clone_from(&out);
        }
    }
    Liveness { live_in, live_out }
}
