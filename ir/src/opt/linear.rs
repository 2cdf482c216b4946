//! Canonical sums: integer index arithmetic as linear combinations, instead of the associative
//! closure of `add`.
//!
//! Takes a block's e-graph as loaded (one operation node per class) and the classes the block
//! needs; adds to each needed integer sum a few canonical forms of the same value and unions
//! them with it. A sum's value is read as a linear combination `Σ kᵢ·aᵢ + c` of atoms (classes
//! that are not `add`, `sub`, `neg`, or `mul`/`shl` by a constant) with wrapping coefficients,
//! and written back as left-leaning chains with the atoms in class order, so that sums over the
//! same atoms share their classes by hash-consing:
//! - uniform atoms apart from divergent ones (the uniform part stays on the SALU), the
//!   constant last (`x + c`: a memory instruction takes `c` into its offset, and indices that
//!   differ only in `c` share `x`);
//! - the same with the constant in the uniform part (`(u + c) + d`: the constant costs a SALU
//!   add instead of a VALU one where no offset takes it);
//! - all atoms grouped by coefficient whatever their uniformity (`(a + b) << 6`, one shift for
//!   the group).
//!
//! Atoms with one coefficient are summed first and then scaled (`(a + b) * 64`); the rules turn
//! the scaling into shifts and fused `lshl_add`/`add3` forms. The associative rules of `add`
//! enumerated every association of a sum: a sum of n terms grew up to 2ⁿ classes with up to
//! 2ᵏ nodes each, iteration after iteration (attention's 35-instruction loop body: ~2,000
//! nodes), to find the few forms above; here each needed sum gets at most three.

use super::lang::{ConstVal, KGraph, Node};
use crate::types::Type;
use egg::Id;
use smallvec::{smallvec, SmallVec};

/// The terms of a linear form, inline up to a few (most index sums have a handful of atoms;
/// a heap vector per form, per memo copy and per partial sum cost an allocation each, ~10% of
/// the canonical sums).
type Terms = SmallVec<[(Id, u64); 4]>;

/// Most atoms in one linear form; a sum over more is left to the rules as an atom.
const MAX_ATOMS: usize = 24;

/// `Σ coef·atom + konst` in the class's integer type: atoms canonical and sorted by id,
/// coefficients non-zero and masked to the type's width.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Linear {
    terms: Terms,
    konst: u64,
}

impl Linear {
    fn atom(id: Id) -> Linear {
        Linear {
            terms: smallvec![(id, 1)],
            konst: 0,
        }
    }

    fn constant(c: u64) -> Linear {
        Linear {
            terms: Terms::new(),
            konst: c,
        }
    }

    /// `self + k·other`, masked by `mask`.
    fn add_scaled(&self, other: &Linear, k: u64, mask: u64) -> Linear {
        let mut terms = Terms::with_capacity(self.terms.len() + other.terms.len());
        let (mut i, mut j) = (0, 0);
        while i < self.terms.len() || j < other.terms.len() {
            let a = self.terms.get(i);
            let b = other
                .terms
                .get(j)
                .map(|&(id, c)| (id, c.wrapping_mul(k) & mask));
            let next = match (a, b) {
                (Some(&(x, cx)), Some((y, cy))) if x == y => {
                    i += 1;
                    j += 1;
                    (x, cx.wrapping_add(cy) & mask)
                }
                (Some(&(x, cx)), Some((y, _))) if x < y => {
                    i += 1;
                    (x, cx)
                }
                (Some(&(x, cx)), None) => {
                    i += 1;
                    (x, cx)
                }
                (_, Some(t)) => {
                    j += 1;
                    t
                }
                (None, None) => unreachable!("loop condition"),
            };
            if next.1 != 0 {
                terms.push(next);
            }
        }
        Linear {
            terms,
            konst: self.konst.wrapping_add(other.konst.wrapping_mul(k)) & mask,
        }
    }
}

