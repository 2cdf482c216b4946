//! The reference interpreter: runs a [`Function`] for a whole grid on the CPU.
//!
//! Takes a verified function, a launch shape (workgroups per dimension and work-items per
//! workgroup, as a device launch takes them) and the arguments (scalars and buffers, which it
//! updates in place). It is the semantic reference every compiled kernel is checked against.
//!
//! Model:
//! - Workgroups run one after another; each has its own LDS, which starts uninitialized (reading
//!   an element no one wrote is an error, as is an LDS access out of range).
//! - A workgroup's work-items are grouped into waves of 64 by linear local id
//!   (`x + y*bx + z*bx*by`). A wave runs its lanes in lockstep: each instruction executes for all
//!   active lanes, in lane order, before the next one.
//! - Divergence follows the classic SIMT stack: at a branch whose lanes disagree, both paths run
//!   (the taken path first) and the lanes reconverge at the branch's immediate post-dominator;
//!   lanes that `return` leave for good. Wave operations see exactly the lanes active there.
//! - Waves of a workgroup run until they reach a `barrier` (or finish); when all have, they all
//!   continue. A barrier reached with part of a wave's live lanes is an error.
//! - Global memory: out-of-range loads give 0, out-of-range stores and atomics do nothing.

use crate::cfg::{ControlFlowGraph, PostDominatorTree};
use crate::entities::{Block, Inst, LdsArray, Value};
use crate::function::Function;
use crate::instructions::{InstData, Mem, SpecialReg};
use crate::semantics::*;
use crate::types::{ElemType, FragType, Type};
use crate::verifier::verify;
use cranelift_entity::EntityRef;
use half::f16;

/// The contents of a buffer argument.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferData {
    /// i32 elements.
    I32(Vec<i32>),
    /// u32 elements.
    U32(Vec<u32>),
    /// i64 elements.
    I64(Vec<i64>),
    /// u64 elements.
    U64(Vec<u64>),
    /// f16 elements.
    F16(Vec<f16>),
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
}

impl BufferData {
    /// A buffer of `len` zeros of type `elem`.
    pub fn zeros(elem: ElemType, len: usize) -> Self {
        match elem {
            ElemType::I32 => BufferData::I32(vec![0; len]),
            ElemType::U32 => BufferData::U32(vec![0; len]),
            ElemType::I64 => BufferData::I64(vec![0; len]),
            ElemType::U64 => BufferData::U64(vec![0; len]),
            ElemType::F16 => BufferData::F16(vec![f16::ZERO; len]),
            ElemType::F32 => BufferData::F32(vec![0.0; len]),
            ElemType::F64 => BufferData::F64(vec![0.0; len]),
        }
    }

