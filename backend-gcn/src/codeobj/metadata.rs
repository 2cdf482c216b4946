//! The `NT_AMDGPU_METADATA` note: a msgpack map describing every kernel of a code object v4/v5
//! (AMDGPUUsage "Code Object V4/V5 Metadata").
//!
//! Takes the note's bytes ([`Metadata::from_msgpack`]) or kjit's kernel descriptions; gives typed
//! [`KernelMeta`]/[`ArgMeta`] records and the msgpack bytes ([`Metadata::to_msgpack`], read
//! through `rmpv`, written with `rmp`). Unknown keys are ignored when reading so that newer producers still load; a required
//! key that is missing or of the wrong type is a [`MetadataError`] naming the kernel and key.

use std::fmt;

use rmpv::Value;

/// Reasons the metadata note cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The bytes are not one msgpack value.
    #[error("metadata is not valid msgpack: {0}")]
    Msgpack(String),
    /// The top level or a kernel is not a map, or a key's value has the wrong type.
    #[error("metadata {context}: expected {expected}")]
    WrongType {
        /// Where (`kernel 'add' .args[2] .offset`).
        context: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A required key is missing.
    #[error("metadata {context}: missing required key {key}")]
    Missing {
        /// Where.
        context: String,
        /// The key.
        key: &'static str,
    },
}

/// How the runtime fills an argument (AMDGPUUsage `.value_kind`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// Copied by value from the launch's argument.
    ByValue,
    /// A global-memory pointer.
    GlobalBuffer,
    /// A pointer to dynamically sized LDS (placed after the static LDS).
    DynamicSharedPointer,
    /// An OpenCL sampler.
    Sampler,
    /// An OpenCL image.
    Image,
    /// An OpenCL pipe.
    Pipe,
    /// An OpenCL device queue.
    Queue,
    /// Grid offset in X (8 bytes).
    HiddenGlobalOffsetX,
    /// Grid offset in Y.
    HiddenGlobalOffsetY,
    /// Grid offset in Z.
    HiddenGlobalOffsetZ,
    /// Padding the runtime leaves alone.
    HiddenNone,
    /// OpenCL printf buffer pointer.
    HiddenPrintfBuffer,
    /// Hostcall buffer pointer.
    HiddenHostcallBuffer,
    /// OpenCL device-enqueue default queue.
    HiddenDefaultQueue,
    /// OpenCL device-enqueue completion action.
    HiddenCompletionAction,
    /// Multi-grid synchronisation pointer.
    HiddenMultigridSyncArg,
    /// Number of workgroups in X (u32, v5).
    HiddenBlockCountX,
    /// Number of workgroups in Y.
    HiddenBlockCountY,
    /// Number of workgroups in Z.
    HiddenBlockCountZ,
    /// Workgroup size in X (u16, v5).
    HiddenGroupSizeX,
    /// Workgroup size in Y.
    HiddenGroupSizeY,
    /// Workgroup size in Z.
    HiddenGroupSizeZ,
    /// Size of the last, partial workgroup in X (u16, v5).
    HiddenRemainderX,
    /// Remainder in Y.
    HiddenRemainderY,
    /// Remainder in Z.
    HiddenRemainderZ,
    /// Number of grid dimensions (u16, v5).
    HiddenGridDims,
    /// Device-malloc heap pointer (v5).
    HiddenHeapV1,
    /// Dynamic LDS bytes of this launch (u32, v5).
    HiddenDynamicLdsSize,
    /// Private aperture base (u32, v5).
    HiddenPrivateBase,
    /// Shared (LDS) aperture base (u32, v5).
    HiddenSharedBase,
    /// AQL queue pointer (v5).
    HiddenQueuePtr,
    /// A kind this reader does not know.
    Other(String),
}