/// Linear forms of the classes as loaded, memoized by class id (a vector: ids are dense and
/// the block's e-graph small; a hash map cost a hash and its growth per form).
struct Forms {
    memo: Vec<Option<Linear>>,
}

impl Forms {
    /// The linear form of class `id` (of integer type `ty`).
    fn of(&mut self, g: &KGraph, id: Id, ty: Type) -> Linear {
        let id = g.find(id);
        if let Some(Some(l)) = self.memo.get(usize::from(id)) {
            return l.clone();
        }
        let mask = ty.mask();
        let d = &g[id].data;
        let l = if let Some(c) = d.konst {
            Linear::constant(c & mask)
        } else if d.ty != Some(ty) {
            Linear::atom(id)
        } else {
            let konst = |c: Id| g[c].data.konst;
            let node = g[id].nodes.iter().find(|n| !matches!(n, Node::Const(_)));
            let zero = Linear::constant(0);
            let l = match node {
                Some(Node::Add([a, b])) => {
                    self.of(g, *a, ty).add_scaled(&self.of(g, *b, ty), 1, mask)
                }
                Some(Node::Sub([a, b])) => {
                    self.of(g, *a, ty)
                        .add_scaled(&self.of(g, *b, ty), mask, mask)
                }
                Some(Node::Neg([a])) => zero.add_scaled(&self.of(g, *a, ty), mask, mask),
                Some(Node::Mul([a, b])) => match (konst(*a), konst(*b)) {
                    (_, Some(k)) => zero.add_scaled(&self.of(g, *a, ty), k, mask),
                    (Some(k), _) => zero.add_scaled(&self.of(g, *b, ty), k, mask),
                    _ => Linear::atom(id),
                },
                Some(Node::Shl([a, b])) => match konst(*b) {
                    // Shift amounts are taken modulo the width.
                    Some(s) => {
                        let k = 1u64 << (s % ty.bits() as u64);
                        zero.add_scaled(&self.of(g, *a, ty), k, mask)
                    }
                    None => Linear::atom(id),
                },
                _ => Linear::atom(id),
            };
            if l.terms.len() > MAX_ATOMS {
                Linear::atom(id)
            } else {
                l
            }
        };
        let k = usize::from(id);
        if k >= self.memo.len() {
            self.memo.resize_with(k + 1, || None);
        }
        self.memo[k] = Some(l.clone());
        l
    }
}

/// Whether `n` is an operation a linear form looks through.
fn is_linear(g: &KGraph, n: &Node) -> bool {
    let konst = |c: &Id| g[*c].data.konst.is_some();
    match n {
        Node::Add(_) | Node::Sub(_) | Node::Neg(_) => true,
        Node::Mul([a, b]) => konst(a) || konst(b),
        Node::Shl([_, b]) => konst(b),
        _ => false,
    }
}

/// Builds the forms of [`add_canonical_sums`].
struct Writer<'a> {
    g: &'a mut KGraph,
    ty: Type,
}

