//! Selection of matrix fragments and MFMA (`docs/mfma.md`): a fragment is one VGPR tuple of its
//! dwords (the allocator aligns it); loads and stores move whole fragments with
//! `buffer_load/store_dword{x2,x4}` and `ds_read/write_b{32,64,128}`; `frag_build` packs
//! 16-bit elements in pairs (`v_and_b32` + `v_lshl_or_b32`, or one `v_perm_b32` when both
//! halves come out of other fragments; one `Extract` when the items are a slice of one
//! fragment from an even dword); `frag_extract` takes a dword (and its half); `mfma` is one
//! `v_mfma_*` whose result is tied to C, so a loop's accumulator stays in one register range.

use kjit_ir::{FragType, InstData, Mem, MfmaOp, Type, Value};

use crate::mir::{implicit, MInst, MOperand, RegClass, VReg};
use crate::Target;

use super::valu::Src;
use super::{op, Isel, IselError};

/// The opcode name of `op` on `target` (gfx90a spells the bf16 forms `..._bf16_1k`), or why the
/// target cannot run it.
pub(crate) fn mfma_opcode(op: MfmaOp, target: Target) -> Result<&'static str, IselError> {
    let name = match (op, target) {
        (MfmaOp::F32_32x32x8Bf16, Target::Gfx90a) => "v_mfma_f32_32x32x8bf16_1k",
        (MfmaOp::F32_16x16x16Bf16, Target::Gfx90a) => "v_mfma_f32_16x16x16bf16_1k",
        _ => op.mnemonic(),
    };
    let exists = crate::isa::Opcode::from_name(name).is_some_and(|o| o.exists_on(target));
    if !exists {
        return Err(IselError::Unsupported(format!(
            "mfma.{op} needs a matrix core instruction ({name}) that {target} does not have \
             (MFMA targets: gfx90a, gfx942)"
        )));
    }
    Ok(name)
}

