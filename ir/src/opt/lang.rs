//! The e-graph language: one node per pure IR operation, typed through the analysis.
//!
//! Nodes carry no types; every e-class's type, constant value (constant folding through
//! [`crate::semantics`]), uniformity and availability are the [`ClassData`] of the
//! [`KernelAnalysis`]. Values the e-graph does not model (block parameters, loads, ids, values
//! of other blocks) enter as [`Node::Leaf`]s.

use crate::instructions::*;
use crate::semantics::*;
use crate::types::Type;
use egg::{DidMerge, Id, Language};
use std::fmt;
use std::str::FromStr;

/// A type as a node (the target of `convert` and `bitcast`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TyTag(pub Type);

impl fmt::Display for TyTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl FromStr for TyTag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Type::parse(s)
            .filter(|t| t.is_scalar())
            .map(TyTag)
            .ok_or_else(|| format!("not a type: {s}"))
    }
}
/// A typed constant: `u32:5` (the bits in decimal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConstVal {
    /// Type.
    pub ty: Type,
    /// Representation bits.
    pub bits: u64,
}

impl fmt::Display for ConstVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ty, self.bits)
    }
}
impl FromStr for ConstVal {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (t, b) = s.split_once(':').ok_or("no colon")?;
        let ty = Type::parse(t).ok_or("bad type")?;
        let bits = b.parse::<u64>().map_err(|_| "bad bits")?;
        Ok(ConstVal { ty, bits })
    }
}

/// A value from outside the e-graph, by index into [`KernelAnalysis::leaves`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeafId(pub u32);

impl fmt::Display for LeafId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leaf{}", self.0)
    }
}
impl FromStr for LeafId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.strip_prefix("leaf")
            .and_then(|n| n.parse().ok())
            .map(LeafId)
            .ok_or_else(|| "not a leaf".into())
    }
}

#[allow(missing_docs)]
mod language {
    use super::{ConstVal, LeafId, TyTag};
    use egg::{define_language, Id};
    define_language! {
        /// Pure operations of the IR, as e-graph nodes (the variants are named after the IR's
        /// operations; `Ty` is a type operand, `Const` a typed constant, `Leaf` an outside value).
        pub enum Node {
            "add" = Add([Id; 2]),
            "sub" = Sub([Id; 2]),
            "mul" = Mul([Id; 2]),
            "div" = Div([Id; 2]),
            "rem" = Rem([Id; 2]),
            "min" = Min([Id; 2]),
            "max" = Max([Id; 2]),
            "and" = And([Id; 2]),
            "or" = Or([Id; 2]),
            "xor" = Xor([Id; 2]),
            "shl" = Shl([Id; 2]),
            "shr" = Shr([Id; 2]),
            "neg" = Neg([Id; 1]),
            "not" = Not([Id; 1]),
            "abs" = Abs([Id; 1]),
            "sqrt" = Sqrt([Id; 1]),
            "rcp" = Rcp([Id; 1]),
            "exp2" = Exp2([Id; 1]),
            "log2" = Log2([Id; 1]),
            "sin" = Sin([Id; 1]),
            "cos" = Cos([Id; 1]),
            "floor" = Floor([Id; 1]),
            "ceil" = Ceil([Id; 1]),
            "trunc" = Trunc([Id; 1]),
            "round_even" = RoundEven([Id; 1]),
            "rsqrt" = Rsqrt([Id; 1]),
            "fma" = Fma([Id; 3]),
            "lshl_add" = LshlAdd([Id; 3]),
            "add3" = Add3([Id; 3]),
            "lshl_or" = LshlOr([Id; 3]),
            "select" = Select([Id; 3]),
            "eq" = Eq([Id; 2]),
            "ne" = Ne([Id; 2]),
            "lt" = Lt([Id; 2]),
            "le" = Le([Id; 2]),
            "gt" = Gt([Id; 2]),
            "ge" = Ge([Id; 2]),
            "convert" = Convert([Id; 2]),
            "bitcast" = Bitcast([Id; 2]),
            Ty(TyTag),
            Const(ConstVal),
            Leaf(LeafId),
        }
    }
}
pub use language::Node;

