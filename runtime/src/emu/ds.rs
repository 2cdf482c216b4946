//! LDS instructions (DS format): loads and stores of every width including the `2addr` forms,
//! LDS atomics, and the cross-lane operations that use the LDS crossbar without touching LDS
//! memory (`ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`).
//!
//! Takes a [`DsInst`] and the wave; reads or writes the workgroup's LDS at issue (with race
//! detection across waves), and hands loaded data to the scoreboard, which lands it when an
//! `s_waitcnt lgkmcnt` says it must. Addresses are `vaddr + offset` per lane (16-bit offset), or
//! `vaddr + offset0 * size` and `vaddr + offset1 * size` for the `2addr` forms (size 4 or 8 bytes,
//! times 64 for `st64`).

// Lane loops index several 64-lane arrays by the same lane number.
#![allow(clippy::needless_range_loop)]

use super::atomic::{self, AtomicOp};
use super::ctx::Ctx;
use super::scoreboard::{InFlight, Landing, OpKind, Part, RegSet};
use super::wave::{EmuError, Wave, LANES};

/// The operation of a DS instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DsOp {
    /// Load `dwords` dwords (or one sub-dword item of `bytes`).
    Read {
        /// Bytes per item (1, 2, 4).
        bytes: u8,
        /// Dwords.
        dwords: u8,
        /// Sign-extend.
        signed: bool,
        /// Which part of the register.
        part: Part,
    },
    /// Two loads of `dwords` (1 or 2) at `offset0` and `offset1` (scaled by 64 when `st64`).
    Read2 {
        /// Dwords per item.
        dwords: u8,
        /// Offsets in units of 64 items.
        st64: bool,
    },
    /// Store.
    Write {
        /// Bytes per item.
        bytes: u8,
        /// Dwords.
        dwords: u8,
        /// Take the data from the high half of the register.
        hi: bool,
    },
    /// Two stores.
    Write2 {
        /// Dwords per item.
        dwords: u8,
        /// Offsets in units of 64 items.
        st64: bool,
    },
    /// Atomic on 32-bit (`wide == false`) or 64-bit LDS.
    Atomic {
        /// Operation.
        op: AtomicOp,
        /// 64-bit.
        wide: bool,
        /// Returns the old value.
        rtn: bool,
    },
    /// `ds_wrxchg2(st64)_rtn_b32/b64`: two exchanges.
    Wrxchg2 {
        /// 64-bit.
        wide: bool,
        /// Offsets in units of 64 items.
        st64: bool,
    },
    /// `ds_swizzle_b32`.
    Swizzle,
    /// `ds_permute_b32` (push).
    Permute,
    /// `ds_bpermute_b32` (pull).
    Bpermute,
    /// `ds_read_addtid_b32`: LDS at `M0 + offset + lane*4`.
    ReadAddtid,
    /// `ds_write_addtid_b32`.
    WriteAddtid,
    /// `ds_nop`.
    Nop,
}

impl DsOp {
    /// Parses a mnemonic like `ds_read2st64_b32`, `ds_add_rtn_u32`, `ds_write_b16_d16_hi`.
    pub fn from_name(name: &str) -> Option<DsOp> {
        let rest = name.strip_prefix("ds_")?;
        let fixed = match rest {
            "nop" => Some(DsOp::Nop),
            "swizzle_b32" => Some(DsOp::Swizzle),
            "permute_b32" => Some(DsOp::Permute),
            "bpermute_b32" => Some(DsOp::Bpermute),
            "read_addtid_b32" => Some(DsOp::ReadAddtid),
            "write_addtid_b32" => Some(DsOp::WriteAddtid),
            _ => None,
        };
        if let Some(op) = fixed
            .or_else(|| Self::single(rest))
            .or_else(|| Self::paired(rest))
        {
            return Some(op);
        }
        // Atomics: `<op>[_rtn]_<type>`.
        let (body, ty) = rest.rsplit_once('_')?;
        let (op_name, rtn) = match body.strip_suffix("_rtn") {
            Some(b) => (b, true),
            None => (body, false),
        };
        let wide = matches!(ty, "u64" | "i64" | "b64" | "f64");
        let op = match (op_name, ty) {
            ("add", "u32" | "u64") => AtomicOp::Add,
            ("sub", "u32" | "u64") => AtomicOp::Sub,
            ("rsub", "u32" | "u64") => AtomicOp::Rsub,
            ("inc", "u32" | "u64") => AtomicOp::Inc,
            ("dec", "u32" | "u64") => AtomicOp::Dec,
            ("min", "i32" | "i64") => AtomicOp::MinI,
            ("max", "i32" | "i64") => AtomicOp::MaxI,
            ("min", "u32" | "u64") => AtomicOp::MinU,
            ("max", "u32" | "u64") => AtomicOp::MaxU,
            ("and", "b32" | "b64") => AtomicOp::And,
            ("or", "b32" | "b64") => AtomicOp::Or,
            ("xor", "b32" | "b64") => AtomicOp::Xor,
            ("mskor", "b32" | "b64") => AtomicOp::Mskor,
            ("cmpst", "b32" | "b64") => AtomicOp::CmpSwap,
            ("cmpst", "f32" | "f64") => AtomicOp::CmpSwapF,
            ("min", "f32" | "f64") => AtomicOp::MinF,
            ("max", "f32" | "f64") => AtomicOp::MaxF,
            ("add", "f32" | "f64") => AtomicOp::AddF,
            ("wrxchg", "b32" | "b64") => AtomicOp::Swap,
            ("pk_add", "f16") => AtomicOp::PkAddF16,
            ("pk_add", "bf16") => AtomicOp::PkAddBf16,
            _ => return None,
        };
        // `ds_wrxchg_rtn_*` is spelled with `_rtn` in the middle, which the split above handles.
        Some(DsOp::Atomic { op, wide, rtn })
    }