impl Writer<'_> {
    fn konst(&mut self, bits: u64) -> Id {
        let ty = self.ty;
        self.g.add(Node::Const(ConstVal {
            ty,
            bits: bits & ty.mask(),
        }))
    }

    /// A left-leaning chain `((a + b) + c) + ..` of `ids` (not empty).
    fn chain(&mut self, ids: &[Id]) -> Id {
        let mut acc = ids[0];
        for &x in &ids[1..] {
            acc = self.g.add(Node::Add([acc, x]));
        }
        acc
    }

    /// `Σ k·aᵢ` over `terms`: atoms with equal coefficients summed and then scaled, groups in
    /// order of their first atom; the groups with a negative coefficient subtracted (as
    /// `x - |k|·s`) after the others.
    fn terms(&mut self, terms: &[(Id, u64)]) -> Option<Id> {
        let ty = self.ty;
        let sign = 1u64 << (ty.bits() - 1);
        let mut groups: SmallVec<[(u64, SmallVec<[Id; 4]>); 4]> = SmallVec::new();
        for &(a, k) in terms {
            match groups.iter_mut().find(|(c, _)| *c == k) {
                Some((_, v)) => v.push(a),
                None => groups.push((k, smallvec![a])),
            }
        }
        let mut acc: Option<Id> = None;
        let mut negative: SmallVec<[(u64, SmallVec<[Id; 4]>); 2]> = SmallVec::new();
        for (k, atoms) in groups {
            let neg = k & sign != 0 && k != sign;
            if neg && acc.is_some() {
                negative.push((k, atoms));
                continue;
            }
            let t = self.scaled(&atoms, k);
            acc = Some(match acc {
                Some(x) => self.g.add(Node::Add([x, t])),
                None => t,
            });
        }
        let mut acc = acc?;
        for (k, atoms) in negative {
            let t = self.scaled(&atoms, k.wrapping_neg() & ty.mask());
            acc = self.g.add(Node::Sub([acc, t]));
        }
        Some(acc)
    }

    /// `k · (a₀ + a₁ + ..)`.
    fn scaled(&mut self, atoms: &[Id], k: u64) -> Id {
        let s = self.chain(atoms);
        if k == 1 {
            s
        } else {
            let kc = self.konst(k);
            self.g.add(Node::Mul([s, kc]))
        }
    }

    /// `x + c`, or `x` when `c` is 0; `c` alone when there is no `x`.
    fn plus_const(&mut self, x: Option<Id>, c: u64) -> Id {
        match x {
            Some(x) if c == 0 => x,
            Some(x) => {
                let kc = self.konst(c);
                self.g.add(Node::Add([x, kc]))
            }
            None => self.konst(c),
        }
    }

    fn add_opt(&mut self, a: Option<Id>, b: Option<Id>) -> Option<Id> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.g.add(Node::Add([a, b]))),
            (a, b) => a.or(b),
        }
    }
}

