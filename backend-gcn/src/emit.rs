//! Emission: the allocated, waited and hazard-free [`PhysFunction`] → machine code, assembler
//! text and a loadable code object.
//!
//! Takes blocks of [`isa::Inst`] on physical registers with their [`PhysTerminator`]s; gives
//! [`Emitted`]: the `.text` bytes, the code object (descriptor from the register usage and the
//! ABI, metadata from isel's [`KernelMeta`] plus the counts), the LLVM-syntax assembly and a
//! [`KernelHeader`] with the numbers a kernel engineer looks at first.
//!
//! ```text
//!  blocks ──terminators──► s_cbranch_* / s_branch / s_endpgm (a jump to the next block is dropped;
//!        │                 a branch whose taken side falls through is inverted)
//!        ├─ isa::encode (every instruction, sizes known) ──► block offsets ──► branch simm16
//!        ├─ codeobj::preload::prologue first when kernel arguments are preloaded (256 bytes)
//!        ├─ DescriptorParams (VGPR/AGPR/SGPR counts, LDS, scratch, user/system SGPRs, work-item ids)
//!        └─ CodeObjectBuilder ──► ELF bytes;   asm text with labels `.LBB<n>` at branch targets
//! ```
//! The assembly re-assembles with `llvm-mc-19 -arch=amdgcn -mcpu=<target>` to exactly the bytes
//! of `.text` (tested for every library kernel on every target). To keep that true, a 32-bit
//! literal that equals an inline constant is emitted as the inline constant: the value is the
//! same, the code is shorter, and it is what the assembler would pick for the printed text.
//! The text itself ([`Asm`]) is written when first read: a tuner compiling many candidates
//! needs only the code object.

use std::fmt::{self, Write as _};

use crate::codeobj::descriptor::{
    DescriptorParams, KernelDescriptor, Occupancy, OccupancyLimit, UserSgprs,
};
use crate::codeobj::metadata::KernelMeta;
use crate::codeobj::target_id::TargetId;
use crate::codeobj::{CodeObjectBuilder, KernelBuild, WriteError};
use crate::isa::{
    self, flags, EncodeError, Format, InlineFloat, Inst, Kind, Opcode, Operand, Slot,
};
use crate::mir::{BranchCond, MBlock};
use crate::phys::{PhysFunction, PhysTerminator};
use crate::Target;
use smallvec::SmallVec;

/// Why a function cannot be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The function has no blocks.
    #[error("kernel '{0}' has no blocks")]
    NoBlocks(String),
    /// A terminator names a block that does not exist.
    #[error("block {block} branches to bb{target}, but the kernel has {blocks} blocks")]
    BadTarget {
        /// The branching block.
        block: usize,
        /// The missing successor.
        target: u32,
        /// Number of blocks.
        blocks: usize,
    },
    /// An instruction in a block's list is a branch or `s_endpgm`; control flow belongs in the
    /// terminator.
    #[error("block {block} instruction {index}: {inst} is control flow; use the block terminator")]
    ControlFlowInBlock {
        /// Block.
        block: usize,
        /// Position in the block.
        index: usize,
        /// The instruction's text.
        inst: String,
    },
    /// The encoder rejected an instruction.
    #[error("block {block} instruction {index} ({inst}): {source}")]
    Encode {
        /// Block.
        block: usize,
        /// Position in the block.
        index: usize,
        /// The instruction (debug form: it may not print).
        inst: String,
        /// Why.
        source: EncodeError,
    },
    /// A branch target is further than a signed 16-bit dword offset reaches.
    #[error("branch from block {block} to bb{target} spans {dwords} dwords (more than simm16)")]
    BranchOutOfRange {
        /// The branching block.
        block: usize,
        /// The target.
        target: u32,
        /// The offset that does not fit.
        dwords: i64,
    },
    /// The code object writer rejected the kernel (register counts beyond the target, bad
    /// arguments, ...).
    #[error("code object: {0}")]
    Write(#[from] WriteError),
}

