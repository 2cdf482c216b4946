//! Shared by the regalloc tests: a MIR builder and a small wave interpreter that runs both a
//! `MachineFunction` (on vregs) and the `PhysFunction` the allocator made of it (on registers),
//! so a test can check that the allocated code computes the same stores — with every register
//! the allocator did not define poisoned, EXEC masks honoured lane by lane, and spill memory.
//!
//! The interpreter knows a handful of opcodes; their semantics only need to be deterministic
//! functions of the operands (both runs use the same ones), e.g. `s_load_dwordx4` returns a
//! hash of its address.
#![allow(dead_code, clippy::needless_range_loop)]

use std::collections::HashMap;

use kjit_backend_gcn::codeobj::metadata::KernelMeta;
use kjit_backend_gcn::isa::{Encoding, Inst, Opcode, Operand, SpecialReg};
use kjit_backend_gcn::mir::{
    AbiValue, BranchCond, KernelAbi, MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass,
    Terminator, VReg,
};
use kjit_backend_gcn::phys::{PhysFunction, PhysTerminator};
use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
use kjit_backend_gcn::Target;

pub const LANES: usize = 64;
pub type Lanes = [u32; LANES];

/// A new empty function for `target` with one entry block.
pub fn func(target: Target) -> MachineFunction {
    let mut mf = MachineFunction::new(KernelAbi {
        target,
        meta: KernelMeta::new("t"),
        workgroup_ids: [false; 3],
        workitem_dims: 0,
        lds_bytes: 0,
    });
    mf.block();
    mf
}

pub fn d(v: VReg) -> MOperand {
    MOperand::Def(v)
}
pub fn u(v: VReg) -> MOperand {
    MOperand::Use(v)
}
pub fn c(i: i8) -> MOperand {
    MOperand::Phys(Operand::InlineInt(i))
}
pub fn lit(x: u32) -> MOperand {
    MOperand::Phys(Operand::Literal(x))
}
pub fn exec() -> MOperand {
    MOperand::Phys(Operand::Special(SpecialReg::Exec))
}
pub fn vcc() -> MOperand {
    MOperand::Phys(Operand::Special(SpecialReg::Vcc))
}

pub fn push(mf: &mut MachineFunction, b: MBlock, i: MInst) {
    mf.blocks[b].insts.push(i);
}

pub fn isa(op: Opcode, ops: &[MOperand]) -> MInst {
    MInst::isa(op, ops)
}

pub fn livein(mf: &mut MachineFunction, a: AbiValue) -> VReg {
    let (class, dw) = match a {
        AbiValue::KernargPtr => (RegClass::Sgpr, 2),
        AbiValue::WorkgroupId(_) => (RegClass::Sgpr, 1),
        AbiValue::WorkitemId(_) => (RegClass::Vgpr, 1),
        // The shortest preload (a pair); these tests' programs read arguments from memory.
        AbiValue::KernargPreload => (RegClass::Sgpr, 2),
    };
    let v = mf.vreg(class, dw);
    let e = mf.entry();
    push(mf, e, MInst::pseudo(MOpcode::LiveIn(a), &[d(v)]));
    v
}

/// `buffer_store_dword v, off, s[0:3], 0 offset:tag` without `offen`, with an output descriptor
/// (not the private segment): the interpreter records (tag, active lanes' values).
pub fn out(mf: &mut MachineFunction, b: MBlock, rsrc: VReg, v: VReg, tag: i32) {
    let mut i = MInst::isa(
        Opcode::BufferStoreDword,
        &[u(v), MOperand::Phys(Operand::Off), u(rsrc), c(0)],
    );
    i.mods.offset = tag;
    push(mf, b, i);
}