/// Every named value kind with its metadata spelling (one table for parsing and printing).
const VALUE_KINDS: &[(ValueKind, &str)] = &[
    (ValueKind::ByValue, "by_value"),
    (ValueKind::GlobalBuffer, "global_buffer"),
    (ValueKind::DynamicSharedPointer, "dynamic_shared_pointer"),
    (ValueKind::Sampler, "sampler"),
    (ValueKind::Image, "image"),
    (ValueKind::Pipe, "pipe"),
    (ValueKind::Queue, "queue"),
    (ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x"),
    (ValueKind::HiddenGlobalOffsetY, "hidden_global_offset_y"),
    (ValueKind::HiddenGlobalOffsetZ, "hidden_global_offset_z"),
    (ValueKind::HiddenNone, "hidden_none"),
    (ValueKind::HiddenPrintfBuffer, "hidden_printf_buffer"),
    (ValueKind::HiddenHostcallBuffer, "hidden_hostcall_buffer"),
    (ValueKind::HiddenDefaultQueue, "hidden_default_queue"),
    (
        ValueKind::HiddenCompletionAction,
        "hidden_completion_action",
    ),
    (
        ValueKind::HiddenMultigridSyncArg,
        "hidden_multigrid_sync_arg",
    ),
    (ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
    (ValueKind::HiddenBlockCountY, "hidden_block_count_y"),
    (ValueKind::HiddenBlockCountZ, "hidden_block_count_z"),
    (ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
    (ValueKind::HiddenGroupSizeY, "hidden_group_size_y"),
    (ValueKind::HiddenGroupSizeZ, "hidden_group_size_z"),
    (ValueKind::HiddenRemainderX, "hidden_remainder_x"),
    (ValueKind::HiddenRemainderY, "hidden_remainder_y"),
    (ValueKind::HiddenRemainderZ, "hidden_remainder_z"),
    (ValueKind::HiddenGridDims, "hidden_grid_dims"),
    (ValueKind::HiddenHeapV1, "hidden_heap_v1"),
    (ValueKind::HiddenDynamicLdsSize, "hidden_dynamic_lds_size"),
    (ValueKind::HiddenPrivateBase, "hidden_private_base"),
    (ValueKind::HiddenSharedBase, "hidden_shared_base"),
    (ValueKind::HiddenQueuePtr, "hidden_queue_ptr"),
];

impl ValueKind {
    /// The metadata spelling (`global_buffer`, `hidden_block_count_x`, ...).
    pub fn as_str(&self) -> &str {
        if let ValueKind::Other(s) = self {
            return s;
        }
        VALUE_KINDS
            .iter()
            .find(|(k, _)| k == self)
            .map(|(_, s)| *s)
            .unwrap_or("")
    }

    /// Parses a metadata spelling; unknown spellings become [`ValueKind::Other`].
    pub fn parse(s: &str) -> ValueKind {
        VALUE_KINDS
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| ValueKind::Other(s.to_string()))
    }

    /// Whether the runtime, not the caller, supplies this argument.
    pub fn is_hidden(&self) -> bool {
        self.as_str().starts_with("hidden_")
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Address space of a pointer argument (`.address_space`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    /// Scratch.
    Private,
    /// Global memory.
    Global,
    /// Constant memory (global, read-only).
    Constant,
    /// LDS.
    Local,
    /// Flat.
    Generic,
    /// GDS.
    Region,
    /// Another spelling.
    Other(String),
}

impl AddressSpace {
    /// The metadata spelling.
    pub fn as_str(&self) -> &str {
        match self {
            AddressSpace::Private => "private",
            AddressSpace::Global => "global",
            AddressSpace::Constant => "constant",
            AddressSpace::Local => "local",
            AddressSpace::Generic => "generic",
            AddressSpace::Region => "region",
            AddressSpace::Other(s) => s,
        }
    }

    /// Parses a metadata spelling.
    pub fn parse(s: &str) -> AddressSpace {
        match s {
            "private" => AddressSpace::Private,
            "global" => AddressSpace::Global,
            "constant" => AddressSpace::Constant,
            "local" => AddressSpace::Local,
            "generic" => AddressSpace::Generic,
            "region" => AddressSpace::Region,
            other => AddressSpace::Other(other.to_string()),
        }
    }
}

/// Access of a pointer/image argument (`.access`, `.actual_access`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Only read.
    ReadOnly,
    /// Only written.
    WriteOnly,
    /// Read and written.
    ReadWrite,
    /// Another spelling.
    Other(String),
}

impl Access {
    /// The metadata spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Access::ReadOnly => "read_only",
            Access::WriteOnly => "write_only",
            Access::ReadWrite => "read_write",
            Access::Other(s) => s,
        }
    }

    /// Parses a metadata spelling.
    pub fn parse(s: &str) -> Access {
        match s {
            "read_only" => Access::ReadOnly,
            "write_only" => Access::WriteOnly,
            "read_write" => Access::ReadWrite,
            other => Access::Other(other.to_string()),
        }
    }
}

/// One kernel argument (explicit or hidden) and where it sits in the kernarg segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgMeta {
    /// Source name (`.name`), if the producer kept it.
    pub name: Option<String>,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// How the runtime fills it.
    pub value_kind: ValueKind,
    /// Source type (`.type_name`, e.g. `float*`).
    pub type_name: Option<String>,
    /// Value type of a by-value argument (`.value_type`: `i8`..`f64`, `struct`); deprecated in
    /// AMDGPUUsage and no longer emitted by LLVM, but older producers write it.
    pub value_type: Option<String>,
    /// For pointers: the address space pointed to.
    pub address_space: Option<AddressSpace>,
    /// Declared access (`.access`).
    pub access: Option<Access>,
    /// Access the compiler proved (`.actual_access`).
    pub actual_access: Option<Access>,
    /// For dynamic LDS pointers: alignment of the pointee.
    pub pointee_align: Option<u32>,
    /// `const` qualified pointee.
    pub is_const: bool,
    /// `restrict` qualified.
    pub is_restrict: bool,
    /// `volatile` qualified.
    pub is_volatile: bool,
    /// OpenCL pipe.
    pub is_pipe: bool,
}

impl ArgMeta {
    /// A minimal argument: offset, size and kind, every optional field unset.
    pub fn new(offset: u32, size: u32, value_kind: ValueKind) -> ArgMeta {
        ArgMeta {
            name: None,
            offset,
            size,
            value_kind,
            type_name: None,
            value_type: None,
            address_space: None,
            access: None,
            actual_access: None,
            pointee_align: None,
            is_const: false,
            is_restrict: false,
            is_volatile: false,
            is_pipe: false,
        }
    }
}