/// The resource summary of a compiled kernel: what `kjit dump --asm` prints first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelHeader {
    /// Kernel name.
    pub name: String,
    /// Target.
    pub target: Target,
    /// Architectural VGPRs used (highest `v` + 1).
    pub vgprs: u32,
    /// SGPRs counted for allocation, including VCC/FLAT_SCRATCH/XNACK_MASK as the metadata's
    /// `.sgpr_count` (and LLVM's resource remark) count them.
    pub sgprs: u32,
    /// SGPRs the code names (highest `s` + 1), without the reserved ones.
    pub sgprs_used: u32,
    /// AGPRs used (highest `a` + 1).
    pub agprs: u32,
    /// Static LDS bytes.
    pub lds_bytes: u32,
    /// Scratch bytes per work-item.
    pub scratch_bytes: u32,
    /// Values spilled, to any location (the sum of the four counts below).
    pub spills: u32,
    /// Values spilled to spare SGPRs.
    pub spills_sgpr: u32,
    /// Values spilled to spare VGPRs.
    pub spills_vgpr: u32,
    /// Values spilled to AGPRs.
    pub spills_agpr: u32,
    /// Values spilled to scratch memory.
    pub spills_scratch: u32,
    /// Waves per SIMD the kernel's registers and LDS allow (at its largest workgroup).
    pub occupancy: u32,
    /// What limits the occupancy.
    pub occupancy_limit: OccupancyLimit,
    /// Instructions in `.text` that run when the dispatcher preloads the kernel arguments
    /// (from entry + 256 then), branches and `s_endpgm` included.
    pub instructions: u32,
    /// Bytes of machine code (the compatibility prologue included).
    pub code_bytes: u32,
    /// Kernarg dwords preloaded into user SGPRs (0: none, and no prologue).
    pub kernarg_preload: u32,
    /// Instructions of the kernarg preload compatibility prologue before them (its loads,
    /// wait and branch; not its `s_nop` padding), which only firmware without preloading runs.
    pub prologue_instructions: u32,
}

impl KernelHeader {
    /// The header as lines without a comment marker.
    pub fn lines(&self) -> Vec<String> {
        let limit = self.occupancy_limit;
        vec![
            format!("kernel {} for {}", self.name, self.target),
            format!(
                "VGPRs: {}  AGPRs: {}  SGPRs: {} ({} + VCC/FLAT_SCRATCH/XNACK_MASK)",
                self.vgprs, self.agprs, self.sgprs, self.sgprs_used
            ),
            format!(
                "LDS: {} bytes  scratch: {} bytes/lane  spills: {} ({} to SGPRs, {} to VGPRs, {} to AGPRs, {} to scratch)",
                self.lds_bytes,
                self.scratch_bytes,
                self.spills,
                self.spills_sgpr,
                self.spills_vgpr,
                self.spills_agpr,
                self.spills_scratch
            ),
            format!(
                "occupancy: {} waves/SIMD (limited by {limit})",
                self.occupancy
            ),
            if self.kernarg_preload > 0 {
                format!(
                    "instructions: {} ({} bytes); kernarg preload: {} dwords, compatibility prologue: {} instructions + s_nop to 256 bytes",
                    self.instructions, self.code_bytes, self.kernarg_preload, self.prologue_instructions
                )
            } else {
                format!(
                    "instructions: {} ({} bytes)",
                    self.instructions, self.code_bytes
                )
            },
        ]
    }
}

impl fmt::Display for KernelHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in self.lines() {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}

/// What emission gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    /// The loadable code object (ELF, code object v5).
    pub code_object: Vec<u8>,
    /// LLVM-syntax assembly: header comment, labels, instructions.
    pub asm: Asm,
    /// The resource summary.
    pub header: KernelHeader,
    /// The kernel's machine code (its `.text`).
    pub code: Vec<u8>,
    /// Every emitted instruction with its byte offset in `code` (branches with resolved offsets).
    pub insts: Vec<(u32, Inst)>,
}

/// The assembly text of an emitted kernel (LLVM syntax: header comment, labels,
/// instructions), written on first read from what emission kept; clones share it. Reads as a
/// `&str` (`Deref`, `Display`).
#[derive(Clone)]
pub struct Asm(std::sync::Arc<AsmSource>);

/// What [`Asm`] is written from.
struct AsmSource {
    target: Target,
    header: KernelHeader,
    /// Instructions in code order.
    insts: Vec<Inst>,
    /// The lines after the header, in order.
    lines: Vec<AsmLine>,
    text: std::sync::OnceLock<String>,
}

/// One line of the assembly after the header.
enum AsmLine {
    /// The kernarg preload compatibility prologue's branch to the body (entry + 256).
    PrologueBranch,
    /// `n` dwords of `s_nop 0` padding up to the body.
    ProloguePadding(usize),
    /// Block `b` starts: `.LBB<b>:` when a branch goes there, else a comment.
    Block { b: usize, target: bool },
    /// Instruction `i` of [`AsmSource::insts`].
    Inst(usize),
    /// A branch to block `b` (printed with its label).
    Branch(Opcode, usize),
}

