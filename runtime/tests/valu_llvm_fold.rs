//! Differential test of the vector ALU's lane math against LLVM 19's constant folder: for random
//! inputs, an OpenCL kernel per case calls an `__builtin_amdgcn_*` builtin on constants; clang-19
//! -O3 folds the call and the folded value (read back from the emitted LLVM IR) must equal what
//! the device's lane function computes. LLVM's folds encode its understanding of the hardware
//! instruction (frexp, fract, class, med3, bfe, perm, pkrtz, ldexp, rcp, sin/cos, trig_preop,
//! alignbit), so this checks the emulator against an independent implementation.

use kjit_backend_gcn::llvm_oracle::{opencl_args, require, run, scratch_file, Tool};
use kjit_runtime::emu::valu::transcendental::TransOp;
use kjit_runtime::emu::valu::{compare, float, half, int, transcendental};

mod common;
use common::Rng;

impl Rng {
    /// 32 bits from the middle of [`Rng::next`] (not `u32`'s high half: the cases were chosen
    /// with this stream).
    fn u32_mid(&mut self) -> u32 {
        (self.next() >> 16) as u32
    }
    /// f32 bit patterns: normal numbers of moderate range, some denormals and specials.
    fn f32(&mut self) -> u32 {
        match self.next() % 10 {
            0 => [
                0,
                0x8000_0000,
                0x7f80_0000,
                0xff80_0000,
                0x3f80_0000,
                0x0000_0001,
            ][self.next() as usize % 6],
            1 => self.u32_mid() & 0x807f_ffff,
            _ => (self.u32_mid() & 0x8fff_ffff) | 0x3000_0000,
        }
    }
    fn f64(&mut self) -> u64 {
        match self.next() % 8 {
            0 => self.next() & 0x800f_ffff_ffff_ffff,
            1 => [0, 0x7ff0_0000_0000_0000, 0x3ff0_0000_0000_0000][self.next() as usize % 3],
            _ => (self.next() & 0x8fff_ffff_ffff_ffff) | 0x3000_0000_0000_0000,
        }
    }
}

/// One case: an OpenCL expression of type uint/ulong and the device's answer.
struct Case {
    expr: String,
    wide: bool,
    want: u64,
}

fn f(bits: u32) -> String {
    format!("__builtin_astype({bits:#x}u, float)")
}

fn d(bits: u64) -> String {
    format!("__builtin_astype({bits:#x}ul, double)")
}

