//! Lowering of each IR instruction to machine instructions: arithmetic on the SALU or VALU by
//! the result's uniformity, conversions, memory through buffer descriptors and LDS, wave ops.

use kjit_ir::{
    AtomicOp, BinaryOp, CmpOp, InstData, Mem, ReduceOp, TernaryOp, Type, UnaryOp, Value, ValueDef,
};

use crate::isa::{Operand, SpecialReg};
use crate::mir::{implicit, MInst, MOperand, RegClass, VReg};

use super::valu::Src;
use super::{lds_dma, op, Isel, IselError};

fn unsupported<T>(what: String) -> Result<T, IselError> {
    Err(IselError::Unsupported(what))
}

pub(crate) fn is64(t: Type) -> bool {
    matches!(t, Type::I64 | Type::U64 | Type::F64)
}

/// The `s_cmp_*` of a 32-bit integer compare.
pub(crate) fn s_cmp_name(o: CmpOp, t: Type) -> String {
    let c = match o {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "lg",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
    };
    let s = if t == Type::I32 { "i32" } else { "u32" };
    format!("s_cmp_{c}_{s}")
}

/// Name suffix of a VALU compare, or of a float operation, on `t`.
fn cmp_suffix(t: Type) -> &'static str {
    match t {
        Type::I32 => "i32",
        Type::U32 | Type::Bool => "u32",
        Type::I64 => "i64",
        Type::U64 => "u64",
        Type::F16 => "f16",
        Type::F32 => "f32",
        Type::F64 => "f64",
        Type::Buffer { .. } | Type::Frag(_) => "u32",
    }
}

