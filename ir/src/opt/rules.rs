//! The rewrite rules, as data: small, named, directional, each with the type condition that
//! makes it exact under the IR's semantics (integers wrap, shift amounts are taken modulo the
//! width, floats round). Float rules are limited to identities that are bit-exact (up to NaN
//! payloads); `a*b+c → fma` is only in the contraction set, used when the kernel allows it.

use super::lang::{ConstVal, KGraph, KernelAnalysis, Node};
use super::pattern::{Lhs, Rhs};
use crate::semantics::float_value;
use crate::types::Type;
use egg::{Applier, Id, PatternAst, Rewrite, Subst, Symbol, Var};

type Rule = Rewrite<Node, KernelAnalysis>;

fn var(s: &str) -> Var {
    s.parse().expect("a pattern variable")
}

fn ast(s: &str) -> PatternAst<Node> {
    s.parse().expect("a pattern")
}

fn lhs(s: &str) -> Lhs {
    Lhs::new(ast(s)).expect("a left-hand side of the supported shape")
}

/// An unconditional rule.
fn rule(name: &str, l: &str, r: &str) -> Rule {
    Rewrite::new(name, lhs(l), Rhs::new(ast(r))).expect("rule")
}

/// A rule applied where `cond` holds.
fn rule_if(
    name: &str,
    l: &str,
    r: &str,
    cond: impl Fn(&mut KGraph, Id, &Subst) -> bool + Send + Sync + 'static,
) -> Rule {
    Rewrite::new(name, lhs(l), Rhs::when(ast(r), Box::new(cond))).expect("rule")
}

fn ty_of(g: &KGraph, s: &Subst, v: Var) -> Option<Type> {
    g[s[v]].data.ty
}

fn konst(g: &KGraph, s: &Subst, v: Var) -> Option<(Type, u64)> {
    let d = &g[s[v]].data;
    Some((d.ty?, d.konst?))
}

fn int(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| ty_of(g, s, v).is_some_and(|t| t.is_int())
}
fn int32(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| matches!(ty_of(g, s, v), Some(Type::I32 | Type::U32))
}
fn signed_or_float(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| ty_of(g, s, v).is_some_and(|t| t.is_float() || t.is_signed())
}
fn float(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| ty_of(g, s, v).is_some_and(|t| t.is_float())
}
/// Integer or bool zero; float +0 when `float_pos_zero`, -0 when `float_neg_zero`.
fn is_zero(
    v: &'static str,
    float_pos_zero: bool,
    float_neg_zero: bool,
) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| match konst(g, s, v) {
        Some((t, b)) if t.is_float() => {
            let sign = 1u64 << (t.bits() - 1);
            (float_pos_zero && b == 0) || (float_neg_zero && b == sign)
        }
        Some((_, b)) => b == 0,
        None => false,
    }
}
fn is_one(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| match konst(g, s, v) {
        Some((t, b)) if t.is_float() => float_value(t, b) == 1.0,
        Some((t, b)) => t.is_int() && b == 1,
        None => false,
    }
}
fn is_all_ones(v: &'static str) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| match konst(g, s, v) {
        Some((t, b)) => (t.is_int() || t == Type::Bool) && b == t.mask(),
        None => false,
    }
}
fn is_value(v: &'static str, x: f64) -> impl Fn(&mut KGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |g, _, s| match konst(g, s, v) {
        Some((t, b)) if t.is_float() => float_value(t, b) == x,
        Some((t, b)) if t.is_int() => {
            crate::semantics::eval_convert(t, Type::F64, b) == x.to_bits()
        }
        _ => false,
    }
}
fn both<A, B>(a: A, b: B) -> impl Fn(&mut KGraph, Id, &Subst) -> bool
where
    A: Fn(&mut KGraph, Id, &Subst) -> bool,
    B: Fn(&mut KGraph, Id, &Subst) -> bool,
{
    move |g, i, s| a(g, i, s) && b(g, i, s)
}

/// The pattern variables `?a`, `?b`, `?c` of computed rules, parsed once per rule set rather
/// than once per match.
#[derive(Clone, Copy)]
struct Vars {
    a: Var,
    b: Var,
    c: Var,
}

/// An applier whose right-hand side is computed (new constants), then unioned with the match.
struct Computed(fn(&mut KGraph, &Subst, Vars) -> Option<Id>, Vars);

impl Applier<Node, KernelAnalysis> for Computed {
    fn apply_one(
        &self,
        g: &mut KGraph,
        eclass: Id,
        subst: &Subst,
        _: Option<&PatternAst<Node>>,
        _: Symbol,
    ) -> Vec<Id> {
        match (self.0)(g, subst, self.1) {
            Some(id) if g.union(eclass, id) => vec![id],
            _ => vec![],
        }
    }
}

fn add_const(g: &mut KGraph, ty: Type, bits: u64) -> Id {
    g.add(Node::Const(ConstVal {
        ty,
        bits: bits & ty.mask(),
    }))
}

