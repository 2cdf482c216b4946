//! Wave-level tests of the dispatcher: operands, modifiers, EXEC, DPP/SDWA forms, carries,
//! compares and MFMA, each against a Rust reference.

use super::super::lanes::{SdwaSel, SdwaUnused};
use super::super::{Dpp, Form, Sdwa, ValuInst, ValuOp};
use super::execute as execute_valu;
use crate::emu::wave::{code, Lanes, Wave, WaveId, LANES};
use kjit_backend_gcn::Target;

fn wave(t: Target) -> Wave {
    let mut w = Wave::new(
        WaveId::default(),
        t,
        102,
        256,
        if t.has_agprs() { 256 } else { 0 },
    );
    w.exec = u64::MAX;
    w.mode = 0x3f0;
    w
}

fn v(n: u16) -> u16 {
    code::VGPR0 + n
}

fn inst(name: &str, form: Form, vdst: u16, src: [u16; 3]) -> ValuInst {
    let op = ValuOp::from_name(name).unwrap_or_else(|| panic!("{name} is not in the table"));
    let mut i = ValuInst::new(op, form);
    i.vdst = vdst;
    i.src = src;
    i
}

fn set(w: &mut Wave, r: usize, f: impl Fn(usize) -> u32) {
    let vals: Lanes = std::array::from_fn(f);
    w.vgpr[r] = vals;
}

#[test]
fn f32_add_writes_only_active_lanes() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |l| (l as f32 * 0.5).to_bits());
    set(&mut w, 2, |l| (l as f32).to_bits());
    set(&mut w, 3, |_| 0xdead_beef);
    w.exec = 0x0000_ffff_0000_ffff;
    execute_valu(
        &mut w,
        &inst("v_add_f32_e32", Form::E32, 3, [v(1), v(2), 0]),
    )
    .unwrap();
    for l in 0..LANES {
        let want = if w.exec >> l & 1 != 0 {
            (l as f32 * 1.5).to_bits()
        } else {
            0xdead_beef
        };
        assert_eq!(w.vgpr[3][l], want, "lane {l}");
    }
}

#[test]
fn vop3_modifiers_negate_abs_clamp_and_omod() {
    let mut w = wave(Target::Gfx90a);
    set(&mut w, 1, |l| (l as f32 - 32.0).to_bits());
    set(&mut w, 2, |_| 0.25f32.to_bits());
    let mut i = inst("v_mul_f32_e64", Form::Vop3, 3, [v(1), v(2), 0]);
    i.abs = 1;
    i.neg = 2; // |a| * -b
    i.omod = 1; // *2
    execute_valu(&mut w, &i).unwrap();
    for l in 0..LANES {
        assert_eq!(
            f32::from_bits(w.vgpr[3][l]),
            -((l as f32 - 32.0).abs() * 0.25) * 2.0
        );
    }
    i.clamp = true;
    i.neg = 0;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(f32::from_bits(w.vgpr[3][0]), 1.0);
    assert_eq!(f32::from_bits(w.vgpr[3][32]), 0.0);
}

#[test]
fn carry_chain_adds_64_bit_values() {
    let mut w = wave(Target::Gfx942);
    let a: Vec<u64> = (0..64)
        .map(|l| u64::MAX - l as u64 * 0x1234_5678_9)
        .collect();
    let b: Vec<u64> = (0..64).map(|l| (l as u64) << 31).collect();
    set(&mut w, 0, |l| a[l] as u32);
    set(&mut w, 1, |l| (a[l] >> 32) as u32);
    set(&mut w, 2, |l| b[l] as u32);
    set(&mut w, 3, |l| (b[l] >> 32) as u32);
    // v_add_co_u32 v4, s[10:11], v0, v2 ; v_addc_co_u32 v5, vcc, v1, v3, s[10:11]
    let mut lo = inst("v_add_co_u32_e64", Form::Vop3, 4, [v(0), v(2), 0]);
    lo.sdst = 10;
    execute_valu(&mut w, &lo).unwrap();
    let mut hi = inst("v_addc_co_u32_e64", Form::Vop3, 5, [v(1), v(3), 10]);
    hi.sdst = code::VCC_LO;
    execute_valu(&mut w, &hi).unwrap();
    for l in 0..64 {
        let got = w.vgpr[4][l] as u64 | (w.vgpr[5][l] as u64) << 32;
        assert_eq!(got, a[l].wrapping_add(b[l]), "lane {l}");
        let carry = (a[l] as u128 + b[l] as u128) >> 64 != 0;
        assert_eq!(w.vcc >> l & 1 != 0, carry);
    }
}

