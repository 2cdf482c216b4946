//! The rewrite rules, as data: small, named, directional, each with the type condition that
//! makes it exact under the IR's semantics (integers wrap, shift amounts are taken modulo the
//! width, floats round). Float rules are limited to identities that are bit-exact (up to NaN
//! payloads); `a*b+c → fma` is only in the contraction set, used when the kernel allows it.
//!
//! A rule is a left-hand side ([`Lhs`]) and an [`Action`]: a right-hand side [`Template`]
//! (unioned with the match, under [`Test`]s of the matched classes when conditional) or a
//! computed right-hand side (new constants). Conditions are data, resolved to operand
//! positions when the rule set is built, so that checking one costs a few loads.

use super::lang::{ConstVal, KGraph, Node};
use super::pattern::{Lhs, Template};
use crate::semantics::float_value;
use crate::types::Type;
use egg::Id;

/// A type or constant test of one matched class.
#[derive(Clone, Copy, Debug)]
pub enum Test {
    /// An integer type.
    Int,
    /// `i32` or `u32`.
    Int32,
    /// A signed integer or float type.
    SignedOrFloat,
    /// A float type.
    Float,
    /// Integer or bool zero; float +0 when `pos`, -0 when `neg`.
    Zero {
        /// Float +0 counts.
        pos: bool,
        /// Float -0 counts.
        neg: bool,
    },
    /// The constant one (integer or float).
    One,
    /// An integer or bool constant with all bits set.
    AllOnes,
    /// A constant equal to this number.
    Value(f64),
}

impl Test {
    /// Whether the class `id` passes.
    pub fn holds(self, g: &KGraph, id: Id) -> bool {
        match self {
            Test::Int => ty_of(g, id).is_some_and(|t| t.is_int()),
            Test::Int32 => matches!(ty_of(g, id), Some(Type::I32 | Type::U32)),
            Test::SignedOrFloat => ty_of(g, id).is_some_and(|t| t.is_float() || t.is_signed()),
            Test::Float => ty_of(g, id).is_some_and(|t| t.is_float()),
            Test::Zero { pos, neg } => match konst(g, id) {
                Some((t, b)) if t.is_float() => {
                    let sign = 1u64 << (t.bits() - 1);
                    (pos && b == 0) || (neg && b == sign)
                }
                Some((_, b)) => b == 0,
                None => false,
            },
            Test::One => match konst(g, id) {
                Some((t, b)) if t.is_float() => float_value(t, b) == 1.0,
                Some((t, b)) => t.is_int() && b == 1,
                None => false,
            },
            Test::AllOnes => match konst(g, id) {
                Some((t, b)) => (t.is_int() || t == Type::Bool) && b == t.mask(),
                None => false,
            },
            Test::Value(x) => match konst(g, id) {
                Some((t, b)) if t.is_float() => float_value(t, b) == x,
                Some((t, b)) if t.is_int() => {
                    crate::semantics::eval_convert(t, Type::F64, b) == x.to_bits()
                }
                _ => false,
            },
        }
    }
}

/// The variables `?a`, `?b`, `?c` of a computed rule, as operand positions of its match.
#[derive(Clone, Copy, Debug)]
pub struct Vars {
    a: usize,
    b: usize,
    c: usize,
}

/// A computed right-hand side: given the matched operands, the class to union with the match.
pub type ComputeFn = fn(&mut KGraph, &[Id], Vars) -> Option<Id>;

/// What a rule does with a match.
pub enum Action {
    /// Add the template and union it with the matched class; when `tests` is `Some`, only
    /// where every test holds (and the union takes the matched class first, as egg's
    /// conditional applier did; the unconditional one took the new class first).
    Rewrite {
        /// The right-hand side.
        rhs: Template,
        /// Tests of operand positions, for a conditional rule.
        tests: Option<Vec<(usize, Test)>>,
    },
    /// Union the match with what the function makes (if anything).
    Compute(ComputeFn, Vars),
}

/// A rewrite rule.
pub struct Rule {
    /// Its name.
    pub name: &'static str,
    /// Its left-hand side.
    pub lhs: Lhs,
    /// Its right-hand side.
    pub action: Action,
}

