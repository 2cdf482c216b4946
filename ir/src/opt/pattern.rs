//! Left- and right-hand sides of the rewrite rules, matched and instantiated without egg's
//! general pattern machine.
//!
//! Every left-hand side of the rule set is an operation whose operands are pattern variables,
//! except at most one operand that is itself an operation over variables:
//! `(add ?a ?b)`, `(sub ?a ?a)`, `(add (shl ?a ?b) ?c)`. For those shapes egg compiles a
//! program (bind the root, compare repeated variables, bind the inner operation) and runs it
//! in a fresh virtual machine per e-class, allocating registers and match vectors each time;
//! on the small e-graphs of kernel blocks that set-up was most of the search. [`Lhs`] walks the
//! same nodes in the same order (classes in `classes_for_op` order, nodes in class order, the
//! inner operation's nodes in class order, limits counted the same way), so it finds the same
//! matches in the same order and the rewriting is unchanged. [`Rhs`] instantiates a right-hand
//! side as egg's `Pattern` applier (unconditional) or `ConditionalApplier` (conditional) did,
//! including which of the two classes is passed first to `union`.

use super::lang::{KGraph, KernelAnalysis, Node};
use egg::{
    Applier, ENodeOrVar, Id, Language, PatternAst, SearchMatches, Searcher, Subst, Symbol, Var,
};
use std::borrow::Cow;

/// What an operand position of a left-hand side holds.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// The first occurrence of variable `k` (binds it).
    Bind(usize),
    /// A repeated occurrence of variable `k` (must be the same class).
    Same(usize),
    /// The inner operation.
    Inner,
}

/// A left-hand side `(op s0 s1 ..)` whose operands are variables and at most one inner
/// operation over variables.
pub struct Lhs {
    ast: PatternAst<Node>,
    root: Node,
    root_slots: Vec<Slot>,
    inner: Option<(Node, Vec<Slot>)>,
    /// Variables in binding order (egg's substitution order for these shapes).
    vars: Vec<Var>,
}

/// A condition of a conditional rule (as egg's `ConditionalApplier` takes it).
pub type Cond = Box<dyn Fn(&mut KGraph, Id, &Subst) -> bool + Send + Sync>;

impl Lhs {
    /// Parses a left-hand side; `None` if it is not of the supported shape.
    pub fn new(ast: PatternAst<Node>) -> Option<Lhs> {
        let nodes = ast.as_ref();
        let ENodeOrVar::ENode(root) = nodes.last()? else {
            return None;
        };
        let mut vars: Vec<Var> = Vec::new();
        let slot_of = |vars: &mut Vec<Var>, v: Var| match vars.iter().position(|w| *w == v) {
            Some(k) => Slot::Same(k),
            None => {
                vars.push(v);
                Slot::Bind(vars.len() - 1)
            }
        };
        let mut root_slots = Vec::new();
        let mut inner_at = None;
        for &c in root.children() {
            match &nodes[usize::from(c)] {
                ENodeOrVar::Var(v) => root_slots.push(slot_of(&mut vars, *v)),
                ENodeOrVar::ENode(n) => {
                    if inner_at.is_some() {
                        return None;
                    }
                    inner_at = Some(n.clone());
                    root_slots.push(Slot::Inner);
                }
            }
        }
        let inner = match inner_at {
            None => None,
            Some(n) => {
                let mut slots = Vec::new();
                for &c in n.children() {
                    match &nodes[usize::from(c)] {
                        ENodeOrVar::Var(v) => slots.push(slot_of(&mut vars, *v)),
                        ENodeOrVar::ENode(_) => return None,
                    }
                }
                // A ground inner operation (all its variables bound by the root) would be
                // compiled by egg as a lookup, not a bind: not supported here.
                if !slots.iter().any(|s| matches!(s, Slot::Bind(_))) {
                    return None;
                }
                Some((n, slots))
            }
        };
        if vars.len() > 6 {
            return None;
        }
        Some(Lhs {
            root: root.clone(),
            ast,
            root_slots,
            inner,
            vars,
        })
    }

    /// Matches in class `eclass`, at most `limit`, appended to `out`.
    fn search_class(&self, g: &KGraph, eclass: Id, limit: usize, out: &mut Vec<Subst>) {
        let mut regs = [Id::from(0usize); 6];
        let root_d = self.root.discriminant();
        for n in g[eclass].nodes.iter() {
            if out.len() >= limit {
                return;
            }
            if n.discriminant() != root_d {
                continue;
            }
            let mut inner_class = None;
            if !bind(
                &self.root_slots,
                n.children(),
                g,
                &mut regs,
                &mut inner_class,
            ) {
                continue;
            }
            match (&self.inner, inner_class) {
                (Some((op, slots)), Some(ic)) => {
                    let d = op.discriminant();
                    for m in g[ic].nodes.iter() {
                        if out.len() >= limit {
                            return;
                        }
                        if m.discriminant() != d {
                            continue;
                        }
                        let mut none = None;
                        if bind(slots, m.children(), g, &mut regs, &mut none) {
                            out.push(self.subst(&regs));
                        }
                    }
                }
                _ => out.push(self.subst(&regs)),
            }
        }
    }

