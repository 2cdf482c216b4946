//! A cursor that appends instructions to a block of a [`Function`] with type checking.
//!
//! It is the IR-level builder: the `frontend` crate builds on it, and tests and the optimizer use
//! it directly. Every method checks operand types with [`InstData::result_types`] and returns
//! an error string instead of building an ill-typed instruction.

use crate::entities::{Block, Inst, LdsArray, Value};
use crate::function::{Function, LdsDecl};
use crate::instructions::*;
use crate::types::{ElemType, Type};
use smallvec::SmallVec;

/// Appends instructions at the end of the current block.
pub struct FuncCursor<'f> {
    /// The function being built.
    pub func: &'f mut Function,
    block: Option<Block>,
}

impl<'f> FuncCursor<'f> {
    /// A cursor on `func` with no current block.
    pub fn new(func: &'f mut Function) -> Self {
        FuncCursor { func, block: None }
    }

    /// Makes `b` the block new instructions go to.
    pub fn switch_to(&mut self, b: Block) {
        self.block = Some(b)
    }

    /// The current block.
    pub fn current_block(&self) -> Option<Block> {
        self.block
    }

    /// Creates a block and appends it to the layout.
    pub fn new_block(&mut self) -> Block {
        let b = self.func.create_block();
        self.func.append_block(b);
        b
    }

    /// Appends an instruction and returns it.
    pub fn ins(&mut self, data: InstData) -> Result<Inst, String> {
        let b = self.block.ok_or("no current block")?;
        if let Some(&last) = self.func.blocks[b].insts.last() {
            if self.func.insts[last].is_terminator() {
                return Err(format!("{b} is already terminated"));
            }
        }
        let inst = self.func.make_inst(data)?;
        self.func.blocks[b].insts.push(inst);
        Ok(inst)
    }

    /// Appends an instruction with exactly one result and returns that result.
    pub fn ins1(&mut self, data: InstData) -> Result<Value, String> {
        let inst = self.ins(data)?;
        match self.func.results[inst].as_slice() {
            [v] => Ok(*v),
            r => Err(format!("expected one result, got {}", r.len())),
        }
    }

    /// A constant of type `ty` with the given representation bits.
    pub fn constant(&mut self, ty: Type, bits: u64) -> Result<Value, String> {
        self.ins1(InstData::Const { ty, bits })
    }
    /// An `i32` constant.
    pub fn iconst_i32(&mut self, x: i32) -> Result<Value, String> {
        self.constant(Type::I32, x as u32 as u64)
    }
    /// A `u32` constant.
    pub fn iconst_u32(&mut self, x: u32) -> Result<Value, String> {
        self.constant(Type::U32, x as u64)
    }
    /// An `f32` constant.
    pub fn fconst_f32(&mut self, x: f32) -> Result<Value, String> {
        self.constant(Type::F32, x.to_bits() as u64)
    }
    /// A launch-defined value.
    pub fn special(&mut self, reg: SpecialReg) -> Result<Value, String> {
        self.ins1(InstData::Special { reg })
    }
    /// One-operand arithmetic.
    pub fn unary(&mut self, op: UnaryOp, arg: Value) -> Result<Value, String> {
        self.ins1(InstData::Unary { op, arg })
    }
    /// Two-operand arithmetic.
    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Result<Value, String> {
        self.ins1(InstData::Binary { op, args: [a, b] })
    }
    /// Three-operand arithmetic.
    pub fn ternary(
        &mut self,
        op: TernaryOp,
        a: Value,
        b: Value,
        c: Value,
    ) -> Result<Value, String> {
        self.ins1(InstData::Ternary {
            op,
            args: [a, b, c],
        })
    }
    /// Comparison.
    pub fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Result<Value, String> {
        self.ins1(InstData::Cmp { op, args: [a, b] })
    }
    /// Per-lane select.
    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Result<Value, String> {
        self.ins1(InstData::Select { args: [c, a, b] })
    }
    /// Conversion.
    pub fn convert(&mut self, to: Type, arg: Value) -> Result<Value, String> {
        self.ins1(InstData::Convert { to, arg })
    }
    /// Bit reinterpretation.
    pub fn bitcast(&mut self, to: Type, arg: Value) -> Result<Value, String> {
        self.ins1(InstData::Bitcast { to, arg })
    }
    /// Loads `width` elements.
    pub fn load(
        &mut self,
        mem: Mem,
        index: Value,
        offset: u32,
        width: u8,
    ) -> Result<SmallVec<[Value; 1]>, String> {
        let i = self.ins(InstData::Load {
            mem,
            index,
            offset,
            width,
        })?;
        Ok(self.func.results[i].clone())
    }
    /// Stores elements.
    pub fn store(
        &mut self,
        mem: Mem,
        index: Value,
        offset: u32,
        values: &[Value],
    ) -> Result<Inst, String> {
        self.ins(InstData::Store {
            mem,
            index,
            offset,
            values: values.into(),
        })
    }
    /// Atomic read-modify-write.
    pub fn atomic(
        &mut self,
        op: AtomicOp,
        mem: Mem,
        index: Value,
        offset: u32,
        args: &[Value],
    ) -> Result<Value, String> {
        self.ins1(InstData::Atomic {
            op,
            mem,
            index,
            offset,
            args: args.into(),
        })
    }
    /// Unconditional branch.
    pub fn jump(&mut self, block: Block, args: &[Value]) -> Result<Inst, String> {
        self.ins(InstData::Jump {
            dest: BlockCall::new(block, args),
        })
    }
    /// Two-way branch.
    pub fn brif(
        &mut self,
        cond: Value,
        t: Block,
        targs: &[Value],
        e: Block,
        eargs: &[Value],
    ) -> Result<Inst, String> {
        self.ins(InstData::Brif {
            cond,
            then_dest: BlockCall::new(t, targs),
            else_dest: BlockCall::new(e, eargs),
        })
    }
    /// Return.
    pub fn ret(&mut self) -> Result<Inst, String> {
        self.ins(InstData::Return)
    }
    /// Declares an LDS array.
    pub fn declare_lds(&mut self, name: &str, elem: ElemType, len: u32) -> LdsArray {
        self.func.lds.push(LdsDecl {
            name: name.to_string(),
            elem,
            len,
            dynamic: false,
        })
    }
    /// Declares the dynamic LDS array (sized by the launch).
    pub fn declare_dynamic_lds(&mut self, name: &str, elem: ElemType) -> LdsArray {
        self.func.lds.push(LdsDecl {
            name: name.to_string(),
            elem,
            len: 0,
            dynamic: true,
        })
    }
}
