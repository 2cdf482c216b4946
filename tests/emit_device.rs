//! Emission on its own, before instruction selection and register allocation exist: a vector add
//! written by hand as a `PhysFunction` (kernarg loads, work-item bounds through EXEC, a divergent
//! skip branch, global loads and a store) is emitted for each target, loaded on kjit's software
//! GCN device and run on a size that is not a multiple of the workgroup size; its asm must
//! re-assemble with llvm-mc-19 to the code object's `.text` and llvm-readelf-19 must read its
//! notes. A deliberately missing `s_waitcnt` must make the device report a hazard, so the test
//! would notice if the emitted code were not what actually ran.

use kjit_backend_gcn::codeobj::{ArgMeta, KernargLayout, KernelMeta, UserSgprs, ValueKind};
use kjit_backend_gcn::emit::{emit, EmitError, Emitted};
use kjit_backend_gcn::isa::{Inst, Opcode, Operand, SpecialReg};
use kjit_backend_gcn::llvm_oracle::{require, run, Tool};
use kjit_backend_gcn::mir::{BranchCond, KernelAbi, MBlock};
use kjit_backend_gcn::phys::{PhysBlock, PhysFunction, PhysTerminator, RegUsage};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use kjit_runtime::emu::GcnEmulator;
use kjit_runtime::{ArgValue, Device, LaunchDims};

const VCC: Operand = Operand::Special(SpecialReg::Vcc);
const EXEC: Operand = Operand::Special(SpecialReg::Exec);

/// gfx9 `s_waitcnt` immediates (vmcnt bits 3:0 and 15:14, expcnt 6:4, lgkmcnt 11:8).
const LGKMCNT_0: i64 = 0xc07f;
const VMCNT_0: i64 = 0x0f70;

fn i(op: Opcode, ops: &[Operand]) -> Inst {
    Inst::new(op, ops)
}

fn smem(op: Opcode, dst: Operand, offset: i64) -> Inst {
    i(op, &[dst, Operand::sr(0, 2), Operand::Imm(offset)])
}

/// The kernarg layout of `vector_add(a: buf<f32>, b: buf<f32>, c: buf_mut<f32>)` per the kjit ABI.
fn meta() -> KernelMeta {
    let mut l = KernargLayout::new();
    l.global_buffer("a", true).by_value("a.len", 4, 4);
    l.global_buffer("b", true).by_value("b.len", 4, 4);
    l.global_buffer("c", false).by_value("c.len", 4, 4);
    let (args, size) = l.finish_v5(&[
        ValueKind::HiddenBlockCountX,
        ValueKind::HiddenGroupSizeX,
        ValueKind::HiddenRemainderX,
    ]);
    let mut m = KernelMeta::new("vector_add_by_hand");
    m.args = args;
    m.kernarg_segment_size = size;
    m.max_flat_workgroup_size = 1024;
    m
}

fn group_size_offset(m: &KernelMeta) -> i64 {
    m.hidden_arg(&ValueKind::HiddenGroupSizeX)
        .map(|a: &ArgMeta| a.offset as i64)
        .unwrap()
}