/// What an operation node is, in IR terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeOp {
    /// A unary operation.
    Unary(UnaryOp),
    /// A binary operation.
    Binary(BinaryOp),
    /// A ternary operation.
    Ternary(TernaryOp),
    /// A comparison.
    Cmp(CmpOp),
    /// select
    Select,
    /// convert (child 0 is the type)
    Convert,
    /// bitcast (child 0 is the type)
    Bitcast,
}

impl Node {
    /// The IR operation of an operation node (`None` for types, constants and leaves).
    pub fn op(&self) -> Option<NodeOp> {
        use Node::*;
        Some(match self {
            Add(_) => NodeOp::Binary(BinaryOp::Add),
            Sub(_) => NodeOp::Binary(BinaryOp::Sub),
            Mul(_) => NodeOp::Binary(BinaryOp::Mul),
            Div(_) => NodeOp::Binary(BinaryOp::Div),
            Rem(_) => NodeOp::Binary(BinaryOp::Rem),
            Min(_) => NodeOp::Binary(BinaryOp::Min),
            Max(_) => NodeOp::Binary(BinaryOp::Max),
            And(_) => NodeOp::Binary(BinaryOp::And),
            Or(_) => NodeOp::Binary(BinaryOp::Or),
            Xor(_) => NodeOp::Binary(BinaryOp::Xor),
            Shl(_) => NodeOp::Binary(BinaryOp::Shl),
            Shr(_) => NodeOp::Binary(BinaryOp::Shr),
            Neg(_) => NodeOp::Unary(UnaryOp::Neg),
            Not(_) => NodeOp::Unary(UnaryOp::Not),
            Abs(_) => NodeOp::Unary(UnaryOp::Abs),
            Sqrt(_) => NodeOp::Unary(UnaryOp::Sqrt),
            Rcp(_) => NodeOp::Unary(UnaryOp::Rcp),
            Exp2(_) => NodeOp::Unary(UnaryOp::Exp2),
            Log2(_) => NodeOp::Unary(UnaryOp::Log2),
            Sin(_) => NodeOp::Unary(UnaryOp::Sin),
            Cos(_) => NodeOp::Unary(UnaryOp::Cos),
            Floor(_) => NodeOp::Unary(UnaryOp::Floor),
            Ceil(_) => NodeOp::Unary(UnaryOp::Ceil),
            Trunc(_) => NodeOp::Unary(UnaryOp::Trunc),
            RoundEven(_) => NodeOp::Unary(UnaryOp::RoundEven),
            Rsqrt(_) => NodeOp::Unary(UnaryOp::Rsqrt),
            Fma(_) => NodeOp::Ternary(TernaryOp::Fma),
            LshlAdd(_) => NodeOp::Ternary(TernaryOp::LshlAdd),
            Add3(_) => NodeOp::Ternary(TernaryOp::Add3),
            LshlOr(_) => NodeOp::Ternary(TernaryOp::LshlOr),
            Select(_) => NodeOp::Select,
            Eq(_) => NodeOp::Cmp(CmpOp::Eq),
            Ne(_) => NodeOp::Cmp(CmpOp::Ne),
            Lt(_) => NodeOp::Cmp(CmpOp::Lt),
            Le(_) => NodeOp::Cmp(CmpOp::Le),
            Gt(_) => NodeOp::Cmp(CmpOp::Gt),
            Ge(_) => NodeOp::Cmp(CmpOp::Ge),
            Convert(_) => NodeOp::Convert,
            Bitcast(_) => NodeOp::Bitcast,
            Ty(_) | Const(_) | Leaf(_) => return None,
        })
    }

