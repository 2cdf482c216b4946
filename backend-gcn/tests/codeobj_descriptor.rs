//! Descriptor equality with LLVM: for many resource settings on gfx942, gfx90a and gfx900 (and
//! non-default xnack), the `.amdhsa_kernel` block that states those settings is assembled by
//! `clang-19 -x assembler` and linked by `ld.lld-19`; the 64 descriptor bytes in LLVM's object
//! must equal `KernelDescriptor::build` for the same `DescriptorParams` (entry offset aside,
//! which depends on layout and is checked to point at the kernel's symbol).

mod codeobj_support;

use std::fmt::Write;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::{
    CodeObject, DescriptorParams, FeatureSetting, KernelDescriptor, UserSgprs,
};
use kjit_backend_gcn::target::Target;

/// The `.amdhsa_*` directives for `p` on `target` (AMDGPUUsage "AMDHSA Kernel Descriptor
/// Directives"); every field is stated so no assembler default is relied on, except
/// `.amdhsa_user_sgpr_count` when `p` leaves it `None` and `.amdhsa_reserve_xnack_mask`, which
/// LLVM requires to follow the target ID's xnack setting.
fn amdhsa_block(name: &str, target: Target, p: &DescriptorParams) -> String {
    let b = |x: bool| x as u32;
    let mut s = String::new();
    let mut d = |k: &str, v: u32| writeln!(s, "  .amdhsa_{k} {v}").unwrap();
    d("group_segment_fixed_size", p.group_segment_fixed_size);
    d("private_segment_fixed_size", p.private_segment_fixed_size);
    d("kernarg_size", p.kernarg_size);
    if let Some(n) = p.user_sgpr_count {
        d("user_sgpr_count", n);
    }
    let u = &p.user_sgprs;
    if !target.has_architected_flat_scratch() {
        d(
            "user_sgpr_private_segment_buffer",
            b(u.private_segment_buffer),
        );
        d("user_sgpr_flat_scratch_init", b(u.flat_scratch_init));
        d("reserve_flat_scratch", b(p.reserve_flat_scratch));
        d(
            "system_sgpr_private_segment_wavefront_offset",
            b(p.enable_private_segment),
        );
    } else {
        d("enable_private_segment", b(p.enable_private_segment));
    }
    d("user_sgpr_dispatch_ptr", b(u.dispatch_ptr));
    d("user_sgpr_queue_ptr", b(u.queue_ptr));
    d("user_sgpr_kernarg_segment_ptr", b(u.kernarg_segment_ptr));
    d("user_sgpr_dispatch_id", b(u.dispatch_id));
    d("user_sgpr_private_segment_size", b(u.private_segment_size));
    if target.has_kernarg_preload() {
        d("user_sgpr_kernarg_preload_length", u.kernarg_preload);
        d("user_sgpr_kernarg_preload_offset", 0);
    }
    d("uses_dynamic_stack", b(p.uses_dynamic_stack));
    d("system_sgpr_workgroup_id_x", b(p.workgroup_id[0]));
    d("system_sgpr_workgroup_id_y", b(p.workgroup_id[1]));
    d("system_sgpr_workgroup_id_z", b(p.workgroup_id[2]));
    d("system_sgpr_workgroup_info", b(p.workgroup_info));
    d("system_vgpr_workitem_id", p.workitem_id_dims);
    d("next_free_vgpr", p.total_vector_registers(target));
    d("next_free_sgpr", p.sgprs);
    if target.has_agprs() {
        d("accum_offset", p.accum_offset());
        d("tg_split", b(p.tg_split));
    }
    d("reserve_vcc", b(p.reserve_vcc));
    d("float_round_mode_32", p.float_round_mode_32);
    d("float_round_mode_16_64", p.float_round_mode_16_64);
    d("float_denorm_mode_32", p.float_denorm_mode_32);
    d("float_denorm_mode_16_64", p.float_denorm_mode_16_64);
    d("dx10_clamp", b(p.dx10_clamp));
    d("ieee_mode", b(p.ieee_mode));
    d("fp16_overflow", b(p.fp16_overflow));
    let names = [
        "fp_ieee_invalid_op",
        "fp_denorm_src",
        "fp_ieee_div_zero",
        "fp_ieee_overflow",
        "fp_ieee_underflow",
        "fp_ieee_inexact",
        "int_div_zero",
    ];
    for (i, n) in names.iter().enumerate() {
        d(&format!("exception_{n}"), (p.exceptions >> i) & 1);
    }
    format!(
        ".text\n.globl {name}\n.p2align 8\n.type {name},@function\n{name}:\n  s_endpgm\n\
         .rodata\n.p2align 6\n.amdhsa_kernel {name}\n{s}.end_amdhsa_kernel\n"
    )
}

