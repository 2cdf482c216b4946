//! GEMM code objects compared on one device: `c[m x n] = a[m x k] * b[k x n]`, row-major, f16
//! inputs, f32 accumulation and output (issue 18). It takes a code object and how to launch it
//! ([`GemmLaunch`]: kernel name, launch shape, argument ABI) and gives the run's checked result
//! and, on a timed software device ([`crate::Gpu::emu_timed`], `RunConfig::timing`), TFLOP/s and
//! % of the model's matrix peak ([`GemmRun`]).
//!
//! Every kernel runs the same [`GemmProblem`]: inputs are multiples of 1/2 in [-2, 2], so every
//! product is a multiple of 1/4 and every partial sum (|sum| ≤ 4k) is exact in f32 for k < 2^20.
//! Any summation order then gives the reference bit for bit, so results are compared exactly: a
//! kernel that accumulates in f16, drops a k-step or misplaces a tile fails.
//!
//! Launches: [`GemmLaunch::clang_twin`] (`kernels/opencl/gemm.cl`, kjit's ABI, tile shape
//! [`TwinShape`]),
//! [`GemmLaunch::triton_matmul`] (Triton 3.9's `matmul_kernel` fixture, whose launch fixes n to
//! 64) and [`GemmLaunch::kjit_abi`] for a kjit-compiled `gemm` with the library's ABI. A kernel
//! with another argument list plugs in with [`GemmAbi::Custom`].
//! `tests/gemm_timing.rs` runs them; docs/mfma-gemm.md has the table.

use half::f16;

use kjit_runtime::timing::TimingReport;
use kjit_runtime::{ArgValue, Device, DeviceBuffer, DeviceError, LaunchDims, LaunchStats};

/// One problem: sizes and the seed of its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmProblem {
    /// Rows of a and c.
    pub m: usize,
    /// Columns of b and c.
    pub n: usize,
    /// Columns of a, rows of b.
    pub k: usize,
    /// Seed of the inputs.
    pub seed: u64,
}

impl GemmProblem {
    /// FLOPs of the product: 2·m·n·k.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The inputs a (m x k) and b (k x n): multiples of 1/2 in [-2, 2] (see the module docs).
    pub fn inputs(&self) -> (Vec<f16>, Vec<f16>) {
        let mut state = self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            // xorshift64*: fast and plenty for test data.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
            f16::from_f32((r % 9) as f32 * 0.5 - 2.0)
        };
        let a = (0..self.m * self.k).map(|_| next()).collect();
        let b = (0..self.k * self.n).map(|_| next()).collect();
        (a, b)
    }

    /// The CPU reference c = a * b in f32 (exact for these inputs, whatever the order).
    pub fn reference(&self, a: &[f16], b: &[f16]) -> Vec<f32> {
        let (m, n, k) = (self.m, self.n, self.k);
        let bf: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
        let mut c = vec![0f32; m * n];
        for (i, row) in c.chunks_mut(n.max(1)).enumerate().take(m) {
            for kk in 0..k {
                let av = a[i * k + kk].to_f32();
                if av == 0.0 {
                    continue;
                }
                for (cv, bv) in row.iter_mut().zip(&bf[kk * n..(kk + 1) * n]) {
                    *cv += av * bv;
                }
            }
        }
        c
    }
}

/// The device buffers of one run, for building a kernel's arguments.
#[derive(Clone, Copy, Debug)]
pub struct GemmBuffers {
    /// a, m x k f16.
    pub a: DeviceBuffer,
    /// b, k x n f16.
    pub b: DeviceBuffer,
    /// c, m x n f32.
    pub c: DeviceBuffer,
    /// The problem.
    pub problem: GemmProblem,
}