    /// `read_<type>[_d16[_hi]]` and `write_<type>[_d16_hi]`: one item per lane. The d16 forms
    /// exist only for 8- and 16-bit items (reads: the low or high half; writes: from the high half).
    fn single(rest: &str) -> Option<DsOp> {
        let (store, rest) = match rest.split_once('_')? {
            ("read", r) => (false, r),
            ("write", r) => (true, r),
            _ => return None,
        };
        let (ty, part) = match rest.split_once('_') {
            None => (rest, Part::Full),
            Some((ty, "d16")) if !store => (ty, Part::Lo16),
            Some((ty, "d16_hi")) => (ty, Part::Hi16),
            Some(_) => return None,
        };
        // (bytes per item, dwords, sign-extended)
        let (bytes, dwords, signed) = match (ty, store) {
            ("b32", _) => (4, 1, false),
            ("b64", _) => (4, 2, false),
            ("b96", _) => (4, 3, false),
            ("b128", _) => (4, 4, false),
            ("u8", false) | ("b8", true) => (1, 1, false),
            ("u16", false) | ("b16", true) => (2, 1, false),
            ("i8", false) => (1, 1, true),
            ("i16", false) => (2, 1, true),
            _ => return None,
        };
        if bytes == 4 && part != Part::Full {
            return None;
        }
        Some(if store {
            DsOp::Write {
                bytes,
                dwords,
                hi: part == Part::Hi16,
            }
        } else {
            DsOp::Read {
                bytes,
                dwords,
                signed,
                part,
            }
        })
    }

    /// `read2[st64]_b32/b64`, `write2[st64]_…` and `wrxchg2[st64]_rtn_…`: two items per lane.
    fn paired(rest: &str) -> Option<DsOp> {
        let (stem, ty) = rest.rsplit_once('_')?;
        let wide = match ty {
            "b32" => false,
            "b64" => true,
            _ => return None,
        };
        let (stem, rtn) = match stem.strip_suffix("_rtn") {
            Some(s) => (s, true),
            None => (stem, false),
        };
        let (stem, st64) = match stem.strip_suffix("st64") {
            Some(s) => (s, true),
            None => (stem, false),
        };
        let dwords = 1 + wide as u8;
        match (stem, rtn) {
            ("read2", false) => Some(DsOp::Read2 { dwords, st64 }),
            ("write2", false) => Some(DsOp::Write2 { dwords, st64 }),
            ("wrxchg2", true) => Some(DsOp::Wrxchg2 { wide, st64 }),
            _ => None,
        }
    }

