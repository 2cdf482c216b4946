//! Vector memory: MUBUF (`buffer_*`), FLAT (`flat_*`), GLOBAL (`global_*`) and SCRATCH
//! (`scratch_*`) loads, stores and atomics.
//!
//! Takes a [`VmemInst`] (mnemonic mapped once to a [`VmemOp`], operands resolved) and the wave;
//! computes every active lane's address, reads or writes device memory at issue, and hands loaded
//! data to the scoreboard, which lands it in the registers when an `s_waitcnt vmcnt` says it must.
//!
//! Addressing (Vega/CDNA3 ISA, "Vector Memory Buffer/Flat Instructions"):
//! - GLOBAL: `saddr` pair + 32-bit VGPR offset, or a 64-bit VGPR address; plus the signed offset.
//! - FLAT: 64-bit VGPR address + offset; the shared aperture goes to LDS, the private aperture to
//!   the wave's scratch, everything else to device memory. FLAT also counts on `lgkmcnt`.
//! - SCRATCH: per-lane private offset (`saddr`, VGPR, offset), swizzled into the wave's scratch at
//!   FLAT_SCRATCH: dword `k` of lane `l` lives at `base + k*256 + l*4`.
//! - MUBUF: the buffer resource (V#) in 4 SGPRs: base, stride, num_records, swizzle, element size,
//!   index stride, ADD_TID_ENABLE; `soffset`, `offen`/`idxen` VGPRs, the instruction offset.
//!   Raw (unswizzled) buffers are range-checked per dword against num_records (bytes when not
//!   indexed, records when indexed): out-of-range loads give 0, stores and atomics are dropped.
//!   The `lds` bit sends loaded dwords to LDS at `M0 + offset + lane*4` instead of a VGPR.

// Lane loops index several 64-lane arrays by the same lane number.
#![allow(clippy::needless_range_loop)]

use super::atomic::{self, AtomicOp};
use super::ctx::{mem_fault, Ctx};
use super::scoreboard::{InFlight, Landing, OpKind, Part, RegSet};
use super::wave::{
    EmuError, SrcType, Wave, APERTURE_SIZE, LANES, PRIVATE_APERTURE, SHARED_APERTURE,
};

/// Which address space family an instruction belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Segment {
    /// `buffer_*` (MUBUF).
    Buffer,
    /// `flat_*`.
    Flat,
    /// `global_*`.
    Global,
    /// `scratch_*`.
    Scratch,
}

/// How a load or store moves data between memory and a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataShape {
    /// Bytes per dword-component in memory (1, 2 or 4).
    pub bytes: u8,
    /// Components (dwords) moved.
    pub dwords: u8,
    /// Sign-extend sub-dword loads.
    pub signed: bool,
    /// Which part of the register a sub-dword access uses.
    pub part: Part,
}

/// The operation of a vector memory instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VmemOp {
    /// A load of `DataShape`.
    Load(DataShape),
    /// A store of `DataShape`.
    Store(DataShape),
    /// An atomic on 32-bit (`wide == false`) or 64-bit memory.
    Atomic {
        /// Operation.
        op: AtomicOp,
        /// 64-bit memory operand.
        wide: bool,
    },
    /// Cache maintenance (`buffer_wbinvl1`, `buffer_inv`, `buffer_wbl2`...): no effect on a
    /// coherent software memory, but it counts on vmcnt like the hardware.
    CacheControl,
}

impl VmemOp {
    /// Parses a mnemonic like `global_load_dwordx2`, `buffer_atomic_cmpswap_x2`,
    /// `scratch_store_short_d16_hi`.
    pub fn from_name(name: &str) -> Option<(Segment, VmemOp)> {
        let (seg, rest) = if let Some(r) = name.strip_prefix("global_") {
            (Segment::Global, r)
        } else if let Some(r) = name.strip_prefix("flat_") {
            (Segment::Flat, r)
        } else if let Some(r) = name.strip_prefix("scratch_") {
            (Segment::Scratch, r)
        } else if let Some(r) = name.strip_prefix("buffer_") {
            (Segment::Buffer, r)
        } else {
            return None;
        };
        if seg == Segment::Buffer
            && matches!(
                rest,
                "wbinvl1" | "wbinvl1_vol" | "inv" | "wbl2" | "invl2" | "gl0_inv" | "gl1_inv"
            )
        {
            return Some((seg, VmemOp::CacheControl));
        }
        if let Some(t) = rest.strip_prefix("load_") {
            let t = t
                .strip_prefix("format_")
                .map(format_shape)
                .unwrap_or_else(|| load_shape(t));
            return t.map(|s| (seg, VmemOp::Load(s)));
        }
        if let Some(t) = rest.strip_prefix("store_") {
            let t = t
                .strip_prefix("format_")
                .map(format_shape)
                .unwrap_or_else(|| store_shape(t));
            return t.map(|s| (seg, VmemOp::Store(s)));
        }
        if let Some(a) = rest.strip_prefix("atomic_") {
            let (a, wide) = match a.strip_suffix("_x2") {
                Some(a) => (a, true),
                None => (a, false),
            };
            let (op, wide) = match a {
                "swap" => (AtomicOp::Swap, wide),
                "cmpswap" => (AtomicOp::CmpSwap, wide),
                "add" => (AtomicOp::Add, wide),
                "sub" => (AtomicOp::Sub, wide),
                "smin" => (AtomicOp::MinI, wide),
                "umin" => (AtomicOp::MinU, wide),
                "smax" => (AtomicOp::MaxI, wide),
                "umax" => (AtomicOp::MaxU, wide),
                "and" => (AtomicOp::And, wide),
                "or" => (AtomicOp::Or, wide),
                "xor" => (AtomicOp::Xor, wide),
                "inc" => (AtomicOp::Inc, wide),
                "dec" => (AtomicOp::Dec, wide),
                "add_f32" => (AtomicOp::AddF, false),
                "pk_add_f16" => (AtomicOp::PkAddF16, false),
                "pk_add_bf16" => (AtomicOp::PkAddBf16, false),
                "add_f64" => (AtomicOp::AddF, true),
                "min_f64" => (AtomicOp::MinF, true),
                "max_f64" => (AtomicOp::MaxF, true),
                _ => return None,
            };
            return Some((seg, VmemOp::Atomic { op, wide }));
        }
        None
    }

