//! The verifier: checks that a [`Function`] is well formed, after the builder and after every
//! pass (in tests).
//!
//! Checks: the signature matches the entry block; every block in the layout ends in exactly one
//! terminator; branch targets are in the layout, are not the entry block, and get one argument of
//! the right type per parameter; every instruction is well typed ([`InstData::result_types`]);
//! every use is dominated by its definition (SSA); buffer operands are kernel parameters; the
//! LDS total fits in 64 KiB; every block is reachable; barriers sit in uniform control flow.

use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef, MAX_LDS_BYTES};
use crate::instructions::{InstData, Mem};
use crate::types::Type;
use crate::uniformity::Uniformity;
use cranelift_entity::SecondaryMap;
use std::collections::HashSet;
use std::fmt;

/// Where a verifier error was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The function as a whole.
    Function,
    /// A block (its parameters or its place in the graph).
    Block(Block),
    /// An instruction.
    Inst(Inst),
}

/// One problem found by the verifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    /// Where.
    pub location: Location,
    /// What.
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Location::Function => write!(f, "{}", self.message),
            Location::Block(b) => write!(f, "{b}: {}", self.message),
            Location::Inst(i) => write!(f, "{i}: {}", self.message),
        }
    }
}

/// All problems found, in layout order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct VerifierErrors(pub Vec<VerifierError>);

impl fmt::Display for VerifierErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Verifies `func`; `Ok` when it is well formed.
pub fn verify(func: &Function) -> Result<(), VerifierErrors> {
    verify_inner(func, false).map(drop)
}

/// Verifies `func` as [`verify`] does and gives its [`Uniformity`], which the verifier's
/// barrier rule computes anyway (instruction selection needs both).
pub fn verify_with_uniformity(func: &Function) -> Result<Uniformity, VerifierErrors> {
    verify_inner(func, true).map(|u| u.expect("asked for"))
}