    /// The node for an IR operation with these children.
    pub fn from_op(op: NodeOp, c: &[Id]) -> Node {
        use Node::*;
        let two = || [c[0], c[1]];
        let three = || [c[0], c[1], c[2]];
        match op {
            NodeOp::Unary(u) => {
                let a = [c[0]];
                match u {
                    UnaryOp::Neg => Neg(a),
                    UnaryOp::Not => Not(a),
                    UnaryOp::Abs => Abs(a),
                    UnaryOp::Sqrt => Sqrt(a),
                    UnaryOp::Rcp => Rcp(a),
                    UnaryOp::Exp2 => Exp2(a),
                    UnaryOp::Log2 => Log2(a),
                    UnaryOp::Sin => Sin(a),
                    UnaryOp::Cos => Cos(a),
                    UnaryOp::Floor => Floor(a),
                    UnaryOp::Ceil => Ceil(a),
                    UnaryOp::Trunc => Trunc(a),
                    UnaryOp::RoundEven => RoundEven(a),
                    UnaryOp::Rsqrt => Rsqrt(a),
                }
            }
            NodeOp::Binary(b) => match b {
                BinaryOp::Add => Add(two()),
                BinaryOp::Sub => Sub(two()),
                BinaryOp::Mul => Mul(two()),
                BinaryOp::Div => Div(two()),
                BinaryOp::Rem => Rem(two()),
                BinaryOp::Min => Min(two()),
                BinaryOp::Max => Max(two()),
                BinaryOp::And => And(two()),
                BinaryOp::Or => Or(two()),
                BinaryOp::Xor => Xor(two()),
                BinaryOp::Shl => Shl(two()),
                BinaryOp::Shr => Shr(two()),
            },
            NodeOp::Ternary(t) => match t {
                TernaryOp::Fma => Fma(three()),
                TernaryOp::LshlAdd => LshlAdd(three()),
                TernaryOp::Add3 => Add3(three()),
                TernaryOp::LshlOr => LshlOr(three()),
            },
            NodeOp::Cmp(k) => match k {
                CmpOp::Eq => Eq(two()),
                CmpOp::Ne => Ne(two()),
                CmpOp::Lt => Lt(two()),
                CmpOp::Le => Le(two()),
                CmpOp::Gt => Gt(two()),
                CmpOp::Ge => Ge(two()),
            },
            NodeOp::Select => Select(three()),
            NodeOp::Convert => Convert(two()),
            NodeOp::Bitcast => Bitcast(two()),
        }
    }
}

/// A value entering the e-graph from outside.
#[derive(Clone, Copy, Debug)]
pub struct LeafInfo {
    /// The IR value.
    pub value: crate::entities::Value,
    /// Its type.
    pub ty: Type,
    /// Whether the uniformity analysis found it uniform.
    pub uniform: bool,
    /// Index of its defining instruction in the block, or -1 if defined before the block.
    pub pos: i64,
}

/// Per-class facts.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassData {
    /// The class's value type (`None` for type nodes).
    pub ty: Option<Type>,
    /// The constant value, when known.
    pub konst: Option<u64>,
    /// Whether some form of the value is the same in every lane.
    pub uniform: bool,
    /// The earliest instruction index after which some form of the value can be computed.
    pub avail: i64,
}

/// The analysis: types, constant folding, uniformity and availability.
#[derive(Default)]
pub struct KernelAnalysis {
    /// Leaves by [`LeafId`].
    pub leaves: Vec<LeafInfo>,
}

/// The e-graph type of the optimizer.
pub type KGraph = egg::EGraph<Node, KernelAnalysis>;

/// A `u32` leaf `k` (a value defined before the block) added to `g`, for the tests of the
/// passes over the e-graph.
#[cfg(test)]
pub(crate) fn test_leaf(g: &mut KGraph, k: u32, uniform: bool) -> Id {
    g.analysis.leaves.push(LeafInfo {
        value: crate::entities::Value::from_u32(k),
        ty: Type::U32,
        uniform,
        pos: -1,
    });
    g.add(Node::Leaf(LeafId(k)))
}