    /// VGPRs the data operand occupies (store data, atomic data incl. the compare value).
    pub fn data_regs(&self) -> u32 {
        match self {
            VmemOp::Load(_) | VmemOp::CacheControl => 0,
            VmemOp::Store(s) => s.dwords as u32,
            VmemOp::Atomic { op, wide } => {
                let n = if *wide { 2 } else { 1 };
                if op.has_second_operand() {
                    2 * n
                } else {
                    n
                }
            }
        }
    }

    /// VGPRs the destination occupies (loads; atomics that return).
    pub fn dest_regs(&self) -> u32 {
        match self {
            VmemOp::Load(s) => s.dwords as u32,
            VmemOp::Atomic { wide, .. } => {
                if *wide {
                    2
                } else {
                    1
                }
            }
            _ => 0,
        }
    }
}

fn dw(n: u8) -> DataShape {
    DataShape {
        bytes: 4,
        dwords: n,
        signed: false,
        part: Part::Full,
    }
}

fn sub(bytes: u8, signed: bool, part: Part) -> DataShape {
    DataShape {
        bytes,
        dwords: 1,
        signed,
        part,
    }
}

fn load_shape(t: &str) -> Option<DataShape> {
    Some(match t {
        "dword" => dw(1),
        "dwordx2" => dw(2),
        "dwordx3" => dw(3),
        "dwordx4" => dw(4),
        "ubyte" => sub(1, false, Part::Full),
        "sbyte" => sub(1, true, Part::Full),
        "ushort" => sub(2, false, Part::Full),
        "sshort" => sub(2, true, Part::Full),
        "ubyte_d16" => sub(1, false, Part::Lo16),
        "ubyte_d16_hi" => sub(1, false, Part::Hi16),
        "sbyte_d16" => sub(1, true, Part::Lo16),
        "sbyte_d16_hi" => sub(1, true, Part::Hi16),
        "short_d16" => sub(2, false, Part::Lo16),
        "short_d16_hi" => sub(2, false, Part::Hi16),
        _ => return None,
    })
}

fn store_shape(t: &str) -> Option<DataShape> {
    Some(match t {
        "dword" => dw(1),
        "dwordx2" => dw(2),
        "dwordx3" => dw(3),
        "dwordx4" => dw(4),
        "byte" => sub(1, false, Part::Full),
        "short" => sub(2, false, Part::Full),
        "byte_d16_hi" => sub(1, false, Part::Hi16),
        "short_d16_hi" => sub(2, false, Part::Hi16),
        _ => return None,
    })
}

/// `*_format_{x,xy,xyz,xyzw}`: treated as raw 32-bit components (the 32-bit data formats); other
/// formats are rejected at execution by [`check_format`].
fn format_shape(t: &str) -> Option<DataShape> {
    Some(match t {
        "x" => dw(1),
        "xy" => dw(2),
        "xyz" => dw(3),
        "xyzw" => dw(4),
        _ => return None,
    })
}

/// A vector memory instruction with operands resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmemInst {
    /// Which family.
    pub seg: Segment,
    /// What it does.
    pub op: VmemOp,
    /// Address VGPR (64-bit pair for FLAT/GLOBAL without saddr), or `None` (`off`).
    pub vaddr: Option<u16>,
    /// Scalar address (GLOBAL/SCRATCH `saddr`; code), or `None`.
    pub saddr: Option<u16>,
    /// Data VGPR (stores, atomics).
    pub vdata: u16,
    /// Destination VGPR (loads, returning atomics).
    pub vdst: u16,
    /// Data and destination are AGPRs (gfx90a/gfx942 `acc` forms).
    pub acc: bool,
    /// Instruction offset in bytes.
    pub offset: i32,
    /// Atomics return the old value (`glc` on gfx9, `sc0` on gfx942).
    pub returns: bool,
    /// MUBUF: the resource's first SGPR code.
    pub srsrc: u16,
    /// MUBUF: the scalar offset code (may be an inline constant or literal).
    pub soffset: u16,
    /// MUBUF: VGPR supplies an offset.
    pub offen: bool,
    /// MUBUF: VGPR supplies an index.
    pub idxen: bool,
    /// MUBUF: load to LDS at M0.
    pub lds: bool,
    /// Literal value when `soffset` is 255.
    pub literal: u32,
    /// A `*_format_*` access (needs a 32-bit data format in the resource).
    pub format: bool,
}

