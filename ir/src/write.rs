//! The text form of a [`Function`]: printing. [`crate::parse`] reads it back, and
//! `parse(print(f))` prints identically.
//!
//! ```text
//! kernel saxpy(alpha: f32, x: buf<f32>, y: buf_mut<f32>) contract {
//!     lds0 = lds tile: f32[256]
//! block0(v0: f32, v1: buf<f32>, v2: buf_mut<f32>):
//!     v3:u32 = workgroup_id.x
//!     v4:f32, v5:f32 = load.x2 v1[v3+4]
//!     store v2[v3], v4
//!     brif v9, block1(v3), block2
//! block1(v10: u32):
//!     return
//! }
//! ```
//! Every result carries its type (`v3:u32`), so a reader never has to infer one.

use crate::entities::{Block, Value};
use crate::function::Function;
use crate::instructions::{BlockCall, InstData, Mem};
use crate::types::Type;
use std::fmt::{self, Write};

/// Formats a constant's bits as the text form writes them.
pub fn format_const(ty: Type, bits: u64) -> String {
    match ty {
        Type::Bool => (if bits != 0 { "true" } else { "false" }).to_string(),
        Type::I32 => (bits as u32 as i32).to_string(),
        Type::U32 => (bits as u32).to_string(),
        Type::I64 => (bits as i64).to_string(),
        Type::U64 => bits.to_string(),
        Type::F16 => {
            let h = half::f16::from_bits(bits as u16);
            if h.is_nan() {
                format!("nan:{bits:#06x}")
            } else {
                format!("{:?}", h.to_f32())
            }
        }
        Type::F32 => {
            let x = f32::from_bits(bits as u32);
            if x.is_nan() {
                format!("nan:{bits:#010x}")
            } else {
                format!("{x:?}")
            }
        }
        Type::F64 => {
            let x = f64::from_bits(bits);
            if x.is_nan() {
                format!("nan:{bits:#018x}")
            } else {
                format!("{x:?}")
            }
        }
        Type::Buffer { .. } | Type::Frag(_) => format!("{bits:#x}"),
    }
}

fn write_call(w: &mut String, c: &BlockCall) {
    let _ = write!(w, "{}", c.block);
    if !c.args.is_empty() {
        w.push('(');
        write_list(w, &c.args);
        w.push(')');
    }
}

fn write_list(w: &mut String, vs: &[Value]) {
    for (i, v) in vs.iter().enumerate() {
        if i > 0 {
            w.push_str(", ");
        }
        let _ = write!(w, "{v}");
    }
}

fn write_mem(w: &mut String, mem: &Mem, index: Value, offset: u32) {
    match mem {
        Mem::Global(b) => {
            let _ = write!(w, "{b}");
        }
        Mem::Lds(a) => {
            let _ = write!(w, "{a}");
        }
    }
    if offset == 0 {
        let _ = write!(w, "[{index}]");
    } else {
        let _ = write!(w, "[{index}+{offset}]");
    }
}

