//! The instruction set: operations, their operands, their memory effects and their typing rules.
//!
//! One [`InstData`] enum holds every instruction. Operands are visited through
//! [`InstData::args`]/[`InstData::map_args`], so passes never match on every variant to find the
//! values an instruction reads. [`InstData::result_types`] is the single typing rule used by the
//! builder (to create results), the verifier (to check them) and the parser.

use crate::entities::{Block, LdsArray, Value};
use crate::function::Function;
use crate::mfma::MfmaOp;
use crate::types::{FragType, Type};
use smallvec::{smallvec, SmallVec};
use std::fmt;

/// A launch dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Dim {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        }
    }
    /// The lowercase letter used in the text form.
    pub fn letter(self) -> char {
        ['x', 'y', 'z'][self.index()]
    }
    /// All three, in order.
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
}

/// Launch-defined values every lane can read. All are `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// Work-item id within the workgroup (divergent).
    WorkitemId(Dim),
    /// Workgroup id within the grid (uniform).
    WorkgroupId(Dim),
    /// Work-items per workgroup (uniform).
    WorkgroupSize(Dim),
    /// Workgroups in the grid (uniform).
    NumWorkgroups(Dim),
    /// Lane index within the wave, 0..64 (divergent).
    LaneId,
}

impl SpecialReg {
    /// Name in the text form.
    pub fn name(self) -> String {
        match self {
            SpecialReg::WorkitemId(d) => format!("workitem_id.{}", d.letter()),
            SpecialReg::WorkgroupId(d) => format!("workgroup_id.{}", d.letter()),
            SpecialReg::WorkgroupSize(d) => format!("workgroup_size.{}", d.letter()),
            SpecialReg::NumWorkgroups(d) => format!("num_workgroups.{}", d.letter()),
            SpecialReg::LaneId => "lane_id".to_string(),
        }
    }
}

/// One-operand arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Two's complement or sign flip.
    Neg,
    /// Bitwise (integers) or logical (bool) not.
    Not,
    /// Absolute value (integers wrap: `abs(MIN) == MIN`).
    Abs,
    /// Square root, correctly rounded.
    Sqrt,
    /// Reciprocal `1/x` (correctly rounded in the interpreter; 1 ulp on the hardware).
    Rcp,
    /// `2^x`.
    Exp2,
    /// `log2(x)`.
    Log2,
    /// Sine of radians.
    Sin,
    /// Cosine of radians.
    Cos,
    /// Largest integer not above `x` (exact).
    Floor,
    /// Smallest integer not below `x` (exact).
    Ceil,
    /// `x` rounded toward zero to an integer (exact).
    Trunc,
    /// `x` rounded to the nearest integer, ties to even (IEEE roundToIntegralTiesToEven; exact).
    RoundEven,
    /// `1/sqrt(x)` (correctly rounded in the interpreter; 1 ulp on the hardware).
    Rsqrt,
}

/// Two-operand arithmetic; both operands and the result have one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// Wrapping add / IEEE add.
    Add,
    /// Wrapping subtract / IEEE subtract.
    Sub,
    /// Wrapping multiply (low half) / IEEE multiply.
    Mul,
    /// Division (integers: toward zero, `x/0 = all ones`, `MIN/-1 = MIN`).
    Div,
    /// Remainder (integers: sign of the dividend, `x%0 = x`).
    Rem,
    /// Minimum (floats: IEEE minNum, `-0 < +0`).
    Min,
    /// Maximum (floats: IEEE maxNum, `-0 < +0`).
    Max,
    /// Bitwise/logical and.
    And,
    /// Bitwise/logical or.
    Or,
    /// Bitwise/logical xor.
    Xor,
    /// Shift left; the amount is taken modulo the bit width, as the hardware does.
    Shl,
    /// Shift right: arithmetic for signed types, logical for unsigned; amount modulo bit width.
    Shr,
}

/// Three-operand arithmetic. `Fma` is the float fused multiply-add; the others are the 32-bit
/// integer forms that the e-graph optimizer forms because gfx9 has one VALU instruction for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TernaryOp {
    /// `a*b + c` with one rounding (floats).
    Fma,
    /// `(a << b) + c` (`v_lshl_add_u32`), 32-bit integers.
    LshlAdd,
    /// `a + b + c` (`v_add3_u32`), 32-bit integers.
    Add3,
    /// `(a << b) | c` (`v_lshl_or_b32`), 32-bit integers.
    LshlOr,
}

