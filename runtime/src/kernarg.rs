//! The explicit part of a kernarg segment, shared by every device: each explicit argument at its
//! metadata offset, checked against the metadata's kind and size. The software device then fills
//! the hidden arguments itself (`emu::args`); the HIP runtime fills them on a GPU.

use kjit_backend_gcn::codeobj::{KernelMeta, ValueKind};

use crate::device::ArgValue;

/// A short name of an argument's kind, for error messages.
pub fn kind_name(v: &ArgValue) -> &'static str {
    match v {
        ArgValue::Buffer(_) => "buffer",
        ArgValue::I32(_) => "i32",
        ArgValue::U32(_) => "u32",
        ArgValue::I64(_) => "i64",
        ArgValue::U64(_) => "u64",
        ArgValue::F16(_) => "f16",
        ArgValue::F32(_) => "f32",
        ArgValue::F64(_) => "f64",
    }
}

/// The bytes of one explicit argument, if `v` fits a `size`-byte argument of `kind`.
fn explicit_bytes(kind: &ValueKind, size: u32, v: &ArgValue) -> Option<Vec<u8>> {
    let b = match (kind, size, v) {
        (ValueKind::GlobalBuffer, 8, ArgValue::Buffer(b)) => b.addr.to_le_bytes().to_vec(),
        (ValueKind::GlobalBuffer, 8, ArgValue::U64(a)) => a.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 4, ArgValue::I32(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 4, ArgValue::U32(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 4, ArgValue::F32(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 8, ArgValue::I64(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 8, ArgValue::U64(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 8, ArgValue::F64(x)) => x.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 8, ArgValue::Buffer(b)) => b.addr.to_le_bytes().to_vec(),
        (ValueKind::ByValue, 2, ArgValue::F16(x)) => x.to_le_bytes().to_vec(),
        _ => return None,
    };
    Some(b)
}

/// A zeroed kernarg segment of `meta`'s size with the explicit `args` at their offsets. Errors
/// name the kernel, the argument and what was wrong (count, kind, size).
pub fn pack_explicit(meta: &KernelMeta, args: &[ArgValue]) -> Result<Vec<u8>, String> {
    let explicit: Vec<_> = meta.explicit_args().collect();
    if explicit.len() != args.len() {
        return Err(format!(
            "kernel '{}' takes {} explicit argument(s), {} given",
            meta.name,
            explicit.len(),
            args.len()
        ));
    }
    let end = meta
        .args
        .iter()
        .map(|a| a.offset as usize + a.size as usize)
        .max()
        .unwrap_or(0)
        .max(meta.kernarg_segment_size as usize);
    let mut seg = vec![0u8; end];
    for (k, (m, v)) in explicit.iter().zip(args).enumerate() {
        let bytes = explicit_bytes(&m.value_kind, m.size, v).ok_or_else(|| {
            format!(
                "kernel '{}' argument {k}{}: a {} does not fit a {}-byte {} argument{}",
                meta.name,
                m.name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
                kind_name(v),
                m.size,
                m.value_kind.as_str(),
                m.type_name
                    .as_deref()
                    .map(|t| format!(" of type {t}"))
                    .unwrap_or_default()
            )
        })?;
        let o = m.offset as usize;
        seg[o..o + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(seg)
}
