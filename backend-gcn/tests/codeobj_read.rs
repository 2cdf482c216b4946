//! The reader on clang-19 + ld.lld-19 code objects for gfx942, gfx90a and gfx900: every kernel's
//! argument layout, sizes and register counts equal what `llvm-readelf-19 --notes` prints, and
//! each kernel's code starts at its `FUNC` symbol and ends with `s_endpgm`.

mod codeobj_support;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::{CodeObject, FeatureSetting, ValueKind};
use kjit_backend_gcn::llvm_oracle::{require, Tool};
use kjit_backend_gcn::target::ALL_TARGETS;

/// Kernels with many argument shapes: pointers (const, local), scalars of each size, vectors,
/// static LDS, and hidden arguments (workgroup size reads the implicit args).
pub const CORPUS: &str = r#"
__kernel void saxpy(__global float *y, __global const float *x, float a, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
__kernel void scalars(__global long *out, char c, short s, long l, double d, uchar u, float4 v) {
  out[0] = c + s + l + (long)d + u + (long)(v.x + v.w);
}
__kernel void dyn_lds(__global int *a, __local int *l, __local float *m) {
  int i = __builtin_amdgcn_workitem_id_x();
  l[i] = a[i];
  m[i] = (float)a[i];
  __builtin_amdgcn_s_barrier();
  a[i] = l[63 - i] + (int)m[i];
}
__kernel void static_lds(__global float *a) {
  __local float tile[256];
  int i = __builtin_amdgcn_workitem_id_x();
  tile[i] = a[i];
  __builtin_amdgcn_s_barrier();
  a[i] = tile[255 - i];
}
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void grid2d(__global float *a, int w) {
  int x = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  int y = __builtin_amdgcn_workgroup_id_y() * __builtin_amdgcn_workgroup_size_y() + __builtin_amdgcn_workitem_id_y();
  a[y * w + x] *= 2.0f;
}
__kernel void noargs(void) {}
"#;

#[test]
fn reads_clang_objects_for_every_target() {
    let Some((clang, lld)) = tools("reads_clang_objects_for_every_target") else {
        return;
    };
    let Some(readelf) = require(Tool::Readelf, "reads_clang_objects_for_every_target") else {
        return;
    };
    let mut checked_args = 0;
    for target in ALL_TARGETS {
        let path = compile_cl(&clang, &lld, CORPUS, target, target.name());
        let bytes = std::fs::read(&path).unwrap();
        let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(co.target, target);
        assert_eq!(co.version, 5);
        assert_eq!(co.xnack, FeatureSetting::Any, "{target}");
        assert_eq!(co.kernels.len(), 6, "{target}");
        checked_args += check_against_readelf(&readelf, &path, &co);
        for k in &co.kernels {
            assert!(
                k.descriptor.enable_sgpr_kernarg_segment_ptr() || k.meta.kernarg_segment_size == 0
            );
            assert!(
                k.descriptor.registers_allocated(target) >= k.meta.vgpr_count + k.meta.agpr_count
            );
            assert!(
                k.descriptor.sgprs_allocated(target) >= k.meta.sgpr_count,
                "{}",
                k.name
            );
        }
        // Spot checks of known layouts.
        let saxpy = co.kernel("saxpy").unwrap();
        assert_eq!(saxpy.meta.args[2].offset, 16);
        assert_eq!(saxpy.meta.args[4].value_kind, ValueKind::HiddenBlockCountX);
        assert_eq!(saxpy.meta.args[4].offset, 24);
        let dl = co.kernel("dyn_lds").unwrap();
        assert_eq!(dl.meta.args[1].value_kind, ValueKind::DynamicSharedPointer);
        assert_eq!(
            co.kernel("static_lds")
                .unwrap()
                .descriptor
                .group_segment_fixed_size,
            1024
        );
        assert_eq!(
            co.kernel("grid2d").unwrap().meta.reqd_workgroup_size,
            Some([64, 1, 1])
        );
    }
    println!("checked {checked_args} argument records against llvm-readelf-19");
}

#[test]
fn reads_code_object_v4() {
    let test = "reads_code_object_v4";
    let Some((clang, lld)) = tools(test) else {
        return;
    };
    let Some(readelf) = require(Tool::Readelf, test) else {
        return;
    };
    for target in [
        kjit_backend_gcn::Target::Gfx90a,
        kjit_backend_gcn::Target::Gfx900,
    ] {
        let tag = format!("v4-{}", target.name());
        let path = compile_cl_with(
            &clang,
            &lld,
            CORPUS,
            target,
            &tag,
            &["-mcode-object-version=4"],
        );
        let co = CodeObject::parse(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(co.version, 4);
        assert_eq!(co.metadata.as_ref().unwrap().version, vec![1, 1]);
        assert_eq!(co.kernels.len(), 6);
        check_against_readelf(&readelf, &path, &co);
        // v4 reads the workgroup size from the dispatch packet, not from hidden arguments.
        let saxpy = co.kernel("saxpy").unwrap();
        assert!(saxpy.descriptor.enable_sgpr_dispatch_ptr());
        assert_eq!(saxpy.meta.kernarg_segment_size, 24);
    }
}