fn cases() -> Vec<Case> {
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let mut v = Vec::new();
    let c32 = |expr: String, want: u32| Case {
        expr,
        wide: false,
        want: want as u64,
    };
    let c64 = |expr: String, want: u64| Case {
        expr,
        wide: true,
        want,
    };
    for _ in 0..40 {
        let x = r.f32();
        let fx = f32::from_bits(x);
        if fx.is_finite() {
            v.push(c32(
                format!(
                    "__builtin_astype(__builtin_amdgcn_frexp_mantf({}), uint)",
                    f(x)
                ),
                float::frexp_mant_f32(fx).to_bits(),
            ));
            v.push(c32(
                format!("(uint)__builtin_amdgcn_frexp_expf({})", f(x)),
                float::frexp_exp_f32(fx) as u32,
            ));
            v.push(c32(
                format!("__builtin_astype(__builtin_amdgcn_fractf({}), uint)", f(x)),
                float::fract_f32(fx).to_bits(),
            ));
        }
        let mask = r.u32_mid() & 0x3ff;
        v.push(c32(
            format!("(uint)__builtin_amdgcn_classf({}, {mask})", f(x)),
            compare::class(x, mask) as u32,
        ));
        let (a, b, c) = (r.f32(), r.f32(), r.f32());
        if [a, b, c].iter().all(|&t| !f32::from_bits(t).is_nan()) {
            v.push(c32(
                format!(
                    "__builtin_astype(__builtin_amdgcn_fmed3f({}, {}, {}), uint)",
                    f(a),
                    f(b),
                    f(c)
                ),
                float::med3(a, b, c, true),
            ));
        }
        let (p, q, s) = (r.u32_mid(), r.u32_mid(), r.u32_mid());
        let (off, w) = (r.u32_mid() % 32, r.u32_mid() % 33);
        v.push(c32(
            format!("__builtin_amdgcn_ubfe({p:#x}u, {off}u, {w}u)"),
            int::bfe_u32(p, off, w),
        ));
        v.push(c32(
            format!("(uint)__builtin_amdgcn_sbfe((int){p:#x}u, {off}u, {w}u)"),
            int::bfe_i32(p, off, w),
        ));
        let sel = s & 0x0f0f_0f0f; // selectors 0..15 in every byte
        v.push(c32(
            format!("__builtin_amdgcn_perm({p:#x}u, {q:#x}u, {sel:#x}u)"),
            int::perm(p, q, sel),
        ));
        v.push(c32(
            format!("__builtin_amdgcn_alignbit({p:#x}u, {q:#x}u, {}u)", s % 32),
            int::alignbit(p, q, s % 32),
        ));
        if !f32::from_bits(a).is_nan() && !f32::from_bits(b).is_nan() {
            let want = half::from_f32_rtz(f32::from_bits(a)) as u32
                | (half::from_f32_rtz(f32::from_bits(b)) as u32) << 16;
            v.push(c32(
                format!(
                    "__builtin_astype(__builtin_amdgcn_cvt_pkrtz({}, {}), uint)",
                    f(a),
                    f(b)
                ),
                want,
            ));
        }
        let e = (r.u32_mid() % 300) as i32 - 150;
        if fx.is_finite() {
            v.push(c32(
                format!(
                    "__builtin_astype(__builtin_amdgcn_ldexpf({}, {e}), uint)",
                    f(x)
                ),
                float::ldexp_f32(fx, e).to_bits(),
            ));
        }
        // rcp: normal inputs whose reciprocal is normal (denormal behaviour is a hardware flush
        // that LLVM's folder does not model).
        if fx.is_normal() && fx.abs() < 1e37 {
            v.push(c32(
                format!("__builtin_astype(__builtin_amdgcn_rcpf({}), uint)", f(x)),
                transcendental::rcp_f32(fx).to_bits(),
            ));
        }
        // sin/cos of revolutions in [-2, 2).
        let rev = (r.u32_mid() % 4096) as f32 / 1024.0 - 2.0 + (r.u32_mid() % 1000) as f32 * 1e-6;
        v.push(c32(
            format!(
                "__builtin_astype(__builtin_amdgcn_sinf({}), uint)",
                f(rev.to_bits())
            ),
            transcendental::sin_f32(rev).to_bits(),
        ));
        v.push(c32(
            format!(
                "__builtin_astype(__builtin_amdgcn_cosf({}), uint)",
                f(rev.to_bits())
            ),
            transcendental::cos_f32(rev).to_bits(),
        ));
        // f16 forms.
        let hx = (r.u32_mid() & 0xffff) as u16;
        let hv = |b: u16| format!("__builtin_astype((ushort){b:#x}, half)");
        let fh = half::to_f32(hx);
        if fh.is_finite() {
            v.push(c32(
                format!(
                    "(uint)__builtin_astype(__builtin_amdgcn_frexp_manth({}), ushort)",
                    hv(hx)
                ),
                half::frexp_mant(hx) as u32,
            ));
            v.push(c32(
                format!("(uint)(int)__builtin_amdgcn_frexp_exph({})", hv(hx)),
                half::frexp_exp(hx) as i16 as i32 as u32,
            ));
            v.push(c32(
                format!(
                    "(uint)__builtin_astype(__builtin_amdgcn_fracth({}), ushort)",
                    hv(hx)
                ),
                half::fract(hx) as u32,
            ));
            let e = (r.u32_mid() % 60) as i32 - 30;
            v.push(c32(
                format!(
                    "(uint)__builtin_astype(__builtin_amdgcn_ldexph({}, {e}), ushort)",
                    hv(hx)
                ),
                half::ldexp(hx, e) as u32,
            ));
        }
        v.push(c32(
            format!("(uint)__builtin_amdgcn_classh({}, {mask})", hv(hx)),
            compare::class(hx, mask) as u32,
        ));
        if fh.is_normal() {
            for (name, op) in [("rcph", TransOp::Rcp), ("sqrth", TransOp::Sqrt)] {
                if name == "sqrth" && fh < 0.0 {
                    continue;
                }
                v.push(c32(
                    format!(
                        "(uint)__builtin_astype(__builtin_amdgcn_{name}({}), ushort)",
                        hv(hx)
                    ),
                    transcendental::f16_unary(op, hx) as u32,
                ));
            }
        }
        let hr = half::from_f32(rev);
        for (name, op) in [("sinh", TransOp::Sin), ("cosh", TransOp::Cos)] {
            v.push(c32(
                format!(
                    "(uint)__builtin_astype(__builtin_amdgcn_{name}({}), ushort)",
                    hv(hr)
                ),
                transcendental::f16_unary(op, hr) as u32,
            ));
        }
        let (h1, h2, h3) = (
            (r.u32_mid() & 0x7bff) as u16,
            (r.u32_mid() & 0xfbff) as u16,
            (r.u32_mid() & 0xfbff) as u16,
        );
        v.push(c32(
            format!(
                "(uint)__builtin_astype(__builtin_amdgcn_fmed3h({}, {}, {}), ushort)",
                hv(h1),
                hv(h2),
                hv(h3)
            ),
            half::med3(h1, h2, h3, true) as u32,
        ));
        let y = r.f64();
        let fy = f64::from_bits(y);
        if fy.is_finite() {
            v.push(c64(
                format!(
                    "__builtin_astype(__builtin_amdgcn_frexp_mant({}), ulong)",
                    d(y)
                ),
                float::frexp_mant_f64(fy).to_bits(),
            ));
            v.push(c32(
                format!("(uint)__builtin_amdgcn_frexp_exp({})", d(y)),
                float::frexp_exp_f64(fy) as u32,
            ));
            v.push(c64(
                format!("__builtin_astype(__builtin_amdgcn_fract({}), ulong)", d(y)),
                float::fract_f64(fy).to_bits(),
            ));
            let seg = r.u32_mid() % 32;
            v.push(c64(
                format!(
                    "__builtin_astype(__builtin_amdgcn_trig_preop({}, {seg}), ulong)",
                    d(y)
                ),
                float::trig_preop_f64(fy, seg).to_bits(),
            ));
        }
        v.push(c32(
            format!("(uint)__builtin_amdgcn_class({}, {mask})", d(y)),
            compare::class(y, mask) as u32,
        ));
    }
    v
}

