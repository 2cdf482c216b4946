//! Writing loadable AMDGPU code objects (v5) with the `object` crate's ELF writer.
//!
//! Takes [`KernelBuild`]s (machine code, the resource settings of [`DescriptorParams`], argument
//! metadata) for one target; gives the bytes of an `ET_DYN` ELF64 that the HSA loader (and
//! `llvm-readelf-19`, `llvm-objdump-19`, kjit's own reader) accepts:
//!
//! ```text
//!  file/vaddr   segment          sections
//!  0x0          PT_LOAD  R       ELF header, program headers (PT_PHDR), .note, .dynsym, .hash,
//!                                .dynstr, .rodata (64-byte descriptors, 64-aligned)
//!  +0x1000      PT_LOAD  R E     .text (each kernel 256-aligned, gaps filled with s_nop 0)
//!  +0x2000      PT_LOAD  RW      .dynamic (PT_DYNAMIC)
//!  (not loaded)                  .symtab, .strtab, .shstrtab, section headers
//! ```
//! Each segment's virtual address is its file offset plus a page multiple, as ld.lld lays them
//! out, so segments never share a page. Symbols: `NAME` (FUNC, GLOBAL, PROTECTED) at the entry
//! and `NAME.kd` (OBJECT, 64 bytes) at the descriptor, whose entry offset is
//! `entry - descriptor address`.

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::write::StringId;
use object::Endianness;

use super::descriptor::{
    DescriptorError, DescriptorParams, KernelDescriptor, KERNEL_DESCRIPTOR_SIZE,
};
use super::metadata::{ArgMeta, KernelMeta, Metadata};
use super::target_id::{FeatureSetting, TargetId};
use super::{ELFABIVERSION_AMDGPU_HSA_V5, ELFOSABI_AMDGPU_HSA, NT_AMDGPU_METADATA};
use crate::target::Target;

/// Why a code object cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// No kernels were added.
    #[error("a code object needs at least one kernel")]
    NoKernels,
    /// A kernel name is empty, has a NUL byte, or ends in `.kd`.
    #[error("invalid kernel name {0:?}")]
    BadName(String),
    /// Two kernels share a name.
    #[error("two kernels are named '{0}'")]
    DuplicateName(String),
    /// Code must be whole 32-bit words and not empty.
    #[error("kernel '{name}': code is {len} bytes; it must be a non-empty multiple of 4")]
    BadCodeLength {
        /// The kernel.
        name: String,
        /// Its code length.
        len: usize,
    },
    /// The descriptor settings do not fit the target.
    #[error("kernel '{name}': {source}")]
    Descriptor {
        /// The kernel.
        name: String,
        /// What is wrong.
        source: DescriptorError,
    },
    /// An argument lies outside the kernarg segment, overlaps another, or is misaligned.
    #[error("kernel '{name}': argument {index} at {offset}+{size}: {why}")]
    BadArgument {
        /// The kernel.
        name: String,
        /// Argument index.
        index: usize,
        /// Its offset.
        offset: u32,
        /// Its size.
        size: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// A feature setting the target does not support (e.g. sramecc on gfx900).
    #[error("{target} does not support {feature} = {setting:?}")]
    UnsupportedFeature {
        /// The target.
        target: Target,
        /// `xnack` or `sramecc`.
        feature: &'static str,
        /// The requested setting.
        setting: FeatureSetting,
    },
    /// The ELF writer failed.
    #[error("ELF writer: {0}")]
    Elf(String),
}

/// One kernel to put in a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelBuild {
    /// Symbol and metadata name.
    pub name: String,
    /// Machine code, entry first.
    pub code: Vec<u8>,
    /// Resource settings for the descriptor (and the metadata's register counts and sizes).
    pub descriptor: DescriptorParams,
    /// Explicit and hidden arguments with their kernarg offsets (see [`KernargLayout`]).
    pub args: Vec<ArgMeta>,
    /// `.kernarg_segment_align` (at least 4, a power of two; LLVM uses 8).
    pub kernarg_segment_align: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: u32,
    /// `.reqd_workgroup_size`, if the code assumes one.
    pub reqd_workgroup_size: Option<[u32; 3]>,
}