/// Comparisons; the result is `bool`. Float comparisons are ordered (false on NaN) except
/// `Ne`, which is true when either side is NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// ==
    Eq,
    /// !=
    Ne,
    /// <
    Lt,
    /// <=
    Le,
    /// >
    Gt,
    /// >=
    Ge,
}

/// Read-modify-write operations on memory; all return the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Add (integers wrap; floats round).
    Add,
    /// Minimum (integers only).
    Min,
    /// Maximum (integers only).
    Max,
    /// Exchange.
    Xchg,
    /// Compare-exchange: operands are (expected, new); stores `new` if the old value equals
    /// `expected` bit for bit.
    Cas,
}

/// Operations combining all active lanes of a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers wrap; floats are summed in lane order).
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// Where a memory instruction points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mem {
    /// A global buffer: must be a buffer parameter of the kernel.
    Global(Value),
    /// A workgroup-memory array.
    Lds(LdsArray),
}

/// A branch target with its arguments, which become the target block's parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockCall {
    /// Target block.
    pub block: Block,
    /// One value per target parameter.
    pub args: SmallVec<[Value; 4]>,
}

impl BlockCall {
    /// A call with arguments.
    pub fn new(block: Block, args: &[Value]) -> Self {
        BlockCall {
            block,
            args: args.into(),
        }
    }
}

/// One instruction.
///
/// Memory addressing, for loads, stores and atomics alike: the element index is
/// `(index + offset) mod 2^32` (index is a 32-bit integer, offset an immediate in elements); an
/// access is in range when that index is below the buffer's length (or the LDS array's size).
/// Out-of-range global loads give 0 and out-of-range global stores and atomics do nothing (atomics
/// return 0), as raw buffer descriptors do; an out-of-range LDS access is an error in the
/// interpreter. Vector accesses (`width` 2 or 4) check every element separately.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InstData {
    /// A constant; `bits` holds the value zero-extended from the type's width.
    Const {
        /// Type of the constant.
        ty: Type,
        /// Representation bits.
        bits: u64,
    },
    /// A launch-defined value (`u32`).
    Special {
        /// Which one.
        reg: SpecialReg,
    },
    /// One-operand arithmetic.
    Unary {
        /// Operation.
        op: UnaryOp,
        /// Operand.
        arg: Value,
    },
    /// Two-operand arithmetic.
    Binary {
        /// Operation.
        op: BinaryOp,
        /// Operands.
        args: [Value; 2],
    },
    /// Three-operand arithmetic.
    Ternary {
        /// Operation.
        op: TernaryOp,
        /// Operands.
        args: [Value; 3],
    },
    /// A comparison giving `bool`.
    Cmp {
        /// Condition.
        op: CmpOp,
        /// Operands, of one scalar type.
        args: [Value; 2],
    },
    /// `args[0] ? args[1] : args[2]`, per lane.
    Select {
        /// Condition, if-true, if-false.
        args: [Value; 3],
    },
    /// A value conversion (int↔int by the source's signedness, float→int toward zero with
    /// saturation and NaN→0, int→float and float→float to nearest, bool↔number as 0/1).
    Convert {
        /// Target type.
        to: Type,
        /// Operand.
        arg: Value,
    },
    /// Reinterpretation of the bits in a type of the same width.
    Bitcast {
        /// Target type.
        to: Type,
        /// Operand.
        arg: Value,
    },
    /// A buffer's length in elements (`u32`).
    BufferLen {
        /// A buffer parameter.
        buf: Value,
    },
    /// Loads `width` consecutive elements; one result per element.
    Load {
        /// Buffer or LDS array.
        mem: Mem,
        /// Element index (i32 or u32).
        index: Value,
        /// Immediate element offset.
        offset: u32,
        /// 1, 2 or 4.
        width: u8,
    },
    /// Stores consecutive elements.
    Store {
        /// Buffer or LDS array.
        mem: Mem,
        /// Element index (i32 or u32).
        index: Value,
        /// Immediate element offset.
        offset: u32,
        /// 1, 2 or 4 values of the element type.
        values: SmallVec<[Value; 4]>,
    },
    /// An atomic read-modify-write; returns the old value.
    Atomic {
        /// Operation.
        op: AtomicOp,
        /// Buffer or LDS array.
        mem: Mem,
        /// Element index (i32 or u32).
        index: Value,
        /// Immediate element offset.
        offset: u32,
        /// One operand, or (expected, new) for `Cas`.
        args: SmallVec<[Value; 2]>,
    },
    /// Workgroup barrier: every wave of the workgroup waits here; memory (global and LDS) written
    /// before it is visible to the workgroup after it. Only in uniform control flow.
    Barrier,
    /// `args[0]` as seen in lane `args[1] mod 64` (a `u32`); 0 if that lane is inactive.
    WaveShuffle {
        /// Value and source lane.
        args: [Value; 2],
    },
    /// `arg` as seen in lane `lane`; uniform. Reading an inactive lane gives 0.
    WaveBroadcast {
        /// Value.
        arg: Value,
        /// Lane 0..64.
        lane: u8,
    },
    /// Reduction over the active lanes; uniform.
    WaveReduce {
        /// Operation.
        op: ReduceOp,
        /// Value.
        arg: Value,
    },
    /// Inclusive prefix over the active lanes in lane order.
    WaveScan {
        /// Operation.
        op: ReduceOp,
        /// Value.
        arg: Value,
    },
    /// Loads a matrix fragment: `ty.len` consecutive elements from element `index + offset` of
    /// memory holding `ty.elem`'s carrier type (`f16` for bf16), packed. `index + offset` must be
    /// a multiple of `ty.len` (an error otherwise). Global memory is read by dwords: an element
    /// reads 0 unless every element of its dword is in range.
    FragLoad {
        /// Buffer or LDS array.
        mem: Mem,
        /// Element index (i32 or u32).
        index: Value,
        /// Immediate element offset.
        offset: u32,
        /// The fragment type loaded.
        ty: FragType,
    },
    /// Stores a fragment's elements consecutively from `index + offset` (a multiple of its
    /// length); global stores are dropped by dwords as loads read them.
    FragStore {
        /// Buffer or LDS array.
        mem: Mem,
        /// Element index (i32 or u32).
        index: Value,
        /// Immediate element offset.
        offset: u32,
        /// The fragment.
        value: Value,
    },
    /// A fragment from `ty.len` values of the element's carrier type, element 0 first.
    FragBuild {
        /// The fragment type built.
        ty: FragType,
        /// One value per element.
        args: SmallVec<[Value; 4]>,
    },
    /// Element `item` of a fragment, as its carrier type.
    FragExtract {
        /// The fragment.
        arg: Value,
        /// Element index.
        item: u8,
    },
    /// `D = A·B + C` for the whole wave (`docs/mfma.md`): every lane of the wave must be
    /// active, so only in uniform control flow.
    Mfma {
        /// The operation (shape and types).
        op: MfmaOp,
        /// A, B, C.
        args: [Value; 3],
    },
    /// Unconditional branch.
    Jump {
        /// Target.
        dest: BlockCall,
    },
    /// Two-way branch on a bool.
    Brif {
        /// Condition.
        cond: Value,
        /// Taken when true.
        then_dest: BlockCall,
        /// Taken when false.
        else_dest: BlockCall,
    },
    /// Ends the lane's execution of the kernel.
    Return,
}

