//! Launch arguments checked against a kernel's metadata, for every device and every layer that
//! launches (the `Device` implementations, `kjit emu run`, the typed launch API).
//!
//! Takes the kernel's argument metadata (`.value_kind`, `.size`, `.value_type` where present,
//! `.type_name`, `.name`) and the explicit [`ArgValue`]s; gives `Ok` or an
//! [`DeviceError::InvalidLaunch`] naming the argument by index and name and saying what is wrong:
//! the count, a scalar where a buffer is expected (or the reverse), a value of the wrong size, a
//! float where an integer is declared (or the reverse), an integer the declared type cannot hold,
//! or — for kjit's kernel ABI, where a buffer `x` is followed by its length `x.len` in elements —
//! a length larger than the buffer; and, where a buffer is declared `restrict` (`.is_restrict`:
//! a kjit kernel built with `noalias`), a written buffer overlapping another buffer argument
//! ([`check_no_alias`]).
//!
//! The declared scalar type comes from `.value_type` (deprecated, and not written by LLVM 19, so
//! usually absent) or else from `.type_name` when that names a scalar type kjit knows (its own
//! `u32`/`f32`/..., OpenCL's `uint`/`float`/...). Where neither says (Triton, vectors, structs)
//! only the kind and size are checked.

use kjit_backend_gcn::codeobj::{ArgMeta, KernelMeta, ValueKind};

use crate::device::{ArgValue, DeviceError, DeviceResult};

/// What a declared scalar type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarClass {
    /// Integer of this signedness.
    Int {
        /// Whether negative values are allowed.
        signed: bool,
    },
    /// IEEE float.
    Float,
    /// kjit's `bool` (0 or 1 in a dword).
    Bool,
}

/// A declared scalar type: its class and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarType {
    /// Integer, float or bool.
    pub class: ScalarClass,
    /// Size in bytes.
    pub bytes: u32,
}

/// The scalar type a name stands for: `.value_type` spellings (`i8`..`f64`), kjit's type names
/// (`u32`, `f32`, `bool`, ...) and OpenCL C's (`int`, `uint`, `float`, `half`, `size_t`, ...).
pub fn scalar_type(name: &str) -> Option<ScalarType> {
    use ScalarClass::*;
    let (class, bytes) = match name.trim() {
        "i8" | "char" | "signed char" => (Int { signed: true }, 1),
        "u8" | "uchar" | "unsigned char" => (Int { signed: false }, 1),
        "i16" | "short" => (Int { signed: true }, 2),
        "u16" | "ushort" | "unsigned short" => (Int { signed: false }, 2),
        "i32" | "int" => (Int { signed: true }, 4),
        "u32" | "uint" | "unsigned int" => (Int { signed: false }, 4),
        "i64" | "long" => (Int { signed: true }, 8),
        "u64" | "ulong" | "unsigned long" | "size_t" => (Int { signed: false }, 8),
        "f16" | "half" => (Float, 2),
        "f32" | "float" => (Float, 4),
        "f64" | "double" => (Float, 8),
        "bool" => (Bool, 4),
        _ => return None,
    };
    Some(ScalarType { class, bytes })
}

/// The declared type of a by-value argument, if the metadata says it.
fn declared_type(m: &ArgMeta) -> Option<ScalarType> {
    m.value_type
        .as_deref()
        .and_then(scalar_type)
        .or_else(|| m.type_name.as_deref().and_then(scalar_type))
}

/// The element type of a pointer argument (`f32*`, `float*`, `const float*`), if known.
fn pointee_type(m: &ArgMeta) -> Option<(ScalarType, String)> {
    let t = m.type_name.as_deref()?.trim().strip_suffix('*')?.trim();
    let t = t.strip_prefix("const ").unwrap_or(t).trim();
    scalar_type(t).map(|s| (s, t.to_string()))
}

/// `argument 3 (alpha)`.
fn arg_label(k: usize, m: &ArgMeta) -> String {
    match &m.name {
        Some(n) => format!("argument {k} ({n})"),
        None => format!("argument {k}"),
    }
}

/// The value as an integer, for range checks (`None` for floats and buffers).
fn as_integer(v: &ArgValue) -> Option<i128> {
    Some(match *v {
        ArgValue::I32(x) => x as i128,
        ArgValue::U32(x) => x as i128,
        ArgValue::I64(x) => x as i128,
        ArgValue::U64(x) => x as i128,
        _ => return None,
    })
}