/// Settings that exercise every field, adjusted to what `target` allows.
fn cases(target: Target) -> Vec<DescriptorParams> {
    let agprs = |n| if target.has_agprs() { n } else { 0 };
    let scratch_sgprs = !target.has_architected_flat_scratch();
    let mut v = vec![DescriptorParams::default()];
    let mut kernarg = DescriptorParams {
        vgprs: 37,
        sgprs: 20,
        group_segment_fixed_size: 16384,
        kernarg_size: 280,
        workgroup_id: [true, true, true],
        workitem_id_dims: 2,
        private_segment_fixed_size: 64,
        enable_private_segment: true,
        ..Default::default()
    };
    kernarg.user_sgprs = UserSgprs {
        kernarg_segment_ptr: true,
        dispatch_ptr: true,
        private_segment_buffer: scratch_sgprs,
        flat_scratch_init: scratch_sgprs,
        ..Default::default()
    };
    v.push(kernarg);
    v.push(DescriptorParams {
        vgprs: 128,
        agprs: agprs(64),
        sgprs: 96,
        reserve_vcc: false,
        reserve_flat_scratch: false,
        float_round_mode_32: 1,
        float_round_mode_16_64: 2,
        float_denorm_mode_32: 0,
        float_denorm_mode_16_64: 1,
        dx10_clamp: false,
        ieee_mode: false,
        fp16_overflow: true,
        tg_split: target.has_agprs(),
        exceptions: 0x55,
        uses_dynamic_stack: true,
        user_sgprs: UserSgprs {
            queue_ptr: true,
            dispatch_id: true,
            private_segment_size: true,
            kernarg_segment_ptr: true,
            ..Default::default()
        },
        user_sgpr_count: Some(12),
        workgroup_info: true,
        ..Default::default()
    });
    v.push(DescriptorParams {
        vgprs: 256,
        agprs: agprs(256),
        sgprs: 102,
        workitem_id_dims: 1,
        group_segment_fixed_size: 65536,
        ..Default::default()
    });
    // Kernarg preloading (gfx90a/gfx942): after the pointer alone, and after the scratch V#
    // and the dispatch pointer, up to the 16 user SGPRs.
    if target.has_kernarg_preload() {
        for (n, scratch) in [(2, false), (11, false), (14, false), (6, true), (1, true)] {
            let scratch = scratch && scratch_sgprs;
            v.push(DescriptorParams {
                vgprs: 3,
                sgprs: 16,
                kernarg_size: 304,
                user_sgprs: UserSgprs {
                    kernarg_segment_ptr: true,
                    private_segment_buffer: scratch,
                    dispatch_ptr: scratch,
                    kernarg_preload: n,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
    }
    for (vg, ag, sg) in [
        (5, 0, 9),
        (9, 3, 17),
        (84, 0, 33),
        (164, agprs(4), 65),
        (1, agprs(1), 1),
    ] {
        for (vcc, flat) in [(true, true), (false, false), (true, false), (false, true)] {
            v.push(DescriptorParams {
                vgprs: vg,
                agprs: agprs(ag),
                sgprs: sg,
                reserve_vcc: vcc,
                reserve_flat_scratch: flat,
                ..Default::default()
            });
        }
    }
    // Sweeps across granule boundaries: SGPRs with each VCC/flat-scratch reservation (the xnack
    // mask follows the target ID), VGPRs with and without AGPRs.
    for sg in 0..=26 {
        for (vcc, flat) in [(true, true), (false, false), (true, false), (false, true)] {
            v.push(DescriptorParams {
                vgprs: sg % 9,
                sgprs: sg,
                reserve_vcc: vcc,
                reserve_flat_scratch: flat,
                ..Default::default()
            });
        }
    }
    for vg in 0..=20 {
        for ag in [0, 1, 5] {
            v.push(DescriptorParams {
                vgprs: vg,
                agprs: agprs(ag),
                sgprs: 3,
                ..Default::default()
            });
        }
    }
    v
}

#[test]
fn descriptors_equal_llvm_assembler_output() {
    let Some((clang, lld)) = tools("descriptors_equal_llvm_assembler_output") else {
        return;
    };
    let configs = [
        (Target::Gfx942, FeatureSetting::Any, "gfx942"),
        (Target::Gfx942, FeatureSetting::Off, "gfx942:xnack-"),
        (Target::Gfx90a, FeatureSetting::Any, "gfx90a"),
        (Target::Gfx90a, FeatureSetting::On, "gfx90a:xnack+"),
        (Target::Gfx90a, FeatureSetting::Off, "gfx90a:xnack-"),
        (Target::Gfx900, FeatureSetting::Any, "gfx900"),
        (Target::Gfx900, FeatureSetting::Off, "gfx900:xnack-"),
    ];
    let mut compared = 0;
    for (target, xnack, mcpu) in configs {
        let cases = cases(target);
        let asm: String = cases
            .iter()
            .enumerate()
            .map(|(i, p)| amdhsa_block(&format!("k{i}"), target, p))
            .collect();
        let path = assemble(&clang, &lld, &asm, mcpu, &mcpu.replace(':', "_"));
        let co = CodeObject::parse(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(co.target, target);
        assert_eq!(co.xnack, xnack, "{mcpu}");
        assert!(co.metadata.is_none());
        for (i, p) in cases.iter().enumerate() {
            let name = format!("k{i}");
            let k = co
                .kernel(&name)
                .unwrap_or_else(|| panic!("{mcpu}: no {name}"));
            let mut ours = KernelDescriptor::build(target, xnack, p).unwrap();
            assert_eq!(
                k.descriptor_address as i64 + k.descriptor.kernel_code_entry_byte_offset,
                k.code_address as i64
            );
            ours.kernel_code_entry_byte_offset = k.descriptor.kernel_code_entry_byte_offset;
            assert_eq!(
                ours.to_bytes(),
                k.descriptor.to_bytes(),
                "{mcpu} {name}: ours {ours:#x?}\nllvm {:#x?}\nparams {p:?}",
                k.descriptor
            );
            // The decoded view agrees with the settings.
            assert!(k.descriptor.registers_allocated(target) >= p.total_vector_registers(target));
            assert!(k.descriptor.sgprs_allocated(target) >= p.total_sgprs(target, xnack));
            if target.has_agprs() {
                assert_eq!(k.descriptor.accum_offset(target), Some(p.accum_offset()));
                assert!(k.descriptor.agprs(target) >= p.agprs);
            }
            assert!(k.descriptor.vgprs_allocated(target) >= p.vgprs);
            compared += 1;
        }
    }
    println!("{compared} descriptors equal to LLVM 19's");
}

#[test]
fn architected_flat_scratch_rejects_scratch_user_sgprs() {
    let mut p = DescriptorParams::default();
    p.user_sgprs.private_segment_buffer = true;
    assert!(KernelDescriptor::build(Target::Gfx942, FeatureSetting::Any, &p).is_err());
    assert!(KernelDescriptor::build(Target::Gfx90a, FeatureSetting::Any, &p).is_ok());
}

#[test]
fn kernarg_preload_fields_and_limits() {
    let p = |n| DescriptorParams {
        kernarg_size: 304,
        user_sgprs: UserSgprs {
            kernarg_segment_ptr: true,
            kernarg_preload: n,
            ..Default::default()
        },
        ..Default::default()
    };
    let kd = KernelDescriptor::build(Target::Gfx942, FeatureSetting::Any, &p(12)).unwrap();
    assert_eq!(kd.kernarg_preload_length(), 12);
    assert_eq!(kd.kernarg_preload_offset(), 0);
    assert_eq!(
        kd.user_sgpr_count(),
        14,
        "the pointer and the preloaded dwords"
    );
    assert_eq!(kd.implied_user_sgprs(), 2);
    // The dwords come after the enabled user SGPRs.
    let sg = kd.initial_sgprs(Target::Gfx942);
    assert!(sg.contains(&("preloaded_kernargs", 2, 12)), "{sg:?}");
    assert!(matches!(
        KernelDescriptor::build(Target::Gfx900, FeatureSetting::Any, &p(2)),
        Err(kjit_backend_gcn::codeobj::DescriptorError::NotSupported { .. })
    ));
    assert!(matches!(
        KernelDescriptor::build(Target::Gfx942, FeatureSetting::Any, &p(15)),
        Err(kjit_backend_gcn::codeobj::DescriptorError::OutOfRange {
            what: "user_sgpr_count",
            ..
        })
    ));
    let mut no_ptr = p(2);
    no_ptr.user_sgprs.kernarg_segment_ptr = false;
    assert!(KernelDescriptor::build(Target::Gfx90a, FeatureSetting::Any, &no_ptr).is_err());
}