impl VmemInst {
    /// Registers read and written, for the scoreboard. `(reads, writes)`.
    pub fn regs(&self) -> (RegSet, RegSet) {
        let mut r = RegSet::EMPTY;
        let mut w = RegSet::EMPTY;
        if let Some(v) = self.vaddr {
            let n = match self.seg {
                Segment::Flat => 2,
                Segment::Global => {
                    if self.saddr.is_some() {
                        1
                    } else {
                        2
                    }
                }
                Segment::Scratch => 1,
                Segment::Buffer => (self.offen as u32 + self.idxen as u32).max(1),
            };
            r.add_v(v as u32, n);
        }
        if let Some(s) = self.saddr {
            r.add_s(s as u32, if self.seg == Segment::Global { 2 } else { 1 });
        }
        if self.seg == Segment::Buffer {
            r.add_s(self.srsrc as u32, 4);
            if self.soffset < 128 {
                r.add_s(self.soffset as u32, 1);
            }
            if self.lds {
                r.add_s(124, 1);
            }
        }
        let nd = self.op.data_regs();
        if nd > 0 {
            if self.acc {
                r.add_a(self.vdata as u32, nd);
            } else {
                r.add_v(self.vdata as u32, nd);
            }
        }
        let returns = match self.op {
            VmemOp::Load(_) => !self.lds,
            VmemOp::Atomic { .. } => self.returns,
            _ => false,
        };
        if returns {
            let n = self.op.dest_regs();
            if self.acc {
                w.add_a(self.vdst as u32, n);
            } else {
                w.add_v(self.vdst as u32, n);
            }
        }
        (r, w)
    }
}

/// The fields of a buffer resource (V#) the device uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferResource {
    /// 48-bit base address.
    pub base: u64,
    /// Bytes between records.
    pub stride: u32,
    /// Records (or bytes, for raw access).
    pub num_records: u32,
    /// Swizzled layout.
    pub swizzle: bool,
    /// Add the lane id to the index.
    pub add_tid: bool,
    /// Swizzle element size in bytes.
    pub element_size: u32,
    /// Swizzle index stride in records.
    pub index_stride: u32,
    /// DATA_FORMAT.
    pub data_format: u32,
}

impl BufferResource {
    /// Reads the V# from four SGPR dwords.
    pub fn from_dwords(d: [u32; 4]) -> BufferResource {
        BufferResource {
            base: d[0] as u64 | ((d[1] & 0xffff) as u64) << 32,
            stride: (d[1] >> 16) & 0x3fff,
            num_records: d[2],
            swizzle: d[1] >> 31 != 0,
            add_tid: (d[3] >> 23) & 1 != 0,
            element_size: 2 << ((d[3] >> 19) & 3),
            index_stride: 8 << ((d[3] >> 21) & 3),
            data_format: (d[3] >> 15) & 0xf,
        }
    }
}

/// `*_format_*` accesses are only supported for 32-bit data formats (DATA_FORMAT 4, 11, 13, 14).
fn check_format(rsrc: &BufferResource) -> Result<(), EmuError> {
    if matches!(rsrc.data_format, 4 | 11 | 13 | 14) {
        Ok(())
    } else {
        Err(EmuError::unsupported(format!(
            "buffer format access with DATA_FORMAT {} (only 32-bit formats are implemented)",
            rsrc.data_format
        )))
    }
}

/// Where one dword-component of one lane goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Device memory at this address.
    Global(u64),
    /// LDS at this byte address.
    Lds(u32),
    /// Raw-buffer out of range: loads give 0, stores are dropped.
    OutOfRange,
}

/// Byte offset inside a swizzled private segment: dword `k` of lane `l` at `k*256 + l*4`.
#[inline]
fn swizzle_private(off: u64, lane: usize) -> u64 {
    (off / 4) * (4 * LANES as u64) + lane as u64 * 4 + off % 4
}

struct Addressing {
    rsrc: Option<BufferResource>,
    soffset: u32,
    saddr: u64,
    /// `RunConfig::bounds_check`: a raw-buffer access out of the descriptor's range is an error
    /// instead of a zero load or a dropped store.
    bounds_check: bool,
}