/// The v5 hidden arguments in the order and at the offsets (relative to their 8-aligned start
/// after the explicit arguments) that LLVM 19 lays them out, 256 bytes in all (AMDGPUUsage
/// "Code Object V5 Metadata", hidden argument table).
pub const HIDDEN_ARGS_V5: &[(ValueKind, u32, u32)] = &[
    (ValueKind::HiddenBlockCountX, 0, 4),
    (ValueKind::HiddenBlockCountY, 4, 4),
    (ValueKind::HiddenBlockCountZ, 8, 4),
    (ValueKind::HiddenGroupSizeX, 12, 2),
    (ValueKind::HiddenGroupSizeY, 14, 2),
    (ValueKind::HiddenGroupSizeZ, 16, 2),
    (ValueKind::HiddenRemainderX, 18, 2),
    (ValueKind::HiddenRemainderY, 20, 2),
    (ValueKind::HiddenRemainderZ, 22, 2),
    (ValueKind::HiddenGlobalOffsetX, 40, 8),
    (ValueKind::HiddenGlobalOffsetY, 48, 8),
    (ValueKind::HiddenGlobalOffsetZ, 56, 8),
    (ValueKind::HiddenGridDims, 64, 2),
    (ValueKind::HiddenPrintfBuffer, 72, 8),
    (ValueKind::HiddenHostcallBuffer, 80, 8),
    (ValueKind::HiddenMultigridSyncArg, 88, 8),
    (ValueKind::HiddenHeapV1, 96, 8),
    (ValueKind::HiddenDefaultQueue, 104, 8),
    (ValueKind::HiddenCompletionAction, 112, 8),
    (ValueKind::HiddenDynamicLdsSize, 120, 4),
    (ValueKind::HiddenPrivateBase, 192, 4),
    (ValueKind::HiddenSharedBase, 196, 4),
    (ValueKind::HiddenQueuePtr, 200, 8),
];

/// Bytes the v5 hidden-argument block occupies.
pub const HIDDEN_ARGS_V5_SIZE: u32 = 256;

/// The v5 hidden arguments of `kinds` (in [`HIDDEN_ARGS_V5`] order) placed after `explicit_end`
/// bytes of explicit arguments; returns them and the kernarg segment size including the whole
/// 256-byte block.
pub fn hidden_args_v5(explicit_end: u32, kinds: &[ValueKind]) -> (Vec<ArgMeta>, u32) {
    let base = explicit_end.div_ceil(8) * 8;
    let args = HIDDEN_ARGS_V5
        .iter()
        .filter(|(k, _, _)| kinds.contains(k))
        .map(|(k, off, size)| ArgMeta::new(base + off, *size, k.clone()))
        .collect();
    (args, base + HIDDEN_ARGS_V5_SIZE)
}

/// The order kjit lays out the hidden arguments its own kernels declare
/// ([`hidden_args_compact`]), by how many kernels read them: the workgroup sizes first (every
/// kernel that forms a global id reads `group_size_x`), so that they sit in the first dword after
/// the explicit arguments, the likeliest to be preloaded into user SGPRs; then the block counts
/// (grid-stride and persistent kernels); then the rest in [`HIDDEN_ARGS_V5`] order. Each kind
/// keeps its v5 size.
pub const HIDDEN_ARGS_COMPACT_ORDER: &[ValueKind] = &[
    ValueKind::HiddenGroupSizeX,
    ValueKind::HiddenGroupSizeY,
    ValueKind::HiddenGroupSizeZ,
    ValueKind::HiddenBlockCountX,
    ValueKind::HiddenBlockCountY,
    ValueKind::HiddenBlockCountZ,
];

/// The hidden arguments of `kinds` laid out compactly from `explicit_end`: in
/// [`HIDDEN_ARGS_COMPACT_ORDER`] (kinds it does not list after those, in [`HIDDEN_ARGS_V5`]
/// order), each at the next multiple of its size (its natural alignment). Returns them and
/// the segment size: the end of the last one (or `explicit_end`) rounded up to a dword, as
/// LLVM rounds `kernarg_segment_size` so that scalar loads, which read whole dwords, may
/// read the last argument (`AMDGPUSubtarget::getKernArgSegmentSize`). Kinds outside
/// [`HIDDEN_ARGS_V5`] are left out.
///
/// A runtime writes each hidden argument at the offset its metadata gives (CLR's
/// `submitKernelInternal`, `WriteAqlArgAt(..., it.size_, it.offset_)`; kjit's software device
/// in `runtime/src/emu/args.rs`), so nothing needs LLVM's 256-byte block; a kernel that
/// declares only what it reads keeps them within the few dwords after its explicit arguments.
pub fn hidden_args_compact(explicit_end: u32, kinds: &[ValueKind]) -> (Vec<ArgMeta>, u32) {
    let rank = |k: &ValueKind| {
        HIDDEN_ARGS_COMPACT_ORDER
            .iter()
            .position(|o| o == k)
            .unwrap_or(HIDDEN_ARGS_COMPACT_ORDER.len())
    };
    let mut table: Vec<&(ValueKind, u32, u32)> = HIDDEN_ARGS_V5
        .iter()
        .filter(|(k, _, _)| kinds.contains(k))
        .collect();
    // Stable: kinds of equal rank keep the v5 order.
    table.sort_by_key(|(k, _, _)| rank(k));
    let mut end = explicit_end;
    let args = table
        .into_iter()
        .map(|(k, _, size)| {
            let off = end.div_ceil(*size) * size;
            end = off + size;
            ArgMeta::new(off, *size, k.clone())
        })
        .collect();
    (args, end.div_ceil(4) * 4)
}