/// Adds the canonical forms of every integer sum among `needed` (and of the sums that
/// operations other than sums use) to `g`, unioned with their classes; the number of classes
/// given forms. `g` is left to be rebuilt.
pub fn add_canonical_sums(g: &mut KGraph, needed: &[Id]) -> usize {
    // The classes whose value is used other than as a term of a larger sum.
    let mut roots: Vec<Id> = needed.iter().map(|&id| g.find(id)).collect();
    for c in g.classes() {
        for n in c.nodes.iter() {
            if !is_linear(g, n) {
                roots.extend(egg::Language::children(n).iter().map(|&x| g.find(x)));
            }
        }
    }
    roots.sort_unstable();
    roots.dedup();
    let mut forms = Forms { memo: Vec::new() };
    let mut made = 0;
    for id in roots {
        let d = &g[id].data;
        let Some(ty) = d.ty.filter(|t| t.is_int()) else {
            continue;
        };
        if d.konst.is_some() || !g[id].nodes.iter().any(|n| is_linear(g, n)) {
            continue;
        }
        let l = forms.of(g, id, ty);
        if l.terms.len() == 1 && l.terms[0].0 == id {
            continue; // an atom (too many terms)
        }
        let (uni, div): (Terms, Terms) = l
            .terms
            .iter()
            .copied()
            .partition(|(a, _)| g[*a].data.uniform);
        let mut w = Writer { g: &mut *g, ty };
        let mut new: SmallVec<[Id; 3]> = SmallVec::new();
        // Uniform and divergent parts apart, the constant last.
        let u = w.terms(&uni);
        let dv = w.terms(&div);
        let both = w.add_opt(u, dv);
        new.push(w.plus_const(both, l.konst));
        // The constant in the uniform part.
        if l.konst != 0 && u.is_some() && dv.is_some() {
            let uc = w.plus_const(u, l.konst);
            new.push(w.add_opt(Some(uc), dv).expect("both parts"));
        }
        // Grouped by coefficient only, where that groups a uniform atom with a divergent one.
        let shared = uni.iter().any(|(_, k)| div.iter().any(|(_, j)| j == k));
        if shared {
            let all = w.terms(&l.terms);
            new.push(w.plus_const(all, l.konst));
        }
        for n in new {
            g.union(id, n);
        }
        made += 1;
    }
    made
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opt::lang::{test_leaf as leaf, KernelAnalysis};

    fn c(g: &mut KGraph, bits: u64) -> Id {
        g.add(Node::Const(ConstVal {
            ty: Type::U32,
            bits,
        }))
    }

    /// `((b + k) * 64 + x)` for k = 0..4 (attention's fragment rows): every index gets the
    /// form `base + 64k` with one shared `base`, which the associative closure needed
    /// iterations to reach.
    #[test]
    fn indices_that_differ_by_a_constant_share_one_base() {
        let mut g = KGraph::new(KernelAnalysis::default());
        let b = leaf(&mut g, 0, true);
        let x = leaf(&mut g, 1, false);
        let sixty_four = c(&mut g, 64);
        let mut roots = Vec::new();
        for k in 0..4 {
            let kc = c(&mut g, k);
            let row = g.add(Node::Add([b, kc]));
            let scaled = g.add(Node::Mul([row, sixty_four]));
            roots.push(g.add(Node::Add([scaled, x])));
        }
        assert_eq!(add_canonical_sums(&mut g, &roots), 4);
        g.rebuild();
        let mut bases = Vec::new();
        for (k, &r) in roots.iter().enumerate() {
            let base = g[r].nodes.iter().find_map(|n| match n {
                Node::Add([x, c]) if g[*c].data.konst == Some(64 * k as u64) => Some(g.find(*x)),
                _ => None,
            });
            match base {
                Some(base) => bases.push(base),
                None if k == 0 => bases.push(g.find(r)),
                None => panic!("index {k} has no `base + {}` form", 64 * k),
            }
        }
        assert!(bases.iter().all(|&b| b == bases[0]), "{bases:?}");
    }

    /// `a - (a + b)` is `-b`, `(a << 2) + a·3` is `a·7`: coefficients combine with wrapping.
    #[test]
    fn coefficients_combine_and_cancel() {
        let mut g = KGraph::new(KernelAnalysis::default());
        let a = leaf(&mut g, 0, false);
        let b = leaf(&mut g, 1, true);
        let ab = g.add(Node::Add([a, b]));
        let diff = g.add(Node::Sub([a, ab]));
        let two = c(&mut g, 2);
        let three = c(&mut g, 3);
        let sh = g.add(Node::Shl([a, two]));
        let m = g.add(Node::Mul([three, a]));
        let sum = g.add(Node::Add([sh, m]));
        add_canonical_sums(&mut g, &[diff, sum]);
        g.rebuild();
        let minus_one = c(&mut g, u32::MAX as u64);
        let neg_b = g.add(Node::Mul([b, minus_one]));
        let seven = c(&mut g, 7);
        let a7 = g.add(Node::Mul([a, seven]));
        g.rebuild();
        assert_eq!(g.find(diff), g.find(neg_b));
        assert_eq!(g.find(sum), g.find(a7));
    }

    /// A sum of n distinct terms gets a bounded number of new nodes (the associative closure
    /// made up to 2ⁿ classes).
    #[test]
    fn a_long_sum_grows_the_egraph_linearly() {
        let mut g = KGraph::new(KernelAnalysis::default());
        let mut sum = leaf(&mut g, 0, false);
        for k in 1..16 {
            let t = leaf(&mut g, k, k % 3 == 0);
            sum = g.add(Node::Add([sum, t]));
        }
        let before = g.total_number_of_nodes();
        add_canonical_sums(&mut g, &[sum]);
        g.rebuild();
        assert!(
            g.total_number_of_nodes() <= before + 3 * 16,
            "{}",
            g.total_number_of_nodes()
        );
    }
}
