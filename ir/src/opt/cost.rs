//! The GCN cost model used to extract the cheapest form of each value.
//!
//! Costs are in issue cycles of one wave (64 lanes) on a gfx9 SIMD: a full-rate VALU op takes
//! 4 cycles (16 lanes per cycle), a quarter-rate one (`v_mul_lo_u32`, transcendentals) 16, a
//! SALU op 1. A value is computed on the SALU only when it is uniform and is an integer
//! operation (gfx9 has no scalar float ALU); a uniform value computed on the VALU would also
//! cost a VGPR for the whole wave, so uniform forms are preferred when they exist. Constants
//! that are not inline constants cost one extra dword of encoding per use. Costs saturate.

use super::lang::{KGraph, Node, NodeOp};
use crate::instructions::{BinaryOp, TernaryOp, UnaryOp};
use crate::semantics::float_value;
use crate::types::Type;
use egg::{CostFunction, Id, Language};

/// A cost: cycles, and whether the chosen form is divergent (ties prefer uniform forms).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Cost {
    /// Estimated issue cycles per wave, summed over the expression tree.
    pub cycles: u32,
    /// Whether the form needs VGPRs (depends on a divergent value).
    pub divergent: bool,
}

/// Extra cost of a literal (non-inline) constant operand: one more dword to fetch and issue.
pub const LITERAL: u32 = 1;

/// Whether `bits` of type `ty` is a gfx9 inline constant (free as an operand).
pub fn is_inline_constant(ty: Type, bits: u64) -> bool {
    if ty.is_float() {
        let x = float_value(ty, bits);
        return [0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0].contains(&x)
            || (ty == Type::F32 && bits == 0x3e22_f983);
    }
    if ty == Type::Bool {
        return true;
    }
    let v = if ty.is_signed() || ty.bits() == 32 {
        // Integers are matched as signed 32/64-bit values: -16..=64 are inline.
        let w = ty.bits();
        ((bits << (64 - w)) as i64) >> (64 - w)
    } else {
        bits as i64
    };
    (-16..=64).contains(&v)
}

/// Issue cycles of one operation on type `ty`, on the SALU when `scalar`.
pub fn op_cycles(op: NodeOp, ty: Type, scalar: bool) -> u32 {
    let wide = ty.bits() == 64;
    if ty.is_float() {
        // No scalar float ALU on gfx9: float ops are VALU whether uniform or not.
        let base = if wide { 8 } else { 4 };
        return match op {
            NodeOp::Unary(UnaryOp::Neg | UnaryOp::Abs) => 1, // usually a source modifier
            NodeOp::Unary(UnaryOp::Sqrt | UnaryOp::Rcp | UnaryOp::Rsqrt) => {
                if wide {
                    64
                } else {
                    16
                }
            }
            NodeOp::Unary(UnaryOp::Exp2 | UnaryOp::Log2) => {
                if wide {
                    160
                } else {
                    16
                }
            }
            NodeOp::Unary(UnaryOp::Sin | UnaryOp::Cos) => {
                if wide {
                    200
                } else {
                    20
                }
            }
            NodeOp::Binary(BinaryOp::Div) => {
                if wide {
                    120
                } else {
                    60
                }
            }
            NodeOp::Bitcast => 0,
            _ => base,
        };
    }
    let unit = if scalar { 1 } else { 4 };
    let halves = if wide { 2 } else { 1 };
    match op {
        NodeOp::Bitcast => 0,
        NodeOp::Binary(BinaryOp::Mul) => {
            if scalar {
                2 * halves * halves
            } else {
                16 * halves * halves
            }
        }
        NodeOp::Binary(BinaryOp::Div | BinaryOp::Rem) => {
            if scalar {
                40 * halves
            } else {
                120 * halves
            }
        }
        NodeOp::Ternary(TernaryOp::LshlAdd) => {
            if scalar {
                2
            } else {
                4
            }
        }
        NodeOp::Ternary(TernaryOp::Add3 | TernaryOp::LshlOr) => {
            if scalar {
                2
            } else {
                4
            }
        }
        NodeOp::Ternary(TernaryOp::Fma) => 4,
        NodeOp::Convert => {
            if scalar {
                2
            } else {
                4
            }
        }
        _ => unit * halves,
    }
}

/// The cost function: per node, the table above plus its children's costs.
pub struct GcnCost<'a> {
    /// The e-graph (for types, constants and uniformity of classes).
    pub egraph: &'a KGraph,
}