/// Bytes a value occupies in the kernarg segment.
pub fn value_bytes(v: &ArgValue) -> u32 {
    match v {
        ArgValue::Buffer(_) | ArgValue::I64(_) | ArgValue::U64(_) | ArgValue::F64(_) => 8,
        ArgValue::I32(_) | ArgValue::U32(_) | ArgValue::F32(_) => 4,
        ArgValue::F16(_) => 2,
    }
}

/// Why `v` cannot be passed as an argument declared `m`, if it cannot.
fn mismatch(m: &ArgMeta, v: &ArgValue) -> Option<String> {
    let kind = crate::kernarg::kind_name(v);
    match m.value_kind {
        ValueKind::GlobalBuffer => match v {
            ArgValue::Buffer(_) if m.size == 8 => None,
            ArgValue::Buffer(_) => Some(format!(
                "the metadata declares a {}-byte global_buffer, which no device buffer fits",
                m.size
            )),
            _ => Some(format!("a buffer is expected, a {kind} was given")),
        },
        ValueKind::ByValue => {
            if value_bytes(v) != m.size {
                return Some(format!(
                    "a {}-byte by-value argument{} is expected, a {kind} ({} bytes) was given",
                    m.size,
                    m.type_name
                        .as_deref()
                        .map(|t| format!(" of type {t}"))
                        .unwrap_or_default(),
                    value_bytes(v)
                ));
            }
            let declared = declared_type(m)?;
            let name = m
                .value_type
                .as_deref()
                .or(m.type_name.as_deref())
                .unwrap_or("?");
            let is_float = matches!(v, ArgValue::F16(_) | ArgValue::F32(_) | ArgValue::F64(_));
            match (declared.class, v) {
                (_, ArgValue::Buffer(_)) => {
                    Some(format!("a {name} is expected, a buffer was given"))
                }
                (ScalarClass::Float, _) if !is_float => {
                    Some(format!("a {name} is expected, a {kind} was given"))
                }
                (ScalarClass::Int { .. } | ScalarClass::Bool, _) if is_float => {
                    Some(format!("a {name} is expected, a {kind} was given"))
                }
                (ScalarClass::Int { signed }, _) => {
                    let x = as_integer(v)?;
                    let bits = 8 * declared.bytes;
                    let (lo, hi) = if signed {
                        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                    } else {
                        (0, (1i128 << bits) - 1)
                    };
                    (x < lo || x > hi).then(|| {
                        format!("a {name} is expected, the {kind} {x} is out of its range")
                    })
                }
                (ScalarClass::Bool, _) => {
                    let x = as_integer(v)?;
                    (x != 0 && x != 1)
                        .then(|| format!("a bool (0 or 1) is expected, {x} was given"))
                }
                (ScalarClass::Float, _) => None,
            }
        }
        ref other => Some(format!(
            "arguments of kind {} cannot be passed by kjit's devices",
            other.as_str()
        )),
    }
}

/// Checks `args` against the explicit arguments of `meta`: count, kind, size, declared type,
/// and (kjit's ABI) buffer lengths. The error names the kernel and the argument.
pub fn check_args(meta: &KernelMeta, args: &[ArgValue]) -> DeviceResult<()> {
    let explicit: Vec<&ArgMeta> = meta.explicit_args().collect();
    let invalid =
        |msg: String| DeviceError::InvalidLaunch(format!("kernel '{}': {msg}", meta.name));
    if explicit.len() != args.len() {
        let names: Vec<String> = explicit
            .iter()
            .enumerate()
            .map(|(k, m)| m.name.clone().unwrap_or_else(|| format!("#{k}")))
            .collect();
        return Err(invalid(format!(
            "takes {} explicit argument(s), {} given (it takes: {})",
            explicit.len(),
            args.len(),
            names.join(", ")
        )));
    }
    for (k, (m, v)) in explicit.iter().zip(args).enumerate() {
        if let Some(why) = mismatch(m, v) {
            return Err(invalid(format!("{}: {why}", arg_label(k, m))));
        }
    }
    // kjit's ABI: a buffer `x` is followed by `x.len`, its length in elements.
    for k in 0..explicit.len().saturating_sub(1) {
        let (m, next) = (explicit[k], explicit[k + 1]);
        let (ArgValue::Buffer(b), Some(len)) = (&args[k], as_integer(&args[k + 1])) else {
            continue;
        };
        let is_len =
            matches!((&m.name, &next.name), (Some(x), Some(l)) if *l == format!("{x}.len"));
        let Some((elem, elem_name)) = pointee_type(m).filter(|_| is_len) else {
            continue;
        };
        let need = len as u128 * elem.bytes as u128;
        if need > b.size as u128 {
            return Err(invalid(format!(
                "{}: {len} elements of {elem_name} need {need} bytes, but the buffer passed as {} has {}",
                arg_label(k + 1, next),
                arg_label(k, m),
                b.size
            )));
        }
    }
    check_no_alias(meta, args)
}

