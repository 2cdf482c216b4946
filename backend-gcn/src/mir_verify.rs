//! The MIR printer and verifier, run after isel and scheduling in tests.
//!
//! The verifier checks what the later stages rely on: SSA (one definition per virtual register,
//! every use dominated by its definition, block arguments matching parameters), operands against
//! the opcode table (role, register class and width of each operand of the form used), tied
//! operands of one class and width, tuple pseudo-ops, and ABI live-ins only at the start of the
//! entry block.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use cranelift_entity::{EntityRef, SecondaryMap};

use crate::isa::{self, Kind};
use crate::mir::{MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass, Terminator, VReg};

/// What is wrong with a machine function: one line per problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MIR does not verify:\n{}", .0.join("\n"))]
pub struct MirVerifyError(pub Vec<String>);

fn class_letter(c: RegClass) -> char {
    match c {
        RegClass::Sgpr => 's',
        RegClass::Vgpr => 'v',
        RegClass::Agpr => 'a',
    }
}

fn opcode_text(i: &MInst) -> String {
    match i.opcode {
        MOpcode::Isa(op) => {
            let mut s = op.name().to_string();
            if i.encoding == isa::Encoding::E64 {
                s.push_str("_e64");
            }
            s
        }
        MOpcode::ImplicitDef => "implicit_def".into(),
        MOpcode::Copy => "copy".into(),
        MOpcode::LiveIn(a) => format!("live_in.{a:?}"),
        MOpcode::Build => "build".into(),
        MOpcode::Extract(k) => format!("extract.{k}"),
    }
}

/// Text of one instruction.
pub fn inst_text(mf: &MachineFunction, i: &MInst) -> String {
    let mut s = opcode_text(i);
    for (k, o) in i.ops.iter().enumerate() {
        s.push_str(if k == 0 { " " } else { ", " });
        match o {
            MOperand::Def(v) => {
                let d = mf.vregs[*v];
                let _ = write!(s, "{v}:{}{}", class_letter(d.class), d.dwords);
            }
            MOperand::Use(v) => {
                let _ = write!(s, "{v}");
            }
            MOperand::Phys(p) => {
                let _ = write!(s, "{p}");
            }
        }
    }
    let m = &i.mods;
    if m.offen {
        s.push_str(" offen");
    }
    if m.offset != 0 {
        let _ = write!(s, " offset:{}", m.offset);
    }
    if m.glc {
        s.push_str(" glc");
    }
    if m.neg != 0 {
        let _ = write!(s, " neg:{:#b}", m.neg);
    }
    if let Some((d, u)) = i.tied {
        let _ = write!(s, " tied({d},{u})");
    }
    s
}

/// The printed form of a machine function.
pub struct DisplayMir<'a>(pub &'a MachineFunction);

impl fmt::Display for DisplayMir<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mf = self.0;
        writeln!(f, "mir {} ({})", mf.abi.meta.name, mf.abi.target)?;
        let args = |a: &[VReg]| -> String {
            a.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (b, d) in mf.blocks.iter() {
            let params: Vec<String> = d
                .params
                .iter()
                .map(|v| {
                    let x = mf.vregs[*v];
                    format!("{v}:{}{}", class_letter(x.class), x.dwords)
                })
                .collect();
            write!(f, "{b}({})", params.join(", "))?;
            if d.exec_partial {
                write!(f, " partial")?;
            }
            if d.loop_depth > 0 {
                write!(f, " depth {}", d.loop_depth)?;
            }
            writeln!(f, ":")?;
            for i in &d.insts {
                writeln!(f, "    {}", inst_text(mf, i))?;
            }
            match &d.term {
                Terminator::Jump { target, args: a } => {
                    writeln!(f, "    jump {target}({})", args(a))?
                }
                Terminator::Branch {
                    cond,
                    taken,
                    taken_args,
                    not_taken,
                    not_taken_args,
                } => writeln!(
                    f,
                    "    {} {taken}({}), {not_taken}({})",
                    cond.opcode_name(),
                    args(taken_args),
                    args(not_taken_args)
                )?,
                Terminator::Return => writeln!(f, "    return")?,
            }
        }
        Ok(())
    }
}

