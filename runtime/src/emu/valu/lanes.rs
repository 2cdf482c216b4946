//! Cross-lane operand forms: DPP (data-parallel primitives: `quad_perm`, `row_shl/shr/ror`,
//! `wave_shl/rol/shr/ror`, `row_mirror`, `row_half_mirror`, `row_bcast:15/31`, gfx90a's
//! `row_newbcast`, with row/bank write masks and `bound_ctrl`) and SDWA (sub-dword selects of the
//! sources and the destination).
//!
//! DPP reads src0 of lane `l` from lane `src(l)`. A source lane that is out of range, or whose EXEC
//! bit is 0, is invalid: with `bound_ctrl` the lane reads 0, without it the lane is not written.
//! `row_mask` bit r enables rows (16 lanes) r; `bank_mask` bit b enables lanes with `(l >> 2) & 3
//! == b` in every row. Disabled lanes keep their destination value.

/// The lane DPP control `ctrl` (9-bit `dpp_ctrl` field) makes lane `l` read, or `None` when the
/// source is out of range. `Err` for encodings that are reserved on gfx9.
#[inline]
pub fn dpp_source(ctrl: u16, l: usize) -> Result<Option<usize>, String> {
    let row = l & !15;
    let r = (l & 15) as i32;
    let inrow = |x: i32| {
        if (0..16).contains(&x) {
            Some(row + x as usize)
        } else {
            None
        }
    };
    Ok(match ctrl {
        0x000..=0x0ff => Some((l & !3) + ((ctrl as usize >> (2 * (l & 3))) & 3)),
        0x101..=0x10f => inrow(r + (ctrl - 0x100) as i32),
        0x111..=0x11f => inrow(r - (ctrl - 0x110) as i32),
        0x121..=0x12f => Some(row + ((r - (ctrl - 0x120) as i32).rem_euclid(16)) as usize),
        0x130 => (l + 1 < 64).then_some(l + 1), // wave_shl:1
        0x134 => Some((l + 1) % 64),            // wave_rol:1
        0x138 => l.checked_sub(1),              // wave_shr:1
        0x13c => Some((l + 63) % 64),           // wave_ror:1
        0x140 => Some(row + 15 - (l & 15)),     // row_mirror
        0x141 => Some((l & !7) + 7 - (l & 7)),  // row_half_mirror
        0x142 => {
            // row_bcast:15: lane 15 of the previous row feeds the whole row.
            if row == 0 {
                None
            } else {
                Some(row - 1)
            }
        }
        0x143 => {
            // row_bcast:31: lane 31 feeds rows 2 and 3.
            if row >= 32 {
                Some(31)
            } else {
                None
            }
        }
        0x150..=0x15f => Some(row + (ctrl - 0x150) as usize), // row_newbcast (gfx90a+)
        _ => return Err(format!("DPP control {ctrl:#x} is reserved on gfx9")),
    })
}

/// The DPP source lane of every lane, for one control value (computed once per instruction).
pub fn dpp_map(ctrl: u16) -> Result<[Option<u8>; 64], String> {
    let mut m = [None; 64];
    for (l, e) in m.iter_mut().enumerate() {
        *e = dpp_source(ctrl, l)?.map(|s| s as u8);
    }
    Ok(m)
}

/// Lanes a DPP instruction may write: EXEC, narrowed by the row and bank masks.
#[inline]
pub fn dpp_write_mask(exec: u64, row_mask: u8, bank_mask: u8) -> u64 {
    let mut rows = 0u64;
    for r in 0..4 {
        if row_mask >> r & 1 != 0 {
            rows |= 0xffff << (16 * r);
        }
    }
    let mut banks_in_row = 0u64;
    for b in 0..4 {
        if bank_mask >> b & 1 != 0 {
            banks_in_row |= 0xf << (4 * b);
        }
    }
    let banks = banks_in_row * 0x0001_0001_0001_0001;
    exec & rows & banks
}

/// Gathers the DPP view of `src` (32-bit lanes, or 64-bit for gfx90a's DP-ALU DPP) and narrows
/// `write` to the lanes whose source is valid (unless `bound_ctrl`, which reads 0 instead).
pub fn dpp_gather<T: Copy + Default>(
    src: &[T; 64],
    map: &[Option<u8>; 64],
    exec: u64,
    bound_ctrl: bool,
    write: &mut u64,
    out: &mut [T; 64],
) {
    for l in 0..64 {
        match map[l] {
            Some(s) if exec >> s & 1 != 0 => out[l] = src[s as usize],
            _ => {
                out[l] = T::default();
                if !bound_ctrl {
                    *write &= !(1u64 << l);
                }
            }
        }
    }
}

/// An SDWA operand select: which part of the 32-bit register an operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdwaSel {
    /// Bits [7:0].
    Byte0,
    /// Bits [15:8].
    Byte1,
    /// Bits [23:16].
    Byte2,
    /// Bits [31:24].
    Byte3,
    /// Bits [15:0].
    Word0,
    /// Bits [31:16].
    Word1,
    /// All 32 bits.
    Dword,
}

impl SdwaSel {
    /// From the 3-bit encoding (0-6).
    pub fn from_bits(v: u8) -> Option<SdwaSel> {
        use SdwaSel::*;
        [Byte0, Byte1, Byte2, Byte3, Word0, Word1, Dword]
            .get(v as usize)
            .copied()
    }

    /// (bit offset, width) of the selected part.
    #[inline(always)]
    pub fn field(self) -> (u32, u32) {
        match self {
            SdwaSel::Byte0 => (0, 8),
            SdwaSel::Byte1 => (8, 8),
            SdwaSel::Byte2 => (16, 8),
            SdwaSel::Byte3 => (24, 8),
            SdwaSel::Word0 => (0, 16),
            SdwaSel::Word1 => (16, 16),
            SdwaSel::Dword => (0, 32),
        }
    }

