//! Which global-memory indices may carry their element offset in the instruction's immediate.
//!
//! Takes the IR function; gives, per value, how large an immediate element offset may be added
//! to it as an index ([`offset_headroom`]), for [`super::Isel::global_address`].
//!
//! The IR's `v[x + k]` is element `(x + k) mod 2^32`. A raw buffer access checks
//! `VADDR + OFFSET` against the buffer's size without wrapping, so `VADDR = x·size` with the
//! immediate `k·size` reads 0 where the IR reads an element whenever `x + k` wraps: `x = -1`,
//! `k = 1` is element 0 in the IR and out of range on the device. (Piglit's "MUBUF negative
//! buffer offsets" test describes the hardware's check of a negative VADDR; LLVM folds an
//! immediate into a range-checked MUBUF address only when the base's sign bit is known zero,
//! and Triton converts to buffer operations only offsets it proves non-negative.)
//!
//! So the immediate takes `k` only when `x` is non-negative by construction: built from
//! work-item and workgroup ids and sizes, the lane id, buffer lengths, `u32` kernel arguments
//! and constants below 2^31 by adds, multiplies, left shifts, `or`, `xor`, selects and loop
//! parameters of such values (on the assumption, Triton's too, that this index arithmetic
//! stays below 2^31), or by operations whose result is below a non-negative operand whatever
//! the other is (`and` with such a mask, unsigned `min`, unsigned right shifts by at least 1,
//! unsigned division and remainder). A difference, a loaded value, a negative constant or an
//! `i32` argument is not: its offset is added into VADDR (one `v_add_u32`, wrapping as the IR
//! does). A masked-off index, `select(c, x, K)` with `K` within 2^20 below 2^32, keeps offsets
//! below `2^32 - K` in the immediate: neither the element nor the byte offset wraps there.
//!
//! Not handled: an index of magnitude 2^30 / size or more (`i32::MIN`, say) wraps as a 32-bit
//! byte offset and may land back in range, where the IR reads 0 (`docs/backend.md`).

use cranelift_entity::SecondaryMap;
use kjit_ir::{BinaryOp, Function, Inst, InstData, SpecialReg, TernaryOp, Type, Value, ValueDef};

/// A 32-bit integer constant below 2^31.
fn small_const(bits: u64, ty: Type) -> bool {
    word_int(ty) && bits < 1 << 31
}

/// How far above each global index an immediate element offset may reach: the offset `k` of
/// `v[x + k]` may go in the MUBUF immediate when `k < headroom[x]`. A value non-negative by
/// construction has 2^31; a masked-off index `select(c, x, K)` with a sentinel `K` near
/// `u32::MAX` (the GEMM's edge rows) has the least of its arms' (`2^32 - K` for the
/// constant, whose element and byte offset then stay past every buffer on both sides); anything
/// else 0.
pub(crate) fn offset_headroom(func: &Function) -> SecondaryMap<Value, u32> {
    let incoming = incoming_values(func);
    // Non-negative by construction: TOP, else 0.
    let entry_arg = |p: Value| {
        if func.value_type(p) == Type::U32 {
            TOP
        } else {
            0
        }
    };
    let nonneg = greatest_fixed_point(func, &incoming, entry_arg, |i, nn| {
        if result_non_negative(func, &func.insts[i], nn) {
            TOP
        } else {
            0
        }
    });
    greatest_fixed_point(func, &incoming, entry_arg, |i, room| match func.insts[i] {
        _ if func.results[i].first().is_some_and(|&v| nonneg[v] != 0) => TOP,
        InstData::Const { ty, bits } if word_int(ty) && bits >= (1 << 32) - (1 << 20) => {
            ((1u64 << 32) - bits) as u32
        }
        InstData::Select { args: [_, a, b] } => room[a].min(room[b]),
        InstData::Convert { to, arg } | InstData::Bitcast { to, arg }
            if word_int(to) && word_int(func.value_type(arg)) =>
        {
            room[arg]
        }
        _ => 0,
    })
}

/// The headroom of a value non-negative by construction (the assumed bound of index arithmetic).
const TOP: u32 = 1 << 31;

/// The incoming values of each block parameter, from every branch.
fn incoming_values(func: &Function) -> SecondaryMap<Value, Vec<Value>> {
    let mut incoming: SecondaryMap<Value, Vec<Value>> = SecondaryMap::new();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            let calls = match &func.insts[i] {
                InstData::Jump { dest } => vec![dest],
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } => vec![then_dest, else_dest],
                _ => continue,
            };
            for call in calls {
                for (&p, &a) in func.blocks[call.block].params.iter().zip(&call.args) {
                    incoming[p].push(a);
                }
            }
        }
    }
    incoming
}

