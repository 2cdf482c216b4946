//! Left- and right-hand sides of the rewrite rules, matched and instantiated without egg's
//! general pattern machine.
//!
//! Every left-hand side of the rule set is an operation whose operands are pattern variables,
//! except at most one operand that is itself an operation over variables:
//! `(add ?a ?b)`, `(sub ?a ?a)`, `(add (shl ?a ?b) ?c)`. For those shapes egg compiles a
//! program (bind the root, compare repeated variables, bind the inner operation) and runs it
//! in a fresh virtual machine per e-class, allocating registers, substitutions and match
//! vectors each time; on the small e-graphs of kernel blocks that set-up was most of the
//! search. [`Lhs`] walks the same nodes in the same order (classes in `classes_for_op` order,
//! nodes in class order, the inner operation's nodes in class order, limits counted the same
//! way), so it finds the same matches in the same order, and records each as the matched class
//! and the operand classes in variable order ([`Match`]). [`Template`] instantiates a
//! right-hand side bottom-up as egg's `apply_pat` did.

use super::lang::{KGraph, Node};
use egg::{FromOp, Id, Language};
use smallvec::SmallVec;

/// Most variables in one left-hand side.
pub const MAX_VARS: usize = 3;

/// One match: the matched class and the classes of the variables, in the left-hand side's
/// variable order.
#[derive(Clone, Copy, Debug)]
pub struct Match {
    /// The matched class.
    pub class: Id,
    /// The variables' classes.
    pub regs: [Id; MAX_VARS],
}

/// What an operand position of a left-hand side holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    root: Node,
    root_slots: Slots,
    inner: Option<(Node, Slots)>,
    /// Variables' names (`?a`) in binding order (egg's substitution order for these shapes).
    vars: SmallVec<[&'static str; MAX_VARS]>,
}

/// The slots of one operation's operands (at most three).
type Slots = SmallVec<[Slot; 3]>;

impl Lhs {
    /// Parses a left-hand side; `None` if it is malformed or not of the supported shape.
    pub fn parse(text: &'static str) -> Option<Lhs> {
        Lhs::new(&parse(text)?)
    }

    /// The position of variable `name` (`"?a"`) among the matched operands.
    pub fn var_index(&self, name: &str) -> Option<usize> {
        self.vars.iter().position(|w| *w == name)
    }