/// What an instruction does to memory and to the other lanes, for schedulers and the optimizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Reads global memory.
    pub reads_global: bool,
    /// Writes global memory.
    pub writes_global: bool,
    /// Reads LDS.
    pub reads_lds: bool,
    /// Writes LDS.
    pub writes_lds: bool,
    /// Synchronizes or exchanges data with other lanes or waves (barrier, wave ops).
    pub cross_lane: bool,
    /// Transfers control.
    pub terminator: bool,
}

impl Effects {
    /// No memory, cross-lane or control effect: the result depends only on the operands.
    pub fn is_pure(&self) -> bool {
        *self == Effects::default()
    }
}

impl InstData {
    /// The values this instruction reads, in operand order.
    pub fn args(&self) -> SmallVec<[Value; 4]> {
        let mut v = SmallVec::new();
        self.for_each_arg(|x| v.push(x));
        v
    }

    /// Calls `f` on every value operand, in operand order (branch arguments included).
    pub fn for_each_arg(&self, mut f: impl FnMut(Value)) {
        let mem = |m: &Mem, f: &mut dyn FnMut(Value)| {
            if let Mem::Global(b) = m {
                f(*b)
            }
        };
        match self {
            InstData::Const { .. }
            | InstData::Special { .. }
            | InstData::Barrier
            | InstData::Return => {}
            InstData::Unary { arg, .. }
            | InstData::Convert { arg, .. }
            | InstData::Bitcast { arg, .. }
            | InstData::WaveBroadcast { arg, .. }
            | InstData::WaveReduce { arg, .. }
            | InstData::WaveScan { arg, .. } => f(*arg),
            InstData::BufferLen { buf } => f(*buf),
            InstData::FragExtract { arg, .. } => f(*arg),
            InstData::Binary { args, .. }
            | InstData::Cmp { args, .. }
            | InstData::WaveShuffle { args } => args.iter().for_each(|a| f(*a)),
            InstData::Ternary { args, .. }
            | InstData::Select { args }
            | InstData::Mfma { args, .. } => args.iter().for_each(|a| f(*a)),
            InstData::FragBuild { args, .. } => args.iter().for_each(|a| f(*a)),
            InstData::Load { mem: m, index, .. } | InstData::FragLoad { mem: m, index, .. } => {
                mem(m, &mut f);
                f(*index)
            }
            InstData::FragStore {
                mem: m,
                index,
                value,
                ..
            } => {
                mem(m, &mut f);
                f(*index);
                f(*value)
            }
            InstData::Store {
                mem: m,
                index,
                values,
                ..
            } => {
                mem(m, &mut f);
                f(*index);
                values.iter().for_each(|a| f(*a))
            }
            InstData::Atomic {
                mem: m,
                index,
                args,
                ..
            } => {
                mem(m, &mut f);
                f(*index);
                args.iter().for_each(|a| f(*a))
            }
            InstData::Jump { dest } => dest.args.iter().for_each(|a| f(*a)),
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                f(*cond);
                then_dest.args.iter().for_each(|a| f(*a));
                else_dest.args.iter().for_each(|a| f(*a));
            }
        }
    }

    /// Replaces every value operand by `f(operand)`, in the order of [`InstData::for_each_arg`].
    pub fn map_args(&mut self, mut f: impl FnMut(Value) -> Value) {
        fn mem(m: &mut Mem, f: &mut dyn FnMut(Value) -> Value) {
            if let Mem::Global(b) = m {
                *b = f(*b)
            }
        }
        match self {
            InstData::Const { .. }
            | InstData::Special { .. }
            | InstData::Barrier
            | InstData::Return => {}
            InstData::Unary { arg, .. }
            | InstData::Convert { arg, .. }
            | InstData::Bitcast { arg, .. }
            | InstData::WaveBroadcast { arg, .. }
            | InstData::WaveReduce { arg, .. }
            | InstData::WaveScan { arg, .. } => *arg = f(*arg),
            InstData::BufferLen { buf } => *buf = f(*buf),
            InstData::FragExtract { arg, .. } => *arg = f(*arg),
            InstData::Binary { args, .. }
            | InstData::Cmp { args, .. }
            | InstData::WaveShuffle { args } => args.iter_mut().for_each(|a| *a = f(*a)),
            InstData::Ternary { args, .. }
            | InstData::Select { args }
            | InstData::Mfma { args, .. } => args.iter_mut().for_each(|a| *a = f(*a)),
            InstData::FragBuild { args, .. } => args.iter_mut().for_each(|a| *a = f(*a)),
            InstData::FragStore {
                mem: m,
                index,
                value,
                ..
            } => {
                mem(m, &mut f);
                *index = f(*index);
                *value = f(*value)
            }
            InstData::Load { mem: m, index, .. } | InstData::FragLoad { mem: m, index, .. } => {
                mem(m, &mut f);
                *index = f(*index)
            }
            InstData::Store {
                mem: m,
                index,
                values,
                ..
            } => {
                mem(m, &mut f);
                *index = f(*index);
                values.iter_mut().for_each(|a| *a = f(*a))
            }
            InstData::Atomic {
                mem: m,
                index,
                args,
                ..
            } => {
                mem(m, &mut f);
                *index = f(*index);
                args.iter_mut().for_each(|a| *a = f(*a))
            }
            InstData::Jump { dest } => dest.args.iter_mut().for_each(|a| *a = f(*a)),
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                *cond = f(*cond);
                then_dest.args.iter_mut().for_each(|a| *a = f(*a));
                else_dest.args.iter_mut().for_each(|a| *a = f(*a));
            }
        }
    }

    /// Branch targets of a terminator (empty for other instructions).
    pub fn branch_targets(&self) -> SmallVec<[&BlockCall; 2]> {
        match self {
            InstData::Jump { dest } => smallvec![dest],
            InstData::Brif {
                then_dest,
                else_dest,
                ..
            } => smallvec![then_dest, else_dest],
            _ => SmallVec::new(),
        }
    }

    /// Mutable branch targets of a terminator.
    pub fn branch_targets_mut(&mut self) -> SmallVec<[&mut BlockCall; 2]> {
        match self {
            InstData::Jump { dest } => smallvec![dest],
            InstData::Brif {
                then_dest,
                else_dest,
                ..
            } => smallvec![then_dest, else_dest],
            _ => SmallVec::new(),
        }
    }

    /// Whether the instruction ends a block.
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            InstData::Jump { .. } | InstData::Brif { .. } | InstData::Return
        )
    }

    /// The instruction's memory, cross-lane and control effects.
    pub fn effects(&self) -> Effects {
        let mut e = Effects::default();
        match self {
            InstData::Load { mem, .. } | InstData::FragLoad { mem, .. } => match mem {
                Mem::Global(_) => e.reads_global = true,
                Mem::Lds(_) => e.reads_lds = true,
            },
            InstData::Store { mem, .. } | InstData::FragStore { mem, .. } => match mem {
                Mem::Global(_) => e.writes_global = true,
                Mem::Lds(_) => e.writes_lds = true,
            },
            InstData::Atomic { mem, .. } => match mem {
                Mem::Global(_) => {
                    e.reads_global = true;
                    e.writes_global = true
                }
                Mem::Lds(_) => {
                    e.reads_lds = true;
                    e.writes_lds = true
                }
            },
            InstData::Barrier => {
                e.cross_lane = true;
                e.reads_global = true;
                e.writes_global = true;
                e.reads_lds = true;
                e.writes_lds = true;
            }
            InstData::WaveShuffle { .. }
            | InstData::WaveBroadcast { .. }
            | InstData::WaveReduce { .. }
            | InstData::WaveScan { .. }
            | InstData::Mfma { .. } => e.cross_lane = true,
            InstData::Jump { .. } | InstData::Brif { .. } | InstData::Return => e.terminator = true,
            _ => {}
        }
        e
    }

    /// The opcode's name in the text form (without type or width suffixes).
    pub fn opcode_name(&self) -> String {
        match self {
            InstData::Const { ty, .. } => format!("const.{ty}"),
            InstData::Special { reg } => reg.name(),
            InstData::Unary { op, .. } => unary_name(*op).to_string(),
            InstData::Binary { op, .. } => binary_name(*op).to_string(),
            InstData::Ternary { op, .. } => ternary_name(*op).to_string(),
            InstData::Cmp { op, .. } => cmp_name(*op).to_string(),
            InstData::Select { .. } => "select".into(),
            InstData::Convert { .. } => "convert".into(),
            InstData::Bitcast { .. } => "bitcast".into(),
            InstData::BufferLen { .. } => "buffer_len".into(),
            InstData::Load { width, .. } => width_suffix("load", *width),
            InstData::Store { values, .. } => width_suffix("store", values.len() as u8),
            InstData::Atomic { op, .. } => atomic_name(*op).to_string(),
            InstData::Barrier => "barrier".into(),
            InstData::WaveShuffle { .. } => "wave_shuffle".into(),
            InstData::WaveBroadcast { .. } => "wave_broadcast".into(),
            InstData::WaveReduce { op, .. } => format!("wave_reduce.{}", reduce_name(*op)),
            InstData::WaveScan { op, .. } => format!("wave_scan.{}", reduce_name(*op)),
            InstData::FragLoad { ty, .. } => format!("frag_load.{ty}"),
            InstData::FragStore { .. } => "frag_store".into(),
            InstData::FragBuild { ty, .. } => format!("frag_build.{ty}"),
            InstData::FragExtract { .. } => "frag_extract".into(),
            InstData::Mfma { op, .. } => format!("mfma.{op}"),
            InstData::Jump { .. } => "jump".into(),
            InstData::Brif { .. } => "brif".into(),
            InstData::Return => "return".into(),
        }
    }

    /// Checks operand types and gives the result types. This is the IR's one typing rule.
    pub fn result_types(&self, func: &Function) -> Result<SmallVec<[Type; 4]>, String> {
        let ty = |v: Value| -> Result<Type, String> {
            func.values
                .get(v)
                .map(|d| d.ty)
                .ok_or_else(|| format!("{v} does not exist"))
        };
        let scalar = |v: Value| -> Result<Type, String> {
            let t = ty(v)?;
            if t.is_scalar() {
                Ok(t)
            } else {
                Err(format!("{v} is {t}; a scalar is needed"))
            }
        };
        let same = |a: Value, b: Value, what: &str| -> Result<Type, String> {
            let (ta, tb) = (scalar(a)?, scalar(b)?);
            if ta != tb {
                Err(format!(
                    "{what}: operand types differ ({a}: {ta}, {b}: {tb})"
                ))
            } else {
                Ok(ta)
            }
        };
        let index_ty = |v: Value| -> Result<(), String> {
            match ty(v)? {
                Type::I32 | Type::U32 => Ok(()),
                t => Err(format!("memory index {v} is {t}; it must be i32 or u32")),
            }
        };
        let mem_elem = |m: &Mem, write: bool| -> Result<Type, String> {
            match m {
                Mem::Global(b) => match ty(*b)? {
                    Type::Buffer { elem, writable } => {
                        if write && !writable {
                            Err(format!("{b} is a read-only buffer; it cannot be written"))
                        } else {
                            Ok(elem.ty())
                        }
                    }
                    t => Err(format!("{b} is {t}, not a buffer")),
                },
                Mem::Lds(a) => func
                    .lds
                    .get(*a)
                    .map(|d| d.elem.ty())
                    .ok_or_else(|| format!("{a} does not exist")),
            }
        };
        let one = |t: Type| -> SmallVec<[Type; 4]> { smallvec![t] };
        Ok(match self {
            InstData::Const { ty: t, bits } => {
                if !t.is_scalar() {
                    return Err("a constant must be a scalar".into());
                }
                if bits & !t.mask() != 0 {
                    return Err(format!("constant bits {bits:#x} do not fit {t}"));
                }
                one(*t)
            }
            InstData::Special { .. } => one(Type::U32),
            InstData::Unary { op, arg } => {
                let t = scalar(*arg)?;
                let ok = match op {
                    UnaryOp::Neg | UnaryOp::Abs => t.is_int() || t.is_float(),
                    UnaryOp::Not => t.is_int() || t == Type::Bool,
                    _ => t.is_float(),
                };
                if !ok {
                    return Err(format!("{} is not defined on {t}", unary_name(*op)));
                }
                one(t)
            }
            InstData::Binary { op, args } => {
                let t = same(args[0], args[1], binary_name(*op))?;
                let ok = match op {
                    BinaryOp::Add
                    | BinaryOp::Sub
                    | BinaryOp::Mul
                    | BinaryOp::Div
                    | BinaryOp::Min
                    | BinaryOp::Max => t.is_int() || t.is_float(),
                    BinaryOp::Rem | BinaryOp::Shl | BinaryOp::Shr => t.is_int(),
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => t.is_int() || t == Type::Bool,
                };
                if !ok {
                    return Err(format!("{} is not defined on {t}", binary_name(*op)));
                }
                one(t)
            }
            InstData::Ternary { op, args } => {
                let t = same(args[0], args[1], ternary_name(*op))?;
                let t2 = same(args[1], args[2], ternary_name(*op))?;
                debug_assert_eq!(t, t2);
                let ok = match op {
                    TernaryOp::Fma => t.is_float(),
                    _ => matches!(t, Type::I32 | Type::U32),
                };
                if !ok {
                    return Err(format!("{} is not defined on {t}", ternary_name(*op)));
                }
                one(t)
            }
            InstData::Cmp { op, args } => {
                let t = same(args[0], args[1], cmp_name(*op))?;
                if t == Type::Bool && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    return Err(format!("{} is not defined on bool", cmp_name(*op)));
                }
                one(Type::Bool)
            }
            InstData::Select { args } => {
                if scalar(args[0])? != Type::Bool {
                    return Err(format!("select condition {} is not bool", args[0]));
                }
                one(same(args[1], args[2], "select")?)
            }
            InstData::Convert { to, arg } => {
                scalar(*arg)?;
                if !to.is_scalar() {
                    return Err(format!("cannot convert to {to}"));
                }
                one(*to)
            }
            InstData::Bitcast { to, arg } => {
                let t = scalar(*arg)?;
                if !to.is_scalar() || t.bits() != to.bits() || t == Type::Bool || *to == Type::Bool
                {
                    return Err(format!("cannot bitcast {t} to {to}: widths differ or bool"));
                }
                one(*to)
            }
            InstData::BufferLen { buf } => {
                if !matches!(ty(*buf)?, Type::Buffer { .. }) {
                    return Err(format!("buffer_len of {buf}, which is not a buffer"));
                }
                one(Type::U32)
            }
            InstData::Load {
                mem, index, width, ..
            } => {
                check_width(*width)?;
                index_ty(*index)?;
                let e = mem_elem(mem, false)?;
                (0..*width).map(|_| e).collect()
            }
            InstData::Store {
                mem, index, values, ..
            } => {
                check_width(values.len() as u8)?;
                index_ty(*index)?;
                let e = mem_elem(mem, true)?;
                for v in values {
                    let t = ty(*v)?;
                    if t != e {
                        return Err(format!("stored value {v} is {t}; the memory holds {e}"));
                    }
                }
                SmallVec::new()
            }
            InstData::Atomic {
                op,
                mem,
                index,
                args,
                ..
            } => {
                index_ty(*index)?;
                let e = mem_elem(mem, true)?;
                let n = if *op == AtomicOp::Cas { 2 } else { 1 };
                if args.len() != n {
                    return Err(format!("{} takes {n} value operand(s)", atomic_name(*op)));
                }
                for v in args {
                    let t = ty(*v)?;
                    if t != e {
                        return Err(format!("atomic operand {v} is {t}; the memory holds {e}"));
                    }
                }
                if matches!(op, AtomicOp::Min | AtomicOp::Max) && !e.is_int() {
                    return Err(format!(
                        "{} needs integer memory, not {e}",
                        atomic_name(*op)
                    ));
                }
                if *op == AtomicOp::Add && e == Type::F16 {
                    return Err("atomic_add on f16 is not supported".into());
                }
                one(e)
            }
            InstData::Barrier | InstData::Return => SmallVec::new(),
            InstData::WaveShuffle { args } => {
                let t = scalar(args[0])?;
                if ty(args[1])? != Type::U32 {
                    return Err(format!("wave_shuffle lane {} must be u32", args[1]));
                }
                one(t)
            }
            InstData::WaveBroadcast { arg, lane } => {
                if *lane >= 64 {
                    return Err(format!("wave_broadcast lane {lane} is not below 64"));
                }
                one(scalar(*arg)?)
            }
            InstData::WaveReduce { arg, .. } | InstData::WaveScan { arg, .. } => {
                let t = scalar(*arg)?;
                if !(t.is_int() || t.is_float()) {
                    return Err(format!("wave reductions need a number, not {t}"));
                }
                one(t)
            }
            InstData::FragLoad {
                mem, index, ty: f, ..
            } => {
                index_ty(*index)?;
                check_frag(*f)?;
                let e = mem_elem(mem, false)?;
                if e != f.elem.carrier() {
                    return Err(format!(
                        "a {f} fragment is loaded from {} memory, not {e}",
                        f.elem.carrier()
                    ));
                }
                one(Type::Frag(*f))
            }
            InstData::FragStore {
                mem, index, value, ..
            } => {
                index_ty(*index)?;
                let e = mem_elem(mem, true)?;
                let Type::Frag(f) = ty(*value)? else {
                    return Err(format!("frag_store of {value}, which is not a fragment"));
                };
                if e != f.elem.carrier() {
                    return Err(format!(
                        "a {f} fragment is stored to {} memory, not {e}",
                        f.elem.carrier()
                    ));
                }
                SmallVec::new()
            }
            InstData::FragBuild { ty: f, args } => {
                check_frag(*f)?;
                if args.len() != f.len as usize {
                    return Err(format!(
                        "frag_build.{f} takes {} values, not {}",
                        f.len,
                        args.len()
                    ));
                }
                for v in args {
                    let t = ty(*v)?;
                    if t != f.elem.carrier() {
                        return Err(format!(
                            "frag_build.{f}: {v} is {t}, not {}",
                            f.elem.carrier()
                        ));
                    }
                }
                one(Type::Frag(*f))
            }
            InstData::FragExtract { arg, item } => {
                let Type::Frag(f) = ty(*arg)? else {
                    return Err(format!("frag_extract of {arg}, which is not a fragment"));
                };
                if *item >= f.len {
                    return Err(format!("frag_extract item {item} of a {f} fragment"));
                }
                one(f.elem.carrier())
            }
            InstData::Mfma { op, args } => {
                let want = [op.input_type(), op.input_type(), op.acc_type()];
                for (k, (v, w)) in args.iter().zip(want).enumerate() {
                    let t = ty(*v)?;
                    if t != w {
                        return Err(format!(
                            "mfma.{op}: {} operand {v} is {t}; it must be {w}",
                            ["A", "B", "C"][k]
                        ));
                    }
                }
                one(op.acc_type())
            }
            InstData::Jump { .. } => SmallVec::new(),
            InstData::Brif { cond, .. } => {
                if ty(*cond)? != Type::Bool {
                    return Err(format!("brif condition {cond} is not bool"));
                }
                SmallVec::new()
            }
        })
    }
}