impl Isel<'_> {
    /// Lowers the fragment and MFMA instructions; false for any other instruction.
    pub(crate) fn lower_frag(&mut self, data: &InstData, res: &[Value]) -> Result<bool, IselError> {
        match *data {
            InstData::FragLoad {
                mem,
                index,
                offset,
                ty,
            } => {
                let r = self.frag_move(mem, index, offset, ty, None)?;
                self.result(res[0], r.expect("a load gives its fragment"));
            }
            InstData::FragStore {
                mem,
                index,
                offset,
                value,
            } => {
                let Type::Frag(ty) = self.func.value_type(value) else {
                    return Err(IselError::Invalid(format!("{value} is not a fragment")));
                };
                let v = self.val(value);
                let v = self.to_class(v, RegClass::Vgpr);
                self.frag_move(mem, index, offset, ty, Some(v))?;
            }
            InstData::FragBuild { ty, ref args } => {
                let args = args.clone();
                let r = self.frag_build(ty, &args);
                self.result(res[0], r);
            }
            InstData::FragExtract { arg, item } => {
                let Type::Frag(ty) = self.func.value_type(arg) else {
                    return Err(IselError::Invalid(format!("{arg} is not a fragment")));
                };
                let v = self.val(arg);
                let r = self.frag_extract(ty, v, item as u32);
                self.result(res[0], r);
            }
            InstData::Mfma { op: mop, args } => {
                let name = mfma_opcode(mop, self.target)?;
                let [a, b, c] = args.map(|x| {
                    let v = self.val(x);
                    self.to_class(v, RegClass::Vgpr)
                });
                let d = self.new_vreg(RegClass::Vgpr, mop.acc_frag().dwords() as u8);
                let mut i = MInst::isa(
                    op(name),
                    &[
                        MOperand::Def(d),
                        MOperand::Use(a),
                        MOperand::Use(b),
                        MOperand::Use(c),
                    ],
                );
                i.tied = Some((0, 3));
                i.implicit_uses = implicit::EXEC;
                self.push(i);
                self.result(res[0], d);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Moves a fragment between registers and memory in pieces of at most four dwords: loads
    /// (`store` is `None`) give the fragment's register tuple; a store writes `store`.
    fn frag_move(
        &mut self,
        mem: Mem,
        index: Value,
        offset: u32,
        ty: FragType,
        store: Option<VReg>,
    ) -> Result<Option<VReg>, IselError> {
        const BUFFER: [[&str; 4]; 2] = [
            [
                "buffer_load_dword",
                "buffer_load_dwordx2",
                "buffer_load_dwordx3",
                "buffer_load_dwordx4",
            ],
            [
                "buffer_store_dword",
                "buffer_store_dwordx2",
                "buffer_store_dwordx3",
                "buffer_store_dwordx4",
            ],
        ];
        const LDS: [[&str; 4]; 2] = [
            ["ds_read_b32", "ds_read_b64", "ds_read_b96", "ds_read_b128"],
            [
                "ds_write_b32",
                "ds_write_b64",
                "ds_write_b96",
                "ds_write_b128",
            ],
        ];
        let size = ty.elem.bytes();
        let span = ty.bytes() as u64;
        // The descriptor (global) or none (LDS), the address VGPR and the immediate offset.
        let (desc, addr, imm) = match mem {
            Mem::Global(buf) => {
                let desc = self.desc(buf)?;
                let (addr, imm) =
                    self.global_address(index, size, offset as u64 * size as u64, 4095 - span + 1);
                (Some(desc), addr, imm)
            }
            Mem::Lds(arr) => {
                let base = self.lds_base[arr] as u64 + offset as u64 * size as u64;
                let (addr, imm) = self.address(index, size, base, 65535 - span + 1);
                (None, addr, imm)
            }
        };
        let n_all = ty.dwords();
        let mut parts = Vec::new();
        for d in (0..n_all).step_by(4) {
            let n = (n_all - d).min(4);
            let names = if desc.is_some() { &BUFFER } else { &LDS };
            let name = names[store.is_some() as usize][n as usize - 1];
            let data = match store {
                Some(v) if n == n_all => MOperand::Use(v),
                Some(v) => MOperand::Use(self.extract(v, d as u8, n as u8)),
                None => {
                    let r = self.new_vreg(RegClass::Vgpr, n as u8);
                    parts.push(r);
                    MOperand::Def(r)
                }
            };
            match (desc, mem) {
                (Some(desc), _) => self.mubuf(name, data, addr, desc, imm + 4 * d),
                (None, Mem::Lds(arr)) if store.is_some() => {
                    self.ds(name, &[MOperand::Use(addr), data], imm + 4 * d, arr)
                }
                (None, Mem::Lds(arr)) => {
                    self.ds(name, &[data, MOperand::Use(addr)], imm + 4 * d, arr)
                }
                (None, Mem::Global(_)) => unreachable!("a global fragment access has a descriptor"),
            }
        }
        Ok(match parts.len() {
            0 => None,
            1 => Some(parts[0]),
            _ => Some(self.build(RegClass::Vgpr, &parts)),
        })
    }

    fn frag_build(&mut self, ty: FragType, args: &[Value]) -> VReg {
        if let Some(r) = self.slice_of_fragment(ty, args) {
            return r;
        }
        let mut dwords: Vec<VReg> = Vec::new();
        if ty.elem.bytes() == 2 {
            for pair in args.chunks(2) {
                if let Some(d) = self.pair_of_halves(pair) {
                    dwords.push(d);
                    continue;
                }
                let lo = self.src(pair[0]);
                let lo = self.v("v_and_b32", &[Src::Imm(0xffff), lo]);
                let hi = match pair.get(1) {
                    Some(&h) => {
                        let h = self.src(h);
                        self.reg(h, RegClass::Vgpr)
                    }
                    None => self.imm_reg(0, RegClass::Vgpr),
                };
                dwords.push(self.v("v_lshl_or_b32", &[Src::R(hi), Src::Imm(16), Src::R(lo)]));
            }
        } else {
            for &a in args {
                let p = self.src(a);
                dwords.push(self.reg(p, RegClass::Vgpr));
            }
        }
        if dwords.len() == 1 {
            dwords[0]
        } else {
            self.build(RegClass::Vgpr, &dwords)
        }
    }

    /// A fragment built of consecutive items of one wider fragment, starting at an even dword
    /// (a 16-byte load's 8-byte half): one `Extract` of those dwords, which the allocator
    /// may place inside the wider fragment's registers, where a `Build` of per-dword
    /// extractions is placed dword by dword (and an 8-byte half stays a copy).
    fn slice_of_fragment(&mut self, ty: FragType, args: &[Value]) -> Option<VReg> {
        let bytes = ty.elem.bytes();
        if args.len() < 2 || !matches!(bytes, 2 | 4) {
            return None;
        }
        let item_of = |v: Value| -> Option<(Value, u32)> {
            let kjit_ir::ValueDef::Result(i, _) = self.func.values[v].def else {
                return None;
            };
            match self.func.insts[i] {
                InstData::FragExtract { arg, item } => match self.func.value_type(arg) {
                    Type::Frag(t) if t.elem == ty.elem => Some((arg, item as u32)),
                    _ => None,
                },
                _ => None,
            }
        };
        let (src, first) = item_of(args[0])?;
        let per_dword = 4 / bytes;
        let whole = args.len() as u32 * bytes;
        if first % per_dword != 0 || !whole.is_multiple_of(4) {
            return None;
        }
        let in_order = args
            .iter()
            .enumerate()
            .all(|(i, &a)| item_of(a) == Some((src, first + i as u32)));
        let v = self.val(src);
        let v = self.to_class(v, RegClass::Vgpr);
        let (at, n) = (first / per_dword, whole / 4);
        // Tuples sit at even registers: an odd start could not share them.
        let fits = n < u32::from(self.mf.vregs[v].dwords) && at % 2 == 0;
        (in_order && fits).then(|| self.extract(v, at as u8, n as u8))
    }

    /// The fragment and item a value is `frag_extract`ed from, for 16-bit fragments.
    fn half_of(&self, v: Value) -> Option<(Value, u32)> {
        let kjit_ir::ValueDef::Result(i, _) = self.func.values[v].def else {
            return None;
        };
        match self.func.insts[i] {
            InstData::FragExtract { arg, item } => match self.func.value_type(arg) {
                Type::Frag(t) if t.elem.bytes() == 2 => Some((arg, item as u32)),
                _ => None,
            },
            _ => None,
        }
    }

    /// A dword of two 16-bit halves that are both taken out of 16-bit fragments (regrouping
    /// fragments, e.g. transposing 2×2 blocks of f16): the source dword itself when the halves
    /// are one dword in order, else one `v_perm_b32` in place of two extractions and a pack.
    fn pair_of_halves(&mut self, pair: &[Value]) -> Option<VReg> {
        let [lo, hi] = pair else { return None };
        let ((fl, il), (fh, ih)) = (self.half_of(*lo)?, self.half_of(*hi)?);
        let dword = |s: &mut Self, f: Value, item: u32| {
            let v = s.val(f);
            let v = s.to_class(v, RegClass::Vgpr);
            if s.mf.vregs[v].dwords == 1 {
                v
            } else {
                s.extract(v, (item / 2) as u8, 1)
            }
        };
        if fl == fh && il % 2 == 0 && ih == il + 1 {
            return Some(dword(self, fl, il));
        }
        let (wl, wh) = (dword(self, fl, il), dword(self, fh, ih));
        // v_perm_b32 d, s0, s1, sel: selector bytes 0-3 take bytes of s1, 4-7 of s0.
        let (bl, bh) = (2 * (il % 2), 4 + 2 * (ih % 2));
        let sel = bl | (bl + 1) << 8 | bh << 16 | (bh + 1) << 24;
        let sel = self.perm_selector(sel);
        Some(self.v("v_perm_b32", &[Src::R(wh), Src::R(wl), Src::R(sel)]))
    }

    /// The SGPR holding `v_perm_b32` selector `sel` (gfx9's VOP3 takes no literal; one SGPR
    /// operand is allowed): made once, at the end of the entry block, which dominates every
    /// use, so a loop reads it instead of rematerialising it per step. SALU moves ignore EXEC
    /// and leave SCC alone, so the entry block's end is a valid place whatever it ends with.
    fn perm_selector(&mut self, sel: u32) -> VReg {
        if let Some(&r) = self.perm_selectors.get(&sel) {
            return r;
        }
        let cur = self.cur;
        self.cur = self.mf.entry();
        let r = self.s_mov32(sel);
        self.cur = cur;
        self.perm_selectors.insert(sel, r);
        r
    }

    fn frag_extract(&mut self, ty: FragType, v: VReg, item: u32) -> VReg {
        match ty.elem.bytes() {
            2 => {
                let w = if ty.dwords() == 1 {
                    v
                } else {
                    self.extract(v, (item / 2) as u8, 1)
                };
                if item.is_multiple_of(2) {
                    self.v("v_and_b32", &[Src::Imm(0xffff), Src::R(w)])
                } else {
                    self.v("v_lshrrev_b32", &[Src::Imm(16), Src::R(w)])
                }
            }
            4 if ty.dwords() == 1 => v,
            4 => self.extract(v, item as u8, 1),
            _ if ty.dwords() == 2 => v,
            _ => self.extract(v, 2 * item as u8, 2),
        }
    }
}

/// The LDS arrays fragment loads and stores touch: they are placed 16-byte aligned so that
/// `ds_read/write_b64/b128` of an aligned fragment are aligned.
pub(crate) fn frag_lds_arrays(func: &kjit_ir::Function) -> Vec<kjit_ir::LdsArray> {
    let mut out = Vec::new();
    for (_, d) in func.insts.iter() {
        if let InstData::FragLoad {
            mem: Mem::Lds(a), ..
        }
        | InstData::FragStore {
            mem: Mem::Lds(a), ..
        } = d
        {
            if !out.contains(a) {
                out.push(*a);
            }
        }
    }
    out
}