/// Why the arguments `args` of a kernel with a `segment_size`-byte kernarg segment cannot be
/// placed: the index of the first bad one and what is wrong with it (an argument that runs
/// past the segment or overlaps an earlier one; arguments of size 0 occupy nothing). Shared by
/// the writer and the reader, so a runtime never packs two arguments into the same bytes.
pub fn arg_layout_error(args: &[ArgMeta], segment_size: u32) -> Option<(usize, &'static str)> {
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for (index, a) in args.iter().enumerate() {
        let Some(end) = a.offset.checked_add(a.size) else {
            return Some((index, "offset + size overflows"));
        };
        if end > segment_size {
            return Some((index, "extends past the kernarg segment size"));
        }
        if a.size == 0 {
            continue;
        }
        if spans.iter().any(|&(s, e)| a.offset < e && s < end) {
            return Some((index, "overlaps an earlier argument"));
        }
        spans.push((a.offset, end));
    }
    None
}

/// Metadata of one kernel (`amdhsa.kernels[i]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelMeta {
    /// Source name (`.name`).
    pub name: String,
    /// Descriptor symbol (`.symbol`, `NAME.kd`).
    pub symbol: String,
    /// Arguments in kernarg order, explicit then hidden.
    pub args: Vec<ArgMeta>,
    /// Bytes of kernarg segment the dispatch must provide.
    pub kernarg_segment_size: u32,
    /// Alignment of the kernarg segment.
    pub kernarg_segment_align: u32,
    /// Static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// SGPRs used, including VCC/FLAT_SCRATCH/XNACK_MASK.
    pub sgpr_count: u32,
    /// VGPRs used.
    pub vgpr_count: u32,
    /// AGPRs used (0 on targets without them).
    pub agpr_count: u32,
    /// SGPRs spilled.
    pub sgpr_spill_count: u32,
    /// VGPRs spilled.
    pub vgpr_spill_count: u32,
    /// 64 on every kjit target.
    pub wavefront_size: u32,
    /// Largest workgroup the code supports.
    pub max_flat_workgroup_size: u32,
    /// Stack size not known at compile time.
    pub uses_dynamic_stack: bool,
    /// Source language (`OpenCL C`, `HIP`, ...).
    pub language: Option<String>,
    /// Source language version.
    pub language_version: Option<Vec<u32>>,
    /// `.reqd_workgroup_size`.
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.workgroup_size_hint`.
    pub workgroup_size_hint: Option<[u32; 3]>,
    /// `.uniform_work_group_size` (v5): 1 when every workgroup is full.
    pub uniform_work_group_size: Option<u32>,
    /// `.workgroup_processor_mode` (gfx10+; kept for round-tripping).
    pub workgroup_processor_mode: Option<u32>,
}

impl KernelMeta {
    /// A kernel with no arguments and the defaults LLVM uses (kernarg align 8, wave64,
    /// max workgroup 256).
    pub fn new(name: &str) -> KernelMeta {
        KernelMeta {
            name: name.to_string(),
            symbol: format!("{name}.kd"),
            args: Vec::new(),
            kernarg_segment_size: 0,
            kernarg_segment_align: 8,
            group_segment_fixed_size: 0,
            private_segment_fixed_size: 0,
            sgpr_count: 0,
            vgpr_count: 0,
            agpr_count: 0,
            sgpr_spill_count: 0,
            vgpr_spill_count: 0,
            wavefront_size: 64,
            max_flat_workgroup_size: 256,
            uses_dynamic_stack: false,
            language: None,
            language_version: None,
            reqd_workgroup_size: None,
            workgroup_size_hint: None,
            uniform_work_group_size: None,
            workgroup_processor_mode: None,
        }
    }

    /// The arguments the caller passes (not hidden), in order.
    pub fn explicit_args(&self) -> impl Iterator<Item = &ArgMeta> {
        self.args.iter().filter(|a| !a.value_kind.is_hidden())
    }

    /// The hidden argument of kind `kind`, if the kernel has one.
    pub fn hidden_arg(&self, kind: &ValueKind) -> Option<&ArgMeta> {
        self.args.iter().find(|a| &a.value_kind == kind)
    }
}

/// The whole note: version, target and kernels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Metadata {
    /// `amdhsa.version` (`[1, 2]` for code object v5, `[1, 1]` for v4).
    pub version: Vec<u32>,
    /// `amdhsa.target` (`amdgcn-amd-amdhsa--gfx942`).
    pub target: Option<String>,
    /// `amdhsa.kernels`.
    pub kernels: Vec<KernelMeta>,
    /// `amdhsa.printf` format strings.
    pub printf: Vec<String>,
}

/// Context-carrying reader of one msgpack map.
struct MapReader<'a> {
    entries: &'a [(Value, Value)],
    context: String,
}

impl<'a> MapReader<'a> {
    fn new(v: &'a Value, context: String) -> Result<MapReader<'a>, MetadataError> {
        match v {
            Value::Map(entries) => Ok(MapReader { entries, context }),
            _ => Err(MetadataError::WrongType {
                context,
                expected: "a map",
            }),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    fn wrong(&self, key: &str, expected: &'static str) -> MetadataError {
        MetadataError::WrongType {
            context: format!("{} {key}", self.context),
            expected,
        }
    }

    fn missing(&self, key: &'static str) -> MetadataError {
        MetadataError::Missing {
            context: self.context.clone(),
            key,
        }
    }

    fn opt_u32(&self, key: &str) -> Result<Option<u32>, MetadataError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an unsigned 32-bit integer")),
        }
    }

    fn req_u32(&self, key: &'static str) -> Result<u32, MetadataError> {
        self.opt_u32(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, MetadataError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| self.wrong(key, "a string")),
        }
    }

    fn req_str(&self, key: &'static str) -> Result<String, MetadataError> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, MetadataError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            // Some producers write flags as integers.
            Some(v) => v
                .as_u64()
                .map(|x| Some(x != 0))
                .ok_or_else(|| self.wrong(key, "a boolean")),
        }
    }

    fn opt_u32_list(&self, key: &str) -> Result<Option<Vec<u32>>, MetadataError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_u64().and_then(|x| u32::try_from(x).ok()))
                .collect::<Option<Vec<u32>>>()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an array of unsigned integers")),
            Some(_) => Err(self.wrong(key, "an array of unsigned integers")),
        }
    }

    fn opt_dims(&self, key: &str) -> Result<Option<[u32; 3]>, MetadataError> {
        match self.opt_u32_list(key)? {
            None => Ok(None),
            Some(v) if v.len() == 3 => Ok(Some([v[0], v[1], v[2]])),
            Some(_) => Err(self.wrong(key, "three integers")),
        }
    }
}

fn parse_arg(v: &Value, context: String) -> Result<ArgMeta, MetadataError> {
    let m = MapReader::new(v, context)?;
    Ok(ArgMeta {
        name: m.opt_str(".name")?,
        offset: m.req_u32(".offset")?,
        size: m.req_u32(".size")?,
        value_kind: ValueKind::parse(&m.req_str(".value_kind")?),
        type_name: m.opt_str(".type_name")?,
        value_type: m.opt_str(".value_type")?,
        address_space: m
            .opt_str(".address_space")?
            .map(|s| AddressSpace::parse(&s)),
        access: m.opt_str(".access")?.map(|s| Access::parse(&s)),
        actual_access: m.opt_str(".actual_access")?.map(|s| Access::parse(&s)),
        pointee_align: m.opt_u32(".pointee_align")?,
        is_const: m.opt_bool(".is_const")?.unwrap_or(false),
        is_restrict: m.opt_bool(".is_restrict")?.unwrap_or(false),
        is_volatile: m.opt_bool(".is_volatile")?.unwrap_or(false),
        is_pipe: m.opt_bool(".is_pipe")?.unwrap_or(false),
    })
}

fn parse_kernel(v: &Value, index: usize) -> Result<KernelMeta, MetadataError> {
    let m = MapReader::new(v, format!("amdhsa.kernels[{index}]"))?;
    let name = m.req_str(".name")?;
    let ctx = format!("kernel '{name}'");
    let m = MapReader::new(v, ctx.clone())?;
    let args = match m.get(".args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| parse_arg(a, format!("{ctx} .args[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(m.wrong(".args", "an array")),
    };
    Ok(KernelMeta {
        symbol: m.req_str(".symbol")?,
        args,
        kernarg_segment_size: m.req_u32(".kernarg_segment_size")?,
        kernarg_segment_align: m.req_u32(".kernarg_segment_align")?,
        group_segment_fixed_size: m.req_u32(".group_segment_fixed_size")?,
        private_segment_fixed_size: m.req_u32(".private_segment_fixed_size")?,
        sgpr_count: m.req_u32(".sgpr_count")?,
        vgpr_count: m.req_u32(".vgpr_count")?,
        agpr_count: m.opt_u32(".agpr_count")?.unwrap_or(0),
        sgpr_spill_count: m.opt_u32(".sgpr_spill_count")?.unwrap_or(0),
        vgpr_spill_count: m.opt_u32(".vgpr_spill_count")?.unwrap_or(0),
        wavefront_size: m.req_u32(".wavefront_size")?,
        max_flat_workgroup_size: m.req_u32(".max_flat_workgroup_size")?,
        uses_dynamic_stack: m.opt_bool(".uses_dynamic_stack")?.unwrap_or(false),
        language: m.opt_str(".language")?,
        language_version: m.opt_u32_list(".language_version")?,
        reqd_workgroup_size: m.opt_dims(".reqd_workgroup_size")?,
        workgroup_size_hint: m.opt_dims(".workgroup_size_hint")?,
        uniform_work_group_size: m.opt_u32(".uniform_work_group_size")?,
        workgroup_processor_mode: m.opt_u32(".workgroup_processor_mode")?,
        name,
    })
}

impl Metadata {
    /// Metadata for code object v5 (`amdhsa.version [1, 2]`).
    pub fn v5(target: String, kernels: Vec<KernelMeta>) -> Metadata {
        Metadata {
            version: vec![1, 2],
            target: Some(target),
            kernels,
            printf: Vec::new(),
        }
    }

    /// Parses the note's descriptor bytes.
    pub fn from_msgpack(bytes: &[u8]) -> Result<Metadata, MetadataError> {
        let mut rd = bytes;
        let root =
            rmpv::decode::read_value(&mut rd).map_err(|e| MetadataError::Msgpack(e.to_string()))?;
        let m = MapReader::new(&root, "root".to_string())?;
        let version = m
            .opt_u32_list("amdhsa.version")?
            .ok_or_else(|| m.missing("amdhsa.version"))?;
        let kernels = match m.get("amdhsa.kernels") {
            None => Vec::new(),
            Some(Value::Array(ks)) => ks
                .iter()
                .enumerate()
                .map(|(i, k)| parse_kernel(k, i))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(m.wrong("amdhsa.kernels", "an array")),
        };
        let printf = match m.get("amdhsa.printf") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| m.wrong("amdhsa.printf", "an array of strings"))?,
            Some(_) => return Err(m.wrong("amdhsa.printf", "an array of strings")),
        };
        Ok(Metadata {
            version,
            target: m.opt_str("amdhsa.target")?,
            kernels,
            printf,
        })
    }

    /// The msgpack value (keys sorted as LLVM writes them): the tree of the entries
    /// [`Metadata::to_msgpack`] writes.
    pub fn to_value(&self) -> Value {
        map_value(&self.entries())
    }

    /// The note's descriptor bytes: the encoding of [`Metadata::to_value`], written straight
    /// from the records (building the value tree first allocated a `String` per key and was
    /// most of the code object's writing time for small kernels).
    pub fn to_msgpack(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + 512 * self.kernels.len());
        write_map(&mut out, &self.entries());
        out
    }

    /// The top map's entries; one list serves the tree and the direct writer.
    fn entries(&self) -> Entries<'_> {
        let mut top: Entries = Entries::new();
        top.push(("amdhsa.kernels", Field::Kernels(&self.kernels)));
        if !self.printf.is_empty() {
            top.push(("amdhsa.printf", Field::Strs(&self.printf)));
        }
        if let Some(t) = &self.target {
            top.push(("amdhsa.target", Field::Str(t)));
        }
        top.push(("amdhsa.version", Field::U32s(&self.version)));
        top
    }
}

/// A map entry's value for [`Metadata::to_msgpack`], borrowed from the records.
enum Field<'a> {
    Str(&'a str),
    U32(u32),
    Bool(bool),
    U32s(&'a [u32]),
    Strs(&'a [String]),
    Args(&'a [ArgMeta]),
    Kernels(&'a [KernelMeta]),
}

/// A map's entries, keys in the order LLVM writes them.
type Entries<'a> = smallvec::SmallVec<[(&'static str, Field<'a>); 24]>;

// Writing into a Vec cannot fail: the `expect`s below never fire.
fn write_map(out: &mut Vec<u8>, m: &Entries) {
    rmp::encode::write_map_len(out, m.len() as u32).expect("msgpack into a Vec");
    for (key, field) in m {
        rmp::encode::write_str(out, key).expect("msgpack into a Vec");
        write_field(out, field);
    }
}

fn write_field(out: &mut Vec<u8>, f: &Field) {
    let array = |out: &mut Vec<u8>, n: usize| {
        rmp::encode::write_array_len(out, n as u32).expect("msgpack into a Vec");
    };
    match f {
        Field::Str(x) => rmp::encode::write_str(out, x).expect("msgpack into a Vec"),
        Field::U32(x) => {
            rmp::encode::write_uint(out, u64::from(*x)).expect("msgpack into a Vec");
        }
        Field::Bool(x) => rmp::encode::write_bool(out, *x).expect("msgpack into a Vec"),
        Field::U32s(xs) => {
            array(out, xs.len());
            for &x in *xs {
                write_field(out, &Field::U32(x));
            }
        }
        Field::Strs(xs) => {
            array(out, xs.len());
            for x in *xs {
                write_field(out, &Field::Str(x));
            }
        }
        Field::Args(args) => {
            array(out, args.len());
            for a in *args {
                write_map(out, &arg_entries(a));
            }
        }
        Field::Kernels(ks) => {
            array(out, ks.len());
            for k in *ks {
                write_map(out, &kernel_entries(k));
            }
        }
    }
}

/// The tree of a map's entries (for [`Metadata::to_value`]).
fn map_value(m: &Entries) -> Value {
    Value::Map(
        m.iter()
            .map(|(key, field)| (Value::from(*key), field_value(field)))
            .collect(),
    )
}

fn field_value(f: &Field) -> Value {
    match f {
        Field::Str(x) => Value::from(*x),
        Field::U32(x) => Value::from(*x),
        Field::Bool(x) => Value::Boolean(*x),
        Field::U32s(xs) => Value::Array(xs.iter().map(|&x| Value::from(x)).collect()),
        Field::Strs(xs) => Value::Array(xs.iter().map(|x| Value::from(x.as_str())).collect()),
        Field::Args(args) => {
            Value::Array(args.iter().map(|a| map_value(&arg_entries(a))).collect())
        }
        Field::Kernels(ks) => {
            Value::Array(ks.iter().map(|k| map_value(&kernel_entries(k))).collect())
        }
    }
}

/// An argument's entries.
fn arg_entries(a: &ArgMeta) -> Entries<'_> {
    let mut m = Entries::new();
    if let Some(v) = &a.access {
        m.push((".access", Field::Str(v.as_str())));
    }
    if let Some(v) = &a.actual_access {
        m.push((".actual_access", Field::Str(v.as_str())));
    }
    if let Some(v) = &a.address_space {
        m.push((".address_space", Field::Str(v.as_str())));
    }
    for (key, on) in [
        (".is_const", a.is_const),
        (".is_pipe", a.is_pipe),
        (".is_restrict", a.is_restrict),
        (".is_volatile", a.is_volatile),
    ] {
        if on {
            m.push((key, Field::Bool(true)));
        }
    }
    if let Some(v) = &a.name {
        m.push((".name", Field::Str(v)));
    }
    m.push((".offset", Field::U32(a.offset)));
    if let Some(v) = a.pointee_align {
        m.push((".pointee_align", Field::U32(v)));
    }
    m.push((".size", Field::U32(a.size)));
    if let Some(v) = &a.type_name {
        m.push((".type_name", Field::Str(v)));
    }
    m.push((".value_kind", Field::Str(a.value_kind.as_str())));
    if let Some(v) = &a.value_type {
        m.push((".value_type", Field::Str(v)));
    }
    m
}

/// A kernel's entries.
fn kernel_entries(k: &KernelMeta) -> Entries<'_> {
    let mut m = Entries::new();
    m.push((".agpr_count", Field::U32(k.agpr_count)));
    m.push((".args", Field::Args(&k.args)));
    m.push((
        ".group_segment_fixed_size",
        Field::U32(k.group_segment_fixed_size),
    ));
    m.push((
        ".kernarg_segment_align",
        Field::U32(k.kernarg_segment_align),
    ));
    m.push((".kernarg_segment_size", Field::U32(k.kernarg_segment_size)));
    if let Some(l) = &k.language {
        m.push((".language", Field::Str(l)));
    }
    if let Some(v) = &k.language_version {
        m.push((".language_version", Field::U32s(v)));
    }
    m.push((
        ".max_flat_workgroup_size",
        Field::U32(k.max_flat_workgroup_size),
    ));
    m.push((".name", Field::Str(&k.name)));
    m.push((
        ".private_segment_fixed_size",
        Field::U32(k.private_segment_fixed_size),
    ));
    if let Some(d) = &k.reqd_workgroup_size {
        m.push((".reqd_workgroup_size", Field::U32s(d)));
    }
    m.push((".sgpr_count", Field::U32(k.sgpr_count)));
    m.push((".sgpr_spill_count", Field::U32(k.sgpr_spill_count)));
    m.push((".symbol", Field::Str(&k.symbol)));
    if let Some(u) = k.uniform_work_group_size {
        m.push((".uniform_work_group_size", Field::U32(u)));
    }
    m.push((".uses_dynamic_stack", Field::Bool(k.uses_dynamic_stack)));
    m.push((".vgpr_count", Field::U32(k.vgpr_count)));
    m.push((".vgpr_spill_count", Field::U32(k.vgpr_spill_count)));
    m.push((".wavefront_size", Field::U32(k.wavefront_size)));
    if let Some(d) = &k.workgroup_size_hint {
        m.push((".workgroup_size_hint", Field::U32s(d)));
    }
    if let Some(w) = k.workgroup_processor_mode {
        m.push((".workgroup_processor_mode", Field::U32(w)));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Metadata {
        let mut k = KernelMeta::new("add");
        let mut a = ArgMeta::new(0, 8, ValueKind::GlobalBuffer);
        a.address_space = Some(AddressSpace::Global);
        a.is_const = true;
        a.type_name = Some("float*".into());
        a.name = Some("a".into());
        k.args.push(a);
        let mut n = ArgMeta::new(8, 4, ValueKind::ByValue);
        n.value_type = Some("u32".into());
        k.args.push(n);
        let (hidden, size) = hidden_args_v5(
            12,
            &[ValueKind::HiddenBlockCountX, ValueKind::HiddenGridDims],
        );
        k.args.extend(hidden);
        k.kernarg_segment_size = size;
        k.reqd_workgroup_size = Some([64, 1, 1]);
        Metadata::v5("amdgcn-amd-amdhsa--gfx942".into(), vec![k])
    }

    /// kjit's layout: only the kinds asked for, group sizes first, each at its natural
    /// alignment right after the explicit arguments; the segment ends on a dword.
    #[test]
    fn compact_hidden_arguments_follow_the_explicit_ones() {
        let kinds = [
            ValueKind::HiddenBlockCountX,
            ValueKind::HiddenGroupSizeY,
            ValueKind::HiddenGroupSizeX,
        ];
        let (args, size) = hidden_args_compact(36, &kinds);
        let placed: Vec<(ValueKind, u32, u32)> = args
            .iter()
            .map(|a| (a.value_kind.clone(), a.offset, a.size))
            .collect();
        assert_eq!(
            placed,
            [
                (ValueKind::HiddenGroupSizeX, 36, 2),
                (ValueKind::HiddenGroupSizeY, 38, 2),
                (ValueKind::HiddenBlockCountX, 40, 4),
            ]
        );
        assert_eq!(size, 44);
        // A 2-aligned end: the group size fills the half dword, the count the next dword.
        let (args, size) = hidden_args_compact(
            6,
            &[ValueKind::HiddenBlockCountX, ValueKind::HiddenGroupSizeX],
        );
        assert_eq!((args[0].offset, args[1].offset, size), (6, 8, 12));
        // Nothing asked for: nothing declared, the segment is the explicit one on a dword.
        assert_eq!(hidden_args_compact(6, &[]), (vec![], 8));
        assert_eq!(arg_layout_error(&args, 12), None);
        assert_eq!(
            arg_layout_error(&args, 11),
            Some((1, "extends past the kernarg segment size"))
        );
        let mut over = args.clone();
        over[1].offset = 6;
        assert_eq!(
            arg_layout_error(&over, 12),
            Some((1, "overlaps an earlier argument"))
        );
    }

    #[test]
    fn msgpack_round_trips() {
        let m = sample();
        let back = Metadata::from_msgpack(&m.to_msgpack()).unwrap();
        assert_eq!(back, m);
        let k = &back.kernels[0];
        assert_eq!(k.kernarg_segment_size, 16 + 256);
        assert_eq!(
            k.hidden_arg(&ValueKind::HiddenGridDims).unwrap().offset,
            16 + 64
        );
        assert_eq!(k.explicit_args().count(), 2);
    }

    /// The direct writer gives the bytes of the value tree, with every optional key present
    /// and absent.
    #[test]
    fn msgpack_is_the_value_trees_encoding() {
        let tree = |m: &Metadata| {
            let mut bytes = Vec::new();
            rmpv::encode::write_value(&mut bytes, &m.to_value()).unwrap();
            bytes
        };
        let bare = sample();
        assert_eq!(bare.to_msgpack(), tree(&bare));
        let mut full = sample();
        full.printf = vec!["1:4:%d".into(), "2:0:x".into()];
        let k = &mut full.kernels[0];
        k.language = Some("OpenCL C".into());
        k.language_version = Some(vec![2, 0]);
        k.workgroup_size_hint = Some([256, 1, 1]);
        k.uniform_work_group_size = Some(1);
        k.workgroup_processor_mode = Some(0);
        k.vgpr_count = 300;
        k.private_segment_fixed_size = 70_000;
        for a in &mut k.args {
            a.access = Some(Access::ReadOnly);
            a.actual_access = Some(Access::ReadWrite);
            a.is_pipe = true;
            a.is_restrict = true;
            a.is_volatile = true;
            a.pointee_align = Some(16);
            a.value_type = Some("f32".into());
        }
        let second = full.kernels[0].clone();
        full.kernels.push(second);
        full.target = None;
        assert_eq!(full.to_msgpack(), tree(&full));
        assert_eq!(Metadata::from_msgpack(&full.to_msgpack()).unwrap(), full);
    }

    #[test]
    fn errors_name_the_kernel_and_key() {
        let mut v = sample().to_value();
        // Make the first argument's offset a string.
        if let Value::Map(top) = &mut v {
            if let Value::Array(ks) = &mut top[0].1 {
                if let Value::Map(k) = &mut ks[0] {
                    let args = k
                        .iter_mut()
                        .find(|(key, _)| key.as_str() == Some(".args"))
                        .unwrap();
                    if let Value::Array(a) = &mut args.1 {
                        if let Value::Map(a0) = &mut a[0] {
                            for (key, val) in a0.iter_mut() {
                                if key.as_str() == Some(".offset") {
                                    *val = Value::from("zero");
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &v).unwrap();
        let e = Metadata::from_msgpack(&bytes).unwrap_err();
        assert_eq!(
            e.to_string(),
            "metadata kernel 'add' .args[0] .offset: expected an unsigned 32-bit integer"
        );
        assert!(matches!(
            Metadata::from_msgpack(&[0x81, 0xa1]),
            Err(MetadataError::Msgpack(_))
        ));
        assert!(matches!(
            Metadata::from_msgpack(&[0x90]),
            Err(MetadataError::WrongType { .. })
        ));
    }

    #[test]
    fn value_kinds_round_trip_their_spelling() {
        for (k, name) in VALUE_KINDS {
            assert_eq!(ValueKind::parse(name), *k);
            assert_eq!(k.as_str(), *name);
        }
        assert_eq!(
            ValueKind::parse("hidden_new_thing"),
            ValueKind::Other("hidden_new_thing".into())
        );
        assert!(ValueKind::parse("hidden_new_thing").is_hidden());
        assert!(!ValueKind::ByValue.is_hidden());
    }
}
