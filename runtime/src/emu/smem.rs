//! Scalar memory (SMEM): `s_load_dword*`, `s_buffer_load_dword*`, `s_store_dword*`,
//! `s_buffer_store_dword*`, `s_memtime`/`s_memrealtime`, and the scalar cache controls.
//!
//! Takes an [`SmemInst`] and the wave; reads (or writes) device memory at issue and hands loaded
//! dwords to the scoreboard, which lands them when `s_waitcnt lgkmcnt(0)` says they must (SMEM
//! returns out of order, so only a zero count guarantees anything). Addresses are the 64-bit base
//! in an SGPR pair plus the byte offset (immediate and/or SGPR), with the low two bits ignored as
//! the hardware does. `s_buffer_*` take a buffer resource and read 0 outside `num_records`.

use super::ctx::{mem_fault, Ctx};
use super::scoreboard::{InFlight, Landing, OpKind, RegSet};
use super::vmem::BufferResource;
use super::wave::{EmuError, SrcType, Wave};

/// The operation of an SMEM instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SmemOp {
    /// Load dwords from a 64-bit address.
    Load(u8),
    /// Load dwords through a buffer resource.
    BufferLoad(u8),
    /// Store dwords to a 64-bit address.
    Store(u8),
    /// Store dwords through a buffer resource.
    BufferStore(u8),
    /// `s_memtime` / `s_memrealtime`: a 64-bit clock.
    Time,
    /// `s_dcache_*`: no effect on coherent software memory (counts on lgkmcnt).
    CacheControl,
}

impl SmemOp {
    /// Parses a mnemonic.
    pub fn from_name(name: &str) -> Option<SmemOp> {
        let n = |s: &str| -> Option<u8> {
            Some(match s {
                "dword" => 1,
                "dwordx2" => 2,
                "dwordx4" => 4,
                "dwordx8" => 8,
                "dwordx16" => 16,
                _ => return None,
            })
        };
        if let Some(t) = name.strip_prefix("s_load_") {
            return n(t).map(SmemOp::Load);
        }
        if let Some(t) = name.strip_prefix("s_buffer_load_") {
            return n(t).map(SmemOp::BufferLoad);
        }
        if let Some(t) = name.strip_prefix("s_store_") {
            return n(t).map(SmemOp::Store);
        }
        if let Some(t) = name.strip_prefix("s_buffer_store_") {
            return n(t).map(SmemOp::BufferStore);
        }
        match name {
            "s_memtime" | "s_memrealtime" => Some(SmemOp::Time),
            "s_dcache_inv" | "s_dcache_wb" | "s_dcache_inv_vol" | "s_dcache_wb_vol" => {
                Some(SmemOp::CacheControl)
            }
            _ => None,
        }
    }
}

/// An SMEM instruction with operands resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmemInst {
    /// What it does.
    pub op: SmemOp,
    /// Data SGPR code (destination of loads, source of stores).
    pub sdata: u16,
    /// First SGPR code of the base pair or resource.
    pub sbase: u16,
    /// Immediate byte offset.
    pub offset: i32,
    /// SGPR code of an additional offset, if any.
    pub soffset: Option<u16>,
}

impl SmemInst {
    /// Registers read and written, for the scoreboard.
    pub fn regs(&self) -> (RegSet, RegSet) {
        let mut r = RegSet::EMPTY;
        let mut w = RegSet::EMPTY;
        match self.op {
            SmemOp::Load(n) => {
                r.add_s(self.sbase as u32, 2);
                w.add_s(self.sdata as u32, n as u32);
            }
            SmemOp::BufferLoad(n) => {
                r.add_s(self.sbase as u32, 4);
                w.add_s(self.sdata as u32, n as u32);
            }
            SmemOp::Store(n) => {
                r.add_s(self.sbase as u32, 2);
                r.add_s(self.sdata as u32, n as u32);
            }
            SmemOp::BufferStore(n) => {
                r.add_s(self.sbase as u32, 4);
                r.add_s(self.sdata as u32, n as u32);
            }
            SmemOp::Time => w.add_s(self.sdata as u32, 2),
            SmemOp::CacheControl => {}
        }
        if let Some(s) = self.soffset {
            if s < 128 {
                r.add_s(s as u32, 1);
            }
        }
        (r, w)
    }
}

/// The byte address and length of a scalar load or store through a base pair (for the timing
/// model's scalar cache); `None` for buffer forms and cache control.
pub fn touched_range(w: &Wave, i: &SmemInst) -> Option<(u64, u32)> {
    let soff = match i.soffset {
        Some(c) => w.read_scalar(c, 0, SrcType::B32).ok()? as i64,
        None => 0,
    };
    match i.op {
        SmemOp::Load(n) | SmemOp::Store(n) => {
            let base = w.read_scalar64(i.sbase, 0, SrcType::B64).ok()?;
            Some((
                base.wrapping_add((i.offset as i64 + soff) as u64) & !3,
                4 * n as u32,
            ))
        }
        _ => None,
    }
}