/// The promise of `restrict` (`.is_restrict`): no buffer the kernel may write (not `.is_const`)
/// overlaps another buffer argument where either of the two is `restrict`. A kernel compiled
/// on that promise may read a buffer after another one's store was meant to change it, so a
/// launch that breaks it is an error rather than wrong results. Overlap is of the buffers'
/// whole byte ranges; two read-only buffers may overlap.
pub fn check_no_alias(meta: &KernelMeta, args: &[ArgValue]) -> DeviceResult<()> {
    let buffers: Vec<(usize, &ArgMeta, crate::device::DeviceBuffer)> = meta
        .explicit_args()
        .zip(args)
        .enumerate()
        .filter_map(|(k, (m, v))| match v {
            ArgValue::Buffer(b)
                if matches!(m.value_kind, ValueKind::GlobalBuffer) && b.size > 0 =>
            {
                Some((k, m, *b))
            }
            _ => None,
        })
        .collect();
    for (i, &(k, m, b)) in buffers.iter().enumerate() {
        for &(j, n, c) in &buffers[i + 1..] {
            let promised = m.is_restrict || n.is_restrict;
            let written = !m.is_const || !n.is_const;
            let overlap =
                b.addr < c.addr.saturating_add(c.size) && c.addr < b.addr.saturating_add(b.size);
            if promised && written && overlap {
                return Err(DeviceError::InvalidLaunch(format!(
                    "kernel '{}': {} and {} overlap (bytes {:#x}..{:#x} and {:#x}..{:#x}), but the kernel declares its buffers restrict (noalias) and writes {}",
                    meta.name,
                    arg_label(k, m),
                    arg_label(j, n),
                    b.addr,
                    b.addr + b.size,
                    c.addr,
                    c.addr + c.size,
                    if m.is_const { arg_label(j, n) } else { arg_label(k, m) },
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceBuffer;

    /// A kjit-style kernel `(x: buf<f32>, x.len: uint, alpha: f32, n: u32)` and a clang-style
    /// argument without type information.
    fn meta() -> KernelMeta {
        let mut m = KernelMeta::new("k");
        let mut x = ArgMeta::new(0, 8, ValueKind::GlobalBuffer);
        x.name = Some("x".into());
        x.type_name = Some("f32*".into());
        let mut len = ArgMeta::new(8, 4, ValueKind::ByValue);
        len.name = Some("x.len".into());
        len.type_name = Some("uint".into());
        let mut alpha = ArgMeta::new(12, 4, ValueKind::ByValue);
        alpha.name = Some("alpha".into());
        alpha.type_name = Some("f32".into());
        let mut n = ArgMeta::new(16, 4, ValueKind::ByValue);
        n.name = Some("n".into());
        n.value_type = Some("u32".into());
        let untyped = ArgMeta::new(20, 4, ValueKind::ByValue);
        m.args = vec![x, len, alpha, n, untyped];
        m
    }

    fn buf(size: u64) -> ArgValue {
        ArgValue::Buffer(DeviceBuffer {
            addr: 0x1_0000_0000,
            size,
        })
    }

    fn err(args: &[ArgValue]) -> String {
        check_args(&meta(), args).unwrap_err().to_string()
    }

    #[test]
    fn matching_arguments_pass() {
        let ok = [
            buf(400),
            ArgValue::U32(100),
            ArgValue::F32(2.0),
            ArgValue::U32(7),
            ArgValue::F32(1.0),
        ];
        check_args(&meta(), &ok).unwrap();
        // Signedness may differ where the value fits; an untyped argument takes any 4 bytes.
        let mut v = ok;
        v[3] = ArgValue::I32(7);
        v[4] = ArgValue::U32(9);
        check_args(&meta(), &v).unwrap();
    }

    #[test]
    fn each_mismatch_names_the_argument() {
        let good = [
            buf(400),
            ArgValue::U32(100),
            ArgValue::F32(2.0),
            ArgValue::U32(7),
            ArgValue::F32(1.0),
        ];
        let with = |k: usize, v: ArgValue| {
            let mut a = good;
            a[k] = v;
            err(&a)
        };
        let e = err(&good[..4]);
        assert!(
            e.contains("takes 5 explicit argument(s), 4 given (it takes: x, x.len, alpha, n, #4)"),
            "{e}"
        );
        let e = with(0, ArgValue::U64(0x1000));
        assert!(
            e.contains("argument 0 (x): a buffer is expected, a u64 was given"),
            "{e}"
        );
        let e = with(2, ArgValue::U32(2));
        assert!(
            e.contains("argument 2 (alpha): a f32 is expected, a u32 was given"),
            "{e}"
        );
        let e = with(3, ArgValue::F32(7.0));
        assert!(
            e.contains("argument 3 (n): a u32 is expected, a f32 was given"),
            "{e}"
        );
        let e = with(3, ArgValue::I32(-1));
        assert!(
            e.contains("argument 3 (n): a u32 is expected, the i32 -1 is out of its range"),
            "{e}"
        );
        let e = with(3, ArgValue::F64(7.0));
        assert!(
            e.contains("argument 3 (n): a 4-byte by-value argument is expected, a f64 (8 bytes)"),
            "{e}"
        );
        let e = with(2, buf(8));
        assert!(e.contains("argument 2 (alpha): a 4-byte"), "{e}");
        let e = with(1, ArgValue::U32(101));
        assert!(
            e.contains("argument 1 (x.len): 101 elements of f32 need 404 bytes, but the buffer passed as argument 0 (x) has 400"),
            "{e}"
        );
        assert!(e.starts_with("invalid launch: kernel 'k': "), "{e}");
    }

    /// `(a: buf<f32>, b: buf_mut<f32>, c: buf<f32>)` with its `restrict` marks as given.
    fn three_buffers(restrict: bool) -> KernelMeta {
        let mut m = KernelMeta::new("k");
        for (k, (name, is_const)) in [("a", true), ("b", false), ("c", true)]
            .into_iter()
            .enumerate()
        {
            let mut a = ArgMeta::new(8 * k as u32, 8, ValueKind::GlobalBuffer);
            a.name = Some(name.into());
            a.is_const = is_const;
            a.is_restrict = restrict;
            m.args.push(a);
        }
        m
    }

    fn at(addr: u64, size: u64) -> ArgValue {
        ArgValue::Buffer(DeviceBuffer { addr, size })
    }

    #[test]
    fn a_written_restrict_buffer_may_not_overlap_another() {
        let m = three_buffers(true);
        check_args(
            &m,
            &[at(0x1000, 0x100), at(0x1100, 0x100), at(0x1000, 0x100)],
        )
        .unwrap();
        // The written `b` shares its first byte with `a`'s last.
        let e = check_args(&m, &[at(0x1000, 0x101), at(0x1100, 0x100), at(0x3000, 4)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 0 (a) and argument 1 (b) overlap (bytes 0x1000..0x1101 and 0x1100..0x1200)")
                && e.contains("writes argument 1 (b)"),
            "{e}"
        );
        // The same buffer passed as `b` and `c`.
        let e = check_args(&m, &[at(0x1000, 4), at(0x2000, 64), at(0x2000, 64)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("argument 1 (b) and argument 2 (c) overlap"),
            "{e}"
        );
        // Without the declaration the kernel must cope with aliasing: nothing to check.
        check_args(
            &three_buffers(false),
            &[at(0x2000, 64), at(0x2000, 64), at(0x2000, 64)],
        )
        .unwrap();
        // Empty buffers hold no byte to share.
        check_args(&m, &[at(0x2000, 0), at(0x2000, 64), at(0x3000, 4)]).unwrap();
    }

    #[test]
    fn scalar_type_names_of_kjit_opencl_and_value_type() {
        for (n, class, bytes) in [
            ("u32", ScalarClass::Int { signed: false }, 4),
            ("uint", ScalarClass::Int { signed: false }, 4),
            ("int", ScalarClass::Int { signed: true }, 4),
            ("half", ScalarClass::Float, 2),
            ("double", ScalarClass::Float, 8),
            ("ulong", ScalarClass::Int { signed: false }, 8),
            ("bool", ScalarClass::Bool, 4),
        ] {
            assert_eq!(scalar_type(n), Some(ScalarType { class, bytes }), "{n}");
        }
        assert_eq!(scalar_type("float4"), None);
        assert_eq!(scalar_type("struct"), None);
    }
}
