//! A kernel in SSA form: its signature, workgroup-memory arrays, blocks, instructions and values.
//!
//! Layout: `layout` lists the blocks in order, the first being the entry block, whose parameters
//! are the kernel's parameters. Each block holds its instructions in order; the last one is its
//! terminator. Entities that are not reachable from the layout (left over by passes or by holes
//! in a parsed text's numbering) are ignored by every pass.

use crate::entities::{Block, Inst, LdsArray, Value};
use crate::instructions::{InstData, SpecialReg};
use crate::types::{ElemType, Type};
use cranelift_entity::{PrimaryMap, SecondaryMap};
use smallvec::SmallVec;

/// A kernel parameter: name (as a launch sees it) and type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// Name, unique within the kernel.
    pub name: String,
    /// Scalar or buffer type.
    pub ty: Type,
}

/// A workgroup-memory array: a static size, or (at most one per kernel) dynamic, sized by the
/// launch's dynamic LDS bytes and placed after all static arrays.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LdsDecl {
    /// Name, unique within the kernel.
    pub name: String,
    /// Element type.
    pub elem: ElemType,
    /// Number of elements; 0 for the dynamic array.
    pub len: u32,
    /// Sized at launch (`lds name: T[dynamic]`) rather than by `len`.
    pub dynamic: bool,
}

impl LdsDecl {
    /// Static size in bytes (0 for the dynamic array).
    pub fn bytes(&self) -> u64 {
        self.len as u64 * self.elem.bytes() as u64
    }
}

/// Options that change what transformations are allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `a*b + c` may be contracted into one fused multiply-add (results may then differ in the
    /// last bits from the separately rounded form).
    pub contract: bool,
    /// No buffer the kernel writes overlaps another buffer argument of a launch (C's
    /// `restrict` on every pointer; the code object marks the buffers `.is_restrict` and the
    /// devices reject a launch that breaks it). Lets loads move above stores to other buffers.
    pub noalias: bool,
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// The `n`th result of an instruction.
    Result(Inst, u16),
    /// The `n`th parameter of a block.
    Param(Block, u16),
    /// Not attached to anything (a hole in the numbering, or a value removed by a pass).
    Detached,
}

/// A value's type and definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueData {
    /// The type.
    pub ty: Type,
    /// The definition.
    pub def: ValueDef,
}

/// A block's parameters and instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockData {
    /// Parameters, in order.
    pub params: Vec<Value>,
    /// Instructions, in order; the last is the terminator.
    pub insts: Vec<Inst>,
}

/// The upper bound on LDS a kernel may declare: 64 KiB per workgroup on gfx9.
pub const MAX_LDS_BYTES: u64 = 64 * 1024;

/// A kernel.
#[derive(Debug, Default, PartialEq)]
pub struct Function {
    /// Kernel name (the symbol in the code object).
    pub name: String,
    /// Parameters, as bound to the entry block's parameters.
    pub params: Vec<Param>,
    /// Transformation flags.
    pub flags: Flags,
    /// The workgroup size every launch must have, when the kernel declares one (text form
    /// `workgroup_size(x, y, z)` after the parameters): work-item ids of dimensions of size 1
    /// are then 0 and the sizes are constants (`known_special`); launches of another size are
    /// rejected.
    pub workgroup_size: Option<[u32; 3]>,
    /// Workgroup-memory arrays.
    pub lds: PrimaryMap<LdsArray, LdsDecl>,
    /// Every instruction.
    pub insts: PrimaryMap<Inst, InstData>,
    /// Results of each instruction.
    pub results: SecondaryMap<Inst, SmallVec<[Value; 1]>>,
    /// Every value.
    pub values: PrimaryMap<Value, ValueData>,
    /// Every block.
    pub blocks: PrimaryMap<Block, BlockData>,
    /// Block order; `layout[0]` is the entry block.
    pub layout: Vec<Block>,
}

/// A copy of every table; the results table as [`copy_results`] makes it.
impl Clone for Function {
    fn clone(&self) -> Function {
        Function {
            name: self.name.clone(),
            params: self.params.clone(),
            flags: self.flags,
            workgroup_size: self.workgroup_size,
            lds: self.lds.clone(),
            insts: self.insts.clone(),
            results: copy_results(&self.results, self.results.as_values_slice().len()),
            values: self.values.clone(),
            blocks: self.blocks.clone(),
            layout: self.layout.clone(),
        }
    }
}

