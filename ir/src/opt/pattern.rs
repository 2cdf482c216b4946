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
use egg::{ENodeOrVar, Id, Language, PatternAst, Var};

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
    root_slots: Vec<Slot>,
    inner: Option<(Node, Vec<Slot>)>,
    /// Variables in binding order (egg's substitution order for these shapes).
    vars: Vec<Var>,
}

impl Lhs {
    /// Parses a left-hand side; `None` if it is not of the supported shape.
    pub fn parse(text: &str) -> Option<Lhs> {
        Lhs::new(parse_pattern(text)?)
    }

    /// The position of variable `name` (`"?a"`) among the matched operands.
    pub fn var_index(&self, name: &str) -> Option<usize> {
        let v: Var = name.parse().ok()?;
        self.vars.iter().position(|w| *w == v)
    }

    /// A left-hand side from its pattern; `None` if it is not of the supported shape.
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

/// Binds or compares the operands `ch` against `slots`; false if a repeated variable differs.
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
                if g.find(c) != g.find(regs[k]) {
                    return false;
                }
            }
            Slot::Inner => *inner = Some(c),
        }
    }
    true
}

/// Parses a pattern such as `(add (shl ?a ?b) ?c)` into egg's form (nodes in post-order,
/// left to right, as egg's own parser orders them). A small parser of its own: egg's goes
/// through a general s-expression tree of strings and was most of the cost of building the
/// rule set, which the first compile in a process pays.
pub fn parse_pattern(text: &str) -> Option<PatternAst<Node>> {
    fn expr<'a>(
        t: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
        out: &mut PatternAst<Node>,
    ) -> Option<Id> {
        let tok = t.next()?;
        if tok == "(" {
            let op = t.next()?;
            let mut ch = Vec::new();
            while t.peek()? != &")" {
                ch.push(expr(t, out)?);
            }
            t.next();
            let n = <Node as egg::FromOp>::from_op(op, ch).ok()?;
            Some(out.add(ENodeOrVar::ENode(n)))
        } else if tok.starts_with('?') {
            Some(out.add(ENodeOrVar::Var(tok.parse().ok()?)))
        } else {
            let n = <Node as egg::FromOp>::from_op(tok, Vec::new()).ok()?;
            Some(out.add(ENodeOrVar::ENode(n)))
        }
    }
    let mut toks = tokens(text).peekable();
    let mut out = PatternAst::default();
    expr(&mut toks, &mut out)?;
    toks.next().is_none().then_some(out)
}

/// The tokens of a pattern: each parenthesis alone, and the runs of other non-space text
/// (slices of `text`: no spaced copy of it is made).
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        rest = rest.trim_start();
        let len = match rest.bytes().next()? {
            b'(' | b')' => 1,
            _ => rest
                .find(|c: char| c == '(' || c == ')' || c.is_whitespace())
                .unwrap_or(rest.len()),
        };
        let (tok, tail) = rest.split_at(len);
        rest = tail;
        Some(tok)
    })
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
        let ast = parse_pattern(text)?;
        let mut nodes = Vec::new();
        for n in ast.as_ref() {
            nodes.push(match n {
                ENodeOrVar::Var(v) => TNode::Var(lhs.vars.iter().position(|w| w == v)?),
                ENodeOrVar::ENode(e) => TNode::Op(e.clone()),
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

    /// The parser gives egg's own parse of the same text, however the text is spaced.
    #[test]
    fn patterns_parse_as_eggs_parser_does() {
        for (text, plain) in [
            ("(add (shl ?a ?b) ?c)", "(add (shl ?a ?b) ?c)"),
            ("  ( add(shl ?a ?b)\t?c )  ", "(add (shl ?a ?b) ?c)"),
            ("(neg ?x)", "(neg ?x)"),
            ("?x", "?x"),
        ] {
            let ours = parse_pattern(text).expect("parses");
            let eggs: PatternAst<Node> = plain.parse().expect("egg parses");
            assert_eq!(ours.to_string(), eggs.to_string(), "{text:?}");
        }
        for bad in ["(add ?a", "(add ?a ?b))", ")", ""] {
            assert!(parse_pattern(bad).is_none(), "{bad:?}");
        }
    }
}