/// How a kernel takes its arguments.
#[derive(Clone, Copy, Debug)]
pub enum GemmAbi {
    /// kjit's kernel ABI (docs/backend.md): `a, a_len, b, b_len, c, c_len, m, n, k`, each buffer
    /// its address and its length in elements (u32), sizes as u32.
    Kjit,
    /// Triton's `matmul_kernel(a, b, c, K)` plus the two pointers Triton appends to every
    /// kernel's arguments (`emu_triton.rs`).
    Triton,
    /// Any other argument list, built from the buffers.
    Custom(fn(&GemmBuffers) -> Vec<ArgValue>),
}

/// How to launch one GEMM code object.
#[derive(Clone, Debug)]
pub struct GemmLaunch {
    /// The kernel's symbol.
    pub kernel: String,
    /// Launch shape (and dynamic LDS).
    pub dims: LaunchDims,
    /// Its arguments.
    pub abi: GemmAbi,
}

/// Why a GEMM run failed.
#[derive(Debug, thiserror::Error)]
pub enum GemmError {
    /// The launch cannot compute this problem.
    #[error("{kernel}: {message}")]
    Unsupported {
        /// Kernel.
        kernel: String,
        /// Why.
        message: String,
    },
    /// The device refused or failed.
    #[error("{kernel}: {source}")]
    Device {
        /// Kernel.
        kernel: String,
        /// The device's error.
        source: DeviceError,
    },
    /// The result differs from the reference.
    #[error(
        "{kernel}: c[{row}][{col}] = {got}, reference {want} ({wrong} of {total} elements differ)"
    )]
    Mismatch {
        /// Kernel.
        kernel: String,
        /// First differing row.
        row: usize,
        /// Its column.
        col: usize,
        /// The kernel's value.
        got: f32,
        /// The reference.
        want: f32,
        /// Differing elements.
        wrong: usize,
        /// All elements.
        total: usize,
    },
}

/// Sizes a u32 launch must hold.
fn u32_size(kernel: &str, what: &str, v: usize) -> Result<u32, GemmError> {
    u32::try_from(v).map_err(|_| GemmError::Unsupported {
        kernel: kernel.into(),
        message: format!("{what} = {v} does not fit the kernel's 32-bit arguments"),
    })
}

/// The tile shape of the clang twin (`kernels/opencl/gemm.cl`): its 4 waves as `waves_m` x
/// `4 / waves_m`, each with `blocks_m` x `blocks_n` accumulators of 32 x 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TwinShape {
    /// Waves along m (1, 2 or 4).
    pub waves_m: usize,
    /// 32-row accumulator blocks per wave.
    pub blocks_m: usize,
    /// 32-column accumulator blocks per wave.
    pub blocks_n: usize,
}

impl TwinShape {
    /// The twin's default: 2 x 2 waves of 2 x 2 blocks, 128 x 128 tiles.
    pub const SQUARE: TwinShape = TwinShape {
        waves_m: 2,
        blocks_m: 2,
        blocks_n: 2,
    };

    /// Rows and columns of c per workgroup.
    pub fn tile(&self) -> [usize; 2] {
        [
            32 * self.blocks_m * self.waves_m,
            32 * self.blocks_n * (4 / self.waves_m.max(1)),
        ]
    }

    /// The clang `-D` arguments that build this shape.
    pub fn defines(&self) -> [String; 3] {
        [
            format!("-DWAVES_M={}u", self.waves_m),
            format!("-DBLOCKS_M={}u", self.blocks_m),
            format!("-DBLOCKS_N={}u", self.blocks_n),
        ]
    }
}

impl GemmLaunch {
    /// The clang-19 twin `gemm` (`kernels/opencl/gemm.cl`) built with `shape.defines()`: 256
    /// work-items, any m, n, k.
    pub fn clang_twin(p: &GemmProblem, shape: TwinShape) -> Result<GemmLaunch, GemmError> {
        if ![1, 2, 4].contains(&shape.waves_m) || shape.blocks_m == 0 || shape.blocks_n == 0 {
            return Err(GemmError::Unsupported {
                kernel: "gemm".into(),
                message: format!("the twin has 4 waves and at least one block each: {shape:?}"),
            });
        }
        Self::kjit_abi("gemm", p, shape.tile(), 256)
    }

