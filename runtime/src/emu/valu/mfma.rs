//! Matrix fused multiply-add (`v_mfma_*`) on gfx90a/gfx942: the register layouts of A, B and C/D
//! and the block computation.
//!
//! Layouts (AMD's matrix instruction calculator and CDNA3 ISA guide, section "Dependent
//! instructions / MFMA"): an instruction computes `B` independent blocks `D[b] = A[b] * B[b] +
//! C[b]` with `A[b]` of M x K and `B[b]` of K x N. Each lane holds `kl = K*M*B/64` consecutive
//! k-values of one row of A (and of one column of B), packed in `kl * bits / 32` registers:
//! `A[b][i][k]` is item `k % kl` of lane `i + M*(b + B*(k / kl))`, `B[b][k][j]` likewise with j.
//! The f32/i32 result: for 32x32 and 16x16 blocks, rows are taken four at a time,
//! `D[b][i][j]` is register `R*b + 4*((i/4) / (64/N)) + i%4` (R = M*N/64 registers per block) of
//! lane `j + N*((i/4) % (64/N))`; for 4x4 blocks it is register `i` of lane `j + 4*b`.
//!
//! Arithmetic: products of the narrow inputs are exact in f64 and each output is accumulated in
//! f64 from C and rounded once to f32 (the hardware's internal order is not documented; its
//! result is within the documented accuracy of this one). `cbsz/abid/blgp` broadcast controls
//! other than 0 are reported as unsupported by the dispatcher.

use super::half;

/// The element type of the A/B inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MfmaInput {
    /// f32 (one per register).
    F32,
    /// f16 (two per register).
    F16,
    /// bf16 (two per register).
    Bf16,
    /// i8 (four per register), i32 accumulation.
    I8,
    /// gfx942 FP8 (E4M3 FNUZ, four per register).
    Fp8,
    /// gfx942 BF8 (E5M2 FNUZ, four per register).
    Bf8,
    /// f64 (two registers each), f64 accumulation.
    F64,
}

impl MfmaInput {
    /// Bits per element.
    pub fn bits(self) -> u32 {
        match self {
            MfmaInput::F64 => 64,
            MfmaInput::F32 => 32,
            MfmaInput::F16 | MfmaInput::Bf16 => 16,
            MfmaInput::I8 | MfmaInput::Fp8 | MfmaInput::Bf8 => 8,
        }
    }

    /// The exact value of element `raw` as f64 (i8 as its integer value).
    #[inline(always)]
    pub fn value(self, raw: u32) -> f64 {
        match self {
            MfmaInput::F32 => f32::from_bits(raw) as f64,
            MfmaInput::F16 => half::to_f32(raw as u16) as f64,
            MfmaInput::Bf16 => f32::from_bits(raw << 16) as f64,
            MfmaInput::I8 => raw as u8 as i8 as f64,
            MfmaInput::Fp8 => super::convert::Fp8::E4M3.to_f32(raw as u8) as f64,
            MfmaInput::Bf8 => super::convert::Fp8::E5M2.to_f32(raw as u8) as f64,
            MfmaInput::F64 => unreachable!("f64 inputs span two registers: execute_f64"),
        }
    }
}

/// Shape of one MFMA opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MfmaShape {
    /// Rows of A and D per block.
    pub m: u32,
    /// Columns of B and D per block.
    pub n: u32,
    /// Reduction depth.
    pub k: u32,
    /// Independent blocks.
    pub blocks: u32,
    /// Type of A and B (each may differ only for gfx942's fp8/bf8 mixes).
    pub a: MfmaInput,
    /// Type of B.
    pub b: MfmaInput,
}

impl MfmaShape {
    /// k-values of one row of A held by one lane.
    pub fn k_per_lane(&self) -> u32 {
        self.k * self.m * self.blocks / 64
    }

    /// Registers of one A operand (B has as many).
    pub fn a_regs(&self) -> u32 {
        (self.k_per_lane() * self.a.bits()).div_ceil(32)
    }

    /// Registers of C and D (two per element for f64).
    pub fn d_regs(&self) -> u32 {
        self.m * self.n * self.blocks / 64 * if self.a == MfmaInput::F64 { 2 } else { 1 }
    }

    /// Whether the accumulator is integer (i8 inputs).
    pub fn int_acc(&self) -> bool {
        self.a == MfmaInput::I8
    }

    /// (lane, item) holding `A[b][i][k]` (and `B[b][k][i]` with `i` read as the column).
    #[inline(always)]
    pub fn input_pos(&self, b: u32, i: u32, k: u32) -> (u32, u32) {
        let kl = self.k_per_lane();
        (i + self.m * (b + self.blocks * (k / kl)), k % kl)
    }

