//! The OpenCL corpus in `tests/corpus/` compiled by clang-19 for gfx942, gfx90a and gfx900, run
//! on kjit's software GCN device, and checked element by element against Rust references on
//! random inputs. Outputs are poisoned before every run, so an element the kernel failed to write
//! fails the comparison.
//!
//! Float kernels are compiled with `-ffp-contract=off -cl-fp32-correctly-rounded-divide-sqrt` so
//! that every operation is a single IEEE rounding and the comparison can be bit-exact.

use std::path::Path;

use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_runtime::{ArgValue, Device, DeviceBuffer, LaunchDims, LaunchStats};

const ALL: &[&str] = &["gfx942", "gfx90a", "gfx900"];

/// Compiles `corpus/<file>` for `target` and links it; `None` (after a printed reason) when the
/// LLVM tools are absent and not required.
fn build(file: &str, target: &str, extra: &[&str]) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "emu corpus")?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let inc = format!("-I{}", dir.display());
    let args: Vec<&str> = std::iter::once(inc.as_str())
        .chain(extra.iter().copied())
        .collect();
    let build = OpenClBuild {
        extra_args: &args,
        out_dir: None,
    };
    let so = compile_opencl(&tools[0], &tools[1], &dir.join(file), target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(&so).unwrap())
}

mod common;
use common::{Dev as Run, Rng};

impl Rng {
    fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

impl Run {
    /// Launches `kernel` on `groups` workgroups of 256 with buffer arguments `bufs`, then the
    /// element count `n` if given (the corpus's usual signature).
    fn launch_bufs(
        &self,
        kernel: &str,
        groups: u32,
        bufs: &[DeviceBuffer],
        n: Option<u32>,
    ) -> LaunchStats {
        let args: Vec<ArgValue> = bufs
            .iter()
            .map(|&b| ArgValue::Buffer(b))
            .chain(n.map(ArgValue::U32))
            .collect();
        self.launch(kernel, [groups, 1, 1], [256, 1, 1], &args)
    }

    fn launch(
        &self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[ArgValue],
    ) -> LaunchStats {
        let dims = LaunchDims {
            grid,
            block,
            dynamic_lds: 0,
        };
        self.dev
            .launch(self.module, kernel, dims, args)
            .unwrap_or_else(|e| panic!("{}: {kernel}: {e}", self.target))
    }
}

fn check_bits<T: PartialEq + std::fmt::Debug + Copy>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {i} (of {})", want.len());
    }
}

const PRECISE: &[&str] = &[
    "-ffp-contract=off",
    "-cl-fp32-correctly-rounded-divide-sqrt",
];