/// [`verify`]; the uniformity too when `want_uniformity` (otherwise it is computed only for
/// the rule that needs it, when the function has a barrier or a matrix instruction).
fn verify_inner(
    func: &Function,
    want_uniformity: bool,
) -> Result<Option<Uniformity>, VerifierErrors> {
    let mut errs = Vec::new();
    macro_rules! err {
        ($loc:expr, $msg:expr $(,)?) => {
            errs.push(VerifierError {
                location: $loc,
                message: $msg,
            })
        };
    }

    let Some(entry) = func.entry() else {
        err!(
            Location::Function,
            format!("kernel {} has no blocks", func.name)
        );
        return Err(VerifierErrors(errs));
    };
    // Signature.
    let eparams = &func.blocks[entry].params;
    if eparams.len() != func.params.len() {
        err!(
            Location::Block(entry),
            format!(
                "entry block has {} parameters; the kernel has {}",
                eparams.len(),
                func.params.len()
            ),
        );
    }
    let mut names = HashSet::new();
    for (p, v) in func.params.iter().zip(eparams) {
        if func.values[*v].ty != p.ty {
            err!(
                Location::Block(entry),
                format!(
                    "parameter {} is {}, but {v} is {}",
                    p.name, p.ty, func.values[*v].ty
                )
            );
        }
        if !names.insert(p.name.as_str()) {
            err!(
                Location::Function,
                format!("parameter name {} is used twice", p.name)
            );
        }
    }
    if let Some(size) = func.workgroup_size {
        let items: u64 = size.iter().map(|&x| x as u64).product();
        if items == 0 || items > crate::interp::MAX_WORKGROUP_SIZE as u64 {
            err!(
                Location::Function,
                format!(
                    "declared workgroup size {size:?} = {items} work-items; 1..={} allowed",
                    crate::interp::MAX_WORKGROUP_SIZE
                )
            );
        }
    }
    let mut lds_names = HashSet::new();
    for d in func.lds.values() {
        if d.dynamic && d.len != 0 {
            err!(
                Location::Function,
                format!("dynamic LDS array {} has a static length", d.name)
            );
        }
        if !d.dynamic && d.len == 0 {
            err!(
                Location::Function,
                format!("LDS array {} has no elements", d.name)
            );
        }
        if !lds_names.insert(d.name.as_str()) {
            err!(
                Location::Function,
                format!("LDS array name {} is used twice", d.name)
            );
        }
    }
    let dynamic: Vec<&str> = func
        .lds
        .values()
        .filter(|d| d.dynamic)
        .map(|d| d.name.as_str())
        .collect();
    if dynamic.len() > 1 {
        err!(
            Location::Function,
            format!(
                "{} dynamic LDS arrays ({}); at most one is allowed",
                dynamic.len(),
                dynamic.join(", ")
            )
        );
    }
    if func.lds_bytes() > MAX_LDS_BYTES {
        err!(
            Location::Function,
            format!(
                "LDS arrays take {} bytes; at most {MAX_LDS_BYTES} fit",
                func.lds_bytes()
            )
        );
    }

    // Layout and per-value definitions.
    // Sized once (writing past the end grows a map one entry at a time).
    let mut in_layout: SecondaryMap<Block, bool> = SecondaryMap::new();
    in_layout.resize(func.blocks.len());
    let mut inst_seen: SecondaryMap<Inst, bool> = SecondaryMap::new();
    inst_seen.resize(func.insts.len());
    let mut inst_pos: SecondaryMap<Inst, (Option<Block>, u32)> = SecondaryMap::new();
    inst_pos.resize(func.insts.len());
    for &b in &func.layout {
        if in_layout[b] {
            err!(Location::Block(b), "is in the layout twice".into());
        }
        in_layout[b] = true;
        for (n, &p) in func.blocks[b].params.iter().enumerate() {
            if func.values[p].def != ValueDef::Param(b, n as u16) {
                err!(
                    Location::Block(b),
                    format!("parameter {p} does not point back to its block")
                );
            }
            if b != entry && matches!(func.values[p].ty, Type::Buffer { .. }) {
                err!(
                    Location::Block(b),
                    format!("parameter {p} is a buffer; buffers are kernel parameters only")
                );
            }
        }
        for (n, &i) in func.blocks[b].insts.iter().enumerate() {
            if inst_seen[i] {
                err!(Location::Inst(i), "appears twice".into());
            }
            inst_seen[i] = true;
            inst_pos[i] = (Some(b), n as u32);
        }
    }
    for &b in &func.layout {
        let insts = &func.blocks[b].insts;
        match insts.last() {
            None => err!(
                Location::Block(b),
                "is empty; a block needs a terminator".into()
            ),
            Some(&last) if !func.insts[last].is_terminator() => {
                err!(Location::Block(b), "does not end in a terminator".into())
            }
            _ => {}
        }
        for &i in insts.iter().take(insts.len().saturating_sub(1)) {
            if func.insts[i].is_terminator() {
                err!(
                    Location::Inst(i),
                    "a terminator in the middle of a block".into()
                );
            }
        }
    }
    if !errs.is_empty() {
        return Err(VerifierErrors(errs));
    }

    let cfg = ControlFlowGraph::new(func);
    let dt = DominatorTree::new(func, &cfg);
    let mut reachable: SecondaryMap<Block, bool> = SecondaryMap::new();
    reachable.resize(func.blocks.len());
    for &b in &cfg.rpo {
        reachable[b] = true;
    }
    for &b in &func.layout {
        if !reachable[b] {
            err!(Location::Block(b), "is unreachable".into());
        }
    }
    // Where a value is defined: (block, position); block params sit before position 0.
    let def_pos = |v: Value| -> Option<(Block, i64)> {
        match func.values.get(v)?.def {
            ValueDef::Param(b, _) => in_layout[b].then_some((b, -1)),
            ValueDef::Result(i, _) => match inst_pos[i] {
                (Some(b), n) => Some((b, n as i64)),
                _ => None,
            },
            ValueDef::Detached => None,
        }
    };
    for &b in &func.layout {
        for (n, &i) in func.blocks[b].insts.iter().enumerate() {
            let data = &func.insts[i];
            // Types and result bookkeeping.
            match data.result_types(func) {
                Err(m) => err!(Location::Inst(i), m),
                Ok(tys) => {
                    let res = &func.results[i];
                    if res.len() != tys.len() {
                        err!(
                            Location::Inst(i),
                            format!("has {} results; {} expected", res.len(), tys.len())
                        );
                    }
                    for (k, (r, t)) in res.iter().zip(tys.iter()).enumerate() {
                        let vd = func.values[*r];
                        if vd.ty != *t {
                            err!(
                                Location::Inst(i),
                                format!("result {r} is {}; the operation gives {t}", vd.ty)
                            );
                        }
                        if vd.def != ValueDef::Result(i, k as u16) {
                            err!(
                                Location::Inst(i),
                                format!("result {r} does not point back to it")
                            );
                        }
                    }
                }
            }
            // SSA dominance.
            data.for_each_arg(|a| match def_pos(a) {
                None => err!(
                    Location::Inst(i),
                    format!("uses {a}, which is not defined in the layout")
                ),
                Some((db, dn)) => {
                    let ok = if db == b {
                        dn < n as i64
                    } else {
                        dt.dominates(db, b)
                    };
                    if !ok {
                        err!(
                            Location::Inst(i),
                            format!("uses {a}, whose definition does not dominate it")
                        );
                    }
                }
            });
            // Buffers come from the kernel's parameters.
            let mem = match data {
                InstData::Load { mem, .. }
                | InstData::Store { mem, .. }
                | InstData::Atomic { mem, .. } => Some(*mem),
                _ => None,
            };
            let buf = match (mem, data) {
                (Some(Mem::Global(v)), _) => Some(v),
                (_, InstData::BufferLen { buf }) => Some(*buf),
                _ => None,
            };
            if let Some(v) = buf {
                if func.param_index(v).is_none() {
                    err!(
                        Location::Inst(i),
                        format!("buffer operand {v} is not a kernel parameter")
                    );
                }
            }
            if let Some(Mem::Lds(a)) = mem {
                if func.lds.get(a).is_none() {
                    err!(Location::Inst(i), format!("{a} is not declared"));
                }
            }
            // Branch targets.
            for call in data.branch_targets() {
                let t = call.block;
                if func.blocks.get(t).is_none() || !in_layout[t] {
                    err!(
                        Location::Inst(i),
                        format!("branches to {t}, which is not in the layout")
                    );
                    continue;
                }
                if t == entry {
                    err!(Location::Inst(i), "branches to the entry block".into());
                }
                let params = &func.blocks[t].params;
                if params.len() != call.args.len() {
                    err!(
                        Location::Inst(i),
                        format!(
                            "passes {} arguments to {t}, which takes {}",
                            call.args.len(),
                            params.len()
                        ),
                    );
                    continue;
                }
                for (a, p) in call.args.iter().zip(params) {
                    let (ta, tp) = (func.values.get(*a).map(|d| d.ty), func.values[*p].ty);
                    if ta != Some(tp) {
                        err!(
                            Location::Inst(i),
                            format!(
                                "argument {a} for {t}'s parameter {p} ({tp}) has the wrong type"
                            )
                        );
                    }
                    if ta.is_some_and(|t: Type| matches!(t, Type::Buffer { .. })) {
                        err!(Location::Inst(i), format!("argument {a} is a buffer"));
                    }
                }
            }
        }
    }
    let mut uniformity = None;
    let needs_whole_wave =
        |i: &Inst| matches!(func.insts[*i], InstData::Barrier | InstData::Mfma { .. });
    let checked = want_uniformity
        || func
            .layout
            .iter()
            .any(|&b| func.blocks[b].insts.iter().any(needs_whole_wave));
    if errs.is_empty() && checked {
        // Uniformity rule: a barrier must be reached by every lane of every wave together.
        let u = uniformity.insert(Uniformity::with_cfg(func, &cfg));
        for &b in &func.layout {
            for &i in &func.blocks[b].insts {
                if matches!(func.insts[i], InstData::Barrier) && u.in_divergent_region(b) {
                    err!(
                        Location::Inst(i),
                        "barrier inside divergent control flow".into()
                    );
                }
                if let InstData::Mfma { op, .. } = func.insts[i] {
                    if u.in_divergent_region(b) {
                        err!(
                            Location::Inst(i),
                            format!(
                                "mfma.{op} inside divergent control flow (it needs the whole wave)"
                            )
                        );
                    }
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(uniformity)
    } else {
        Err(VerifierErrors(errs))
    }
}
