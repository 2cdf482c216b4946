//! The matrix (MFMA) operations of the IR: their shapes, operand types and the lane ↔ element
//! layouts of their fragments, as AMD's Matrix Instruction Calculator gives them for CDNA2/CDNA3
//! (`docs/mfma.md` has the tables). The interpreter computes with these layouts; the backend
//! selects one `v_mfma_*` per operation, whose layouts the software device implements on its own.

use crate::types::{FragElem, FragType, Type};
use std::fmt;

/// One MFMA operation: `D = A·B + C` on one `m×k` block of A and one `k×n` block of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MfmaOp {
    /// `v_mfma_f32_32x32x8_f16`: f16 inputs (4 per lane), 16 f32 accumulators per lane.
    F32_32x32x8F16,
    /// `v_mfma_f32_16x16x16_f16`: f16 inputs (4 per lane), 4 f32 accumulators per lane.
    F32_16x16x16F16,
    /// `v_mfma_f32_32x32x8_bf16` (gfx90a: `..._bf16_1k`): bf16 inputs, 16 f32 accumulators.
    F32_32x32x8Bf16,
    /// `v_mfma_f32_16x16x16_bf16` (gfx90a: `..._bf16_1k`): bf16 inputs, 4 f32 accumulators.
    F32_16x16x16Bf16,
    /// `v_mfma_f32_32x32x2_f32`: one f32 input per lane, 16 f32 accumulators.
    F32_32x32x2F32,
    /// `v_mfma_f32_16x16x4_f32`: one f32 input per lane, 4 f32 accumulators.
    F32_16x16x4F32,
    /// `v_mfma_f64_16x16x4_f64`: one f64 input per lane, 4 f64 accumulators.
    F64_16x16x4F64,
}

/// Every MFMA operation, in a fixed order.
pub const MFMA_OPS: [MfmaOp; 7] = [
    MfmaOp::F32_32x32x8F16,
    MfmaOp::F32_16x16x16F16,
    MfmaOp::F32_32x32x8Bf16,
    MfmaOp::F32_16x16x16Bf16,
    MfmaOp::F32_32x32x2F32,
    MfmaOp::F32_16x16x4F32,
    MfmaOp::F64_16x16x4F64,
];

impl MfmaOp {
    /// `(m, n, k)`: rows of A and D, columns of B and D, reduction depth.
    pub fn dims(self) -> (u32, u32, u32) {
        match self {
            MfmaOp::F32_32x32x8F16 | MfmaOp::F32_32x32x8Bf16 => (32, 32, 8),
            MfmaOp::F32_16x16x16F16 | MfmaOp::F32_16x16x16Bf16 => (16, 16, 16),
            MfmaOp::F32_32x32x2F32 => (32, 32, 2),
            MfmaOp::F32_16x16x4F32 | MfmaOp::F64_16x16x4F64 => (16, 16, 4),
        }
    }

    /// Element type of A and B.
    pub fn input_elem(self) -> FragElem {
        match self {
            MfmaOp::F32_32x32x8F16 | MfmaOp::F32_16x16x16F16 => FragElem::F16,
            MfmaOp::F32_32x32x8Bf16 | MfmaOp::F32_16x16x16Bf16 => FragElem::Bf16,
            MfmaOp::F32_32x32x2F32 | MfmaOp::F32_16x16x4F32 => FragElem::F32,
            MfmaOp::F64_16x16x4F64 => FragElem::F64,
        }
    }

    /// Element type of C and D.
    pub fn acc_elem(self) -> FragElem {
        match self {
            MfmaOp::F64_16x16x4F64 => FragElem::F64,
            _ => FragElem::F32,
        }
    }

    /// The fragment of A (and of B) one lane holds: `k·m/64` consecutive k-values of one row.
    pub fn input_frag(self) -> FragType {
        let (m, _, k) = self.dims();
        FragType::new(self.input_elem(), (k * m / 64) as u8)
    }

    /// The accumulator fragment one lane holds: `m·n/64` elements.
    pub fn acc_frag(self) -> FragType {
        let (m, n, _) = self.dims();
        FragType::new(self.acc_elem(), (m * n / 64) as u8)
    }