/// Immediate dominators of the machine CFG (entry: itself), unreachable blocks `None`.
fn dominators(mf: &MachineFunction) -> SecondaryMap<MBlock, Option<MBlock>> {
    let n = mf.blocks.len();
    let mut preds: Vec<Vec<MBlock>> = vec![Vec::new(); n];
    for (b, d) in mf.blocks.iter() {
        for (s, _) in d.term.successors() {
            preds[s.index()].push(b);
        }
    }
    // Reverse post-order.
    let mut seen = vec![false; n];
    let mut post = Vec::new();
    let mut stack = vec![(mf.entry(), 0usize)];
    if n > 0 {
        seen[0] = true;
    }
    while let Some((b, k)) = stack.pop() {
        let succs = mf.blocks[b].term.successors();
        if k < succs.len() {
            stack.push((b, k + 1));
            let s = succs[k].0;
            if !seen[s.index()] {
                seen[s.index()] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
        }
    }
    post.reverse();
    let mut order = vec![usize::MAX; n];
    for (i, b) in post.iter().enumerate() {
        order[b.index()] = i;
    }
    let mut idom: SecondaryMap<MBlock, Option<MBlock>> = SecondaryMap::new();
    if n == 0 {
        return idom;
    }
    idom[mf.entry()] = Some(mf.entry());
    let mut changed = true;
    while changed {
        changed = false;
        for &b in post.iter().skip(1) {
            let mut new: Option<MBlock> = None;
            for &p in &preds[b.index()] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut x) => {
                        let mut y = p;
                        while x != y {
                            while order[x.index()] > order[y.index()] {
                                x = idom[x].unwrap_or(x);
                            }
                            while order[y.index()] > order[x.index()] {
                                y = idom[y].unwrap_or(y);
                            }
                        }
                        x
                    }
                });
            }
            if new != idom[b] {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

fn dominates(idom: &SecondaryMap<MBlock, Option<MBlock>>, a: MBlock, mut b: MBlock) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b] {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

fn kind_accepts(kind: Kind, class: RegClass) -> bool {
    match kind {
        Kind::VReg => class == RegClass::Vgpr,
        Kind::SReg | Kind::SSrc | Kind::SmemOffset => class == RegClass::Sgpr,
        Kind::AReg | Kind::ASrc => class == RegClass::Agpr,
        Kind::AvReg | Kind::AvSrc => class != RegClass::Sgpr,
        Kind::VSrc => class != RegClass::Agpr,
        _ => false,
    }
}

/// Checks `mf`; every problem found is reported.
pub fn verify(mf: &MachineFunction) -> Result<(), MirVerifyError> {
    let mut errs = Vec::new();
    let idom = dominators(mf);
    // Definitions: (block, position); params at position 0, instruction k at k + 1.
    let mut def_at: HashMap<VReg, (MBlock, usize)> = HashMap::new();
    let mut define = |v: VReg, at: (MBlock, usize), errs: &mut Vec<String>| {
        if v.index() >= mf.vregs.len() {
            errs.push(format!("{}: {v} does not exist", at.0));
        } else if def_at.insert(v, at).is_some() {
            errs.push(format!("{}: {v} is defined more than once", at.0));
        }
    };
    for (b, d) in mf.blocks.iter() {
        for &p in &d.params {
            define(p, (b, 0), &mut errs);
        }
        for (k, i) in d.insts.iter().enumerate() {
            for v in i.defs() {
                define(v, (b, k + 1), &mut errs);
            }
        }
    }
    let check_use =
        |v: VReg, at: (MBlock, usize), what: &str, errs: &mut Vec<String>| match def_at.get(&v) {
            None => errs.push(format!("{}: {what}: {v} is never defined", at.0)),
            Some(&(db, dk)) => {
                let ok = if db == at.0 {
                    dk < at.1
                } else {
                    idom[at.0].is_none() || dominates(&idom, db, at.0)
                };
                if !ok {
                    errs.push(format!(
                        "{}: {what}: use of {v} not dominated by its definition in {db}",
                        at.0
                    ));
                }
            }
        };
    for (b, d) in mf.blocks.iter() {
        for (k, i) in d.insts.iter().enumerate() {
            let at = (b, k + 1);
            let text = || inst_text(mf, i);
            for v in i.uses() {
                check_use(v, at, &text(), &mut errs);
            }
            let w = |v: VReg| mf.vregs.get(v).map(|x| (x.class, x.dwords));
            match i.opcode {
                MOpcode::LiveIn(_) => {
                    if b != mf.entry()
                        || d.insts[..k]
                            .iter()
                            .any(|x| !matches!(x.opcode, MOpcode::LiveIn(_)))
                    {
                        errs.push(format!(
                            "{b}: {}: live-in not at the start of the entry block",
                            text()
                        ));
                    }
                }
                MOpcode::Copy => {
                    let (dd, uu) = (i.defs().next(), i.uses().next());
                    if dd.and_then(w) != uu.and_then(w) || dd.is_none() {
                        errs.push(format!(
                            "{b}: {}: copy between different classes or widths",
                            text()
                        ));
                    }
                }
                MOpcode::Build => {
                    let Some(dst) = i.defs().next() else {
                        errs.push(format!("{b}: {}: build without a destination", text()));
                        continue;
                    };
                    let (c, n) = w(dst).unwrap_or((RegClass::Sgpr, 0));
                    let mut sum = 0u32;
                    for u in i.uses() {
                        match w(u) {
                            Some((uc, un)) if uc == c => sum += un as u32,
                            _ => errs.push(format!("{b}: {}: part {u} of another class", text())),
                        }
                    }
                    // Constant dwords of an SGPR tuple.
                    if c == RegClass::Sgpr {
                        sum += i
                            .ops
                            .iter()
                            .filter(|o| {
                                matches!(o, MOperand::Phys(crate::isa::Operand::Literal(_)))
                            })
                            .count() as u32;
                    }
                    if sum != n as u32 {
                        errs.push(format!("{b}: {}: parts cover {sum} of {n} dwords", text()));
                    }
                }
                MOpcode::Extract(kk) => {
                    let (dd, uu) = (i.defs().next(), i.uses().next());
                    match (dd.and_then(w), uu.and_then(w)) {
                        (Some((dc, dn)), Some((uc, un)))
                            if dc == uc && kk as u32 + dn as u32 <= un as u32 => {}
                        _ => errs.push(format!(
                            "{b}: {}: extract out of the tuple or class",
                            text()
                        )),
                    }
                }
                MOpcode::ImplicitDef => {}
                MOpcode::Isa(op) => {
                    let forms = isa::operand_infos(op, i.encoding, i.mods.glc);
                    if i.ops.len() < forms.len() {
                        errs.push(format!(
                            "{b}: {}: {} operands, the form has {}",
                            text(),
                            i.ops.len(),
                            forms.len()
                        ));
                        continue;
                    }
                    for (f, o) in forms.iter().zip(&i.ops) {
                        match o {
                            MOperand::Def(v) | MOperand::Use(v) => {
                                let is_def = matches!(o, MOperand::Def(_));
                                if is_def && !f.access.writes() || !is_def && !f.access.reads() {
                                    errs.push(format!(
                                        "{b}: {}: {v} in a {:?} slot of access {:?}",
                                        text(),
                                        f.slot,
                                        f.access
                                    ));
                                }
                                if let Some((c, n)) = w(*v) {
                                    if !kind_accepts(f.kind, c) {
                                        errs.push(format!(
                                            "{b}: {}: {v} ({c:?}) where {:?} is needed",
                                            text(),
                                            f.kind
                                        ));
                                    }
                                    if f.dwords > 0 && n != f.dwords {
                                        errs.push(format!(
                                            "{b}: {}: {v} has {n} dwords, the operand {}",
                                            text(),
                                            f.dwords
                                        ));
                                    }
                                }
                            }
                            MOperand::Phys(_) => {}
                        }
                    }
                    for o in &i.ops[forms.len()..] {
                        if !matches!(o, MOperand::Use(_)) {
                            errs.push(format!(
                                "{b}: {}: extra operand {o:?} is not a tied use",
                                text()
                            ));
                        }
                    }
                    if i.ops.len() > forms.len() && i.tied.is_none() {
                        errs.push(format!("{b}: {}: extra operands without a tie", text()));
                    }
                }
            }
            if let Some((dk, uk)) = i.tied {
                match (i.ops.get(dk as usize), i.ops.get(uk as usize)) {
                    (Some(MOperand::Def(dv)), Some(MOperand::Use(uv))) => {
                        if w(*dv) != w(*uv) {
                            errs.push(format!(
                                "{b}: {}: tied operands differ in class or width",
                                text()
                            ));
                        }
                    }
                    _ => errs.push(format!(
                        "{b}: {}: tie ({dk},{uk}) is not a def and a use",
                        text()
                    )),
                }
            }
        }
        let end = (b, d.insts.len() + 1);
        for (s, args) in d.term.successors() {
            let Some(sd) = mf.blocks.get(s) else {
                errs.push(format!("{b}: branch to missing {s}"));
                continue;
            };
            if args.len() != sd.params.len() {
                errs.push(format!(
                    "{b}: {} arguments to {s}, which has {} parameters",
                    args.len(),
                    sd.params.len()
                ));
            }
            for (a, p) in args.iter().zip(&sd.params) {
                check_use(*a, end, &format!("argument to {s}"), &mut errs);
                if mf.vregs.get(*a) != mf.vregs.get(*p) {
                    errs.push(format!(
                        "{b}: argument {a} to {s} differs from parameter {p} in class or width"
                    ));
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(MirVerifyError(errs))
    }
}