fn check_width(w: u8) -> Result<(), String> {
    if matches!(w, 1 | 2 | 4) {
        Ok(())
    } else {
        Err(format!("vector width {w} is not 1, 2 or 4"))
    }
}

/// Fragments hold 1 to 32 elements, a power of two.
fn check_frag(f: FragType) -> Result<(), String> {
    if f.len == 0 || f.len > 32 || !f.len.is_power_of_two() {
        return Err(format!(
            "fragment length {} is not a power of two up to 32",
            f.len
        ));
    }
    Ok(())
}

fn width_suffix(base: &str, w: u8) -> String {
    if w == 1 {
        base.to_string()
    } else {
        format!("{base}.x{w}")
    }
}

/// Text name of a unary operation.
pub fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Not => "not",
        UnaryOp::Abs => "abs",
        UnaryOp::Sqrt => "sqrt",
        UnaryOp::Rcp => "rcp",
        UnaryOp::Exp2 => "exp2",
        UnaryOp::Log2 => "log2",
        UnaryOp::Sin => "sin",
        UnaryOp::Cos => "cos",
        UnaryOp::Floor => "floor",
        UnaryOp::Ceil => "ceil",
        UnaryOp::Trunc => "trunc",
        UnaryOp::RoundEven => "round_even",
        UnaryOp::Rsqrt => "rsqrt",
    }
}