/// A rule set, with the distinct root operations of its left-hand sides (the search of one
/// iteration lists the e-graph's nodes of each root operation once, for all rules).
pub struct RuleSet {
    /// The rules, in application order.
    pub rules: Vec<Rule>,
    /// The distinct root operations.
    pub roots: Vec<Node>,
    /// Per rule: the index of its root operation in `roots`.
    pub root_of: Vec<usize>,
    /// Per rule: an earlier rule with the same left-hand side (whose matches it can share).
    pub same_as: Vec<Option<usize>>,
}

impl RuleSet {
    /// Indexes `rules`.
    pub fn new(rules: Vec<Rule>) -> RuleSet {
        use egg::Language;
        let mut roots: Vec<Node> = Vec::new();
        let mut root_of = Vec::with_capacity(rules.len());
        for r in &rules {
            let d = r.lhs.root().discriminant();
            let k = match roots.iter().position(|n| n.discriminant() == d) {
                Some(k) => k,
                None => {
                    roots.push(r.lhs.root().clone());
                    roots.len() - 1
                }
            };
            root_of.push(k);
        }
        // Only rules with the same root operation can have the same left-hand side.
        let same_as = (0..rules.len())
            .map(|k| {
                (0..k).find(|&j| root_of[j] == root_of[k] && rules[j].lhs.same_shape(&rules[k].lhs))
            })
            .collect();
        RuleSet {
            rules,
            roots,
            root_of,
            same_as,
        }
    }
}

fn ty_of(g: &KGraph, id: Id) -> Option<Type> {
    g[id].data.ty
}

fn konst(g: &KGraph, id: Id) -> Option<(Type, u64)> {
    let d = &g[id].data;
    Some((d.ty?, d.konst?))
}

