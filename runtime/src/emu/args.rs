//! The kernarg segment of a launch on the software device: the explicit arguments at their
//! metadata offsets, checked against the metadata's kinds and sizes, and the hidden arguments
//! filled as the HIP runtime fills them for code object v5 (block counts, group sizes,
//! remainders, global offsets, grid dimensions, dynamic LDS size, aperture bases, queue pointer;
//! pointers the device does not provide — printf, hostcall, heap, default queue — are null).

use kjit_backend_gcn::codeobj::{KernelMeta, ValueKind};

use super::wave::{PRIVATE_APERTURE, SHARED_APERTURE};
use crate::device::{ArgValue, LaunchDims};

/// What the device knows about a launch that hidden arguments report.
#[derive(Clone, Copy, Debug)]
pub struct HiddenValues {
    /// Launch shape.
    pub dims: LaunchDims,
    /// The `amd_queue_t` address.
    pub queue: u64,
}

/// Packs the kernarg segment of `meta` for `args`. Errors name the argument and what was wrong.
pub fn pack(
    meta: &KernelMeta,
    args: &[ArgValue],
    hidden: &HiddenValues,
) -> Result<Vec<u8>, String> {
    let mut seg = crate::kernarg::pack_explicit(meta, args)?;
    let d = &hidden.dims;
    let ndims: u16 = if d.grid[2] > 1 || d.block[2] > 1 {
        3
    } else if d.grid[1] > 1 || d.block[1] > 1 {
        2
    } else {
        1
    };
    for a in meta.args.iter().filter(|a| a.value_kind.is_hidden()) {
        let value: u64 = match a.value_kind {
            ValueKind::HiddenBlockCountX => d.grid[0] as u64,
            ValueKind::HiddenBlockCountY => d.grid[1] as u64,
            ValueKind::HiddenBlockCountZ => d.grid[2] as u64,
            ValueKind::HiddenGroupSizeX => d.block[0] as u64,
            ValueKind::HiddenGroupSizeY => d.block[1] as u64,
            ValueKind::HiddenGroupSizeZ => d.block[2] as u64,
            // The grid is a whole number of workgroups: no partial last group.
            ValueKind::HiddenRemainderX
            | ValueKind::HiddenRemainderY
            | ValueKind::HiddenRemainderZ => 0,
            ValueKind::HiddenGlobalOffsetX
            | ValueKind::HiddenGlobalOffsetY
            | ValueKind::HiddenGlobalOffsetZ => 0,
            ValueKind::HiddenGridDims => ndims as u64,
            ValueKind::HiddenDynamicLdsSize => d.dynamic_lds as u64,
            ValueKind::HiddenPrivateBase => PRIVATE_APERTURE >> 32,
            ValueKind::HiddenSharedBase => SHARED_APERTURE >> 32,
            ValueKind::HiddenQueuePtr => hidden.queue,
            _ => 0,
        };
        let o = a.offset as usize;
        let n = (a.size as usize).min(8);
        if o + n <= seg.len() {
            seg[o..o + n].copy_from_slice(&value.to_le_bytes()[..n]);
        }
    }
    Ok(seg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceBuffer;
    use kjit_backend_gcn::codeobj::metadata::hidden_args_v5;
    use kjit_backend_gcn::codeobj::ArgMeta;

    fn meta() -> KernelMeta {
        let mut m = KernelMeta::new("k");
        m.args.push(ArgMeta::new(0, 8, ValueKind::GlobalBuffer));
        m.args.push(ArgMeta::new(8, 4, ValueKind::ByValue));
        let (hidden, size) = hidden_args_v5(
            12,
            &[
                ValueKind::HiddenBlockCountX,
                ValueKind::HiddenGroupSizeY,
                ValueKind::HiddenGridDims,
                ValueKind::HiddenQueuePtr,
            ],
        );
        m.args.extend(hidden);
        m.kernarg_segment_size = size;
        m
    }

    #[test]
    fn explicit_and_hidden_arguments_land_at_their_offsets() {
        let dims = LaunchDims {
            grid: [7, 3, 1],
            block: [64, 4, 1],
            dynamic_lds: 0,
        };
        let buf = DeviceBuffer {
            addr: 0x1_0000_1000,
            size: 64,
        };
        let seg = pack(
            &meta(),
            &[ArgValue::Buffer(buf), ArgValue::F32(1.5)],
            &HiddenValues {
                dims,
                queue: 0xabc0,
            },
        )
        .unwrap();
        assert_eq!(seg.len(), 16 + 256);
        assert_eq!(
            u64::from_le_bytes(seg[0..8].try_into().unwrap()),
            0x1_0000_1000
        );
        assert_eq!(f32::from_le_bytes(seg[8..12].try_into().unwrap()), 1.5);
        assert_eq!(
            u32::from_le_bytes(seg[16..20].try_into().unwrap()),
            7,
            "block count x"
        );
        assert_eq!(
            u16::from_le_bytes(seg[30..32].try_into().unwrap()),
            4,
            "group size y"
        );
        assert_eq!(
            u16::from_le_bytes(seg[80..82].try_into().unwrap()),
            2,
            "grid dims"
        );
        assert_eq!(
            u64::from_le_bytes(seg[216..224].try_into().unwrap()),
            0xabc0,
            "queue ptr"
        );
    }

    #[test]
    fn wrong_count_or_type_is_an_error() {
        let dims = LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        };
        let h = HiddenValues { dims, queue: 0 };
        let e = pack(&meta(), &[ArgValue::U32(1)], &h).unwrap_err();
        assert!(
            e.contains("takes 2 explicit argument(s), 1 given (it takes: #0, #1)"),
            "{e}"
        );
        let e = pack(&meta(), &[ArgValue::U32(1), ArgValue::U32(2)], &h).unwrap_err();
        assert!(
            e.contains("argument 0: a buffer is expected, a u32 was given"),
            "{e}"
        );
        let buf = ArgValue::Buffer(DeviceBuffer { addr: 64, size: 8 });
        let e = pack(&meta(), &[buf, ArgValue::F64(2.0)], &h).unwrap_err();
        assert!(e.contains("argument 1") && e.contains("4-byte"), "{e}");
    }
}