    /// A kernel with kjit's ABI that computes a `tile[0]` (rows) x `tile[1]` (columns) tile of
    /// c per workgroup of `threads` work-items, tiles over x = columns, y = rows.
    pub fn kjit_abi(
        kernel: &str,
        p: &GemmProblem,
        tile: [usize; 2],
        threads: u32,
    ) -> Result<GemmLaunch, GemmError> {
        let gx = u32_size(kernel, "column tiles", p.n.div_ceil(tile[1]).max(1))?;
        let gy = u32_size(kernel, "row tiles", p.m.div_ceil(tile[0]).max(1))?;
        Ok(GemmLaunch {
            kernel: kernel.into(),
            dims: LaunchDims::new([gx, gy, 1], [threads, 1, 1]),
            abi: GemmAbi::Kjit,
        })
    }

    /// Triton 3.9's `matmul_kernel` fixture (`backend-gcn/tests/fixtures/triton/gen.py`): BM =
    /// BN = 64, BK = 32, no masks, b and c with a row stride of BN, one workgroup of 256 per 64
    /// rows, 8 KiB of dynamic LDS. So n must be 64, m a multiple of 64 and k of 32.
    pub fn triton_matmul(p: &GemmProblem) -> Result<GemmLaunch, GemmError> {
        const KERNEL: &str = "matmul_kernel";
        if p.n != 64 || !p.m.is_multiple_of(64) || !p.k.is_multiple_of(32) || p.k == 0 {
            return Err(GemmError::Unsupported {
                kernel: KERNEL.into(),
                message: format!(
                    "Triton's fixture needs n = 64, m a multiple of 64 and k of 32 (m = {}, n = {}, k = {})",
                    p.m, p.n, p.k
                ),
            });
        }
        let groups = u32_size(KERNEL, "row tiles", p.m / 64)?;
        Ok(GemmLaunch {
            kernel: KERNEL.into(),
            dims: LaunchDims {
                grid: [groups, 1, 1],
                block: [256, 1, 1],
                dynamic_lds: 8192,
            },
            abi: GemmAbi::Triton,
        })
    }

    /// The 32-bit sizes its ABI passes (`a_len, b_len, c_len, m, n, k`), or why they do not fit;
    /// checked before any buffer is allocated.
    fn sizes(&self, p: &GemmProblem) -> Result<[u32; 6], GemmError> {
        let sz = |what, v| u32_size(&self.kernel, what, v);
        let k = sz("k", p.k)?;
        if matches!(self.abi, GemmAbi::Triton) && i32::try_from(k).is_err() {
            return Err(GemmError::Unsupported {
                kernel: self.kernel.clone(),
                message: format!("k = {k} does not fit Triton's i32 K"),
            });
        }
        Ok([
            sz("m·k", p.m * p.k)?,
            sz("k·n", p.k * p.n)?,
            sz("m·n", p.m * p.n)?,
            sz("m", p.m)?,
            sz("n", p.n)?,
            k,
        ])
    }

    fn args(
        &self,
        bufs: &GemmBuffers,
        sizes: [u32; 6],
        scratch: [DeviceBuffer; 2],
    ) -> Vec<ArgValue> {
        let [a_len, b_len, c_len, m, n, k] = sizes;
        match self.abi {
            GemmAbi::Kjit => vec![
                ArgValue::Buffer(bufs.a),
                ArgValue::U32(a_len),
                ArgValue::Buffer(bufs.b),
                ArgValue::U32(b_len),
                ArgValue::Buffer(bufs.c),
                ArgValue::U32(c_len),
                ArgValue::U32(m),
                ArgValue::U32(n),
                ArgValue::U32(k),
            ],
            GemmAbi::Triton => vec![
                ArgValue::Buffer(bufs.a),
                ArgValue::Buffer(bufs.b),
                ArgValue::Buffer(bufs.c),
                ArgValue::I32(k as i32),
                ArgValue::Buffer(scratch[0]),
                ArgValue::Buffer(scratch[1]),
            ],
            GemmAbi::Custom(f) => f(bufs),
        }
    }
}

