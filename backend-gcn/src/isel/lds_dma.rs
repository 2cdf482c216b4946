//! Direct-to-LDS loads: a global dword load whose only use is a store of it to LDS at a lane's
//! own word of a wave-contiguous run (`lds[w + lane_id]`, `w` uniform) is one
//! `buffer_load_dword ... offen lds`: the data goes from memory to LDS at `M0 + offset +
//! lane * 4` without passing through a VGPR, and the descriptor's range check still gives 0 for
//! lanes past the buffer's end (the IR's out-of-range load), which then land as 0 in LDS.
//!
//! Takes the IR function and its uniformity; gives the pairs that qualify. Everything else (other
//! widths, element sizes, index shapes, a global write between the two) keeps the VGPR round trip
//! of a `buffer_load` and a `ds_write`. gfx942, gfx90a and gfx900 all have the dword form;
//! wider LDS DMA forms (dwordx3/x4) are gfx950's only, so none is used.

use kjit_ir::{BinaryOp, Function, Inst, InstData, Mem, SpecialReg, Uniformity, Value, ValueDef};
use rustc_hash::FxHashMap as HashMap;

use crate::isa::{Operand, SpecialReg as Reg};
use crate::mir::{implicit, MInst, MOperand};

use super::{op, Isel, IselError};

/// A store to LDS that issues the load feeding it as a load to LDS.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DmaStore {
    /// The global load.
    pub load: Inst,
    /// The uniform part `w` of the store's LDS index `w + lane_id` (`None`: the index is
    /// `lane_id` alone).
    pub base: Option<Value>,
}

/// The LDS region number [`crate::isa::Modifiers::lds_region`] of an LDS array.
pub(crate) fn region(arr: kjit_ir::LdsArray) -> u8 {
    use cranelift_entity::EntityRef;
    (arr.index() + 1).min(crate::waitcnt::REGIONS - 1) as u8
}