    /// `(data0 registers, data1 registers, destination registers)`.
    pub fn reg_counts(&self) -> (u32, u32, u32) {
        match *self {
            DsOp::Read { dwords, .. } => (0, 0, dwords as u32),
            DsOp::Read2 { dwords, .. } => (0, 0, 2 * dwords as u32),
            DsOp::Write { dwords, .. } => (dwords as u32, 0, 0),
            DsOp::Write2 { dwords, .. } => (dwords as u32, dwords as u32, 0),
            DsOp::Atomic { op, wide, rtn } => {
                let n = if wide { 2 } else { 1 };
                let two = op.has_second_operand();
                (n, if two { n } else { 0 }, if rtn { n } else { 0 })
            }
            DsOp::Wrxchg2 { wide, .. } => {
                let n = if wide { 2 } else { 1 };
                (n, n, 2 * n)
            }
            // ds_swizzle_b32 takes its data in the ADDR field (it has no address).
            DsOp::Swizzle => (0, 0, 1),
            DsOp::Permute | DsOp::Bpermute => (1, 0, 1),
            DsOp::ReadAddtid => (0, 0, 1),
            DsOp::WriteAddtid => (1, 0, 0),
            DsOp::Nop => (0, 0, 0),
        }
    }
}

/// A DS instruction with operands resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsInst {
    /// What it does.
    pub op: DsOp,
    /// Address VGPR.
    pub addr: u16,
    /// First data VGPR.
    pub data0: u16,
    /// Second data VGPR.
    pub data1: u16,
    /// Destination VGPR.
    pub vdst: u16,
    /// offset0 (low 8 bits of the 16-bit offset of single-address forms).
    pub offset0: u8,
    /// offset1 (high 8 bits).
    pub offset1: u8,
    /// Data and destination are AGPRs (gfx90a/gfx942 `acc` forms).
    pub acc: bool,
    /// GDS instead of LDS (unsupported).
    pub gds: bool,
}

impl DsInst {
    /// The 16-bit offset of single-address forms.
    pub fn offset(&self) -> u32 {
        self.offset0 as u32 | (self.offset1 as u32) << 8
    }

    /// Registers read and written, for the scoreboard.
    pub fn regs(&self) -> (RegSet, RegSet) {
        let mut r = RegSet::EMPTY;
        let mut w = RegSet::EMPTY;
        let (n0, n1, nd) = self.op.reg_counts();
        let uses_addr = !matches!(self.op, DsOp::ReadAddtid | DsOp::WriteAddtid | DsOp::Nop);
        if uses_addr {
            r.add_v(self.addr as u32, 1);
        }
        if matches!(self.op, DsOp::ReadAddtid | DsOp::WriteAddtid) {
            r.add_s(124, 1);
        }
        let add = |s: &mut RegSet, first: u16, n: u32, acc: bool| {
            if n > 0 {
                if acc {
                    s.add_a(first as u32, n)
                } else {
                    s.add_v(first as u32, n)
                }
            }
        };
        // Cross-lane ops read VGPR data even with acc (they have no acc forms).
        add(&mut r, self.data0, n0, self.acc);
        add(&mut r, self.data1, n1, self.acc);
        add(&mut w, self.vdst, nd, self.acc);
        (r, w)
    }
}

/// Lane that lane `l` reads in `ds_swizzle_b32` with `offset`, per the Vega ISA: bit 15 set is
/// quad-permute mode (two bits per lane of a quad), otherwise bit-mask mode within 32 lanes.
pub fn swizzle_source(offset: u32, l: usize) -> usize {
    if offset & 0x8000 != 0 {
        let sel = (offset >> (2 * (l & 3))) & 3;
        (l & !3) | sel as usize
    } else {
        let and = (offset & 0x1f) as usize;
        let or = ((offset >> 5) & 0x1f) as usize;
        let xor = ((offset >> 10) & 0x1f) as usize;
        (l & 0x20) | ((((l & 0x1f) & and) | or) ^ xor)
    }
}

/// Adds the dwords of `[a, a + size)` to `list`.
fn touch(list: &mut Vec<u32>, a: u32, size: u32) {
    let first = a / 4;
    let last = (a + size.max(1) - 1) / 4;
    list.extend(first..=last);
}