#[test]
fn lane_math_matches_llvm_constant_folding() {
    let Some(clang) = require(Tool::Clang, "valu llvm fold") else {
        return;
    };
    let cases = cases();
    let mut src = String::from(
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n",
    );
    for (n, c) in cases.iter().enumerate() {
        let ty = if c.wide { "ulong" } else { "uint" };
        src.push_str(&format!(
            "kernel void k{n}(global {ty}* o) {{ *o = {}; }}\n",
            c.expr
        ));
    }
    let cl = scratch_file("fold.cl", &src).unwrap_or_else(|e| panic!("{e}"));
    let mut args = opencl_args("gfx942");
    args.extend(["-S", "-emit-llvm", "-o", "-"].map(String::from));
    args.push(cl.to_string_lossy().into_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ir = run(&clang, &args, None).unwrap_or_else(|e| panic!("clang-19: {e}"));
    if let Some(dir) = cl.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    // Each kernel body is one `store iN <constant>` once folded.
    let mut folded = vec![None; cases.len()];
    let mut current = None;
    for line in ir.lines() {
        if let Some(rest) = line.strip_prefix("define ") {
            current = rest
                .split("@k")
                .nth(1)
                .and_then(|s| s.split('(').next())
                .and_then(|n| n.parse::<usize>().ok());
        } else if let (Some(k), Some(rest)) = (current, line.trim_start().strip_prefix("store ")) {
            let mut it = rest.split_whitespace();
            let (ty, val) = (
                it.next().unwrap_or(""),
                it.next().unwrap_or("").trim_end_matches(','),
            );
            if let Ok(x) = val.parse::<i64>() {
                folded[k] = Some(if ty == "i32" {
                    x as u32 as u64
                } else {
                    x as u64
                });
            }
        }
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let Some(got) = folded[k] else { continue }; // LLVM did not fold this one
        checked += 1;
        if got != c.want {
            bad.push(format!("{}: llvm {got:#x}, device {:#x}", c.expr, c.want));
        }
    }
    eprintln!(
        "{checked} of {} cases folded by LLVM and compared",
        cases.len()
    );
    assert!(
        checked >= cases.len() * 3 / 4,
        "LLVM folded only {checked} of {} cases",
        cases.len()
    );
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