/// Text name of a binary operation.
pub fn binary_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Div => "div",
        BinaryOp::Rem => "rem",
        BinaryOp::Min => "min",
        BinaryOp::Max => "max",
        BinaryOp::And => "and",
        BinaryOp::Or => "or",
        BinaryOp::Xor => "xor",
        BinaryOp::Shl => "shl",
        BinaryOp::Shr => "shr",
    }
}

/// Text name of a ternary operation.
pub fn ternary_name(op: TernaryOp) -> &'static str {
    match op {
        TernaryOp::Fma => "fma",
        TernaryOp::LshlAdd => "lshl_add",
        TernaryOp::Add3 => "add3",
        TernaryOp::LshlOr => "lshl_or",
    }
}

/// Text name of a comparison.
pub fn cmp_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
    }
}

/// Text name of an atomic operation.
pub fn atomic_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "atomic_add",
        AtomicOp::Min => "atomic_min",
        AtomicOp::Max => "atomic_max",
        AtomicOp::Xchg => "atomic_xchg",
        AtomicOp::Cas => "atomic_cas",
    }
}

/// Text name of a wave reduction.
pub fn reduce_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Add => "add",
        ReduceOp::Min => "min",
        ReduceOp::Max => "max",
    }
}

/// All unary operations (for parsers and generators).
pub const UNARY_OPS: [UnaryOp; 14] = [
    UnaryOp::Neg,
    UnaryOp::Not,
    UnaryOp::Abs,
    UnaryOp::Sqrt,
    UnaryOp::Rcp,
    UnaryOp::Exp2,
    UnaryOp::Log2,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Trunc,
    UnaryOp::RoundEven,
    UnaryOp::Rsqrt,
];
/// All binary operations.
pub const BINARY_OPS: [BinaryOp; 12] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
    BinaryOp::Shl,
    BinaryOp::Shr,
];
/// All ternary operations.
pub const TERNARY_OPS: [TernaryOp; 4] = [
    TernaryOp::Fma,
    TernaryOp::LshlAdd,
    TernaryOp::Add3,
    TernaryOp::LshlOr,
];
/// All comparisons.
pub const CMP_OPS: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
];
/// All atomic operations.
pub const ATOMIC_OPS: [AtomicOp; 5] = [
    AtomicOp::Add,
    AtomicOp::Min,
    AtomicOp::Max,
    AtomicOp::Xchg,
    AtomicOp::Cas,
];
/// All wave reductions.
pub const REDUCE_OPS: [ReduceOp; 3] = [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max];

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}
