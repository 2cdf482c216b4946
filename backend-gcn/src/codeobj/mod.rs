//! AMDGPU code objects (ELF, AMDHSA ABI, code object v4/v5): kernel descriptors, the msgpack
//! metadata note, a writer of loadable objects and a reader of any producer's objects.
//!
//! ```text
//!  KernelBuild{code, DescriptorParams, args} ──write──► ELF bytes (ET_DYN, EM_AMDGPU, v5)
//!  ELF bytes (ours, clang+lld, Triton) ──CodeObject::parse──► Kernel{code, descriptor, meta}
//!  UserSgprs with preloaded kernargs ──preload::prologue──► the 256-byte compatibility prologue
//! ```
//! Facts come from LLVM's AMDGPUUsage; `tests/codeobj_*.rs` check them against LLVM 19's tools.

pub mod descriptor;
pub mod metadata;
pub mod preload;
pub mod read;
pub mod target_id;
pub mod write;

pub use descriptor::{
    DescriptorError, DescriptorParams, KernelDescriptor, Occupancy, OccupancyLimit, UserSgprs,
};
pub use metadata::{Access, AddressSpace, ArgMeta, KernelMeta, Metadata, MetadataError, ValueKind};
pub use read::{CodeObject, CodeObjectError, CodeSymbol, CodeSymbolKind, Kernel};
pub use target_id::{FeatureSetting, TargetId};
pub use write::{CodeObjectBuilder, KernargLayout, KernelBuild, WriteError};

/// `ELFOSABI_AMDGPU_HSA`: the OS/ABI byte of AMDHSA code objects.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `ELFABIVERSION_AMDGPU_HSA_V4` (code object v4); v5 is 3, v6 is 4.
pub const ELFABIVERSION_AMDGPU_HSA_V4: u8 = 2;
/// `ELFABIVERSION_AMDGPU_HSA_V5`: what kjit writes.
pub const ELFABIVERSION_AMDGPU_HSA_V5: u8 = 3;
/// `NT_AMDGPU_METADATA`: note type of the msgpack metadata (owner `AMDGPU`).
pub const NT_AMDGPU_METADATA: u32 = 32;