    /// (register, lane) holding `D[b][i][j]`.
    #[inline(always)]
    pub fn output_pos(&self, b: u32, i: u32, j: u32) -> (u32, u32) {
        if self.m == 4 {
            return (i, j + 4 * b);
        }
        let groups = 64 / self.n;
        let r = self.m * self.n / 64;
        (
            r * b + 4 * ((i / 4) / groups) + i % 4,
            j + self.n * ((i / 4) % groups),
        )
    }

    /// Shape of an MFMA opcode by its LLVM name (without the `v_` prefix is also accepted).
    pub fn from_name(name: &str) -> Option<MfmaShape> {
        let n = name.strip_prefix("v_").unwrap_or(name);
        let n = n.strip_prefix("mfma_").unwrap_or(n);
        use MfmaInput::*;
        let s = |m, nn, k, blocks, a, b| {
            Some(MfmaShape {
                m,
                n: nn,
                k,
                blocks,
                a,
                b,
            })
        };
        match n {
            "f32_32x32x1f32" | "f32_32x32x1_2b_f32" => s(32, 32, 1, 2, F32, F32),
            "f32_16x16x1f32" | "f32_16x16x1_4b_f32" => s(16, 16, 1, 4, F32, F32),
            "f32_4x4x1f32" | "f32_4x4x1_16b_f32" => s(4, 4, 1, 16, F32, F32),
            "f32_32x32x2f32" | "f32_32x32x2_f32" => s(32, 32, 2, 1, F32, F32),
            "f32_16x16x4f32" | "f32_16x16x4_f32" => s(16, 16, 4, 1, F32, F32),
            "f64_16x16x4f64" | "f64_16x16x4_f64" => s(16, 16, 4, 1, F64, F64),
            "f32_32x32x4f16" | "f32_32x32x4_2b_f16" => s(32, 32, 4, 2, F16, F16),
            "f32_16x16x4f16" | "f32_16x16x4_4b_f16" => s(16, 16, 4, 4, F16, F16),
            "f32_4x4x4f16" | "f32_4x4x4_16b_f16" => s(4, 4, 4, 16, F16, F16),
            "f32_32x32x8f16" | "f32_32x32x8_f16" => s(32, 32, 8, 1, F16, F16),
            "f32_16x16x16f16" | "f32_16x16x16_f16" => s(16, 16, 16, 1, F16, F16),
            "f32_32x32x4bf16_1k" | "f32_32x32x4_2b_bf16" => s(32, 32, 4, 2, Bf16, Bf16),
            "f32_16x16x4bf16_1k" | "f32_16x16x4_4b_bf16" => s(16, 16, 4, 4, Bf16, Bf16),
            "f32_4x4x4bf16_1k" | "f32_4x4x4_16b_bf16" => s(4, 4, 4, 16, Bf16, Bf16),
            "f32_32x32x8bf16_1k" | "f32_32x32x8_bf16" => s(32, 32, 8, 1, Bf16, Bf16),
            "f32_16x16x16bf16_1k" | "f32_16x16x16_bf16" => s(16, 16, 16, 1, Bf16, Bf16),
            "f32_32x32x2bf16" => s(32, 32, 2, 2, Bf16, Bf16),
            "f32_16x16x2bf16" => s(16, 16, 2, 4, Bf16, Bf16),
            "f32_4x4x2bf16" => s(4, 4, 2, 16, Bf16, Bf16),
            "f32_32x32x4bf16" => s(32, 32, 4, 1, Bf16, Bf16),
            "f32_16x16x8bf16" => s(16, 16, 8, 1, Bf16, Bf16),
            "i32_32x32x4i8" | "i32_32x32x4_2b_i8" => s(32, 32, 4, 2, I8, I8),
            "i32_16x16x4i8" | "i32_16x16x4_4b_i8" => s(16, 16, 4, 4, I8, I8),
            "i32_4x4x4i8" | "i32_4x4x4_16b_i8" => s(4, 4, 4, 16, I8, I8),
            "i32_32x32x8i8" => s(32, 32, 8, 1, I8, I8),
            "i32_16x16x16i8" => s(16, 16, 16, 1, I8, I8),
            "i32_32x32x16_i8" => s(32, 32, 16, 1, I8, I8),
            "i32_16x16x32_i8" => s(16, 16, 32, 1, I8, I8),
            "f32_16x16x32_fp8_fp8" => s(16, 16, 32, 1, Fp8, Fp8),
            "f32_16x16x32_fp8_bf8" => s(16, 16, 32, 1, Fp8, Bf8),
            "f32_16x16x32_bf8_fp8" => s(16, 16, 32, 1, Bf8, Fp8),
            "f32_16x16x32_bf8_bf8" => s(16, 16, 32, 1, Bf8, Bf8),
            "f32_32x32x16_fp8_fp8" => s(32, 32, 16, 1, Fp8, Fp8),
            "f32_32x32x16_fp8_bf8" => s(32, 32, 16, 1, Fp8, Bf8),
            "f32_32x32x16_bf8_fp8" => s(32, 32, 16, 1, Bf8, Fp8),
            "f32_32x32x16_bf8_bf8" => s(32, 32, 16, 1, Bf8, Bf8),
            _ => None,
        }
    }
}