impl KernelBuild {
    /// A kernel with default settings: kernarg segment pointer in s[0:1] (the only user SGPRs),
    /// workgroup id X, work-item id X, 256 work-items at most.
    pub fn new(name: &str, code: Vec<u8>) -> KernelBuild {
        let mut descriptor = DescriptorParams::default();
        descriptor.user_sgprs.kernarg_segment_ptr = true;
        KernelBuild {
            name: name.to_string(),
            code,
            descriptor,
            args: Vec::new(),
            kernarg_segment_align: 8,
            max_flat_workgroup_size: 256,
            sgpr_spill_count: 0,
            vgpr_spill_count: 0,
            reqd_workgroup_size: None,
        }
    }

    /// Sets the arguments and the kernarg size from a finished layout.
    pub fn with_args(mut self, layout: (Vec<ArgMeta>, u32)) -> KernelBuild {
        self.args = layout.0;
        self.descriptor.kernarg_size = layout.1;
        self
    }

    /// The metadata record this kernel gets on `target` with xnack setting `xnack`.
    pub fn meta(&self, target: Target, xnack: FeatureSetting) -> KernelMeta {
        let p = &self.descriptor;
        let mut m = KernelMeta::new(&self.name);
        m.args = self.args.clone();
        m.kernarg_segment_size = p.kernarg_size;
        m.kernarg_segment_align = self.kernarg_segment_align;
        m.group_segment_fixed_size = p.group_segment_fixed_size;
        m.private_segment_fixed_size = p.private_segment_fixed_size;
        m.sgpr_count = p.total_sgprs(target, xnack);
        m.vgpr_count = p.vgprs;
        m.agpr_count = p.agprs;
        m.sgpr_spill_count = self.sgpr_spill_count;
        m.vgpr_spill_count = self.vgpr_spill_count;
        m.wavefront_size = 64;
        m.max_flat_workgroup_size = self.max_flat_workgroup_size;
        m.uses_dynamic_stack = p.uses_dynamic_stack;
        m.reqd_workgroup_size = self.reqd_workgroup_size;
        m
    }

    fn validate(&self) -> Result<(), WriteError> {
        if self.name.is_empty() || self.name.contains('\0') || self.name.ends_with(".kd") {
            return Err(WriteError::BadName(self.name.clone()));
        }
        if self.code.is_empty() || !self.code.len().is_multiple_of(4) {
            return Err(WriteError::BadCodeLength {
                name: self.name.clone(),
                len: self.code.len(),
            });
        }
        let bad = |index: usize, why| {
            let a = &self.args[index];
            WriteError::BadArgument {
                name: self.name.clone(),
                index,
                offset: a.offset,
                size: a.size,
                why,
            }
        };
        if let Some(index) = self.args.iter().position(|a| a.size == 0) {
            return Err(bad(index, "has size 0"));
        }
        if let Some((index, why)) =
            super::metadata::arg_layout_error(&self.args, self.descriptor.kernarg_size)
        {
            return Err(bad(index, why));
        }
        if !self.kernarg_segment_align.is_power_of_two() || self.kernarg_segment_align < 4 {
            return Err(WriteError::BadArgument {
                name: self.name.clone(),
                index: 0,
                offset: 0,
                size: 0,
                why: "kernarg segment alignment must be a power of two >= 4",
            });
        }
        Ok(())
    }
}

/// Lays out explicit kernel arguments in the kernarg segment the way the HIP/OpenCL ABI does
/// (each at the next multiple of its alignment), then the hidden arguments: in LLVM's v5 layout
/// ([`KernargLayout::finish_v5`]) or compactly, only those asked for ([`KernargLayout::finish_compact`]).
#[derive(Clone, Debug, Default)]
pub struct KernargLayout {
    args: Vec<ArgMeta>,
    end: u32,
}

impl KernargLayout {
    /// An empty layout.
    pub fn new() -> KernargLayout {
        KernargLayout::default()
    }

    /// Appends `arg` (its offset is replaced) at the next multiple of `align`.
    pub fn push(&mut self, mut arg: ArgMeta, align: u32) -> &mut Self {
        let align = align.max(1);
        arg.offset = self.end.div_ceil(align) * align;
        self.end = arg.offset + arg.size;
        self.args.push(arg);
        self
    }

    /// Appends a global-memory pointer (8 bytes).
    pub fn global_buffer(&mut self, name: &str, is_const: bool) -> &mut Self {
        let mut a = ArgMeta::new(0, 8, super::ValueKind::GlobalBuffer);
        a.name = Some(name.to_string());
        a.address_space = Some(super::AddressSpace::Global);
        a.is_const = is_const;
        self.push(a, 8)
    }