/// The greatest fixed point of monotone `min`-like rules: every value starts at [`TOP`]; an
/// instruction's results take `rule` of the current map, an entry parameter `entry_arg`, a loop
/// parameter the least of its incoming values. Values only go down, to values the rules name, so
/// this ends.
fn greatest_fixed_point(
    func: &Function,
    incoming: &SecondaryMap<Value, Vec<Value>>,
    entry_arg: impl Fn(Value) -> u32,
    rule: impl Fn(Inst, &SecondaryMap<Value, u32>) -> u32,
) -> SecondaryMap<Value, u32> {
    let mut map: SecondaryMap<Value, u32> = SecondaryMap::with_default(TOP);
    let entry = func.layout.first().copied();
    loop {
        let mut changed = false;
        for &b in &func.layout {
            for &p in &func.blocks[b].params {
                let r = if Some(b) == entry {
                    entry_arg(p)
                } else {
                    incoming[p].iter().map(|&a| map[a]).min().unwrap_or(TOP)
                };
                if r < map[p] {
                    map[p] = r;
                    changed = true;
                }
            }
            for &i in &func.blocks[b].insts {
                let r = rule(i, &map);
                for &v in &func.results[i] {
                    if r < map[v] {
                        map[v] = r;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return map;
        }
    }
}

fn word_int(t: Type) -> bool {
    t.is_int() && t.bits() == 32
}

/// The rule for one instruction's (first) result, given what is known of its operands.
fn result_non_negative(
    func: &Function,
    data: &InstData,
    nonneg: &SecondaryMap<Value, u32>,
) -> bool {
    let nn = |v: Value| nonneg[v] != 0;
    let unsigned = |v: Value| func.value_type(v) == Type::U32;
    match *data {
        InstData::Const { ty, bits } => small_const(bits, ty),
        InstData::Special { reg } => matches!(
            reg,
            SpecialReg::WorkitemId(_)
                | SpecialReg::WorkgroupId(_)
                | SpecialReg::WorkgroupSize(_)
                | SpecialReg::NumWorkgroups(_)
                | SpecialReg::LaneId
        ),
        InstData::BufferLen { .. } => true,
        InstData::Binary { op, args: [a, b] } => match op {
            BinaryOp::Add | BinaryOp::Mul | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl => {
                nn(a) && nn(b)
            }
            BinaryOp::Max => nn(a) && nn(b),
            // Below a non-negative operand whatever the other is.
            BinaryOp::And => nn(a) || nn(b),
            BinaryOp::Min if unsigned(a) => nn(a) || nn(b),
            BinaryOp::Min => nn(a) && nn(b),
            // `x / 0` is all ones and `x % 0` is `x`: a divisor that may be 0 proves nothing.
            BinaryOp::Div if unsigned(a) => {
                (nn(a) && const_at_least(func, b, 1)) || const_at_least(func, b, 2)
            }
            BinaryOp::Div => nn(a) && const_at_least(func, b, 1),
            BinaryOp::Rem if unsigned(a) => nn(a) || const_at_least(func, b, 1),
            // The remainder has the dividend's sign.
            BinaryOp::Rem => nn(a),
            BinaryOp::Shr if unsigned(a) => nn(a) || shift_at_least_one(func, b),
            BinaryOp::Shr => nn(a),
            BinaryOp::Sub => false,
        },
        InstData::Ternary {
            op,
            args: [a, b, c],
        } => match op {
            TernaryOp::LshlAdd | TernaryOp::Add3 | TernaryOp::LshlOr => nn(a) && nn(b) && nn(c),
            TernaryOp::Fma => false,
        },
        InstData::Select { args: [_, a, b] } => nn(a) && nn(b),
        InstData::Convert { to, arg } | InstData::Bitcast { to, arg } => {
            word_int(func.value_type(arg)) && word_int(to) && nn(arg)
        }
        _ => false,
    }
}

/// Whether `v` is a constant in `min..2^31`.
fn const_at_least(func: &Function, v: Value, min: u64) -> bool {
    const_bits(func, v).is_some_and(|(ty, bits)| small_const(bits, ty) && bits >= min)
}

/// Whether `v` is a constant shift amount that is not 0 modulo 32.
fn shift_at_least_one(func: &Function, v: Value) -> bool {
    const_bits(func, v).is_some_and(|(_, bits)| bits & 31 != 0)
}

fn const_bits(func: &Function, v: Value) -> Option<(Type, u64)> {
    match func.values[v].def {
        ValueDef::Result(i, _) => match func.insts[i] {
            InstData::Const { ty, bits } => Some((ty, bits)),
            _ => None,
        },
        _ => None,
    }
}
