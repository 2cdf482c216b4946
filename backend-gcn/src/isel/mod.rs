//! Instruction selection: a verified `kjit_ir::Function` to a [`MachineFunction`] on virtual
//! registers, by uniformity (see `docs/backend.md`).
//!
//! Uniform values live in SGPRs and are computed on the SALU where gfx9 has a scalar form (the
//! VALU plus `v_readfirstlane` otherwise: floats, division); divergent values live in VGPRs.
//! Divergent bools are 0/1 per lane in a VGPR (a lane mask is made where a branch, select or
//! compare needs one), uniform bools 0/1 in an SGPR.
//!
//! # Control flow: mask-per-block linearization
//! The IR blocks are laid out in one order ([`order`]): topological over forward edges, every
//! loop contiguous. Each IR block `B` becomes a *section*: a head (`exec = M_B`; skip the body
//! when EXEC is zero) and a body (the block's instructions under that EXEC). `M_B`, an SGPR-pair
//! variable, collects the lanes that branched to `B`: a terminator ORs the lanes of each edge into
//! its target's mask (`s_and_b64`/`s_andn2_b64` of EXEC with the condition's lane mask; for a
//! uniform condition `s_cmp` + `s_cselect_b64`). After the last section of a loop a latch block
//! jumps back to the header while its mask is non-zero (`s_cmp_lg_u64` + `s_cbranch_scc1`), so a
//! loop with a divergent exit runs until no lane remains, and lanes that left wait in the exit
//! block's mask. A `return` removes the lanes from the `alive` mask and ends the wave when none
//! remain. This handles every reducible CFG the builder makes (if/else, loops with breaks and
//! continues, early returns) with one mechanism. Blocks the whole wave enters together (outside
//! divergent regions, reached only by jumps and uniform branches: [`Isel::compute_direct`]) have
//! no head or mask and are branched to for real (`s_branch`, `s_cmp` + `s_cbranch_scc1`).
//!
//! # Values across sections: SSA construction on the machine CFG
//! IR values used outside their block, IR block parameters, the masks and `alive` are
//! *variables*, put into SSA on the machine CFG with Braun et al.'s algorithm ([`ssa`]); the MIR
//! block parameters it creates select by the path the *wave* took, never per lane. Per-lane
//! merges are tied partial writes (`v_mov_b32` tied to the previous value, under the edge's
//! EXEC): IR block parameters that are divergent, and divergent values defined in a loop and used
//! after it (lanes that left earlier keep their last value). Each variable starts with an
//! `ImplicitDef` (masks: 0) in the head of a section that dominates all its writes and is not
//! inside a loop its uses are outside of.

mod dce;
mod ds_pairs;
mod exec_fold;
mod frag;
mod idiv;
mod index_sign;
mod lds_dma;
mod lower;
mod order;
mod ssa;
mod store_masks;
mod valu;

use rustc_hash::FxHashMap as HashMap;

use cranelift_entity::{EntityRef, SecondaryMap};
use kjit_ir::{Block, Function, InstData, Type, Uniformity, Value};

use crate::codeobj::metadata::{hidden_args_compact, AddressSpace, ArgMeta, KernelMeta, ValueKind};
use crate::mir::{
    implicit, BranchCond, KernelAbi, MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass,
    Terminator, VReg,
};
use crate::Target;

use ds_pairs::pair_lds_accesses;
pub use order::LoopInfo;
pub(crate) use valu::salu_reads_scc;

/// Why a function cannot be selected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IselError {
    /// The input does not verify.
    #[error("kernel does not verify: {0}")]
    Invalid(String),
    /// A construct isel does not handle (yet), named.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// A value that crosses sections, put into SSA form on the machine CFG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Var {
    /// An IR value (instruction result or block parameter).
    Val(Value),
    /// The lanes waiting to run an IR block.
    Mask(Block),
    /// The lanes that have not returned.
    Alive,
}

/// Selects machine instructions for `func` on `target` (kernel arguments preloaded where the
/// target can: [`select_verified_with`]).
pub fn select(func: &Function, target: Target) -> Result<MachineFunction, IselError> {
    let uni =
        kjit_ir::verify_with_uniformity(func).map_err(|e| IselError::Invalid(e.to_string()))?;
    select_verified(func, uni, target)
}

/// [`select`], preloading kernel arguments only when `kernarg_preload`.
pub fn select_with(
    func: &Function,
    target: Target,
    kernarg_preload: bool,
) -> Result<MachineFunction, IselError> {
    let uni =
        kjit_ir::verify_with_uniformity(func).map_err(|e| IselError::Invalid(e.to_string()))?;
    select_verified_with(func, uni, target, kernarg_preload)
}

/// [`select`] for a `func` the caller verified, with the uniformity the verifier gave
/// ([`kjit_ir::verify_with_uniformity`]): a checked compile does not verify it twice.
pub fn select_verified(
    func: &Function,
    uni: Uniformity,
    target: Target,
) -> Result<MachineFunction, IselError> {
    select_verified_with(func, uni, target, target.has_kernarg_preload())
}

/// [`select_verified`], preloading kernel arguments into user SGPRs when `kernarg_preload`
/// and the target has it (see [`preload_dwords`]); otherwise every argument is an `s_load`.
pub fn select_verified_with(
    func: &Function,
    uni: Uniformity,
    target: Target,
    kernarg_preload: bool,
) -> Result<MachineFunction, IselError> {
    let mut s = Isel::new(
        func,
        uni,
        target,
        kernarg_preload && target.has_kernarg_preload(),
    )?;
    s.run()?;
    pair_lds_accesses(&mut s.mf);
    Ok(s.mf)
}

/// Word 3 of a raw buffer descriptor: DST_SEL xyzw 0, NUM_FORMAT 7, DATA_FORMAT 4 (32 bits),
/// the format untyped `buffer_*` accesses need to be in range on gfx9.
const DESC_WORD3: u32 = 0x0002_7000;

/// Most IR instructions (terminator not counted) of a section that runs under an empty EXEC
/// instead of being branched around ([`Isel::worth_skipping`]).
const SHORT_SECTION: usize = 6;

/// Where a kernel argument lives in the kernarg segment.
#[derive(Clone, Copy, Debug)]
struct ArgSlot {
    offset: u32,
    /// For buffers: offset of the `.len` argument.
    len_offset: u32,
}

/// The kernarg layout and metadata of `func` (the kjit kernel ABI in `docs/backend.md`).
fn kernel_meta(func: &Function) -> (KernelMeta, Vec<ArgSlot>) {
    let mut meta = KernelMeta::new(&func.name);
    meta.max_flat_workgroup_size = 1024;
    if let Some(size) = func.workgroup_size {
        meta.max_flat_workgroup_size = size.iter().product();
        meta.reqd_workgroup_size = Some(size);
    }
    meta.group_segment_fixed_size = func.lds_bytes() as u32;
    let mut off = 0u32;
    let mut slots = Vec::new();
    for p in &func.params {
        match p.ty {
            Type::Buffer { elem, writable } => {
                off = off.div_ceil(8) * 8;
                let mut a = ArgMeta::new(off, 8, ValueKind::GlobalBuffer);
                a.name = Some(p.name.clone());
                a.type_name = Some(format!("{}*", elem));
                a.address_space = Some(AddressSpace::Global);
                a.is_const = !writable;
                a.is_restrict = func.flags.noalias;
                meta.args.push(a);
                let addr = off;
                off += 8;
                let mut l = ArgMeta::new(off, 4, ValueKind::ByValue);
                l.name = Some(format!("{}.len", p.name));
                l.type_name = Some("uint".into());
                meta.args.push(l);
                slots.push(ArgSlot {
                    offset: addr,
                    len_offset: off,
                });
                off += 4;
            }
            t => {
                let size = match t {
                    Type::Bool => 4,
                    t => t.bytes(),
                };
                off = off.div_ceil(size) * size;
                let mut a = ArgMeta::new(off, size, ValueKind::ByValue);
                a.name = Some(p.name.clone());
                a.type_name = Some(t.to_string());
                meta.args.push(a);
                slots.push(ArgSlot {
                    offset: off,
                    len_offset: 0,
                });
                off += size;
            }
        }
    }
    // A buffer slot is read as a quad (`s_load_dwordx4`: address, length and the dword after
    // it), so the segment reaches past the last slot's length.
    let reads_end = slots
        .iter()
        .filter(|s| s.len_offset != 0)
        .map(|s| s.len_offset + 8)
        .max()
        .unwrap_or(0);
    let (hidden, size) = hidden_args_compact(off, &hidden_reads(func));
    let size = size.max(reads_end);
    meta.args.extend(hidden);
    meta.kernarg_segment_size = size;
    (meta, slots)
}

/// The hidden argument that holds special register `reg`, if one does.
fn hidden_kind(reg: kjit_ir::SpecialReg) -> Option<ValueKind> {
    use kjit_ir::{Dim, SpecialReg};
    Some(match reg {
        SpecialReg::WorkgroupSize(Dim::X) => ValueKind::HiddenGroupSizeX,
        SpecialReg::WorkgroupSize(Dim::Y) => ValueKind::HiddenGroupSizeY,
        SpecialReg::WorkgroupSize(Dim::Z) => ValueKind::HiddenGroupSizeZ,
        SpecialReg::NumWorkgroups(Dim::X) => ValueKind::HiddenBlockCountX,
        SpecialReg::NumWorkgroups(Dim::Y) => ValueKind::HiddenBlockCountY,
        SpecialReg::NumWorkgroups(Dim::Z) => ValueKind::HiddenBlockCountZ,
        _ => return None,
    })
}

/// The hidden arguments `func` reads (the special registers of its blocks' instructions that
/// live in the kernarg segment), the only ones its metadata declares: a runtime fills what is
/// declared (CLR sets up a hostcall service for `hidden_hostcall_buffer`), and the fewer there
/// are, the closer the read ones sit to the explicit arguments ([`preload_dwords`]).
fn hidden_reads(func: &Function) -> Vec<ValueKind> {
    let mut kinds = Vec::new();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            if let InstData::Special { reg } = func.insts[i] {
                if let Some(k) = hidden_kind(reg).filter(|k| !kinds.contains(k)) {
                    kinds.push(k);
                }
            }
        }
    }
    kinds
}

/// The SGPR the first preloaded kernarg dword lands in (after the kernarg pointer pair).
const PRELOAD_FIRST_SGPR: u32 = 2;

/// Most kernarg dwords kjit preloads on `target`: the 16 user SGPRs less the kernarg pointer
/// (2) and, on gfx90a, the private segment buffer (4) that spilling to scratch may add after
/// the SGPR layout is made (gfx942's scratch needs no user SGPRs). An even number, so that
/// preloaded 8-byte arguments (8-aligned in the segment) sit in even-aligned pairs.
fn max_preload_dwords(target: Target) -> u32 {
    if target.has_architected_flat_scratch() {
        14
    } else {
        10
    }
}