#[test]
fn compares_write_vcc_and_cmpx_narrows_exec() {
    let mut w = wave(Target::Gfx900);
    set(&mut w, 1, |l| l as u32);
    w.exec = !0xf; // lanes 0-3 inactive
    let i = inst("v_cmp_gt_u32_e32", Form::E32, 0, [code::ZERO + 10, v(1), 0]); // 10 > v1
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vcc, 0x3f0, "lanes 4..9; inactive lanes read 0");
    let mut i = inst(
        "v_cmpx_lt_i32_e64",
        Form::Vop3,
        0,
        [v(1), code::ZERO + 20, 0],
    );
    i.sdst = 20;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.exec, 0xffff0);
    assert_eq!(w.sgpr[20], 0xffff0);
    // Class test through the f32 path: v1 as f32 bit patterns 0..63 are denormals or +0.
    w.exec = u64::MAX;
    let i = inst(
        "v_cmp_class_f32_e32",
        Form::E32,
        0,
        [v(1), code::ZERO + 64 + 0, 0],
    );
    let mut i2 = i;
    i2.src[1] = code::LITERAL;
    i2.literal = 1 << 7; // +denormal
    execute_valu(&mut w, &i2).unwrap();
    assert_eq!(w.vcc, !1u64);
    let _ = i;
}

#[test]
fn cndmask_selects_by_vcc_or_sgpr_pair() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |_| 1);
    set(&mut w, 2, |_| 2);
    w.vcc = 0xaaaa_aaaa_aaaa_aaaa;
    execute_valu(
        &mut w,
        &inst("v_cndmask_b32_e32", Form::E32, 3, [v(1), v(2), 0]),
    )
    .unwrap();
    assert_eq!(w.vgpr[3][0], 1);
    assert_eq!(w.vgpr[3][1], 2);
    w.sgpr[6] = 0xffff_ffff;
    w.sgpr[7] = 0;
    execute_valu(
        &mut w,
        &inst("v_cndmask_b32_e64", Form::Vop3, 3, [v(1), v(2), 6]),
    )
    .unwrap();
    assert_eq!(w.vgpr[3][31], 2);
    assert_eq!(w.vgpr[3][32], 1);
}

/// The DPP prefix-sum LLVM emits for a wave reduction (row_shr:1,2,3 with bound_ctrl, then
/// row_bcast:15/31 with row masks) computes an inclusive scan.
#[test]
fn dpp_scan_matches_a_prefix_sum() {
    let mut w = wave(Target::Gfx942);
    let input: Vec<u32> = (0..64).map(|l| (l * 7 + 3) as u32 % 11).collect();
    set(&mut w, 0, |l| input[l]);
    let dpp = |ctrl: u16, row_mask: u8, bank_mask: u8, bound_ctrl: bool| {
        Form::Dpp(Dpp {
            ctrl,
            row_mask,
            bank_mask,
            bound_ctrl,
        })
    };
    // Within rows: v0 += shr1(v0) ; += shr2 ; += shr3 ; (+ shr4, shr8 with bank masks)
    let add = |w: &mut Wave, f: Form| {
        execute_valu(w, &inst("v_add_u32_dpp", f, 0, [v(0), v(0), 0])).unwrap();
    };
    // Hillis-Steele in a row: shifts 1, 2, 4, 8 (row_shr:n with bound_ctrl reads 0 off the row).
    for s in [1u16, 2, 4, 8] {
        // Copy first so every lane reads the pre-step value.
        let prev = w.vgpr[0];
        w.vgpr[1] = prev;
        execute_valu(
            &mut w,
            &inst(
                "v_add_u32_dpp",
                dpp(0x110 + s, 0xf, 0xf, true),
                0,
                [v(1), v(1), 0],
            ),
        )
        .unwrap();
    }
    // Rows: bcast15 into rows 1 and 3, then bcast31 into rows 2 and 3.
    add(&mut w, dpp(0x142, 0xa, 0xf, false));
    add(&mut w, dpp(0x143, 0xc, 0xf, false));
    let mut acc = 0;
    for l in 0..64 {
        acc += input[l];
        assert_eq!(w.vgpr[0][l], acc, "lane {l}");
    }
}