    /// The IR type of the A and B operands: the input fragment, or the plain scalar when a lane
    /// holds one element (`f32`, `f64`).
    pub fn input_type(self) -> Type {
        let f = self.input_frag();
        if f.len == 1 {
            f.elem.carrier()
        } else {
            Type::Frag(f)
        }
    }

    /// The IR type of C and D.
    pub fn acc_type(self) -> Type {
        Type::Frag(self.acc_frag())
    }

    /// The LLVM mnemonic on gfx942 (gfx90a spells the bf16 forms `..._bf16_1k` and drops the
    /// separators: `v_mfma_f32_32x32x8bf16_1k`).
    pub fn mnemonic(self) -> &'static str {
        match self {
            MfmaOp::F32_32x32x8F16 => "v_mfma_f32_32x32x8_f16",
            MfmaOp::F32_16x16x16F16 => "v_mfma_f32_16x16x16_f16",
            MfmaOp::F32_32x32x8Bf16 => "v_mfma_f32_32x32x8_bf16",
            MfmaOp::F32_16x16x16Bf16 => "v_mfma_f32_16x16x16_bf16",
            MfmaOp::F32_32x32x2F32 => "v_mfma_f32_32x32x2_f32",
            MfmaOp::F32_16x16x4F32 => "v_mfma_f32_16x16x4_f32",
            MfmaOp::F64_16x16x4F64 => "v_mfma_f64_16x16x4_f64",
        }
    }

    /// Name in the IR text form (`mfma.f32_32x32x8_f16`).
    pub fn name(self) -> &'static str {
        &self.mnemonic()["v_mfma_".len()..]
    }

    /// Parses [`MfmaOp::name`].
    pub fn parse(s: &str) -> Option<MfmaOp> {
        MFMA_OPS.into_iter().find(|o| o.name() == s)
    }

    /// (lane, item) of the input fragment holding `A[i][k]` (and `B[k][i]`, reading `i` as the
    /// column): lane `i + m·(k / kl)`, item `k % kl`, with `kl` k-values per lane.
    pub fn input_pos(self, i: u32, k: u32) -> (u32, u32) {
        let (m, _, _) = self.dims();
        let kl = self.input_frag().len as u32;
        (i + m * (k / kl), k % kl)
    }

    /// (lane, item) of the accumulator fragment holding `D[i][j]`. f32: rows in groups of four,
    /// item `4·(i/4 / g) + i%4` of lane `j + n·(i/4 % g)` with `g = 64/n` row groups side by side
    /// across the lanes; f64 (16×16): item `i/4` of lane `j + 16·(i%4)`.
    pub fn acc_pos(self, i: u32, j: u32) -> (u32, u32) {
        let (_, n, _) = self.dims();
        if self.acc_elem() == FragElem::F64 {
            return (j + n * (i % 4), i / 4);
        }
        let g = 64 / n;
        (j + n * ((i / 4) % g), 4 * ((i / 4) / g) + i % 4)
    }
}

impl fmt::Display for MfmaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The value of element bits `raw` of `elem` as f64 (exact).
pub fn elem_value(elem: FragElem, raw: u64) -> f64 {
    match elem {
        FragElem::F16 => half::f16::from_bits(raw as u16).to_f64(),
        FragElem::Bf16 => f32::from_bits((raw as u32) << 16) as f64,
        FragElem::F32 => f32::from_bits(raw as u32) as f64,
        FragElem::F64 => f64::from_bits(raw),
    }
}

/// Reads element `e` of a fragment held as little-endian dwords.
pub fn frag_get(f: FragType, dwords: &[u32], e: u32) -> u64 {
    let bytes = f.elem.bytes();
    match bytes {
        2 => ((dwords[(e / 2) as usize] >> (16 * (e % 2))) & 0xffff) as u64,
        4 => dwords[e as usize] as u64,
        _ => dwords[2 * e as usize] as u64 | (dwords[2 * e as usize + 1] as u64) << 32,
    }
}