/// The kernarg dwords (a prefix of the segment, in dwords) worth preloading into user SGPRs:
/// enough to hold every prologue load of an explicit argument that fits under
/// [`max_preload_dwords`]. A load that does not fit stays an `s_load`. 0 when there is
/// nothing to preload.
///
/// The hidden arguments (right after the explicit ones, [`kernel_meta`]) are preloaded where
/// that prefix holds them (saxpy's group size in the padding dword after `y.len`) and never
/// extend it: each dword more moves the workgroup id one SGPR higher, where the hidden
/// argument's `s_load_dword` takes any free SGPR (measured on gfx942: vector_add, seed_2d,
/// wave_permute 1 SGPR more, the hash kernels 3-4 more and 3 instructions; reduce_sum and
/// vector_add_pipelined would have been 2 and 3 instructions shorter, `docs/performance-log.md`).
///
/// A buffer's length takes the dword after it too when that dword lands on the last SGPR of an
/// aligned quad (the slot then fills the quad its descriptor is built over in place, the
/// config word over the slot's padding); otherwise nothing reads that dword, and preloading it
/// would only put the workgroup id one SGPR higher (vector_add on gfx942: 11 dwords, not 12,
/// and 20 SGPRs). The count is not rounded to even: pairs inside the prefix are aligned by
/// where it starts.
///
/// Measured against leaving out the pointer of a buffer whose length does not fit too
/// (issue 15, `docs/performance-log.md`): up to 5% more cycles on `mi250x` (hash_rounds,
/// stencil_pipelined), through the allocation that followed the shifted system SGPRs.
fn preload_dwords(func: &Function, slots: &[ArgSlot], target: Target) -> u32 {
    let limit = max_preload_dwords(target);
    // (first dword, dwords) of each load the prologue makes.
    let mut loads: Vec<(u32, u32)> = Vec::new();
    for (k, &p) in func.blocks[func.layout[0]].params.iter().enumerate() {
        let slot = slots[k];
        match func.value_type(p) {
            Type::Buffer { .. } => {
                loads.push((slot.offset / 4, 2));
                let pad_on_quad_end = (PRELOAD_FIRST_SGPR + slot.len_offset / 4 + 1) % 4 == 3;
                loads.push((slot.len_offset / 4, if pad_on_quad_end { 2 } else { 1 }));
            }
            t => loads.push((slot.offset / 4, if t.bytes() == 8 { 2 } else { 1 })),
        }
    }
    loads
        .iter()
        .map(|&(a, n)| a + n)
        .filter(|&e| e <= limit)
        .max()
        .unwrap_or(0)
}

/// The machine blocks of one IR block.
#[derive(Clone, Copy, Debug, Default)]
struct Section {
    head: Option<MBlock>,
    body: Option<MBlock>,
}

/// Instruction selection state for one function.
pub(crate) struct Isel<'a> {
    pub(crate) func: &'a Function,
    pub(crate) target: Target,
    pub(crate) uni: Uniformity,
    pub(crate) mf: MachineFunction,
    loops: LoopInfo,
    /// Sections in layout order.
    order: Vec<Block>,
    pos: SecondaryMap<Block, usize>,
    sections: SecondaryMap<Block, Section>,
    /// Machine CFG predecessors.
    preds: Vec<Vec<MBlock>>,
    /// SSA construction state.
    ssa: ssa::SsaState,
    /// The block being filled.
    pub(crate) cur: MBlock,
    /// The EXEC mask of the current body (an SGPR-pair vreg).
    pub(crate) cur_exec: Option<VReg>,
    /// The IR block whose body is being lowered.
    pub(crate) cur_block: Block,
    /// The EXEC the wave was launched with: its lanes are a prefix, so lane 0 is active.
    pub(crate) launch_exec: Option<VReg>,
    /// Values used only in their own block: their vreg.
    local: HashMap<Value, VReg>,
    /// Variables initialised in the head of each section.
    inits: SecondaryMap<Block, Vec<Var>>,
    /// Values that need tied partial writes (divergent, defined in a loop, used after it).
    tied_vals: Vec<bool>,
    /// Values used outside their defining block.
    crossing: Vec<bool>,
    /// The first value read in a block filled before its definition was lowered (a value
    /// that is not a variable: it would read as undefined). An internal error, reported by
    /// [`Isel::run`] instead of selecting code that reads an undefined register.
    read_before_def: Option<Value>,
    /// Prologue values.
    pub(crate) kernarg: Option<VReg>,
    pub(crate) params: HashMap<Value, VReg>,
    pub(crate) descs: HashMap<Value, VReg>,
    pub(crate) lens: HashMap<Value, VReg>,
    pub(crate) specials: HashMap<kjit_ir::SpecialReg, VReg>,
    pub(crate) lane_id: Option<VReg>,
    pub(crate) lds_base: SecondaryMap<kjit_ir::LdsArray, u32>,
    slots: Vec<ArgSlot>,
    /// Per-body cache of lane masks of divergent bools (valid in the current block only).
    pub(crate) mask_cache: HashMap<Value, VReg>,
    /// Per-block cache of byte-offset VGPRs: (index, shift) -> `index << shift`, valid in the
    /// current block under the current EXEC (cleared when EXEC is set).
    pub(crate) addr_cache: HashMap<(Value, u32), VReg>,
    /// The `addr_cache` entries that are one VALU of an entry-block offset (keyed LDS
    /// indices): forgotten at a barrier, so a read after it remakes its address instead of
    /// holding a VGPR across the barrier's wait.
    pub(crate) remade_after_barrier: Vec<(Value, u32)>,
    /// The SGPR sum of the two uniform terms of a divergent `add3` (its value as the key), for
    /// a byte offset of the same `add3` to share.
    pub(crate) uniform_sums: HashMap<Value, VReg>,
    /// Per-block map from an SGPR made by `v_readfirstlane_b32` to the VGPR it was read from,
    /// valid under the current EXEC (cleared with `addr_cache`).
    pub(crate) lane_copies: HashMap<VReg, VReg>,
    /// Latch block of each loop header.
    latch: SecondaryMap<Block, Option<MBlock>>,
    /// The EXEC each section's head set (the body runs under it).
    exec_of: HashMap<Block, VReg>,
    /// SGPR pairs that are the constant 0 (`s_mov_b64 r, 0`): a mask ORed into one is just the
    /// other operand.
    zero_pairs: rustc_hash::FxHashSet<VReg>,
    /// Global loads that may read through the scalar cache (`lower::noclobber_loads`).
    pub(crate) noclobber: rustc_hash::FxHashSet<kjit_ir::Inst>,
    /// Kernarg loads made so far, by (byte offset, dwords): one load per slot.
    kernarg_loads: HashMap<(u32, u8), VReg>,
    /// Kernarg dwords the dispatcher preloads into user SGPRs (0: none), and the SGPR tuple
    /// that holds them (made by the prologue).
    preload: u32,
    preloaded: Option<VReg>,
    /// IR blocks entered by the whole wave through real branches ([`Isel::compute_direct`]):
    /// no head, no mask, reached only by `s_branch`/`s_cbranch_scc*` from their predecessors.
    direct: SecondaryMap<Block, bool>,
    /// Branching block -> the join every one of its lanes reaches ([`Isel::compute_rejoins`]):
    /// the join's mask is the branch's EXEC, saved there, not an OR over the edges.
    rejoin: HashMap<Block, Block>,
    /// Global loads issued as loads to LDS by the store they feed (`lds_dma::pairs`): load →
    /// store, and store → (load, the uniform part of its LDS index).
    pub(crate) dma_loads: HashMap<kjit_ir::Inst, kjit_ir::Inst>,
    pub(crate) dma_stores: HashMap<kjit_ir::Inst, lds_dma::DmaStore>,
    /// Uniform divisors of unsigned divisions ([`idiv::uniform_divisors`]).
    pub(crate) divisors: rustc_hash::FxHashSet<Value>,
    /// How large an element offset may go in the immediate of a global access at each index
    /// ([`index_sign`]).
    pub(crate) offset_headroom: SecondaryMap<Value, u32>,
    /// Reciprocals of uniform divisors made in the entry block (SGPRs, valid everywhere).
    pub(crate) recips: HashMap<Value, VReg>,
    /// Divergent entry-block values that index LDS (elements or fragments) in other blocks,
    /// with the byte shifts ([`lower::entry_lds_indices`]).
    pub(crate) lds_indices: HashMap<Value, Vec<u32>>,
    /// Their byte offsets, made once in the entry block under the launch EXEC (valid
    /// everywhere): a loop's LDS reads shift no invariant index per iteration.
    pub(crate) entry_offsets: HashMap<(Value, u32), VReg>,
    /// Per-block cache of divisions: (dividend, divisor, signed) -> (quotient, remainder),
    /// valid under the current EXEC (cleared with `addr_cache`).
    pub(crate) divrem_cache: HashMap<(Value, Value, bool), (VReg, VReg)>,
    /// `v_perm_b32` selectors by value: one `s_mov_b32` at the end of the entry block, valid
    /// everywhere (gfx9's VOP3 takes no literal, and rematerialising them per use cost two
    /// SALU instructions per perm inside loops).
    pub(crate) perm_selectors: HashMap<u32, VReg>,
    /// Masked stores grouped under one narrowed EXEC ([`store_masks`]), and the one open now.
    store_regions: store_masks::StoreRegions,
    store_region: Option<store_masks::OpenRegion>,
}