/// Folds an operation over constant children, with the interpreter's semantics.
pub fn fold(op: NodeOp, tys: &[Option<Type>], ks: &[Option<u64>], result_ty: Type) -> Option<u64> {
    Some(match op {
        NodeOp::Unary(u) => eval_unary(u, tys[0]?, ks[0]?),
        NodeOp::Binary(b) => eval_binary(b, tys[0]?, ks[0]?, ks[1]?),
        NodeOp::Ternary(t) => eval_ternary(t, tys[0]?, ks[0]?, ks[1]?, ks[2]?),
        NodeOp::Cmp(c) => eval_cmp(c, tys[0]?, ks[0]?, ks[1]?) as u64,
        NodeOp::Select => {
            if ks[0]? != 0 {
                ks[1]?
            } else {
                ks[2]?
            }
        }
        NodeOp::Convert => eval_convert(tys[1]?, result_ty, ks[1]?),
        NodeOp::Bitcast => ks[1]?,
    })
}

impl egg::Analysis<Node> for KernelAnalysis {
    type Data = ClassData;

    fn make(egraph: &mut KGraph, enode: &Node, _id: Id) -> ClassData {
        match enode {
            Node::Ty(_) => ClassData {
                ty: None,
                konst: None,
                uniform: true,
                avail: -1,
            },
            Node::Const(c) => ClassData {
                ty: Some(c.ty),
                konst: Some(c.bits),
                uniform: true,
                avail: -1,
            },
            Node::Leaf(l) => {
                let info = egraph.analysis.leaves[l.0 as usize];
                ClassData {
                    ty: Some(info.ty),
                    konst: None,
                    uniform: info.uniform,
                    avail: info.pos,
                }
            }
            _ => {
                let op = enode.op().expect("operation node");
                let ch = enode.children();
                // At most three operands: fixed arrays instead of vectors (this runs for
                // every node added).
                let mut tys: [Option<Type>; 3] = [None; 3];
                let mut ks: [Option<u64>; 3] = [None; 3];
                let mut uniform = true;
                let mut avail = -1;
                for (k, c) in ch.iter().enumerate() {
                    let d = &egraph[*c].data;
                    tys[k] = d.ty;
                    ks[k] = d.konst;
                    uniform &= d.uniform;
                    avail = avail.max(d.avail);
                }
                let (tys, ks) = (&tys[..ch.len()], &ks[..ch.len()]);
                let ty = match (op, enode) {
                    (NodeOp::Cmp(_), _) => Some(Type::Bool),
                    (NodeOp::Select, _) => tys[1],
                    (NodeOp::Convert | NodeOp::Bitcast, _) => match &egraph[ch[0]].nodes[0] {
                        Node::Ty(t) => Some(t.0),
                        _ => None,
                    },
                    _ => tys[0],
                };
                let konst = ty.and_then(|t| fold(op, tys, ks, t));
                ClassData {
                    ty,
                    konst,
                    uniform,
                    avail,
                }
            }
        }
    }

    fn merge(&mut self, a: &mut ClassData, b: ClassData) -> DidMerge {
        let before = a.clone();
        if a.konst.is_none() {
            a.konst = b.konst;
        }
        a.uniform |= b.uniform;
        a.avail = a.avail.min(b.avail);
        if a.ty.is_none() {
            a.ty = b.ty;
        }
        let changed_a = *a != before;
        let changed_b = *a != b;
        DidMerge(changed_a, changed_b)
    }

    /// A class with a known constant value is unioned with that constant's node, unless the
    /// node is in the class already. Then adding it would find this class (a node without
    /// children is in exactly one class, and its memo entry leads there) and the union would
    /// change nothing; egg calls this on every new class and every union, so the check, a scan
    /// of the class's few nodes, saves a hash lookup and a union on most calls with a constant.
    fn modify(egraph: &mut KGraph, id: Id) {
        let class = &egraph[id];
        if let (Some(bits), Some(ty)) = (class.data.konst, class.data.ty) {
            let node = Node::Const(ConstVal { ty, bits });
            if class.nodes.contains(&node) {
                return;
            }
            let c = egraph.add(node);
            egraph.union(id, c);
        }
    }
}