    fn subst(&self, regs: &[Id; 6]) -> Subst {
        let mut s = Subst::with_capacity(self.vars.len());
        for (k, v) in self.vars.iter().enumerate() {
            s.insert(*v, regs[k]);
        }
        s
    }
}

/// Binds or compares the operands `ch` against `slots`; false if a repeated variable differs.
fn bind(slots: &[Slot], ch: &[Id], g: &KGraph, regs: &mut [Id; 6], inner: &mut Option<Id>) -> bool {
    for (s, &c) in slots.iter().zip(ch) {
        match *s {
            Slot::Bind(k) => regs[k] = c,
            Slot::Same(k) => {
                if g.find(c) != g.find(regs[k]) {
                    return false;
                }
            }
            Slot::Inner => *inner = Some(c),
        }
    }
    true
}

impl Searcher<Node, KernelAnalysis> for Lhs {
    fn search_eclass_with_limit(
        &self,
        g: &KGraph,
        eclass: Id,
        limit: usize,
    ) -> Option<SearchMatches<'_, Node>> {
        let mut substs = Vec::new();
        self.search_class(g, eclass, limit, &mut substs);
        (!substs.is_empty()).then(|| SearchMatches {
            eclass,
            substs,
            ast: Some(Cow::Borrowed(&self.ast)),
        })
    }

    fn search_with_limit(&self, g: &KGraph, mut limit: usize) -> Vec<SearchMatches<'_, Node>> {
        let Some(classes) = g.classes_for_op(&self.root.discriminant()) else {
            return Vec::new();
        };
        let mut ms = Vec::new();
        for eclass in classes {
            if limit == 0 {
                break;
            }
            let mut substs = Vec::new();
            self.search_class(g, eclass, limit, &mut substs);
            if !substs.is_empty() {
                limit -= substs.len();
                ms.push(SearchMatches {
                    eclass,
                    substs,
                    ast: Some(Cow::Borrowed(&self.ast)),
                });
            }
        }
        ms
    }

    fn get_pattern_ast(&self) -> Option<&PatternAst<Node>> {
        Some(&self.ast)
    }

    fn vars(&self) -> Vec<Var> {
        self.vars.clone()
    }
}

/// A right-hand side pattern, with the condition of a conditional rule.
pub struct Rhs {
    ast: PatternAst<Node>,
    cond: Option<Cond>,
}

impl Rhs {
    /// An unconditional right-hand side.
    pub fn new(ast: PatternAst<Node>) -> Rhs {
        Rhs { ast, cond: None }
    }

    /// A right-hand side applied only where `cond` holds.
    pub fn when(ast: PatternAst<Node>, cond: Cond) -> Rhs {
        Rhs {
            ast,
            cond: Some(cond),
        }
    }

    /// Adds the instantiated pattern to `g`; its class.
    fn instantiate(&self, ids: &mut Vec<Id>, g: &mut KGraph, subst: &Subst) -> Id {
        ids.clear();
        for n in self.ast.as_ref() {
            let id = match n {
                ENodeOrVar::Var(v) => subst[*v],
                ENodeOrVar::ENode(e) => {
                    let e = e.clone().map_children(|c| ids[usize::from(c)]);
                    g.add(e)
                }
            };
            ids.push(id);
        }
        *ids.last().expect("a non-empty pattern")
    }
}

impl Applier<Node, KernelAnalysis> for Rhs {
    fn apply_matches(
        &self,
        g: &mut KGraph,
        matches: &[SearchMatches<Node>],
        _rule: Symbol,
    ) -> Vec<Id> {
        let mut added = Vec::new();
        let mut ids = Vec::with_capacity(self.ast.as_ref().len());
        for mat in matches {
            for subst in &mat.substs {
                match &self.cond {
                    // As egg's `Pattern` applier: union(new, matched).
                    None => {
                        let id = self.instantiate(&mut ids, g, subst);
                        if g.union(id, mat.eclass) {
                            added.push(id);
                        }
                    }
                    // As egg's `ConditionalApplier` over a `Pattern`: union(matched, new).
                    Some(cond) => {
                        if cond(g, mat.eclass, subst) {
                            let id = self.instantiate(&mut ids, g, subst);
                            if g.union(mat.eclass, id) {
                                added.push(mat.eclass);
                            }
                        }
                    }
                }
            }
        }
        added
    }

    fn apply_one(
        &self,
        g: &mut KGraph,
        eclass: Id,
        subst: &Subst,
        _: Option<&PatternAst<Node>>,
        rule: Symbol,
    ) -> Vec<Id> {
        let m = [SearchMatches {
            eclass,
            substs: vec![subst.clone()],
            ast: None,
        }];
        self.apply_matches(g, &m, rule)
    }

    fn get_pattern_ast(&self) -> Option<&PatternAst<Node>> {
        Some(&self.ast)
    }

    fn vars(&self) -> Vec<Var> {
        let mut vs = Vec::new();
        for n in self.ast.as_ref() {
            if let ENodeOrVar::Var(v) = n {
                if !vs.contains(v) {
                    vs.push(*v);
                }
            }
        }
        vs
    }
}