/// Executes one SMEM instruction.
pub fn execute(w: &mut Wave, ctx: &mut Ctx, i: &SmemInst) -> Result<(), EmuError> {
    // Code-object address, for messages (waves run at device addresses).
    let pc = w.pc.wrapping_sub(ctx.pc_base);
    let soff = match i.soffset {
        Some(c) => w.read_scalar(c, 0, SrcType::B32)? as i64,
        None => 0,
    };
    let offset = (i.offset as i64 + soff) as u64;
    let (_, dests) = i.regs();
    let mut landing = Landing::None;
    match i.op {
        SmemOp::Load(n) | SmemOp::Store(n) => {
            let base = w.read_scalar64(i.sbase, 0, SrcType::B64)?;
            let addr = base.wrapping_add(offset) & !3;
            if let SmemOp::Load(_) = i.op {
                let mut data = vec![0u32; n as usize];
                for (k, d) in data.iter_mut().enumerate() {
                    *d = ctx
                        .mem
                        .read_u32(ctx.cache, addr + 4 * k as u64)
                        .map_err(mem_fault)?;
                }
                ctx.counters.bytes_read += 4 * n as u64;
                check_dest(i.sdata, n)?;
                landing = Landing::Scalar {
                    first: i.sdata,
                    data,
                };
            } else {
                for k in 0..n as u16 {
                    let v = w.read_scalar(i.sdata + k, 0, SrcType::B32)?;
                    ctx.mem
                        .write_u32(ctx.cache, addr + 4 * k as u64, v)
                        .map_err(mem_fault)?;
                }
                ctx.counters.bytes_written += 4 * n as u64;
            }
        }
        SmemOp::BufferLoad(n) | SmemOp::BufferStore(n) => {
            let mut d = [0u32; 4];
            for (k, x) in d.iter_mut().enumerate() {
                *x = w.read_scalar(i.sbase + k as u16, 0, SrcType::B32)?;
            }
            let r = BufferResource::from_dwords(d);
            let off = offset & !3;
            if let SmemOp::BufferLoad(_) = i.op {
                let mut data = vec![0u32; n as usize];
                for (k, x) in data.iter_mut().enumerate() {
                    let o = off + 4 * k as u64;
                    *x = if o + 4 > r.num_records as u64 {
                        0
                    } else {
                        ctx.mem.read_u32(ctx.cache, r.base + o).map_err(mem_fault)?
                    };
                }
                ctx.counters.bytes_read += 4 * n as u64;
                check_dest(i.sdata, n)?;
                landing = Landing::Scalar {
                    first: i.sdata,
                    data,
                };
            } else {
                for k in 0..n as u16 {
                    let o = off + 4 * k as u64;
                    if o + 4 <= r.num_records as u64 {
                        let v = w.read_scalar(i.sdata + k, 0, SrcType::B32)?;
                        ctx.mem
                            .write_u32(ctx.cache, r.base + o, v)
                            .map_err(mem_fault)?;
                    }
                }
                ctx.counters.bytes_written += 4 * n as u64;
            }
        }
        SmemOp::Time => {
            // A deterministic clock (instructions this wave issued so far, scaled), so that
            // reruns of a launch give identical results.
            let t = ctx.counters.instructions() * 4;
            landing = Landing::Scalar {
                first: i.sdata,
                data: vec![t as u32, (t >> 32) as u32],
            };
        }
        SmemOp::CacheControl => {}
    }
    ctx.sb.issue(
        InFlight {
            kind: OpKind::Smem,
            pc,
            dests: if matches!(landing, Landing::None) {
                RegSet::EMPTY
            } else {
                dests
            },
            sources: RegSet::EMPTY,
            landing,
            lds_reads: Vec::new(),
            lds_writes: Vec::new(),
            seq: 0,
        },
        w,
    );
    Ok(())
}

fn check_dest(first: u16, n: u8) -> Result<(), EmuError> {
    let last = first as u32 + n as u32 - 1;
    if last > 101 && !(first == 106 && n <= 2) && !(first == 126 && n <= 2) {
        return Err(EmuError::illegal(format!(
            "scalar load destination s[{first}:{last}] is out of range"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_parse() {
        assert_eq!(SmemOp::from_name("s_load_dwordx16"), Some(SmemOp::Load(16)));
        assert_eq!(
            SmemOp::from_name("s_buffer_load_dwordx2"),
            Some(SmemOp::BufferLoad(2))
        );
        assert_eq!(SmemOp::from_name("s_store_dword"), Some(SmemOp::Store(1)));
        assert_eq!(SmemOp::from_name("s_memtime"), Some(SmemOp::Time));
        assert_eq!(SmemOp::from_name("s_load_dwordx3"), None);
    }
}