#[test]
fn elementwise_f32_f64_f16_match_ieee() {
    for &t in ALL {
        let Some(code) = build("elementwise.cl", t, PRECISE) else {
            return;
        };
        let r = Run::new(&code, t);
        let n = 1000usize; // four workgroups of 256, the last one partial
        let mut g = Rng(0x1234_5678 ^ t.len() as u64);
        let a: Vec<f32> = (0..n).map(|_| g.f32_in(-10.0, 10.0)).collect();
        let b: Vec<f32> = (0..n)
            .map(|_| {
                let v = g.f32_in(0.5, 10.0);
                if g.next() & 1 == 0 {
                    v
                } else {
                    -v
                }
            })
            .collect();
        let (da, db, out) = (r.input(&a), r.input(&b), r.output(4 * n));
        r.launch_bufs("ew_f32", 4, &[da, db, out], Some(n as u32));
        let want: Vec<u32> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| {
                let mut r = x.mul_add(y, 1.5) + x / y;
                r += x.abs().sqrt() - x.min(y) * x.max(0.25);
                r += ((x * 3.0).floor() + y.ceil()) + ((y * 7.0) as i32) as f32;
                r.to_bits()
            })
            .collect();
        check_bits(&format!("{t} ew_f32"), &r.read::<u32>(out), &want);

        let a64: Vec<f64> = a.iter().map(|&x| x as f64 * 1.37).collect();
        let b64: Vec<f64> = b.iter().map(|&x| x as f64 * 0.91).collect();
        let (da, db, out) = (r.input(&a64), r.input(&b64), r.output(8 * n));
        r.launch_bufs("ew_f64", 4, &[da, db, out], Some(n as u32));
        let want: Vec<u64> = a64
            .iter()
            .zip(&b64)
            .map(|(&x, &y)| {
                let mut r = x.mul_add(y, -0.75) + x / y + y.abs().sqrt();
                r += (x.min(y) + (x * 5.0).floor()) + ((x * 1000.0) as i64) as f64;
                r.to_bits()
            })
            .collect();
        check_bits(&format!("{t} ew_f64"), &r.read::<u64>(out), &want);

        use half::f16;
        let ah: Vec<u16> = a.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
        let bh: Vec<u16> = b.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
        let (da, db, out, wide) = (r.input(&ah), r.input(&bh), r.output(2 * n), r.output(4 * n));
        r.launch_bufs("ew_f16", 4, &[da, db, out, wide], Some(n as u32));
        let want: Vec<u16> = ah
            .iter()
            .zip(&bh)
            .map(|(&x, &y)| {
                let (x, y) = (f16::from_bits(x), f16::from_bits(y));
                (((x * y) + f16::from_f32(0.5)) - x).to_bits()
            })
            .collect();
        check_bits(&format!("{t} ew_f16"), &r.read::<u16>(out), &want);
        let want: Vec<u32> = ah
            .iter()
            .zip(&bh)
            .map(|(&x, &y)| (f16::from_bits(x).to_f32() * f16::from_bits(y).to_f32()).to_bits())
            .collect();
        check_bits(&format!("{t} ew_f16 wide"), &r.read::<u32>(wide), &want);
    }
}

