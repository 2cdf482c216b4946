//! SSA construction for isel's variables on the machine CFG (Braun, Buchwald, Hack, Leißa,
//! Mallon, Zwinkau: "Simple and Efficient Construction of Static Single Assignment Form", 2013):
//! the current definition of a variable per block, block parameters for joins, incomplete
//! parameters in blocks whose predecessors are not all filled yet, and removal of trivial
//! parameters at the end.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use cranelift_entity::EntityRef;

use super::Var;
use crate::mir::{MBlock, MOperand, MachineFunction, Terminator, VReg};

/// Definitions and sealing state.
#[derive(Default)]
pub(crate) struct SsaState {
    defs: HashMap<(MBlock, Var), VReg>,
    sealed: HashSet<MBlock>,
    incomplete: HashMap<MBlock, Vec<(Var, VReg)>>,
}

impl SsaState {
    pub(crate) fn write(&mut self, b: MBlock, var: Var, v: VReg) {
        self.defs.insert((b, var), v);
    }

    pub(crate) fn current(&self, b: MBlock, var: Var) -> Option<VReg> {
        self.defs.get(&(b, var)).copied()
    }

    pub(crate) fn is_sealed(&self, b: MBlock) -> bool {
        self.sealed.contains(&b)
    }

    pub(crate) fn add_incomplete(&mut self, b: MBlock, var: Var, p: VReg) {
        self.incomplete.entry(b).or_default().push((var, p));
    }

    /// The incomplete parameters of `b` to complete now.
    pub(crate) fn begin_seal(&mut self, b: MBlock) -> Vec<(Var, VReg)> {
        self.take_incomplete(b)
    }

    pub(crate) fn take_incomplete(&mut self, b: MBlock) -> Vec<(Var, VReg)> {
        self.incomplete.remove(&b).unwrap_or_default()
    }

    pub(crate) fn finish_seal(&mut self, b: MBlock) {
        self.sealed.insert(b);
    }
}

/// The arguments `term` passes to `succ`.
fn args_to(term: &mut Terminator, succ: MBlock) -> Option<&mut Vec<VReg>> {
    match term {
        Terminator::Jump { target, args } if *target == succ => Some(args),
        Terminator::Branch {
            taken,
            taken_args,
            not_taken,
            not_taken_args,
            ..
        } => {
            if *taken == succ {
                Some(taken_args)
            } else if *not_taken == succ {
                Some(not_taken_args)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Removes block parameters whose incoming values are one value (or the parameter itself),
/// replacing their uses, until none is left.
pub(crate) fn remove_trivial_params(mf: &mut MachineFunction) {
    let n = mf.blocks.len();
    let mut preds: Vec<Vec<MBlock>> = vec![Vec::new(); n];
    for (b, d) in mf.blocks.iter() {
        for (s, _) in d.term.successors() {
            preds[s.index()].push(b);
        }
    }
    let mut subst: HashMap<VReg, VReg> = HashMap::default();
    fn resolve(s: &HashMap<VReg, VReg>, mut v: VReg) -> VReg {
        while let Some(&w) = s.get(&v) {
            v = w;
        }
        v
    }
    loop {
        let mut changed = false;
        for b in mf.blocks.keys().collect::<Vec<_>>() {
            let mut k = 0;
            while k < mf.blocks[b].params.len() {
                let p = mf.blocks[b].params[k];
                let mut same: Option<VReg> = None;
                let mut trivial = true;
                for &pb in &preds[b.index()] {
                    let term = &mut mf.blocks[pb].term;
                    let Some(args) = args_to(term, b) else {
                        continue;
                    };
                    let a = resolve(&subst, args[k]);
                    if a == p || Some(a) == same {
                        continue;
                    }
                    if same.is_some() {
                        trivial = false;
                        break;
                    }
                    same = Some(a);
                }
                match (trivial, same) {
                    (true, Some(x)) => {
                        subst.insert(p, x);
                        mf.blocks[b].params.remove(k);
                        for &pb in &preds[b.index()] {
                            if let Some(args) = args_to(&mut mf.blocks[pb].term, b) {
                                args.remove(k);
                            }
                        }
                        changed = true;
                    }
                    _ => k += 1,
                }
            }
        }
        if !changed {
            break;
        }
    }
    if subst.is_empty() {
        return;
    }
    for (_, d) in mf.blocks.iter_mut() {
        for i in &mut d.insts {
            for o in i.ops.iter_mut() {
                if let MOperand::Use(v) = o {
                    *v = resolve(&subst, *v);
                }
            }
        }
        match &mut d.term {
            Terminator::Jump { args, .. } => args.iter_mut().for_each(|a| *a = resolve(&subst, *a)),
            Terminator::Branch {
                taken_args,
                not_taken_args,
                ..
            } => {
                taken_args.iter_mut().for_each(|a| *a = resolve(&subst, *a));
                not_taken_args
                    .iter_mut()
                    .for_each(|a| *a = resolve(&subst, *a));
            }
            Terminator::Return => {}
        }
    }
}