fn prepare(w: &Wave, i: &VmemInst) -> Result<Addressing, EmuError> {
    let mut a = Addressing {
        rsrc: None,
        soffset: 0,
        saddr: 0,
        bounds_check: false,
    };
    match i.seg {
        Segment::Buffer => {
            let mut d = [0u32; 4];
            for (k, x) in d.iter_mut().enumerate() {
                *x = w.read_scalar(i.srsrc + k as u16, 0, SrcType::B32)?;
            }
            a.rsrc = Some(BufferResource::from_dwords(d));
            a.soffset = w.read_scalar(i.soffset, i.literal, SrcType::B32)?;
        }
        Segment::Global => {
            if let Some(s) = i.saddr {
                a.saddr = w.read_scalar64(s, 0, SrcType::B64)?;
            }
        }
        Segment::Scratch => {
            if let Some(s) = i.saddr {
                a.saddr = w.read_scalar(s, 0, SrcType::B32)? as u64;
            }
        }
        Segment::Flat => {}
    }
    Ok(a)
}

/// The location of component `k` (a dword, or the single sub-dword item) of lane `l`.
#[inline]
fn locate(
    w: &Wave,
    i: &VmemInst,
    a: &Addressing,
    l: usize,
    k: u32,
    bytes: u32,
    scratch_per_lane: u32,
) -> Result<Target, EmuError> {
    let vgpr = |r: u16| w.vgpr[r as usize][l];
    let vaddr64 = |r: u16| w.vgpr[r as usize][l] as u64 | (w.vgpr[r as usize + 1][l] as u64) << 32;
    let private = |off: i64| -> Result<Target, EmuError> {
        if off < 0 || off as u64 + bytes as u64 > scratch_per_lane as u64 {
            return Err(EmuError::fault(
                off as u64,
                format!(
                    "lane {l}: private (scratch) access of {bytes} byte(s) at offset {off:#x} outside the \
                     {scratch_per_lane}-byte private segment"
                ),
            ));
        }
        Ok(Target::Global(
            w.flat_scratch.wrapping_add(swizzle_private(off as u64, l)),
        ))
    };
    let comp = k as i64 * 4;
    match i.seg {
        Segment::Global => {
            let base = match (i.saddr, i.vaddr) {
                (Some(_), Some(v)) => a.saddr.wrapping_add(vgpr(v) as u64),
                (Some(_), None) => a.saddr,
                (None, Some(v)) => vaddr64(v),
                (None, None) => 0,
            };
            Ok(Target::Global(
                base.wrapping_add((i.offset as i64 + comp) as u64),
            ))
        }
        Segment::Scratch => {
            let mut off = a.saddr as i64;
            if let Some(v) = i.vaddr {
                off += vgpr(v) as i64;
            }
            private(off + i.offset as i64 + comp)
        }
        Segment::Flat => {
            let addr = i
                .vaddr
                .map(vaddr64)
                .unwrap_or(0)
                .wrapping_add((i.offset as i64 + comp) as u64);
            if (SHARED_APERTURE..SHARED_APERTURE + APERTURE_SIZE).contains(&addr) {
                Ok(Target::Lds((addr - SHARED_APERTURE) as u32))
            } else if (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&addr) {
                private((addr - PRIVATE_APERTURE) as i64)
            } else {
                Ok(Target::Global(addr))
            }
        }
        Segment::Buffer => {
            let r = a
                .rsrc
                .as_ref()
                .ok_or_else(|| EmuError::illegal("buffer access without a resource"))?;
            let (vindex, voffset) = match i.vaddr {
                Some(v) => {
                    let idx = if i.idxen { vgpr(v) } else { 0 };
                    let off = if i.offen { vgpr(v + i.idxen as u16) } else { 0 };
                    (idx, off)
                }
                None => (0, 0),
            };
            let index = vindex as u64 + if r.add_tid { l as u64 } else { 0 };
            let offset = voffset as u64 + i.offset as u64 + comp as u64;
            if r.swizzle {
                let es = r.element_size as u64;
                let is = r.index_stride as u64;
                let addr = r.base
                    + a.soffset as u64
                    + ((index / is) * r.stride as u64 + (offset / es) * es) * is
                    + (index % is) * es
                    + offset % es;
                Ok(Target::Global(addr))
            } else {
                // Range check (gfx9): indexed accesses check the index against num_records and the
                // offset against the stride; raw ones check the byte offset against num_records.
                let out = if i.idxen || r.add_tid {
                    index >= r.num_records as u64
                        || (r.stride != 0 && offset + bytes as u64 > r.stride as u64)
                } else {
                    offset + bytes as u64 > r.num_records as u64
                };
                if out && a.bounds_check {
                    let addr = r.base + a.soffset as u64 + offset + r.stride as u64 * index;
                    return Err(EmuError::fault(
                        addr,
                        format!(
                            "lane {l}: buffer access of {bytes} byte(s) at offset {offset:#x}{} (address \
                             {addr:#x}) is outside the range of the buffer at {:#x} (num_records {}, \
                             stride {}) (bounds check; without it the load gives 0 / the store is \
                             dropped)",
                            if i.idxen || r.add_tid {
                                format!(", index {index}")
                            } else {
                                String::new()
                            },
                            r.base,
                            r.num_records,
                            r.stride
                        ),
                    ));
                }
                if out {
                    return Ok(Target::OutOfRange);
                }
                Ok(Target::Global(
                    r.base + a.soffset as u64 + offset + r.stride as u64 * index,
                ))
            }
        }
    }
}