/// Extracts item `item` of an input held in `regs` (register r of the operand, this lane).
#[inline(always)]
fn item(regs: &[[u32; 64]], lane: u32, item: u32, bits: u32) -> u32 {
    let bit = item * bits;
    let w = regs[(bit / 32) as usize][lane as usize];
    if bits == 32 {
        w
    } else {
        (w >> (bit % 32)) & ((1 << bits) - 1)
    }
}

/// Computes `D = A * B + C` for every block. `a`, `b` hold the operand registers (`a_regs()`
/// each), `c` and `d` the accumulator registers (`d_regs()` each; `d` may start as a copy of `c`).
/// All 64 lanes are computed: MFMA ignores EXEC.
pub fn execute(
    shape: &MfmaShape,
    a: &[[u32; 64]],
    b: &[[u32; 64]],
    c: &[[u32; 64]],
    d: &mut [[u32; 64]],
) {
    execute_bcast(shape, 0, 0, a, b, c, d)
}

/// [`execute`] with the A-matrix broadcast controls: block `b` reads its A from block
/// `(b >> cbsz << cbsz) | abid`, i.e. within each group of `2^cbsz` blocks the A of block `abid`
/// is shared. (`cbsz = abid = 0` is the plain instruction.)
pub fn execute_bcast(
    shape: &MfmaShape,
    cbsz: u32,
    abid: u32,
    a: &[[u32; 64]],
    b: &[[u32; 64]],
    c: &[[u32; 64]],
    d: &mut [[u32; 64]],
) {
    if shape.a == MfmaInput::F64 {
        return execute_f64(shape, a, b, c, d);
    }
    let (m, n, k) = (shape.m, shape.n, shape.k);
    for blk in 0..shape.blocks {
        let ablk = ((blk >> cbsz) << cbsz) | abid;
        for i in 0..m {
            // Row i of A for this block, decoded once.
            let arow: Vec<f64> = (0..k)
                .map(|kk| {
                    let (lane, it) = shape.input_pos(ablk, i, kk);
                    shape.a.value(item(a, lane, it, shape.a.bits()))
                })
                .collect();
            for j in 0..n {
                let (reg, lane) = shape.output_pos(blk, i, j);
                let cval = c[reg as usize][lane as usize];
                if shape.int_acc() {
                    let mut acc = cval as i32 as i64;
                    for (kk, av) in arow.iter().enumerate() {
                        let (bl, bi) = shape.input_pos(blk, j, kk as u32);
                        let bv = item(b, bl, bi, shape.b.bits()) as u8 as i8 as i64;
                        acc += *av as i64 * bv;
                    }
                    d[reg as usize][lane as usize] = acc as i32 as u32;
                } else {
                    let mut acc = f32::from_bits(cval) as f64;
                    for (kk, av) in arow.iter().enumerate() {
                        let (bl, bi) = shape.input_pos(blk, j, kk as u32);
                        acc += av * shape.b.value(item(b, bl, bi, shape.b.bits()));
                    }
                    d[reg as usize][lane as usize] = (acc as f32).to_bits();
                }
            }
        }
    }
}