/// Writes one instruction's right-hand side (operation and operands).
pub fn write_inst_rhs(w: &mut String, data: &InstData) {
    w.push_str(&data.opcode_name());
    match data {
        InstData::Const { ty, bits } => {
            let _ = write!(w, " {}", format_const(*ty, *bits));
        }
        InstData::Special { .. } | InstData::Barrier | InstData::Return => {}
        InstData::Unary { arg, .. }
        | InstData::Convert { arg, .. }
        | InstData::Bitcast { arg, .. }
        | InstData::WaveReduce { arg, .. }
        | InstData::WaveScan { arg, .. } => {
            let _ = write!(w, " {arg}");
        }
        InstData::BufferLen { buf } => {
            let _ = write!(w, " {buf}");
        }
        InstData::WaveBroadcast { arg, lane } => {
            let _ = write!(w, " {arg}, {lane}");
        }
        InstData::Binary { args, .. }
        | InstData::Cmp { args, .. }
        | InstData::WaveShuffle { args } => {
            w.push(' ');
            write_list(w, args);
        }
        InstData::Ternary { args, .. } | InstData::Select { args } => {
            w.push(' ');
            write_list(w, args);
        }
        InstData::Load {
            mem, index, offset, ..
        } => {
            w.push(' ');
            write_mem(w, mem, *index, *offset);
        }
        InstData::Store {
            mem,
            index,
            offset,
            values,
        } => {
            w.push(' ');
            write_mem(w, mem, *index, *offset);
            w.push_str(", ");
            write_list(w, values);
        }
        InstData::Atomic {
            mem,
            index,
            offset,
            args,
            ..
        } => {
            w.push(' ');
            write_mem(w, mem, *index, *offset);
            w.push_str(", ");
            write_list(w, args);
        }
        InstData::FragLoad {
            mem, index, offset, ..
        } => {
            w.push(' ');
            write_mem(w, mem, *index, *offset);
        }
        InstData::FragStore {
            mem,
            index,
            offset,
            value,
        } => {
            w.push(' ');
            write_mem(w, mem, *index, *offset);
            let _ = write!(w, ", {value}");
        }
        InstData::FragBuild { args, .. } => {
            w.push(' ');
            write_list(w, args);
        }
        InstData::FragExtract { arg, item } => {
            let _ = write!(w, " {arg}, {item}");
        }
        InstData::Mfma { args, .. } => {
            w.push(' ');
            write_list(w, args);
        }
        InstData::Jump { dest } => {
            w.push(' ');
            write_call(w, dest);
        }
        InstData::Brif {
            cond,
            then_dest,
            else_dest,
        } => {
            let _ = write!(w, " {cond}, ");
            write_call(w, then_dest);
            w.push_str(", ");
            write_call(w, else_dest);
        }
    }
}

/// Prints a block header (`block3(v4: u32):`).
pub fn write_block_header(w: &mut String, func: &Function, b: Block) {
    let _ = write!(w, "{b}");
    let ps = &func.blocks[b].params;
    if !ps.is_empty() {
        w.push('(');
        for (i, p) in ps.iter().enumerate() {
            if i > 0 {
                w.push_str(", ");
            }
            let _ = write!(w, "{p}: {}", func.values[*p].ty);
        }
        w.push(')');
    }
    w.push_str(":\n");
}

/// Prints the whole function.
pub fn function_to_string(func: &Function) -> String {
    let mut w = String::new();
    let _ = write!(w, "kernel {}(", func.name);
    for (i, p) in func.params.iter().enumerate() {
        if i > 0 {
            w.push_str(", ");
        }
        let _ = write!(w, "{}: {}", p.name, p.ty);
    }
    w.push(')');
    if let Some([x, y, z]) = func.workgroup_size {
        let _ = write!(w, " workgroup_size({x}, {y}, {z})");
    }
    if func.flags.contract {
        w.push_str(" contract");
    }
    if func.flags.noalias {
        w.push_str(" noalias");
    }
    w.push_str(" {\n");
    for (a, d) in func.lds.iter() {
        if d.dynamic {
            let _ = writeln!(w, "    {a} = lds {}: {}[dynamic]", d.name, d.elem);
        } else {
            let _ = writeln!(w, "    {a} = lds {}: {}[{}]", d.name, d.elem, d.len);
        }
    }
    for &b in &func.layout {
        write_block_header(&mut w, func, b);
        for &i in &func.blocks[b].insts {
            w.push_str("    ");
            let res = &func.results[i];
            for (k, r) in res.iter().enumerate() {
                if k > 0 {
                    w.push_str(", ");
                }
                let _ = write!(w, "{r}:{}", func.values[*r].ty);
            }
            if !res.is_empty() {
                w.push_str(" = ");
            }
            write_inst_rhs(&mut w, &func.insts[i]);
            w.push('\n');
        }
    }
    w.push_str("}\n");
    w
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&function_to_string(self))
    }
}