fn extend(raw: u32, shape: &DataShape) -> u32 {
    match (shape.bytes, shape.signed) {
        (1, false) => raw & 0xff,
        (1, true) => raw as u8 as i8 as i32 as u32,
        (2, false) => raw & 0xffff,
        (2, true) => raw as u16 as i16 as i32 as u32,
        _ => raw,
    }
}

fn read_item(ctx: &mut Ctx, wave: u8, pc: u64, t: Target, bytes: u32) -> Result<u32, EmuError> {
    match t {
        Target::OutOfRange => Ok(0),
        Target::Global(addr) => {
            if bytes == 4 {
                ctx.mem.read_u32(ctx.cache, addr).map_err(mem_fault)
            } else {
                let mut b = [0u8; 4];
                ctx.mem
                    .read(ctx.cache, addr, &mut b[..bytes as usize])
                    .map_err(mem_fault)?;
                Ok(u32::from_le_bytes(b))
            }
        }
        Target::Lds(a) => {
            let mut b = [0u8; 4];
            ctx.lds.read(wave, pc, a, &mut b[..bytes as usize])?;
            Ok(u32::from_le_bytes(b))
        }
    }
}

fn write_item(
    ctx: &mut Ctx,
    wave: u8,
    pc: u64,
    t: Target,
    bytes: u32,
    v: u32,
) -> Result<(), EmuError> {
    match t {
        Target::OutOfRange => Ok(()),
        Target::Global(addr) => {
            if bytes == 4 {
                ctx.mem.write_u32(ctx.cache, addr, v).map_err(mem_fault)
            } else {
                ctx.mem
                    .write(ctx.cache, addr, &v.to_le_bytes()[..bytes as usize])
                    .map_err(mem_fault)
            }
        }
        Target::Lds(a) => ctx
            .lds
            .write(wave, pc, a, &v.to_le_bytes()[..bytes as usize]),
    }
}

/// A fault of lane `l`'s access: the lane named, and for a device-memory miss the allocation
/// it missed (bounds reports name wave, pc, lane, address and buffer).
fn lane_fault(e: EmuError, l: usize, mem: &super::memory::MemoryView) -> EmuError {
    match e {
        EmuError::MemoryFault { at, addr, detail } if !detail.starts_with("lane ") => {
            let near = if detail.contains("outside every allocation") {
                mem.near(addr)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            EmuError::MemoryFault {
                at,
                addr,
                detail: format!("lane {l}: {detail}{near}"),
            }
        }
        e => e,
    }
}

/// Per-lane byte addresses of a GLOBAL (or FLAT, outside the LDS and private windows) access,
/// instruction offset included, when every active lane's `n` dwords fall in one allocation at
/// dword alignment: the common case, served with one allocation lookup per instruction.
#[inline]
fn global_fast_path<'m>(
    w: &Wave,
    ctx: &mut Ctx<'m>,
    i: &VmemInst,
    a: &Addressing,
    exec: u64,
    n: usize,
    addrs: &mut [u64; LANES],
) -> Option<&'m super::memory::Allocation> {
    if exec == 0 || !matches!(i.seg, Segment::Global | Segment::Flat) {
        return None;
    }
    let (mut lo, mut hi, mut or) = (u64::MAX, 0u64, 0u64);
    let off = i.offset as i64 as u64;
    // The addressing form is fixed per instruction: pick the lane loop once, not per lane.
    let mut lanes = |addr_of: &dyn Fn(usize) -> u64| {
        for l in 0..LANES {
            if exec >> l & 1 == 0 {
                continue;
            }
            let addr = addr_of(l).wrapping_add(off);
            addrs[l] = addr;
            lo = lo.min(addr);
            hi = hi.max(addr);
            or |= addr;
        }
    };
    let vgpr = |v: u16| w.vgpr.get(v as usize);
    match (i.saddr, i.vaddr) {
        (Some(_), Some(v)) => {
            let v = vgpr(v)?;
            lanes(&|l| a.saddr.wrapping_add(v[l] as u64))
        }
        (Some(_), None) => lanes(&|_| a.saddr),
        (None, Some(v)) => {
            let (vlo, vhi) = (vgpr(v)?, vgpr(v + 1)?);
            lanes(&|l| vlo[l] as u64 | (vhi[l] as u64) << 32)
        }
        (None, None) => lanes(&|_| 0),
    }
    if or & 3 != 0 {
        return None;
    }
    let end = hi.checked_add(4 * n as u64)?;
    if i.seg == Segment::Flat {
        let in_window = |x: u64| {
            (SHARED_APERTURE..SHARED_APERTURE + APERTURE_SIZE).contains(&x)
                || (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&x)
        };
        if in_window(lo) || in_window(hi) || (lo < SHARED_APERTURE && end > SHARED_APERTURE) {
            return None;
        }
    }
    let mem: &'m super::memory::MemoryView = ctx.mem;
    mem.span(ctx.cache, lo, end)
}

