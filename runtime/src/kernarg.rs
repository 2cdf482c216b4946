//! The explicit part of a kernarg segment, shared by every device: each explicit argument at its
//! metadata offset, checked first by [`crate::args::check_args`]. The software device then fills
//! the hidden arguments itself (`emu::args`); the HIP runtime fills them on a GPU.

use kjit_backend_gcn::codeobj::KernelMeta;

use crate::args::check_args;
use crate::device::{ArgValue, DeviceError};

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

/// The little-endian bytes of an argument value (a buffer is its 64-bit address).
fn value_le_bytes(v: &ArgValue) -> Vec<u8> {
    match *v {
        ArgValue::Buffer(b) => b.addr.to_le_bytes().to_vec(),
        ArgValue::I32(x) => x.to_le_bytes().to_vec(),
        ArgValue::U32(x) => x.to_le_bytes().to_vec(),
        ArgValue::I64(x) => x.to_le_bytes().to_vec(),
        ArgValue::U64(x) => x.to_le_bytes().to_vec(),
        ArgValue::F16(x) => x.to_le_bytes().to_vec(),
        ArgValue::F32(x) => x.to_le_bytes().to_vec(),
        ArgValue::F64(x) => x.to_le_bytes().to_vec(),
    }
}

/// A zeroed kernarg segment of `meta`'s size with the explicit `args` at their offsets, after
/// [`check_args`]; its errors name the kernel, the argument and what was wrong.
pub fn pack_explicit(meta: &KernelMeta, args: &[ArgValue]) -> Result<Vec<u8>, String> {
    check_args(meta, args).map_err(|e| match e {
        DeviceError::InvalidLaunch(m) => m,
        other => other.to_string(),
    })?;
    let end = meta
        .args
        .iter()
        .map(|a| a.offset as usize + a.size as usize)
        .max()
        .unwrap_or(0)
        .max(meta.kernarg_segment_size as usize);
    let mut seg = vec![0u8; end];
    for (m, v) in meta.explicit_args().zip(args) {
        // check_args made the value's size the argument's size, inside `end`.
        let bytes = value_le_bytes(v);
        let o = m.offset as usize;
        seg[o..o + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(seg)
}