/// `c[gid] = a[gid] + b[gid]` for `gid < c.len`, by hand. With `wait_for_loads` false, the add
/// reads the loaded values without waiting for them.
fn vector_add(target: Target, wait_for_loads: bool) -> PhysFunction {
    let m = meta();
    let gs = group_size_offset(&m);
    use Opcode::*;
    let entry = vec![
        smem(SLoadDwordx4, Operand::sr(4, 4), 0x00),  // a, a.len
        smem(SLoadDwordx4, Operand::sr(8, 4), 0x10),  // b, b.len
        smem(SLoadDwordx4, Operand::sr(12, 4), 0x20), // c, c.len
        smem(SLoadDword, Operand::s(16), gs),         // group size x (u16)
        // Work-item id x: the low 10 bits of v0 (packed ids on gfx90a/gfx942, v0 alone on gfx900).
        i(
            VAndB32,
            &[Operand::v(1), Operand::Literal(0x3ff), Operand::v(0)],
        ),
        i(SWaitcnt, &[Operand::Imm(LGKMCNT_0)]),
        i(
            SAndB32,
            &[Operand::s(16), Operand::s(16), Operand::Literal(0xffff)],
        ),
        i(SMulI32, &[Operand::s(16), Operand::s(16), Operand::s(2)]),
        i(VAddU32, &[Operand::v(1), Operand::s(16), Operand::v(1)]),
        i(VCmpGtU32, &[VCC, Operand::s(14), Operand::v(1)]),
        i(SAndSaveexecB64, &[Operand::sr(18, 2), VCC]),
    ];
    let mut body = vec![
        // 4 as a literal: emission must turn it into the inline constant llvm-mc would pick.
        i(
            VLshlrevB32,
            &[Operand::v(2), Operand::Literal(2), Operand::v(1)],
        ),
        i(
            GlobalLoadDword,
            &[Operand::v(3), Operand::v(2), Operand::sr(4, 2)],
        ),
        i(
            GlobalLoadDword,
            &[Operand::v(4), Operand::v(2), Operand::sr(8, 2)],
        ),
    ];
    if wait_for_loads {
        body.push(i(SWaitcnt, &[Operand::Imm(VMCNT_0)]));
    }
    body.push(i(VAddF32, &[Operand::v(3), Operand::v(3), Operand::v(4)]));
    body.push(i(
        GlobalStoreDword,
        &[Operand::v(2), Operand::v(3), Operand::sr(12, 2)],
    ));
    let _ = EXEC;
    PhysFunction {
        abi: KernelAbi {
            target,
            meta: m,
            workgroup_ids: [true, false, false],
            workitem_dims: 1,
            lds_bytes: 0,
        },
        user_sgprs: UserSgprs {
            kernarg_segment_ptr: true,
            ..Default::default()
        },
        scratch_wave_offset_sgpr: None,
        blocks: vec![
            PhysBlock {
                insts: entry,
                term: PhysTerminator::Branch {
                    cond: BranchCond::Execz,
                    taken: MBlock::from_u32(2),
                    not_taken: MBlock::from_u32(1),
                },
            },
            PhysBlock {
                insts: body,
                term: PhysTerminator::Jump(MBlock::from_u32(2)),
            },
            PhysBlock {
                insts: vec![],
                term: PhysTerminator::Return,
            },
        ],
        usage: RegUsage {
            sgprs: 20,
            vgprs: 5,
            ..Default::default()
        },
    }
}

