//! Occupancy against LLVM 19: kernels with 8..230 live floats (VGPR pressure) and with static
//! LDS of 1 KiB..60000 B under required workgroup sizes of 64..1024 are compiled by clang-19
//! with `-Rpass-analysis=kernel-resource-usage`; for every kernel and target, the "Occupancy
//! [waves/SIMD]" LLVM reports equals `Kernel::occupancy` computed from our reading of the
//! linked object (descriptor + metadata).

mod codeobj_support;

use std::collections::HashMap;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::CodeObject;
use kjit_backend_gcn::llvm_oracle::{compile_opencl_object, link_code_object, OpenClBuild};
use kjit_backend_gcn::target::ALL_TARGETS;

fn corpus() -> String {
    let mut src = String::new();
    for n in [8, 24, 40, 56, 72, 90, 110, 130, 170, 230] {
        src += &format!(
            "__kernel void p{n}(__global float *a) {{
  int t = __builtin_amdgcn_workitem_id_x();
  float v[{n}];
  #pragma unroll
  for (int i = 0; i < {n}; i++) v[i] = a[t + i * 64];
  float s = 0;
  #pragma unroll
  for (int i = 0; i < {n}; i++) s += v[i] * v[{n} - 1 - i] + v[(i * 7) % {n}];
  a[t] = s;
}}\n"
        );
    }
    for (lds, wg) in [
        (1024, 256),
        (8192, 256),
        (20000, 256),
        (33000, 64),
        (16384, 1024),
        (4096, 64),
        (60000, 128),
        (0, 1024),
        (0, 512),
        (2048, 192),
    ] {
        let words = (lds / 4).max(1);
        let tile = if lds > 0 {
            format!("__local int tile[{words}];")
        } else {
            "__local int tile[1];".to_string()
        };
        src += &format!(
            "__kernel __attribute__((reqd_work_group_size({wg}, 1, 1))) void l{lds}_{wg}(__global int *a) {{
  {tile}
  int t = __builtin_amdgcn_workitem_id_x();
  if ({lds} > 0) {{
    for (int i = t; i < {words}; i += {wg}) tile[i] = a[i];
    __builtin_amdgcn_s_barrier();
    a[t] = tile[({words} - 1 - t) % {words}];
  }} else {{
    a[t] += 1;
  }}
}}\n"
        );
    }
    src
}

/// Kernel name → occupancy from clang's resource-usage remarks.
fn llvm_occupancy(remarks: &str) -> HashMap<String, u32> {
    let mut map = HashMap::new();
    let mut current = None;
    for line in remarks.lines() {
        if let Some(rest) = line.split("remark: Function Name: ").nth(1) {
            current = Some(rest.split_whitespace().next().unwrap().to_string());
        } else if let Some(rest) = line.split("remark:     Occupancy [waves/SIMD]: ").nth(1) {
            let n: u32 = rest.split_whitespace().next().unwrap().parse().unwrap();
            map.insert(
                current.clone().expect("occupancy before a function name"),
                n,
            );
        }
    }
    map
}

#[test]
fn occupancy_equals_llvm_resource_usage() {
    let Some((clang, lld)) = tools("occupancy_equals_llvm_resource_usage") else {
        return;
    };
    let src = corpus();
    let mut compared = 0;
    for target in ALL_TARGETS {
        let dir = scratch_dir(&format!("occ-{}", target.name()));
        let cl = dir.join("occ.cl");
        std::fs::write(&cl, &src).unwrap();
        let build = OpenClBuild {
            extra_args: &["-Rpass-analysis=kernel-resource-usage"],
            out_dir: Some(dir),
        };
        let (o, remarks) = compile_opencl_object(&clang, &cl, target.name(), &build)
            .unwrap_or_else(|e| panic!("{e}"));
        let expected = llvm_occupancy(&remarks);
        let so = link_code_object(&lld, &o).unwrap_or_else(|e| panic!("{e}"));
        let co = CodeObject::parse(&std::fs::read(&so).unwrap()).unwrap();
        assert_eq!(co.kernels.len(), 20);
        assert_eq!(expected.len(), 20, "{expected:?}");
        let mut seen = std::collections::BTreeSet::new();
        for k in &co.kernels {
            let occ = k.occupancy(target, None);
            assert_eq!(
                occ.waves_per_simd,
                expected[&k.name],
                "{target} {}: ours {occ:?} (VGPRs {} AGPRs {} SGPRs {} LDS {} wg {})",
                k.name,
                k.meta.vgpr_count,
                k.meta.agpr_count,
                k.meta.sgpr_count,
                k.meta.group_segment_fixed_size,
                k.meta.max_flat_workgroup_size
            );
            seen.insert(occ.waves_per_simd);
            compared += 1;
        }
        // The corpus spans the range, so the comparison means something.
        assert!(seen.len() >= 5, "{target}: only occupancies {seen:?}");
    }
    println!("{compared} kernel occupancies equal LLVM 19's");
}