    /// A buffer whose every element has the representation bits `bits` (to poison outputs).
    pub fn filled_bits(elem: ElemType, len: usize, bits: u64) -> Self {
        let mut b = BufferData::zeros(elem, len);
        for i in 0..len {
            b.set_bits(i, bits);
        }
        b
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        match self {
            BufferData::I32(_) => ElemType::I32,
            BufferData::U32(_) => ElemType::U32,
            BufferData::I64(_) => ElemType::I64,
            BufferData::U64(_) => ElemType::U64,
            BufferData::F16(_) => ElemType::F16,
            BufferData::F32(_) => ElemType::F32,
            BufferData::F64(_) => ElemType::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            BufferData::I32(v) => v.len(),
            BufferData::U32(v) => v.len(),
            BufferData::I64(v) => v.len(),
            BufferData::U64(v) => v.len(),
            BufferData::F16(v) => v.len(),
            BufferData::F32(v) => v.len(),
            BufferData::F64(v) => v.len(),
        }
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i`'s representation bits.
    pub fn get_bits(&self, i: usize) -> u64 {
        match self {
            BufferData::I32(v) => v[i] as u32 as u64,
            BufferData::U32(v) => v[i] as u64,
            BufferData::I64(v) => v[i] as u64,
            BufferData::U64(v) => v[i],
            BufferData::F16(v) => v[i].to_bits() as u64,
            BufferData::F32(v) => v[i].to_bits() as u64,
            BufferData::F64(v) => v[i].to_bits(),
        }
    }

    /// Sets element `i` from representation bits.
    pub fn set_bits(&mut self, i: usize, b: u64) {
        match self {
            BufferData::I32(v) => v[i] = b as u32 as i32,
            BufferData::U32(v) => v[i] = b as u32,
            BufferData::I64(v) => v[i] = b as i64,
            BufferData::U64(v) => v[i] = b,
            BufferData::F16(v) => v[i] = f16::from_bits(b as u16),
            BufferData::F32(v) => v[i] = f32::from_bits(b as u32),
            BufferData::F64(v) => v[i] = f64::from_bits(b),
        }
    }

    /// The whole contents as little-endian bytes (what a device buffer holds).
    pub fn to_bytes(&self) -> Vec<u8> {
        let size = self.elem().bytes() as usize;
        let mut out = Vec::with_capacity(self.len() * size);
        for i in 0..self.len() {
            out.extend_from_slice(&self.get_bits(i).to_le_bytes()[..size]);
        }
        out
    }

    /// Rebuilds a buffer of `elem` from little-endian bytes (a trailing partial element is an
    /// error).
    pub fn from_bytes(elem: ElemType, bytes: &[u8]) -> Result<Self, String> {
        let size = elem.bytes() as usize;
        if !bytes.len().is_multiple_of(size) {
            return Err(format!(
                "{} bytes is not a whole number of {elem} elements",
                bytes.len()
            ));
        }
        let n = bytes.len() / size;
        let mut b = BufferData::zeros(elem, n);
        for i in 0..n {
            let mut w = [0u8; 8];
            w[..size].copy_from_slice(&bytes[i * size..(i + 1) * size]);
            b.set_bits(i, u64::from_le_bytes(w));
        }
        Ok(b)
    }
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// bool
    Bool(bool),
    /// i32
    I32(i32),
    /// u32
    U32(u32),
    /// i64
    I64(i64),
    /// u64
    U64(u64),
    /// f16
    F16(f16),
    /// f32
    F32(f32),
    /// f64
    F64(f64),
    /// A buffer (for `buf<..>` and `buf_mut<..>` parameters).
    Buffer(BufferData),
}

impl Arg {
    /// The scalar type of a scalar argument (`None` for buffers).
    pub fn scalar_type(&self) -> Option<Type> {
        Some(match self {
            Arg::Bool(_) => Type::Bool,
            Arg::I32(_) => Type::I32,
            Arg::U32(_) => Type::U32,
            Arg::I64(_) => Type::I64,
            Arg::U64(_) => Type::U64,
            Arg::F16(_) => Type::F16,
            Arg::F32(_) => Type::F32,
            Arg::F64(_) => Type::F64,
            Arg::Buffer(_) => return None,
        })
    }

    /// A scalar argument's representation bits.
    pub fn scalar_bits(&self) -> Option<u64> {
        Some(match self {
            Arg::Bool(b) => *b as u64,
            Arg::I32(x) => *x as u32 as u64,
            Arg::U32(x) => *x as u64,
            Arg::I64(x) => *x as u64,
            Arg::U64(x) => *x,
            Arg::F16(x) => x.to_bits() as u64,
            Arg::F32(x) => x.to_bits() as u64,
            Arg::F64(x) => x.to_bits(),
            Arg::Buffer(_) => return None,
        })
    }

    /// The buffer, if this is one.
    pub fn as_buffer(&self) -> Option<&BufferData> {
        match self {
            Arg::Buffer(b) => Some(b),
            _ => None,
        }
    }
}

/// The shape of a launch: workgroups per dimension, work-items per workgroup, and the bytes of
/// the dynamic LDS array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchDims {
    /// Workgroups in x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup in x, y, z.
    pub block: [u32; 3],
    /// Bytes of the kernel's dynamic LDS array (its elements: `dynamic_lds / element size`).
    pub dynamic_lds: u32,
}

/// Most work-items a workgroup may have (as on gfx9).
pub const MAX_WORKGROUP_SIZE: u32 = 1024;
/// Lanes per wave.
pub const WAVE_SIZE: usize = 64;

/// Limits of a run.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Wave-instructions after which the run stops with [`InterpError::StepLimit`].
    pub max_wave_insts: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_wave_insts: 200_000_000,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Workgroups run.
    pub workgroups: u64,
    /// Waves run.
    pub waves: u64,
    /// Instructions executed, counted once per wave.
    pub wave_insts: u64,
    /// Instructions executed, counted once per active lane.
    pub lane_insts: u64,
    /// Barriers passed (per workgroup).
    pub barriers: u64,
    /// Branches whose active lanes went both ways.
    pub divergent_branches: u64,
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// The function does not verify.
    #[error("kernel does not verify: {0}")]
    Invalid(String),
    /// Arguments do not match the parameters.
    #[error("bad arguments: {0}")]
    BadArgs(String),
    /// The launch shape is not allowed.
    #[error("bad launch: {0}")]
    BadLaunch(String),
    /// The kernel did something undefined.
    #[error("workgroup {workgroup:?}, wave {wave}, {inst}: {message}")]
    Fault {
        /// Workgroup id.
        workgroup: [u32; 3],
        /// Wave within the workgroup.
        wave: u32,
        /// The instruction.
        inst: Inst,
        /// What happened.
        message: String,
    },
    /// The run took more than [`Options::max_wave_insts`].
    #[error("stopped after {0} wave-instructions (endless loop?)")]
    StepLimit(u64),
}

/// Runs `func` over the grid with default [`Options`].
pub fn run(
    func: &Function,
    launch: &LaunchDims,
    args: &mut [Arg],
) -> Result<RunStats, InterpError> {
    run_with(func, launch, args, &Options::default())
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// `None`: the virtual exit.
    block: Option<Block>,
    ip: usize,
    mask: u64,
    /// Where these lanes wait for the others; `None`: the virtual exit.
    rpc: Option<Block>,
}

struct Wave {
    regs: Vec<u64>,
    /// Fragment values: per value, `WAVE_SIZE × dwords` words (lane-major), made on first write.
    frags: Vec<Vec<u32>>,
    live: u64,
    stack: Vec<Entry>,
    lid: [[u32; WAVE_SIZE]; 3],
}

enum Stop {
    Barrier,
    Done,
}

struct Ctx<'a> {
    func: &'a Function,
    pdt: PostDominatorTree,
    launch: LaunchDims,
    wg: [u32; 3],
    wave_index: u32,
    steps: u64,
    opts: Options,
    stats: RunStats,
}

struct Lds {
    data: Vec<Vec<u64>>,
    init: Vec<Vec<bool>>,
}

/// Runs `func` over the grid.
pub fn run_with(
    func: &Function,
    launch: &LaunchDims,
    args: &mut [Arg],
    opts: &Options,
) -> Result<RunStats, InterpError> {
    verify(func).map_err(|e| InterpError::Invalid(e.to_string()))?;
    check_args(func, args)?;
    let bsize: u64 = launch.block.iter().map(|&x| x as u64).product();
    if bsize == 0 || bsize > MAX_WORKGROUP_SIZE as u64 {
        return Err(InterpError::BadLaunch(format!(
            "workgroup of {:?} = {bsize} work-items; 1..={MAX_WORKGROUP_SIZE} allowed",
            launch.block
        )));
    }
    if let Some(size) = func.workgroup_size.filter(|s| *s != launch.block) {
        return Err(InterpError::BadLaunch(format!(
            "workgroup of {:?}, but the kernel declares workgroup_size {size:?}",
            launch.block
        )));
    }
    let lds_total = func.lds_bytes() + launch.dynamic_lds as u64;
    if lds_total > crate::function::MAX_LDS_BYTES {
        return Err(InterpError::BadLaunch(format!(
            "{} static + {} dynamic bytes of LDS; at most {} fit",
            func.lds_bytes(),
            launch.dynamic_lds,
            crate::function::MAX_LDS_BYTES
        )));
    }
    let cfg = ControlFlowGraph::new(func);
    let pdt = PostDominatorTree::new(func, &cfg);
    let mut ctx = Ctx {
        func,
        pdt,
        launch: *launch,
        wg: [0; 3],
        wave_index: 0,
        steps: 0,
        opts: *opts,
        stats: RunStats::default(),
    };
    let nvals = func.values.len();
    let nwaves = (bsize as usize).div_ceil(WAVE_SIZE);
    let entry = func
        .entry()
        .ok_or_else(|| InterpError::Invalid("no entry block".into()))?;
    let lds_lens: Vec<usize> = func
        .lds
        .values()
        .map(|d| match d.dynamic {
            true => (launch.dynamic_lds / d.elem.bytes()) as usize,
            false => d.len as usize,
        })
        .collect();
    let [bx, by, _] = launch.block;
    for gz in 0..launch.grid[2] {
        for gy in 0..launch.grid[1] {
            for gx in 0..launch.grid[0] {
                ctx.wg = [gx, gy, gz];
                ctx.stats.workgroups += 1;
                let mut lds = Lds {
                    data: lds_lens.iter().map(|&n| vec![0u64; n]).collect(),
                    init: lds_lens.iter().map(|&n| vec![false; n]).collect(),
                };
                let mut waves: Vec<Wave> = (0..nwaves)
                    .map(|w| {
                        let mut wave = Wave {
                            regs: vec![0; nvals * WAVE_SIZE],
                            frags: vec![Vec::new(); nvals],
                            live: 0,
                            stack: Vec::new(),
                            lid: [[0; WAVE_SIZE]; 3],
                        };
                        for l in 0..WAVE_SIZE {
                            let t = (w * WAVE_SIZE + l) as u64;
                            if t < bsize {
                                wave.live |= 1 << l;
                                wave.lid[0][l] = (t % bx as u64) as u32;
                                wave.lid[1][l] = ((t / bx as u64) % by as u64) as u32;
                                wave.lid[2][l] = (t / (bx as u64 * by as u64)) as u32;
                            }
                        }
                        // Kernel parameters are the entry block's parameters.
                        for (k, &p) in func.blocks[entry].params.iter().enumerate() {
                            let bits = args[k].scalar_bits().unwrap_or(k as u64);
                            for l in 0..WAVE_SIZE {
                                wave.regs[p.index() * WAVE_SIZE + l] = bits;
                            }
                        }
                        wave.stack.push(Entry {
                            block: Some(entry),
                            ip: 0,
                            mask: wave.live,
                            rpc: None,
                        });
                        wave
                    })
                    .collect();
                ctx.stats.waves += nwaves as u64;
                let mut done = vec![false; nwaves];
                loop {
                    let mut at_barrier = 0;
                    for (w, wave) in waves.iter_mut().enumerate() {
                        if done[w] {
                            continue;
                        }
                        ctx.wave_index = w as u32;
                        match ctx.run_wave(wave, args, &mut lds)? {
                            Stop::Done => done[w] = true,
                            Stop::Barrier => at_barrier += 1,
                        }
                    }
                    if at_barrier == 0 {
                        break;
                    }
                    ctx.stats.barriers += 1;
                }
            }
        }
    }
    Ok(ctx.stats)
}

fn check_args(func: &Function, args: &[Arg]) -> Result<(), InterpError> {
    if args.len() != func.params.len() {
        return Err(InterpError::BadArgs(format!(
            "kernel {} takes {} arguments, {} given",
            func.name,
            func.params.len(),
            args.len()
        )));
    }
    for (p, a) in func.params.iter().zip(args) {
        match (p.ty, a) {
            (Type::Buffer { elem, .. }, Arg::Buffer(b)) => {
                if b.elem() != elem {
                    return Err(InterpError::BadArgs(format!(
                        "{} is {}, but a buffer of {} was given",
                        p.name,
                        p.ty,
                        b.elem()
                    )));
                }
                if b.len() > u32::MAX as usize {
                    return Err(InterpError::BadArgs(format!(
                        "{} has more than 2^32-1 elements",
                        p.name
                    )));
                }
            }
            (t, a) => {
                if a.scalar_type() != Some(t) {
                    return Err(InterpError::BadArgs(format!(
                        "{} is {t}, but {a:?} was given",
                        p.name
                    )));
                }
            }
        }
    }
    Ok(())
}

#[inline]
fn lanes(mask: u64) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

impl Ctx<'_> {
    fn fault(&self, inst: Inst, message: String) -> InterpError {
        InterpError::Fault {
            workgroup: self.wg,
            wave: self.wave_index,
            inst,
            message,
        }
    }

    /// An LDS access past the end of array `a` (of `len` elements; for the dynamic array, as
    /// many as the launch's dynamic LDS bytes hold).
    fn lds_range_fault(
        &self,
        inst: Inst,
        what: &str,
        a: LdsArray,
        e: usize,
        len: usize,
    ) -> InterpError {
        let dynamic = match self.func.lds[a].dynamic {
            true => format!(
                " ({} bytes of dynamic LDS at launch)",
                self.launch.dynamic_lds
            ),
            false => String::new(),
        };
        self.fault(
            inst,
            format!("LDS {what} {a}[{e}], which has {len} elements{dynamic}"),
        )
    }

    fn run_wave(
        &mut self,
        wave: &mut Wave,
        args: &mut [Arg],
        lds: &mut Lds,
    ) -> Result<Stop, InterpError> {
        let func = self.func;
        loop {
            let live = wave.live;
            let Some(top) = wave.stack.last_mut() else {
                return Ok(Stop::Done);
            };
            top.mask &= live;
            if top.mask == 0 || top.block.is_none() || (top.ip == 0 && top.block == top.rpc) {
                wave.stack.pop();
                continue;
            }
            let mut e = *top;
            let b = e.block.expect("checked above");
            let insts = &func.blocks[b].insts;
            while e.ip < insts.len() {
                let inst = insts[e.ip];
                self.steps += 1;
                self.stats.wave_insts += 1;
                self.stats.lane_insts += e.mask.count_ones() as u64;
                if self.steps > self.opts.max_wave_insts {
                    return Err(InterpError::StepLimit(self.steps));
                }
                let data = &func.insts[inst];
                match data {
                    InstData::Barrier => {
                        if e.mask != wave.live {
                            return Err(self.fault(
                                inst,
                                format!("barrier reached by lanes {:#x} of live lanes {:#x} (divergent control flow)", e.mask, wave.live),
                            ));
                        }
                        e.ip += 1;
                        *wave.stack.last_mut().expect("top") = e;
                        return Ok(Stop::Barrier);
                    }
                    InstData::Return => {
                        wave.live &= !e.mask;
                        wave.stack.pop();
                        break;
                    }
                    InstData::Jump { dest } => {
                        self.pass_args(wave, e.mask, dest.block, &dest.args);
                        let top = wave.stack.last_mut().expect("top");
                        top.block = Some(dest.block);
                        top.ip = 0;
                        break;
                    }
                    InstData::Brif {
                        cond,
                        then_dest,
                        else_dest,
                    } => {
                        let mut mt = 0u64;
                        for l in lanes(e.mask) {
                            if wave.regs[cond.index() * WAVE_SIZE + l] != 0 {
                                mt |= 1 << l;
                            }
                        }
                        let mf = e.mask & !mt;
                        if mt != 0 {
                            self.pass_args(wave, mt, then_dest.block, &then_dest.args);
                        }
                        if mf != 0 {
                            self.pass_args(wave, mf, else_dest.block, &else_dest.args);
                        }
                        let top = wave.stack.last_mut().expect("top");
                        top.ip = 0;
                        if mf == 0 {
                            top.block = Some(then_dest.block);
                        } else if mt == 0 {
                            top.block = Some(else_dest.block);
                        } else {
                            self.stats.divergent_branches += 1;
                            let r = self.pdt.ipdom(b);
                            let t = Entry {
                                block: Some(then_dest.block),
                                ip: 0,
                                mask: mt,
                                rpc: r,
                            };
                            let f = Entry {
                                block: Some(else_dest.block),
                                ip: 0,
                                mask: mf,
                                rpc: r,
                            };
                            if top.rpc == r {
                                // The entry below already waits at `r` with these lanes.
                                *top = f;
                            } else {
                                top.block = r;
                                wave.stack.push(f);
                            }
                            wave.stack.push(t);
                        }
                        break;
                    }
                    _ => {
                        self.exec(wave, inst, e.mask, args, lds)?;
                        e.ip += 1;
                    }
                }
            }
        }
    }

    fn pass_args(&self, wave: &mut Wave, mask: u64, target: Block, argv: &[Value]) {
        let params = &self.func.blocks[target].params;
        // Parallel copy: read every argument before writing any parameter.
        let mut tmp: Vec<[u64; WAVE_SIZE]> = Vec::with_capacity(argv.len());
        for a in argv {
            let mut row = [0u64; WAVE_SIZE];
            row.copy_from_slice(&wave.regs[a.index() * WAVE_SIZE..(a.index() + 1) * WAVE_SIZE]);
            tmp.push(row);
        }
        let frags: Vec<Vec<u32>> = argv.iter().map(|a| wave.frags[a.index()].clone()).collect();
        for (p, row) in params.iter().zip(tmp) {
            for l in lanes(mask) {
                wave.regs[p.index() * WAVE_SIZE + l] = row[l];
            }
        }
        for (p, f) in params.iter().zip(frags) {
            if let Type::Frag(t) = self.func.values[*p].ty {
                let n = t.dwords() as usize;
                let dst = frag_slot(wave, *p, t);
                for l in lanes(mask) {
                    for d in 0..n {
                        dst[l * n + d] = f.get(l * n + d).copied().unwrap_or(0);
                    }
                }
            }
        }
    }

    fn exec(
        &mut self,
        wave: &mut Wave,
        inst: Inst,
        mask: u64,
        args: &mut [Arg],
        lds: &mut Lds,
    ) -> Result<(), InterpError> {
        let func = self.func;
        let data = &func.insts[inst];
        let res = &func.results[inst];
        let ty = |v: Value| func.values[v].ty;
        macro_rules! r {
            ($v:expr, $l:expr) => {
                wave.regs[$v.index() * WAVE_SIZE + $l]
            };
        }
        macro_rules! per_lane {
            (|$l:ident| $e:expr) => {{
                let out = res[0].index() * WAVE_SIZE;
                for $l in lanes(mask) {
                    let v = $e;
                    wave.regs[out + $l] = v;
                }
            }};
        }
        match data {
            InstData::Const { bits, .. } => per_lane!(|_l| *bits),
            InstData::Special { reg } => {
                let launch = self.launch;
                let wg = self.wg;
                let lid = wave.lid;
                per_lane!(|l| match reg {
                    SpecialReg::WorkitemId(d) => lid[d.index()][l] as u64,
                    SpecialReg::WorkgroupId(d) => wg[d.index()] as u64,
                    SpecialReg::WorkgroupSize(d) => launch.block[d.index()] as u64,
                    SpecialReg::NumWorkgroups(d) => launch.grid[d.index()] as u64,
                    SpecialReg::LaneId => l as u64,
                })
            }
            InstData::Unary { op, arg } => {
                let t = ty(*arg);
                per_lane!(|l| eval_unary(*op, t, r!(arg, l)))
            }
            InstData::Binary { op, args: [a, b] } => {
                let t = ty(*a);
                per_lane!(|l| eval_binary(*op, t, r!(a, l), r!(b, l)))
            }
            InstData::Ternary {
                op,
                args: [a, b, c],
            } => {
                let t = ty(*a);
                per_lane!(|l| eval_ternary(*op, t, r!(a, l), r!(b, l), r!(c, l)))
            }
            InstData::Cmp { op, args: [a, b] } => {
                let t = ty(*a);
                per_lane!(|l| eval_cmp(*op, t, r!(a, l), r!(b, l)) as u64)
            }
            InstData::Select { args: [c, a, b] } => {
                per_lane!(|l| if r!(c, l) != 0 { r!(a, l) } else { r!(b, l) })
            }
            InstData::Convert { to, arg } => {
                let t = ty(*arg);
                per_lane!(|l| eval_convert(t, *to, r!(arg, l)))
            }
            InstData::Bitcast { arg, .. } => per_lane!(|l| r!(arg, l)),
            InstData::BufferLen { buf } => {
                let k = func.param_index(*buf).unwrap_or(0);
                let n = args[k].as_buffer().map_or(0, |b| b.len()) as u64;
                per_lane!(|_l| n)
            }
            InstData::Load {
                mem,
                index,
                offset,
                width,
            } => {
                for l in lanes(mask) {
                    let base = r!(index, l) as u32;
                    for j in 0..*width as u32 {
                        let e = base.wrapping_add(*offset).wrapping_add(j) as usize;
                        let v = match mem {
                            Mem::Global(b) => {
                                let k = func.param_index(*b).unwrap_or(0);
                                match &args[k] {
                                    Arg::Buffer(buf) if e < buf.len() => buf.get_bits(e),
                                    _ => 0,
                                }
                            }
                            Mem::Lds(a) => self.lds_read(inst, lds, *a, e)?,
                        };
                        wave.regs[res[j as usize].index() * WAVE_SIZE + l] = v;
                    }
                }
            }
            InstData::Store {
                mem,
                index,
                offset,
                values,
            } => {
                for l in lanes(mask) {
                    let base = r!(index, l) as u32;
                    for (j, v) in values.iter().enumerate() {
                        let e = base.wrapping_add(*offset).wrapping_add(j as u32) as usize;
                        let bits = r!(v, l);
                        match mem {
                            Mem::Global(b) => {
                                let k = func.param_index(*b).unwrap_or(0);
                                if let Arg::Buffer(buf) = &mut args[k] {
                                    if e < buf.len() {
                                        buf.set_bits(e, bits);
                                    }
                                }
                            }
                            Mem::Lds(a) => self.lds_write(inst, lds, *a, e, bits)?,
                        }
                    }
                }
            }
            InstData::Atomic {
                op,
                mem,
                index,
                offset,
                args: ops,
            } => {
                let t = ty(res[0]);
                for l in lanes(mask) {
                    let e = (r!(index, l) as u32).wrapping_add(*offset) as usize;
                    let opv: smallvec::SmallVec<[u64; 2]> = ops.iter().map(|v| r!(v, l)).collect();
                    let old = match mem {
                        Mem::Global(b) => {
                            let k = func.param_index(*b).unwrap_or(0);
                            match &mut args[k] {
                                Arg::Buffer(buf) if e < buf.len() => {
                                    let old = buf.get_bits(e);
                                    buf.set_bits(e, eval_atomic(*op, t, old, &opv));
                                    old
                                }
                                _ => 0,
                            }
                        }
                        Mem::Lds(a) => {
                            let ai = a.index();
                            if e >= lds.data[ai].len() {
                                return Err(self.lds_range_fault(
                                    inst,
                                    "atomic on",
                                    *a,
                                    e,
                                    lds.data[ai].len(),
                                ));
                            }
                            if !lds.init[ai][e] {
                                return Err(self.fault(
                                    inst,
                                    format!("LDS atomic on {a}[{e}], which no one wrote"),
                                ));
                            }
                            let old = lds.data[ai][e];
                            lds.data[ai][e] = eval_atomic(*op, t, old, &opv);
                            old
                        }
                    };
                    r!(res[0], l) = old;
                }
            }
            InstData::WaveShuffle { args: [v, src] } => {
                let mut vals = [0u64; WAVE_SIZE];
                for l in lanes(mask) {
                    let s = (r!(src, l) % WAVE_SIZE as u64) as usize;
                    vals[l] = if mask >> s & 1 != 0 { r!(v, s) } else { 0 };
                }
                per_lane!(|l| vals[l])
            }
            InstData::WaveBroadcast { arg, lane } => {
                let s = *lane as usize;
                let x = if mask >> s & 1 != 0 { r!(arg, s) } else { 0 };
                per_lane!(|_l| x)
            }
            InstData::WaveReduce { op, arg } => {
                let t = ty(*arg);
                let mut acc = reduce_identity(*op, t);
                for l in lanes(mask) {
                    acc = eval_reduce(*op, t, acc, r!(arg, l));
                }
                per_lane!(|_l| acc)
            }
            InstData::WaveScan { op, arg } => {
                let t = ty(*arg);
                let mut acc = reduce_identity(*op, t);
                let mut vals = [0u64; WAVE_SIZE];
                for l in lanes(mask) {
                    acc = eval_reduce(*op, t, acc, r!(arg, l));
                    vals[l] = acc;
                }
                per_lane!(|l| vals[l])
            }
            InstData::FragLoad {
                mem,
                index,
                offset,
                ty: f,
            } => {
                let n = f.dwords() as usize;
                let mut out = vec![0u32; WAVE_SIZE * n];
                for l in lanes(mask) {
                    let base = (r!(index, l) as u32).wrapping_add(*offset);
                    self.frag_aligned(inst, base, *f)?;
                    let words = &mut out[l * n..(l + 1) * n];
                    let per_dword = (4 / f.elem.bytes()).max(1);
                    for j in 0..f.len as u32 {
                        let e = base.wrapping_add(j) as usize;
                        let bits = match mem {
                            Mem::Global(b) => {
                                let k = func.param_index(*b).unwrap_or(0);
                                // Read by dwords: 0 unless the whole dword is in range.
                                let last =
                                    base.wrapping_add(j / per_dword * per_dword + per_dword - 1);
                                match &args[k] {
                                    Arg::Buffer(buf) if (last as usize) < buf.len() => {
                                        buf.get_bits(e)
                                    }
                                    _ => 0,
                                }
                            }
                            Mem::Lds(a) => self.lds_read(inst, lds, *a, e)?,
                        };
                        crate::mfma::frag_set(*f, words, j, bits);
                    }
                }
                let dst = frag_slot(wave, res[0], *f);
                for l in lanes(mask) {
                    dst[l * n..(l + 1) * n].copy_from_slice(&out[l * n..(l + 1) * n]);
                }
            }
            InstData::FragStore {
                mem,
                index,
                offset,
                value,
            } => {
                let Type::Frag(f) = ty(*value) else {
                    unreachable!("verified")
                };
                let n = f.dwords() as usize;
                let per_dword = (4 / f.elem.bytes()).max(1);
                for l in lanes(mask) {
                    let base = (r!(index, l) as u32).wrapping_add(*offset);
                    self.frag_aligned(inst, base, f)?;
                    let words: Vec<u32> = frag_words(wave, *value, f, l).to_vec();
                    debug_assert_eq!(words.len(), n);
                    for j in 0..f.len as u32 {
                        let e = base.wrapping_add(j) as usize;
                        let bits = crate::mfma::frag_get(f, &words, j);
                        match mem {
                            Mem::Global(b) => {
                                let k = func.param_index(*b).unwrap_or(0);
                                let last =
                                    base.wrapping_add(j / per_dword * per_dword + per_dword - 1);
                                if let Arg::Buffer(buf) = &mut args[k] {
                                    if (last as usize) < buf.len() {
                                        buf.set_bits(e, bits);
                                    }
                                }
                            }
                            Mem::Lds(a) => self.lds_write(inst, lds, *a, e, bits)?,
                        }
                    }
                }
            }
            InstData::FragBuild { ty: f, args: parts } => {
                let n = f.dwords() as usize;
                let mut out = vec![0u32; WAVE_SIZE * n];
                for l in lanes(mask) {
                    for (j, v) in parts.iter().enumerate() {
                        crate::mfma::frag_set(*f, &mut out[l * n..(l + 1) * n], j as u32, r!(v, l));
                    }
                }
                let dst = frag_slot(wave, res[0], *f);
                for l in lanes(mask) {
                    dst[l * n..(l + 1) * n].copy_from_slice(&out[l * n..(l + 1) * n]);
                }
            }
            InstData::FragExtract { arg, item } => {
                let Type::Frag(f) = ty(*arg) else {
                    unreachable!("verified")
                };
                for l in lanes(mask) {
                    let bits = crate::mfma::frag_get(f, frag_words(wave, *arg, f, l), *item as u32);
                    r!(res[0], l) = bits;
                }
            }
            InstData::Mfma {
                op,
                args: [a, b, c],
            } => {
                if mask != u64::MAX {
                    return Err(self.fault(
                        inst,
                        format!("mfma.{op} needs all 64 lanes of the wave active; active lanes {mask:#x}"),
                    ));
                }
                let operand = |wave: &Wave, v: Value| -> Vec<Vec<u32>> {
                    (0..WAVE_SIZE)
                        .map(|l| match ty(v) {
                            Type::Frag(f) => frag_words(wave, v, f, l).to_vec(),
                            t => {
                                let bits = wave.regs[v.index() * WAVE_SIZE + l];
                                if t.bytes() == 8 {
                                    vec![bits as u32, (bits >> 32) as u32]
                                } else {
                                    vec![bits as u32]
                                }
                            }
                        })
                        .collect()
                };
                let (av, bv, cv) = (operand(wave, *a), operand(wave, *b), operand(wave, *c));
                let d = crate::mfma::execute(*op, &av, &bv, &cv);
                let f = op.acc_frag();
                let n = f.dwords() as usize;
                let dst = frag_slot(wave, res[0], f);
                for (l, words) in d.iter().enumerate() {
                    dst[l * n..(l + 1) * n].copy_from_slice(words);
                }
            }
            InstData::Barrier
            | InstData::Jump { .. }
            | InstData::Brif { .. }
            | InstData::Return => {
                unreachable!("control handled by run_wave")
            }
        }
        Ok(())
    }

    /// A fragment access must start at a multiple of the fragment's length.
    fn frag_aligned(&self, inst: Inst, base: u32, f: FragType) -> Result<(), InterpError> {
        if !base.is_multiple_of(f.len as u32) {
            return Err(self.fault(
                inst,
                format!(
                    "{f} fragment access at element {base}, which is not a multiple of {}",
                    f.len
                ),
            ));
        }
        Ok(())
    }

    /// Writes one LDS element, with the range check.
    fn lds_write(
        &self,
        inst: Inst,
        lds: &mut Lds,
        a: LdsArray,
        e: usize,
        bits: u64,
    ) -> Result<(), InterpError> {
        let ai = a.index();
        if e >= lds.data[ai].len() {
            return Err(self.lds_range_fault(inst, "store to", a, e, lds.data[ai].len()));
        }
        lds.data[ai][e] = bits;
        lds.init[ai][e] = true;
        Ok(())
    }

    /// One LDS element for a load, with the range and initialization checks.
    fn lds_read(&self, inst: Inst, lds: &Lds, a: LdsArray, e: usize) -> Result<u64, InterpError> {
        let ai = a.index();
        if e >= lds.data[ai].len() {
            return Err(self.lds_range_fault(inst, "load from", a, e, lds.data[ai].len()));
        }
        if !lds.init[ai][e] {
            return Err(self.fault(inst, format!("LDS load from {a}[{e}], which no one wrote")));
        }
        Ok(lds.data[ai][e])
    }
}

/// The storage of fragment value `v` (made zeroed on first use).
fn frag_slot(wave: &mut Wave, v: Value, f: FragType) -> &mut Vec<u32> {
    let slot = &mut wave.frags[v.index()];
    if slot.is_empty() {
        *slot = vec![0; WAVE_SIZE * f.dwords() as usize];
    }
    slot
}

/// Lane `l`'s dwords of fragment value `v` (zeros if it was never written).
fn frag_words(wave: &Wave, v: Value, f: FragType, l: usize) -> &[u32] {
    const ZEROS: [u32; 32] = [0; 32];
    let n = f.dwords() as usize;
    wave.frags[v.index()]
        .get(l * n..(l + 1) * n)
        .unwrap_or(&ZEROS[..n])
}