fn run_vector_add(e: &Emitted, name: &str, n: usize) -> Result<Vec<f32>, String> {
    let dev = GcnEmulator::new();
    let a: Vec<f32> = (0..n).map(|k| k as f32 * 0.5 - 100.0).collect();
    let b: Vec<f32> = (0..n).map(|k| (k as f32).sqrt()).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let poison = vec![0x7fba_dbadu32; n + 64];
    let poison_bytes: Vec<u8> = poison.iter().flat_map(|x| x.to_le_bytes()).collect();
    let ba = dev.alloc(4 * n as u64).unwrap();
    let bb = dev.alloc(4 * n as u64).unwrap();
    // c has 64 spare elements past c.len: the kernel must leave them alone.
    let bc = dev.alloc(4 * (n as u64 + 64)).unwrap();
    dev.copy_to_device(ba, 0, &bytes(&a)).unwrap();
    dev.copy_to_device(bb, 0, &bytes(&b)).unwrap();
    dev.copy_to_device(bc, 0, &poison_bytes).unwrap();
    let module = dev.load_module(&e.code_object).map_err(|e| e.to_string())?;
    let block = 256u32;
    dev.launch(
        module,
        name,
        LaunchDims {
            grid: [(n as u32).div_ceil(block), 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        &[
            ArgValue::Buffer(ba),
            ArgValue::U32(n as u32),
            ArgValue::Buffer(bb),
            ArgValue::U32(n as u32),
            ArgValue::Buffer(bc),
            ArgValue::U32(n as u32),
        ],
    )
    .map_err(|e| e.to_string())?;
    let mut out = vec![0u8; 4 * (n + 64)];
    dev.copy_from_device(bc, 0, &mut out).unwrap();
    let c: Vec<u32> = out
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    for (k, &bits) in c.iter().enumerate().skip(n) {
        assert_eq!(bits, 0x7fba_dbad, "element {k} past c.len was written");
    }
    for k in 0..n {
        let want = a[k] + b[k];
        assert_eq!(
            c[k],
            want.to_bits(),
            "c[{k}] = {} want {want}",
            f32::from_bits(c[k])
        );
    }
    Ok(c[..n].iter().map(|&b| f32::from_bits(b)).collect())
}

#[test]
fn hand_built_vector_add_runs_on_the_device_for_every_target() {
    for t in ALL_TARGETS {
        let f = vector_add(t, true);
        let e = emit(&f).unwrap_or_else(|err| panic!("{t}: {err}"));
        // entry 11 + s_cbranch_execz + body 6 + s_endpgm; the jump to the next block is dropped.
        assert_eq!(e.header.instructions, 19, "{t}:\n{}", e.asm);
        assert!(e.asm.contains("s_cbranch_execz .LBB2"), "{}", e.asm);
        assert!(!e.asm.contains("s_branch"), "{}", e.asm);
        // the literal 2 became an inline constant: no literal dword after v_lshlrev.
        assert!(e.asm.contains("v_lshlrev_b32_e32 v2, 2, v1"), "{}", e.asm);
        assert_eq!(e.header.vgprs, 5);
        assert_eq!(e.header.sgprs_used, 20);
        for n in [1usize, 255, 1000, 1025] {
            run_vector_add(&e, "vector_add_by_hand", n)
                .unwrap_or_else(|err| panic!("{t} n={n}: {err}"));
        }
    }
}

#[test]
fn a_missing_wait_is_caught_by_the_device() {
    let e = emit(&vector_add(Target::Gfx942, false)).unwrap();
    let err = run_vector_add(&e, "vector_add_by_hand", 300).expect_err("the device must object");
    assert!(err.contains("hazard"), "{err}");
}

#[test]
fn hand_built_asm_reassembles_to_the_same_bytes_and_notes_read() {
    let Some(mc) = require(Tool::Mc, "emit reassembly") else {
        return;
    };
    let Some(readelf) = require(Tool::Readelf, "emit notes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kjit-emit-device-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for t in ALL_TARGETS {
        let e = emit(&vector_add(t, true)).unwrap();
        let cpu = format!("-mcpu={}", t.name());
        let out = run(
            &mc,
            &["-arch=amdgcn", &cpu, "-show-encoding"],
            Some(e.asm.as_bytes()),
        )
        .unwrap_or_else(|err| panic!("{t}: {err}\n{}", e.asm));
        // Fix-ups (branch labels) show as `A`; resolve them from our own encoding instead and
        // compare every other byte.
        let mut bytes = Vec::new();
        for line in out.lines() {
            let Some(enc) = line.split("encoding: [").nth(1) else {
                continue;
            };
            let enc = enc.split(']').next().unwrap();
            for b in enc.split(',') {
                bytes.push(if b == "A" {
                    None
                } else {
                    Some(u8::from_str_radix(b.trim_start_matches("0x"), 16).unwrap())
                });
            }
        }
        assert_eq!(bytes.len(), e.code.len(), "{t}:\n{}\n{out}", e.asm);
        for (k, (m, ours)) in bytes.iter().zip(&e.code).enumerate() {
            if let Some(m) = m {
                assert_eq!(m, ours, "{t}: byte {k}\n{}\n{out}", e.asm);
            }
        }
        let path = dir.join(format!("{t}.hsaco"));
        std::fs::write(&path, &e.code_object).unwrap();
        let notes = run(&readelf, &["--notes", path.to_str().unwrap()], None)
            .unwrap_or_else(|err| panic!("{t}: {err}"));
        assert!(notes.contains("vector_add_by_hand"), "{notes}");
        assert!(notes.contains(".vgpr_count:     5"), "{notes}");
    }
}

#[test]
fn bad_functions_are_errors_not_panics() {
    let mut f = vector_add(Target::Gfx942, true);
    f.blocks[0].term = PhysTerminator::Jump(MBlock::from_u32(7));
    assert!(matches!(
        emit(&f),
        Err(EmitError::BadTarget { target: 7, .. })
    ));

    let mut f = vector_add(Target::Gfx942, true);
    f.blocks[1]
        .insts
        .push(i(Opcode::SEndpgm, &[Operand::Imm(0)]));
    assert!(matches!(
        emit(&f),
        Err(EmitError::ControlFlowInBlock { block: 1, .. })
    ));

    let mut f = vector_add(Target::Gfx942, true);
    // VOP2 src1 must be a VGPR.
    f.blocks[1].insts[0] = i(
        Opcode::VLshlrevB32,
        &[Operand::v(2), Operand::v(1), Operand::s(3)],
    );
    assert!(matches!(
        emit(&f),
        Err(EmitError::Encode {
            block: 1,
            index: 0,
            ..
        })
    ));

    let mut f = vector_add(Target::Gfx900, true);
    f.usage.vgprs = 300;
    assert!(matches!(emit(&f), Err(EmitError::Write(_))));

    let mut f = vector_add(Target::Gfx942, true);
    f.blocks.clear();
    assert!(matches!(emit(&f), Err(EmitError::NoBlocks(_))));
}