/// Executes one DS instruction.
pub fn execute(w: &mut Wave, ctx: &mut Ctx, i: &DsInst) -> Result<(), EmuError> {
    if i.gds {
        return Err(EmuError::unsupported("GDS access (gds bit set)"));
    }
    // Code-object address, for messages (waves run at device addresses).
    let pc = w.pc.wrapping_sub(ctx.pc_base);
    let wv = ctx.wave_index;
    let exec = w.exec;
    let (_, dests) = i.regs();
    let detect = ctx.lds.detecting();
    let mut lds_reads = Vec::new();
    let mut lds_writes = Vec::new();
    let file_data = |w: &Wave, r: u16, l: usize| -> u32 {
        if i.acc {
            w.agpr[r as usize][l]
        } else {
            w.vgpr[r as usize][l]
        }
    };
    let addr_of = |w: &Wave, l: usize| w.vgpr[i.addr as usize][l];
    // Check reads of LDS that a `buffer_load ... lds` of this wave has not finished writing.
    let check_pending = |ctx: &Ctx, a: u32, n: u32| -> Result<(), EmuError> {
        if let Some((opc, wait)) = ctx.sb.pending_lds_write(a / 4, (a + n - 1) / 4) {
            return Err(EmuError::Hazard {
                at: Default::default(),
                register: format!("LDS[{a:#x}]"),
                detail: format!(
                    "is read while the load to LDS issued at pc {opc:#x} may still be writing it"
                ),
                missing_wait: wait,
            });
        }
        Ok(())
    };
    let mut data = ctx.sb.buffer(0);
    let (nd_total, part) = match i.op {
        DsOp::Nop => (0, Part::Full),
        DsOp::Read {
            bytes,
            dwords,
            signed,
            part,
        } => {
            let n = dwords as usize;
            data.resize(n * LANES, 0);
            let off = i.offset();
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let a = addr_of(w, l).wrapping_add(off);
                let size = if bytes == 4 {
                    4 * n as u32
                } else {
                    bytes as u32
                };
                check_pending(ctx, a, size)?;
                let mut buf = [0u8; 16];
                ctx.lds.read(wv, pc, a, &mut buf[..size as usize])?;
                if detect {
                    touch(&mut lds_reads, a, size);
                }
                for k in 0..n {
                    let raw =
                        u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().unwrap_or([0; 4]));
                    data[k * LANES + l] = match (bytes, signed) {
                        (1, false) => raw & 0xff,
                        (1, true) => raw as u8 as i8 as i32 as u32,
                        (2, false) => raw & 0xffff,
                        (2, true) => raw as u16 as i16 as i32 as u32,
                        _ => raw,
                    };
                }
            }
            (n, part)
        }
        DsOp::Read2 { dwords, st64 } => {
            let n = dwords as usize;
            data.resize(2 * n * LANES, 0);
            let scale = 4 * n as u32 * if st64 { 64 } else { 1 };
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let base = addr_of(w, l);
                for (j, o) in [i.offset0, i.offset1].into_iter().enumerate() {
                    let a = base.wrapping_add(o as u32 * scale);
                    check_pending(ctx, a, 4 * n as u32)?;
                    for k in 0..n {
                        data[(j * n + k) * LANES + l] =
                            ctx.lds.read_u32(wv, pc, a + 4 * k as u32)?;
                    }
                    if detect {
                        touch(&mut lds_reads, a, 4 * n as u32);
                    }
                }
            }
            (2 * n, Part::Full)
        }
        DsOp::ReadAddtid => {
            data.resize(LANES, 0);
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let a = w.m0.wrapping_add(i.offset()).wrapping_add(4 * l as u32);
                data[l] = ctx.lds.read_u32(wv, pc, a)?;
            }
            (1, Part::Full)
        }
        DsOp::Write { bytes, dwords, hi } => {
            let off = i.offset();
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let a = addr_of(w, l).wrapping_add(off);
                if bytes == 4 {
                    let mut buf = [0u8; 16];
                    for k in 0..dwords as usize {
                        buf[4 * k..4 * k + 4]
                            .copy_from_slice(&file_data(w, i.data0 + k as u16, l).to_le_bytes());
                    }
                    ctx.lds.write(wv, pc, a, &buf[..4 * dwords as usize])?;
                } else {
                    let mut v = file_data(w, i.data0, l);
                    if hi {
                        v >>= 16;
                    }
                    ctx.lds
                        .write(wv, pc, a, &v.to_le_bytes()[..bytes as usize])?;
                }
                if detect {
                    touch(&mut lds_writes, a, bytes as u32 * dwords as u32);
                }
            }
            (0, Part::Full)
        }
        DsOp::Write2 { dwords, st64 } => {
            let n = dwords as usize;
            let scale = 4 * n as u32 * if st64 { 64 } else { 1 };
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let base = addr_of(w, l);
                for (src, o) in [(i.data0, i.offset0), (i.data1, i.offset1)] {
                    let a = base.wrapping_add(o as u32 * scale);
                    for k in 0..n {
                        ctx.lds.write_u32(
                            wv,
                            pc,
                            a + 4 * k as u32,
                            file_data(w, src + k as u16, l),
                        )?;
                    }
                    if detect {
                        touch(&mut lds_writes, a, 4 * n as u32);
                    }
                }
            }
            (0, Part::Full)
        }
        DsOp::WriteAddtid => {
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let a = w.m0.wrapping_add(i.offset()).wrapping_add(4 * l as u32);
                ctx.lds.write_u32(wv, pc, a, file_data(w, i.data0, l))?;
            }
            (0, Part::Full)
        }
        DsOp::Atomic { op, wide, rtn } => {
            let size = if wide { 8 } else { 4 };
            let n = if wide { 2 } else { 1 };
            data.resize(n * LANES, 0);
            let off = i.offset();
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let val = |w: &Wave, r: u16| -> u64 {
                    if wide {
                        file_data(w, r, l) as u64 | (file_data(w, r + 1, l) as u64) << 32
                    } else {
                        file_data(w, r, l) as u64
                    }
                };
                let d0 = val(w, i.data0);
                let d1 = if i.op.reg_counts().1 > 0 {
                    val(w, i.data1)
                } else {
                    0
                };
                let a = addr_of(w, l).wrapping_add(off);
                if a % size != 0 {
                    return Err(EmuError::fault(
                        a as u64,
                        format!("lane {l}: misaligned {size}-byte LDS atomic at {a:#x}"),
                    ));
                }
                // DS puts the compare value or mask first (data0), the stored value second.
                let (stored, second) = if op.has_second_operand() {
                    (d1, d0)
                } else {
                    (d0, 0)
                };
                let old = ctx.lds.atomic(wv, pc, a, size, |old| {
                    atomic::apply(op, wide, old, stored, second)
                })?;
                if detect {
                    touch(&mut lds_writes, a, size);
                }
                data[l] = old as u32;
                if wide {
                    data[LANES + l] = (old >> 32) as u32;
                }
            }
            (if rtn { n } else { 0 }, Part::Full)
        }
        DsOp::Wrxchg2 { wide, st64 } => {
            let n = if wide { 2 } else { 1 };
            data.resize(2 * n * LANES, 0);
            let scale = 4 * n as u32 * if st64 { 64 } else { 1 };
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let base = addr_of(w, l);
                for (j, (src, o)) in [(i.data0, i.offset0), (i.data1, i.offset1)]
                    .into_iter()
                    .enumerate()
                {
                    let a = base.wrapping_add(o as u32 * scale);
                    for k in 0..n {
                        let new = file_data(w, src + k as u16, l) as u64;
                        let old = ctx.lds.atomic(wv, pc, a + 4 * k as u32, 4, |_| new)?;
                        data[(j * n + k) * LANES + l] = old as u32;
                    }
                }
            }
            (2 * n, Part::Full)
        }
        DsOp::Swizzle | DsOp::Permute | DsOp::Bpermute => {
            data.resize(LANES, 0);
            let src_reg = if i.op == DsOp::Swizzle {
                i.addr
            } else {
                i.data0
            };
            let src = &w.vgpr[src_reg as usize];
            match i.op {
                DsOp::Swizzle => {
                    let off = i.offset();
                    for l in 0..LANES {
                        let s = swizzle_source(off, l);
                        data[l] = if exec >> s & 1 != 0 { src[s] } else { 0 };
                    }
                }
                DsOp::Bpermute => {
                    let off = i.offset();
                    for l in 0..LANES {
                        let s = ((addr_of(w, l).wrapping_add(off) >> 2) & 63) as usize;
                        data[l] = if exec >> s & 1 != 0 { src[s] } else { 0 };
                    }
                }
                _ => {
                    let off = i.offset();
                    let mut tmp = [0u32; LANES];
                    for l in 0..LANES {
                        if exec >> l & 1 != 0 {
                            let d = ((addr_of(w, l).wrapping_add(off) >> 2) & 63) as usize;
                            tmp[d] = src[l];
                        }
                    }
                    data.copy_from_slice(&tmp);
                }
            }
            (1, Part::Full)
        }
    };
    let landing = if nd_total > 0 {
        Landing::Vector {
            first: i.vdst,
            count: nd_total as u16,
            agpr: i.acc && !matches!(i.op, DsOp::Swizzle | DsOp::Permute | DsOp::Bpermute),
            mask: exec,
            data,
            part,
        }
    } else {
        Landing::None
    };
    // Under the strict store policy, a store's data registers stay locked until lgkmcnt says so.
    let mut sources = RegSet::EMPTY;
    let (n0, n1, _) = i.op.reg_counts();
    for (first, n) in [(i.data0, n0), (i.data1, n1)] {
        if n > 0 {
            if i.acc {
                sources.add_a(first as u32, n)
            } else {
                sources.add_v(first as u32, n)
            }
        }
    }
    ctx.sb.issue(
        InFlight {
            kind: OpKind::Lds,
            pc,
            dests: if nd_total > 0 { dests } else { RegSet::EMPTY },
            sources: if nd_total == 0 {
                sources
            } else {
                RegSet::EMPTY
            },
            landing,
            lds_reads,
            lds_writes,
            seq: 0,
        },
        w,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_parse() {
        assert_eq!(
            DsOp::from_name("ds_read2st64_b64"),
            Some(DsOp::Read2 {
                dwords: 2,
                st64: true
            })
        );
        assert_eq!(
            DsOp::from_name("ds_add_rtn_u32"),
            Some(DsOp::Atomic {
                op: AtomicOp::Add,
                wide: false,
                rtn: true
            })
        );
        assert_eq!(
            DsOp::from_name("ds_wrxchg_rtn_b64"),
            Some(DsOp::Atomic {
                op: AtomicOp::Swap,
                wide: true,
                rtn: true
            })
        );
        assert_eq!(
            DsOp::from_name("ds_max_f32"),
            Some(DsOp::Atomic {
                op: AtomicOp::MaxF,
                wide: false,
                rtn: false
            })
        );
        assert_eq!(
            DsOp::from_name("ds_write_b16_d16_hi"),
            Some(DsOp::Write {
                bytes: 2,
                dwords: 1,
                hi: true
            })
        );
        assert_eq!(DsOp::from_name("ds_bogus_b32"), None);
        assert_eq!(
            DsOp::from_name("ds_cmpst_rtn_b32").unwrap().reg_counts(),
            (1, 1, 1)
        );
    }

    /// Every LDS mnemonic of the instruction table parses, except the families the device does
    /// not run (a clear "unsupported" at translation); near-miss spellings do not.
    #[test]
    fn every_table_mnemonic_parses() {
        use kjit_backend_gcn::{isa::Opcode, Target};
        let unsupported = [
            "_src2_",
            "gws_",
            "append",
            "consume",
            "ordered_count",
            "condxchg",
            "wrap",
        ];
        for op in Opcode::all() {
            for t in [Target::Gfx900, Target::Gfx90a, Target::Gfx942] {
                let n = op.info().name_on(t);
                if n.starts_with("ds_") && !unsupported.iter().any(|u| n.contains(u)) {
                    assert!(DsOp::from_name(n).is_some(), "{n} on {t:?}");
                }
            }
        }
        for n in [
            "ds_read_b32_d16",
            "ds_write_b8_d16",
            "ds_write_b32_d16_hi",
            "ds_read2_b96",
            "ds_read2st64_rtn_b32",
            "ds_wrxchg2_b32",
            "ds_write2_rtn_b32",
            "ds_read_u32",
            "ds_read_b8",
        ] {
            assert_eq!(DsOp::from_name(n), None, "{n}");
        }
        assert_eq!(
            DsOp::from_name("ds_read_i8_d16_hi"),
            Some(DsOp::Read {
                bytes: 1,
                dwords: 1,
                signed: true,
                part: Part::Hi16
            })
        );
        assert_eq!(
            DsOp::from_name("ds_wrxchg2st64_rtn_b64"),
            Some(DsOp::Wrxchg2 {
                wide: true,
                st64: true
            })
        );
    }

    #[test]
    fn swizzle_patterns_follow_the_isa() {
        // Quad mode 0x80e4 (bits 0-7 = 0b11100100): identity.
        for l in 0..64 {
            assert_eq!(swizzle_source(0x80e4, l), l);
        }
        // Quad mode broadcast lane 2 of each quad: 0b10101010 = 0xaa.
        assert_eq!(swizzle_source(0x80aa, 5), 6);
        // Bit-mask mode: and 0x1f, or 0, xor 1 -> swap neighbours (offset = 1 << 10 | 0x1f).
        assert_eq!(swizzle_source(0x1f | 1 << 10, 4), 5);
        assert_eq!(swizzle_source(0x1f | 1 << 10, 37), 36);
        // Broadcast lane 0 of each 32: and 0, or 0, xor 0.
        assert_eq!(swizzle_source(0, 45), 32);
    }
}