/// Appends the device byte address of every item `i` accesses in global memory (each active
/// lane's dwords, or its one sub-dword item), for the timing model's coalescer. Called before
/// [`execute`] on the same wave state; items in the LDS window or out of a buffer's range are
/// skipped, and an addressing error is left for `execute` to report.
pub fn touched_addresses(w: &Wave, i: &VmemInst, scratch_per_lane: u32, out: &mut Vec<u64>) {
    let Ok(a) = prepare(w, i) else { return };
    let (n, bytes) = match i.op {
        VmemOp::Load(s) | VmemOp::Store(s) => (s.dwords as u32, s.bytes as u32),
        VmemOp::Atomic { wide, .. } => (1, if wide { 8 } else { 4 }),
        VmemOp::CacheControl => return,
    };
    for l in 0..LANES {
        if w.exec >> l & 1 == 0 {
            continue;
        }
        for k in 0..n.max(1) {
            if let Ok(Target::Global(addr)) = locate(w, i, &a, l, k, bytes, scratch_per_lane) {
                out.push(addr);
            }
        }
    }
}

/// Executes one vector memory instruction: memory is read or written now; loaded data is handed
/// to the scoreboard.
pub fn execute(w: &mut Wave, ctx: &mut Ctx, i: &VmemInst) -> Result<(), EmuError> {
    // Code-object address, for messages (waves run at device addresses).
    let pc = w.pc.wrapping_sub(ctx.pc_base);
    let wave_index = ctx.wave_index;
    let exec = w.exec;
    let (reads, dests) = i.regs();
    let a = Addressing {
        bounds_check: ctx.bounds_check,
        ..prepare(w, i)?
    };
    if matches!(i.op, VmemOp::Load(_) | VmemOp::Store(_)) && i.seg == Segment::Buffer {
        // format variants are mapped to dword shapes; reject other formats explicitly.
        if let Some(r) = &a.rsrc {
            if i.format {
                check_format(r)?;
            }
        }
    }
    let spl = ctx.scratch_per_lane;
    let mut lds_writes = Vec::new();
    let landing = match i.op {
        VmemOp::CacheControl => Landing::None,
        VmemOp::Load(shape) => {
            let n = shape.dwords as usize;
            let bytes = shape.bytes as u32;
            let mut data = ctx.sb.buffer(n * LANES);
            let mut active = 0u64;
            let mut addrs = [0u64; LANES];
            let fast = if bytes == 4 && !i.lds {
                global_fast_path(w, ctx, i, &a, exec, n, &mut addrs)
            } else {
                None
            };
            if let Some(alloc) = &fast {
                active = exec.count_ones() as u64;
                for (k, dk) in data.chunks_exact_mut(LANES).enumerate() {
                    for l in 0..LANES {
                        if exec >> l & 1 != 0 {
                            dk[l] = alloc.word(addrs[l] - alloc.base + 4 * k as u64);
                        }
                    }
                }
            } else {
                for l in 0..LANES {
                    if exec >> l & 1 == 0 {
                        continue;
                    }
                    active += 1;
                    for k in 0..n {
                        let t = locate(w, i, &a, l, k as u32, bytes, spl)?;
                        let mem = ctx.mem;
                        let raw = read_item(ctx, wave_index, pc, t, bytes)
                            .map_err(|e| lane_fault(e, l, mem))?;
                        let v = extend(raw, &shape);
                        if i.lds {
                            let addr =
                                w.m0.wrapping_add(i.offset as u32)
                                    .wrapping_add((l * n + k) as u32 * 4);
                            ctx.lds.write_u32(wave_index, pc, addr, v)?;
                            lds_writes.push(addr / 4);
                        } else {
                            data[k * LANES + l] = v;
                        }
                    }
                }
            }
            ctx.counters.bytes_read += active * n as u64 * bytes as u64;
            if i.lds {
                Landing::None
            } else {
                Landing::Vector {
                    first: i.vdst,
                    count: n as u16,
                    agpr: i.acc,
                    mask: exec,
                    data,
                    part: shape.part,
                }
            }
        }
        VmemOp::Store(shape)
            if shape.bytes == 4 && {
                let mut addrs = [0u64; LANES];
                let fast = global_fast_path(w, ctx, i, &a, exec, shape.dwords as usize, &mut addrs);
                if let Some(alloc) = &fast {
                    let file = if i.acc { &w.agpr } else { &w.vgpr };
                    let n = shape.dwords as usize;
                    for l in 0..LANES {
                        if exec >> l & 1 == 0 {
                            continue;
                        }
                        let off = addrs[l] - alloc.base;
                        for k in 0..n {
                            alloc.set_word(off + 4 * k as u64, file[i.vdata as usize + k][l]);
                        }
                    }
                    ctx.counters.bytes_written += exec.count_ones() as u64 * 4 * n as u64;
                }
                fast.is_some()
            } =>
        {
            Landing::None
        }
        VmemOp::Store(shape) => {
            let n = shape.dwords as usize;
            let bytes = shape.bytes as u32;
            let file = if i.acc { &w.agpr } else { &w.vgpr };
            let mut active = 0u64;
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                active += 1;
                for k in 0..n {
                    let mut v = file[i.vdata as usize + k][l];
                    if shape.part == Part::Hi16 {
                        v >>= 16;
                    }
                    let t = locate(w, i, &a, l, k as u32, bytes, spl)?;
                    let mem = ctx.mem;
                    write_item(ctx, wave_index, pc, t, bytes, v)
                        .map_err(|e| lane_fault(e, l, mem))?;
                }
            }
            ctx.counters.bytes_written += active * n as u64 * bytes as u64;
            Landing::None
        }
        VmemOp::Atomic { op, wide } => {
            let size = if wide { 8 } else { 4 };
            let file = if i.acc { &w.agpr } else { &w.vgpr };
            let mut data = ctx.sb.buffer(if wide { 2 } else { 1 } * LANES);
            let mut active = 0u64;
            for l in 0..LANES {
                if exec >> l & 1 == 0 {
                    continue;
                }
                active += 1;
                let val = |r: usize| -> u64 {
                    if wide {
                        file[r][l] as u64 | (file[r + 1][l] as u64) << 32
                    } else {
                        file[r][l] as u64
                    }
                };
                let d = val(i.vdata as usize);
                let cmp = if op.has_second_operand() {
                    val(i.vdata as usize + if wide { 2 } else { 1 })
                } else {
                    0
                };
                let t = locate(w, i, &a, l, 0, size, spl)?;
                let old = match t {
                    Target::OutOfRange => 0,
                    Target::Global(addr) => {
                        if addr % size as u64 != 0 {
                            return Err(EmuError::fault(
                                addr,
                                format!("lane {l}: misaligned {size}-byte atomic at {addr:#x}"),
                            ));
                        }
                        ctx.mem
                            .atomic_rmw(ctx.cache, addr, size as u64, |old| {
                                atomic::apply(op, wide, old, d, cmp)
                            })
                            .map_err(mem_fault)?
                    }
                    Target::Lds(la) => ctx.lds.atomic(wave_index, pc, la, size, |old| {
                        atomic::apply(op, wide, old, d, cmp)
                    })?,
                };
                data[l] = old as u32;
                if wide {
                    data[LANES + l] = (old >> 32) as u32;
                }
            }
            ctx.counters.bytes_read += active * size as u64;
            ctx.counters.bytes_written += active * size as u64;
            if i.returns {
                Landing::Vector {
                    first: i.vdst,
                    count: if wide { 2 } else { 1 },
                    agpr: i.acc,
                    mask: exec,
                    data,
                    part: Part::Full,
                }
            } else {
                Landing::None
            }
        }
    };
    let _ = &reads;
    let op = InFlight {
        kind: OpKind::Vmem,
        pc,
        dests: if matches!(landing, Landing::None) {
            RegSet::EMPTY
        } else {
            dests
        },
        sources: match i.op {
            VmemOp::Store(_) | VmemOp::Atomic { .. } => {
                let mut s = RegSet::EMPTY;
                let nd = i.op.data_regs();
                if i.acc {
                    s.add_a(i.vdata as u32, nd)
                } else {
                    s.add_v(i.vdata as u32, nd)
                }
                s
            }
            _ => RegSet::EMPTY,
        },
        landing,
        lds_reads: Vec::new(),
        lds_writes,
        seq: 0,
    };
    ctx.sb.issue(op, w);
    if i.seg == Segment::Flat {
        // FLAT counts on lgkmcnt too (it may have gone to LDS); the data travels with the vm entry.
        ctx.sb.issue(
            InFlight {
                kind: OpKind::Lds,
                pc,
                dests: RegSet::EMPTY,
                sources: RegSet::EMPTY,
                landing: Landing::None,
                lds_reads: Vec::new(),
                lds_writes: Vec::new(),
                seq: 0,
            },
            w,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_parse_into_segments_and_shapes() {
        assert_eq!(
            VmemOp::from_name("global_load_dwordx4"),
            Some((Segment::Global, VmemOp::Load(dw(4))))
        );
        assert_eq!(
            VmemOp::from_name("scratch_load_short_d16_hi"),
            Some((Segment::Scratch, VmemOp::Load(sub(2, false, Part::Hi16))))
        );
        assert_eq!(
            VmemOp::from_name("buffer_atomic_cmpswap_x2"),
            Some((
                Segment::Buffer,
                VmemOp::Atomic {
                    op: AtomicOp::CmpSwap,
                    wide: true
                }
            ))
        );
        assert_eq!(
            VmemOp::from_name("flat_atomic_add_f64"),
            Some((
                Segment::Flat,
                VmemOp::Atomic {
                    op: AtomicOp::AddF,
                    wide: true
                }
            ))
        );
        assert_eq!(
            VmemOp::from_name("buffer_wbinvl1_vol"),
            Some((Segment::Buffer, VmemOp::CacheControl))
        );
        assert_eq!(VmemOp::from_name("global_load_bogus"), None);
        assert_eq!(
            VmemOp::Atomic {
                op: AtomicOp::CmpSwap,
                wide: true
            }
            .data_regs(),
            4
        );
    }

    #[test]
    fn buffer_resources_decode_and_private_segments_swizzle() {
        let r = BufferResource::from_dwords(crate::emu::dispatch::scratch_resource(0x1_2345_6700));
        assert_eq!(r.base, 0x1_2345_6700);
        assert!(r.swizzle && r.add_tid);
        assert_eq!((r.element_size, r.index_stride), (4, 64));
        assert_eq!(swizzle_private(0, 3), 12);
        assert_eq!(swizzle_private(4, 0), 256);
        assert_eq!(swizzle_private(6, 1), 256 + 4 + 2);
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::*;
    use crate::emu::lds::Lds;
    use crate::emu::memory::{AddrCache, Memory};
    use crate::emu::scoreboard::Scoreboard;
    use crate::emu::stats::Counters;
    use crate::emu::wave::WaveId;
    use kjit_backend_gcn::Target;

    fn buffer_inst(op: VmemOp, offen: bool, offset: i32) -> VmemInst {
        VmemInst {
            seg: Segment::Buffer,
            op,
            vaddr: Some(1),
            saddr: None,
            vdata: 2,
            vdst: 2,
            acc: false,
            offset,
            returns: false,
            srsrc: 4,
            soffset: 128,
            offen,
            idxen: false,
            lds: false,
            literal: 0,
            format: false,
        }
    }

    /// A raw buffer of 64 bytes over a 4 KiB allocation: lanes past 64 bytes read 0 and their
    /// stores are dropped, without faulting, although the memory behind them exists.
    #[test]
    fn raw_buffer_out_of_range_loads_zero_and_drops_stores() {
        let mem = Memory::new();
        let base = mem.alloc(4096).unwrap();
        let init: Vec<u8> = (0..1024u32).flat_map(|i| (i + 1).to_le_bytes()).collect();
        mem.write(base, &init).unwrap();
        let view = mem.view();
        let mut w = Wave::new(WaveId::default(), Target::Gfx90a, 102, 8, 0);
        w.exec = u64::MAX;
        // V#: base, stride 0, num_records 64, 32-bit format.
        w.sgpr[4] = base as u32;
        w.sgpr[5] = (base >> 32) as u32 & 0xffff;
        w.sgpr[6] = 64;
        w.sgpr[7] = 0x0002_7000;
        for l in 0..LANES {
            w.vgpr[1][l] = 4 * l as u32;
            w.vgpr[2][l] = 0xdead_0000 + l as u32;
        }
        let (mut cache, mut lds, mut sb, mut counters) = (
            AddrCache::default(),
            Lds::new(0, false),
            Scoreboard::new(false),
            Counters::default(),
        );
        let mut ctx = Ctx {
            mem: &view,
            cache: &mut cache,
            lds: &mut lds,
            sb: &mut sb,
            counters: &mut counters,
            wave_index: 0,
            scratch_per_lane: 0,
            pc_base: 0,
            bounds_check: false,
        };
        let dword = DataShape {
            bytes: 4,
            dwords: 1,
            signed: false,
            part: Part::Full,
        };
        execute(
            &mut w,
            &mut ctx,
            &buffer_inst(VmemOp::Store(dword), true, 0),
        )
        .unwrap();
        let mut back = vec![0u8; 4096];
        mem.read(base, &mut back).unwrap();
        for l in 0..LANES {
            let v = u32::from_le_bytes(back[4 * l..4 * l + 4].try_into().unwrap());
            let want = if l < 16 {
                0xdead_0000 + l as u32
            } else {
                l as u32 + 1
            };
            assert_eq!(
                v, want,
                "lane {l}: in-range stores land, out-of-range ones are dropped"
            );
        }
        execute(&mut w, &mut ctx, &buffer_inst(VmemOp::Load(dword), true, 4)).unwrap();
        ctx.sb.wait(0, 7, 15, &mut w);
        for l in 0..LANES {
            // lane l reads byte 4l + 4: in range while 4l + 8 <= 64.
            let want = if l < 15 {
                0xdead_0000 + l as u32 + 1
            } else {
                0
            };
            assert_eq!(w.vgpr[2][l], want, "lane {l}");
        }

        // Bounds-check mode: the same store is an error naming the first lane out of range
        // (lane 16, byte offset 64 of the 64-byte range), and nothing is written by it.
        ctx.bounds_check = true;
        mem.write(base, &init).unwrap();
        let e = execute(
            &mut w,
            &mut ctx,
            &buffer_inst(VmemOp::Store(dword), true, 0),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("lane 16: buffer access of 4 byte(s) at offset 0x40")
                && e.contains(&format!("buffer at {base:#x} (num_records 64, stride 0)"))
                && e.contains("bounds check"),
            "{e}"
        );
        // In range, bounds checking changes nothing.
        for l in 0..LANES {
            w.vgpr[1][l] = 4 * (l as u32 % 16);
        }
        execute(&mut w, &mut ctx, &buffer_inst(VmemOp::Load(dword), true, 0)).unwrap();
    }
}