/// `v_mfma_f64_16x16x4_f64`: A and B one f64 (a register pair) per lane, laid out as the
/// narrow types are; D's item r (registers 2r, 2r+1) of lane l is `D[4r + l/16][l%16]` (AMD's
/// calculator, CDNA3). Each output is a chain of fused multiply-adds from C in k order.
fn execute_f64(
    shape: &MfmaShape,
    a: &[[u32; 64]],
    b: &[[u32; 64]],
    c: &[[u32; 64]],
    d: &mut [[u32; 64]],
) {
    let get = |regs: &[[u32; 64]], item: u32, lane: u32| -> f64 {
        let (r, l) = (2 * item as usize, lane as usize);
        f64::from_bits(regs[r][l] as u64 | (regs[r + 1][l] as u64) << 32)
    };
    for i in 0..shape.m {
        for j in 0..shape.n {
            let (item, lane) = (i / 4, j + shape.n * (i % 4));
            let mut acc = get(c, item, lane);
            for kk in 0..shape.k {
                let (al, ai) = shape.input_pos(0, i, kk);
                let (bl, bi) = shape.input_pos(0, j, kk);
                acc = get(a, ai, al).mul_add(get(b, bi, bl), acc);
            }
            let bits = acc.to_bits();
            d[2 * item as usize][lane as usize] = bits as u32;
            d[2 * item as usize + 1][lane as usize] = (bits >> 32) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_bijections_onto_the_registers() {
        for name in [
            "f32_32x32x8f16",
            "f32_16x16x16f16",
            "f32_4x4x4_16b_f16",
            "f32_32x32x1_2b_f32",
            "f32_16x16x4_4b_f16",
            "i32_32x32x16_i8",
            "f32_16x16x32_fp8_fp8",
            "f32_32x32x2f32",
        ] {
            let s = MfmaShape::from_name(name).unwrap();
            let mut seen = std::collections::HashSet::new();
            for b in 0..s.blocks {
                for i in 0..s.m {
                    for j in 0..s.n {
                        let (r, l) = s.output_pos(b, i, j);
                        assert!(r < s.d_regs() && l < 64, "{name}");
                        assert!(seen.insert((r, l)), "{name}: D[{b}][{i}][{j}] collides");
                    }
                }
            }
            assert_eq!(seen.len() as u32, 64 * s.d_regs());
            let mut seen = std::collections::HashSet::new();
            for b in 0..s.blocks {
                for i in 0..s.m {
                    for k in 0..s.k {
                        let (l, it) = s.input_pos(b, i, k);
                        assert!(l < 64 && it < s.k_per_lane(), "{name}");
                        assert!(seen.insert((l, it)), "{name}: A[{b}][{i}][{k}] collides");
                    }
                }
            }
        }
    }

    #[test]
    fn cbsz_abid_share_one_blocks_a_matrix() {
        // 4x4x1 f32, 16 blocks: lane 4b+i of A holds A[b][i][0]. With cbsz=4, abid=3 every block
        // uses block 3's A.
        let s = MfmaShape::from_name("f32_4x4x1f32").unwrap();
        let a = vec![std::array::from_fn::<u32, 64, _>(|l| (l as f32).to_bits())];
        let b = vec![[1.0f32.to_bits(); 64]];
        let c = vec![[0u32; 64]; 4];
        let mut d = c.clone();
        execute_bcast(&s, 4, 3, &a, &b, &c, &mut d);
        for blk in 0..16 {
            for i in 0..4 {
                let (r, l) = s.output_pos(blk, i, 0);
                assert_eq!(f32::from_bits(d[r as usize][l as usize]), (12 + i) as f32);
            }
        }
        execute_bcast(&s, 1, 1, &a, &b, &c, &mut d);
        let (r, l) = s.output_pos(4, 2, 1); // block 4 takes block 5's A
        assert_eq!(f32::from_bits(d[r as usize][l as usize]), (20 + 2) as f32);
    }

    #[test]
    fn the_32x32x8_f16_layout_matches_the_documented_one() {
        let s = MfmaShape::from_name("v_mfma_f32_32x32x8f16").unwrap();
        assert_eq!((s.a_regs(), s.d_regs()), (2, 16));
        // D register r of lane l is row 8*(r/4) + 4*(l/32) + r%4, column l%32.
        for r in 0..16 {
            for l in 0..64 {
                let (i, j) = (8 * (r / 4) + 4 * (l / 32) + r % 4, l % 32);
                assert_eq!(s.output_pos(0, i, j), (r, l));
            }
        }
        // A: lane l holds row l%32, k = 4*(l/32) .. +3.
        assert_eq!(s.input_pos(0, 5, 6), (37, 2));
    }

    #[test]
    fn a_16x16x16_f16_tile_matches_a_reference_matmul() {
        let s = MfmaShape::from_name("f32_16x16x16f16").unwrap();
        let av = |i: u32, k: u32| ((i * 3 + k * 5) % 7) as f32 - 3.0;
        let bv = |k: u32, j: u32| ((k * 2 + j) % 5) as f32 * 0.5;
        let mut a = vec![[0u32; 64]; 2];
        let mut b = vec![[0u32; 64]; 2];
        for i in 0..16 {
            for k in 0..16 {
                let (l, it) = s.input_pos(0, i, k);
                a[(it / 2) as usize][l as usize] |=
                    (half::from_f32(av(i, k)) as u32) << (16 * (it % 2));
                let (l, it) = s.input_pos(0, i, k); // B[k][j=i]
                b[(it / 2) as usize][l as usize] |=
                    (half::from_f32(bv(k, i)) as u32) << (16 * (it % 2));
            }
        }
        let c = vec![[1.0f32.to_bits(); 64]; 4];
        let mut d = vec![[0u32; 64]; 4];
        execute(&s, &a, &b, &c, &mut d);
        for i in 0..16 {
            for j in 0..16 {
                let want: f32 = 1.0 + (0..16).map(|k| av(i, k) * bv(k, j)).sum::<f32>();
                let (r, l) = s.output_pos(0, i, j);
                assert_eq!(
                    f32::from_bits(d[r as usize][l as usize]),
                    want,
                    "D[{i}][{j}]"
                );
            }
        }
    }
}