#[test]
fn sdwa_selects_bytes_and_preserves_destination() {
    let mut w = wave(Target::Gfx900);
    set(&mut w, 1, |_| 0x1122_3344);
    set(&mut w, 2, |_| 0x0000_0100);
    set(&mut w, 3, |_| 0xaaaa_aaaa);
    let sd = Sdwa {
        dst_sel: SdwaSel::Byte2,
        dst_unused: SdwaUnused::Preserve,
        src_sel: [SdwaSel::Byte3, SdwaSel::Byte1],
        sext: [false, false],
    };
    execute_valu(
        &mut w,
        &inst("v_add_u32_sdwa", Form::Sdwa(sd), 3, [v(1), v(2), 0]),
    )
    .unwrap();
    assert_eq!(w.vgpr[3][5], 0xaa12_aaaa); // 0x11 + 0x01 into byte 2
}

#[test]
fn packed_f16_add_honours_op_sel() {
    let mut w = wave(Target::Gfx942);
    let h = |x: f32| super::super::half::from_f32(x) as u32;
    set(&mut w, 1, |_| h(1.0) | h(2.0) << 16);
    set(&mut w, 2, |_| h(10.0) | h(20.0) << 16);
    let mut i = inst("v_pk_add_f16", Form::Vop3p, 3, [v(1), v(2), 0]);
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[3][0], h(11.0) | h(22.0) << 16);
    i.op_sel = 1; // lo half of the result reads src0's high half
    i.op_sel_hi = 0b10; // hi half reads src0's low half
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[3][0], h(12.0) | h(21.0) << 16);
    i.neg_hi = 0b10;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[3][0], h(12.0) | h(-19.0) << 16);
}

#[test]
fn f16_ops_zero_or_preserve_the_high_half() {
    let mut w = wave(Target::Gfx90a);
    let h = |x: f32| super::super::half::from_f32(x) as u32;
    set(&mut w, 1, |_| 0xffff_0000 | h(1.5));
    set(&mut w, 2, |_| h(2.0));
    set(&mut w, 3, |_| 0x1234_0000);
    execute_valu(
        &mut w,
        &inst("v_add_f16_e32", Form::E32, 3, [v(1), v(2), 0]),
    )
    .unwrap();
    assert_eq!(w.vgpr[3][0], h(3.5));
    set(&mut w, 3, |_| 0x1234_0000);
    let mut i = inst("v_fma_f16", Form::Vop3, 3, [v(1), v(2), v(2)]);
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[3][0], 0x1234_0000 | h(5.0));
    i.op_sel = 8;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[3][0], h(5.0) << 16 | h(5.0));
}

#[test]
fn mad_u64_u32_and_64_bit_shifts() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |l| 0xffff_0000 + l as u32);
    set(&mut w, 2, |_| 0x1_0001);
    set(&mut w, 4, |_| 5);
    set(&mut w, 5, |_| 0);
    let mut i = inst("v_mad_u64_u32", Form::Vop3, 6, [v(1), v(2), v(4)]);
    i.sdst = 30;
    execute_valu(&mut w, &i).unwrap();
    for l in 0..64 {
        let want = (0xffff_0000u64 + l as u64) * 0x1_0001 + 5;
        assert_eq!(w.vgpr[6][l] as u64 | (w.vgpr[7][l] as u64) << 32, want);
    }
    execute_valu(
        &mut w,
        &inst("v_lshlrev_b64", Form::Vop3, 8, [code::ZERO + 36, v(6), 0]),
    )
    .unwrap();
    let want = ((0xffff_0000u64 * 0x1_0001 + 5) << 36) as u32;
    assert_eq!(w.vgpr[8][0], want);
}

