//! The text form: print → parse → print is the identity, and bad text gives a line-numbered error.

use kjit_ir::parse::parse_function;
use kjit_ir::*;

const SAMPLE: &str = "kernel sample(alpha: f32, n: i32, x: buf<f32>, y: buf_mut<f32>, h: buf_mut<f16>, d: buf_mut<f64>) contract {
    lds0 = lds tile: f32[256]
    lds1 = lds flags: u32[4]
block0(v0: f32, v1: i32, v2: buf<f32>, v3: buf_mut<f32>, v4: buf_mut<f16>, v5: buf_mut<f64>):
    v6:u32 = workitem_id.x
    v7:u32 = workgroup_id.y
    v8:u32 = lane_id
    v9:f32 = const.f32 -1.5e-7
    v10:f32 = const.f32 nan:0x7fc00001
    v11:f64 = const.f64 -inf
    v12:f16 = const.f16 0.099975586
    v13:i32 = const.i32 -7
    v14:u64 = const.u64 18446744073709551615
    v15:bool = const.bool true
    v16:f32, v17:f32, v18:f32, v19:f32 = load.x4 v2[v6+4]
    v20:f32 = fma v16, v17, v9
    store.x2 v3[v6+1], v20, v18
    store lds0[v6], v19
    barrier
    v21:f32 = load lds0[v8+3]
    v22:f32 = wave_shuffle v21, v6
    v23:f32 = wave_broadcast v22, 63
    v24:f32 = wave_reduce.max v23
    v25:f32 = wave_scan.add v24
    v26:f32 = atomic_add v3[v7], v25
    v27:f32 = atomic_cas v3[v7+2], v26, v0
    v28:i32 = convert v27
    v29:bool = lt v28, v1
    v30:i32 = select v29, v28, v13
    v31:u32 = bitcast v30
    v32:u32 = lshl_add v31, v6, v7
    v33:f16 = convert v25
    store v4[v32], v33
    v34:u32 = buffer_len v2
    brif v15, block1(v31, v34), block2
block1(v35: u32, v36: u32):
    v37:u32 = min v35, v36
    v38:f32 = sqrt v0
    v39:f64 = convert v38
    store v5[v37], v39
    jump block2
block2:
    return
}
";

#[test]
fn sample_parses_verifies_and_prints_identically() {
    let f = parse_function(SAMPLE).unwrap();
    verify(&f).unwrap();
    assert_eq!(f.to_string(), SAMPLE);
    let g = parse_function(&f.to_string()).unwrap();
    assert_eq!(f, g);
}

#[test]
fn holes_in_the_numbering_survive_a_round_trip() {
    let text = "kernel k(b: buf_mut<u32>) {
block3(v10: buf_mut<u32>):
    v12:u32 = const.u32 5
    store v10[v12], v12
    jump block1
block1:
    return
}
";
    let f = parse_function(text).unwrap();
    verify(&f).unwrap();
    assert_eq!(f.to_string(), text);
}

#[test]
fn errors_name_the_line() {
    let bad = SAMPLE.replace("v20:f32 = fma v16, v17, v9", "v20:f32 = fmaa v16, v17, v9");
    let e = parse_function(&bad).unwrap_err();
    assert_eq!(e.line, 16, "{e}");
    assert!(e.message.contains("unknown operation `fmaa`"), "{e}");

    let bad = SAMPLE.replace("v9:f32 = const.f32 -1.5e-7", "v9:f32 = const.f32 1.5x");
    let e = parse_function(&bad).unwrap_err();
    assert!(e.message.contains("not a f32 constant"), "{e}");

    let bad = SAMPLE.replace("v21:f32 = load lds0[v8+3]", "v20:f32 = load lds0[v8+3]");
    assert!(parse_function(&bad)
        .unwrap_err()
        .message
        .contains("defined twice"));

    let bad = SAMPLE.replace("}\n", "");
    assert!(parse_function(&bad)
        .unwrap_err()
        .message
        .contains("missing closing"));

    // Well-formed syntax with a type error is the verifier's to find.
    let bad = SAMPLE.replace("v37:u32 = min v35, v36", "v37:u32 = min v35, v0");
    let f = parse_function(&bad).unwrap();
    assert!(verify(&f)
        .unwrap_err()
        .to_string()
        .contains("operand types differ"));
}

#[test]
fn every_float_constant_form_round_trips() {
    for bits in [
        0u32,
        0x8000_0000,
        1,
        0x7f7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7fa0_0001,
        0x3dcc_cccd,
    ] {
        let s = kjit_ir::write::format_const(Type::F32, bits as u64);
        assert_eq!(
            kjit_ir::parse::parse_const(Type::F32, &s),
            Ok(bits as u64),
            "{s}"
        );
    }
    for bits in [0u16, 0x8000, 1, 0x7bff, 0x7c00, 0x7e00, 0x3555] {
        let s = kjit_ir::write::format_const(Type::F16, bits as u64);
        assert_eq!(
            kjit_ir::parse::parse_const(Type::F16, &s),
            Ok(bits as u64),
            "{s}"
        );
    }
    for bits in [
        0u64,
        1,
        0x7fef_ffff_ffff_ffff,
        0x3fb9_9999_9999_999a,
        0x7ff8_0000_0000_0001,
    ] {
        let s = kjit_ir::write::format_const(Type::F64, bits);
        assert_eq!(kjit_ir::parse::parse_const(Type::F64, &s), Ok(bits), "{s}");
    }
}
