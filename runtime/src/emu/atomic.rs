//! The read-modify-write of one lane's atomic, shared by LDS atomics (`ds.rs`) and device-memory
//! atomics (`vmem.rs`): takes the operation, the old value and the operands, gives the new value.

/// An atomic operation. 32-bit or 64-bit is a separate `wide` flag; the float forms read
/// f32 or f64 by it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AtomicOp {
    Add,
    Sub,
    /// `mem = data - mem`.
    Rsub,
    /// `mem = mem >= data ? 0 : mem + 1`.
    Inc,
    /// `mem = mem == 0 || mem > data ? data : mem - 1`.
    Dec,
    MinI,
    MaxI,
    MinU,
    MaxU,
    And,
    Or,
    Xor,
    /// `mem = (mem & !mask) | data`.
    Mskor,
    /// `mem = mem == cmp ? data : mem` (`ds_cmpst`, `*_atomic_cmpswap`).
    CmpSwap,
    /// [`AtomicOp::CmpSwap`] comparing floats.
    CmpSwapF,
    MinF,
    MaxF,
    AddF,
    /// `mem = data` (`ds_wrxchg`, `*_atomic_swap`).
    Swap,
    PkAddF16,
    PkAddBf16,
}

impl AtomicOp {
    /// Whether the instruction carries a second operand (the compare value or the mask).
    pub fn has_second_operand(self) -> bool {
        matches!(
            self,
            AtomicOp::Mskor | AtomicOp::CmpSwap | AtomicOp::CmpSwapF
        )
    }
}

/// The new memory value from the `old` one: `data` is the value the operation stores or
/// combines, `second` the compare value or mask of the ops that have one (else ignored).
pub fn apply(op: AtomicOp, wide: bool, old: u64, data: u64, second: u64) -> u64 {
    let mask = if wide { u64::MAX } else { 0xffff_ffff };
    let signed = |v: u64| {
        if wide {
            v as i64
        } else {
            v as u32 as i32 as i64
        }
    };
    let float = |v: u64| {
        if wide {
            f64::from_bits(v)
        } else {
            f32::from_bits(v as u32) as f64
        }
    };
    let unfloat = |f: f64| {
        if wide {
            f.to_bits()
        } else {
            (f as f32).to_bits() as u64
        }
    };
    let r = match op {
        AtomicOp::Add => old.wrapping_add(data),
        AtomicOp::Sub => old.wrapping_sub(data),
        AtomicOp::Rsub => data.wrapping_sub(old),
        AtomicOp::Inc => {
            if old & mask >= data & mask {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old & mask == 0 || old & mask > data & mask {
                data
            } else {
                old - 1
            }
        }
        AtomicOp::MinI if signed(data) < signed(old) => data,
        AtomicOp::MaxI if signed(data) > signed(old) => data,
        AtomicOp::MinI | AtomicOp::MaxI => old,
        AtomicOp::MinU => (old & mask).min(data & mask),
        AtomicOp::MaxU => (old & mask).max(data & mask),
        AtomicOp::And => old & data,
        AtomicOp::Or => old | data,
        AtomicOp::Xor => old ^ data,
        AtomicOp::Mskor => (old & !second) | data,
        AtomicOp::CmpSwap if old & mask == second & mask => data,
        AtomicOp::CmpSwapF if float(old) == float(second) => data,
        AtomicOp::CmpSwap | AtomicOp::CmpSwapF => old,
        AtomicOp::MinF => unfloat(float(old).min(float(data))),
        AtomicOp::MaxF => unfloat(float(old).max(float(data))),
        // One rounding in the operand width (an f32 sum formed in f64 would round twice).
        AtomicOp::AddF if wide => (f64::from_bits(old) + f64::from_bits(data)).to_bits(),
        AtomicOp::AddF => {
            (f32::from_bits(old as u32) + f32::from_bits(data as u32)).to_bits() as u64
        }
        AtomicOp::Swap => data,
        AtomicOp::PkAddF16 => packed(old, data, |a, b| {
            half::f16::from_f32(half::f16::from_bits(a).to_f32() + half::f16::from_bits(b).to_f32())
                .to_bits()
        }),
        AtomicOp::PkAddBf16 => packed(old, data, |a, b| {
            half::bf16::from_f32(
                half::bf16::from_bits(a).to_f32() + half::bf16::from_bits(b).to_f32(),
            )
            .to_bits()
        }),
    };
    r & mask
}

/// Applies `f` to the two 16-bit halves.
fn packed(old: u64, data: u64, f: impl Fn(u16, u16) -> u16) -> u64 {
    let lo = f(old as u16, data as u16);
    let hi = f((old >> 16) as u16, (data >> 16) as u16);
    lo as u64 | (hi as u64) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomics_compute_hardware_results() {
        assert_eq!(apply(AtomicOp::Inc, false, 5, 5, 0), 0);
        assert_eq!(apply(AtomicOp::Inc, false, 4, 5, 0), 5);
        assert_eq!(apply(AtomicOp::Dec, false, 0, 7, 0), 7);
        assert_eq!(apply(AtomicOp::Dec, false, 9, 7, 0), 7);
        assert_eq!(apply(AtomicOp::Dec, false, 3, 7, 0), 2);
        assert_eq!(apply(AtomicOp::MinI, false, 5, 0xffff_ffff, 0), 0xffff_ffff);
        assert_eq!(apply(AtomicOp::MaxI, false, 5, 0xffff_ffff, 0), 5);
        assert_eq!(apply(AtomicOp::MinU, false, 5, 0xffff_ffff, 0), 5);
        assert_eq!(apply(AtomicOp::Rsub, false, 3, 10, 0), 7);
        assert_eq!(apply(AtomicOp::Mskor, false, 0xff, 0x100, 0x0f), 0x1f0);
        assert_eq!(apply(AtomicOp::CmpSwap, false, 5, 9, 5), 9);
        assert_eq!(apply(AtomicOp::CmpSwap, false, 5, 9, 4), 5);
        assert_eq!(apply(AtomicOp::CmpSwap, true, 1 << 40, 9, 1 << 40), 9);
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(apply(AtomicOp::AddF, false, f(1.5), f(2.25), 0), f(3.75));
        assert_eq!(apply(AtomicOp::MaxF, false, f(1.0), f(2.0), 0), f(2.0));
        assert_eq!(
            apply(AtomicOp::CmpSwapF, false, f(-0.0), f(3.0), f(0.0)),
            f(3.0)
        );
        let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
        assert_eq!(
            apply(
                AtomicOp::PkAddF16,
                false,
                h(1.0) | h(2.0) << 16,
                h(0.5) | h(0.25) << 16,
                0
            ),
            h(1.5) | h(2.25) << 16
        );
    }
}