/// The results table `r` with `len` entries (cut, or padded with empty lists): each list copied
/// as a slice of `Copy` values. A results table's own `clone` and `resize` clone one `SmallVec`
/// per entry through its generic `extend` (~50 instructions each, empty ones too), which was
/// most of copying or growing the tables of a large kernel (the gemm's ~5,000 instructions,
/// copied per strength-reduction trial).
fn copy_results(
    r: &SecondaryMap<Inst, SmallVec<[Value; 1]>>,
    len: usize,
) -> SecondaryMap<Inst, SmallVec<[Value; 1]>> {
    let old = r.as_values_slice();
    let mut elems = Vec::with_capacity(len);
    elems.extend(
        old[..old.len().min(len)]
            .iter()
            .map(|x| SmallVec::from_slice(x)),
    );
    elems.resize_with(len, SmallVec::new);
    SecondaryMap::from(elems)
}

impl Function {
    /// An empty kernel.
    pub fn new(name: &str) -> Self {
        Function {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// The value of a special register fixed by the declared workgroup size: the size itself,
    /// and work-item id 0 along a dimension of size 1.
    pub fn known_special(&self, reg: SpecialReg) -> Option<u32> {
        let size = self.workgroup_size?;
        match reg {
            SpecialReg::WorkgroupSize(d) => Some(size[d.index()]),
            SpecialReg::WorkitemId(d) if size[d.index()] == 1 => Some(0),
            _ => None,
        }
    }

    /// The entry block, if there is one.
    pub fn entry(&self) -> Option<Block> {
        self.layout.first().copied()
    }

    /// A copy (equal to `clone()`) whose instruction and value tables have room for `insts`
    /// and `values` more entries: a pass that clones a large function to try a change on it
    /// would otherwise copy the tables a second time when the first entry is added.
    pub fn clone_with_room(&self, insts: usize, values: usize) -> Function {
        let mut f = Function {
            name: self.name.clone(),
            params: self.params.clone(),
            flags: self.flags,
            workgroup_size: self.workgroup_size,
            lds: self.lds.clone(),
            insts: PrimaryMap::with_capacity(self.insts.len() + insts),
            // Room for the results of the new instructions (entries past the instructions are
            // empty, so a shorter table is the same table).
            results: copy_results(&self.results, self.insts.len() + insts),
            values: PrimaryMap::with_capacity(self.values.len() + values),
            blocks: self.blocks.clone(),
            layout: self.layout.clone(),
        };
        f.insts.extend(self.insts.values().cloned());
        f.values.extend(self.values.values().cloned());
        f
    }

    /// Creates a block (not yet in the layout).
    pub fn create_block(&mut self) -> Block {
        self.blocks.push(BlockData::default())
    }

    /// Appends a block to the layout.
    pub fn append_block(&mut self, b: Block) {
        self.layout.push(b)
    }

    /// Adds a parameter to a block.
    pub fn append_block_param(&mut self, b: Block, ty: Type) -> Value {
        let n = self.blocks[b].params.len() as u16;
        let v = self.values.push(ValueData {
            ty,
            def: ValueDef::Param(b, n),
        });
        self.blocks[b].params.push(v);
        v
    }

    /// Creates an instruction with results typed by [`InstData::result_types`], without placing
    /// it in a block.
    pub fn make_inst(&mut self, data: InstData) -> Result<Inst, String> {
        let tys = data.result_types(self)?;
        let inst = self.insts.push(data);
        // The results table grows with the instruction table, by doubling (written one entry
        // past its end per instruction, it took the slow path of every write); the lists are
        // moved into the larger table and the new entries made empty, not cloned (as in
        // [`copy_results`]).
        if self.results.get(inst).is_none() {
            let len = (2 * inst.as_u32() as usize).max(16);
            let mut elems = Vec::with_capacity(len);
            elems.extend(self.results.values_mut().map(std::mem::take));
            elems.resize_with(len, SmallVec::new);
            self.results = SecondaryMap::from(elems);
        }
        let mut res = SmallVec::new();
        for (i, t) in tys.into_iter().enumerate() {
            res.push(self.values.push(ValueData {
                ty: t,
                def: ValueDef::Result(inst, i as u16),
            }));
        }
        self.results[inst] = res;
        Ok(inst)
    }

    /// Type of a value.
    pub fn value_type(&self, v: Value) -> Type {
        self.values[v].ty
    }

    /// The block an instruction sits in, by search (passes that need it often build a map).
    pub fn inst_block(&self, inst: Inst) -> Option<Block> {
        self.layout
            .iter()
            .copied()
            .find(|b| self.blocks[*b].insts.contains(&inst))
    }

    /// The terminator of a block, if its last instruction is one.
    pub fn terminator(&self, b: Block) -> Option<Inst> {
        let last = *self.blocks[b].insts.last()?;
        self.insts[last].is_terminator().then_some(last)
    }

    /// Successor blocks of `b`, in branch order (may repeat).
    pub fn successors(&self, b: Block) -> SmallVec<[Block; 2]> {
        match self.terminator(b) {
            Some(t) => self.insts[t]
                .branch_targets()
                .iter()
                .map(|c| c.block)
                .collect(),
            None => SmallVec::new(),
        }
    }

    /// Number of instructions in the layout.
    pub fn inst_count(&self) -> usize {
        self.layout
            .iter()
            .map(|b| self.blocks[*b].insts.len())
            .sum()
    }

    /// Total static LDS bytes declared (the dynamic array counts 0).
    pub fn lds_bytes(&self) -> u64 {
        self.lds.values().map(|d| d.bytes()).sum()
    }

    /// The dynamic LDS array, if the kernel declares one.
    pub fn dynamic_lds(&self) -> Option<LdsArray> {
        self.lds.iter().find(|(_, d)| d.dynamic).map(|(a, _)| a)
    }

    /// Replaces every use of each value by `map(value)` in all instructions of the layout.
    pub fn replace_uses(&mut self, mut map: impl FnMut(Value) -> Value) {
        for &b in &self.layout {
            for &i in &self.blocks[b].insts {
                self.insts[i].map_args(&mut map);
            }
        }
    }

    /// The parameter index of an entry-block value, when it is a kernel parameter.
    pub fn param_index(&self, v: Value) -> Option<usize> {
        match self.values.get(v)?.def {
            ValueDef::Param(b, n) if Some(b) == self.entry() => Some(n as usize),
            _ => None,
        }
    }
}

impl Function {
    /// A copy with blocks, instructions and values numbered in layout order and without the
    /// entities the layout does not use, so that printed IR reads `v0, v1, ...` without gaps.
    pub fn renumbered(&self) -> Function {
        use cranelift_entity::EntityRef;
        // Tables sized once for what the layout holds (growing them one entity at a time
        // reallocated and copied each several times).
        let n_insts: usize = self
            .layout
            .iter()
            .map(|&b| self.blocks[b].insts.len())
            .sum();
        let mut out = Function {
            name: self.name.clone(),
            params: self.params.clone(),
            flags: self.flags,
            workgroup_size: self.workgroup_size,
            lds: self.lds.clone(),
            insts: PrimaryMap::with_capacity(n_insts),
            values: PrimaryMap::with_capacity(self.values.len()),
            blocks: PrimaryMap::with_capacity(self.layout.len()),
            layout: Vec::with_capacity(self.layout.len()),
            ..Default::default()
        };
        out.results = copy_results(&out.results, n_insts);
        let mut bmap: SecondaryMap<Block, Option<Block>> = SecondaryMap::new();
        bmap.resize(self.blocks.len());
        for &b in &self.layout {
            let nb = out.blocks.push(BlockData {
                params: Vec::with_capacity(self.blocks[b].params.len()),
                insts: Vec::with_capacity(self.blocks[b].insts.len()),
            });
            bmap[b] = Some(nb);
        }
        let mut vmap: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
        vmap.resize(self.values.len());
        for &b in &self.layout {
            let nb = bmap[b].expect("mapped above");
            out.layout.push(nb);
            for &p in &self.blocks[b].params {
                vmap[p] = Some(out.append_block_param(nb, self.values[p].ty));
            }
            for &i in &self.blocks[b].insts {
                for &r in &self.results[i] {
                    let n = out.values.push(ValueData {
                        ty: self.values[r].ty,
                        def: ValueDef::Detached,
                    });
                    vmap[r] = Some(n);
                }
            }
        }
        // Values the layout uses but does not define keep a detached stand-in, so that the
        // verifier still reports them instead of this function panicking.
        let lookup = |v: Value,
                      out: &mut Function,
                      vmap: &mut SecondaryMap<Value, Option<Value>>|
         -> Value {
            if let Some(n) = vmap[v] {
                return n;
            }
            let ty = self.values.get(v).map_or(Type::Bool, |d| d.ty);
            let n = out.values.push(ValueData {
                ty,
                def: ValueDef::Detached,
            });
            vmap[v] = Some(n);
            n
        };
        for &b in &self.layout {
            let nb = bmap[b].expect("mapped above");
            for &i in &self.blocks[b].insts {
                let mut data = self.insts[i].clone();
                data.map_args(|a| lookup(a, &mut out, &mut vmap));
                for call in data.branch_targets_mut() {
                    call.block = bmap[call.block].unwrap_or(Block::new(u32::MAX as usize - 1));
                }
                let ni = out.insts.push(data);
                let res: SmallVec<[Value; 1]> = self.results[i]
                    .iter()
                    .map(|r| vmap[*r].expect("mapped above"))
                    .collect();
                for (k, r) in res.iter().enumerate() {
                    out.values[*r].def = ValueDef::Result(ni, k as u16);
                }
                out.results[ni] = res;
                out.blocks[nb].insts.push(ni);
            }
        }
        out
    }
}