impl GcnCost<'_> {
    /// The cost of `enode` given its children's costs.
    pub fn node_cost(&self, enode: &Node, costs: impl FnMut(Id) -> Cost) -> Cost {
        let g = self.egraph;
        self.node_cost_with(enode, costs, |c| operand_info(g, c))
    }

    /// [`GcnCost::node_cost`] with each child's [`operand_info`] given by `info` (which a
    /// caller costing every node many times can precompute per class).
    pub fn node_cost_with(
        &self,
        enode: &Node,
        mut costs: impl FnMut(Id) -> Cost,
        info: impl Fn(Id) -> (Option<Type>, u32),
    ) -> Cost {
        let g = self.egraph;
        match enode {
            Node::Ty(_) | Node::Const(_) => Cost {
                cycles: 0,
                divergent: false,
            },
            Node::Leaf(l) => Cost {
                cycles: 0,
                divergent: !g.analysis.leaves[l.0 as usize].uniform,
            },
            _ => {
                let op = enode.op().expect("operation node");
                let mut divergent = false;
                let mut sum: u32 = 0;
                let mut literals = 0;
                let mut ty = None;
                for (i, c) in enode.children().iter().enumerate() {
                    let cc = costs(*c);
                    divergent |= cc.divergent;
                    sum = sum.saturating_add(cc.cycles);
                    let (cty, lits) = info(*c);
                    literals += lits;
                    if ty.is_none()
                        && !(i == 0
                            && matches!(op, NodeOp::Convert | NodeOp::Bitcast | NodeOp::Select))
                    {
                        ty = cty;
                    }
                }
                let ty = ty.unwrap_or(Type::U32);
                let scalar = !divergent && ty.is_int();
                // At least 1 per operation, so that costs grow strictly along every expression.
                let cycles = op_cycles(op, ty, scalar)
                    .max(1)
                    .saturating_add(literals * LITERAL)
                    .saturating_add(sum);
                Cost { cycles, divergent }
            }
        }
    }
}

/// A class as an operand: its type, and the literal dwords it costs (0 unless it is a
/// constant that is not an inline constant: 1, or 2 for 64-bit).
pub fn operand_info(g: &KGraph, c: Id) -> (Option<Type>, u32) {
    class_operand_info(&g[c].data)
}

/// [`operand_info`] of a class's data (for a caller that holds the class already).
pub fn class_operand_info(d: &super::lang::ClassData) -> (Option<Type>, u32) {
    let lits = match (d.ty, d.konst) {
        (Some(t), Some(k)) if !is_inline_constant(t, k) => {
            if t.bits() == 64 {
                2
            } else {
                1
            }
        }
        _ => 0,
    };
    (d.ty, lits)
}

impl CostFunction<Node> for GcnCost<'_> {
    type Cost = Cost;
    fn cost<C>(&mut self, enode: &Node, costs: C) -> Cost
    where
        C: FnMut(Id) -> Cost,
    {
        self.node_cost(enode, costs)
    }
}

/// A static estimate of a function's ALU issue cycles per wave: every pure instruction once,
/// costed by the table above (SALU when its result is uniform and integer), plus literal
/// operands. Loops are not weighted; it compares forms of one kernel, nothing more.
pub fn estimate_cycles(func: &crate::function::Function) -> u64 {
    estimate_cycles_with(func, &crate::uniformity::Uniformity::compute(func))
}

/// [`estimate_cycles`] with the uniformity of `func` already computed.
pub fn estimate_cycles_with(
    func: &crate::function::Function,
    u: &crate::uniformity::Uniformity,
) -> u64 {
    use crate::instructions::InstData;
    let mut literal: cranelift_entity::SecondaryMap<crate::entities::Value, bool> =
        cranelift_entity::SecondaryMap::new();
    let mut total = 0u64;
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            let d = &func.insts[i];
            if let InstData::Const { ty, bits } = d {
                literal[func.results[i][0]] = !is_inline_constant(*ty, *bits);
                continue;
            }
            let op = match d {
                InstData::Unary { op, .. } => NodeOp::Unary(*op),
                InstData::Binary { op, .. } => NodeOp::Binary(*op),
                InstData::Ternary { op, .. } => NodeOp::Ternary(*op),
                InstData::Cmp { op, .. } => NodeOp::Cmp(*op),
                InstData::Select { .. } => NodeOp::Select,
                InstData::Convert { .. } => NodeOp::Convert,
                InstData::Bitcast { .. } => NodeOp::Bitcast,
                _ => continue,
            };
            let args = d.args();
            let ty = match d {
                InstData::Select { args, .. } => func.values[args[1]].ty,
                _ => func.values[args[0]].ty,
            };
            let scalar = u.is_uniform(func.results[i][0]) && ty.is_int();
            let lits = args.iter().filter(|a| literal[**a]).count() as u64;
            total += op_cycles(op, ty, scalar).max(1) as u64 + lits * LITERAL as u64;
        }
    }
    total
}

/// Whether the result of `inst` is worth holding in a register across blocks rather than being
/// recomputed where it is used: a uniform value (an SGPR, of which kernels have plenty to
/// spare) or a constant (an immediate wherever it is used). A divergent value would hold a VGPR
/// where it was not live before: the loop passes ([`super::licm`], [`super::gvn`]) that moved or
/// shared divergent values took matmul from 37 to 53 VGPRs (39 when only the quarter-rate
/// `v_mul_lo_u32` results moved: two VGPRs for two multiplies per tile).
pub fn worth_keeping_live(
    func: &crate::function::Function,
    u: &crate::uniformity::Uniformity,
    inst: crate::entities::Inst,
) -> bool {
    matches!(
        func.insts[inst],
        crate::instructions::InstData::Const { .. }
    ) || func.results[inst].iter().all(|&r| u.is_uniform(r))
}