/// Writes element `e` of a fragment held as little-endian dwords.
pub fn frag_set(f: FragType, dwords: &mut [u32], e: u32, bits: u64) {
    match f.elem.bytes() {
        2 => {
            let w = &mut dwords[(e / 2) as usize];
            let sh = 16 * (e % 2);
            *w = (*w & !(0xffff << sh)) | ((bits as u32 & 0xffff) << sh);
        }
        4 => dwords[e as usize] = bits as u32,
        _ => {
            dwords[2 * e as usize] = bits as u32;
            dwords[2 * e as usize + 1] = (bits >> 32) as u32;
        }
    }
}

/// Executes `op` for a whole wave. `a`, `b`, `c` hold each lane's operand dwords (`[lane][dword]`,
/// an input given as a scalar is its bits in the low dwords); gives D the same way.
///
/// Arithmetic: each output is accumulated in f64 from C in k order by fused multiply-adds and
/// rounded once to the accumulator type (for f16/bf16/f32 inputs the products are exact in f64;
/// f64 inputs round at each step). The software device computes the same, so results compare
/// bit for bit; the hardware's internal order is not documented.
pub fn execute(op: MfmaOp, a: &[Vec<u32>], b: &[Vec<u32>], c: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let (m, n, k) = op.dims();
    let inf = op.input_frag();
    let acc = op.acc_frag();
    let mut d: Vec<Vec<u32>> = c.to_vec();
    for i in 0..m {
        let arow: Vec<f64> = (0..k)
            .map(|kk| {
                let (l, it) = op.input_pos(i, kk);
                elem_value(inf.elem, frag_get(inf, &a[l as usize], it))
            })
            .collect();
        for j in 0..n {
            let (l, it) = op.acc_pos(i, j);
            let mut s = elem_value(acc.elem, frag_get(acc, &c[l as usize], it));
            for (kk, av) in arow.iter().enumerate() {
                let (bl, bi) = op.input_pos(j, kk as u32);
                s = av.mul_add(elem_value(inf.elem, frag_get(inf, &b[bl as usize], bi)), s);
            }
            let bits = match acc.elem {
                FragElem::F64 => s.to_bits(),
                _ => (s as f32).to_bits() as u64,
            };
            frag_set(acc, &mut d[l as usize], it, bits);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_bijections() {
        for op in MFMA_OPS {
            let (m, n, k) = op.dims();
            let mut seen = std::collections::HashSet::new();
            for i in 0..m {
                for j in 0..n {
                    let (l, it) = op.acc_pos(i, j);
                    assert!(l < 64 && it < op.acc_frag().len as u32, "{op}");
                    assert!(seen.insert((l, it)), "{op}: D[{i}][{j}] collides");
                }
            }
            let mut seen = std::collections::HashSet::new();
            for i in 0..m {
                for kk in 0..k {
                    let (l, it) = op.input_pos(i, kk);
                    assert!(l < 64 && it < op.input_frag().len as u32, "{op}");
                    assert!(seen.insert((l, it)), "{op}: A[{i}][{kk}] collides");
                }
            }
            assert_eq!(seen.len(), 64 * op.input_frag().len as usize, "{op}");
        }
    }

    #[test]
    fn layouts_match_the_calculator_rows() {
        // Rows of AMD's calculator (CDNA3, `--matrix-layout`): lane 16 of v_mfma_f32_16x16x16_f16
        // holds D[4..8][0]; lane 16 of v_mfma_f64_16x16x4_f64 holds D[1][0], D[5][0], D[9][0],
        // D[13][0]; lane 0 of v_mfma_f32_32x32x2_f32 holds D[0..4][0] then D[8..12][0].
        assert_eq!(MfmaOp::F32_16x16x16F16.acc_pos(5, 0), (16, 1));
        assert_eq!(MfmaOp::F64_16x16x4F64.acc_pos(9, 0), (16, 2));
        assert_eq!(MfmaOp::F32_32x32x2F32.acc_pos(9, 0), (0, 5));
        // A[0][4] of 16x16x16 f16 is item 0 of lane 16; A[0][1] of f64 16x16x4 is lane 16.
        assert_eq!(MfmaOp::F32_16x16x16F16.input_pos(0, 4), (16, 0));
        assert_eq!(MfmaOp::F64_16x16x4F64.input_pos(0, 1), (16, 0));
    }

    #[test]
    fn names_parse_back() {
        for op in MFMA_OPS {
            assert_eq!(MfmaOp::parse(op.name()), Some(op));
        }
    }
}