/// The usual prologue: kernarg pointer, an output descriptor loaded from it, lane id.
pub fn prologue(mf: &mut MachineFunction) -> (VReg, VReg, VReg) {
    let kp = livein(mf, AbiValue::KernargPtr);
    let tid = livein(mf, AbiValue::WorkitemId(0));
    let rsrc = mf.vreg(RegClass::Sgpr, 4);
    let e = mf.entry();
    push(
        mf,
        e,
        isa(
            Opcode::SLoadDwordx4,
            &[d(rsrc), u(kp), MOperand::Phys(Operand::Imm(0))],
        ),
    );
    (kp, tid, rsrc)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Loc {
    S(u32),
    V(u32),
    A(u32),
    R(u32, u32),
}

#[derive(Default)]
pub struct Machine {
    regs: HashMap<Loc, Lanes>,
    pub exec: u64,
    scc: bool,
    vcc: u64,
    scratch: HashMap<(u32, usize), u32>,
    pub stores: Vec<(i32, Vec<u32>)>,
    pub steps: u32,
    poison: u32,
}

fn lanes(x: u32) -> Lanes {
    [x; LANES]
}

impl Machine {
    fn get(&mut self, l: Loc) -> Lanes {
        if let Some(v) = self.regs.get(&l) {
            return *v;
        }
        // never written: poison that differs per register and run
        self.poison = self.poison.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let p = lanes(0xDEAD_0000 ^ self.poison);
        self.regs.insert(l, p);
        p
    }
    fn set(&mut self, l: Loc, v: Lanes) {
        self.regs.insert(l, v);
    }
}

/// How operands of the program being run name storage.
trait Names {
    fn locs(&self, m: &mut Machine, o: &MOperand, inst: &MInst) -> Vec<Src>;
}

#[derive(Clone, Copy, Debug)]
enum Src {
    Loc(Loc),
    Const(u32),
    ExecLo,
    ExecHi,
    VccLo,
    VccHi,
    None,
}

fn phys_locs(o: &Operand) -> Vec<Src> {
    match *o {
        Operand::Sgpr { first, count } => (0..count as u32)
            .map(|k| Src::Loc(Loc::S(first as u32 + k)))
            .collect(),
        Operand::Vgpr { first, count } => (0..count as u32)
            .map(|k| Src::Loc(Loc::V(first as u32 + k)))
            .collect(),
        Operand::Agpr { first, count } => (0..count as u32)
            .map(|k| Src::Loc(Loc::A(first as u32 + k)))
            .collect(),
        Operand::Special(SpecialReg::Exec) => vec![Src::ExecLo, Src::ExecHi],
        Operand::Special(SpecialReg::ExecLo) => vec![Src::ExecLo],
        Operand::Special(SpecialReg::Vcc) => vec![Src::VccLo, Src::VccHi],
        Operand::InlineInt(i) => vec![
            Src::Const(i as i32 as u32),
            Src::Const(if i < 0 { u32::MAX } else { 0 }),
        ],
        Operand::Literal(x) => vec![Src::Const(x), Src::Const(0)],
        Operand::Imm(x) => vec![Src::Const(x as u32)],
        _ => vec![Src::None],
    }
}

fn read(m: &mut Machine, s: Src) -> Lanes {
    match s {
        Src::Loc(l) => m.get(l),
        Src::Const(x) => lanes(x),
        Src::ExecLo => lanes(m.exec as u32),
        Src::ExecHi => lanes((m.exec >> 32) as u32),
        Src::VccLo => lanes(m.vcc as u32),
        Src::VccHi => lanes((m.vcc >> 32) as u32),
        Src::None => lanes(0),
    }
}

fn write_scalar(m: &mut Machine, s: Src, x: u32) {
    match s {
        Src::Loc(l) => m.set(l, lanes(x)),
        Src::ExecLo => m.exec = (m.exec & !0xffff_ffff) | x as u64,
        Src::ExecHi => m.exec = (m.exec & 0xffff_ffff) | (x as u64) << 32,
        Src::VccLo => m.vcc = (m.vcc & !0xffff_ffff) | x as u64,
        Src::VccHi => m.vcc = (m.vcc & 0xffff_ffff) | (x as u64) << 32,
        _ => {}
    }
}

fn write_lanes(m: &mut Machine, s: Src, v: Lanes, mask: u64) {
    if let Src::Loc(l) = s {
        let mut old = m.get(l);
        for (i, x) in v.iter().enumerate() {
            if mask >> i & 1 != 0 {
                old[i] = *x;
            }
        }
        m.set(l, old);
    }
}

fn hash(a: u32, b: u32) -> u32 {
    let mut h = a.wrapping_mul(0x9E37_79B9) ^ b.wrapping_add(0x7F4A_7C15);
    h ^= h >> 15;
    h.wrapping_mul(0x85EB_CA6B)
}

/// Executes one real instruction given its operands as storage lists.
fn exec_isa(m: &mut Machine, op: Opcode, ops: &[Vec<Src>], offset: i32) {
    let s = |m: &mut Machine, i: usize, k: usize| read(m, ops[i][k])[0];
    let mask = m.exec;
    match op {
        Opcode::SMovB32 => {
            let x = s(m, 1, 0);
            write_scalar(m, ops[0][0], x)
        }
        Opcode::SMovB64 => {
            let (lo, hi) = (s(m, 1, 0), s(m, 1, 1));
            write_scalar(m, ops[0][0], lo);
            write_scalar(m, ops[0][1], hi);
        }
        Opcode::SAddU32 => {
            let (a, b) = (s(m, 1, 0), s(m, 2, 0));
            let (r, carry) = a.overflowing_add(b);
            m.scc = carry;
            write_scalar(m, ops[0][0], r);
        }
        Opcode::SCmpLtU32 => {
            m.scc = s(m, 0, 0) < s(m, 1, 0);
        }
        Opcode::SLoadDwordx2 | Opcode::SLoadDwordx4 => {
            let a = s(m, 1, 0) ^ s(m, 1, 1).rotate_left(7);
            for k in 0..ops[0].len() {
                write_scalar(m, ops[0][k], hash(a, k as u32));
            }
        }
        Opcode::SAndSaveexecB64 => {
            let v = (s(m, 1, 0) as u64) | (s(m, 1, 1) as u64) << 32;
            let old = m.exec;
            write_scalar(m, ops[0][0], old as u32);
            write_scalar(m, ops[0][1], (old >> 32) as u32);
            m.exec = old & v;
            m.scc = m.exec != 0;
        }
        Opcode::SOrB64 => {
            let a = (s(m, 1, 0) as u64) | (s(m, 1, 1) as u64) << 32;
            let b = (s(m, 2, 0) as u64) | (s(m, 2, 1) as u64) << 32;
            let r = a | b;
            m.scc = r != 0;
            write_scalar(m, ops[0][0], r as u32);
            write_scalar(m, ops[0][1], (r >> 32) as u32);
        }
        Opcode::VMovB32
        | Opcode::VAccvgprWriteB32
        | Opcode::VAccvgprReadB32
        | Opcode::VAccvgprMovB32 => {
            let v = read(m, ops[1][0]);
            write_lanes(m, ops[0][0], v, mask);
        }
        Opcode::VAddU32 | Opcode::VMulLoU32 | Opcode::VLshlAddU32 => {
            let a = read(m, ops[1][0]);
            let b = read(m, ops[2][0]);
            let c = if ops.len() > 3 {
                read(m, ops[3][0])
            } else {
                lanes(0)
            };
            let mut r = [0; LANES];
            for l in 0..LANES {
                r[l] = match op {
                    Opcode::VAddU32 => a[l].wrapping_add(b[l]),
                    Opcode::VMulLoU32 => a[l].wrapping_mul(b[l]),
                    _ => (a[l] << (b[l] & 31)).wrapping_add(c[l]),
                };
            }
            write_lanes(m, ops[0][0], r, mask);
        }
        Opcode::VAddF64 => {
            // as a 64-bit integer add: deterministic is all that matters
            let (a0, a1, b0, b1) = (
                read(m, ops[1][0]),
                read(m, ops[1][1]),
                read(m, ops[2][0]),
                read(m, ops[2][1]),
            );
            let (mut lo, mut hi) = ([0; LANES], [0; LANES]);
            for l in 0..LANES {
                let r = ((a0[l] as u64) | (a1[l] as u64) << 32)
                    .wrapping_add((b0[l] as u64) | (b1[l] as u64) << 32);
                lo[l] = r as u32;
                hi[l] = (r >> 32) as u32;
            }
            write_lanes(m, ops[0][0], lo, mask);
            write_lanes(m, ops[0][1], hi, mask);
        }
        Opcode::VCmpLtU32 => {
            let a = read(m, ops[1][0]);
            let b = read(m, ops[2][0]);
            let mut r = 0u64;
            for l in 0..LANES {
                if mask >> l & 1 != 0 && a[l] < b[l] {
                    r |= 1 << l;
                }
            }
            write_scalar(m, ops[0][0], r as u32);
            write_scalar(m, ops[0][1], (r >> 32) as u32);
        }
        Opcode::BufferStoreDword | Opcode::ScratchStoreDword => {
            let (data, private) = if op == Opcode::ScratchStoreDword {
                (read(m, ops[1][0]), Some(0))
            } else {
                let rs = s(m, 2, 0);
                let v = read(m, ops[0][0]);
                if rs == 0x5C5C_0000 {
                    (v, Some(s(m, 3, 0)))
                } else {
                    (v, None)
                }
            };
            match private {
                Some(base) => {
                    for l in 0..LANES {
                        if mask >> l & 1 != 0 {
                            m.scratch
                                .insert((base.wrapping_add(offset as u32), l), data[l]);
                        }
                    }
                }
                None => {
                    let tag = offset;
                    let vals = (0..LANES)
                        .filter(|l| mask >> l & 1 != 0)
                        .map(|l| data[l])
                        .collect();
                    m.stores.push((tag, vals));
                }
            }
        }
        Opcode::BufferLoadDword | Opcode::ScratchLoadDword => {
            let base = if op == Opcode::ScratchLoadDword {
                0
            } else {
                s(m, 3, 0)
            };
            let mut r = m.get(match ops[0][0] {
                Src::Loc(l) => l,
                _ => Loc::V(999),
            });
            for (l, x) in r.iter_mut().enumerate() {
                if mask >> l & 1 != 0 {
                    *x = *m
                        .scratch
                        .get(&(base.wrapping_add(offset as u32), l))
                        .unwrap_or(&0x000B_AD5C);
                }
            }
            write_lanes(m, ops[0][0], r, mask);
        }
        other => panic!("interpreter does not know {other:?}"),
    }
}

fn cond(m: &Machine, c: BranchCond) -> bool {
    match c {
        BranchCond::Scc0 => !m.scc,
        BranchCond::Scc1 => m.scc,
        BranchCond::Vccz => m.vcc == 0,
        BranchCond::Vccnz => m.vcc != 0,
        BranchCond::Execz => m.exec == 0,
        BranchCond::Execnz => m.exec != 0,
    }
}

/// The ABI inputs of a run.
#[derive(Clone, Copy)]
pub struct Inputs {
    pub exec: u64,
    pub kernarg: u64,
    pub wg: [u32; 3],
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            exec: u64::MAX,
            kernarg: 0x1234_5678_9000,
            wg: [3, 5, 7],
        }
    }
}