    /// Appends a by-value argument of `size` bytes aligned to `align`.
    pub fn by_value(&mut self, name: &str, size: u32, align: u32) -> &mut Self {
        let mut a = ArgMeta::new(0, size, super::ValueKind::ByValue);
        a.name = Some(name.to_string());
        self.push(a, align)
    }

    /// Appends a pointer to dynamically sized LDS (4 bytes).
    pub fn dynamic_shared_pointer(&mut self, name: &str, pointee_align: u32) -> &mut Self {
        let mut a = ArgMeta::new(0, 4, super::ValueKind::DynamicSharedPointer);
        a.name = Some(name.to_string());
        a.address_space = Some(super::AddressSpace::Local);
        a.pointee_align = Some(pointee_align);
        self.push(a, 4)
    }

    /// The explicit arguments and the segment size without hidden arguments.
    pub fn finish(self) -> (Vec<ArgMeta>, u32) {
        (self.args, self.end)
    }

    /// Appends the v5 hidden arguments of `kinds` (in LLVM's layout, 256 bytes from the next
    /// 8-aligned offset) and returns arguments and segment size.
    pub fn finish_v5(self, kinds: &[super::ValueKind]) -> (Vec<ArgMeta>, u32) {
        let hidden = super::metadata::hidden_args_v5(self.end, kinds);
        self.finish_with(hidden)
    }

    /// Appends only the hidden arguments of `kinds`, compactly after the explicit ones
    /// (kjit's layout, [`super::metadata::hidden_args_compact`]), and returns arguments and
    /// segment size.
    pub fn finish_compact(self, kinds: &[super::ValueKind]) -> (Vec<ArgMeta>, u32) {
        let hidden = super::metadata::hidden_args_compact(self.end, kinds);
        self.finish_with(hidden)
    }

    fn finish_with(self, (hidden, size): (Vec<ArgMeta>, u32)) -> (Vec<ArgMeta>, u32) {
        let mut args = self.args;
        args.extend(hidden);
        (args, size)
    }
}

/// Builds a code object for one target from kernels.
#[derive(Clone, Debug)]
pub struct CodeObjectBuilder {
    target: TargetId,
    kernels: Vec<KernelBuild>,
}

/// `s_nop 0`: the filler between kernels in `.text`, as LLVM pads code sections.
const S_NOP_0: [u8; 4] = 0xbf80_0000u32.to_le_bytes();
/// Alignment of each kernel's entry (LLVM aligns kernel functions to 256 bytes).
const KERNEL_CODE_ALIGN: u64 = 256;
/// Page size that separates segments.
const PAGE: u64 = 0x1000;

impl CodeObjectBuilder {
    /// A builder for `target` with xnack and sramecc "any" where supported.
    pub fn new(target: Target) -> CodeObjectBuilder {
        CodeObjectBuilder {
            target: TargetId::new(target),
            kernels: Vec::new(),
        }
    }

    /// Sets the xnack setting recorded in `e_flags` and the target string.
    pub fn xnack(mut self, s: FeatureSetting) -> CodeObjectBuilder {
        self.target.xnack = s;
        self
    }

    /// Sets the sramecc setting.
    pub fn sramecc(mut self, s: FeatureSetting) -> CodeObjectBuilder {
        self.target.sramecc = s;
        self
    }

    /// The target ID being built for.
    pub fn target_id(&self) -> TargetId {
        self.target
    }

    /// Adds a kernel.
    pub fn add_kernel(&mut self, k: KernelBuild) -> &mut Self {
        self.kernels.push(k);
        self
    }

    /// The metadata note this builder writes.
    pub fn metadata(&self) -> Metadata {
        Metadata::v5(
            self.target.triple_string(),
            self.kernels
                .iter()
                .map(|k| k.meta(self.target.target, self.target.xnack))
                .collect(),
        )
    }

    fn check_features(&self) -> Result<(), WriteError> {
        let t = self.target.target;
        for (feature, setting, supported) in [
            (
                "xnack",
                self.target.xnack,
                super::target_id::supports_xnack(t),
            ),
            (
                "sramecc",
                self.target.sramecc,
                super::target_id::supports_sramecc(t),
            ),
        ] {
            if (setting == FeatureSetting::Unsupported) == supported {
                return Err(WriteError::UnsupportedFeature {
                    target: t,
                    feature,
                    setting,
                });
            }
        }
        Ok(())
    }

