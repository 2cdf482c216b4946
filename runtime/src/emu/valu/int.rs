//! Integer and bitwise lane math of the vector ALU: 24-bit multiplies, high multiplies, bit-field
//! extract/insert, funnel shifts, byte permute, sums of absolute differences, find-first-bit,
//! three-operand min/max/median, carry-chain adds, and the 16-bit forms. Semantics follow the
//! CDNA3 ISA pseudo-code; shift amounts use only the low 5 (32-bit) / 6 (64-bit) / 4 (16-bit) bits.

/// `v_mul_u32_u24`: low 32 bits of the product of the low 24 bits.
#[inline(always)]
pub fn mul_u24(a: u32, b: u32) -> u32 {
    (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff)
}

/// `v_mul_hi_u32_u24`: bits [47:32] of the 48-bit product.
#[inline(always)]
pub fn mul_hi_u24(a: u32, b: u32) -> u32 {
    (((a & 0xff_ffff) as u64 * (b & 0xff_ffff) as u64) >> 32) as u32
}

/// Sign-extends the low 24 bits.
#[inline(always)]
pub fn sext24(a: u32) -> i64 {
    ((a << 8) as i32 >> 8) as i64
}

/// `v_mul_i32_i24`.
#[inline(always)]
pub fn mul_i24(a: u32, b: u32) -> u32 {
    (sext24(a) * sext24(b)) as u32
}

/// `v_mul_hi_i32_i24`.
#[inline(always)]
pub fn mul_hi_i24(a: u32, b: u32) -> u32 {
    ((sext24(a) * sext24(b)) >> 32) as u32
}

/// `v_mul_hi_u32`.
#[inline(always)]
pub fn mul_hi_u32(a: u32, b: u32) -> u32 {
    ((a as u64 * b as u64) >> 32) as u32
}

/// `v_mul_hi_i32`.
#[inline(always)]
pub fn mul_hi_i32(a: u32, b: u32) -> u32 {
    ((a as i32 as i64 * b as i32 as i64) >> 32) as u32
}

/// `v_bfe_u32`: `(a >> off) & ((1 << width) - 1)` with offset and width from the low 5 bits.
#[inline(always)]
pub fn bfe_u32(a: u32, off: u32, width: u32) -> u32 {
    let (o, w) = (off & 31, width & 31);
    if w == 0 {
        0
    } else {
        (a >> o) & (u32::MAX >> (32 - w))
    }
}

/// `v_bfe_i32`: the field sign-extended. The shift is arithmetic (ISA pseudo-code:
/// `(S0.i32 >> off) & mask`, then sign extension from bit `width - 1`), so a field reaching past
/// bit 31 is filled with copies of the sign bit.
#[inline(always)]
pub fn bfe_i32(a: u32, off: u32, width: u32) -> u32 {
    let (o, w) = (off & 31, width & 31);
    if w == 0 {
        return 0;
    }
    let f = ((a as i32) >> o) as u32 & (u32::MAX >> (32 - w));
    (((f << (32 - w)) as i32) >> (32 - w)) as u32
}

/// `v_bfi_b32`: `(mask & a) | (!mask & b)`.
#[inline(always)]
pub fn bfi(mask: u32, a: u32, b: u32) -> u32 {
    (mask & a) | (!mask & b)
}

/// `v_bfm_b32`: `((1 << width) - 1) << offset` (low 5 bits of each).
#[inline(always)]
pub fn bfm(width: u32, off: u32) -> u32 {
    ((1u32 << (width & 31)).wrapping_sub(1)) << (off & 31)
}

/// `v_alignbit_b32`: `({a, b} >> (c & 31))[31:0]`.
#[inline(always)]
pub fn alignbit(a: u32, b: u32, c: u32) -> u32 {
    ((((a as u64) << 32) | b as u64) >> (c & 31)) as u32
}

/// `v_alignbyte_b32`: `({a, b} >> (8 * (c & 3)))[31:0]`.
#[inline(always)]
pub fn alignbyte(a: u32, b: u32, c: u32) -> u32 {
    ((((a as u64) << 32) | b as u64) >> (8 * (c & 3))) as u32
}