fn tid(d: u8, packed: bool) -> Lanes {
    let mut r = [0; LANES];
    for (l, x) in r.iter_mut().enumerate() {
        let id = [l as u32 % 8, l as u32 / 8, 0][d as usize];
        *x = if packed {
            (l as u32 % 8) | ((l as u32 / 8) << 10)
        } else {
            id
        };
    }
    r
}

/// Runs the machine function on vregs.
pub fn run_mir(mf: &MachineFunction, inp: Inputs) -> Machine {
    let mut m = Machine {
        exec: inp.exec,
        poison: 7,
        ..Default::default()
    };
    let packed = mf.abi.target != Target::Gfx900;
    let vl = |v: VReg, mf: &MachineFunction| -> Vec<Src> {
        (0..mf.vregs[v].dwords as u32)
            .map(|k| Src::Loc(Loc::R(v.as_u32(), k)))
            .collect()
    };
    let mut b = mf.entry();
    loop {
        let bd = &mf.blocks[b];
        for inst in &bd.insts {
            m.steps += 1;
            assert!(m.steps < 100_000, "MIR run does not terminate");
            match inst.opcode {
                MOpcode::LiveIn(a) => {
                    let v = inst.defs().next().unwrap();
                    match a {
                        AbiValue::KernargPtr => {
                            m.set(Loc::R(v.as_u32(), 0), lanes(inp.kernarg as u32));
                            m.set(Loc::R(v.as_u32(), 1), lanes((inp.kernarg >> 32) as u32));
                        }
                        AbiValue::WorkgroupId(k) => {
                            m.set(Loc::R(v.as_u32(), 0), lanes(inp.wg[k as usize]))
                        }
                        AbiValue::WorkitemId(k) => m.set(Loc::R(v.as_u32(), 0), tid(k, packed)),
                        AbiValue::KernargPreload => {
                            unreachable!("the MIR programs here load their arguments")
                        }
                    }
                }
                MOpcode::ImplicitDef => {}
                MOpcode::Copy | MOpcode::Build | MOpcode::Extract(_) => {
                    let dst = vl(inst.defs().next().unwrap(), mf);
                    let mut src: Vec<Src> = inst.uses().flat_map(|x| vl(x, mf)).collect();
                    if let MOpcode::Extract(k) = inst.opcode {
                        src = src[k as usize..k as usize + dst.len()].to_vec();
                    }
                    let vals: Vec<Lanes> = src.iter().map(|s| read(&mut m, *s)).collect();
                    for (dd, v) in dst.iter().zip(vals) {
                        write_lanes(&mut m, *dd, v, u64::MAX);
                    }
                }
                MOpcode::Isa(op) => {
                    if let Some((di, ui)) = inst.tied {
                        if let (MOperand::Def(dv), MOperand::Use(uv)) =
                            (inst.ops[di as usize], inst.ops[ui as usize])
                        {
                            let vals: Vec<Lanes> =
                                vl(uv, mf).iter().map(|s| read(&mut m, *s)).collect();
                            for (dd, v) in vl(dv, mf).iter().zip(vals) {
                                write_lanes(&mut m, *dd, v, u64::MAX);
                            }
                        }
                    }
                    let n = inst.encoded_operand_count();
                    let ops: Vec<Vec<Src>> = inst.ops[..n]
                        .iter()
                        .map(|o| match o {
                            MOperand::Def(v) | MOperand::Use(v) => vl(*v, mf),
                            MOperand::Phys(p) => phys_locs(p),
                        })
                        .collect();
                    exec_isa(&mut m, op, &ops, inst.mods.offset);
                }
            }
        }
        let (next, args): (MBlock, Vec<VReg>) = match &bd.term {
            Terminator::Return => return m,
            Terminator::Jump { target, args } => (*target, args.clone()),
            Terminator::Branch {
                cond: cc,
                taken,
                taken_args,
                not_taken,
                not_taken_args,
            } => {
                if cond(&m, *cc) {
                    (*taken, taken_args.clone())
                } else {
                    (*not_taken, not_taken_args.clone())
                }
            }
        };
        let vals: Vec<Vec<Lanes>> = args
            .iter()
            .map(|a| vl(*a, mf).iter().map(|s| read(&mut m, *s)).collect())
            .collect();
        for (p, v) in mf.blocks[next].params.iter().zip(vals) {
            for (dd, x) in vl(*p, mf).iter().zip(v) {
                write_lanes(&mut m, *dd, x, u64::MAX);
            }
        }
        b = next;
    }
}