    /// Writes the code object.
    pub fn build(&self) -> Result<Vec<u8>, WriteError> {
        if self.kernels.is_empty() {
            return Err(WriteError::NoKernels);
        }
        self.check_features()?;
        let target = self.target.target;
        let mut descriptors = Vec::with_capacity(self.kernels.len());
        for (i, k) in self.kernels.iter().enumerate() {
            k.validate()?;
            if self.kernels[..i].iter().any(|o| o.name == k.name) {
                return Err(WriteError::DuplicateName(k.name.clone()));
            }
            let kd = KernelDescriptor::build(target, self.target.xnack, &k.descriptor).map_err(
                |source| WriteError::Descriptor {
                    name: k.name.clone(),
                    source,
                },
            )?;
            descriptors.push(kd);
        }

        // The note: namesz, descsz, type, "AMDGPU\0" padded to 4, msgpack padded to 4.
        let msgpack = self.metadata().to_msgpack();
        let mut note = Vec::with_capacity(msgpack.len() + 24);
        note.extend_from_slice(&7u32.to_le_bytes());
        note.extend_from_slice(&(msgpack.len() as u32).to_le_bytes());
        note.extend_from_slice(&NT_AMDGPU_METADATA.to_le_bytes());
        note.extend_from_slice(b"AMDGPU\0\0");
        note.extend_from_slice(&msgpack);
        while note.len() % 4 != 0 {
            note.push(0);
        }

        // .text: kernels at 256-byte boundaries.
        let mut text = Vec::new();
        let mut code_offsets = Vec::with_capacity(self.kernels.len());
        for k in &self.kernels {
            while !(text.len() as u64).is_multiple_of(KERNEL_CODE_ALIGN) {
                text.extend_from_slice(&S_NOP_0);
            }
            code_offsets.push(text.len() as u64);
            text.extend_from_slice(&k.code);
        }

        let names: Vec<Vec<u8>> = self
            .kernels
            .iter()
            .map(|k| k.name.as_bytes().to_vec())
            .collect();
        let kd_names: Vec<Vec<u8>> = self
            .kernels
            .iter()
            .map(|k| format!("{}.kd", k.name).into_bytes())
            .collect();

        let mut out = Vec::new();
        let mut w = Writer::new(Endianness::Little, true, &mut out);

        // ---- reserve ----
        const NUM_PHDRS: u32 = 6;
        w.reserve_file_header();
        w.reserve_program_headers(NUM_PHDRS);

        let note_name = w.add_section_name(b".note");
        let rodata_name = w.add_section_name(b".rodata");
        let text_name = w.add_section_name(b".text");
        let note_index = w.reserve_section_index();
        let _dynsym_index = w.reserve_dynsym_section_index();
        let _hash_index = w.reserve_hash_section_index();
        let _dynstr_index = w.reserve_dynstr_section_index();
        let rodata_index = w.reserve_section_index();
        let text_index = w.reserve_section_index();
        let _dynamic_index = w.reserve_dynamic_section_index();
        let _symtab_index = w.reserve_symtab_section_index();
        let _strtab_index = w.reserve_strtab_section_index();
        let _shstrtab_index = w.reserve_shstrtab_section_index();

        // Symbols: per kernel NAME (FUNC in .text) then NAME.kd (OBJECT in .rodata), in both
        // .dynsym and .symtab, all global.
        let mut dyn_ids: Vec<(StringId, StringId)> = Vec::new();
        let mut str_ids: Vec<(StringId, StringId)> = Vec::new();
        for (n, kn) in names.iter().zip(&kd_names) {
            dyn_ids.push((w.add_dynamic_string(n), w.add_dynamic_string(kn)));
            str_ids.push((w.add_string(n), w.add_string(kn)));
        }
        w.reserve_null_dynamic_symbol_index();
        w.reserve_null_symbol_index();
        for _ in &self.kernels {
            w.reserve_dynamic_symbol_index();
            w.reserve_dynamic_symbol_index();
            w.reserve_symbol_index(Some(text_index));
            w.reserve_symbol_index(Some(rodata_index));
        }
        let dynsym_count = w.dynamic_symbol_count();

        let note_off = w.reserve(note.len() as u64, 4);
        let dynsym_off = w.reserve_dynsym();
        let hash_buckets = 1u32.max(self.kernels.len() as u32);
        let hash_off = w.reserve_hash(hash_buckets, dynsym_count);
        let dynstr_off = w
            .reserve_dynstr()
            .map_err(|e| WriteError::Elf(e.to_string()))?;
        let rodata_len = (descriptors.len() * KERNEL_DESCRIPTOR_SIZE) as u64;
        let rodata_off = w.reserve(rodata_len, 64);
        let first_load_end = w.reserved_len();
        let text_off = w.reserve(text.len() as u64, KERNEL_CODE_ALIGN);
        let text_addr = text_off + PAGE;
        const DYNAMIC_ENTRIES: usize = 6;
        let dynamic_off = w.reserve_dynamic(DYNAMIC_ENTRIES);
        let dynamic_len = (DYNAMIC_ENTRIES * 16) as u64;
        let dynamic_addr = dynamic_off + 2 * PAGE;
        w.reserve_symtab();
        w.reserve_strtab()
            .map_err(|e| WriteError::Elf(e.to_string()))?;
        w.reserve_shstrtab()
            .map_err(|e| WriteError::Elf(e.to_string()))?;
        w.reserve_section_headers();

        // Addresses in the first segment equal file offsets.
        let (note_addr, dynsym_addr, hash_addr, dynstr_addr, rodata_addr) =
            (note_off, dynsym_off, hash_off, dynstr_off, rodata_off);
        for (i, kd) in descriptors.iter_mut().enumerate() {
            let kd_addr = rodata_addr + (i * KERNEL_DESCRIPTOR_SIZE) as u64;
            let entry = text_addr + code_offsets[i];
            kd.kernel_code_entry_byte_offset = entry as i64 - kd_addr as i64;
        }

        // ---- write ----
        let to_elf = |e: object::write::Error| WriteError::Elf(e.to_string());
        w.write_file_header(&FileHeader {
            os_abi: elf::OsAbi(ELFOSABI_AMDGPU_HSA),
            abi_version: ELFABIVERSION_AMDGPU_HSA_V5,
            e_type: elf::ET_DYN,
            e_machine: elf::EM_AMDGPU,
            e_entry: 0,
            e_flags: elf::FileFlags(self.target.e_flags()),
        })
        .map_err(to_elf)?;
        let phdr_off = w.write_align_program_headers();
        let phdr_len = NUM_PHDRS as u64 * 56;
        let seg = |p_type, p_flags, off: u64, addr: u64, filesz: u64, memsz: u64, align: u64| {
            ProgramHeader {
                p_type,
                p_flags: elf::ProgramFlags(p_flags),
                p_offset: off,
                p_vaddr: addr,
                p_paddr: addr,
                p_filesz: filesz,
                p_memsz: memsz,
                p_align: align,
            }
        };
        let (r, rx, rw) = (
            elf::PF_R.0,
            elf::PF_R.0 | elf::PF_X.0,
            elf::PF_R.0 | elf::PF_W.0,
        );
        for ph in [
            seg(elf::PT_PHDR, r, phdr_off, phdr_off, phdr_len, phdr_len, 8),
            seg(elf::PT_LOAD, r, 0, 0, first_load_end, first_load_end, PAGE),
            seg(
                elf::PT_LOAD,
                rx,
                text_off,
                text_addr,
                text.len() as u64,
                text.len() as u64,
                PAGE,
            ),
            seg(
                elf::PT_LOAD,
                rw,
                dynamic_off,
                dynamic_addr,
                dynamic_len,
                dynamic_len,
                PAGE,
            ),
            seg(
                elf::PT_DYNAMIC,
                rw,
                dynamic_off,
                dynamic_addr,
                dynamic_len,
                dynamic_len,
                8,
            ),
            seg(
                elf::PT_NOTE,
                r,
                note_off,
                note_addr,
                note.len() as u64,
                note.len() as u64,
                4,
            ),
        ] {
            w.write_program_header(&ph);
        }

        w.pad_until(note_off);
        w.write(&note);

        let global = |ty| elf::SymbolInfo::new(elf::STB_GLOBAL, ty);
        let protected = elf::SymbolOther(0).with_visibility(elf::STV_PROTECTED);
        let kernel_syms = |i: usize, func_name: u32, kd_name: u32| {
            [
                Sym {
                    section: Some(text_index.0),
                    st_name: func_name,
                    st_info: global(elf::STT_FUNC),
                    st_other: protected,
                    st_shndx: elf::SymbolSection::default(),
                    st_value: text_addr + code_offsets[i],
                    st_size: self.kernels[i].code.len() as u64,
                },
                Sym {
                    section: Some(rodata_index.0),
                    st_name: kd_name,
                    st_info: global(elf::STT_OBJECT),
                    st_other: protected,
                    st_shndx: elf::SymbolSection::default(),
                    st_value: rodata_addr + (i * KERNEL_DESCRIPTOR_SIZE) as u64,
                    st_size: KERNEL_DESCRIPTOR_SIZE as u64,
                },
            ]
        };
        w.write_null_dynamic_symbol();
        for (i, (f, kd)) in dyn_ids.iter().enumerate() {
            let (f, kd) = (
                w.dynamic_string_offset(Some(*f)),
                w.dynamic_string_offset(Some(*kd)),
            );
            for s in kernel_syms(i, f, kd) {
                w.write_dynamic_symbol(&s);
            }
        }
        // SysV hash over the dynamic symbols (index 0 is the null symbol, not hashed).
        let hashes: Vec<Option<u32>> = std::iter::once(None)
            .chain(
                names
                    .iter()
                    .zip(&kd_names)
                    .flat_map(|(n, k)| [Some(elf::hash(n)), Some(elf::hash(k))]),
            )
            .collect();
        w.write_hash(hash_buckets, dynsym_count, |i| {
            hashes.get(i as usize).copied().flatten()
        });
        w.write_dynstr();

        w.pad_until(rodata_off);
        for kd in &descriptors {
            w.write(&kd.to_bytes());
        }

        w.pad_until(text_off);
        w.write(&text);

        w.write_align_dynamic();
        let dynstr_len = w.dynstr_len() as u64;
        for (tag, val) in [
            (elf::DT_HASH, hash_addr),
            (elf::DT_SYMTAB, dynsym_addr),
            (elf::DT_SYMENT, 24),
            (elf::DT_STRTAB, dynstr_addr),
            (elf::DT_STRSZ, dynstr_len),
            (elf::DT_NULL, 0),
        ] {
            w.write_dynamic(tag, val).map_err(to_elf)?;
        }

        w.write_null_symbol();
        for (i, (f, kd)) in str_ids.iter().enumerate() {
            let (f, kd) = (w.string_offset(Some(*f)), w.string_offset(Some(*kd)));
            for s in kernel_syms(i, f, kd) {
                w.write_symbol(&s);
            }
        }
        w.write_strtab();
        w.write_shstrtab();

        w.write_null_section_header();
        let header = |name: u32, sh_type, flags: u64, addr, off, size, align| SectionHeader {
            sh_name: name,
            sh_type,
            sh_flags: elf::SectionFlags(flags),
            sh_addr: addr,
            sh_offset: off,
            sh_size: size,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: align,
            sh_entsize: 0,
        };
        let alloc = elf::SHF_ALLOC.0;
        let note_sh = header(
            w.section_name_offset(Some(note_name)),
            elf::SHT_NOTE,
            alloc,
            note_addr,
            note_off,
            note.len() as u64,
            4,
        );
        let idx = w.write_section_header(&note_sh);
        debug_assert_eq!(idx, note_index);
        w.write_dynsym_section_header(dynsym_addr, 1);
        w.write_hash_section_header(hash_addr);
        w.write_dynstr_section_header(dynstr_addr);
        let ro = header(
            w.section_name_offset(Some(rodata_name)),
            elf::SHT_PROGBITS,
            alloc,
            rodata_addr,
            rodata_off,
            rodata_len,
            64,
        );
        w.write_section_header(&ro);
        let tx = header(
            w.section_name_offset(Some(text_name)),
            elf::SHT_PROGBITS,
            alloc | elf::SHF_EXECINSTR.0,
            text_addr,
            text_off,
            text.len() as u64,
            KERNEL_CODE_ALIGN,
        );
        w.write_section_header(&tx);
        w.write_dynamic_section_header(dynamic_addr);
        w.write_symtab_section_header(1);
        w.write_strtab_section_header();
        w.write_shstrtab_section_header();
        drop(w);
        Ok(out)
    }
}