#[test]
fn two_dimensional_grid_uses_group_sizes_and_grid_size() {
    for &t in ALL {
        let Some(code) = build("grid2d.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let (w, h) = (100u32, 37u32);
        let mut g = Rng(77);
        let input: Vec<i32> = (0..w * h).map(|_| (g.u32() % 2000) as i32 - 1000).collect();
        let (din, out) = (r.input(&input), r.output(4 * (w * h) as usize));
        let grid = [w.div_ceil(16), h.div_ceil(8), 1];
        r.launch(
            "grid2d",
            grid,
            [16, 8, 1],
            &[
                ArgValue::Buffer(din),
                ArgValue::Buffer(out),
                ArgValue::U32(w),
                ArgValue::U32(h),
            ],
        );
        let gw = grid[0] * 16;
        let want: Vec<i32> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .map(|(x, y)| {
                input[(y * w + x) as usize] * 3 + x as i32 - 2 * y as i32
                    + (gw & 0xff) as i32 * 1000
            })
            .collect();
        check_bits(&format!("{t} grid2d"), &r.read::<i32>(out), &want);
    }
}

#[test]
fn lds_tree_reductions_with_barriers() {
    for &t in ALL {
        let Some(code) = build("reduce.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let groups = 12usize;
        let mut g = Rng(5);
        let input: Vec<f32> = (0..256 * groups).map(|_| g.f32_in(-1.0, 1.0)).collect();
        let (din, out) = (r.input(&input), r.output(4 * groups));
        let stats = r.launch_bufs("reduce_sum", groups as u32, &[din, out], None);
        assert_eq!(stats.waves, 4 * groups as u64);
        let want: Vec<u32> = input
            .chunks(256)
            .map(|c| {
                let mut s = c.to_vec();
                let mut k = 128;
                while k > 0 {
                    for i in 0..k {
                        s[i] += s[i + k];
                    }
                    k >>= 1;
                }
                s[0].to_bits()
            })
            .collect();
        check_bits(&format!("{t} reduce_sum"), &r.read::<u32>(out), &want);

        let input: Vec<u32> = (0..256 * groups).map(|_| g.u32()).collect();
        let (din, out) = (r.input(&input), r.output(4 * groups));
        r.launch_bufs("reduce_max_u32", groups as u32, &[din, out], None);
        let want: Vec<u32> = input
            .chunks(256)
            .map(|c| *c.iter().max().unwrap())
            .collect();
        check_bits(&format!("{t} reduce_max_u32"), &r.read::<u32>(out), &want);
    }
}

#[test]
fn cross_lane_permutes_dpp_scans_and_swizzles() {
    for &t in ALL {
        let Some(code) = build("crosslane.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let n = 512usize;
        let mut g = Rng(99);
        let input: Vec<i32> = (0..n)
            .map(|_| (g.u32() % 100_000) as i32 - 50_000)
            .collect();
        let din = r.input(&input);
        for shift in [1i32, 17, 63] {
            let out = r.output(4 * n);
            r.launch(
                "rotate",
                [2, 1, 1],
                [256, 1, 1],
                &[
                    ArgValue::Buffer(din),
                    ArgValue::Buffer(out),
                    ArgValue::I32(shift),
                ],
            );
            let want: Vec<i32> = (0..n)
                .map(|i| input[(i & !63) + ((i + shift as usize) & 63)])
                .collect();
            check_bits(&format!("{t} rotate {shift}"), &r.read::<i32>(out), &want);
        }
        let out = r.output(4 * n);
        r.launch_bufs("row_scan", 2, &[din, out], None);
        let want: Vec<i32> = (0..n)
            .map(|i| {
                input[(i & !15)..=i]
                    .iter()
                    .fold(0i32, |a, &b| a.wrapping_add(b))
            })
            .collect();
        check_bits(&format!("{t} row_scan"), &r.read::<i32>(out), &want);
        let out = r.output(4 * n);
        r.launch_bufs("swizzle_first", 2, &[din, out], None);
        let want: Vec<i32> = (0..n)
            .map(|i| input[i ^ 1].wrapping_mul(1000).wrapping_add(input[i & !63]))
            .collect();
        check_bits(&format!("{t} swizzle_first"), &r.read::<i32>(out), &want);
    }
}

#[test]
fn divergent_data_dependent_loops() {
    for &t in ALL {
        let Some(code) = build("divergent.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let n = 700usize;
        let mut g = Rng(31);
        let input: Vec<u32> = (0..n).map(|_| 1 + g.u32() % 100_000).collect();
        let (din, out) = (r.input(&input), r.output(4 * n));
        r.launch_bufs("collatz", 3, &[din, out], Some(n as u32));
        let want: Vec<u32> = input
            .iter()
            .map(|&x0| {
                let (mut x, mut s) = (x0, 0u32);
                while x != 1 && s < 1000 {
                    x = if x & 1 != 0 {
                        x.wrapping_mul(3).wrapping_add(1)
                    } else {
                        x >> 1
                    };
                    s += 1;
                }
                s
            })
            .collect();
        check_bits(&format!("{t} collatz"), &r.read::<u32>(out), &want);
        let m = 256usize;
        let out = r.output(4 * m);
        r.launch_bufs("nested", 1, &[din, out], None);
        let want: Vec<u32> = input[..m]
            .iter()
            .map(|&v| {
                let a = v & 15;
                let mut acc = 0u32;
                for j in 0..a {
                    if (j ^ a) & 1 != 0 {
                        for k in 0..=j {
                            acc = acc.wrapping_add(k * j);
                        }
                    } else {
                        acc ^= j << 3;
                    }
                }
                acc
            })
            .collect();
        check_bits(&format!("{t} nested"), &r.read::<u32>(out), &want);
    }
}

#[test]
fn global_atomics_count_exactly() {
    for &t in ALL {
        let Some(code) = build("atomics.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let n = 5000usize;
        let nbins = 37u32;
        let mut g = Rng(4242);
        let input: Vec<u32> = (0..n).map(|_| g.u32()).collect();
        let din = r.input(&input);
        let bins = r.input(&vec![0u32; nbins as usize]);
        r.launch(
            "histogram",
            [n.div_ceil(256) as u32, 1, 1],
            [256, 1, 1],
            &[
                ArgValue::Buffer(din),
                ArgValue::Buffer(bins),
                ArgValue::U32(n as u32),
                ArgValue::U32(nbins),
            ],
        );
        let mut want = vec![0u32; nbins as usize];
        for &v in &input {
            want[(v % nbins) as usize] += 1;
        }
        check_bits(&format!("{t} histogram"), &r.read::<u32>(bins), &want);

        let m = 4096usize;
        let result = r.input(&[0u32]);
        r.launch_bufs("global_max", 16, &[din, result], None);
        assert_eq!(
            r.read::<u32>(result)[0],
            *input[..m].iter().max().unwrap(),
            "{t} global_max"
        );

        let counter = r.input(&[0u32]);
        let slots = r.output(4 * m);
        r.launch_bufs("count_and_slot", 16, &[counter, slots], None);
        assert_eq!(r.read::<u32>(counter)[0], m as u32, "{t} counter");
        let mut s = r.read::<u32>(slots);
        s.sort_unstable();
        check_bits(
            &format!("{t} slots are a permutation"),
            &s,
            &(0..m as u32).collect::<Vec<_>>(),
        );

        let bins = r.input(&[0u32; 16]);
        r.launch_bufs("local_histogram", 16, &[din, bins], None);
        let mut want = vec![0u32; 16];
        for &v in &input[..m] {
            want[(v & 15) as usize] += 1;
        }
        check_bits(&format!("{t} local_histogram"), &r.read::<u32>(bins), &want);

        let sums = r.output(4 * 16);
        r.launch_bufs("local_cas_sum", 16, &[din, sums], None);
        let want: Vec<u32> = input[..m]
            .chunks(256)
            .map(|c| c.iter().map(|v| v & 255).sum())
            .collect();
        check_bits(&format!("{t} local_cas_sum"), &r.read::<u32>(sums), &want);
    }
}

#[test]
fn private_arrays_live_in_swizzled_scratch() {
    for &t in ALL {
        let Some(code) = build("private.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let n = 640usize;
        let mut g = Rng(808);
        let input: Vec<u32> = (0..n).map(|_| g.u32()).collect();
        let (din, out) = (r.input(&input), r.output(4 * n));
        r.launch(
            "private_array",
            [5, 1, 1],
            [128, 1, 1],
            &[ArgValue::Buffer(din), ArgValue::Buffer(out)],
        );
        let want: Vec<u32> = input
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let mut a: Vec<u32> = (0..48u32).map(|k| k * 3 + i as u32).collect();
                let mut s = 0u32;
                for k in 0..8u32 {
                    let j = ((x >> (k * 4)) % 48) as usize;
                    a[j] = a[j].wrapping_add(k);
                    s = s.wrapping_add(a[(j * 7) % 48]);
                }
                s
            })
            .collect();
        check_bits(&format!("{t} private_array"), &r.read::<u32>(out), &want);
    }
}

#[test]
fn lds_transpose_of_padded_tiles() {
    for &t in ALL {
        let Some(code) = build("transpose.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let (w, h) = (100u32, 70u32);
        let input: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.5 - 7.0).collect();
        let (din, out) = (r.input(&input), r.output(4 * (w * h) as usize));
        r.launch(
            "transpose",
            [w.div_ceil(32), h.div_ceil(32), 1],
            [32, 8, 1],
            &[
                ArgValue::Buffer(din),
                ArgValue::Buffer(out),
                ArgValue::U32(w),
                ArgValue::U32(h),
            ],
        );
        let mut want = vec![0u32; (w * h) as usize];
        for y in 0..h {
            for x in 0..w {
                want[(x * h + y) as usize] = input[(y * w + x) as usize].to_bits();
            }
        }
        check_bits(&format!("{t} transpose"), &r.read::<u32>(out), &want);
    }
}

fn mix_ref(key: &[u32; 8], i: u32, rounds: u32) -> [u32; 4] {
    let mut s = [
        0x6170_7865,
        0x3320_646e,
        0x7962_2d32,
        0x6b20_6574,
        key[0] ^ i,
        key[1],
        key[2],
        key[3],
        key[4],
        key[5],
        key[6],
        key[7],
        i,
        i.wrapping_mul(0x9e37_79b9),
        !i,
        i ^ 0xdead_beef,
    ];
    fn qr(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
        s[a] = s[a].wrapping_add(s[b]);
        s[d] = (s[d] ^ s[a]).rotate_left(16);
        s[c] = s[c].wrapping_add(s[d]);
        s[b] = (s[b] ^ s[c]).rotate_left(12);
        s[a] = s[a].wrapping_add(s[b]);
        s[d] = (s[d] ^ s[a]).rotate_left(8);
        s[c] = s[c].wrapping_add(s[d]);
        s[b] = (s[b] ^ s[c]).rotate_left(7);
    }
    for _ in 0..rounds {
        qr(&mut s, 0, 4, 8, 12);
        qr(&mut s, 1, 5, 9, 13);
        qr(&mut s, 2, 6, 10, 14);
        qr(&mut s, 3, 7, 11, 15);
        qr(&mut s, 0, 5, 10, 15);
        qr(&mut s, 1, 6, 11, 12);
        qr(&mut s, 2, 7, 8, 13);
        qr(&mut s, 3, 4, 9, 14);
    }
    [
        s[0] ^ s[4] ^ s[8] ^ s[12] ^ s[1].wrapping_mul(3),
        s[1] ^ s[5] ^ s[9] ^ s[13] ^ s[2].wrapping_mul(5),
        s[2] ^ s[6] ^ s[10] ^ s[14] ^ s[3].wrapping_mul(7),
        s[3] ^ s[7] ^ s[11] ^ s[15] ^ s[0].wrapping_mul(11),
    ]
}

#[test]
fn integer_hash_with_many_live_registers() {
    for &t in ALL {
        let Some(code) = build("hash.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        let key = [1u32, 2, 3, 0xffff_ffff, 0x1234_5678, 99, 7, 0x8000_0000];
        let n = 320usize;
        let (dk, out) = (r.input(&key), r.output(16 * n));
        r.launch(
            "mix",
            [5, 1, 1],
            [64, 1, 1],
            &[
                ArgValue::Buffer(dk),
                ArgValue::Buffer(out),
                ArgValue::U32(10),
            ],
        );
        let want: Vec<u32> = (0..n as u32).flat_map(|i| mix_ref(&key, i, 10)).collect();
        check_bits(&format!("{t} mix"), &r.read::<u32>(out), &want);
    }
}

#[test]
fn one_mfma_tile_on_cdna() {
    for &t in &["gfx942", "gfx90a"] {
        let Some(code) = build("mfma.cl", t, &[]) else {
            return;
        };
        let r = Run::new(&code, t);
        use half::f16;
        let mut g = Rng(2024);
        // Small multiples of 1/2: every product and sum is exact in f32, so the accumulation
        // order cannot change the result.
        let a: Vec<f32> = (0..32 * 8)
            .map(|_| (g.u32() % 17) as f32 * 0.5 - 4.0)
            .collect();
        let b: Vec<f32> = (0..8 * 32)
            .map(|_| (g.u32() % 17) as f32 * 0.5 - 4.0)
            .collect();
        let ah: Vec<u16> = a.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
        let bh: Vec<u16> = b.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
        let (da, db, out) = (r.input(&ah), r.input(&bh), r.output(4 * 32 * 32));
        let stats = r.launch(
            "mfma_tile",
            [1, 1, 1],
            [64, 1, 1],
            &[
                ArgValue::Buffer(da),
                ArgValue::Buffer(db),
                ArgValue::Buffer(out),
            ],
        );
        assert_eq!(stats.mfma, 1, "{t}: one MFMA instruction");
        let mut want = vec![0u32; 32 * 32];
        for i in 0..32 {
            for j in 0..32 {
                let s: f32 = (0..8).map(|k| a[i * 8 + k] * b[k * 32 + j]).sum();
                want[i * 32 + j] = s.to_bits();
            }
        }
        check_bits(&format!("{t} mfma"), &r.read::<u32>(out), &want);
    }
}