/// Runs the allocated function on registers.
pub fn run_phys(f: &PhysFunction, inp: Inputs) -> Machine {
    let mut m = Machine {
        exec: inp.exec,
        poison: 99,
        ..Default::default()
    };
    let t = f.abi.target;
    let mut s = 0u32;
    if f.user_sgprs.private_segment_buffer {
        // the private segment buffer: a marker the interpreter recognises
        m.set(Loc::S(0), lanes(0x5C5C_0000));
        for k in 1..4 {
            m.set(Loc::S(k), lanes(0));
        }
        s = 4;
    }
    if f.user_sgprs.kernarg_segment_ptr {
        m.set(Loc::S(s), lanes(inp.kernarg as u32));
        m.set(Loc::S(s + 1), lanes((inp.kernarg >> 32) as u32));
        s += 2;
    }
    for d in 0..3 {
        if f.abi.workgroup_ids[d] {
            m.set(Loc::S(s), lanes(inp.wg[d]));
            s += 1;
        }
    }
    if let Some(w) = f.scratch_wave_offset_sgpr {
        assert_eq!(w as u32, s, "wave offset follows the workgroup ids");
        m.set(Loc::S(s), lanes(0x100));
    }
    if t == Target::Gfx900 {
        for d in 0..f.abi.workitem_dims.max(1) {
            m.set(Loc::V(d as u32), tid(d, false));
        }
    } else {
        m.set(Loc::V(0), tid(0, true));
    }
    let mut b = 0usize;
    loop {
        let pb = &f.blocks[b];
        for inst in &pb.insts {
            m.steps += 1;
            assert!(m.steps < 400_000, "allocated run does not terminate");
            let ops: Vec<Vec<Src>> = inst.operands.iter().map(phys_locs).collect();
            exec_isa(&mut m, inst.op, &ops, inst.mods.offset);
        }
        b = match pb.term {
            PhysTerminator::Return => return m,
            PhysTerminator::Jump(x) => x.as_u32() as usize,
            PhysTerminator::Branch {
                cond: cc,
                taken,
                not_taken,
            } => {
                if cond(&m, cc) {
                    taken.as_u32() as usize
                } else {
                    not_taken.as_u32() as usize
                }
            }
        };
    }
}