    /// Extracts the selected part into the low bits, zero- or sign-extended.
    #[inline(always)]
    pub fn extract(self, v: u32, sext: bool) -> u32 {
        let (off, w) = self.field();
        if w == 32 {
            return v;
        }
        let f = (v >> off) & ((1 << w) - 1);
        if sext {
            (((f << (32 - w)) as i32) >> (32 - w)) as u32
        } else {
            f
        }
    }
}

/// What SDWA does with the destination bits outside `dst_sel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdwaUnused {
    /// Fill with zeros.
    Pad,
    /// Sign-extend the written field into the upper bits (lower bits are zero).
    Sext,
    /// Keep the old destination bits.
    Preserve,
}

impl SdwaUnused {
    /// From the 2-bit encoding.
    pub fn from_bits(v: u8) -> Option<SdwaUnused> {
        [SdwaUnused::Pad, SdwaUnused::Sext, SdwaUnused::Preserve]
            .get(v as usize)
            .copied()
    }
}

/// Places the low bits of `result` into the `sel` part of the destination (`old` is the previous
/// destination value).
#[inline(always)]
pub fn sdwa_insert(result: u32, old: u32, sel: SdwaSel, unused: SdwaUnused) -> u32 {
    let (off, w) = sel.field();
    if w == 32 {
        return result;
    }
    let mask = ((1u32 << w) - 1) << off;
    let field = (result << off) & mask;
    match unused {
        SdwaUnused::Pad => field,
        SdwaUnused::Preserve => (old & !mask) | field,
        SdwaUnused::Sext => {
            let top = off + w;
            let neg = (result >> (w - 1)) & 1 != 0;
            let high = if neg && top < 32 { u32::MAX << top } else { 0 };
            field | high
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(ctrl: u16, l: usize) -> Option<usize> {
        dpp_source(ctrl, l).unwrap()
    }

    #[test]
    fn dpp_maps_follow_the_documented_patterns() {
        // quad_perm:[1,0,3,2] = 0b10_11_00_01 = 0xb1
        assert_eq!(src(0xb1, 4), Some(5));
        assert_eq!(src(0xb1, 7), Some(6));
        assert_eq!(src(0xe4, 33), Some(33)); // identity
        assert_eq!(src(0x101, 14), Some(15)); // row_shl:1
        assert_eq!(src(0x101, 15), None);
        assert_eq!(src(0x111, 16), None); // row_shr:1 at a row start
        assert_eq!(src(0x111, 17), Some(16));
        assert_eq!(src(0x121, 16), Some(31)); // row_ror:1 wraps within the row
        assert_eq!(src(0x130, 63), None);
        assert_eq!(src(0x134, 63), Some(0));
        assert_eq!(src(0x138, 0), None);
        assert_eq!(src(0x13c, 0), Some(63));
        assert_eq!(src(0x140, 17), Some(30));
        assert_eq!(src(0x141, 9), Some(14));
        assert_eq!(src(0x142, 40), Some(31));
        assert_eq!(src(0x142, 3), None);
        assert_eq!(src(0x143, 50), Some(31));
        assert_eq!(src(0x153, 40), Some(35));
        assert!(dpp_source(0x131, 0).is_err());
        assert!(dpp_source(0x110, 0).is_err());
    }

    #[test]
    fn row_bank_masks_and_bound_ctrl() {
        assert_eq!(dpp_write_mask(u64::MAX, 0xa, 0xf), 0xffff_0000_ffff_0000);
        assert_eq!(dpp_write_mask(u64::MAX, 0xf, 0x1), 0x000f_000f_000f_000f);
        let v: [u32; 64] = std::array::from_fn(|l| l as u32 + 100);
        let map = dpp_map(0x111).unwrap(); // row_shr:1
        let mut out = [0; 64];
        let mut w = u64::MAX;
        dpp_gather(&v, &map, u64::MAX, false, &mut w, &mut out);
        assert_eq!(w & 0x0001_0001_0001_0001, 0, "row starts are not written");
        assert_eq!(out[17], 116);
        let mut w = u64::MAX;
        dpp_gather(&v, &map, !(1 << 20), true, &mut w, &mut out);
        assert_eq!(w, u64::MAX);
        assert_eq!(
            out[21], 0,
            "a source lane outside EXEC reads 0 with bound_ctrl"
        );
        assert_eq!(out[16], 0);
    }

    #[test]
    fn sdwa_selects_and_inserts() {
        assert_eq!(SdwaSel::Byte2.extract(0x1280_3456, true), 0xffff_ff80);
        assert_eq!(SdwaSel::Word1.extract(0x8001_0000, false), 0x8001);
        assert_eq!(
            sdwa_insert(
                0x1234_56ff,
                0xaaaa_aaaa,
                SdwaSel::Byte1,
                SdwaUnused::Preserve
            ),
            0xaaaa_ffaa
        );
        assert_eq!(
            sdwa_insert(0xff, 0xaaaa_aaaa, SdwaSel::Byte1, SdwaUnused::Pad),
            0x0000_ff00
        );
        assert_eq!(
            sdwa_insert(0x80, 0, SdwaSel::Byte1, SdwaUnused::Sext),
            0xffff_8000
        );
        assert_eq!(
            sdwa_insert(0x7fff, 0, SdwaSel::Word1, SdwaUnused::Sext),
            0x7fff_0000
        );
        assert_eq!(sdwa_insert(5, 9, SdwaSel::Dword, SdwaUnused::Pad), 5);
    }
}