/// `v_perm_b32`: each result byte selects a byte of `{s0, s1}` (s1 is bytes 0-3), a sign
/// replication (selectors 8-11), zero (12) or 0xff (13 and above).
#[inline(always)]
pub fn perm(s0: u32, s1: u32, sel: u32) -> u32 {
    let data = ((s0 as u64) << 32) | s1 as u64;
    let byte = |s: u32| -> u32 {
        match s {
            0..=7 => ((data >> (8 * s)) & 0xff) as u32,
            8..=11 => {
                // Sign bit of byte 1, 3, 5 or 7, replicated.
                let src = 2 * (s - 8) + 1;
                if (data >> (8 * src + 7)) & 1 != 0 {
                    0xff
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xff,
        }
    };
    let mut r = 0;
    for i in 0..4 {
        r |= byte((sel >> (8 * i)) & 0xff) << (8 * i);
    }
    r
}

/// `v_sad_u8`: sum of absolute byte differences plus `c`.
#[inline(always)]
pub fn sad_u8(a: u32, b: u32, c: u32) -> u32 {
    let mut s = c;
    for i in 0..4 {
        let (x, y) = ((a >> (8 * i)) & 0xff, (b >> (8 * i)) & 0xff);
        s = s.wrapping_add(x.abs_diff(y));
    }
    s
}

/// `v_sad_hi_u8`: `(sad of the bytes) << 16` plus `c`.
#[inline(always)]
pub fn sad_hi_u8(a: u32, b: u32, c: u32) -> u32 {
    (sad_u8(a, b, 0) << 16).wrapping_add(c)
}

/// `v_sad_u16`.
#[inline(always)]
pub fn sad_u16(a: u32, b: u32, c: u32) -> u32 {
    let d0 = (a & 0xffff).abs_diff(b & 0xffff);
    let d1 = (a >> 16).abs_diff(b >> 16);
    c.wrapping_add(d0).wrapping_add(d1)
}

/// `v_sad_u32`.
#[inline(always)]
pub fn sad_u32(a: u32, b: u32, c: u32) -> u32 {
    a.abs_diff(b).wrapping_add(c)
}

/// `v_msad_u8`: as `v_sad_u8`, skipping bytes where the reference `b` is zero.
#[inline(always)]
pub fn msad_u8(a: u32, b: u32, c: u32) -> u32 {
    let mut s = c;
    for i in 0..4 {
        let (x, y) = ((a >> (8 * i)) & 0xff, (b >> (8 * i)) & 0xff);
        if y != 0 {
            s = s.wrapping_add(x.abs_diff(y));
        }
    }
    s
}

/// `v_lerp_u8`: per byte `(a + b + round_bit) >> 1`, the rounding bit being bit 0 of c's byte.
#[inline(always)]
pub fn lerp_u8(a: u32, b: u32, c: u32) -> u32 {
    let mut r = 0;
    for i in 0..4 {
        let sh = 8 * i;
        let v = (((a >> sh) & 0xff) + ((b >> sh) & 0xff) + ((c >> sh) & 1)) >> 1;
        r |= (v & 0xff) << sh;
    }
    r
}

/// `v_ffbh_u32`: leading zeros, or -1 for zero.
#[inline(always)]
pub fn ffbh_u32(a: u32) -> u32 {
    if a == 0 {
        u32::MAX
    } else {
        a.leading_zeros()
    }
}

/// `v_ffbl_b32`: trailing zeros, or -1 for zero.
#[inline(always)]
pub fn ffbl_b32(a: u32) -> u32 {
    if a == 0 {
        u32::MAX
    } else {
        a.trailing_zeros()
    }
}

/// `v_ffbh_i32`: position (counted from the sign bit, which is 0) of the first bit that differs
/// from the sign bit, i.e. the count of leading sign bits; -1 for 0 and -1.
#[inline(always)]
pub fn ffbh_i32(a: u32) -> u32 {
    let s = a as i32;
    if s == 0 || s == -1 {
        u32::MAX
    } else if s < 0 {
        (!a).leading_zeros()
    } else {
        a.leading_zeros()
    }
}

/// Median of three (`v_med3_i32`/`u32`/`i16`/`u16`).
#[inline(always)]
pub fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    a.max(b).min(a.min(b).max(c))
}

/// `{carry, sum} = a + b + cin` (`v_add_co_u32`, `v_addc_co_u32`).
#[inline(always)]
pub fn add_carry(a: u32, b: u32, cin: bool) -> (u32, bool) {
    let s = a as u64 + b as u64 + cin as u64;
    (s as u32, s >> 32 != 0)
}

/// `{borrow, diff} = a - b - bin` (`v_sub_co_u32`, `v_subb_co_u32`).
#[inline(always)]
pub fn sub_borrow(a: u32, b: u32, bin: bool) -> (u32, bool) {
    let d = (a as u64).wrapping_sub(b as u64).wrapping_sub(bin as u64);
    (d as u32, (b as u64 + bin as u64) > a as u64)
}

/// `v_mad_u64_u32`: `{carry, d} = a * b + c` with a 65-bit intermediate.
#[inline(always)]
pub fn mad_u64_u32(a: u32, b: u32, c: u64) -> (u64, bool) {
    let r = a as u128 * b as u128 + c as u128;
    (r as u64, r >> 64 != 0)
}

/// `v_mad_i64_i32`: signed; the carry-out is bit 64 of the 65-bit two's-complement sum.
#[inline(always)]
pub fn mad_i64_i32(a: u32, b: u32, c: u64) -> (u64, bool) {
    let r = a as i32 as i128 * b as i32 as i128 + c as i64 as i128;
    (r as u64, (r >> 64) & 1 != 0)
}

/// Signed saturating 32-bit add (`v_add_i32` with clamp).
#[inline(always)]
pub fn add_i32_clamp(a: u32, b: u32, clamp: bool) -> u32 {
    if clamp {
        (a as i32).saturating_add(b as i32) as u32
    } else {
        a.wrapping_add(b)
    }
}

/// Signed saturating 32-bit subtract (`v_sub_i32` with clamp).
#[inline(always)]
pub fn sub_i32_clamp(a: u32, b: u32, clamp: bool) -> u32 {
    if clamp {
        (a as i32).saturating_sub(b as i32) as u32
    } else {
        a.wrapping_sub(b)
    }
}

/// Unsigned 32-bit add with optional clamp (`v_add_u32`/`v_add_co_u32` clamp saturates).
#[inline(always)]
pub fn add_u32_clamp(a: u32, b: u32, clamp: bool) -> u32 {
    if clamp {
        a.saturating_add(b)
    } else {
        a.wrapping_add(b)
    }
}

/// Unsigned 32-bit subtract with optional clamp (saturates at 0).
#[inline(always)]
pub fn sub_u32_clamp(a: u32, b: u32, clamp: bool) -> u32 {
    if clamp {
        a.saturating_sub(b)
    } else {
        a.wrapping_sub(b)
    }
}

/// `v_mbcnt_lo_u32_b32` for lane `l`: bits of `mask` below lane `l` among lanes 0-31, plus `acc`.
#[inline(always)]
pub fn mbcnt_lo(mask: u32, acc: u32, l: usize) -> u32 {
    let below = if l >= 32 { u32::MAX } else { (1u32 << l) - 1 };
    acc.wrapping_add((mask & below).count_ones())
}

/// `v_mbcnt_hi_u32_b32` for lane `l`: bits of `mask` below lane `l` among lanes 32-63, plus `acc`.
#[inline(always)]
pub fn mbcnt_hi(mask: u32, acc: u32, l: usize) -> u32 {
    let below = if l < 32 {
        0
    } else {
        ((1u64 << (l - 32)) - 1) as u32
    };
    acc.wrapping_add((mask & below).count_ones())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_and_funnel_shifts() {
        assert_eq!(bfe_u32(0xabcd_1234, 8, 8), 0x12);
        assert_eq!(bfe_i32(0x0000_8000, 12, 4), 0xffff_fff8);
        assert_eq!(bfe_i32(0xd33a_8169, 31, 7), u32::MAX); // field past bit 31: sign copies
        assert_eq!(bfe_u32(0xffff_ffff, 0, 0), 0);
        assert_eq!(bfe_u32(0xffff_ffff, 4, 31), 0x0fff_ffff);
        assert_eq!(bfi(0xff00, 0x1234, 0xabcd), 0x12cd);
        assert_eq!(bfm(4, 8), 0xf00);
        assert_eq!(bfm(32, 0), 0); // width uses 5 bits: 32 -> 0
        assert_eq!(alignbit(0x1, 0x8000_0000, 31), 0x3);
        assert_eq!(alignbyte(0x1122_3344, 0x5566_7788, 1), 0x4455_6677);
    }

    #[test]
    fn byte_permute_selectors() {
        let (s0, s1) = (0x8877_6655u32, 0x4433_2211u32);
        assert_eq!(perm(s0, s1, 0x0706_0504), s0);
        assert_eq!(perm(s0, s1, 0x0302_0100), s1);
        assert_eq!(perm(s0, s1, 0x0c0c_0c0c), 0);
        assert_eq!(perm(s0, s1, 0x0d0e_0f10), 0xffff_ffff);
        // 11 replicates bit 7 of byte 7 (0x88: set); 8 replicates byte 1 (0x22: clear).
        assert_eq!(perm(s0, s1, 0x0b08_0b08), 0xff00_ff00);
    }

    #[test]
    fn multiplies_and_carries() {
        assert_eq!(mul_u24(0xff00_0002, 3), 6);
        assert_eq!(mul_i24(0x00ff_ffff, 5), (-5i32) as u32);
        assert_eq!(mul_hi_u24(0xff_ffff, 0xff_ffff), 0xffff);
        assert_eq!(mul_hi_i24(0x80_0000, 0x80_0000), 0x4000); // (-2^23)^2 = 2^46
        assert_eq!(mul_hi_i32(u32::MAX, u32::MAX), 0);
        assert_eq!(mul_hi_u32(u32::MAX, u32::MAX), 0xffff_fffe);
        assert_eq!(add_carry(u32::MAX, 0, true), (0, true));
        assert_eq!(sub_borrow(0, 0, true), (u32::MAX, true));
        assert_eq!(sub_borrow(5, 3, true), (1, false));
        assert_eq!(
            mad_u64_u32(u32::MAX, u32::MAX, u64::MAX),
            (0xffff_fffe_0000_0000, true)
        );
        assert_eq!(mad_i64_i32((-1i32) as u32, 1, 1), (0, false)); // bit 64 of the 65-bit result
        assert_eq!(mad_i64_i32((-1i32) as u32, 1, 0), (u64::MAX, true));
        assert_eq!(mad_i64_i32(2, 3, 4), (10, false));
        assert_eq!(add_i32_clamp(i32::MAX as u32, 1, true), i32::MAX as u32);
        assert_eq!(sub_u32_clamp(1, 2, true), 0);
    }

    #[test]
    fn counting_and_sad() {
        assert_eq!(ffbh_u32(0), u32::MAX);
        assert_eq!(ffbh_u32(1), 31);
        assert_eq!(ffbl_b32(0x100), 8);
        assert_eq!(ffbh_i32(0xffff_fff0), 28);
        assert_eq!(ffbh_i32(0x0000_ffff), 16);
        assert_eq!(sad_u8(0x0102_0304, 0x0403_0201, 10), 10 + 3 + 1 + 1 + 3);
        assert_eq!(msad_u8(0x0102_0304, 0x0400_0201, 0), 3 + 1 + 3);
        assert_eq!(sad_hi_u8(0x0000_0010, 0, 1), (16 << 16) + 1);
        assert_eq!(lerp_u8(0x0000_0003, 0x0000_0004, 0x1), 4);
        assert_eq!(med3(5, 1, 3), 3);
        assert_eq!(med3(1u32, 1, 0), 1);
        assert_eq!(mbcnt_lo(0xffff_ffff, 0, 5), 5);
        assert_eq!(mbcnt_lo(0xffff_ffff, 0, 40), 32);
        assert_eq!(mbcnt_hi(0xffff_ffff, 32, 40), 40);
        assert_eq!(mbcnt_hi(0xffff_ffff, 7, 3), 7);
    }
}