impl Isel<'_> {
    /// The constant an IR value is, if it is one.
    pub(crate) fn const_of(&self, v: Value) -> Option<(Type, u64)> {
        match self.func.values[v].def {
            kjit_ir::ValueDef::Result(i, _) => match self.func.insts[i] {
                InstData::Const { ty, bits } => Some((ty, bits)),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn materialize_const(&mut self, _v: Value, (ty, bits): (Type, u64)) -> VReg {
        if is64(ty) {
            self.imm_reg64(bits, RegClass::Sgpr)
        } else {
            self.s_mov32(bits as u32)
        }
    }

    /// An IR value as a source operand (constants inline).
    pub(crate) fn src(&mut self, v: Value) -> Src {
        if let Some((ty, bits)) = self.const_of(v) {
            return if is64(ty) {
                Src::Imm64(bits)
            } else {
                Src::Imm(bits as u32)
            };
        }
        Src::R(self.val(v))
    }

    /// A source as a register of `class`.
    pub(crate) fn reg(&mut self, s: Src, class: RegClass) -> VReg {
        match s {
            Src::R(v) => self.to_class(v, class),
            Src::Imm(b) => self.imm_reg(b, class),
            Src::Imm64(b) => self.imm_reg64(b, class),
        }
    }

    /// Low and high halves of a 64-bit source.
    fn halves(&mut self, s: Src) -> (Src, Src) {
        match s {
            Src::R(v) => {
                let lo = self.extract(v, 0, 1);
                let hi = self.extract(v, 1, 1);
                (Src::R(lo), Src::R(hi))
            }
            Src::Imm64(b) => (Src::Imm(b as u32), Src::Imm((b >> 32) as u32)),
            Src::Imm(b) => (Src::Imm(b), Src::Imm(0)),
        }
    }

    pub(crate) fn is_sgpr_src(&self, s: Src) -> bool {
        match s {
            Src::R(v) => self.mf.vregs[v].class == RegClass::Sgpr,
            _ => true,
        }
    }

    /// Ends an instruction: the result in its class, recorded for later reads.
    pub(crate) fn result(&mut self, r: Value, reg: VReg) {
        let class = self.class_of(r);
        let reg = self.to_class(reg, class);
        self.def(r, reg);
    }

    /// Lowers one non-terminator IR instruction.
    pub(crate) fn lower(&mut self, i: kjit_ir::Inst) -> Result<(), IselError> {
        let func = self.func;
        let data = func.insts[i].clone();
        // Borrowed from the function, not copied: `func` outlives `self`'s borrows.
        let res: &[Value] = &func.results[i];
        if self.lower_frag(&data, res)? {
            return Ok(());
        }
        match data {
            InstData::Const { .. } => {}
            InstData::Special { reg } => {
                let r = *self.specials.get(&reg).ok_or_else(|| {
                    IselError::Unsupported(format!("special register {}", reg.name()))
                })?;
                self.params.insert(res[0], r);
            }
            InstData::BufferLen { buf } => {
                let r = *self
                    .lens
                    .get(&buf)
                    .ok_or_else(|| IselError::Invalid(format!("{buf} is not a buffer")))?;
                self.params.insert(res[0], r);
            }
            InstData::Unary { op, arg } => {
                let t = func.value_type(arg);
                let u = self.uni.is_uniform(res[0]);
                let r = self.unary(op, t, arg, u)?;
                self.result(res[0], r);
            }
            InstData::Binary {
                op: BinaryOp::Add,
                args,
            } if lds_dma::x_id_of_lane_run(func, args).is_some() => {
                let x = lds_dma::x_id_of_lane_run(func, args).expect("checked");
                let r = self.val(x);
                self.result(res[0], r);
            }
            InstData::Binary {
                op: op @ (BinaryOp::Div | BinaryOp::Rem),
                args,
            } if matches!(func.value_type(args[0]), Type::I32 | Type::U32) => {
                let t = func.value_type(args[0]);
                let u = self.uni.is_uniform(res[0]);
                let r = self.lower_divrem(op == BinaryOp::Rem, t, args, u)?;
                self.result(res[0], r);
            }
            InstData::Binary { op, args } => {
                let t = func.value_type(args[0]);
                let u = self.uni.is_uniform(res[0]);
                let a = self.src(args[0]);
                let b = self.src(args[1]);
                let r = self.binary(op, t, a, b, u)?;
                self.result(res[0], r);
            }
            InstData::Ternary { op, args } => {
                let t = func.value_type(args[0]);
                let u = self.uni.is_uniform(res[0]);
                let a = self.src(args[0]);
                let b = self.src(args[1]);
                let c = self.src(args[2]);
                let r = self.ternary(op, t, [a, b, c], u, res[0])?;
                self.result(res[0], r);
            }
            InstData::Cmp { op, args } => {
                let t = func.value_type(args[0]);
                let u = self.uni.is_uniform(res[0]);
                let a = self.src(args[0]);
                let b = self.src(args[1]);
                let r = self.cmp(op, t, a, b, u, Some(res[0]))?;
                self.result(res[0], r);
            }
            InstData::Select { args } => {
                let t = func.value_type(args[1]);
                let u = self.uni.is_uniform(res[0]);
                let r = self.select(t, args[0], args[1], args[2], u)?;
                self.result(res[0], r);
            }
            InstData::Convert { to, arg } => {
                let u = self.uni.is_uniform(res[0]);
                let r = self.convert(func.value_type(arg), to, arg, u)?;
                self.result(res[0], r);
            }
            InstData::Bitcast { arg, .. } => {
                let r = self.val(arg);
                self.result(res[0], r);
            }
            InstData::Load { .. } if self.dma_loads.contains_key(&i) => {
                // Issued by the store it feeds, as a load to LDS (`lds_dma`).
            }
            InstData::Store {
                mem: Mem::Lds(arr),
                offset,
                ..
            } if self.dma_stores.contains_key(&i) => self.lds_dma(i, arr, offset)?,
            InstData::Load {
                mem,
                index,
                offset,
                width,
            } => {
                if !self.scalar_load(i, mem, index, offset, width, res)? {
                    self.load(mem, index, offset, width, res)?
                }
            }
            InstData::Store {
                mem,
                index,
                offset,
                values,
            } => {
                // In a masked-store region EXEC drops the lanes the index's `select` would.
                let index = self.region_store_index(i).unwrap_or(index);
                self.store(mem, index, offset, &values)?
            }
            InstData::Atomic {
                op,
                mem,
                index,
                offset,
                args,
            } => self.atomic(op, mem, index, offset, &args, res[0])?,
            InstData::Barrier => {
                self.push(MInst::isa(op("s_barrier"), &[]));
                // Nothing moves across a barrier in the schedule: an address of one VALU
                // reused after it would hold its VGPR through the wait (the GEMM's keyed
                // LDS reads, two steps per loop body: 6 VGPRs), so it is made again.
                for key in std::mem::take(&mut self.remade_after_barrier) {
                    self.addr_cache.remove(&key);
                }
            }
            InstData::WaveShuffle { args } => {
                let t = func.value_type(args[0]);
                let v = self.val(args[0]);
                let v = self.to_class(v, RegClass::Vgpr);
                let lane = self.src(args[1]);
                let addr = self.v("v_lshlrev_b32", &[Src::Imm(2), lane]);
                let parts = self.dword_parts(v, t);
                let mut out = Vec::new();
                for p in parts {
                    out.push(self.bpermute(addr, p));
                }
                let r = self.join_parts(&out, RegClass::Vgpr);
                self.result(res[0], r);
            }
            InstData::WaveBroadcast { arg, lane } => {
                let t = func.value_type(arg);
                let v = self.val(arg);
                let parts = self.dword_parts(v, t);
                let exec = self.cur_exec.expect("body EXEC");
                let mut out = Vec::new();
                for p in parts {
                    let s = if self.mf.vregs[p].class == RegClass::Sgpr {
                        p
                    } else {
                        let s = self.new_vreg(RegClass::Sgpr, 1);
                        self.push(MInst::isa(
                            op("v_readlane_b32"),
                            &[
                                MOperand::Def(s),
                                MOperand::Use(p),
                                MOperand::Phys(Operand::InlineInt(lane as i8)),
                            ],
                        ));
                        s
                    };
                    // Lane 0 of the launch EXEC is active (a wave's lanes are a prefix).
                    if lane == 0 && Some(exec) == self.launch_exec {
                        out.push(s);
                        continue;
                    }
                    // An inactive lane reads as 0.
                    self.salu(
                        "s_bitcmp1_b64",
                        None,
                        &[Src::R(exec), Src::Imm(lane as u32)],
                    );
                    let r = self.sop2("s_cselect_b32", &[Src::R(s), Src::Imm(0)]);
                    out.push(r);
                }
                let r = self.join_parts(&out, RegClass::Sgpr);
                self.result(res[0], r);
            }
            InstData::WaveReduce { op, arg } => {
                let r = self.wave_reduce(op, arg, false)?;
                self.result(res[0], r);
            }
            InstData::WaveScan { op, arg } => {
                let r = self.wave_reduce(op, arg, true)?;
                self.result(res[0], r);
            }
            InstData::Jump { .. } | InstData::Brif { .. } | InstData::Return => {
                unreachable!("terminators are lowered by the section")
            }
            InstData::FragLoad { .. }
            | InstData::FragStore { .. }
            | InstData::FragBuild { .. }
            | InstData::FragExtract { .. }
            | InstData::Mfma { .. } => unreachable!("lowered by lower_frag"),
        }
        if let Some(&v) = res.first() {
            self.hoist_reciprocal(v);
            self.hoist_lds_offsets(v);
        }
        Ok(())
    }

    /// After lowering the instruction defining `v` in the entry block (before any EXEC change):
    /// the byte offsets of `v` that LDS accesses in other blocks use.
    fn hoist_lds_offsets(&mut self, v: Value) {
        if self.cur != self.mf.entry() || self.mf.blocks[self.cur].exec_partial {
            return;
        }
        let Some(shifts) = self.lds_indices.get(&v).cloned() else {
            return;
        };
        for shift in shifts {
            let a = self.byte_offset(v, shift);
            self.entry_offsets.insert((v, shift), a);
        }
    }

    fn dword_parts(&mut self, v: VReg, t: Type) -> Vec<VReg> {
        if is64(t) {
            vec![self.extract(v, 0, 1), self.extract(v, 1, 1)]
        } else {
            vec![v]
        }
    }

    fn join_parts(&mut self, parts: &[VReg], class: RegClass) -> VReg {
        if parts.len() == 1 {
            parts[0]
        } else {
            self.build(class, parts)
        }
    }

    fn bpermute(&mut self, addr: VReg, data: VReg) -> VReg {
        let d = self.new_vreg(RegClass::Vgpr, 1);
        let mut i = MInst::isa(
            op("ds_bpermute_b32"),
            &[MOperand::Def(d), MOperand::Use(addr), MOperand::Use(data)],
        );
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        d
    }

    /// The lane mask of a bool value (SGPR pair; bits of inactive lanes unspecified).
    pub(crate) fn lane_mask(&mut self, c: Value) -> VReg {
        if let Some(&m) = self.mask_cache.get(&c) {
            return m;
        }
        if let Some((_, bits)) = self.const_of(c) {
            let m = self.new_vreg(RegClass::Sgpr, 2);
            self.push(MInst::isa(
                op("s_mov_b64"),
                &[
                    MOperand::Def(m),
                    MOperand::Phys(Operand::InlineInt(if bits != 0 { -1 } else { 0 })),
                ],
            ));
            return m;
        }
        if let Some(m) = self.combined_mask(c) {
            self.mask_cache.insert(c, m);
            return m;
        }
        let m = if self.class_of(c) == RegClass::Sgpr {
            self.cond_mask(c, None)
        } else {
            let v = self.val(c);
            self.vcmp("v_cmp_ne_u32", Src::Imm(0), Src::R(v))
        };
        self.mask_cache.insert(c, m);
        m
    }

    /// The lanes of `m` (all lanes if `None`) where the uniform bool `u` holds: `s_cmp` +
    /// `s_cselect_b64 m, 0` per compare of an `and` of uniform compares made in this block (the
    /// compares are done again on SCC, so their 0/1 values and `s_and_b32`s are usually dead).
    fn cond_mask(&mut self, u: Value, m: Option<VReg>) -> VReg {
        if let Some((_, bits)) = self.const_of(u) {
            return match m {
                Some(m) if bits != 0 => m,
                _ => self.lane_mask(u),
            };
        }
        if let kjit_ir::ValueDef::Result(i, _) = self.func.values[u].def {
            if let InstData::Binary {
                op: BinaryOp::And,
                args,
            } = self.func.insts[i]
            {
                if self.local.contains_key(&u) && self.func.value_type(u) == Type::Bool {
                    let inner = self.cond_mask(args[1], m);
                    return self.cond_mask(args[0], Some(inner));
                }
            }
        }
        let cur = self.cur_block;
        let (name, srcs) = match self.scalar_cmp(cur, u) {
            Some(c) => c,
            None => {
                let v = self.val(u);
                let v = self.to_class(v, RegClass::Sgpr);
                ("s_cmp_lg_u32".into(), [Src::R(v), Src::Imm(0)])
            }
        };
        self.salu(&name, None, &srcs);
        let yes = m.map_or(Src::Imm64(u64::MAX), Src::R);
        self.sop2("s_cselect_b64", &[yes, Src::Imm64(0)])
    }

    /// The lane mask of a divergent bool `and`/`or`/`xor`/`not` whose divergent operands already
    /// have lane masks in this block (compares, or such combinations of them): one
    /// `s_and_b64`/`s_or_b64`/`s_xor_b64`/`s_not_b64` of the masks instead of a `v_cmp_ne` of the
    /// bool's 0/1 value (whose `v_cndmask`s and `v_and` are then dead). `None` when an operand
    /// has no mask at hand.
    fn combined_mask(&mut self, c: Value) -> Option<VReg> {
        if self.uni.is_uniform(c) || self.func.value_type(c) != Type::Bool {
            return None;
        }
        let kjit_ir::ValueDef::Result(i, _) = self.func.values[c].def else {
            return None;
        };
        // Whether `x` has a mask at hand (its own or, recursively, its operands').
        fn at_hand(me: &Isel<'_>, x: Value, depth: u32) -> bool {
            if me.mask_cache.contains_key(&x) || me.const_of(x).is_some() {
                return true;
            }
            if depth == 0 || me.uni.is_uniform(x) {
                return false;
            }
            let kjit_ir::ValueDef::Result(i, _) = me.func.values[x].def else {
                return false;
            };
            match me.func.insts[i] {
                InstData::Binary {
                    op: BinaryOp::And | BinaryOp::Or | BinaryOp::Xor,
                    args,
                } if me.func.value_type(args[0]) == Type::Bool => args
                    .iter()
                    .all(|&a| me.uni.is_uniform(a) || at_hand(me, a, depth - 1)),
                InstData::Unary {
                    op: UnaryOp::Not,
                    arg,
                } => at_hand(me, arg, depth - 1),
                _ => false,
            }
        }
        match self.func.insts[i] {
            // A uniform operand selects the other's mask or 0 on SCC.
            InstData::Binary {
                op: BinaryOp::And,
                args,
            } if at_hand(self, c, 8)
                && self.uni.is_uniform(args[0]) != self.uni.is_uniform(args[1]) =>
            {
                let (u, d) = if self.uni.is_uniform(args[0]) {
                    (args[0], args[1])
                } else {
                    (args[1], args[0])
                };
                let m = self.lane_mask(d);
                Some(self.cond_mask(u, Some(m)))
            }
            InstData::Binary { op: o, args } if at_hand(self, c, 8) => {
                let name = match o {
                    BinaryOp::And => "s_and_b64",
                    BinaryOp::Or => "s_or_b64",
                    _ => "s_xor_b64",
                };
                let a = self.lane_mask(args[0]);
                let b = self.lane_mask(args[1]);
                Some(self.sop2(name, &[Src::R(a), Src::R(b)]))
            }
            InstData::Unary { arg, .. } if at_hand(self, c, 8) => {
                let a = self.lane_mask(arg);
                Some(self.sop2("s_not_b64", &[Src::R(a)]))
            }
            _ => None,
        }
    }

    /// A uniform bool (0/1 SGPR) from SCC.
    fn bool_from_scc(&mut self) -> VReg {
        self.sop2("s_cselect_b32", &[Src::Imm(1), Src::Imm(0)])
    }

    /// A 0/1 VGPR from a lane mask.
    fn bool_from_mask(&mut self, m: VReg) -> VReg {
        let d = self.new_vreg(RegClass::Vgpr, 1);
        self.vop(
            "v_cndmask_b32",
            &[d],
            &[Src::Imm(0), Src::Imm(1), Src::R(m)],
        );
        d
    }

    /// Uniform bool from a lane mask computed under the current EXEC.
    fn uniform_from_mask(&mut self, m: VReg) -> VReg {
        self.salu("s_cmp_lg_u64", None, &[Src::R(m), Src::Imm64(0)]);
        self.bool_from_scc()
    }

    fn set_last_neg(&mut self, neg: u8) {
        let b = self.cur;
        if let Some(i) = self.mf.blocks[b].insts.last_mut() {
            i.mods.neg = neg;
        }
    }

    fn unary(&mut self, o: UnaryOp, t: Type, arg: Value, u: bool) -> Result<VReg, IselError> {
        let a = self.src(arg);
        Ok(match o {
            UnaryOp::Neg if t.is_int() => {
                let z = if is64(t) { Src::Imm64(0) } else { Src::Imm(0) };
                self.binary(BinaryOp::Sub, t, z, a, u)?
            }
            UnaryOp::Neg | UnaryOp::Abs if t.is_float() => {
                let (bits, opn) = match (o, t) {
                    (UnaryOp::Neg, Type::F16) => (0x8000u32, "xor"),
                    (UnaryOp::Neg, _) => (0x8000_0000, "xor"),
                    (_, Type::F16) => (0x7fff, "and"),
                    _ => (0x7fff_ffff, "and"),
                };
                if is64(t) {
                    let (lo, hi) = self.halves(a);
                    let h = self.bitop(opn, hi, Src::Imm(bits), u);
                    let lo = self.reg(lo, if u { RegClass::Sgpr } else { RegClass::Vgpr });
                    let class = self.mf.vregs[h].class;
                    self.build(class, &[lo, h])
                } else {
                    self.bitop(opn, a, Src::Imm(bits), u)
                }
            }
            UnaryOp::Abs => {
                if is64(t) {
                    let sign = self.binary(BinaryOp::Shr, Type::I64, a, Src::Imm64(63), u)?;
                    let x = self.binary(BinaryOp::Xor, t, a, Src::R(sign), u)?;
                    self.binary(BinaryOp::Sub, t, Src::R(x), Src::R(sign), u)?
                } else if u {
                    self.sop2("s_abs_i32", &[a])
                } else {
                    let n = self.v("v_sub_u32", &[Src::Imm(0), a]);
                    self.v("v_max_i32", &[a, Src::R(n)])
                }
            }
            UnaryOp::Not => {
                if t == Type::Bool {
                    self.bitop("xor", a, Src::Imm(1), u)
                } else if is64(t) {
                    if u {
                        self.sop2("s_not_b64", &[a])
                    } else {
                        let (lo, hi) = self.halves(a);
                        let l = self.v("v_not_b32", &[lo]);
                        let h = self.v("v_not_b32", &[hi]);
                        self.build(RegClass::Vgpr, &[l, h])
                    }
                } else if u {
                    self.sop2("s_not_b32", &[a])
                } else {
                    self.v("v_not_b32", &[a])
                }
            }
            UnaryOp::Sqrt
            | UnaryOp::Rcp
            | UnaryOp::Exp2
            | UnaryOp::Log2
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Trunc
            | UnaryOp::RoundEven => {
                let base = match o {
                    UnaryOp::Sqrt => "v_sqrt",
                    UnaryOp::Rcp => "v_rcp",
                    UnaryOp::Exp2 => "v_exp",
                    UnaryOp::Log2 => "v_log",
                    UnaryOp::Floor => "v_floor",
                    UnaryOp::Ceil => "v_ceil",
                    UnaryOp::Trunc => "v_trunc",
                    _ => "v_rndne",
                };
                if t == Type::F64 && matches!(o, UnaryOp::Exp2 | UnaryOp::Log2) {
                    return unsupported(format!("{o:?} on f64"));
                }
                if t == Type::F64 && o == UnaryOp::Rcp {
                    return self.fdiv(t, Src::Imm64(1.0f64.to_bits()), a);
                }
                self.v(&format!("{base}_{}", cmp_suffix(t)), &[a])
            }
            UnaryOp::Rsqrt => match t {
                Type::F16 => self.v("v_rsq_f16", &[a]),
                Type::F32 => self.v("v_rsq_f32", &[a]),
                // v_rsq_f64 is not correctly rounded; sqrt and an IEEE divide are.
                _ => {
                    let r = self.v("v_sqrt_f64", &[a]);
                    return self.fdiv(t, Src::Imm64(1.0f64.to_bits()), Src::R(r));
                }
            },
            UnaryOp::Sin | UnaryOp::Cos => {
                let name = if o == UnaryOp::Sin { "sin" } else { "cos" };
                match t {
                    Type::F32 => {
                        let x = self.v("v_mul_f32", &[Src::Imm(0x3e22_f983), a]);
                        self.v(&format!("v_{name}_f32"), &[Src::R(x)])
                    }
                    Type::F16 => {
                        let f = self.v("v_cvt_f32_f16", &[a]);
                        let x = self.v("v_mul_f32", &[Src::Imm(0x3e22_f983), Src::R(f)]);
                        let y = self.v(&format!("v_{name}_f32"), &[Src::R(x)]);
                        self.v("v_cvt_f16_f32", &[Src::R(y)])
                    }
                    _ => return unsupported(format!("{name} on {t}")),
                }
            }
            _ => return unsupported(format!("{o:?} on {t}")),
        })
    }

    /// and/or/xor on 32 bits, SALU when uniform.
    fn bitop(&mut self, name: &str, a: Src, b: Src, u: bool) -> VReg {
        if u && self.is_sgpr_src(a) && self.is_sgpr_src(b) {
            self.sop2(&format!("s_{name}_b32"), &[a, b])
        } else {
            self.v(&format!("v_{name}_b32"), &[a, b])
        }
    }

    pub(crate) fn binary(
        &mut self,
        o: BinaryOp,
        t: Type,
        a: Src,
        b: Src,
        u: bool,
    ) -> Result<VReg, IselError> {
        let signed = t.is_signed();
        if t.is_float() {
            return self.fbinary(o, t, a, b);
        }
        if is64(t) {
            return self.binary64(o, t, a, b, u);
        }
        // 32-bit integers and bools.
        let scalar_ok = u && self.is_sgpr_src(a) && self.is_sgpr_src(b);
        if scalar_ok {
            let name = match o {
                BinaryOp::Add => Some("s_add_u32"),
                BinaryOp::Sub => Some("s_sub_u32"),
                BinaryOp::Mul => Some("s_mul_i32"),
                BinaryOp::And => Some("s_and_b32"),
                BinaryOp::Or => Some("s_or_b32"),
                BinaryOp::Xor => Some("s_xor_b32"),
                BinaryOp::Shl => Some("s_lshl_b32"),
                BinaryOp::Shr if signed => Some("s_ashr_i32"),
                BinaryOp::Shr => Some("s_lshr_b32"),
                BinaryOp::Min if signed => Some("s_min_i32"),
                BinaryOp::Min => Some("s_min_u32"),
                BinaryOp::Max if signed => Some("s_max_i32"),
                BinaryOp::Max => Some("s_max_u32"),
                BinaryOp::Div | BinaryOp::Rem => None,
            };
            if let Some(n) = name {
                return Ok(self.sop2(n, &[a, b]));
            }
        }
        Ok(match o {
            BinaryOp::Add => self.v("v_add_u32", &[a, b]),
            BinaryOp::Sub => self.v("v_sub_u32", &[a, b]),
            BinaryOp::Mul => self.v("v_mul_lo_u32", &[a, b]),
            BinaryOp::And => self.v("v_and_b32", &[a, b]),
            BinaryOp::Or => self.v("v_or_b32", &[a, b]),
            BinaryOp::Xor => self.v("v_xor_b32", &[a, b]),
            BinaryOp::Shl => self.v("v_lshlrev_b32", &[b, a]),
            BinaryOp::Shr if signed => self.v("v_ashrrev_i32", &[b, a]),
            BinaryOp::Shr => self.v("v_lshrrev_b32", &[b, a]),
            BinaryOp::Min if signed => self.v("v_min_i32", &[a, b]),
            BinaryOp::Min => self.v("v_min_u32", &[a, b]),
            BinaryOp::Max if signed => self.v("v_max_i32", &[a, b]),
            BinaryOp::Max => self.v("v_max_u32", &[a, b]),
            BinaryOp::Div | BinaryOp::Rem => {
                return unsupported(format!("{o:?} outside `lower_divrem`"));
            }
        })
    }

    fn binary64(
        &mut self,
        o: BinaryOp,
        t: Type,
        a: Src,
        b: Src,
        u: bool,
    ) -> Result<VReg, IselError> {
        let signed = t.is_signed();
        let scalar_ok = u && self.is_sgpr_src(a) && self.is_sgpr_src(b);
        if scalar_ok {
            match o {
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                    let n = match o {
                        BinaryOp::And => "s_and_b64",
                        BinaryOp::Or => "s_or_b64",
                        _ => "s_xor_b64",
                    };
                    return Ok(self.sop2(n, &[a, b]));
                }
                BinaryOp::Shl | BinaryOp::Shr => {
                    let (bl, _) = self.halves(b);
                    let n = match (o, signed) {
                        (BinaryOp::Shl, _) => "s_lshl_b64",
                        (_, true) => "s_ashr_i64",
                        _ => "s_lshr_b64",
                    };
                    return Ok(self.sop2(n, &[a, bl]));
                }
                BinaryOp::Add | BinaryOp::Sub => {
                    let (al, ah) = self.halves(a);
                    let (bl, bh) = self.halves(b);
                    let (n0, n1) = if o == BinaryOp::Add {
                        ("s_add_u32", "s_addc_u32")
                    } else {
                        ("s_sub_u32", "s_subb_u32")
                    };
                    let lo = self.sop2(n0, &[al, bl]);
                    let hi = self.sop2(n1, &[ah, bh]);
                    return Ok(self.build(RegClass::Sgpr, &[lo, hi]));
                }
                _ => {}
            }
        }
        Ok(match o {
            BinaryOp::Add | BinaryOp::Sub => {
                let (al, ah) = self.halves(a);
                let (bl, bh) = self.halves(b);
                let (n0, n1) = if o == BinaryOp::Add {
                    ("v_add_co_u32", "v_addc_co_u32")
                } else {
                    ("v_sub_co_u32", "v_subb_co_u32")
                };
                let lo = self.new_vreg(RegClass::Vgpr, 1);
                let c = self.new_vreg(RegClass::Sgpr, 2);
                self.vop(n0, &[lo, c], &[al, bl]);
                let hi = self.new_vreg(RegClass::Vgpr, 1);
                let c2 = self.new_vreg(RegClass::Sgpr, 2);
                self.vop(n1, &[hi, c2], &[ah, bh, Src::R(c)]);
                self.build(RegClass::Vgpr, &[lo, hi])
            }
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                let n = match o {
                    BinaryOp::And => "v_and_b32",
                    BinaryOp::Or => "v_or_b32",
                    _ => "v_xor_b32",
                };
                let (al, ah) = self.halves(a);
                let (bl, bh) = self.halves(b);
                let lo = self.v(n, &[al, bl]);
                let hi = self.v(n, &[ah, bh]);
                self.build(RegClass::Vgpr, &[lo, hi])
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                let (bl, _) = self.halves(b);
                let n = match (o, signed) {
                    (BinaryOp::Shl, _) => "v_lshlrev_b64",
                    (_, true) => "v_ashrrev_i64",
                    _ => "v_lshrrev_b64",
                };
                let a = Src::R(self.reg(a, RegClass::Vgpr));
                self.v(n, &[bl, a])
            }
            BinaryOp::Mul => {
                let (al, ah) = self.halves(a);
                let (bl, bh) = self.halves(b);
                let p = self.new_vreg(RegClass::Vgpr, 2);
                let c = self.new_vreg(RegClass::Sgpr, 2);
                self.vop("v_mad_u64_u32", &[p, c], &[al, bl, Src::Imm64(0)]);
                let plo = self.extract(p, 0, 1);
                let phi = self.extract(p, 1, 1);
                let x = self.v("v_mul_lo_u32", &[al, bh]);
                let y = self.v("v_mul_lo_u32", &[ah, bl]);
                let hi = self.v("v_add3_u32", &[Src::R(phi), Src::R(x), Src::R(y)]);
                self.build(RegClass::Vgpr, &[plo, hi])
            }
            BinaryOp::Min | BinaryOp::Max => {
                let lt = if signed {
                    "v_cmp_lt_i64"
                } else {
                    "v_cmp_lt_u64"
                };
                let m = self.vcmp(lt, a, b);
                let (al, ah) = self.halves(a);
                let (bl, bh) = self.halves(b);
                // min: a<b ? a : b; max: a<b ? b : a.
                let (f, tt) = if o == BinaryOp::Min {
                    ((bl, bh), (al, ah))
                } else {
                    ((al, ah), (bl, bh))
                };
                let lo = self.new_vreg(RegClass::Vgpr, 1);
                self.vop("v_cndmask_b32", &[lo], &[f.0, tt.0, Src::R(m)]);
                let hi = self.new_vreg(RegClass::Vgpr, 1);
                self.vop("v_cndmask_b32", &[hi], &[f.1, tt.1, Src::R(m)]);
                self.build(RegClass::Vgpr, &[lo, hi])
            }
            BinaryOp::Div | BinaryOp::Rem => {
                return unsupported(format!("{o:?} on {t}"));
            }
        })
    }

    fn fbinary(&mut self, o: BinaryOp, t: Type, a: Src, b: Src) -> Result<VReg, IselError> {
        let suf = match t {
            Type::F16 => "f16",
            Type::F32 => "f32",
            _ => "f64",
        };
        Ok(match o {
            BinaryOp::Add => self.v(&format!("v_add_{suf}"), &[a, b]),
            BinaryOp::Sub if t == Type::F64 => {
                let r = self.v("v_add_f64", &[a, b]);
                self.set_last_neg(0b10);
                r
            }
            BinaryOp::Sub => self.v(&format!("v_sub_{suf}"), &[a, b]),
            BinaryOp::Mul => self.v(&format!("v_mul_{suf}"), &[a, b]),
            BinaryOp::Min => self.v(&format!("v_min_{suf}"), &[a, b]),
            BinaryOp::Max => self.v(&format!("v_max_{suf}"), &[a, b]),
            BinaryOp::Div => return self.fdiv(t, a, b),
            _ => return unsupported(format!("{o:?} on {t}")),
        })
    }

    /// Float division: reciprocal, Newton refinement, one residual correction, and
    /// `v_div_fixup` for zero, infinite and NaN operands.
    fn fdiv(&mut self, t: Type, a: Src, b: Src) -> Result<VReg, IselError> {
        match t {
            Type::F32 | Type::F16 => {
                let (fa, fb) = if t == Type::F16 {
                    let x = self.v("v_cvt_f32_f16", &[a]);
                    let y = self.v("v_cvt_f32_f16", &[b]);
                    (Src::R(x), Src::R(y))
                } else {
                    (a, b)
                };
                let fa = Src::R(self.reg(fa, RegClass::Vgpr));
                let fb = Src::R(self.reg(fb, RegClass::Vgpr));
                let r = self.v("v_rcp_f32", &[fb]);
                // e = 1 - b*r; r' = r + r*e
                let e = self.v("v_fma_f32", &[fb, Src::R(r), Src::Imm(1.0f32.to_bits())]);
                self.set_last_neg(0b001);
                let r2 = self.v("v_fma_f32", &[Src::R(r), Src::R(e), Src::R(r)]);
                let q = self.v("v_mul_f32", &[fa, Src::R(r2)]);
                let e2 = self.v("v_fma_f32", &[fb, Src::R(q), fa]);
                self.set_last_neg(0b001);
                let q2 = self.v("v_fma_f32", &[Src::R(e2), Src::R(r2), Src::R(q)]);
                // Zero and infinite operands make the refinement NaN (rcp(inf) = 0, then
                // inf * 0); v_div_fixup gives IEEE's ±inf, ±0 or NaN for them and q2 otherwise.
                let q2 = self.v("v_div_fixup_f32", &[Src::R(q2), fb, fa]);
                Ok(if t == Type::F16 {
                    self.v("v_cvt_f16_f32", &[Src::R(q2)])
                } else {
                    q2
                })
            }
            _ => {
                let fa = Src::R(self.reg(a, RegClass::Vgpr));
                let fb = Src::R(self.reg(b, RegClass::Vgpr));
                let one = Src::Imm64(1.0f64.to_bits());
                let mut r = self.v("v_rcp_f64", &[fb]);
                for _ in 0..2 {
                    let e = self.v("v_fma_f64", &[fb, Src::R(r), one]);
                    self.set_last_neg(0b001);
                    r = self.v("v_fma_f64", &[Src::R(r), Src::R(e), Src::R(r)]);
                }
                let q = self.v("v_mul_f64", &[fa, Src::R(r)]);
                let e = self.v("v_fma_f64", &[fb, Src::R(q), fa]);
                self.set_last_neg(0b001);
                let q = self.v("v_fma_f64", &[Src::R(e), Src::R(r), Src::R(q)]);
                // As for f32: IEEE results for zero and infinite operands.
                Ok(self.v("v_div_fixup_f64", &[Src::R(q), fb, fa]))
            }
        }
    }

    /// `res = o(a, b, c)`.
    fn ternary(
        &mut self,
        o: TernaryOp,
        t: Type,
        [a, b, c]: [Src; 3],
        u: bool,
        res: Value,
    ) -> Result<VReg, IselError> {
        let scalar_ok = u && self.is_sgpr_src(a) && self.is_sgpr_src(b) && self.is_sgpr_src(c);
        Ok(match o {
            TernaryOp::Fma => {
                let suf = match t {
                    Type::F16 => "f16",
                    Type::F32 => "f32",
                    _ => "f64",
                };
                self.v(&format!("v_fma_{suf}"), &[a, b, c])
            }
            TernaryOp::LshlAdd if scalar_ok => {
                let x = self.sop2("s_lshl_b32", &[a, b]);
                self.sop2("s_add_u32", &[Src::R(x), c])
            }
            TernaryOp::LshlOr if scalar_ok => {
                let x = self.sop2("s_lshl_b32", &[a, b]);
                self.sop2("s_or_b32", &[Src::R(x), c])
            }
            TernaryOp::Add3 if scalar_ok => {
                let x = self.sop2("s_add_u32", &[a, b]);
                self.sop2("s_add_u32", &[Src::R(x), c])
            }
            TernaryOp::LshlAdd => self.v("v_lshl_add_u32", &[a, b, c]),
            TernaryOp::LshlOr => self.v("v_lshl_or_b32", &[a, b, c]),
            TernaryOp::Add3 => {
                // gfx9 VOP3 reads one SGPR: two SGPR terms are added on the SALU first (instead
                // of a `v_mov_b32` of one of them into a VGPR).
                let sgpr = |s: &Src, me: &Self| matches!(s, Src::R(_)) && me.is_sgpr_src(*s);
                match [a, b, c].iter().filter(|s| sgpr(s, self)).count() {
                    2 if a != b && b != c && a != c => {
                        let (mut ss, vs): (Vec<Src>, Vec<Src>) =
                            [a, b, c].into_iter().partition(|s| sgpr(s, self));
                        let x = self.sop2("s_add_u32", &[ss.remove(0), ss.remove(0)]);
                        self.uniform_sums.insert(res, x);
                        self.v("v_add_u32", &[Src::R(x), vs[0]])
                    }
                    _ => self.v("v_add3_u32", &[a, b, c]),
                }
            }
        })
    }

    /// A comparison; the result is a bool in the class `u` says. `res` caches the lane mask.
    fn cmp(
        &mut self,
        o: CmpOp,
        t: Type,
        a: Src,
        b: Src,
        u: bool,
        res: Option<Value>,
    ) -> Result<VReg, IselError> {
        if t == Type::Bool {
            let x = self.bitop("xor", a, b, u);
            return Ok(if o == CmpOp::Eq {
                self.bitop("xor", Src::R(x), Src::Imm(1), u)
            } else {
                x
            });
        }
        let scalar_ok = u && self.is_sgpr_src(a) && self.is_sgpr_src(b);
        if scalar_ok && (t == Type::I32 || t == Type::U32) {
            self.salu(&s_cmp_name(o, t), None, &[a, b]);
            return Ok(self.bool_from_scc());
        }
        if scalar_ok && is64(t) && t.is_int() && matches!(o, CmpOp::Eq | CmpOp::Ne) {
            let c = if o == CmpOp::Eq { "eq" } else { "lg" };
            self.salu(&format!("s_cmp_{c}_u64"), None, &[a, b]);
            return Ok(self.bool_from_scc());
        }
        let c = match (o, t.is_float()) {
            (CmpOp::Eq, _) => "eq",
            (CmpOp::Ne, true) => "neq",
            (CmpOp::Ne, false) => "ne",
            (CmpOp::Lt, _) => "lt",
            (CmpOp::Le, _) => "le",
            (CmpOp::Gt, _) => "gt",
            (CmpOp::Ge, _) => "ge",
        };
        let m = self.vcmp(&format!("v_cmp_{c}_{}", cmp_suffix(t)), a, b);
        if u {
            Ok(self.uniform_from_mask(m))
        } else {
            if let Some(r) = res {
                self.mask_cache.insert(r, m);
            }
            Ok(self.bool_from_mask(m))
        }
    }

    fn select(
        &mut self,
        t: Type,
        c: Value,
        a: Value,
        b: Value,
        u: bool,
    ) -> Result<VReg, IselError> {
        let sa = self.src(a);
        let sb = self.src(b);
        if u && self.is_sgpr_src(sa) && self.is_sgpr_src(sb) {
            let cur = self.cur_block;
            let (name, srcs) = self
                .scalar_cmp(cur, c)
                .expect("a uniform bool is in an SGPR");
            self.salu(&name, None, &srcs);
            let n = if is64(t) {
                "s_cselect_b64"
            } else {
                "s_cselect_b32"
            };
            return Ok(self.sop2(n, &[sa, sb]));
        }
        let m = self.lane_mask(c);
        if is64(t) {
            let (al, ah) = self.halves(sa);
            let (bl, bh) = self.halves(sb);
            let lo = self.new_vreg(RegClass::Vgpr, 1);
            self.vop("v_cndmask_b32", &[lo], &[bl, al, Src::R(m)]);
            let hi = self.new_vreg(RegClass::Vgpr, 1);
            self.vop("v_cndmask_b32", &[hi], &[bh, ah, Src::R(m)]);
            Ok(self.build(RegClass::Vgpr, &[lo, hi]))
        } else {
            let d = self.new_vreg(RegClass::Vgpr, 1);
            self.vop("v_cndmask_b32", &[d], &[sb, sa, Src::R(m)]);
            Ok(d)
        }
    }

    fn convert(&mut self, from: Type, to: Type, arg: Value, u: bool) -> Result<VReg, IselError> {
        let a = self.src(arg);
        if from == to {
            return Ok(self.reg(a, if u { RegClass::Sgpr } else { RegClass::Vgpr }));
        }
        let class = if u { RegClass::Sgpr } else { RegClass::Vgpr };
        if to == Type::Bool {
            let z = if is64(from) {
                Src::Imm64(0)
            } else {
                Src::Imm(0)
            };
            return self.cmp(CmpOp::Ne, from, a, z, u, None);
        }
        let bad = || unsupported(format!("convert {from} to {to}"));
        // Integer (or bool) sources.
        if from.is_int() || from == Type::Bool {
            if to.is_int() {
                return Ok(match (is64(from), is64(to)) {
                    (false, false) => self.reg(a, class),
                    (true, true) => self.reg(a, class),
                    (true, false) => {
                        let (lo, _) = self.halves(a);
                        self.reg(lo, class)
                    }
                    (false, true) => {
                        let lo = self.reg(a, class);
                        let hi = if from == Type::I32 {
                            if u {
                                self.sop2("s_ashr_i32", &[Src::R(lo), Src::Imm(31)])
                            } else {
                                self.v("v_ashrrev_i32", &[Src::Imm(31), Src::R(lo)])
                            }
                        } else {
                            self.imm_reg(0, class)
                        };
                        self.build(class, &[lo, hi])
                    }
                });
            }
            if is64(from) {
                return bad();
            }
            let s = if from == Type::I32 { "i32" } else { "u32" };
            return Ok(match to {
                Type::F32 => self.v(&format!("v_cvt_f32_{s}"), &[a]),
                Type::F64 => self.v(&format!("v_cvt_f64_{s}"), &[a]),
                Type::F16 => {
                    let f = self.v(&format!("v_cvt_f32_{s}"), &[a]);
                    self.v("v_cvt_f16_f32", &[Src::R(f)])
                }
                _ => return bad(),
            });
        }
        // Float sources.
        let (a, from) = if from == Type::F16 && to != Type::F32 {
            let f = self.v("v_cvt_f32_f16", &[a]);
            (Src::R(f), Type::F32)
        } else {
            (a, from)
        };
        let fs = if from == Type::F64 { "f64" } else { "f32" };
        Ok(match to {
            Type::I32 => self.v(&format!("v_cvt_i32_{fs}"), &[a]),
            Type::U32 => self.v(&format!("v_cvt_u32_{fs}"), &[a]),
            Type::F32 if from == Type::F16 => self.v("v_cvt_f32_f16", &[a]),
            Type::F32 => self.v("v_cvt_f32_f64", &[a]),
            Type::F64 => self.v("v_cvt_f64_f32", &[a]),
            Type::F16 if from == Type::F32 => self.v("v_cvt_f16_f32", &[a]),
            Type::F16 => {
                let f = self.v("v_cvt_f32_f64", &[a]);
                self.v("v_cvt_f16_f32", &[Src::R(f)])
            }
            _ => return bad(),
        })
    }

    /// [`Self::address`] for a buffer access, whose range check does not wrap `VADDR + OFFSET`
    /// (`index_sign`): an offset beyond the index's headroom (any offset of an index that may be
    /// negative) goes in VADDR, wrapping as the IR's index does.
    pub(crate) fn global_address(
        &mut self,
        index: Value,
        size: u32,
        imm: u64,
        max_imm: u64,
    ) -> (VReg, u32) {
        let max_imm = if imm / size as u64 >= self.offset_headroom[index] as u64 {
            0
        } else {
            max_imm
        };
        self.address(index, size, imm, max_imm)
    }

    /// Byte offset VGPR of element `index` (times `size`) and the immediate offset that fits
    /// `max_imm` (the rest is added to the VGPR).
    pub(crate) fn address(
        &mut self,
        index: Value,
        size: u32,
        imm: u64,
        max_imm: u64,
    ) -> (VReg, u32) {
        let mut a = self.byte_offset(index, size.trailing_zeros());
        let mut imm = imm;
        if imm > max_imm {
            a = self.v("v_add_u32", &[Src::Imm(imm as u32), Src::R(a)]);
            imm = 0;
        }
        (a, imm as u32)
    }

    /// The VGPR `index << shift`. One per (index, shift) in a block: accesses to several buffers
    /// (or several accesses to one) at the same index share it.
    fn byte_offset(&mut self, index: Value, shift: u32) -> VReg {
        if let Some(&a) = self.entry_offsets.get(&(index, shift)) {
            return a;
        }
        if let Some(&a) = self.addr_cache.get(&(index, shift)) {
            return a;
        }
        let idx = self.src(index);
        let a = if shift == 0 {
            self.reg(idx, RegClass::Vgpr)
        } else if let Some(x) = self.divergent_local_reinterpret(index) {
            // An `i32` index read as `u32` (or back) has the same bits.
            self.byte_offset(x, shift)
        } else if let Some([x, y]) = self.divergent_local_add(index) {
            // `(x + y) << shift` in one instruction; the add itself is dead when the sum is
            // only an address.
            let (x, y) = (self.src(x), self.src(y));
            self.v("v_add_lshl_u32", &[x, y, Src::Imm(shift)])
        } else if let Some([x, u, w]) = self.divergent_local_add3(index) {
            // `(x + u + w) << shift` with `u`, `w` uniform: their sum on the SALU and one
            // `v_add_lshl_u32` (the `add3`'s own pair is dead when it is only an address).
            let s = match self.uniform_sums.get(&index) {
                Some(&s) => s,
                None => {
                    let (u, w) = (self.src(u), self.src(w));
                    self.sop2("s_add_u32", &[u, w])
                }
            };
            let x = self.src(x);
            self.v("v_add_lshl_u32", &[x, Src::R(s), Src::Imm(shift)])
        } else if let Some((xo, c)) = self.divergent_local_xor_hoisted(index, shift) {
            // `(x ^ c) << shift` as `(x << shift) ^ (c << shift)` (exact: the shift distributes
            // over XOR) when `x`'s byte offset is made once in the entry block: a loop's keyed
            // LDS reads (the GEMM's k-group planes) XOR the hoisted offset, no shift per read.
            self.remade_after_barrier.push((index, shift));
            self.v("v_xor_b32", &[Src::Imm(c), Src::R(xo)])
        } else if let Some((x, c)) = self.divergent_local_shl(index, shift) {
            // `(x << c) << shift` as one shift; the first is dead when it is only an address.
            let x = self.src(x);
            self.v("v_lshlrev_b32", &[Src::Imm(c + shift), x])
        } else if let Some((c, x, k)) = self.divergent_local_masked(index, shift) {
            // `select(c, x, k) << shift` as the select of `x`'s offset and `k << shift` (the
            // masked-off index `u32::MAX` is -4 for dwords): the select of indices is dead
            // when it is only an address, and `x`'s offset may fold its own add.
            let xo = self.byte_offset(x, shift);
            let m = self.lane_mask(c);
            let d = self.new_vreg(RegClass::Vgpr, 1);
            self.vop("v_cndmask_b32", &[d], &[Src::Imm(k), Src::R(xo), Src::R(m)]);
            d
        } else {
            self.v("v_lshlrev_b32", &[Src::Imm(shift), idx])
        };
        self.addr_cache.insert((index, shift), a);
        a
    }

    /// `(c, x, k << shift)` when `index` is a divergent local `u32` `select(c, x, k)` with a
    /// constant `k` whose shifted value is an inline constant (`v_cndmask_b32`'s VOP3 form
    /// takes no literal on gfx9).
    fn divergent_local_masked(&self, index: Value, shift: u32) -> Option<(Value, Value, u32)> {
        let InstData::Select { args: [c, x, k] } = self.divergent_local_def(index)? else {
            return None;
        };
        let (Type::U32, bits) = self.const_of(k)? else {
            return None;
        };
        let k = (bits as u32).wrapping_shl(shift);
        let fits = word(self.func.value_type(x)) && super::valu::inline32(k).is_some();
        fits.then_some((c, x, k))
    }

    /// `x` when `index` is a divergent local conversion between `i32` and `u32` of `x`.
    fn divergent_local_reinterpret(&self, index: Value) -> Option<Value> {
        let InstData::Convert { to, arg } = self.divergent_local_def(index)? else {
            return None;
        };
        (word(to) && word(self.func.value_type(arg))).then_some(arg)
    }

    /// `[x, u, w]` when `index` is a divergent local 32-bit `add3` of one divergent term `x`
    /// and two uniform ones.
    fn divergent_local_add3(&self, index: Value) -> Option<[Value; 3]> {
        let InstData::Ternary {
            op: TernaryOp::Add3,
            args,
        } = self.divergent_local_def(index)?
        else {
            return None;
        };
        if !word(self.func.value_type(index)) {
            return None;
        }
        let (div, uni): (Vec<Value>, Vec<Value>) =
            args.iter().partition(|&&a| !self.uni.is_uniform(a));
        (div.len() == 1).then(|| [div[0], uni[0], uni[1]])
    }

    /// The instruction defining `v` when `v` is divergent and defined and used only in the
    /// current block (so reading its operands here lengthens no live range across blocks).
    fn divergent_local_def(&self, v: Value) -> Option<InstData> {
        let func = self.func;
        if !self.local.contains_key(&v) || self.uni.is_uniform(v) {
            return None;
        }
        let ValueDef::Result(i, _) = func.values[v].def else {
            return None;
        };
        Some(func.insts[i].clone())
    }

    /// The operands of `index` when it is a divergent local binary `op`.
    fn divergent_local_binary(&self, index: Value, op: BinaryOp) -> Option<[Value; 2]> {
        match self.divergent_local_def(index)? {
            InstData::Binary { op: o, args } if o == op => Some(args),
            _ => None,
        }
    }

    /// `[x, y]` when `index` is a divergent local 32-bit add of non-constant values, at most
    /// one of them uniform (the constant bus takes one SGPR on gfx9).
    fn divergent_local_add(&self, index: Value) -> Option<[Value; 2]> {
        let func = self.func;
        let args = self.divergent_local_binary(index, BinaryOp::Add)?;
        let plain = args
            .iter()
            .all(|&a| word(func.value_type(a)) && self.const_of(a).is_none());
        let uniform = args.iter().filter(|&&a| self.uni.is_uniform(a)).count();
        (plain && uniform <= 1).then_some(args)
    }

    /// `(x << shift, c << shift)` when `index` is a divergent local `u32` `x ^ c` by a constant
    /// and `x << shift` was made in the entry block ([`entry_lds_indices`]).
    fn divergent_local_xor_hoisted(&self, index: Value, shift: u32) -> Option<(VReg, u32)> {
        let [x, y] = self.divergent_local_binary(index, BinaryOp::Xor)?;
        let (x, c) = match (self.const_of(x), self.const_of(y)) {
            (None, Some((_, c))) => (x, c),
            (Some((_, c)), None) => (y, c),
            _ => return None,
        };
        let xo = *self.entry_offsets.get(&(x, shift))?;
        (word(self.func.value_type(x)) && word(self.func.value_type(index)))
            .then_some((xo, (c as u32).wrapping_shl(shift)))
    }

    /// `(x, c)` when `index` is a divergent local `u32` `x << c` by a constant with
    /// `c + shift < 32`.
    fn divergent_local_shl(&self, index: Value, shift: u32) -> Option<(Value, u32)> {
        let [x, c] = self.divergent_local_binary(index, BinaryOp::Shl)?;
        let (_, c) = self.const_of(c)?;
        let fits = self.func.value_type(x) == Type::U32 && c + (shift as u64) < 32;
        fits.then_some((x, c as u32))
    }

    pub(crate) fn desc(&self, buf: Value) -> Result<VReg, IselError> {
        self.descs
            .get(&buf)
            .copied()
            .ok_or_else(|| IselError::Invalid(format!("{buf} is not a buffer parameter")))
    }

    pub(crate) fn mubuf(
        &mut self,
        name: &str,
        data: MOperand,
        addr: VReg,
        desc: VReg,
        offset: u32,
    ) {
        let mut i = MInst::isa(
            op(name),
            &[
                data,
                MOperand::Use(addr),
                MOperand::Use(desc),
                MOperand::Phys(Operand::InlineInt(0)),
            ],
        );
        i.mods.offen = true;
        i.mods.offset = offset as i32;
        i.implicit_uses = implicit::EXEC;
        self.push(i);
    }

    pub(crate) fn ds(&mut self, name: &str, ops: &[MOperand], offset: u32, arr: kjit_ir::LdsArray) {
        let mut i = MInst::isa(op(name), ops);
        i.mods.offset = offset as i32;
        i.mods.lds_region = super::lds_dma::region(arr);
        i.implicit_uses = implicit::EXEC;
        self.push(i);
    }

    pub(crate) fn elem_of(&self, mem: Mem) -> Result<Type, IselError> {
        Ok(match mem {
            Mem::Global(b) => match self.func.value_type(b) {
                Type::Buffer { elem, .. } => elem.ty(),
                t => return Err(IselError::Invalid(format!("{b} is {t}, not a buffer"))),
            },
            Mem::Lds(a) => self.func.lds[a].elem.ty(),
        })
    }

    /// A load through the scalar cache (`s_buffer_load_dword{,x2}` per element, with the
    /// descriptor's range check giving 0 outside the buffer as `buffer_load` does) when the
    /// address is uniform, the buffer is read-only and no global write of the kernel can come
    /// before the load ([`noclobber_loads`]): the scalar cache is not coherent with the vector
    /// memory path, so memory the kernel may have written is never read through it. Returns
    /// false (nothing emitted) when the load does not qualify.
    fn scalar_load(
        &mut self,
        inst: kjit_ir::Inst,
        mem: Mem,
        index: Value,
        offset: u32,
        width: u8,
        res: &[Value],
    ) -> Result<bool, IselError> {
        let Mem::Global(buf) = mem else {
            return Ok(false);
        };
        let writable = matches!(
            self.func.value_type(buf),
            Type::Buffer { writable: true, .. }
        );
        let t = self.elem_of(mem)?;
        let size = t.bytes();
        if writable
            || !(size == 4 || size == 8)
            || !self.uni.is_uniform(index)
            || res.iter().any(|&r| !self.uni.is_uniform(r))
            || !self.noclobber.contains(&inst)
        {
            return Ok(false);
        }
        let desc = self.desc(buf)?;
        let name = if size == 4 {
            "s_buffer_load_dword"
        } else {
            "s_buffer_load_dwordx2"
        };
        let base = offset as u64 * size as u64;
        // Byte offset of element 0: an immediate for a constant index, else an SGPR.
        let (sreg, imm) = match self.const_of(index) {
            Some((_, k)) => (None, (k as u32 as u64) * size as u64 + base),
            None => {
                let idx = self.src(index);
                let shift = size.trailing_zeros();
                let r = self.sop2("s_lshl_b32", &[idx, Src::Imm(shift)]);
                (Some(r), base)
            }
        };
        // The SMEM immediate is 20 bits unsigned on gfx9.
        let max_imm = (1u64 << 20) - size as u64 * width as u64;
        let (sreg, imm) = match (sreg, imm) {
            (Some(r), imm) if imm != 0 => {
                let r = self.sop2("s_add_u32", &[Src::R(r), Src::Imm(imm as u32)]);
                (Some(r), 0u64)
            }
            (None, imm) if imm > max_imm => (Some(self.s_mov32(imm as u32)), 0u64),
            x => x,
        };
        for (k, &r) in res.iter().enumerate() {
            let d = self.new_vreg(RegClass::Sgpr, (size / 4) as u8);
            let off = match sreg {
                Some(s) if k == 0 => MOperand::Use(s),
                Some(s) => {
                    let s = self.sop2("s_add_u32", &[Src::R(s), Src::Imm(size * k as u32)]);
                    MOperand::Use(s)
                }
                None => MOperand::Phys(Operand::Imm((imm + size as u64 * k as u64) as i64)),
            };
            self.push(MInst::isa(
                op(name),
                &[MOperand::Def(d), MOperand::Use(desc), off],
            ));
            self.result(r, d);
        }
        Ok(true)
    }

    fn load(
        &mut self,
        mem: Mem,
        index: Value,
        offset: u32,
        width: u8,
        res: &[Value],
    ) -> Result<(), IselError> {
        let t = self.elem_of(mem)?;
        let size = t.bytes();
        let span = size as u64 * width as u64;
        let mut parts: Vec<VReg> = Vec::new();
        match mem {
            Mem::Global(buf) => {
                let desc = self.desc(buf)?;
                let (addr, imm) =
                    self.global_address(index, size, offset as u64 * size as u64, 4095 - span + 1);
                if t == Type::F16 {
                    for k in 0..width as u32 {
                        let d = self.new_vreg(RegClass::Vgpr, 1);
                        self.mubuf(
                            "buffer_load_ushort",
                            MOperand::Def(d),
                            addr,
                            desc,
                            imm + 2 * k,
                        );
                        parts.push(d);
                    }
                } else {
                    let total = size * width as u32 / 4;
                    let mut done = 0;
                    while done < total {
                        let n = (total - done).min(4);
                        let name = match n {
                            1 => "buffer_load_dword",
                            2 => "buffer_load_dwordx2",
                            3 => "buffer_load_dwordx3",
                            _ => "buffer_load_dwordx4",
                        };
                        let d = self.new_vreg(RegClass::Vgpr, n as u8);
                        self.mubuf(name, MOperand::Def(d), addr, desc, imm + 4 * done);
                        let per = size / 4;
                        for k in 0..n / per {
                            if n == per {
                                parts.push(d);
                            } else {
                                let p = self.extract(d, (k * per) as u8, per as u8);
                                parts.push(p);
                            }
                        }
                        done += n;
                    }
                }
            }
            Mem::Lds(arr) => {
                let base = self.lds_base[arr] as u64;
                let (addr, imm) = self.address(
                    index,
                    size,
                    base + offset as u64 * size as u64,
                    65535 - span + 1,
                );
                let name = match size {
                    2 => "ds_read_u16",
                    4 => "ds_read_b32",
                    _ => "ds_read_b64",
                };
                for k in 0..width as u32 {
                    let d = self.new_vreg(RegClass::Vgpr, (size.max(4) / 4) as u8);
                    self.ds(
                        name,
                        &[MOperand::Def(d), MOperand::Use(addr)],
                        imm + size * k,
                        arr,
                    );
                    parts.push(d);
                }
            }
        }
        for (r, p) in res.iter().zip(parts) {
            self.result(*r, p);
        }
        Ok(())
    }

    fn store(
        &mut self,
        mem: Mem,
        index: Value,
        offset: u32,
        values: &[Value],
    ) -> Result<(), IselError> {
        let t = self.elem_of(mem)?;
        let size = t.bytes();
        let width = values.len() as u32;
        let span = size as u64 * width as u64;
        let mut vals = Vec::new();
        for &v in values {
            let s = self.src(v);
            vals.push(self.reg(s, RegClass::Vgpr));
        }
        match mem {
            Mem::Global(buf) => {
                let desc = self.desc(buf)?;
                let (addr, imm) =
                    self.global_address(index, size, offset as u64 * size as u64, 4095 - span + 1);
                if t == Type::F16 {
                    for (k, &v) in vals.iter().enumerate() {
                        self.mubuf(
                            "buffer_store_short",
                            MOperand::Use(v),
                            addr,
                            desc,
                            imm + 2 * k as u32,
                        );
                    }
                } else {
                    let per = (size / 4) as usize;
                    let chunk = (4 / per).max(1);
                    for (c, group) in vals.chunks(chunk).enumerate() {
                        let n = group.len() * per;
                        let data = if group.len() == 1 {
                            group[0]
                        } else {
                            self.build(RegClass::Vgpr, group)
                        };
                        let name = match n {
                            1 => "buffer_store_dword",
                            2 => "buffer_store_dwordx2",
                            3 => "buffer_store_dwordx3",
                            _ => "buffer_store_dwordx4",
                        };
                        self.mubuf(
                            name,
                            MOperand::Use(data),
                            addr,
                            desc,
                            imm + (c * chunk * per * 4) as u32,
                        );
                    }
                }
            }
            Mem::Lds(arr) => {
                let base = self.lds_base[arr] as u64;
                let (addr, imm) = self.address(
                    index,
                    size,
                    base + offset as u64 * size as u64,
                    65535 - span + 1,
                );
                let name = match size {
                    2 => "ds_write_b16",
                    4 => "ds_write_b32",
                    _ => "ds_write_b64",
                };
                for (k, &v) in vals.iter().enumerate() {
                    self.ds(
                        name,
                        &[MOperand::Use(addr), MOperand::Use(v)],
                        imm + size * k as u32,
                        arr,
                    );
                }
            }
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        o: AtomicOp,
        mem: Mem,
        index: Value,
        offset: u32,
        args: &[Value],
        res: Value,
    ) -> Result<(), IselError> {
        let t = self.elem_of(mem)?;
        let size = t.bytes();
        if size != 4 {
            return unsupported(format!("atomics on {t}"));
        }
        let signed = t.is_signed();
        let mut vals = Vec::new();
        for &v in args {
            let s = self.src(v);
            vals.push(self.reg(s, RegClass::Vgpr));
        }
        let d;
        match mem {
            Mem::Global(buf) => {
                let desc = self.desc(buf)?;
                let (addr, imm) = self.global_address(index, size, offset as u64 * 4, 4095 - 4 + 1);
                let name = match (o, t) {
                    (AtomicOp::Add, Type::F32) => {
                        if self.target == crate::Target::Gfx900 {
                            return unsupported("f32 global atomic add on gfx900".into());
                        }
                        "buffer_atomic_add_f32"
                    }
                    (AtomicOp::Add, _) => "buffer_atomic_add",
                    (AtomicOp::Min, _) if signed => "buffer_atomic_smin",
                    (AtomicOp::Min, _) => "buffer_atomic_umin",
                    (AtomicOp::Max, _) if signed => "buffer_atomic_smax",
                    (AtomicOp::Max, _) => "buffer_atomic_umax",
                    (AtomicOp::Xchg, _) => "buffer_atomic_swap",
                    (AtomicOp::Cas, _) => "buffer_atomic_cmpswap",
                };
                let (data, dw) = if o == AtomicOp::Cas {
                    (self.build(RegClass::Vgpr, &[vals[1], vals[0]]), 2)
                } else {
                    (vals[0], 1)
                };
                let ret = self.new_vreg(RegClass::Vgpr, dw);
                let mut i = MInst::isa(
                    op(name),
                    &[
                        MOperand::Def(ret),
                        MOperand::Use(addr),
                        MOperand::Use(desc),
                        MOperand::Phys(Operand::InlineInt(0)),
                        MOperand::Use(data),
                    ],
                );
                i.tied = Some((0, 4));
                i.mods.offen = true;
                i.mods.offset = imm as i32;
                i.mods.glc = true;
                i.implicit_uses = implicit::EXEC;
                self.push(i);
                d = if dw == 2 {
                    self.extract(ret, 0, 1)
                } else {
                    ret
                };
            }
            Mem::Lds(arr) => {
                let base = self.lds_base[arr] as u64;
                let (addr, imm) =
                    self.address(index, size, base + offset as u64 * 4, 65535 - 4 + 1);
                let name = match (o, t) {
                    (AtomicOp::Add, Type::F32) => "ds_add_rtn_f32",
                    (AtomicOp::Add, _) => "ds_add_rtn_u32",
                    (AtomicOp::Min, _) if signed => "ds_min_rtn_i32",
                    (AtomicOp::Min, _) => "ds_min_rtn_u32",
                    (AtomicOp::Max, _) if signed => "ds_max_rtn_i32",
                    (AtomicOp::Max, _) => "ds_max_rtn_u32",
                    (AtomicOp::Xchg, _) => "ds_wrxchg_rtn_b32",
                    (AtomicOp::Cas, _) => "ds_cmpst_rtn_b32",
                };
                let r = self.new_vreg(RegClass::Vgpr, 1);
                let mut ops = vec![MOperand::Def(r), MOperand::Use(addr)];
                ops.extend(vals.iter().map(|&v| MOperand::Use(v)));
                self.ds(name, &ops, imm, arr);
                d = r;
            }
        }
        self.result(res, d);
        Ok(())
    }

    /// Reduction (`scan == false`, uniform result) or inclusive scan over the active lanes:
    /// inactive lanes hold the identity, then six butterfly (or shift) steps under a full EXEC.
    /// The reduction of `acc` (all 64 lanes valid, EXEC full) over the wave into an SGPR, by
    /// DPP: each step combines every lane with a partner lane in one VOP2 `_dpp` instruction —
    /// pairs and quads (`quad_perm`), rows of 8 and 16 (`row_half_mirror`, `row_mirror`), then
    /// the row totals carried into rows 1 and 3 (`row_bcast:15`) and into rows 2 and 3
    /// (`row_bcast:31`), so that lane 63 holds the whole wave's — instead of six
    /// `ds_bpermute` rounds through LDS with their address arithmetic and waits.
    fn dpp_reduce(&mut self, o: ReduceOp, t: Type, acc: VReg) -> VReg {
        let name = match (o, t) {
            (ReduceOp::Add, Type::F32) => "v_add_f32",
            (ReduceOp::Min, Type::F32) => "v_min_f32",
            (ReduceOp::Max, Type::F32) => "v_max_f32",
            (ReduceOp::Add, _) => "v_add_u32",
            (ReduceOp::Min, Type::I32) => "v_min_i32",
            (ReduceOp::Min, _) => "v_min_u32",
            (ReduceOp::Max, Type::I32) => "v_max_i32",
            (ReduceOp::Max, _) => "v_max_u32",
        };
        // (dpp_ctrl, row_mask): quad_perm:[1,0,3,2], quad_perm:[2,3,0,1], row_half_mirror,
        // row_mirror, row_bcast:15 into rows 1 and 3, row_bcast:31 into rows 2 and 3. Lanes a
        // row mask leaves unwritten are never read again on the way to lane 63.
        const STEPS: [(u16, u8); 6] = [
            (0xb1, 0xf),
            (0x4e, 0xf),
            (0x141, 0xf),
            (0x140, 0xf),
            (0x142, 0xa),
            (0x143, 0xc),
        ];
        let mut acc = acc;
        for (ctrl, row_mask) in STEPS {
            let d = self.new_vreg(RegClass::Vgpr, 1);
            let mut i = MInst::isa(
                op(name),
                &[MOperand::Def(d), MOperand::Use(acc), MOperand::Use(acc)],
            );
            i.encoding = crate::isa::Encoding::Dpp;
            i.mods.dpp = crate::isa::Dpp {
                ctrl,
                row_mask,
                bank_mask: 0xf,
                bound_ctrl: false,
            };
            i.implicit_uses = implicit::EXEC;
            self.push(i);
            acc = d;
        }
        let s = self.new_vreg(RegClass::Sgpr, 1);
        let mut i = MInst::isa(
            op("v_readlane_b32"),
            &[
                MOperand::Def(s),
                MOperand::Use(acc),
                MOperand::Phys(Operand::InlineInt(63)),
            ],
        );
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        s
    }

    fn wave_reduce(&mut self, o: ReduceOp, arg: Value, scan: bool) -> Result<VReg, IselError> {
        let t = self.func.value_type(arg);
        if is64(t) {
            return unsupported(format!("wave reductions on {t}"));
        }
        let ident = kjit_ir::semantics::reduce_identity(o, t) as u32;
        let bop = match o {
            ReduceOp::Add => BinaryOp::Add,
            ReduceOp::Min => BinaryOp::Min,
            ReduceOp::Max => BinaryOp::Max,
        };
        let exec = self.cur_exec.expect("body EXEC");
        let v = self.val(arg);
        let v = self.to_class(v, RegClass::Vgpr);
        // Under a full EXEC: the value in the body's lanes, the identity elsewhere (one
        // v_cndmask on the body's EXEC mask instead of two EXEC switches and a tied move).
        self.set_exec_all();
        let t0 = if super::valu::inline32(ident).is_some() {
            Src::Imm(ident)
        } else {
            Src::R(self.imm_reg(ident, RegClass::Vgpr))
        };
        let t1 = self.new_vreg(RegClass::Vgpr, 1);
        self.vop("v_cndmask_b32", &[t1], &[t0, Src::R(v), Src::R(exec)]);
        if !scan && matches!(t, Type::F32 | Type::I32 | Type::U32) {
            let r = self.dpp_reduce(o, t, t1);
            self.set_exec(exec);
            return Ok(r);
        }
        // The lane id in every lane (the prologue's is only valid in launched lanes).
        let lane = self.lane_id_reg();
        // Byte addresses of the source lanes from the lane's own once: (lane ^ k) * 4 =
        // (lane * 4) ^ (k * 4), and (lane - k) * 4 = lane * 4 - k * 4 (mod 2^32, of which
        // ds_bpermute reads bits 7:2, so the same lane as before).
        let lane4 = self.v("v_lshlrev_b32", &[Src::Imm(2), Src::R(lane)]);
        let mut acc = t1;
        for k in [1u32, 2, 4, 8, 16, 32] {
            let u = if scan {
                let addr = self.v("v_subrev_u32", &[Src::Imm(4 * k), Src::R(lane4)]);
                let got = self.bpermute(addr, acc);
                let ge = self.vcmp("v_cmp_le_u32", Src::Imm(k), Src::R(lane));
                let id = self.imm_reg(ident, RegClass::Vgpr);
                let d = self.new_vreg(RegClass::Vgpr, 1);
                self.vop(
                    "v_cndmask_b32",
                    &[d],
                    &[Src::R(id), Src::R(got), Src::R(ge)],
                );
                d
            } else {
                let addr = self.v("v_xor_b32", &[Src::Imm(4 * k), Src::R(lane4)]);
                self.bpermute(addr, acc)
            };
            acc = self.binary(bop, t, Src::R(acc), Src::R(u), false)?;
        }
        let r = if scan {
            acc
        } else {
            let s = self.new_vreg(RegClass::Sgpr, 1);
            let mut i = MInst::isa(
                op("v_readfirstlane_b32"),
                &[MOperand::Def(s), MOperand::Use(acc)],
            );
            i.implicit_uses = implicit::EXEC;
            self.push(i);
            s
        };
        self.set_exec(exec);
        let _ = SpecialReg::Exec;
        Ok(r)
    }
}

/// The global loads no global write of the kernel can come before (no store or atomic earlier
/// in its block, and none in a block from which its block is reachable): the loads that may go
/// through the scalar cache.
pub(crate) fn noclobber_loads(func: &kjit_ir::Function) -> rustc_hash::FxHashSet<kjit_ir::Inst> {
    use cranelift_entity::SecondaryMap;
    let writes = |b: kjit_ir::Block| {
        func.blocks[b]
            .insts
            .iter()
            .any(|&i| func.insts[i].effects().writes_global)
    };
    // Blocks reachable (by one edge or more) from a block that writes global memory.
    let mut after_write: SecondaryMap<kjit_ir::Block, bool> = SecondaryMap::new();
    let mut work: Vec<kjit_ir::Block> =
        func.layout.iter().copied().filter(|&b| writes(b)).collect();
    while let Some(b) = work.pop() {
        for s in func.successors(b) {
            if !after_write[s] {
                after_write[s] = true;
                work.push(s);
            }
        }
    }
    let mut out = rustc_hash::FxHashSet::default();
    for &b in &func.layout {
        if after_write[b] {
            continue;
        }
        for &i in &func.blocks[b].insts {
            let e = func.insts[i].effects();
            if e.writes_global {
                break;
            }
            if matches!(
                func.insts[i],
                InstData::Load {
                    mem: Mem::Global(_),
                    ..
                }
            ) {
                out.insert(i);
            }
        }
    }
    out
}

/// A 32-bit integer type: `i32` and `u32` values of the same bits are the same index.
fn word(t: Type) -> bool {
    matches!(t, Type::U32 | Type::I32)
}

/// `x` when `index` is `x ^ c` (or `c ^ x`) for a constant `c` and an entry-block `x`, both
/// 32-bit integers, outside the entry block.
fn keyed_entry_index(
    func: &kjit_ir::Function,
    index: Value,
    in_entry: &dyn Fn(Value) -> bool,
) -> Option<Value> {
    let ValueDef::Result(i, _) = func.values[index].def else {
        return None;
    };
    let InstData::Binary {
        op: BinaryOp::Xor,
        args: [x, y],
    } = func.insts[i]
    else {
        return None;
    };
    let is_const = |v: Value| matches!(func.values[v].def, ValueDef::Result(d, _) if matches!(func.insts[d], InstData::Const { .. }));
    let x = match (is_const(x), is_const(y)) {
        (false, true) => x,
        (true, false) => y,
        _ => return None,
    };
    let words = word(func.value_type(x)) && word(func.value_type(index));
    (words && in_entry(x) && !in_entry(index)).then_some(x)
}

/// Divergent values defined in the entry block that index an LDS array in another block, each
/// with the byte shifts of those accesses' elements.
pub(crate) fn entry_lds_indices(
    func: &kjit_ir::Function,
    uni: &kjit_ir::Uniformity,
) -> rustc_hash::FxHashMap<Value, Vec<u32>> {
    let mut out: rustc_hash::FxHashMap<Value, Vec<u32>> = Default::default();
    let Some(entry) = func.entry() else {
        return out;
    };
    let entry_insts: rustc_hash::FxHashSet<_> = func.blocks[entry].insts.iter().collect();
    let in_entry = |v: Value| match func.values[v].def {
        ValueDef::Result(i, _) => entry_insts.contains(&i),
        _ => false,
    };
    for &b in func.layout.iter().filter(|&&b| b != entry) {
        for &i in &func.blocks[b].insts {
            let (InstData::Load {
                mem: Mem::Lds(a),
                index,
                ..
            }
            | InstData::Store {
                mem: Mem::Lds(a),
                index,
                ..
            }
            | InstData::FragLoad {
                mem: Mem::Lds(a),
                index,
                ..
            }
            | InstData::FragStore {
                mem: Mem::Lds(a),
                index,
                ..
            }) = func.insts[i]
            else {
                continue;
            };
            let shift = func.lds[a].elem.ty().bytes().trailing_zeros();
            if uni.is_uniform(index) {
                continue;
            }
            // An index `x ^ c` made in the loop from an entry-block `x`: `x`'s byte offset,
            // XORed with `c << shift` where it is read (`byte_offset`).
            let index = match keyed_entry_index(func, index, &in_entry) {
                Some(x) if !uni.is_uniform(x) => x,
                _ if in_entry(index) => index,
                _ => continue,
            };
            let shifts = out.entry(index).or_default();
            if !shifts.contains(&shift) {
                shifts.push(shift);
            }
        }
    }
    out
}