impl<'a> Isel<'a> {
    /// Selection state for `func`, whose uniformity is `uni`.
    fn new(
        func: &'a Function,
        uni: Uniformity,
        target: Target,
        kernarg_preload: bool,
    ) -> Result<Isel<'a>, IselError> {
        let divisors = idiv::uniform_divisors(func, &uni);
        let lds_indices = lower::entry_lds_indices(func, &uni);
        let loops = LoopInfo::compute(func)?;
        let order = order::layout(func, &loops)?;
        let mut pos = SecondaryMap::new();
        for (i, &b) in order.iter().enumerate() {
            pos[b] = i;
        }
        let (meta, slots) = kernel_meta(func);
        let preload = if kernarg_preload && !func.layout.is_empty() {
            preload_dwords(func, &slots, target)
        } else {
            0
        };
        let mut lds_base = SecondaryMap::new();
        let mut lds_off = 0u32;
        // Static arrays in declaration order, then the dynamic one at the (aligned) static size,
        // which is also the code object's `group_segment_fixed_size`: the launch's dynamic LDS
        // bytes follow it.
        let statics = func.lds.iter().filter(|(_, d)| !d.dynamic);
        let frag_arrays = frag::frag_lds_arrays(func);
        for (a, d) in statics.chain(func.lds.iter().filter(|(_, d)| d.dynamic)) {
            let size = d.elem.bytes();
            let align = if frag_arrays.contains(&a) {
                16
            } else {
                size.max(4)
            };
            lds_off = lds_off.div_ceil(align) * align;
            lds_base[a] = lds_off;
            lds_off += d.len * size;
        }
        let mut uses_wg = [false; 3];
        let mut item_dims = 0u8;
        for b in &order {
            for &i in &func.blocks[*b].insts {
                if let InstData::Special { reg } = func.insts[i] {
                    match reg {
                        kjit_ir::SpecialReg::WorkgroupId(d) => uses_wg[d.index()] = true,
                        kjit_ir::SpecialReg::WorkitemId(d) => {
                            item_dims = item_dims.max(d.index() as u8 + 1)
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut meta = meta;
        meta.group_segment_fixed_size = lds_off;
        let abi = KernelAbi {
            target,
            meta,
            workgroup_ids: uses_wg,
            workitem_dims: item_dims,
            lds_bytes: lds_off,
        };
        let nvals = func.values.len();
        let (dma_loads, dma_stores) = lds_dma::pairs(func, &uni);
        let store_regions = store_masks::plan(func, &uni, &dma_loads);
        Ok(Isel {
            func,
            target,
            uni,
            mf: MachineFunction::new(abi),
            loops,
            order,
            pos,
            sections: SecondaryMap::new(),
            preds: Vec::new(),
            ssa: ssa::SsaState::default(),
            cur: MBlock::new(0),
            cur_block: func.layout.first().copied().unwrap_or(Block::new(0)),
            cur_exec: None,
            launch_exec: None,
            local: HashMap::default(),
            read_before_def: None,
            inits: SecondaryMap::new(),
            tied_vals: vec![false; nvals],
            crossing: vec![false; nvals],
            kernarg: None,
            params: HashMap::default(),
            descs: HashMap::default(),
            lens: HashMap::default(),
            specials: HashMap::default(),
            lane_id: None,
            lds_base,
            slots,
            mask_cache: HashMap::default(),
            addr_cache: HashMap::default(),
            remade_after_barrier: Vec::new(),
            uniform_sums: HashMap::default(),
            lane_copies: HashMap::default(),
            latch: SecondaryMap::new(),
            exec_of: HashMap::default(),
            zero_pairs: Default::default(),
            noclobber: lower::noclobber_loads(func),
            kernarg_loads: HashMap::default(),
            preload,
            preloaded: None,
            direct: SecondaryMap::new(),
            rejoin: HashMap::default(),
            dma_loads,
            dma_stores,
            divisors,
            offset_headroom: index_sign::offset_headroom(func),
            recips: HashMap::default(),
            lds_indices,
            entry_offsets: HashMap::default(),
            divrem_cache: HashMap::default(),
            perm_selectors: HashMap::default(),
            store_regions,
            store_region: None,
        })
    }

    /// The register class of an IR value.
    pub(crate) fn class_of(&self, v: Value) -> RegClass {
        if self.uni.is_uniform(v) && !matches!(self.func.value_type(v), Type::Frag(_)) {
            RegClass::Sgpr
        } else {
            RegClass::Vgpr
        }
    }

    /// Dwords of an IR value in registers.
    pub(crate) fn dwords_of(&self, v: Value) -> u8 {
        match self.func.value_type(v) {
            Type::I64 | Type::U64 | Type::F64 | Type::Buffer { .. } => 2,
            Type::Frag(f) => f.dwords() as u8,
            _ => 1,
        }
    }

    fn run(&mut self) -> Result<(), IselError> {
        self.analyse_values();
        self.compute_direct();
        self.compute_rejoins();
        self.build_skeleton();
        self.plan_inits();
        let rpo = self.machine_rpo();
        let mut filled = vec![false; self.mf.blocks.len()];
        // The blocks not sealed yet, in block order (filling makes no blocks).
        let mut unsealed: Vec<MBlock> = self.mf.blocks.keys().collect();
        for mb in rpo {
            self.try_seal_all(&filled, &mut unsealed);
            self.fill(mb)?;
            filled[mb.index()] = true;
        }
        self.try_seal_all(&filled, &mut unsealed);
        if let Some(v) = self.read_before_def {
            return Err(IselError::Invalid(format!(
                "internal: {v} is read in a block selected before its definition"
            )));
        }
        ssa::remove_trivial_params(&mut self.mf);
        dce::eliminate_dead_code(&mut self.mf);
        exec_fold::fold_exec_masks(&mut self.mf);
        Ok(())
    }

    /// Which values cross blocks and which need tied partial writes.
    fn analyse_values(&mut self) {
        let func = self.func;
        let mut def_block: SecondaryMap<Value, Option<Block>> = SecondaryMap::new();
        for &b in &self.order {
            for &p in &func.blocks[b].params {
                def_block[p] = Some(b);
            }
            for &i in &func.blocks[b].insts {
                for &r in &func.results[i] {
                    def_block[r] = Some(b);
                }
            }
        }
        for &b in &self.order {
            for &i in &func.blocks[b].insts {
                for &r in &func.results[i] {
                    if matches!(
                        func.insts[i],
                        InstData::Const { .. }
                            | InstData::Special { .. }
                            | InstData::BufferLen { .. }
                    ) {
                        // Materialized where used, or defined in the prologue.
                        def_block[r] = None;
                    }
                }
            }
        }
        // Fragments (tuples of up to 16 dwords) are merged per lane only where lanes can really
        // arrive apart; other values keep the simpler rule (every divergent parameter, every
        // divergent value leaving a loop), which costs them one move.
        let cfg = kjit_ir::cfg::ControlFlowGraph::new(func);
        let is_frag = |v: Value| matches!(func.value_type(v), Type::Frag(_));
        let apart = |b: Block| self.uni.is_divergent_branch(b) || self.uni.in_divergent_region(b);
        let divergent_exit = |h: Block| {
            self.order.iter().any(|&x| {
                self.loops.contains(h, x)
                    && apart(x)
                    && cfg.succs[x].iter().any(|&s| !self.loops.contains(h, s))
            })
        };
        // Whether a value defined in `db` leaves a loop on its way to a use in `b` (by the
        // fragments' rule when `frag`): a function of the two blocks, asked per use of a
        // divergent value from another block, so worked out once per pair (the loop queries
        // collect and hash per call). Keyed by the pairs asked, not a square table: a function
        // of many blocks asks about few pairs.
        let mut leaves_memo: HashMap<(bool, Block, Block), bool> = HashMap::default();
        let mut leaves = |frag: bool, db: Block, b: Block| -> bool {
            *leaves_memo.entry((frag, db, b)).or_insert_with(|| {
                if frag {
                    self.loops
                        .loops_containing(db)
                        .into_iter()
                        .any(|h| !self.loops.contains(h, b) && divergent_exit(h))
                } else {
                    !self.loops.same_or_inner_all(db, b)
                }
            })
        };
        for &b in &self.order {
            for &i in &func.blocks[b].insts {
                func.insts[i].for_each_arg(|a| {
                    let Some(db) = def_block[a] else { return };
                    if db != b {
                        self.crossing[a.index()] = true;
                        if self.uni.is_divergent(a) && leaves(is_frag(a), db, b) {
                            self.tied_vals[a.index()] = true;
                        }
                    }
                });
            }
        }
        // Block parameters of non-entry blocks are always variables.
        let entry = func.entry();
        for &b in &self.order {
            if Some(b) == entry {
                continue;
            }
            for &p in &func.blocks[b].params {
                self.crossing[p.index()] = true;
                let merged = !is_frag(p)
                    || cfg.preds[b].iter().any(|&x| apart(x))
                    || (self.loops.is_header(b) && divergent_exit(b));
                if self.uni.is_divergent(p) && merged {
                    self.tied_vals[p.index()] = true;
                }
            }
        }
    }

    fn new_block(&mut self, depth: u32, partial: bool) -> MBlock {
        let b = self.mf.block();
        self.mf.blocks[b].loop_depth = depth;
        self.mf.blocks[b].exec_partial = partial;
        b
    }

    /// Marks the IR blocks the whole wave enters together through real branches (`direct`):
    /// the entry, and every block outside divergent regions whose predecessors all lie outside
    /// divergent regions and end in a jump or a uniform `brif` (so EXEC at their end holds
    /// every live lane of the wave and all of them go the same way). Such a block gets no head
    /// and no mask: its predecessors branch to its body with `s_branch` / `s_cbranch_scc*`.
    /// The two targets of a uniform `brif` are both direct or both not (a mixed pair would need
    /// the mask update and the branch on one SCC). Removal only, to a fixed point.
    fn compute_direct(&mut self) {
        let func = self.func;
        let uni = &self.uni;
        let uniform_exit = |p: Block| !uni.in_divergent_region(p) && ends_uniformly(func, uni, p);
        let mut preds: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
        for &b in &self.order {
            for s in func.successors(b) {
                preds[s].push(b);
            }
        }
        let entry = self.order[0];
        let scalar = self.scalar_loops(&preds);
        for &b in &self.order {
            self.direct[b] = b == entry || !uni.in_divergent_region(b) || scalar[b];
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &self.order {
                if b != entry
                    && self.direct[b]
                    && !scalar[b]
                    && !preds[b].iter().all(|&p| uniform_exit(p))
                {
                    self.direct[b] = false;
                    changed = true;
                }
                let succs = func.successors(b);
                if succs.len() == 2 && self.direct[succs[0]] != self.direct[succs[1]] {
                    self.direct[succs[0]] = false;
                    self.direct[succs[1]] = false;
                    changed = true;
                }
            }
        }
        self.direct[entry] = true;
    }

    /// Finds the *scalar loops* inside divergent regions: loops whose every branch is uniform
    /// (no divergent branch, no return), entered from one block `P` by a jump and left to one
    /// exit block `E` entered only from the loop. The lanes that enter such a loop all leave it
    /// together at `E`, so its blocks and `E` run under `P`'s EXEC and are direct (real
    /// `s_cbranch_scc*` branches, no masks, no latch): LLVM's uniform loop in a divergent `if`.
    /// `P`, the loop and `E` must be consecutive in the layout (no other section's pending
    /// lanes are jumped over) and `E` in the same loops as `P` (no outer latch inside). `P`'s
    /// head skips an empty EXEC (it branches directly), so no wave runs the loop with no lane.
    /// Returns the blocks of these loops and their exits.
    fn scalar_loops(&self, preds: &SecondaryMap<Block, Vec<Block>>) -> SecondaryMap<Block, bool> {
        let func = self.func;
        let uni = &self.uni;
        let mut scalar: SecondaryMap<Block, bool> = SecondaryMap::new();
        for &h in self.loops.headers() {
            if !uni.in_divergent_region(h) {
                continue;
            }
            let blocks: Vec<Block> = self
                .order
                .iter()
                .copied()
                .filter(|&b| self.loops.contains(h, b))
                .collect();
            let outside: Vec<Block> = preds[h]
                .iter()
                .copied()
                .filter(|&p| !self.loops.contains(h, p))
                .collect();
            let &[p] = outside.as_slice() else { continue };
            let p_jumps = func
                .terminator(p)
                .is_some_and(|t| matches!(func.insts[t], InstData::Jump { .. }));
            let mut exits: Vec<Block> = blocks
                .iter()
                .flat_map(|&b| func.successors(b))
                .filter(|&s| !self.loops.contains(h, s))
                .collect();
            exits.sort();
            exits.dedup();
            let &[e] = exits.as_slice() else { continue };
            let ok = p_jumps
                && blocks.iter().all(|&b| ends_uniformly(func, uni, b))
                && preds[e].iter().all(|&x| self.loops.contains(h, x))
                && !self.loops.is_header(e)
                && func
                    .terminator(e)
                    .is_some_and(|t| !matches!(func.insts[t], InstData::Return))
                && self.pos[h] == self.pos[p] + 1
                && self.pos[e] == self.pos[h] + blocks.len()
                && self.loops.loops_containing(e) == self.loops.loops_containing(p);
            if ok {
                for &b in blocks.iter().chain([&e]) {
                    scalar[b] = true;
                }
            }
        }
        scalar
    }

    /// Whether `b`'s terminator branches for real (to direct blocks, or ends the wave from a
    /// direct block) instead of falling through to the next section.
    fn branches_directly(&self, b: Block) -> bool {
        let func = self.func;
        let succs = func.successors(b);
        if succs.is_empty() {
            return self.direct[b];
        }
        self.direct[succs[0]]
    }

    /// Finds the `if`s whose lanes all meet again at one join, LLVM's `SIAnnotateControlFlow`
    /// shapes: a triangle (`brif c, T, J` with `T` jumping to `J`) or a diamond (both arms jump
    /// to `J`), each arm entered only from the branch, `J` entered only from the branch and the
    /// arms, all in the same loops (a join outside the branch's loop collects lanes over many
    /// rounds). Then the lanes at `J` are exactly the branch's EXEC: `J`'s head restores it
    /// (`s_mov_b64 exec, saved`, as LLVM's `s_or_b64 exec, exec, saved`) and the edges into
    /// `J` compute and OR no masks.
    fn compute_rejoins(&mut self) {
        let func = self.func;
        let mut preds: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
        for &b in &self.order {
            for s in func.successors(b) {
                preds[s].push(b);
            }
        }
        let jump_target = |b: Block| match func.terminator(b).map(|t| &func.insts[t]) {
            Some(InstData::Jump { dest }) => Some(dest.block),
            _ => None,
        };
        for &b in &self.order {
            let succs = func.successors(b);
            if succs.len() != 2 || succs[0] == succs[1] || self.branches_directly(b) {
                continue;
            }
            let (s0, s1) = (succs[0], succs[1]);
            let join = match (jump_target(s0), jump_target(s1)) {
                (Some(j), _) if j == s1 => s1,
                (_, Some(j)) if j == s0 => s0,
                (Some(j0), Some(j1)) if j0 == j1 => j0,
                _ => continue,
            };
            let arms: Vec<Block> = [s0, s1].into_iter().filter(|&s| s != join).collect();
            let loops = self.loops.loops_containing(b);
            let same_loops = |x: Block| self.loops.loops_containing(x) == loops;
            let arms_ok = arms
                .iter()
                .all(|&a| preds[a] == [b] && !self.loops.is_header(a) && same_loops(a));
            let mut want: Vec<Block> = arms.clone();
            if arms.len() == 1 {
                want.push(b);
            }
            let mut got = preds[join].clone();
            want.sort();
            got.sort();
            if arms_ok
                && got == want
                && same_loops(join)
                && !self.loops.is_header(join)
                && !self.direct[join]
            {
                self.rejoin.insert(b, join);
            }
        }
    }

    /// Whether `b` is the join of an `if` ([`Isel::compute_rejoins`]).
    fn is_rejoin(&self, b: Block) -> bool {
        self.rejoin.values().any(|&j| j == b)
    }

    /// Where the head of `b`'s section goes when EXEC is empty: `after`, the next section in
    /// the layout, where lanes of the same region may wait. Past a direct body (the layout puts
    /// the other side of a uniform branch after this side), that section may belong to another
    /// region, which no lane here ever reaches, and jumping into it (maybe into a loop) breaks
    /// the machine CFG's dominance. Then the skip takes the next section after it that the
    /// region's entry (the nearest direct block dominating `b`) reaches, or ends the wave (no
    /// lane of the region is left).
    #[allow(clippy::too_many_arguments)]
    fn skip_target(
        &self,
        b: Block,
        body: MBlock,
        after: MBlock,
        end: MBlock,
        chain: &[MBlock],
        chain_ir: &[Option<Block>],
        direct_bodies: &[MBlock],
        graphs: &mut Option<(kjit_ir::cfg::ControlFlowGraph, kjit_ir::cfg::DominatorTree)>,
    ) -> MBlock {
        let func = self.func;
        let Some(k) = chain.iter().position(|&x| x == body) else {
            return after;
        };
        let Some(ka) = chain.iter().position(|&x| x == after) else {
            return after;
        };
        if !chain[k + 1..ka].iter().any(|x| direct_bodies.contains(x)) {
            return after;
        }
        // Made once per function, and only when a skip needs them (rare).
        let (cfg, dt) = graphs.get_or_insert_with(|| {
            let cfg = kjit_ir::cfg::ControlFlowGraph::new(func);
            let dt = kjit_ir::cfg::DominatorTree::new(func, &cfg);
            (cfg, dt)
        });
        let mut entry = b;
        while !self.direct[entry] {
            match dt.idom(entry) {
                Some(d) => entry = d,
                None => break,
            }
        }
        let mut reached: SecondaryMap<Block, bool> = SecondaryMap::new();
        let mut work = vec![entry];
        reached[entry] = true;
        while let Some(x) = work.pop() {
            for &s in &cfg.succs[x] {
                if !reached[s] {
                    reached[s] = true;
                    work.push(s);
                }
            }
        }
        chain[ka..]
            .iter()
            .zip(&chain_ir[ka..])
            .find(|(x, ir)| !direct_bodies.contains(x) && ir.map_or(true, |ir| reached[ir]))
            .map_or(end, |(x, _)| *x)
    }

    /// Creates the machine blocks and their terminators (without arguments) for the layout.
    fn build_skeleton(&mut self) {
        let func = self.func;
        let n = self.order.len();
        let entry = self.order[0];
        // Main chain in layout order; direct bodies are in it for the emission order but are
        // never fallen into ([`Isel::compute_direct`]).
        let mut chain: Vec<MBlock> = Vec::new();
        // The IR block each chain entry stands for (a latch: its loop's header).
        let mut chain_ir: Vec<Option<Block>> = Vec::new();
        let mut direct_bodies: Vec<MBlock> = Vec::new();
        for (i, &b) in self.order.clone().iter().enumerate() {
            let depth = self.loops.depth(b);
            let partial = self.uni.in_divergent_region(b);
            let head = if i == 0 || self.direct[b] {
                None
            } else {
                Some(self.new_block(depth, true))
            };
            let body = self.new_block(depth, partial || i > 0 && self.any_partial_before(i));
            if let Some(h) = head {
                chain.push(h);
                chain_ir.push(Some(b));
            }
            chain.push(body);
            chain_ir.push(Some(b));
            if self.direct[b] {
                direct_bodies.push(body);
            }
            self.sections[b] = Section {
                head,
                body: Some(body),
            };
            // Latches of loops whose last section this is, innermost first (a direct header is
            // branched to by its back edges).
            for h in self.loops.loops_ending_at(b, &self.order, &self.pos) {
                if self.direct[h] {
                    continue;
                }
                let l = self.new_block(self.loops.depth(h).saturating_sub(1), true);
                self.latch[h] = Some(l);
                chain.push(l);
                chain_ir.push(Some(h));
            }
        }
        let end = self.new_block(0, false);
        chain.push(end);
        chain_ir.push(None);
        let next_of = |mb: MBlock, chain: &[MBlock]| -> MBlock {
            let k = chain.iter().position(|&x| x == mb).unwrap_or(0);
            chain[k + 1..]
                .iter()
                .copied()
                .find(|x| !direct_bodies.contains(x))
                .unwrap_or(end)
        };
        // A wave whose lanes all returned must end (`s_endpgm`) so that barriers the other
        // waves reach later do not wait for it; without barriers the remaining sections are
        // skipped by their heads anyway, so the early end is only built where it matters.
        let is_ret = |b: Block| {
            func.terminator(b)
                .is_some_and(|t| matches!(func.insts[t], InstData::Return))
        };
        let has_barrier = |b: Block| {
            func.blocks[b]
                .insts
                .iter()
                .any(|&i| matches!(func.insts[i], InstData::Barrier))
        };
        let first_ret = self.order.iter().position(|&b| is_ret(b));
        let last_barrier = self.order.iter().rposition(|&b| has_barrier(b));
        let early_end = matches!((first_ret, last_barrier), (Some(r), Some(l)) if r < l);
        // Terminators.
        let mut graphs = None;
        for i in 0..n {
            let b = self.order[i];
            let sec = self.sections[b];
            let body = sec.body.unwrap_or(end);
            let after = next_of(body, &chain);
            let direct_exit = self.branches_directly(b);
            if let (Some(h), false) = (sec.head, direct_exit || self.worth_skipping(b)) {
                // Run the few instructions under an empty EXEC rather than branch around them.
                self.mf.blocks[h].term = Terminator::Jump {
                    target: body,
                    args: vec![],
                };
            } else if let Some(h) = sec.head {
                let target = self.skip_target(
                    b,
                    body,
                    after,
                    end,
                    &chain,
                    &chain_ir,
                    &direct_bodies,
                    &mut graphs,
                );
                let skip = self.new_block(self.loops.depth(b), true);
                self.mf.blocks[skip].term = Terminator::Jump {
                    target,
                    args: vec![],
                };
                self.mf.blocks[h].term = Terminator::Branch {
                    cond: BranchCond::Execz,
                    taken: skip,
                    taken_args: vec![],
                    not_taken: body,
                    not_taken_args: vec![],
                };
            } else if i == 0 {
                // The prologue is the entry's body.
                let _ = entry;
            }
            let succs = func.successors(b);
            let body_of = |s: Block, me: &Self| me.sections[s].body.expect("a section has a body");
            self.mf.blocks[body].term = if direct_exit {
                match succs.len() {
                    // The whole wave ends: `s_endpgm` here, or the final one when it is next.
                    0 if after == end => Terminator::Jump {
                        target: end,
                        args: vec![],
                    },
                    0 => Terminator::Return,
                    1 => Terminator::Jump {
                        target: body_of(succs[0], self),
                        args: vec![],
                    },
                    _ => Terminator::Branch {
                        cond: BranchCond::Scc1,
                        taken: body_of(succs[0], self),
                        taken_args: vec![],
                        not_taken: body_of(succs[1], self),
                        not_taken_args: vec![],
                    },
                }
            } else if is_ret(b) && after != end && early_end {
                let ret = self.new_block(0, false);
                self.mf.blocks[ret].term = Terminator::Return;
                Terminator::Branch {
                    cond: BranchCond::Scc0,
                    taken: ret,
                    taken_args: vec![],
                    not_taken: after,
                    not_taken_args: vec![],
                }
            } else {
                Terminator::Jump {
                    target: after,
                    args: vec![],
                }
            };
        }
        for &h in self.loops.headers() {
            let Some(l) = self.latch[h] else { continue };
            let after = next_of(l, &chain);
            let hb = self.sections[h]
                .head
                .expect("a loop header is not the entry");
            self.mf.blocks[l].term = Terminator::Branch {
                cond: BranchCond::Scc1,
                taken: hb,
                taken_args: vec![],
                not_taken: after,
                not_taken_args: vec![],
            };
        }
        self.mf.blocks[end].term = Terminator::Return;
        self.split_critical_edges();
        self.compute_preds();
    }

    /// Whether the head of `b`'s section branches around the body when EXEC is empty
    /// (`s_cbranch_execz` and a skip block for the variables' values on that path). Not for a
    /// short body that is safe to run with no lane (LLVM's `SIPreEmitPeephole` keeps the branch
    /// from 12 instructions, or for memory, `s_waitcnt` and side effects): at most
    /// [`SHORT_SECTION`] IR instructions of arithmetic, compares, selects and conversions
    /// (no memory, barrier, cross-lane or division), ending in a return, or a jump or branch
    /// without block arguments. Such a body under EXEC = 0 writes no lane, its SALU results are
    /// read only by code its lanes reach, and its edges OR no lanes into their targets' masks.
    /// A loop header too: from the back edge its EXEC is never empty (the latch leaves when no
    /// lane continues), and a wave entering with no lane leaves at the latch.
    fn worth_skipping(&self, b: Block) -> bool {
        let func = self.func;
        let insts = &func.blocks[b].insts;
        // A barrier is reached by every wave of the workgroup or by none (it is only allowed in
        // uniform control flow), so running its section under an empty EXEC costs nothing
        // wrong, and without the skip no path leads around the barrier: `InsertWaitcnt` then
        // sees that loads to LDS it waits for have landed on every path after it.
        if insts
            .iter()
            .any(|&i| matches!(func.insts[i], InstData::Barrier))
        {
            return false;
        }
        if insts.len() > SHORT_SECTION + 1 {
            return true;
        }
        insts.iter().any(|&i| match &func.insts[i] {
            InstData::Const { .. }
            | InstData::Special { .. }
            | InstData::BufferLen { .. }
            | InstData::Unary { .. }
            | InstData::Ternary { .. }
            | InstData::Cmp { .. }
            | InstData::Select { .. }
            | InstData::Convert { .. }
            | InstData::Bitcast { .. } => false,
            InstData::Binary { op, .. } => {
                matches!(op, kjit_ir::BinaryOp::Div | kjit_ir::BinaryOp::Rem)
            }
            // Under an empty EXEC a `return` removes no lane from `alive`.
            InstData::Return => false,
            InstData::Jump { dest } => !dest.args.is_empty(),
            InstData::Brif {
                then_dest,
                else_dest,
                ..
            } => !then_dest.args.is_empty() || !else_dest.args.is_empty(),
            _ => true,
        })
    }

    fn any_partial_before(&self, i: usize) -> bool {
        self.order[..i]
            .iter()
            .any(|&b| self.uni.in_divergent_region(b) || self.uni.is_divergent_branch(b))
    }

    fn split_critical_edges(&mut self) {
        let mut npred = vec![0usize; self.mf.blocks.len()];
        for (_, d) in self.mf.blocks.iter() {
            for (s, _) in d.term.successors() {
                npred[s.index()] += 1;
            }
        }
        let blocks: Vec<MBlock> = self.mf.blocks.keys().collect();
        for b in blocks {
            let succs: Vec<MBlock> = self.mf.blocks[b]
                .term
                .successors()
                .iter()
                .map(|x| x.0)
                .collect();
            if succs.len() < 2 {
                continue;
            }
            for s in succs {
                if npred[s.index()] < 2 {
                    continue;
                }
                let depth = self.mf.blocks[s].loop_depth;
                let split = self.new_block(depth, true);
                self.mf.blocks[split].term = Terminator::Jump {
                    target: s,
                    args: vec![],
                };
                match &mut self.mf.blocks[b].term {
                    Terminator::Branch {
                        taken, not_taken, ..
                    } => {
                        if *taken == s {
                            *taken = split;
                        } else if *not_taken == s {
                            *not_taken = split;
                        }
                    }
                    _ => unreachable!("only branches have two successors"),
                }
            }
        }
    }

    fn compute_preds(&mut self) {
        self.preds = vec![Vec::new(); self.mf.blocks.len()];
        for (b, d) in self.mf.blocks.iter() {
            for (s, _) in d.term.successors() {
                self.preds[s.index()].push(b);
            }
        }
    }

    fn machine_rpo(&self) -> Vec<MBlock> {
        let n = self.mf.blocks.len();
        let mut seen = vec![false; n];
        let mut post = Vec::new();
        let mut stack: Vec<(MBlock, usize)> = vec![(self.mf.entry(), 0)];
        seen[0] = true;
        while let Some((b, k)) = stack.pop() {
            let succs = self.mf.blocks[b].term.successors();
            // Visit the not-taken (fall-through) successor first so layout order is kept.
            let ordered: Vec<MBlock> = succs.iter().rev().map(|x| x.0).collect();
            if k < ordered.len() {
                stack.push((b, k + 1));
                let s = ordered[k];
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(b);
            }
        }
        post.reverse();
        post
    }

    /// Decides in which section's head each variable starts.
    fn plan_inits(&mut self) {
        let func = self.func;
        let entry = self.order[0];
        // Writers and readers (IR blocks) per variable.
        let mut wr: HashMap<Var, (Vec<Block>, Vec<Block>)> = HashMap::default();
        for &b in &self.order {
            let t = func.terminator(b);
            for &s in func.successors(b).iter() {
                if self.direct[s] {
                    continue;
                }
                let e = wr.entry(Var::Mask(s)).or_default();
                e.0.push(b);
                e.1.push(s);
            }
            if let Some(&j) = self.rejoin.get(&b) {
                wr.entry(Var::Mask(j)).or_default().0.push(b);
            }
            if let Some(t) = t {
                for call in func.insts[t].branch_targets() {
                    for &p in &func.blocks[call.block].params {
                        let e = wr.entry(Var::Val(p)).or_default();
                        e.0.push(b);
                    }
                }
            }
            for &i in &func.blocks[b].insts {
                for &r in &func.results[i] {
                    if self.crossing[r.index()] {
                        wr.entry(Var::Val(r)).or_default().0.push(b);
                    }
                }
                func.insts[i].for_each_arg(|a| {
                    if self.crossing[a.index()] && func.param_index(a).is_none() {
                        wr.entry(Var::Val(a)).or_default().1.push(b);
                    }
                });
            }
        }
        let _ = entry;
        let mut vars: Vec<(Var, (Vec<Block>, Vec<Block>))> = wr.into_iter().collect();
        vars.sort_by_key(|(v, _)| match v {
            Var::Val(x) => (0, x.index()),
            Var::Mask(b) => (1, b.index()),
            Var::Alive => (2, 0),
        });
        for (var, (w, r)) in vars {
            if w.is_empty() {
                continue;
            }
            let mut x = w.iter().map(|b| self.pos[*b]).min().unwrap_or(0);
            loop {
                let xb = self.order[x];
                let bad = self
                    .loops
                    .loops_containing(xb)
                    .into_iter()
                    .find(|&h| !w.iter().chain(r.iter()).all(|&b| self.loops.contains(h, b)));
                match bad {
                    Some(h) => x = self.pos[h].saturating_sub(1),
                    None => break,
                }
            }
            self.inits[self.order[x]].push(var);
        }
    }

    /// Seals, in block order, each block of `unsealed` whose predecessors are all `filled`,
    /// and drops it from the list (only this seals: the list is every block not sealed, so
    /// each call visits those alone instead of every block of the function).
    fn try_seal_all(&mut self, filled: &[bool], unsealed: &mut Vec<MBlock>) {
        unsealed.retain(|&b| {
            if self.preds[b.index()].iter().all(|p| filled[p.index()]) {
                self.seal(b);
                false
            } else {
                true
            }
        });
    }

    /// The IR block whose head or body `mb` is, if any.
    fn section_of(&self, mb: MBlock) -> Option<(Block, bool)> {
        for &b in &self.order {
            let s = self.sections[b];
            if s.head == Some(mb) {
                return Some((b, true));
            }
            if s.body == Some(mb) {
                return Some((b, false));
            }
        }
        None
    }

    fn fill(&mut self, mb: MBlock) -> Result<(), IselError> {
        self.cur = mb;
        self.mask_cache.clear();
        self.addr_cache.clear();
        self.remade_after_barrier.clear();
        self.lane_copies.clear();
        self.divrem_cache.clear();
        if mb == self.mf.entry() {
            self.prologue()?;
            let entry = self.order[0];
            self.emit_inits(entry);
            // Every mask starts empty on every path, also on those where real branches skip
            // the head that initialises it (dead and removed where none does).
            for &b in &self.order.clone()[1..] {
                if !self.direct[b] && !self.inits[entry].contains(&Var::Mask(b)) {
                    let z = self.s_zero64();
                    self.write(Var::Mask(b), z);
                }
            }
            self.body(entry)?;
            return Ok(());
        }
        if let Some((b, is_head)) = self.section_of(mb) {
            if is_head {
                self.emit_inits(b);
                let m = self.read(Var::Mask(b));
                self.set_exec(m);
                self.exec_of.insert(b, m);
                // The lanes are taken: the mask starts again from none (for a loop header's
                // next round, and for paths on which real branches skipped the head of the
                // section that initialises it; dead and removed otherwise).
                let z = self.s_zero64();
                self.write(Var::Mask(b), z);
            } else {
                self.body(b)?;
            }
            return Ok(());
        }
        if let Some(h) = self
            .loops
            .headers()
            .iter()
            .copied()
            .find(|&h| self.latch[h] == Some(mb))
        {
            let m = self.read(Var::Mask(h));
            let mut i = MInst::isa(
                op("s_cmp_lg_u64"),
                &[
                    MOperand::Use(m),
                    MOperand::Phys(crate::isa::Operand::InlineInt(0)),
                ],
            );
            i.implicit_defs = implicit::SCC;
            self.push(i);
        }
        Ok(())
    }

    fn emit_inits(&mut self, b: Block) {
        let vars = std::mem::take(&mut self.inits[b]);
        for &v in &vars {
            let r = match v {
                Var::Mask(_) | Var::Alive => self.s_zero64(),
                Var::Val(x) => {
                    let r = self.new_vreg(self.class_of(x), self.dwords_of(x));
                    self.push(MInst::pseudo(MOpcode::ImplicitDef, &[MOperand::Def(r)]));
                    r
                }
            };
            self.write(v, r);
        }
        self.inits[b] = vars;
    }

    /// The current value of a variable in the current block.
    pub(crate) fn read(&mut self, var: Var) -> VReg {
        let b = self.cur;
        self.read_in(var, b)
    }

    /// Writes a new value of a variable in the current block.
    pub(crate) fn write(&mut self, var: Var, v: VReg) {
        let b = self.cur;
        self.ssa.write(b, var, v);
    }

    /// A new virtual register.
    pub(crate) fn new_vreg(&mut self, class: RegClass, dwords: u8) -> VReg {
        self.mf.vreg(class, dwords)
    }

    /// Appends an instruction to the current block.
    pub(crate) fn push(&mut self, i: MInst) {
        let b = self.cur;
        self.mf.blocks[b].insts.push(i);
    }

    pub(crate) fn s_zero64(&mut self) -> VReg {
        let z = self.new_vreg(RegClass::Sgpr, 2);
        self.push(MInst::isa(
            op("s_mov_b64"),
            &[
                MOperand::Def(z),
                MOperand::Phys(crate::isa::Operand::InlineInt(0)),
            ],
        ));
        self.zero_pairs.insert(z);
        z
    }

    /// `exec = -1` (every lane), without a register for the mask.
    pub(crate) fn set_exec_all(&mut self) {
        let mut i = MInst::isa(
            op("s_mov_b64"),
            &[
                MOperand::Phys(crate::isa::Operand::Special(crate::isa::SpecialReg::Exec)),
                MOperand::Phys(crate::isa::Operand::InlineInt(-1)),
            ],
        );
        i.implicit_defs = implicit::EXEC;
        self.push(i);
        self.addr_cache.clear();
        self.lane_copies.clear();
        self.divrem_cache.clear();
        let b = self.cur;
        self.mf.blocks[b].exec_partial = true;
    }

    /// `exec = m`.
    pub(crate) fn set_exec(&mut self, m: VReg) {
        let mut i = MInst::isa(
            op("s_mov_b64"),
            &[
                MOperand::Phys(crate::isa::Operand::Special(crate::isa::SpecialReg::Exec)),
                MOperand::Use(m),
            ],
        );
        i.implicit_defs = implicit::EXEC;
        self.push(i);
        // A VGPR computed under the old EXEC may lack lanes the new one has.
        self.addr_cache.clear();
        self.lane_copies.clear();
        self.divrem_cache.clear();
        // Moves the allocator puts in this block must be whole-wave from here on.
        let b = self.cur;
        self.mf.blocks[b].exec_partial = true;
    }

    /// The vreg of an IR value at the current point (constants are materialized here).
    pub(crate) fn val(&mut self, v: Value) -> VReg {
        if let Some(&r) = self.params.get(&v) {
            return r;
        }
        if let Some(&r) = self.local.get(&v) {
            return r;
        }
        if let Some(def) = self.const_of(v) {
            return self.materialize_const(v, def);
        }
        if !self.crossing[v.index()] && self.read_before_def.is_none() {
            self.read_before_def = Some(v);
        }
        self.read(Var::Val(v))
    }

    /// Records the result of an IR instruction.
    pub(crate) fn def(&mut self, v: Value, r: VReg) {
        if !self.crossing[v.index()] {
            self.local.insert(v, r);
            return;
        }
        if self.tied_vals[v.index()] {
            self.write_partial(Var::Val(v), r);
        } else {
            self.write(Var::Val(v), r);
        }
    }

    /// [`Isel::write_partial`] of a 32-bit immediate (`v_mov_b32` of the constant, tied).
    pub(crate) fn write_partial_imm(&mut self, var: Var, bits: u32) {
        let prev = self.read(var);
        let data = self.mf.vregs[prev];
        if data.class != RegClass::Vgpr || data.dwords != 1 {
            let r = self.s_mov32(bits);
            self.write_partial(var, r);
            return;
        }
        let new = self.new_vreg(RegClass::Vgpr, 1);
        let src = valu::inline32(bits).unwrap_or(crate::isa::Operand::Literal(bits));
        let mut i = MInst::isa(
            op("v_mov_b32"),
            &[MOperand::Def(new), MOperand::Phys(src), MOperand::Use(prev)],
        );
        i.tied = Some((0, 2));
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        self.write(var, new);
    }

    /// Per-lane write of a VGPR variable under the current EXEC: lanes outside keep the old value.
    pub(crate) fn write_partial(&mut self, var: Var, src: VReg) {
        let prev = self.read(var);
        let data = self.mf.vregs[prev];
        let src = self.to_class(src, data.class);
        if data.dwords > 2 {
            // A fragment: dword by dword, each a tied partial write, put back together.
            let mut parts = Vec::new();
            for k in 0..data.dwords {
                let (p, s) = (self.extract(prev, k, 1), self.extract(src, k, 1));
                let new = self.new_vreg(data.class, 1);
                let mut i = MInst::isa(
                    op("v_mov_b32"),
                    &[MOperand::Def(new), MOperand::Use(s), MOperand::Use(p)],
                );
                i.encoding = crate::isa::Encoding::Native;
                i.tied = Some((0, 2));
                i.implicit_uses = implicit::EXEC;
                self.push(i);
                parts.push(new);
            }
            let new = self.build(data.class, &parts);
            self.write(var, new);
            return;
        }
        let new = self.new_vreg(data.class, data.dwords);
        let mut i = if data.dwords == 2 {
            MInst::isa(
                op("v_lshlrev_b64"),
                &[
                    MOperand::Def(new),
                    MOperand::Phys(crate::isa::Operand::InlineInt(0)),
                    MOperand::Use(src),
                    MOperand::Use(prev),
                ],
            )
        } else {
            let mut i = MInst::isa(
                op("v_mov_b32"),
                &[MOperand::Def(new), MOperand::Use(src), MOperand::Use(prev)],
            );
            i.encoding = crate::isa::Encoding::Native;
            i
        };
        i.tied = Some((0, (i.ops.len() - 1) as u8));
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        self.write(var, new);
    }

    fn seal(&mut self, b: MBlock) {
        let pending = self.ssa.begin_seal(b);
        let mut pending = std::collections::VecDeque::from(pending);
        loop {
            while let Some((var, p)) = pending.pop_front() {
                self.add_param_args(b, var, p);
            }
            let more = self.ssa.take_incomplete(b);
            if more.is_empty() {
                break;
            }
            pending.extend(more);
        }
        self.ssa.finish_seal(b);
    }

    fn read_in(&mut self, var: Var, b: MBlock) -> VReg {
        if let Some(v) = self.ssa.current(b, var) {
            return v;
        }
        let (class, dwords) = self.var_shape(var);
        let v = if !self.ssa.is_sealed(b) {
            let p = self.new_vreg(class, dwords);
            self.mf.blocks[b].params.push(p);
            self.ssa.add_incomplete(b, var, p);
            p
        } else if self.preds[b.index()].len() == 1 {
            let pb = self.preds[b.index()][0];
            self.read_in(var, pb)
        } else if self.preds[b.index()].is_empty() {
            // No definition reaches: an undefined value.
            // After the entry's live-ins, which must come first.
            let r = self.new_vreg(class, dwords);
            let insts = &mut self.mf.blocks[b].insts;
            let at = insts
                .iter()
                .position(|i| !matches!(i.opcode, MOpcode::LiveIn(_)))
                .unwrap_or(insts.len());
            insts.insert(at, MInst::pseudo(MOpcode::ImplicitDef, &[MOperand::Def(r)]));
            r
        } else {
            let p = self.new_vreg(class, dwords);
            self.mf.blocks[b].params.push(p);
            self.ssa.write(b, var, p);
            self.add_param_args(b, var, p);
            p
        };
        self.ssa.write(b, var, v);
        v
    }

    fn add_param_args(&mut self, b: MBlock, var: Var, _p: VReg) {
        for pb in self.preds[b.index()].clone() {
            let a = self.read_in(var, pb);
            push_arg(&mut self.mf.blocks[pb].term, b, a);
        }
    }

    fn var_shape(&self, var: Var) -> (RegClass, u8) {
        match var {
            Var::Val(v) => (self.class_of(v), self.dwords_of(v)),
            Var::Mask(_) | Var::Alive => (RegClass::Sgpr, 2),
        }
    }

    /// Loads kernel arguments, builds buffer descriptors and reads the ABI values.
    fn prologue(&mut self) -> Result<(), IselError> {
        use crate::isa::Operand as O;
        let func = self.func;
        let ka = self.new_vreg(RegClass::Sgpr, 2);
        self.push(MInst::pseudo(
            MOpcode::LiveIn(crate::mir::AbiValue::KernargPtr),
            &[MOperand::Def(ka)],
        ));
        self.kernarg = Some(ka);
        if self.preload > 0 {
            let t = self.new_vreg(RegClass::Sgpr, self.preload as u8);
            self.push(MInst::pseudo(
                MOpcode::LiveIn(crate::mir::AbiValue::KernargPreload),
                &[MOperand::Def(t)],
            ));
            self.preloaded = Some(t);
        }
        // ABI live-ins first.
        for d in 0..3u8 {
            if self.mf.abi.workgroup_ids[d as usize] {
                let r = self.new_vreg(RegClass::Sgpr, 1);
                self.push(MInst::pseudo(
                    MOpcode::LiveIn(crate::mir::AbiValue::WorkgroupId(d)),
                    &[MOperand::Def(r)],
                ));
                self.specials.insert(
                    kjit_ir::SpecialReg::WorkgroupId(kjit_ir::Dim::ALL[d as usize]),
                    r,
                );
            }
        }
        let dims = self.mf.abi.workitem_dims;
        let mut item_regs = Vec::new();
        if dims > 0 {
            if self.target == Target::Gfx900 {
                for d in 0..dims {
                    let r = self.new_vreg(RegClass::Vgpr, 1);
                    self.push(MInst::pseudo(
                        MOpcode::LiveIn(crate::mir::AbiValue::WorkitemId(d)),
                        &[MOperand::Def(r)],
                    ));
                    item_regs.push(r);
                }
            } else {
                let r = self.new_vreg(RegClass::Vgpr, 1);
                self.push(MInst::pseudo(
                    MOpcode::LiveIn(crate::mir::AbiValue::WorkitemId(0)),
                    &[MOperand::Def(r)],
                ));
                // The packed ids are `x | y << 10 | z << 20`; with y and z declared to be
                // always 0, the register is the x id as it is.
                let y_z_zero = self
                    .func
                    .workgroup_size
                    .is_some_and(|s| s[1] == 1 && s[2] == 1);
                if y_z_zero {
                    item_regs.push(r);
                }
                for d in item_regs.len() as u8..dims {
                    let x = self.new_vreg(RegClass::Vgpr, 1);
                    self.vop3(
                        "v_bfe_u32",
                        x,
                        &[
                            valu::Src::R(r),
                            valu::Src::Imm(10 * d as u32),
                            valu::Src::Imm(10),
                        ],
                    );
                    item_regs.push(x);
                }
            }
            for (d, r) in item_regs.iter().enumerate() {
                self.specials
                    .insert(kjit_ir::SpecialReg::WorkitemId(kjit_ir::Dim::ALL[d]), *r);
            }
        }
        // The launch EXEC is the first alive mask.
        let e0 = self.new_vreg(RegClass::Sgpr, 2);
        self.push(MInst::isa(
            op("s_mov_b64"),
            &[
                MOperand::Def(e0),
                MOperand::Phys(O::Special(crate::isa::SpecialReg::Exec)),
            ],
        ));
        self.cur_exec = Some(e0);
        self.launch_exec = Some(e0);
        self.write(Var::Alive, e0);
        // Arguments.
        let entry = self.order[0];
        let params: Vec<Value> = func.blocks[entry].params.clone();
        for (k, &p) in params.iter().enumerate() {
            let slot = self.slots[k];
            match func.value_type(p) {
                Type::Buffer { elem, .. } => {
                    // Words 0-1 are one SGPR pair computed whole, words 2 and 3 single SGPRs:
                    // the register allocator's webs put the pair straight into its half of the
                    // quad (`regalloc/webs.rs`, Build-part coalescing) and places each single
                    // on its dword of the quad where that is free (`place_singles`), so the
                    // descriptor is computed where the pointer and length were loaded or
                    // preloaded, when the quad's alignment allows.
                    // Address and length side by side: one `s_load_dwordx4` for both.
                    // (Preloaded dwords are a prefix: a length preloaded has its pointer
                    // preloaded too; [`preload_dwords`] leaves a buffer whose length does not
                    // fit to this load.)
                    let preloaded = self.is_preloaded(slot.len_offset, 1);
                    let side_by_side = slot.len_offset == slot.offset + 8 && !preloaded;
                    // A scalar argument in the dword after the length (read with it).
                    let shares_tail = params.iter().enumerate().any(|(j, &q)| {
                        !matches!(func.value_type(q), Type::Buffer { .. })
                            && self.slots[j].offset == slot.len_offset + 4
                    });
                    let (addr, len) =
                        if side_by_side && shares_tail && self.is_preloaded(slot.offset, 2) {
                            // Only the address preloaded (the slot crosses the preloaded prefix),
                            // and a scalar argument after the length: the slot's last two dwords
                            // in one `s_load_dwordx2`, not the whole slot again in a quad (which
                            // the scalar keeps live, at a 4-aligned base above every preloaded
                            // SGPR). Without such a scalar the quad is loaded: its words are built
                            // in place and the preloaded address is left unread.
                            let a = self.s_load(slot.offset, 2);
                            let p = self.s_load(slot.len_offset, 2);
                            let l = self.extract(p, 0, 1);
                            self.kernarg_loads.insert((slot.len_offset, 1), l);
                            (a, l)
                        } else if side_by_side {
                            let q = self.s_load(slot.offset, 4);
                            let (a, l) = (self.extract(q, 0, 2), self.extract(q, 2, 1));
                            self.kernarg_loads.insert((slot.offset, 2), a);
                            self.kernarg_loads.insert((slot.len_offset, 1), l);
                            (a, l)
                        } else {
                            (self.s_load(slot.offset, 2), self.s_load(slot.len_offset, 1))
                        };
                    // The length (where read) is the same SGPR (no second load of it).
                    let len_read = func
                        .insts
                        .values()
                        .any(|d| matches!(d, InstData::BufferLen { buf } if *buf == p));
                    if len_read {
                        self.lens.insert(p, len);
                    }
                    // Words 0-1: base address, stride 0 (bits 48.. of the pair cleared). One
                    // 64-bit op both moves the pair (when not in place) and masks it; in place it
                    // is as long as `s_and_b32` of the high word.
                    let base =
                        self.sop2("s_bfe_u64", &[valu::Src::R(addr), valu::Src::Imm(48 << 16)]);
                    // Word 2: num_records = len * size (mod 2^32, as the 64-bit form kept).
                    let shift = elem.bytes().trailing_zeros();
                    let nrec = if shift != 0 {
                        self.sop2("s_lshl_b32", &[valu::Src::R(len), valu::Src::Imm(shift)])
                    } else {
                        len
                    };
                    // Word 3: the config word, a constant part: the Build writes it straight
                    // into the quad (`s_mov_b32`), with no SGPR of its own to place.
                    let desc = self.new_vreg(RegClass::Sgpr, 4);
                    self.push(MInst::pseudo(
                        MOpcode::Build,
                        &[
                            MOperand::Def(desc),
                            MOperand::Use(base),
                            MOperand::Use(nrec),
                            MOperand::Phys(crate::isa::Operand::Literal(DESC_WORD3)),
                        ],
                    ));
                    self.descs.insert(p, desc);
                }
                t => {
                    let dw = if t.bytes() == 8 { 2 } else { 1 };
                    let aligned = slot.offset & !3;
                    let mut r = self.s_load(aligned, dw);
                    if t == Type::F16 {
                        if slot.offset & 2 != 0 {
                            r = self.sop2("s_lshr_b32", &[valu::Src::R(r), valu::Src::Imm(16)]);
                        }
                        r = self.sop2("s_and_b32", &[valu::Src::R(r), valu::Src::Imm(0xffff)]);
                    }
                    let r = if self.uni.is_uniform(p) {
                        r
                    } else {
                        self.to_class(r, RegClass::Vgpr)
                    };
                    self.params.insert(p, r);
                    self.hoist_reciprocal(p);
                }
            }
        }
        // Launch sizes used anywhere. Special registers and buffer lengths are defined here,
        // in the prologue, so their IR values are known in every block from the start: blocks
        // are not filled in layout order (a flow block may reach a loop's latch before its
        // body), and a use filled before the IR instruction is lowered must not read them as
        // variables.
        for &b in &self.order.clone() {
            for &i in &func.blocks[b].insts {
                let r = match func.insts[i] {
                    InstData::Special { reg } => self.prologue_special(reg),
                    InstData::BufferLen { buf } => self.lens.get(&buf).copied(),
                    _ => None,
                };
                if let Some(r) = r {
                    self.params.insert(func.results[i][0], r);
                }
            }
        }
        Ok(())
    }

    /// The register of special register `reg`, made in the prologue on its first use (a
    /// workgroup size or count from its hidden argument, at the offset the kernel's metadata
    /// gives); `None` for one this target does not provide.
    fn prologue_special(&mut self, reg: kjit_ir::SpecialReg) -> Option<VReg> {
        if let Some(&r) = self.specials.get(&reg) {
            return Some(r);
        }
        let hidden = hidden_kind(reg).and_then(|k| self.mf.abi.meta.hidden_arg(&k));
        let r = match (reg, hidden.map(|a| (a.offset, a.size))) {
            (_, Some((off, 2))) => {
                let w = self.s_load_hidden(off & !3);
                if off & 2 != 0 {
                    self.sop2("s_lshr_b32", &[valu::Src::R(w), valu::Src::Imm(16)])
                } else {
                    self.sop2("s_and_b32", &[valu::Src::R(w), valu::Src::Imm(0xffff)])
                }
            }
            (_, Some((off, _))) => self.s_load_hidden(off),
            (kjit_ir::SpecialReg::LaneId, _) => match self.lane_id {
                Some(l) => l,
                None => {
                    let l = self.lane_id_reg();
                    self.lane_id = Some(l);
                    l
                }
            },
            _ => return None,
        };
        self.specials.insert(reg, r);
        Some(r)
    }

    /// The lane id (`v_mbcnt_lo/hi` of all ones).
    pub(crate) fn lane_id_reg(&mut self) -> VReg {
        let t = self.new_vreg(RegClass::Vgpr, 1);
        self.vop3(
            "v_mbcnt_lo_u32_b32",
            t,
            &[valu::Src::Imm(u32::MAX), valu::Src::Imm(0)],
        );
        let l = self.new_vreg(RegClass::Vgpr, 1);
        self.vop3(
            "v_mbcnt_hi_u32_b32",
            l,
            &[valu::Src::Imm(u32::MAX), valu::Src::R(t)],
        );
        l
    }

    /// Whether the `dwords` kernarg dwords at byte `offset` are all preloaded.
    fn is_preloaded(&self, offset: u32, dwords: u8) -> bool {
        offset % 4 == 0 && offset / 4 + dwords as u32 <= self.preload
    }

    /// `s_load_dword{,x2,x4}` from the kernarg segment, or the words out of the preloaded
    /// user SGPRs.
    fn s_load(&mut self, offset: u32, dwords: u8) -> VReg {
        self.s_load_from(offset, dwords, true)
    }

    /// A hidden argument's dword: like [`Isel::s_load`], but never read out of a buffer's
    /// `s_load_dwordx4` that covers it (the hidden arguments start right after the last
    /// buffer's length): the group size, read first, would keep that quad loaded and live
    /// from the top of the prologue (vector_add gfx90a: 17 -> 24 SGPRs, measured).
    fn s_load_hidden(&mut self, offset: u32) -> VReg {
        self.s_load_from(offset, 1, false)
    }

    fn s_load_from(&mut self, offset: u32, dwords: u8, from_wider: bool) -> VReg {
        let ka = self
            .kernarg
            .expect("prologue loads the kernarg pointer first");
        if let Some(&r) = self.kernarg_loads.get(&(offset, dwords)) {
            return r;
        }
        // Words the dispatcher preloaded: read out of their user SGPRs.
        if let Some(t) = self.preloaded.filter(|_| self.is_preloaded(offset, dwords)) {
            let r = self.extract(t, (offset / 4) as u8, dwords);
            self.kernarg_loads.insert((offset, dwords), r);
            return r;
        }
        // Words an earlier load already holds (a scalar argument right after a buffer's
        // length, in the buffer's `s_load_dwordx4`): extracted, not loaded again. The
        // narrowest such tuple, so the words die with the part that holds them.
        let end = offset + 4 * dwords as u32;
        let covering = self
            .kernarg_loads
            .iter()
            .filter(|_| from_wider)
            .filter(|&(&(b, n), _)| b <= offset && end <= b + 4 * n as u32 && n > dwords)
            .min_by_key(|&(&(b, n), _)| (n, b))
            .map(|(&(b, _), &r)| (b, r));
        if let Some((b, t)) = covering {
            let r = self.extract(t, ((offset - b) / 4) as u8, dwords);
            self.kernarg_loads.insert((offset, dwords), r);
            return r;
        }
        let r = self.new_vreg(RegClass::Sgpr, dwords);
        self.kernarg_loads.insert((offset, dwords), r);
        let name = match dwords {
            1 => "s_load_dword",
            2 => "s_load_dwordx2",
            _ => "s_load_dwordx4",
        };
        self.push(MInst::isa(
            op(name),
            &[
                MOperand::Def(r),
                MOperand::Use(ka),
                MOperand::Phys(crate::isa::Operand::Imm(offset as i64)),
            ],
        ));
        r
    }

    /// The instructions of one IR block and its terminator's mask and argument updates.
    fn body(&mut self, b: Block) -> Result<(), IselError> {
        let func = self.func;
        if b != self.order[0] && self.direct[b] {
            // The wave's lanes as the predecessor left them: every live lane.
            self.emit_inits(b);
            let e = self.new_vreg(RegClass::Sgpr, 2);
            self.push(MInst::isa(
                op("s_mov_b64"),
                &[
                    MOperand::Def(e),
                    MOperand::Phys(crate::isa::Operand::Special(crate::isa::SpecialReg::Exec)),
                ],
            ));
            self.exec_of.insert(b, e);
        }
        if b != self.order[0] {
            self.cur_exec = Some(self.exec_of[&b]);
        }
        self.cur_block = b;
        for &i in &func.blocks[b].insts {
            let data = &func.insts[i];
            if data.is_terminator() {
                self.terminator(b, i)?;
            } else if !self.lowered_early(i) {
                self.enter_store_region(i)?;
                self.lower(i)?;
                self.leave_store_region(i);
            }
        }
        Ok(())
    }

    fn terminator(&mut self, b: Block, i: kjit_ir::Inst) -> Result<(), IselError> {
        let func = self.func;
        let exec = self.cur_exec.expect("a body has an EXEC");
        let direct = self.branches_directly(b);
        match &func.insts[i] {
            InstData::Jump { dest } => {
                self.edge(dest, exec, exec)?;
            }
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } if direct => {
                // The whole wave goes one way: `s_cbranch_scc1` to the `then` body. The compare's
                // operands are read before the edges write the targets' parameters, the compare
                // is emitted after them (their copies and moves may write SCC).
                let (name, srcs) = self.uniform_cmp(b, *cond);
                self.edge(then_dest, exec, exec)?;
                self.edge(else_dest, exec, exec)?;
                self.salu(&name, None, &srcs);
            }
            InstData::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                if then_dest.block == else_dest.block {
                    return Err(IselError::Unsupported(
                        "brif with both targets the same block".into(),
                    ));
                }
                let (t, e) = if self.scc_of_uniform(b, *cond) {
                    // All lanes go one way: the edges' lanes are EXEC or none, by SCC.
                    let t = self.sop2("s_cselect_b64", &[valu::Src::R(exec), valu::Src::Imm64(0)]);
                    let e = self.sop2("s_cselect_b64", &[valu::Src::Imm64(0), valu::Src::R(exec)]);
                    (t, e)
                } else {
                    // EXEC holds `exec` here: reading the register itself keeps the entry's
                    // copy of the launch mask dead when nothing else needs it.
                    let cm = self.lane_mask(*cond);
                    let t = self.with_exec("s_and_b64", cm);
                    let e = self.with_exec("s_andn2_b64", cm);
                    (t, e)
                };
                // A triangle's edge straight to its join writes the join's arguments for every
                // lane (LLVM's phi copy before the `if`): the arm, later, overwrites its lanes.
                let join = self.rejoin.get(&b).copied();
                let lanes = |dest: &kjit_ir::BlockCall, l: VReg| match join {
                    Some(j) if j == dest.block => exec,
                    _ => l,
                };
                self.edge(then_dest, lanes(then_dest, t), exec)?;
                self.edge(else_dest, lanes(else_dest, e), exec)?;
                if let Some(j) = join {
                    // Every lane of this EXEC reaches the join and no other lane does.
                    self.write(Var::Mask(j), exec);
                }
            }
            // A direct block holds every live lane: they all end here.
            InstData::Return if direct => {}
            InstData::Return => {
                let alive = self.read(Var::Alive);
                let a = self.sop2("s_andn2_b64", &[valu::Src::R(alive), valu::Src::R(exec)]);
                self.write(Var::Alive, a);
            }
            _ => unreachable!("not a terminator"),
        }
        let _ = b;
        Ok(())
    }

    /// `name d, exec, m` (a 64-bit SALU op of the EXEC register and a mask) into a new pair.
    fn with_exec(&mut self, name: &str, m: VReg) -> VReg {
        let d = self.new_vreg(RegClass::Sgpr, 2);
        let mut i = MInst::isa(
            op(name),
            &[
                MOperand::Def(d),
                MOperand::Phys(crate::isa::Operand::Special(crate::isa::SpecialReg::Exec)),
                MOperand::Use(m),
            ],
        );
        i.implicit_defs = implicit::SCC;
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        d
    }

    /// For a uniform (SGPR) branch condition of block `b`: sets SCC to it and returns true.
    fn scc_of_uniform(&mut self, b: Block, cond: Value) -> bool {
        if !self.uni.is_uniform(cond) || self.const_of(cond).is_some() {
            return false;
        }
        let Some((name, srcs)) = self.scalar_cmp(b, cond) else {
            return false;
        };
        self.salu(&name, None, &srcs);
        true
    }

    /// The `s_cmp` that sets SCC to the uniform condition `cond` of block `b`'s branch, with its
    /// operands read here (the caller emits it): [`Isel::scalar_cmp`], or a value computed on
    /// the VALU read with `v_readfirstlane_b32` and tested against 0.
    fn uniform_cmp(&mut self, b: Block, cond: Value) -> (String, [valu::Src; 2]) {
        if let Some(c) = self.scalar_cmp(b, cond) {
            return c;
        }
        let v = self.val(cond);
        let v = self.to_class(v, RegClass::Sgpr);
        ("s_cmp_lg_u32".into(), [valu::Src::R(v), valu::Src::Imm(0)])
    }

    /// A 32-bit integer compare in block `b` on SGPR operands is done again as `s_cmp` (its 0/1
    /// value is then usually dead and removed); another SGPR condition is tested with
    /// `s_cmp_lg_u32`. None for a condition not in an SGPR.
    pub(crate) fn scalar_cmp(&mut self, b: Block, cond: Value) -> Option<(String, [valu::Src; 2])> {
        let func = self.func;
        if let kjit_ir::ValueDef::Result(i, _) = func.values[cond].def {
            if let InstData::Cmp { op: o, args } = func.insts[i] {
                let t = func.value_type(args[0]);
                let same_block = func.blocks[b].insts.contains(&i);
                if same_block && matches!(t, Type::I32 | Type::U32) {
                    let x = self.src(args[0]);
                    let y = self.src(args[1]);
                    let sgpr = |s: &valu::Src, me: &Self| match s {
                        valu::Src::R(v) => me.mf.vregs[*v].class == RegClass::Sgpr,
                        _ => true,
                    };
                    if sgpr(&x, self) && sgpr(&y, self) {
                        return Some((lower::s_cmp_name(o, t), [x, y]));
                    }
                }
            }
        }
        let v = self.val(cond);
        if self.mf.vregs[v].class != RegClass::Sgpr {
            return None;
        }
        Some(("s_cmp_lg_u32".into(), [valu::Src::R(v), valu::Src::Imm(0)]))
    }

    /// One CFG edge taken by `lanes`: its arguments (per lane under those lanes) and the target's mask.
    fn edge(
        &mut self,
        call: &kjit_ir::BlockCall,
        lanes: VReg,
        exec: VReg,
    ) -> Result<(), IselError> {
        let func = self.func;
        let params = func.blocks[call.block].params.clone();
        if !params.is_empty() {
            // Read every argument before writing any parameter (a parameter may feed another).
            // A 32-bit constant going into a per-lane parameter is the partial write's
            // immediate source (no SGPR + `v_mov_b32` to make it a VGPR first).
            let imm_of = |me: &Self, p: Value, a: Value| match me.const_of(a) {
                Some((ty, bits)) if me.tied_vals[p.index()] && !lower::is64(ty) => {
                    Some(bits as u32)
                }
                _ => None,
            };
            let args: Vec<Option<VReg>> = params
                .iter()
                .zip(call.args.iter())
                .map(|(&p, &a)| match imm_of(self, p, a) {
                    Some(_) => None,
                    None => Some(self.val(a)),
                })
                .collect();
            let any_div = params.iter().any(|&p| self.tied_vals[p.index()]);
            if any_div && lanes != exec {
                self.set_exec(lanes);
            }
            for ((&p, &a), &av) in params.iter().zip(&args).zip(call.args.iter()) {
                let a = match (a, imm_of(self, p, av)) {
                    (Some(a), _) => a,
                    (None, Some(bits)) => {
                        self.write_partial_imm(Var::Val(p), bits);
                        continue;
                    }
                    (None, None) => unreachable!("an argument is a register or an immediate"),
                };
                if self.tied_vals[p.index()] {
                    self.write_partial(Var::Val(p), a);
                } else {
                    let a = self.to_class(a, self.class_of(p));
                    self.write(Var::Val(p), a);
                }
            }
            if any_div && lanes != exec {
                self.set_exec(exec);
            }
        }
        if self.direct[call.block] || self.is_rejoin(call.block) {
            return Ok(());
        }
        let m = self.read(Var::Mask(call.block));
        let m2 = if self.zero_pairs.contains(&m) {
            lanes
        } else {
            self.sop2("s_or_b64", &[valu::Src::R(m), valu::Src::R(lanes)])
        };
        self.write(Var::Mask(call.block), m2);
        Ok(())
    }
}

/// Whether `b` ends in a jump or a `brif` on a uniform condition (every lane it holds goes the
/// same way).
fn ends_uniformly(func: &Function, uni: &Uniformity, b: Block) -> bool {
    func.terminator(b).is_some_and(|t| match &func.insts[t] {
        InstData::Jump { .. } => true,
        InstData::Brif { cond, .. } => uni.is_uniform(*cond),
        _ => false,
    })
}

/// Appends `a` to the arguments `term` passes to `succ`.
fn push_arg(term: &mut Terminator, succ: MBlock, a: VReg) {
    match term {
        Terminator::Jump { target, args } if *target == succ => args.push(a),
        Terminator::Branch {
            taken,
            taken_args,
            not_taken,
            not_taken_args,
            ..
        } => {
            if *taken == succ {
                taken_args.push(a)
            } else if *not_taken == succ {
                not_taken_args.push(a)
            }
        }
        _ => {}
    }
}

/// The opcode named `name` (a name from the table; isel only uses names it knows exist).
pub(crate) fn op(name: &str) -> crate::isa::Opcode {
    crate::isa::Opcode::from_name(name)
        .unwrap_or_else(|| panic!("isel names unknown opcode {name}"))
}