#[test]
fn readlane_writelane_readfirstlane_and_mbcnt() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |l| 100 + l as u32);
    let mut i = inst("v_readlane_b32", Form::Vop3, 0, [v(1), code::ZERO + 37, 0]);
    i.sdst = 12;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.sgpr[12], 137);
    w.exec = 0xf0;
    let mut i = inst("v_readfirstlane_b32", Form::E32, 0, [v(1), 0, 0]);
    i.sdst = 13;
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.sgpr[13], 104);
    w.sgpr[14] = 0xabc;
    execute_valu(
        &mut w,
        &inst("v_writelane_b32", Form::Vop3, 2, [14, code::ZERO + 63, 0]),
    )
    .unwrap();
    assert_eq!(w.vgpr[2][63], 0xabc, "writelane ignores EXEC");
    w.exec = u64::MAX;
    // v_mbcnt_lo(-1, 0) then v_mbcnt_hi(-1, that) = lane id.
    execute_valu(
        &mut w,
        &inst(
            "v_mbcnt_lo_u32_b32",
            Form::Vop3,
            3,
            [code::ZERO + 64 + 129 - 128, code::ZERO, 0],
        ),
    )
    .unwrap_or(());
    let mut lo = inst("v_mbcnt_lo_u32_b32", Form::Vop3, 3, [193, code::ZERO, 0]); // -1
    lo.src[0] = 193;
    execute_valu(&mut w, &lo).unwrap();
    execute_valu(
        &mut w,
        &inst("v_mbcnt_hi_u32_b32", Form::Vop3, 3, [193, v(3), 0]),
    )
    .unwrap();
    for l in 0..64 {
        assert_eq!(w.vgpr[3][l], l as u32);
    }
}

#[test]
fn denormal_mode_flushes_f32_arithmetic() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |_| 1); // smallest denormal
    let i = inst("v_add_f32_e32", Form::E32, 2, [v(1), v(1), 0]);
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[2][0], 2);
    w.mode = 0x3c0; // f32 denormals flushed
    execute_valu(&mut w, &i).unwrap();
    assert_eq!(w.vgpr[2][0], 0);
}

#[test]
fn f64_division_macro_runs_through_the_dispatcher() {
    let mut w = wave(Target::Gfx90a);
    let n: Vec<f64> = (0..64).map(|l| (l as f64 + 1.0) * 1.37e-3).collect();
    let dv: Vec<f64> = (0..64).map(|l| 3.0 - l as f64 * 0.77).collect();
    let put = |w: &mut Wave, r: usize, x: &[f64]| {
        set(w, r, |l| x[l].to_bits() as u32);
        set(w, r + 1, |l| (x[l].to_bits() >> 32) as u32);
    };
    put(&mut w, 0, &n);
    put(&mut w, 2, &dv);
    let run = |w: &mut Wave, name: &str, d: u16, s: [u16; 3], sdst: u16, neg: u8| {
        let mut i = inst(name, Form::Vop3, d, s);
        i.sdst = sdst;
        i.neg = neg;
        execute_valu(w, &i).unwrap();
    };
    // LLVM's f64 fdiv expansion: v4 = scale(d), v6 = rcp, ... (registers as pairs).
    run(&mut w, "v_div_scale_f64", 4, [v(2), v(2), v(0)], 40, 0);
    run(&mut w, "v_rcp_f64", 6, [v(4), 0, 0], 0, 0);
    run(&mut w, "v_fma_f64", 8, [v(4), v(6), 242], 0, 1); // -den*rcp + 1
    run(&mut w, "v_fma_f64", 6, [v(6), v(8), v(6)], 0, 0);
    run(&mut w, "v_fma_f64", 8, [v(4), v(6), 242], 0, 1);
    run(
        &mut w,
        "v_div_scale_f64",
        10,
        [v(0), v(2), v(0)],
        code::VCC_LO,
        0,
    );
    run(&mut w, "v_fma_f64", 6, [v(6), v(8), v(6)], 0, 0);
    run(&mut w, "v_mul_f64", 12, [v(10), v(6), 0], 0, 0);
    run(&mut w, "v_fma_f64", 8, [v(4), v(12), v(10)], 0, 1);
    run(&mut w, "v_div_fmas_f64", 8, [v(8), v(6), v(12)], 0, 0);
    run(&mut w, "v_div_fixup_f64", 8, [v(8), v(2), v(0)], 0, 0);
    for l in 0..64 {
        let got = f64::from_bits(w.vgpr[8][l] as u64 | (w.vgpr[9][l] as u64) << 32);
        assert_eq!(got, n[l] / dv[l], "lane {l}");
    }
}