/// Every register tuple is aligned as the target requires and inside the reported usage.
pub fn check_registers(f: &PhysFunction) {
    let t = f.abi.target;
    for (bi, b) in f.blocks.iter().enumerate() {
        for i in &b.insts {
            for o in &i.operands {
                match *o {
                    Operand::Sgpr { first, count } => {
                        let al = match count {
                            1 => 1,
                            2 => 2,
                            _ => 4,
                        };
                        assert_eq!(first % al, 0, "block {bi}: unaligned {o} in {i:?}");
                        assert!(
                            (first + count as u16) as u32 <= f.usage.sgprs.max(1) || first >= 102,
                            "block {bi}: {o} beyond usage.sgprs {}",
                            f.usage.sgprs
                        );
                    }
                    Operand::Vgpr { first, count } => {
                        if count >= 2 && t != Target::Gfx900 {
                            assert_eq!(first % 2, 0, "block {bi}: unaligned {o}");
                        }
                        assert!(
                            (first + count as u16) as u32 <= f.usage.vgprs,
                            "{o} beyond usage.vgprs {}",
                            f.usage.vgprs
                        );
                    }
                    Operand::Agpr { first, count } => {
                        assert!(t.has_agprs());
                        if count >= 2 {
                            assert_eq!(first % 2, 0, "block {bi}: unaligned {o}");
                        }
                        assert!(
                            (first + count as u16) as u32 <= f.usage.agprs,
                            "{o} beyond usage.agprs {}",
                            f.usage.agprs
                        );
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Allocates with the checker, checks registers and compares runs under `inp`.
pub fn alloc_and_compare(mf: &MachineFunction, budget: Option<u32>, inp: Inputs) -> PhysFunction {
    alloc_and_compare_with(mf, budget, inp, true)
}

/// [`alloc_and_compare`] with the checker on or off.
pub fn alloc_and_compare_with(
    mf: &MachineFunction,
    budget: Option<u32>,
    inp: Inputs,
    checker: bool,
) -> PhysFunction {
    let f = allocate(
        mf,
        &RegallocOptions {
            vgpr_budget: budget,
            sgpr_budget: None,
            run_checker: checker,
        },
    )
    .unwrap_or_else(|e| panic!("allocation failed: {e}"));
    check_registers(&f);
    for b in &f.blocks {
        for i in &b.insts {
            kjit_backend_gcn::isa::encode(i, f.abi.target).unwrap_or_else(|e| {
                panic!(
                    "{} does not encode on {}: {e}",
                    i.display(f.abi.target),
                    f.abi.target
                )
            });
        }
    }
    if let Some(b) = budget {
        let v = if t_has_agprs(f.abi.target) {
            f.usage.vgprs.div_ceil(4) * 4 + f.usage.agprs
        } else {
            f.usage.vgprs
        };
        assert!(v <= b, "budget {b}: used {v} ({:?})", f.usage);
    }
    let a = run_mir(mf, inp);
    let p = run_phys(&f, inp);
    assert!(!a.stores.is_empty(), "test program stores nothing");
    assert_eq!(
        a.stores,
        p.stores,
        "allocated code computes different stores\n{}",
        listing(&f)
    );
    f
}

fn t_has_agprs(t: Target) -> bool {
    t.has_agprs()
}

/// Assembly-like listing for failure messages.
pub fn listing(f: &PhysFunction) -> String {
    let mut s = String::new();
    for (i, b) in f.blocks.iter().enumerate() {
        s += &format!("bb{i}:\n");
        for inst in &b.insts {
            s += &format!("  {}\n", inst.display(f.abi.target));
        }
        s += &format!("  ; {:?}\n", b.term);
    }
    s
}

pub fn count_op(f: &PhysFunction, op: Opcode) -> usize {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| i.op == op)
        .count()
}

pub fn e64(mut i: MInst) -> MInst {
    i.encoding = Encoding::E64;
    i
}

pub fn inst(op: Opcode, ops: &[Operand]) -> Inst {
    Inst::new(op, ops)
}