/// `w` when `v` is `w + lane_id` (either order) with `w` uniform; `Some(None)` when `v` is
/// `lane_id`.
fn lane_run_base(func: &Function, uni: &Uniformity, v: Value) -> Option<Option<Value>> {
    let is_lane = |x: Value| {
        matches!(func.values[x].def, ValueDef::Result(i, _)
            if matches!(func.insts[i], InstData::Special { reg: SpecialReg::LaneId }))
    };
    if is_lane(v) {
        return Some(None);
    }
    let ValueDef::Result(i, _) = func.values[v].def else {
        return None;
    };
    match func.insts[i] {
        InstData::Binary {
            op: BinaryOp::Add,
            args: [a, b],
        } => {
            if is_lane(b) && uni.is_uniform(a) {
                Some(Some(a))
            } else if is_lane(a) && uni.is_uniform(b) {
                Some(Some(b))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `x` when `args` are `wave_broadcast(x, 0)` and `lane_id` (either order), `x` is the x id,
/// and the kernel declares y and z sizes of 1: a wave holds consecutive flat ids, which are x ids
/// then, so the wave's first id plus the lane is the lane's own x id (`lane_slot` of a 1-D
/// workgroup). The broadcast must be in the entry block, where lane 0 is always active.
pub(crate) fn x_id_of_lane_run(func: &Function, args: [Value; 2]) -> Option<Value> {
    use kjit_ir::Dim;
    let def = |v: Value| match func.values[v].def {
        ValueDef::Result(i, _) => Some((i, &func.insts[i])),
        _ => None,
    };
    let one_d = [Dim::Y, Dim::Z]
        .iter()
        .all(|&d| func.known_special(SpecialReg::WorkitemId(d)) == Some(0));
    if !one_d {
        return None;
    }
    let entry = func.entry()?;
    let base_of = |v: Value, lane: Value| {
        let (bi, b) = def(v)?;
        let InstData::WaveBroadcast { arg, lane: 0 } = *b else {
            return None;
        };
        let (_, l) = def(lane)?;
        let (_, x) = def(arg)?;
        let in_entry = func.blocks[entry].insts.contains(&bi);
        (in_entry
            && matches!(
                l,
                InstData::Special {
                    reg: SpecialReg::LaneId
                }
            )
            && matches!(
                x,
                InstData::Special {
                    reg: SpecialReg::WorkitemId(Dim::X)
                }
            ))
        .then_some(arg)
    };
    base_of(args[0], args[1]).or_else(|| base_of(args[1], args[0]))
}

/// The (load → store) and (store → [`DmaStore`]) pairs that become loads to LDS: a `load` of one
/// 4-byte element from a buffer whose result is used once, by a `store` of that one value to a
/// 4-byte LDS array later in the same block at index `w + lane_id`, with no global write or
/// barrier between them (the load to LDS reads memory where the store is).
pub(crate) fn pairs(
    func: &Function,
    uni: &Uniformity,
) -> (HashMap<Inst, Inst>, HashMap<Inst, DmaStore>) {
    // Reads of each value, counted when a store first needs them: most kernels store no
    // loaded word to LDS, and counting hashed every operand of the function.
    let mut uses: Option<HashMap<Value, u32>> = None;
    let count_uses = || {
        let mut uses: HashMap<Value, u32> = HashMap::default();
        for &b in &func.layout {
            for &i in &func.blocks[b].insts {
                func.insts[i].for_each_arg(|v| *uses.entry(v).or_default() += 1);
            }
        }
        uses
    };
    let (mut loads, mut stores) = (HashMap::default(), HashMap::default());
    for &b in &func.layout {
        let insts = &func.blocks[b].insts;
        for (k, &s) in insts.iter().enumerate() {
            let InstData::Store {
                mem: Mem::Lds(arr),
                index,
                ref values,
                ..
            } = func.insts[s]
            else {
                continue;
            };
            if values.len() != 1 || func.lds[arr].elem.bytes() != 4 {
                continue;
            }
            let v = values[0];
            let ValueDef::Result(l, _) = func.values[v].def else {
                continue;
            };
            let InstData::Load {
                mem: Mem::Global(buf),
                width: 1,
                ..
            } = func.insts[l]
            else {
                continue;
            };
            let four_bytes = matches!(func.value_type(buf),
                kjit_ir::Type::Buffer { elem, .. } if elem.bytes() == 4);
            if !four_bytes || uses.get_or_insert_with(&count_uses).get(&v) != Some(&1) {
                continue;
            }
            let Some(pos) = insts[..k].iter().position(|&x| x == l) else {
                continue;
            };
            let clobbered = insts[pos + 1..k].iter().any(|&x| {
                let e = func.insts[x].effects();
                e.writes_global || matches!(func.insts[x], InstData::Barrier)
            });
            if clobbered {
                continue;
            }
            let Some(base) = lane_run_base(func, uni, index) else {
                continue;
            };
            loads.insert(l, s);
            stores.insert(s, DmaStore { load: l, base });
        }
    }
    (loads, stores)
}

impl Isel<'_> {
    /// `store lds[index + offset], load buf[..]` as `M0 = LDS byte address of lane 0's word`
    /// and `buffer_load_dword vaddr, desc, 0 offen offset:imm lds` (the hardware adds the
    /// instruction offset on the LDS side too, so M0 has it taken off).
    pub(crate) fn lds_dma(
        &mut self,
        store: Inst,
        arr: kjit_ir::LdsArray,
        offset: u32,
    ) -> Result<(), IselError> {
        let d = self.dma_stores[&store];
        let InstData::Load {
            mem: Mem::Global(buf),
            index: gindex,
            offset: goffset,
            ..
        } = self.func.insts[d.load]
        else {
            return Err(IselError::Invalid("load to LDS without its load".into()));
        };
        let desc = self.desc(buf)?;
        let (addr, imm) = self.global_address(gindex, 4, goffset as u64 * 4, 4095 - 4 + 1);
        let k = self.lds_base[arr]
            .wrapping_add(offset.wrapping_mul(4))
            .wrapping_sub(imm);
        let m0 = MOperand::Phys(Operand::Special(Reg::M0));
        let mut set = match d.base.map(|w| (w, self.const_of(w))) {
            Some((_, Some((_, c)))) => lit_move(m0, k.wrapping_add((c as u32).wrapping_mul(4))),
            None => lit_move(m0, k),
            Some((w, None)) => {
                let w = self.val(w);
                let w = MOperand::Use(self.to_class(w, crate::mir::RegClass::Sgpr));
                let mut i = MInst::isa(op("s_lshl2_add_u32"), &[m0, w, MOperand::Phys(literal(k))]);
                i.implicit_defs |= implicit::SCC;
                i
            }
        };
        set.implicit_defs |= implicit::M0;
        self.push(set);
        let mut i = MInst::isa(
            op("buffer_load_dword"),
            &[
                // VDATA is unused by the `lds` form (encoded as 0, not printed).
                MOperand::Phys(Operand::Vgpr { first: 0, count: 1 }),
                MOperand::Use(addr),
                MOperand::Use(desc),
                MOperand::Phys(Operand::InlineInt(0)),
            ],
        );
        i.mods.offen = true;
        i.mods.offset = imm as i32;
        i.mods.lds = true;
        i.mods.lds_region = region(arr);
        i.implicit_uses = implicit::EXEC | implicit::M0;
        self.push(i);
        Ok(())
    }
}

/// `s_mov_b32 dst, bits`.
fn lit_move(dst: MOperand, bits: u32) -> MInst {
    MInst::isa(op("s_mov_b32"), &[dst, MOperand::Phys(literal(bits))])
}

/// `bits` as an inline constant or a literal.
fn literal(bits: u32) -> Operand {
    super::valu::inline32(bits).unwrap_or(Operand::Literal(bits))
}