/// Power-of-two constant `?c` (≥ 2) of an integer type: its log2.
fn log2_of(g: &KGraph, s: &Subst, v: Var) -> Option<(Type, u32)> {
    let (t, b) = konst(g, s, v)?;
    (t.is_int() && b >= 2 && b.is_power_of_two()).then(|| (t, b.trailing_zeros()))
}

fn computed(name: &str, lhs: &str, f: fn(&mut KGraph, &Subst, Vars) -> Option<Id>) -> Rule {
    let v = Vars {
        a: var("?a"),
        b: var("?b"),
        c: var("?c"),
    };
    Rewrite::new(name, self::lhs(lhs), Computed(f, v)).expect("rule")
}

/// The rules that hold for every kernel.
pub fn base_rules() -> Vec<Rule> {
    let mut r: Vec<Rule> = vec![
        // Commutativity (float add/mul/min/max are commutative up to NaN payloads).
        rule("comm-add", "(add ?a ?b)", "(add ?b ?a)"),
        rule("comm-mul", "(mul ?a ?b)", "(mul ?b ?a)"),
        rule("comm-and", "(and ?a ?b)", "(and ?b ?a)"),
        rule("comm-or", "(or ?a ?b)", "(or ?b ?a)"),
        rule("comm-xor", "(xor ?a ?b)", "(xor ?b ?a)"),
        rule("comm-min", "(min ?a ?b)", "(min ?b ?a)"),
        rule("comm-max", "(max ?a ?b)", "(max ?b ?a)"),
        rule("comm-eq", "(eq ?a ?b)", "(eq ?b ?a)"),
        rule("comm-ne", "(ne ?a ?b)", "(ne ?b ?a)"),
        rule("lt-gt", "(lt ?a ?b)", "(gt ?b ?a)"),
        rule("gt-lt", "(gt ?a ?b)", "(lt ?b ?a)"),
        rule("le-ge", "(le ?a ?b)", "(ge ?b ?a)"),
        rule("ge-le", "(ge ?a ?b)", "(le ?b ?a)"),
        // Integer reassociation: lets extraction group uniform terms (SALU) apart from
        // divergent ones, and find constant sums.
        rule_if(
            "assoc-add",
            "(add (add ?a ?b) ?c)",
            "(add ?a (add ?b ?c))",
            int("?a"),
        ),
        rule_if(
            "assoc-add-rev",
            "(add ?a (add ?b ?c))",
            "(add (add ?a ?b) ?c)",
            int("?a"),
        ),
        rule_if(
            "assoc-mul",
            "(mul (mul ?a ?b) ?c)",
            "(mul ?a (mul ?b ?c))",
            int("?a"),
        ),
        rule_if(
            "assoc-mul-rev",
            "(mul ?a (mul ?b ?c))",
            "(mul (mul ?a ?b) ?c)",
            int("?a"),
        ),
        rule_if(
            "distribute-mul-add",
            "(mul (add ?a ?b) ?c)",
            "(add (mul ?a ?c) (mul ?b ?c))",
            int("?a"),
        ),
        // Identities.
        rule_if("add-zero", "(add ?a ?z)", "?a", is_zero("?z", false, true)),
        rule_if("sub-zero", "(sub ?a ?z)", "?a", is_zero("?z", true, false)),
        rule_if("mul-one", "(mul ?a ?o)", "?a", is_one("?o")),
        rule_if("div-one", "(div ?a ?o)", "?a", is_one("?o")),
        rule_if(
            "mul-zero",
            "(mul ?a ?z)",
            "?z",
            both(int("?a"), is_zero("?z", false, false)),
        ),
        rule_if(
            "mul-minus-one",
            "(mul ?a ?m)",
            "(neg ?a)",
            is_value("?m", -1.0),
        ),
        rule_if(
            "mul-two",
            "(mul ?a ?t)",
            "(add ?a ?a)",
            both(float("?a"), is_value("?t", 2.0)),
        ),
        rule_if("and-zero", "(and ?a ?z)", "?z", is_zero("?z", false, false)),
        rule_if("and-ones", "(and ?a ?m)", "?a", is_all_ones("?m")),
        rule_if("or-zero", "(or ?a ?z)", "?a", is_zero("?z", false, false)),
        rule_if("or-ones", "(or ?a ?m)", "?m", is_all_ones("?m")),
        rule_if("xor-zero", "(xor ?a ?z)", "?a", is_zero("?z", false, false)),
        rule_if("shl-zero", "(shl ?a ?z)", "?a", is_zero("?z", false, false)),
        rule_if("shr-zero", "(shr ?a ?z)", "?a", is_zero("?z", false, false)),
        rule("and-self", "(and ?a ?a)", "?a"),
        rule("or-self", "(or ?a ?a)", "?a"),
        rule("min-self", "(min ?a ?a)", "?a"),
        rule("max-self", "(max ?a ?a)", "?a"),
        rule("neg-neg", "(neg (neg ?a))", "?a"),
        rule("not-not", "(not (not ?a))", "?a"),
        // Not for unsigned integers, where abs is the identity.
        rule_if(
            "abs-neg",
            "(abs (neg ?a))",
            "(abs ?a)",
            signed_or_float("?a"),
        ),
        rule("select-same", "(select ?c ?a ?a)", "?a"),
        rule_if("sub-neg", "(sub ?a (neg ?b))", "(add ?a ?b)", int("?a")),
        rule("add-neg", "(add ?a (neg ?b))", "(sub ?a ?b)"),
        rule_if("not-lt", "(not (lt ?a ?b))", "(ge ?a ?b)", int("?a")),
        rule_if("not-le", "(not (le ?a ?b))", "(gt ?a ?b)", int("?a")),
        // GCN three-operand shapes (v_lshl_add_u32, v_add3_u32, v_lshl_or_b32).
        rule_if(
            "lshl-add",
            "(add (shl ?a ?b) ?c)",
            "(lshl_add ?a ?b ?c)",
            int32("?a"),
        ),
        rule_if(
            "add3",
            "(add (add ?a ?b) ?c)",
            "(add3 ?a ?b ?c)",
            int32("?a"),
        ),
        rule_if(
            "lshl-or",
            "(or (shl ?a ?b) ?c)",
            "(lshl_or ?a ?b ?c)",
            int32("?a"),
        ),
    ];
    r.extend([
        computed("sub-self", "(sub ?a ?a)", |g, s, v| {
            let t = ty_of(g, s, v.a).filter(|t| t.is_int())?;
            Some(add_const(g, t, 0))
        }),
        computed("xor-self", "(xor ?a ?a)", |g, s, v| {
            let t = ty_of(g, s, v.a)?;
            Some(add_const(g, t, 0))
        }),
        computed("eq-self", "(eq ?a ?a)", |g, s, v| {
            let t = ty_of(g, s, v.a).filter(|t| t.is_int() || *t == Type::Bool)?;
            let _ = t;
            Some(add_const(g, Type::Bool, 1))
        }),
        // Strength reduction.
        computed("mul-pow2", "(mul ?a ?c)", |g, s, v| {
            let (t, k) = log2_of(g, s, v.c)?;
            let a = s[v.a];
            let kc = add_const(g, t, k as u64);
            Some(g.add(Node::Shl([a, kc])))
        }),
        computed("udiv-pow2", "(div ?a ?c)", |g, s, v| {
            let (t, k) = log2_of(g, s, v.c)?;
            if t.is_signed() {
                return None;
            }
            let a = s[v.a];
            let kc = add_const(g, t, k as u64);
            Some(g.add(Node::Shr([a, kc])))
        }),
        computed("urem-pow2", "(rem ?a ?c)", |g, s, v| {
            let (t, k) = log2_of(g, s, v.c)?;
            if t.is_signed() {
                return None;
            }
            let a = s[v.a];
            let m = add_const(g, t, (1u64 << k) - 1);
            Some(g.add(Node::And([a, m])))
        }),
        computed("mul-pow2-plus-one", "(mul ?a ?c)", |g, s, v| {
            let (t, b) = konst(g, s, v.c)?;
            if !t.is_int() || b < 3 || !(b - 1).is_power_of_two() {
                return None;
            }
            let a = s[v.a];
            let kc = add_const(g, t, (b - 1).trailing_zeros() as u64);
            let sh = g.add(Node::Shl([a, kc]));
            Some(g.add(Node::Add([sh, a])))
        }),
        computed("mul-pow2-minus-one", "(mul ?a ?c)", |g, s, v| {
            let (t, b) = konst(g, s, v.c)?;
            let up = b.checked_add(1)?;
            if !t.is_int() || b < 3 || !up.is_power_of_two() || up.trailing_zeros() >= t.bits() {
                return None;
            }
            let a = s[v.a];
            let kc = add_const(g, t, up.trailing_zeros() as u64);
            let sh = g.add(Node::Shl([a, kc]));
            Some(g.add(Node::Sub([sh, a])))
        }),
        computed("select-const", "(select ?c ?a ?b)", |g, s, v| {
            let (_, c) = konst(g, s, v.c)?;
            Some(if c != 0 { s[v.a] } else { s[v.b] })
        }),
    ]);
    r
}

/// Rules allowed only when the kernel allows contraction.
pub fn contraction_rules() -> Vec<Rule> {
    vec![
        rule_if(
            "fma-contract",
            "(add (mul ?a ?b) ?c)",
            "(fma ?a ?b ?c)",
            float("?a"),
        ),
        rule_if(
            "fma-contract-sub",
            "(sub (mul ?a ?b) ?c)",
            "(fma ?a ?b (neg ?c))",
            float("?a"),
        ),
    ]
}