/// Tests of named variables (all must hold).
struct Check(Vec<(&'static str, Test)>);

fn int(v: &'static str) -> Check {
    Check(vec![(v, Test::Int)])
}
fn int32(v: &'static str) -> Check {
    Check(vec![(v, Test::Int32)])
}
fn signed_or_float(v: &'static str) -> Check {
    Check(vec![(v, Test::SignedOrFloat)])
}
fn float(v: &'static str) -> Check {
    Check(vec![(v, Test::Float)])
}
/// Integer or bool zero; float +0 when `float_pos_zero`, -0 when `float_neg_zero`.
fn is_zero(v: &'static str, float_pos_zero: bool, float_neg_zero: bool) -> Check {
    Check(vec![(
        v,
        Test::Zero {
            pos: float_pos_zero,
            neg: float_neg_zero,
        },
    )])
}
fn is_one(v: &'static str) -> Check {
    Check(vec![(v, Test::One)])
}
fn is_all_ones(v: &'static str) -> Check {
    Check(vec![(v, Test::AllOnes)])
}
fn is_value(v: &'static str, x: f64) -> Check {
    Check(vec![(v, Test::Value(x))])
}
fn both(a: Check, b: Check) -> Check {
    let mut t = a.0;
    t.extend(b.0);
    Check(t)
}

fn lhs(s: &'static str) -> Lhs {
    Lhs::parse(s).expect("a left-hand side of the supported shape")
}

/// An unconditional rule.
fn rule(name: &'static str, l: &'static str, r: &str) -> Rule {
    let lhs = lhs(l);
    let rhs = Template::parse(r, &lhs).expect("a right-hand side over the left's variables");
    Rule {
        name,
        lhs,
        action: Action::Rewrite { rhs, tests: None },
    }
}

/// A rule applied where `check` holds.
fn rule_if(name: &'static str, l: &'static str, r: &str, check: Check) -> Rule {
    let lhs = lhs(l);
    let rhs = Template::parse(r, &lhs).expect("a right-hand side over the left's variables");
    let tests = check
        .0
        .into_iter()
        .map(|(v, t)| (lhs.var_index(v).expect("a variable of the left side"), t))
        .collect();
    Rule {
        name,
        lhs,
        action: Action::Rewrite {
            rhs,
            tests: Some(tests),
        },
    }
}

fn add_const(g: &mut KGraph, ty: Type, bits: u64) -> Id {
    g.add(Node::Const(ConstVal {
        ty,
        bits: bits & ty.mask(),
    }))
}

/// Power-of-two constant (≥ 2) of an integer type: its log2.
fn log2_of(g: &KGraph, id: Id) -> Option<(Type, u32)> {
    let (t, b) = konst(g, id)?;
    (t.is_int() && b >= 2 && b.is_power_of_two()).then(|| (t, b.trailing_zeros()))
}

fn computed(name: &'static str, l: &'static str, f: ComputeFn) -> Rule {
    let lhs = lhs(l);
    // Variables a rule does not have get an unused position (never read by its function).
    let at = |v: &str| lhs.var_index(v).unwrap_or(usize::MAX);
    let v = Vars {
        a: at("?a"),
        b: at("?b"),
        c: at("?c"),
    };
    Rule {
        name,
        lhs,
        action: Action::Compute(f, v),
    }
}

/// The rules that hold for every kernel.
pub fn base_rules() -> Vec<Rule> {
    vec![
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
        // Integer reassociation of products (sums are rewritten to canonical forms by
        // `opt/linear.rs` instead of an associative closure): lets extraction group uniform
        // factors (SALU) apart from divergent ones.
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
        computed("sub-self", "(sub ?a ?a)", |g, r, v| {
            let t = ty_of(g, r[v.a]).filter(|t| t.is_int())?;
            Some(add_const(g, t, 0))
        }),
        computed("xor-self", "(xor ?a ?a)", |g, r, v| {
            let t = ty_of(g, r[v.a])?;
            Some(add_const(g, t, 0))
        }),
        computed("eq-self", "(eq ?a ?a)", |g, r, v| {
            let t = ty_of(g, r[v.a]).filter(|t| t.is_int() || *t == Type::Bool)?;
            let _ = t;
            Some(add_const(g, Type::Bool, 1))
        }),
        // Strength reduction.
        computed("mul-pow2", "(mul ?a ?c)", |g, r, v| {
            let (t, k) = log2_of(g, r[v.c])?;
            let a = r[v.a];
            let kc = add_const(g, t, k as u64);
            Some(g.add(Node::Shl([a, kc])))
        }),
        computed("udiv-pow2", "(div ?a ?c)", |g, r, v| {
            let (t, k) = log2_of(g, r[v.c])?;
            if t.is_signed() {
                return None;
            }
            let a = r[v.a];
            let kc = add_const(g, t, k as u64);
            Some(g.add(Node::Shr([a, kc])))
        }),
        computed("urem-pow2", "(rem ?a ?c)", |g, r, v| {
            let (t, k) = log2_of(g, r[v.c])?;
            if t.is_signed() {
                return None;
            }
            let a = r[v.a];
            let m = add_const(g, t, (1u64 << k) - 1);
            Some(g.add(Node::And([a, m])))
        }),
        computed("mul-pow2-plus-one", "(mul ?a ?c)", |g, r, v| {
            let (t, b) = konst(g, r[v.c])?;
            if !t.is_int() || b < 3 || !(b - 1).is_power_of_two() {
                return None;
            }
            let a = r[v.a];
            let kc = add_const(g, t, (b - 1).trailing_zeros() as u64);
            let sh = g.add(Node::Shl([a, kc]));
            Some(g.add(Node::Add([sh, a])))
        }),
        computed("mul-pow2-minus-one", "(mul ?a ?c)", |g, r, v| {
            let (t, b) = konst(g, r[v.c])?;
            let up = b.checked_add(1)?;
            if !t.is_int() || b < 3 || !up.is_power_of_two() || up.trailing_zeros() >= t.bits() {
                return None;
            }
            let a = r[v.a];
            let kc = add_const(g, t, up.trailing_zeros() as u64);
            let sh = g.add(Node::Shl([a, kc]));
            Some(g.add(Node::Sub([sh, a])))
        }),
        computed("select-const", "(select ?c ?a ?b)", |g, r, v| {
            let (_, c) = konst(g, r[v.c])?;
            Some(if c != 0 { r[v.a] } else { r[v.b] })
        }),
    ]
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