    /// A left-hand side from its parsed items; `None` if it is not of the supported shape.
    fn new(items: &[Item<'static>]) -> Option<Lhs> {
        let Item::Op(root) = items.last()? else {
            return None;
        };
        let mut vars = SmallVec::new();
        let mut root_slots = Slots::new();
        let mut inner_at = None;
        for &c in root.children() {
            match &items[usize::from(c)] {
                Item::Var(v) => root_slots.push(slot_of(&mut vars, v)),
                Item::Op(n) => {
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
                let mut slots = Slots::new();
                for &c in n.children() {
                    match &items[usize::from(c)] {
                        Item::Var(v) => slots.push(slot_of(&mut vars, v)),
                        Item::Op(_) => return None,
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
        if vars.len() > MAX_VARS {
            return None;
        }
        Some(Lhs {
            root: root.clone(),
            root_slots,
            inner,
            vars,
        })
    }

    /// Whether `other` matches exactly what this matches, with the same operands at the same
    /// positions (the variables may be named differently).
    pub fn same_shape(&self, other: &Lhs) -> bool {
        self.root.discriminant() == other.root.discriminant()
            && self.root_slots == other.root_slots
            && match (&self.inner, &other.inner) {
                (None, None) => true,
                (Some((a, sa)), Some((b, sb))) => a.discriminant() == b.discriminant() && sa == sb,
                _ => false,
            }
    }

    /// The root operation (its operands are meaningless).
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// All matches, at most `limit`, appended to `out` (which is empty on entry), in the order
    /// egg's `Pattern::search_with_limit` found them. `roots` are the e-graph's nodes with this
    /// left-hand side's root operation, with their classes, in that search order
    /// ([`root_nodes`]).
    pub fn search(
        &self,
        g: &KGraph,
        classes: &ClassNodes,
        roots: &[(Id, Node)],
        limit: usize,
        out: &mut Vec<Match>,
    ) {
        let mut regs = [Id::from(0usize); MAX_VARS];
        for (eclass, n) in roots {
            if out.len() >= limit {
                return;
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
                    for m in classes.of(g, ic) {
                        if out.len() >= limit {
                            return;
                        }
                        if m.discriminant() != d {
                            continue;
                        }
                        let mut none = None;
                        if bind(slots, m.children(), g, &mut regs, &mut none) {
                            out.push(Match {
                                class: *eclass,
                                regs,
                            });
                        }
                    }
                }
                _ => out.push(Match {
                    class: *eclass,
                    regs,
                }),
            }
        }
    }
}

/// The nodes of each class of a clean e-graph, by canonical class id: made once per
/// iteration for the searches, which look a class up per matched node (indexing the e-graph
/// by id is a union-find walk and a hash lookup).
pub struct ClassNodes<'a> {
    nodes: Vec<&'a [Node]>,
}

impl<'a> ClassNodes<'a> {
    /// The table of `g`, which must be clean (rebuilt): then every id in a node is canonical.
    pub fn new(g: &'a KGraph) -> ClassNodes<'a> {
        let mut nodes: Vec<&'a [Node]> = Vec::new();
        for c in g.classes() {
            let k = usize::from(c.id);
            if k >= nodes.len() {
                nodes.resize(k + 1, &[]);
            }
            nodes[k] = &c.nodes;
        }
        ClassNodes { nodes }
    }

    /// The nodes of class `id` (as `g[id].nodes`).
    pub fn of(&self, g: &'a KGraph, id: Id) -> &'a [Node] {
        match self.nodes.get(usize::from(id)) {
            Some(n) if !n.is_empty() => n,
            _ => &g[id].nodes,
        }
    }
}

/// The nodes of `g` with operation `op`, with their classes, in the order egg's pattern search
/// visits them (classes in `classes_for_op` order, nodes in class order), into `out`. Built
/// once per iteration and shared by all rules with that root operation.
pub fn root_nodes(g: &KGraph, classes: &ClassNodes, op: &Node, out: &mut Vec<(Id, Node)>) {
    out.clear();
    let d = op.discriminant();
    let Some(ids) = g.classes_for_op(&d) else {
        return;
    };
    for eclass in ids {
        for n in classes.of(g, eclass) {
            if n.discriminant() == d {
                out.push((eclass, n.clone()));
            }
        }
    }
}

/// The slot of an occurrence of variable `v`: binds it the first time, compares it after.
fn slot_of(vars: &mut SmallVec<[&'static str; MAX_VARS]>, v: &'static str) -> Slot {
    match vars.iter().position(|w| *w == v) {
        Some(k) => Slot::Same(k),
        None => {
            vars.push(v);
            Slot::Bind(vars.len() - 1)
        }
    }
}

/// Binds or compares the operands `ch` against `slots`; false if a repeated variable differs.
///
/// Inlined: it runs once per node a search visits, and as a call its set-up cost more than
/// its few slots. In a clean e-graph (as searches see it, [`ClassNodes`]) every child id is
/// canonical, so a repeated variable compares ids without the union-find.
#[inline(always)]
fn bind(
    slots: &[Slot],
    ch: &[Id],
    g: &KGraph,
    regs: &mut [Id; MAX_VARS],
    inner: &mut Option<Id>,
) -> bool {
    for (s, &c) in slots.iter().zip(ch) {
        match *s {
            Slot::Bind(k) => regs[k] = c,
            Slot::Same(k) => {
                let same = if g.clean {
                    c == regs[k]
                } else {
                    g.find(c) == g.find(regs[k])
                };
                if !same {
                    return false;
                }
            }
            Slot::Inner => *inner = Some(c),
        }
    }
    true
}

/// One item of a parsed pattern.
#[derive(Clone, Debug, PartialEq)]
enum Item<'a> {
    /// A variable, by its name (`?a`).
    Var(&'a str),
    /// An operation whose children index earlier items.
    Op(Node),
}

/// A parsed pattern: its items in post-order, left to right (the order of egg's `PatternAst`),
/// the root last. The longest right-hand side of the rule set has 7 items.
type Items<'a> = SmallVec<[Item<'a>; 8]>;

/// Parses a pattern such as `(add (shl ?a ?b) ?c)`; `None` if it is malformed.
///
/// The rule set is built from these texts on the first optimization of a process, so the first
/// compile pays for this: the parser walks the bytes once, names variables by slices of the
/// text (egg's `Var` interns each name in a global symbol table) and allocates nothing but the
/// operand lists egg's `FromOp` takes.
fn parse(text: &str) -> Option<Items<'_>> {
    let mut p = Parser { text, at: 0 };
    let mut out = Items::new();
    p.expr(&mut out)?;
    p.token().is_none().then_some(out)
}

/// A position in a pattern's text.
struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    /// The next byte after spaces, not consumed.
    fn peek(&mut self) -> Option<u8> {
        let b = self.text.as_bytes();
        while b.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
        b.get(self.at).copied()
    }

    /// The next token: a parenthesis alone, or a run of other non-space text.
    fn token(&mut self) -> Option<&'a str> {
        let text = self.text;
        let b = text.as_bytes();
        let first = self.peek()?;
        let start = self.at;
        self.at += 1;
        if !matches!(first, b'(' | b')') {
            while b
                .get(self.at)
                .is_some_and(|&c| !matches!(c, b'(' | b')') && !c.is_ascii_whitespace())
            {
                self.at += 1;
            }
        }
        // Tokens end at ASCII bytes or at the end of the text: character boundaries.
        Some(&text[start..self.at])
    }

    /// Parses one expression into `out`; its index.
    fn expr(&mut self, out: &mut Items<'a>) -> Option<Id> {
        let item = match self.token()? {
            "(" => {
                let op = self.token().filter(|t| *t != "(" && *t != ")")?;
                let mut ch = Vec::with_capacity(3);
                while self.peek()? != b')' {
                    ch.push(self.expr(out)?);
                }
                self.at += 1;
                Item::Op(<Node as FromOp>::from_op(op, ch).ok()?)
            }
            ")" => return None,
            var if var.len() > 1 && var.starts_with('?') => Item::Var(var),
            leaf => Item::Op(<Node as FromOp>::from_op(leaf, Vec::new()).ok()?),
        };
        out.push(item);
        Some(Id::from(out.len() - 1))
    }
}

/// A node of a [`Template`].
#[derive(Clone, Debug)]
enum TNode {
    /// The class matched by the left-hand side's variable at this position.
    Var(usize),
    /// An operation whose children index earlier template nodes.
    Op(Node),
}

/// A right-hand side: nodes in bottom-up order (as parsed), variables resolved to the
/// left-hand side's operand positions.
pub struct Template {
    nodes: Vec<TNode>,
}

impl Template {
    /// Parses `text` with the variables of `lhs`; `None` if it is malformed or uses a variable
    /// the left-hand side does not bind.
    pub fn parse(text: &str, lhs: &Lhs) -> Option<Template> {
        let items = parse(text)?;
        let mut nodes = Vec::with_capacity(items.len());
        for n in items {
            nodes.push(match n {
                Item::Var(v) => TNode::Var(lhs.var_index(v)?),
                Item::Op(e) => TNode::Op(e),
            });
        }
        Some(Template { nodes })
    }

    /// Adds the template instantiated with `regs` to `g` (`ids` is scratch); its class.
    pub fn instantiate(&self, g: &mut KGraph, regs: &[Id; MAX_VARS], ids: &mut Vec<Id>) -> Id {
        ids.clear();
        for n in &self.nodes {
            let id = match n {
                TNode::Var(k) => regs[*k],
                TNode::Op(e) => {
                    let e = e.clone().map_children(|c| ids[usize::from(c)]);
                    g.add(e)
                }
            };
            ids.push(id);
        }
        *ids.last().expect("a non-empty template")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::{ENodeOrVar, PatternAst};

    /// The parser gives egg's own parse of the same text (the same nodes in the same order),
    /// however the text is spaced.
    #[test]
    fn patterns_parse_as_eggs_parser_does() {
        for (text, plain) in [
            ("(add (shl ?a ?b) ?c)", "(add (shl ?a ?b) ?c)"),
            ("  ( add(shl ?a ?b)\t?c )  ", "(add (shl ?a ?b) ?c)"),
            (
                "(add (mul ?a ?c) (mul ?b ?c))",
                "(add (mul ?a ?c) (mul ?b ?c))",
            ),
            ("(fma ?a ?b (neg ?c))", "(fma ?a ?b (neg ?c))"),
            ("(add ?a u32:5)", "(add ?a u32:5)"),
            ("(convert f32 ?x)", "(convert f32 ?x)"),
            ("(neg ?x)", "(neg ?x)"),
            ("?x", "?x"),
        ] {
            let mut ours = PatternAst::<Node>::default();
            for item in parse(text).expect("parses") {
                ours.add(match item {
                    Item::Var(v) => ENodeOrVar::Var(v.parse().expect("a variable")),
                    Item::Op(n) => ENodeOrVar::ENode(n),
                });
            }
            let eggs: PatternAst<Node> = plain.parse().expect("egg parses");
            assert_eq!(ours.as_ref(), eggs.as_ref(), "{text:?}");
        }
        for bad in [
            "(add ?a",
            "(add ?a ?b))",
            ")",
            "",
            "?",
            "(?a)",
            "((add ?a ?b))",
            "(add ?a ?b ?c)",
            "(frob ?a)",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }

    /// Left-hand sides bind variables in egg's order, and unsupported shapes are refused.
    #[test]
    fn left_hand_sides() {
        let l = Lhs::parse("(add (shl ?a ?b) ?c)").expect("supported");
        assert_eq!(l.root_slots.as_slice(), [Slot::Inner, Slot::Bind(0)]);
        assert_eq!(l.var_index("?c"), Some(0));
        assert_eq!(l.var_index("?a"), Some(1));
        assert_eq!(l.var_index("?d"), None);
        let s = Lhs::parse("(sub ?x ?x)").expect("supported");
        assert_eq!(s.root_slots.as_slice(), [Slot::Bind(0), Slot::Same(0)]);
        assert!(l.same_shape(&Lhs::parse("(add (shl ?p ?q) ?r)").expect("supported")));
        assert!(!l.same_shape(&Lhs::parse("(add (shl ?p ?p) ?r)").expect("supported")));
        for unsupported in [
            "?a",
            "(add (shl ?a ?b) (shl ?c ?d))",
            "(neg (neg (neg ?a)))",
            "(add ?a (neg ?a))",
            "(fma ?a ?b ?c (neg ?d))",
        ] {
            assert!(Lhs::parse(unsupported).is_none(), "{unsupported:?}");
        }
        assert!(Template::parse("(add ?a ?d)", &l).is_none());
    }
}