impl Asm {
    /// The text.
    pub fn as_str(&self) -> &str {
        let s = &*self.0;
        s.text.get_or_init(|| {
            let mut asm = String::new();
            for l in s.header.lines() {
                let _ = writeln!(asm, "; {l}");
            }
            if is_label(&s.header.name) {
                let _ = writeln!(asm, "{}:", s.header.name);
            }
            for line in &s.lines {
                let _ = match *line {
                    AsmLine::Block { b, target: true } => writeln!(asm, ".LBB{b}:"),
                    AsmLine::Block { b, target: false } => writeln!(asm, "; %bb.{b}:"),
                    AsmLine::Inst(i) => writeln!(asm, "\t{}", s.insts[i].display(s.target)),
                    AsmLine::Branch(op, b) => {
                        writeln!(asm, "\t{} .LBB{b}", op.info().name_on(s.target))
                    }
                    AsmLine::PrologueBranch => writeln!(asm, "\ts_branch .Lkernarg_preloaded"),
                    AsmLine::ProloguePadding(n) => writeln!(
                        asm,
                        "\t.fill {n}, 4, 0xbf800000 ; s_nop 0\n.Lkernarg_preloaded:"
                    ),
                };
            }
            asm
        })
    }
}

impl std::ops::Deref for Asm {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Asm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Asm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Asm {
    fn eq(&self, other: &Asm) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Asm {}

impl AsRef<str> for Asm {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Asm {
    fn as_ref(&self) -> &[u8] {
        self.as_str().as_bytes()
    }
}

impl From<Asm> for String {
    fn from(a: Asm) -> String {
        a.as_str().to_owned()
    }
}

/// One item of the linear code before branch offsets are known.
enum Item {
    /// A block starts here.
    Block(usize),
    /// An ordinary instruction, already encoded.
    Inst(Inst, smallvec::SmallVec<[u32; 4]>),
    /// A branch to a block (offset resolved later).
    Branch(Opcode, MBlock),
    /// `s_endpgm`.
    Endpgm,
}

fn branch_opcode(cond: BranchCond) -> Opcode {
    match cond {
        BranchCond::Scc0 => Opcode::SCbranchScc0,
        BranchCond::Scc1 => Opcode::SCbranchScc1,
        BranchCond::Vccz => Opcode::SCbranchVccz,
        BranchCond::Vccnz => Opcode::SCbranchVccnz,
        BranchCond::Execz => Opcode::SCbranchExecz,
        BranchCond::Execnz => Opcode::SCbranchExecnz,
    }
}

/// The condition that holds exactly when `c` does not (SCC is a bit; VCCZ/EXECZ are flags the
/// hardware keeps for the whole register).
fn invert(c: BranchCond) -> BranchCond {
    match c {
        BranchCond::Scc0 => BranchCond::Scc1,
        BranchCond::Scc1 => BranchCond::Scc0,
        BranchCond::Vccz => BranchCond::Vccnz,
        BranchCond::Vccnz => BranchCond::Vccz,
        BranchCond::Execz => BranchCond::Execnz,
        BranchCond::Execnz => BranchCond::Execz,
    }
}

fn is_control_flow(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::SBranch
            | Opcode::SCbranchScc0
            | Opcode::SCbranchScc1
            | Opcode::SCbranchVccz
            | Opcode::SCbranchVccnz
            | Opcode::SCbranchExecz
            | Opcode::SCbranchExecnz
            | Opcode::SEndpgm
    )
}

/// The inline constant with the same 32-bit value as literal `v`, if any.
fn inline_for(v: u32) -> Option<Operand> {
    let i = v as i32;
    if (-16..=64).contains(&i) {
        return Some(Operand::InlineInt(i as i8));
    }
    InlineFloat::ALL
        .into_iter()
        .find(|c| (c.value() as f32).to_bits() == v)
        .map(Operand::InlineFloat)
}

/// Replaces 32-bit literals that equal an inline constant by the constant, in source fields of
/// 32-bit operands that are not 16-bit typed (where a literal's meaning is its 32 bits).
fn canonicalize_literals(inst: &mut Inst) {
    let infos = inst.operand_infos();
    let fl = inst.info().flags;
    for (o, info) in inst.operands.iter_mut().zip(infos) {
        let Operand::Literal(v) = *o else { continue };
        if !matches!(info.kind, Kind::VSrc | Kind::SSrc) || info.dwords != 1 {
            continue;
        }
        let sixteen = match info.slot {
            Slot::Src0 => fl & (flags::INT16_0 | flags::LIT16) != 0,
            Slot::Src1 => fl & flags::INT16_1 != 0,
            Slot::Src2 => fl & flags::INT16_2 != 0,
            _ => false,
        };
        if sixteen {
            continue;
        }
        if let Some(c) = inline_for(v) {
            *o = c;
        }
    }
}

/// The kernarg preload prologue of `target` and `user_sgprs` and its encoded words. It
/// depends on nothing else, so each thread keeps the few it has made: encoding its ~60
/// instructions (most of them `s_nop` padding) was a tenth of a small kernel's emission.
#[allow(clippy::type_complexity)]
fn encoded_prologue(
    target: Target,
    user_sgprs: &UserSgprs,
) -> Result<(Vec<Inst>, Vec<SmallVec<[u32; 4]>>), EmitError> {
    type Entry = (Target, UserSgprs, Vec<Inst>, Vec<SmallVec<[u32; 4]>>);
    thread_local! {
        static MADE: std::cell::RefCell<Vec<Entry>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let hit = MADE.with(|m| {
        m.borrow()
            .iter()
            .find(|e| e.0 == target && e.1 == *user_sgprs)
            .map(|e| (e.2.clone(), e.3.clone()))
    });
    if let Some(hit) = hit {
        return Ok(hit);
    }
    let prologue = crate::codeobj::preload::prologue(target, user_sgprs);
    let mut words: Vec<SmallVec<[u32; 4]>> = Vec::with_capacity(prologue.len());
    for (k, inst) in prologue.iter().enumerate() {
        // Most of the prologue is one `s_nop` repeated: an instruction equal to the one
        // before encodes to the same words (encoding depends only on the instruction and the
        // target), and a fresh process would otherwise encode each copy on its first compile.
        if k > 0 && prologue[k - 1] == *inst {
            let w = words[k - 1].clone();
            words.push(w);
            continue;
        }
        let w = isa::encode(inst, target).map_err(|source| EmitError::Encode {
            block: 0,
            index: usize::MAX,
            inst: format!("{inst:?}"),
            source,
        })?;
        words.push(w);
    }
    MADE.with(|m| {
        let mut m = m.borrow_mut();
        // A bound that no real use reaches (one entry per target and argument layout).
        if m.len() >= 64 {
            m.clear();
        }
        m.push((target, *user_sgprs, prologue.clone(), words.clone()));
    });
    Ok((prologue, words))
}

/// Emits `f`: machine code, code object, assembly and header.
pub fn emit(f: &PhysFunction) -> Result<Emitted, EmitError> {
    let target = f.abi.target;
    let name = f.abi.meta.name.clone();
    let nblocks = f.blocks.len();
    if nblocks == 0 {
        return Err(EmitError::NoBlocks(name));
    }

    // 1. Linearise: instructions (encoded) and terminators as branches.
    // Targets must exist before anything follows them.
    for (bi, block) in f.blocks.iter().enumerate() {
        for t in block.term.successors() {
            if t.as_u32() as usize >= nblocks {
                return Err(EmitError::BadTarget {
                    block: bi,
                    target: t.as_u32(),
                    blocks: nblocks,
                });
            }
        }
    }
    // Jump threading: a block with no instructions that only jumps (the critical-edge blocks
    // the allocator splits off and leaves empty) is never emitted; branches go straight to
    // where it leads. Every terminator names its fall-through successor explicitly, so leaving
    // a block out never changes where another falls through.
    let threaded = |b: MBlock| -> Option<MBlock> {
        let blk = &f.blocks[b.as_u32() as usize];
        match blk.term {
            PhysTerminator::Jump(t) if blk.insts.is_empty() && t != b => Some(t),
            _ => None,
        }
    };
    // Where a branch to `b` really goes; a chain of empty blocks that loops (an empty infinite
    // loop) is left as it is.
    let resolve = |b: MBlock| -> MBlock {
        let mut seen = vec![b];
        let mut cur = b;
        while let Some(t) = threaded(cur) {
            if seen.contains(&t) {
                return b;
            }
            seen.push(t);
            cur = t;
        }
        cur
    };
    let emitted: Vec<bool> = (0..nblocks)
        .map(|i| {
            let b = MBlock::from_u32(i as u32);
            i == 0 || threaded(b).is_none() || resolve(b) == b
        })
        .collect();
    let next_emitted = |bi: usize| -> Option<MBlock> {
        (bi + 1..nblocks)
            .find(|&b| emitted[b])
            .map(|b| MBlock::from_u32(b as u32))
    };

    // Sized once: an item holds an instruction and its words, and growing the vectors
    // copied them over and over (a few percent of a tuning compile).
    let n_insts: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
    let mut items = Vec::with_capacity(n_insts + 3 * nblocks);
    let mut branch_targets = vec![false; nblocks];
    let mut uses_flat = false;
    for (bi, block) in f.blocks.iter().enumerate() {
        if !emitted[bi] {
            continue;
        }
        items.push(Item::Block(bi));
        for (ii, inst) in block.insts.iter().enumerate() {
            if is_control_flow(inst.op) {
                return Err(EmitError::ControlFlowInBlock {
                    block: bi,
                    index: ii,
                    inst: format!("{}", inst.display(target)),
                });
            }
            let mut inst = inst.clone();
            canonicalize_literals(&mut inst);
            uses_flat |= matches!(
                inst.info().format,
                Format::Flat | Format::Global | Format::Scratch
            );
            let words = isa::encode(&inst, target).map_err(|source| EmitError::Encode {
                block: bi,
                index: ii,
                inst: format!("{inst:?}"),
                source,
            })?;
            items.push(Item::Inst(inst, words));
        }
        let next = next_emitted(bi);
        let mut branch = |op, t: MBlock, items: &mut Vec<Item>| {
            branch_targets[t.as_u32() as usize] = true;
            items.push(Item::Branch(op, t));
        };
        match block.term {
            PhysTerminator::Return => items.push(Item::Endpgm),
            PhysTerminator::Jump(t) => {
                let t = resolve(t);
                if Some(t) != next {
                    branch(Opcode::SBranch, t, &mut items);
                }
            }
            PhysTerminator::Branch {
                cond,
                taken,
                not_taken,
            } => {
                let (taken, not_taken) = (resolve(taken), resolve(not_taken));
                if taken == not_taken {
                    // Both ways lead to the same block: the test is moot.
                    if Some(taken) != next {
                        branch(Opcode::SBranch, taken, &mut items);
                    }
                } else if Some(not_taken) == next {
                    branch(branch_opcode(cond), taken, &mut items);
                } else if Some(taken) == next {
                    branch(branch_opcode(invert(cond)), not_taken, &mut items);
                } else {
                    branch(branch_opcode(cond), taken, &mut items);
                    branch(Opcode::SBranch, not_taken, &mut items);
                }
            }
        }
    }

    // The kernarg preload compatibility prologue (256 bytes) comes first: the body's branch
    // targets count from its end.
    let (prologue, prologue_words) = encoded_prologue(target, &f.user_sgprs)?;
    let prologue_dwords: usize = prologue_words.iter().map(|w| w.len()).sum();

    // 2. Block offsets in dwords.
    let mut block_at = vec![0i64; nblocks];
    let mut pc = prologue_dwords as i64;
    for it in &items {
        match it {
            Item::Block(b) => block_at[*b] = pc,
            Item::Inst(_, w) => pc += w.len() as i64,
            Item::Branch(..) | Item::Endpgm => pc += 1,
        }
    }

    // 3. Encode branches, collect code and the lines of the text.
    let mut code: Vec<u8> = Vec::with_capacity(pc as usize * 4);
    let mut insts: Vec<(u32, Inst)> = Vec::with_capacity(items.len() + prologue.len());
    let mut lines: Vec<AsmLine> = Vec::with_capacity(items.len() + prologue.len());
    let mut prologue_instructions = 0u32;
    for (inst, words) in prologue.into_iter().zip(&prologue_words) {
        match inst.op {
            Opcode::SNop => {
                if !matches!(lines.last(), Some(AsmLine::ProloguePadding(_))) {
                    lines.push(AsmLine::ProloguePadding(0));
                }
                if let Some(AsmLine::ProloguePadding(n)) = lines.last_mut() {
                    *n += 1;
                }
            }
            Opcode::SBranch => {
                prologue_instructions += 1;
                lines.push(AsmLine::PrologueBranch);
            }
            _ => {
                prologue_instructions += 1;
                lines.push(AsmLine::Inst(insts.len()));
            }
        }
        insts.push((code.len() as u32, inst));
        for w in words {
            code.extend_from_slice(&w.to_le_bytes());
        }
    }
    let body_start = insts.len();
    let mut cur_block = 0usize;
    for it in items {
        let here = (code.len() / 4) as i64;
        match it {
            Item::Block(b) => {
                cur_block = b;
                if b == 0 {
                    continue;
                }
                lines.push(AsmLine::Block {
                    b,
                    target: branch_targets[b],
                });
            }
            Item::Inst(inst, words) => {
                lines.push(AsmLine::Inst(insts.len()));
                for w in &words {
                    code.extend_from_slice(&w.to_le_bytes());
                }
                insts.push(((here * 4) as u32, inst));
            }
            Item::Endpgm => {
                let inst = Inst::new(Opcode::SEndpgm, &[Operand::Imm(0)]);
                let w = isa::encode(&inst, target).map_err(|source| EmitError::Encode {
                    block: cur_block,
                    index: usize::MAX,
                    inst: "s_endpgm".into(),
                    source,
                })?;
                lines.push(AsmLine::Inst(insts.len()));
                for w in &w {
                    code.extend_from_slice(&w.to_le_bytes());
                }
                insts.push(((here * 4) as u32, inst));
            }
            Item::Branch(op, t) => {
                let dwords = block_at[t.as_u32() as usize] - (here + 1);
                if !(i16::MIN as i64..=i16::MAX as i64).contains(&dwords) {
                    return Err(EmitError::BranchOutOfRange {
                        block: cur_block,
                        target: t.as_u32(),
                        dwords,
                    });
                }
                let inst = Inst::new(op, &[Operand::Imm(dwords)]);
                let w = isa::encode(&inst, target).map_err(|source| EmitError::Encode {
                    block: cur_block,
                    index: usize::MAX,
                    inst: format!("{inst:?}"),
                    source,
                })?;
                lines.push(AsmLine::Branch(op, t.as_u32() as usize));
                for w in &w {
                    code.extend_from_slice(&w.to_le_bytes());
                }
                insts.push(((here * 4) as u32, inst));
            }
        }
    }

    // 4. Descriptor, metadata, code object.
    let abi = &f.abi;
    let u = &f.usage;
    let spills = u.spills();
    // The dispatcher writes the user and system SGPRs and the work-item id VGPRs whether the
    // code reads them or not; the allocation must cover them.
    let initial_sgprs = f.user_sgprs.count()
        + abi.workgroup_ids.iter().filter(|&&b| b).count() as u32
        + (u.scratch_bytes > 0 && !target.has_architected_flat_scratch()) as u32;
    let initial_vgprs = if target.has_agprs() {
        1
    } else {
        abi.workitem_dims.max(1) as u32
    };
    let params = DescriptorParams {
        group_segment_fixed_size: abi.lds_bytes,
        private_segment_fixed_size: u.scratch_bytes,
        kernarg_size: abi.meta.kernarg_segment_size,
        vgprs: u.vgprs.max(initial_vgprs),
        agprs: if target.has_agprs() { u.agprs } else { 0 },
        sgprs: u.sgprs.max(initial_sgprs),
        reserve_vcc: true,
        // FLAT_SCRATCH is only needed by flat/global/scratch instructions or flat scratch access.
        reserve_flat_scratch: uses_flat,
        user_sgprs: f.user_sgprs,
        user_sgpr_count: None,
        enable_private_segment: u.scratch_bytes > 0,
        workgroup_id: abi.workgroup_ids,
        workitem_id_dims: (abi.workitem_dims.max(1) - 1) as u32,
        ..DescriptorParams::default()
    };
    let build = kernel_build(&abi.meta, code.clone(), params.clone(), spills);
    let mut builder = CodeObjectBuilder::new(target);
    builder.add_kernel(build);
    let code_object = builder.build()?;

    let tid: TargetId = builder.target_id();
    let kd = KernelDescriptor::build(target, tid.xnack, &params).map_err(|source| {
        EmitError::Write(WriteError::Descriptor {
            name: name.clone(),
            source,
        })
    })?;
    let occ = Occupancy::from_counts(
        target,
        kd.registers_allocated(target),
        params.total_sgprs(target, tid.xnack),
        abi.lds_bytes,
        Some(abi.meta.max_flat_workgroup_size.max(1)),
    );
    let header = KernelHeader {
        name: name.clone(),
        target,
        vgprs: params.vgprs,
        sgprs: params.total_sgprs(target, tid.xnack),
        sgprs_used: params.sgprs,
        agprs: params.agprs,
        lds_bytes: abi.lds_bytes,
        scratch_bytes: u.scratch_bytes,
        spills,
        spills_sgpr: u.spills_to_sgprs,
        spills_vgpr: u.spills_to_vgprs,
        spills_agpr: u.spills_to_agprs,
        spills_scratch: u.spills_to_scratch,
        occupancy: occ.waves_per_simd,
        occupancy_limit: occ.limited_by,
        instructions: (insts.len() - body_start) as u32,
        code_bytes: code.len() as u32,
        kernarg_preload: f.user_sgprs.kernarg_preload,
        prologue_instructions,
    };

    let asm = Asm(std::sync::Arc::new(AsmSource {
        target,
        header: header.clone(),
        insts: insts.iter().map(|(_, i)| i.clone()).collect(),
        lines,
        text: std::sync::OnceLock::new(),
    }));

    Ok(Emitted {
        code_object,
        asm,
        header,
        code,
        insts,
    })
}

/// Whether `s` can be an assembler label as written.
fn is_label(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == '.')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')
}

/// The code object writer's view of the kernel: isel's metadata (name, arguments, workgroup
/// limits) with the descriptor settings and spill count emission decided.
fn kernel_build(
    meta: &KernelMeta,
    code: Vec<u8>,
    descriptor: DescriptorParams,
    spills: u32,
) -> KernelBuild {
    KernelBuild {
        name: meta.name.clone(),
        code,
        descriptor,
        args: meta.args.clone(),
        kernarg_segment_align: meta.kernarg_segment_align.max(4),
        max_flat_workgroup_size: meta.max_flat_workgroup_size,
        sgpr_spill_count: 0,
        vgpr_spill_count: spills,
        reqd_workgroup_size: meta.reqd_workgroup_size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::KernelAbi;
    use crate::phys::RegUsage;

    fn nop() -> Inst {
        Inst::new(Opcode::SNop, &[Operand::Imm(0)])
    }

    fn func(blocks: Vec<(usize, PhysTerminator)>) -> PhysFunction {
        let mut meta = KernelMeta::new("k");
        meta.kernarg_segment_size = 0;
        let abi = KernelAbi {
            target: Target::Gfx942,
            meta,
            workgroup_ids: [true, false, false],
            workitem_dims: 1,
            lds_bytes: 0,
        };
        let blocks = blocks
            .into_iter()
            .map(|(n, term)| (vec![nop(); n], term))
            .collect();
        let mut f = PhysFunction::from_blocks(abi, blocks);
        f.usage = RegUsage {
            sgprs: 4,
            vgprs: 1,
            ..Default::default()
        };
        f
    }

    fn b(n: u32) -> MBlock {
        MBlock::from_u32(n)
    }

    /// (mnemonic, byte offset, branch target byte offset) of every branch.
    fn branches(e: &Emitted) -> Vec<(&'static str, u32, u32)> {
        e.insts
            .iter()
            .filter_map(|(at, i)| match i.operands.first() {
                Some(Operand::Imm(d)) if i.op != Opcode::SEndpgm && i.op != Opcode::SNop => {
                    Some((i.op.name(), *at, (*at as i64 + 4 + 4 * d) as u32))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn fall_through_is_dropped_and_a_taken_fall_through_is_inverted() {
        // bb0 (1 nop) --scc1--> bb2, else bb1; bb1 (2 nops) -> bb2; bb2 returns.
        let f = func(vec![
            (
                1,
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(2),
                    not_taken: b(1),
                },
            ),
            (2, PhysTerminator::Jump(b(2))),
            (0, PhysTerminator::Return),
        ]);
        let e = emit(&f).unwrap();
        assert_eq!(branches(&e), vec![("s_cbranch_scc1", 4, 16)]);
        assert!(e.asm.contains("s_cbranch_scc1 .LBB2\n"), "{}", e.asm);
        assert_eq!(e.header.instructions, 5);
        // the same branch with the sides swapped: taken falls through, so it is inverted
        let f = func(vec![
            (
                1,
                PhysTerminator::Branch {
                    cond: BranchCond::Execz,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (2, PhysTerminator::Jump(b(2))),
            (0, PhysTerminator::Return),
        ]);
        let e = emit(&f).unwrap();
        assert_eq!(branches(&e), vec![("s_cbranch_execnz", 4, 16)]);
    }

    #[test]
    fn neither_side_following_needs_two_branches_and_backward_offsets_are_negative() {
        // bb0: loop head; bb1 -> (vccnz) bb0 else bb2, bb2 returns, placed so that neither follows
        let f = func(vec![
            (3, PhysTerminator::Jump(b(1))),
            (
                1,
                PhysTerminator::Branch {
                    cond: BranchCond::Vccnz,
                    taken: b(0),
                    not_taken: b(3),
                },
            ),
            (1, PhysTerminator::Return),
            (0, PhysTerminator::Return),
        ]);
        let e = emit(&f).unwrap();
        assert_eq!(
            branches(&e),
            vec![("s_cbranch_vccnz", 16, 0), ("s_branch", 20, 32)]
        );
        let (_, at, _) = branches(&e)[0];
        let i = &e.insts.iter().find(|(a, _)| *a == at).unwrap().1;
        assert_eq!(i.operands[0], Operand::Imm(-5));
    }

    #[test]
    fn empty_jump_blocks_are_threaded_away() {
        // bb0 --scc0--> bb3 (empty, jumps to bb4), else bb1; bb1 -> bb2 (empty) -> bb4
        let f = func(vec![
            (
                1,
                PhysTerminator::Branch {
                    cond: BranchCond::Scc0,
                    taken: b(3),
                    not_taken: b(1),
                },
            ),
            (1, PhysTerminator::Jump(b(2))),
            (0, PhysTerminator::Jump(b(4))),
            (0, PhysTerminator::Jump(b(4))),
            (1, PhysTerminator::Return),
        ]);
        let e = emit(&f).unwrap();
        // bb0: nop, cbranch -> bb4; bb1: nop (falls to bb4 after threading); bb4: nop, endpgm
        assert_eq!(branches(&e), vec![("s_cbranch_scc0", 4, 12)]);
        assert_eq!(e.header.instructions, 5);
        assert!(
            !e.asm.contains("LBB3") && !e.asm.contains("bb.2"),
            "{}",
            e.asm
        );
    }

    #[test]
    fn an_empty_infinite_loop_is_kept() {
        let f = func(vec![
            (1, PhysTerminator::Jump(b(1))),
            (0, PhysTerminator::Jump(b(2))),
            (0, PhysTerminator::Jump(b(1))),
        ]);
        let e = emit(&f).unwrap();
        let br = branches(&e);
        // bb1 falls into bb2, which branches back to bb1: nothing was threaded into a void
        assert_eq!(br, vec![("s_branch", 4, 4)]);
    }

    #[test]
    fn a_branch_beyond_simm16_is_an_error() {
        let f = func(vec![
            (
                0,
                PhysTerminator::Branch {
                    cond: BranchCond::Scc0,
                    taken: b(2),
                    not_taken: b(1),
                },
            ),
            (40_000, PhysTerminator::Jump(b(2))),
            (0, PhysTerminator::Return),
        ]);
        assert!(matches!(
            emit(&f),
            Err(EmitError::BranchOutOfRange {
                block: 0,
                target: 2,
                dwords: 40_000
            })
        ));
    }

    #[test]
    fn literals_equal_to_inline_constants_become_inline() {
        let mut i = Inst::new(
            Opcode::VAddF32,
            &[Operand::v(0), Operand::Literal(0x3f80_0000), Operand::v(1)],
        );
        canonicalize_literals(&mut i);
        assert_eq!(i.operands[1], Operand::InlineFloat(InlineFloat::One));
        let mut i = Inst::new(
            Opcode::SAddU32,
            &[Operand::s(0), Operand::s(1), Operand::Literal(0xffff_fff0)],
        );
        canonicalize_literals(&mut i);
        assert_eq!(i.operands[2], Operand::InlineInt(-16));
        let mut i = Inst::new(
            Opcode::SAddU32,
            &[Operand::s(0), Operand::s(1), Operand::Literal(65)],
        );
        canonicalize_literals(&mut i);
        assert_eq!(i.operands[2], Operand::Literal(65));
    }

    #[test]
    fn descriptor_covers_the_dispatcher_registers() {
        // the code names no SGPR beyond s1, but s2 (workgroup id x) is written at dispatch
        let mut f = func(vec![(1, PhysTerminator::Return)]);
        f.usage.sgprs = 0;
        f.usage.vgprs = 0;
        let e = emit(&f).unwrap();
        assert_eq!(e.header.sgprs_used, 3);
        assert_eq!(e.header.vgprs, 1);
        let co = crate::codeobj::CodeObject::parse(&e.code_object).unwrap();
        let k = &co.kernels[0];
        assert_eq!(k.descriptor.user_sgpr_count(), 2);
        assert!(k.descriptor.enable_sgpr_workgroup_id_x());
        assert_eq!(k.code, e.code);
    }
}