#[test]
fn mfma_32x32x8_f16_tile_matches_a_reference_matmul() {
    let mut w = wave(Target::Gfx942);
    let h = |x: f32| super::super::half::from_f32(x) as u32;
    let a = |i: usize, k: usize| ((i * 5 + k * 3) % 9) as f32 - 4.0;
    let b = |k: usize, j: usize| ((k + 2 * j) % 7) as f32 * 0.25;
    // A in v[0:1]: lane l holds row l%32, k = 4*(l/32) .. +3 (two f16 per register).
    for l in 0..64 {
        let (i, k0) = (l % 32, 4 * (l / 32));
        w.vgpr[0][l] = h(a(i, k0)) | h(a(i, k0 + 1)) << 16;
        w.vgpr[1][l] = h(a(i, k0 + 2)) | h(a(i, k0 + 3)) << 16;
        w.vgpr[2][l] = h(b(k0, i)) | h(b(k0 + 1, i)) << 16;
        w.vgpr[3][l] = h(b(k0 + 2, i)) | h(b(k0 + 3, i)) << 16;
    }
    for r in 0..16 {
        w.agpr[r] = [0.5f32.to_bits(); 64];
    }
    let mut i = inst("v_mfma_f32_32x32x8f16", Form::Vop3p, 0, [v(0), v(2), v(0)]);
    i.acc = 1 | 8; // D and C in AGPRs
    execute_valu(&mut w, &i).unwrap();
    for r in 0..16 {
        for l in 0..64 {
            let (row, col) = (8 * (r / 4) + 4 * (l / 32) + r % 4, l % 32);
            let want: f32 = 0.5 + (0..8).map(|k| a(row, k) * b(k, col)).sum::<f32>();
            assert_eq!(f32::from_bits(w.agpr[r][l]), want, "D[{row}][{col}]");
        }
    }
    // accvgpr_read moves a result back to a VGPR.
    let mut rd = inst("v_accvgpr_read_b32", Form::Vop3p, 20, [v(5), 0, 0]);
    rd.acc = 2;
    execute_valu(&mut w, &rd).unwrap();
    assert_eq!(w.vgpr[20], w.agpr[5]);
    assert!(
        execute_valu(&mut wave(Target::Gfx900), &i).is_err(),
        "no MFMA on gfx900"
    );
}

/// Rough throughput of the lane loops (run with `--ignored --nocapture`; numbers go to the
/// performance log, not into assertions).
#[test]
#[ignore]
fn throughput_of_common_ops() {
    let mut w = wave(Target::Gfx942);
    set(&mut w, 1, |l| (l as f32).to_bits());
    set(&mut w, 2, |l| (l as f32 * 0.5).to_bits());
    for name in [
        "v_add_f32_e32",
        "v_fma_f32",
        "v_mul_lo_u32",
        "v_exp_f32_e32",
        "v_add_co_u32_e64",
        "v_cmp_lt_f32_e32",
    ] {
        let i = inst(
            name,
            if name.ends_with("e32") {
                Form::E32
            } else {
                Form::Vop3
            },
            3,
            [v(1), v(2), v(2)],
        );
        let n = 200_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            execute_valu(&mut w, &i).unwrap();
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name:20} {:7.1} M wave-inst/s {:8.1} M lane-ops/s",
            n as f64 / s / 1e6,
            n as f64 * 64.0 / s / 1e6
        );
    }
}

#[test]
fn registers_beyond_the_allocation_are_errors_not_panics() {
    let mut w = Wave::new(WaveId::default(), Target::Gfx942, 16, 8, 4);
    w.exec = u64::MAX;
    let cases = [
        inst("v_add_f32_e32", Form::E32, 8, [v(0), v(1), 0]),
        inst("v_add_f32_e32", Form::E32, 0, [v(9), v(1), 0]),
        inst("v_fma_f16", Form::Vop3, 9, [v(0), v(1), v(2)]),
        inst("v_add_f64", Form::Vop3, 7, [v(0), v(2), 0]),
        inst("v_mac_f32_e32", Form::E32, 200, [v(0), v(1), 0]),
        inst("v_swap_b32_e32", Form::E32, 0, [v(100), 0, 0]),
        inst("v_mfma_f32_32x32x8f16", Form::Vop3p, 0, [v(0), v(2), v(0)]),
        inst("v_writelane_b32", Form::Vop3, 12, [0, 0, 0]),
    ];
    for i in cases {
        assert!(execute_valu(&mut w, &i).is_err(), "{:?}", i.op);
    }
}