/// One checked run.
#[derive(Clone, Debug)]
pub struct GemmRun {
    /// The device's counters (with `timing` on a timed device).
    pub stats: LaunchStats,
}

impl GemmRun {
    /// The timing model's report, if the device was timed.
    pub fn timing(&self) -> Option<&TimingReport> {
        self.stats.timing.as_deref()
    }

    /// TFLOP/s of the problem's 2·m·n·k FLOPs at the model's cycles.
    pub fn tflops(&self, p: &GemmProblem) -> Option<f64> {
        self.timing().map(|t| p.flops() / t.seconds / 1e12)
    }

    /// Percent of the model's matrix peak (for the kernel's fastest MFMA) that
    /// [`GemmRun::tflops`] is.
    pub fn percent_of_peak(&self, p: &GemmProblem) -> Option<f64> {
        let t = self.timing()?;
        (t.peak_flops > 0.0).then(|| 100.0 * p.flops() / t.seconds / t.peak_flops)
    }
}

/// Runs `launch` of `code_object` on `device` for problem `p` and checks c against the
/// reference bit for bit. `reference` is `p.reference` of `p.inputs()` (passed in so that
/// several kernels share one computation of it).
pub fn run_gemm(
    device: &dyn Device,
    code_object: &[u8],
    launch: &GemmLaunch,
    p: &GemmProblem,
    inputs: &(Vec<f16>, Vec<f16>),
    reference: &[f32],
) -> Result<GemmRun, GemmError> {
    let kernel = launch.kernel.clone();
    let dev = |source| GemmError::Device {
        kernel: kernel.clone(),
        source,
    };
    let bytes16 = |v: &[f16]| -> Vec<u8> { v.iter().flat_map(|h| h.to_le_bytes()).collect() };
    let sizes = launch.sizes(p)?;
    let (a, b) = inputs;
    let mut owned = Vec::new();
    let result = (|| {
        let mut alloc = |bytes: usize| -> Result<DeviceBuffer, GemmError> {
            let d = device.alloc(bytes.max(4) as u64).map_err(dev)?;
            owned.push(d);
            Ok(d)
        };
        let bufs = GemmBuffers {
            a: alloc(2 * a.len())?,
            b: alloc(2 * b.len())?,
            c: alloc(4 * p.m * p.n)?,
            problem: *p,
        };
        let scratch = [alloc(8)?, alloc(8)?];
        device.copy_to_device(bufs.a, 0, &bytes16(a)).map_err(dev)?;
        device.copy_to_device(bufs.b, 0, &bytes16(b)).map_err(dev)?;
        // Poison: elements the kernel does not write show up as NaN.
        device
            .copy_to_device(bufs.c, 0, &vec![0xff; 4 * p.m * p.n])
            .map_err(dev)?;
        let module = device.load_module(code_object).map_err(dev)?;
        let args = launch.args(&bufs, sizes, scratch);
        let stats = device
            .launch(module, &launch.kernel, launch.dims, &args)
            .map_err(dev)?;
        let mut got = vec![0u8; 4 * p.m * p.n];
        device.copy_from_device(bufs.c, 0, &mut got).map_err(dev)?;
        let got: Vec<f32> = got
            .chunks_exact(4)
            .map(|w| f32::from_le_bytes(w.try_into().expect("4 bytes")))
            .collect();
        let wrong: Vec<usize> = (0..got.len())
            .filter(|&i| got[i].to_bits() != reference[i].to_bits())
            .collect();
        if let Some(&i) = wrong.first() {
            return Err(GemmError::Mismatch {
                kernel: kernel.clone(),
                row: i / p.n,
                col: i % p.n,
                got: got[i],
                want: reference[i],
                wrong: wrong.len(),
                total: got.len(),
            });
        }
        Ok(GemmRun { stats })
    })();
    for d in owned {
        let _ = device.free(d);
    }
    result
}
