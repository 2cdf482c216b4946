//! Reading AMDGPU code objects v4/v5 (ours, clang + ld.lld's, Triton's) into kernels.
//!
//! Takes the bytes of a loadable (`ET_DYN`) AMDHSA ELF; gives a [`CodeObject`]: the target (from
//! `e_flags`), and per kernel its descriptor (found through the `NAME.kd` symbol), entry address
//! and machine code, and its argument metadata from the `NT_AMDGPU_METADATA` note. Every offset
//! and size is checked: malformed or truncated input yields a [`CodeObjectError`], never a panic
//! (`tests/codeobj_malformed.rs` corrupts objects at random to hold us to that).

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::LittleEndian as LE;

use super::descriptor::{DescriptorError, KernelDescriptor, Occupancy, KERNEL_DESCRIPTOR_SIZE};
use super::metadata::{arg_layout_error, ArgMeta, KernelMeta, Metadata, MetadataError};
use super::target_id::{FeatureSetting, TargetId};
use super::{ELFABIVERSION_AMDGPU_HSA_V4, ELFOSABI_AMDGPU_HSA, NT_AMDGPU_METADATA};
use crate::target::Target;

/// Why a file is not a code object kjit can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeObjectError {
    /// No ELF magic.
    #[error("not an ELF file (no \\x7fELF magic)")]
    NotElf,
    /// ELF, but not 64-bit little-endian.
    #[error("not a 64-bit little-endian ELF file (AMDGPU code objects are ELF64 LSB)")]
    NotElf64,
    /// The ELF structure is broken or truncated.
    #[error("malformed ELF: {0}")]
    Malformed(String),
    /// Another machine's ELF.
    #[error("ELF machine {0} is not EM_AMDGPU (224)")]
    WrongMachine(u16),
    /// Not for the AMDHSA OS.
    #[error("ELF OS/ABI {0} is not ELFOSABI_AMDGPU_HSA (64)")]
    WrongOsAbi(u8),
    /// Code object v2/v3 or an unknown future version.
    #[error("ELF ABI version {0} is not code object v4 (2), v5 (3) or v6 (4)")]
    UnsupportedVersion(u8),
    /// A relocatable object (`.o`) or executable rather than a loadable shared object.
    #[error("ELF type {0} is not ET_DYN: link relocatable objects with `ld.lld -shared` first")]
    NotLoadable(u16),
    /// A processor kjit does not target.
    #[error("e_flags {e_flags:#x}: processor EF_AMDGPU_MACH {mach:#x} is not one of gfx942, gfx90a, gfx900")]
    UnsupportedTarget {
        /// The `EF_AMDGPU_MACH` value.
        mach: u32,
        /// All of `e_flags`.
        e_flags: u32,
    },
    /// An address the object refers to lies in no loaded segment's file bytes.
    #[error("{what} at address {addr:#x} (+{len} bytes) is not inside any loaded segment")]
    Unmapped {
        /// What was looked up.
        what: String,
        /// Virtual address.
        addr: u64,
        /// Length needed.
        len: u64,
    },
    /// A kernel's descriptor is bad.
    #[error("kernel '{kernel}': {source}")]
    Descriptor {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        source: DescriptorError,
    },
    /// The metadata note is bad.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The metadata names a kernel whose `.kd` symbol is missing.
    #[error("metadata lists kernel '{kernel}' but there is no symbol '{symbol}'")]
    MissingDescriptor {
        /// The kernel.
        kernel: String,
        /// The descriptor symbol it names.
        symbol: String,
    },
    /// The metadata places an argument past the kernarg segment or over another argument (a
    /// runtime would write one argument's bytes over another's).
    #[error("kernel '{kernel}': argument {index} ({kind}) at bytes {offset}..{end} {why} (the kernarg segment is {segment} bytes)")]
    BadArgument {
        /// The kernel.
        kernel: String,
        /// Argument index in the metadata.
        index: usize,
        /// Its `.value_kind`.
        kind: String,
        /// Its offset.
        offset: u32,
        /// Its end (offset + size, saturated).
        end: u32,
        /// The kernel's `.kernarg_segment_size`.
        segment: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// A descriptor's entry offset points outside the executable code.
    #[error("kernel '{kernel}': entry address {addr:#x} is not inside an executable section")]
    EntryOutsideCode {
        /// The kernel.
        kernel: String,
        /// The computed entry address.
        addr: u64,
    },
}

impl From<object::read::Error> for CodeObjectError {
    fn from(e: object::read::Error) -> Self {
        CodeObjectError::Malformed(e.to_string())
    }
}

/// One kernel of a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The kernel's name (the `FUNC` symbol, `.name` in the metadata).
    pub name: String,
    /// Machine code from the entry to the next kernel's entry or function in the code section,
    /// or the section's end. Labels (`STT_NOTYPE` symbols, such as hand-written `L_loop:`) are
    /// places inside it, not ends: see [`CodeObject::symbols`].
    pub code: Vec<u8>,
    /// Virtual address of the first instruction.
    pub code_address: u64,
    /// The kernel descriptor.
    pub descriptor: KernelDescriptor,
    /// Virtual address of the descriptor (the `NAME.kd` symbol).
    pub descriptor_address: u64,
    /// The kernel's metadata; built from the descriptor alone when the object has no note.
    pub meta: KernelMeta,
}

impl Kernel {
    /// The explicit and hidden arguments, in kernarg order.
    pub fn args(&self) -> &[ArgMeta] {
        &self.meta.args
    }

    /// Instructions from the entry to the last `s_endpgm`, by kjit's decoder. Every word of the
    /// code must decode, also the `s_nop 0` padding LLVM puts after a kernel on gfx90a/gfx942
    /// (instruction prefetch); an error names the first word that does not. `Ok(0)` when the
    /// code has no `s_endpgm`.
    pub fn instruction_count(&self, target: Target) -> Result<usize, String> {
        let words: Vec<u32> = self
            .code
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (mut i, mut decoded, mut count) = (0, 0, 0);
        while i < words.len() {
            let (inst, n) = crate::isa::decode(&words[i..], target)
                .map_err(|e| format!("word {i} ({:#010x}) does not decode: {e}", words[i]))?;
            if n == 0 {
                return Err(format!("word {i}: the decoder made no progress"));
            }
            decoded += 1;
            if inst.info().name == "s_endpgm" {
                count = decoded;
            }
            i += n;
        }
        Ok(count)
    }

    /// Waves per SIMD on `target` as LLVM computes it: SGPRs from the metadata's exact count
    /// when there is one, workgroup size `workgroup_size` or else the kernel's
    /// `.max_flat_workgroup_size`.
    pub fn occupancy(&self, target: Target, workgroup_size: Option<u32>) -> Occupancy {
        let sgprs = if self.meta.sgpr_count > 0 {
            self.meta.sgpr_count
        } else {
            self.descriptor.sgprs_allocated(target)
        };
        Occupancy::from_counts(
            target,
            self.descriptor.registers_allocated(target),
            sgprs,
            self.descriptor.group_segment_fixed_size,
            Some(workgroup_size.unwrap_or(self.meta.max_flat_workgroup_size)),
        )
    }
}

/// A parsed code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// The processor.
    pub target: Target,
    /// Raw `e_flags`.
    pub e_flags: u32,
    /// xnack setting from `e_flags`.
    pub xnack: FeatureSetting,
    /// sramecc setting from `e_flags`.
    pub sramecc: FeatureSetting,
    /// Code object version (4, 5 or 6).
    pub version: u32,
    /// Kernels in metadata order (or descriptor address order without metadata).
    pub kernels: Vec<Kernel>,
    /// The full metadata note, if present.
    pub metadata: Option<Metadata>,
    /// Bytes of the section holding the kernels' code (`.text`), for callers that follow calls.
    pub text: Vec<u8>,
    /// Virtual address of `text`.
    pub text_address: u64,
    /// The named symbols of the code section (functions and labels), by address: what
    /// `llvm-objdump -d` prints as `ADDRESS <name>:` headers and branch targets.
    pub symbols: Vec<CodeSymbol>,
}

/// What kind of place a code-section symbol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeSymbolKind {
    /// `STT_NOTYPE`: a label inside a function (hand-written `L_loop:`).
    Label,
    /// `STT_OBJECT` in the code section.
    Object,
    /// `STT_FUNC`: a kernel or another function.
    Function,
}

/// A named place in the code section.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CodeSymbol {
    /// Symbol name.
    pub name: String,
    /// Virtual address.
    pub address: u64,
    /// Function, object or label.
    pub kind: CodeSymbolKind,
}

/// A symbol worth knowing: name, address, size, type.
struct SymInfo {
    name: String,
    value: u64,
    kind: elf::SymbolType,
    section: u16,
}

/// A loaded segment's file bytes at its virtual address.
struct Mapping<'a> {
    vaddr: u64,
    bytes: &'a [u8],
}

fn read_at<'a>(
    maps: &[Mapping<'a>],
    addr: u64,
    len: u64,
    what: &str,
) -> Result<&'a [u8], CodeObjectError> {
    for m in maps {
        if addr >= m.vaddr {
            let start = addr - m.vaddr;
            if let Some(end) = start.checked_add(len) {
                if end <= m.bytes.len() as u64 {
                    return Ok(&m.bytes[start as usize..end as usize]);
                }
            }
        }
    }
    Err(CodeObjectError::Unmapped {
        what: what.to_string(),
        addr,
        len,
    })
}

impl CodeObject {
    /// The processor and feature settings as one value.
    pub fn target_id(&self) -> TargetId {
        TargetId {
            target: self.target,
            xnack: self.xnack,
            sramecc: self.sramecc,
        }
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Parses a loadable AMDGPU code object v4/v5 (v6 with a specific processor also reads).
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
        if bytes.len() < 4 || bytes[..4] != elf::ELFMAG {
            return Err(CodeObjectError::NotElf);
        }
        if bytes.len() < 6 || bytes[4] != elf::ELFCLASS64.0 || bytes[5] != elf::ELFDATA2LSB.0 {
            return Err(CodeObjectError::NotElf64);
        }
        let header = elf::FileHeader64::<LE>::parse(bytes)?;
        let endian = LE;
        let machine = header.e_machine(endian).0;
        if machine != elf::EM_AMDGPU.0 {
            return Err(CodeObjectError::WrongMachine(machine));
        }
        let ident = header.e_ident();
        if ident.os_abi.0 != ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::WrongOsAbi(ident.os_abi.0));
        }
        let abi = ident.abi_version;
        if !(ELFABIVERSION_AMDGPU_HSA_V4..=ELFABIVERSION_AMDGPU_HSA_V4 + 2).contains(&abi) {
            return Err(CodeObjectError::UnsupportedVersion(abi));
        }
        let version = abi as u32 + 2;
        let e_type = header.e_type(endian).0;
        if e_type != elf::ET_DYN.0 {
            return Err(CodeObjectError::NotLoadable(e_type));
        }
        let e_flags = header.e_flags(endian).0;
        let tid = TargetId::from_e_flags(e_flags).ok_or(CodeObjectError::UnsupportedTarget {
            mach: e_flags & super::target_id::EF_AMDGPU_MACH,
            e_flags,
        })?;

        // Loaded bytes by virtual address: PT_LOAD segments; sections as a fallback for objects
        // without program headers.
        let phdrs = header.program_headers(endian, bytes)?;
        let sections = header.sections(endian, bytes)?;
        let mut maps = Vec::new();
        for ph in phdrs {
            if ph.p_type(endian) == elf::PT_LOAD {
                let data = ph.data(endian, bytes).map_err(|_| {
                    CodeObjectError::Malformed("PT_LOAD segment lies outside the file".into())
                })?;
                maps.push(Mapping {
                    vaddr: ph.p_vaddr(endian),
                    bytes: data,
                });
            }
        }
        if maps.is_empty() {
            for sh in sections.iter() {
                if sh.sh_flags(endian).0 & elf::SHF_ALLOC.0 != 0
                    && sh.sh_type(endian) != elf::SHT_NOBITS
                {
                    let data = sh.data(endian, bytes).map_err(|_| {
                        CodeObjectError::Malformed("section lies outside the file".into())
                    })?;
                    maps.push(Mapping {
                        vaddr: sh.sh_addr(endian),
                        bytes: data,
                    });
                }
            }
        }

        // Metadata note: from PT_NOTE segments, else SHT_NOTE sections.
        let mut note_bytes: Option<&[u8]> = None;
        for ph in phdrs {
            if let Some(mut notes) = ph.notes(endian, bytes)? {
                while let Some(n) = notes.next()? {
                    if n.name() == b"AMDGPU" && n.n_type(endian).0 == NT_AMDGPU_METADATA {
                        note_bytes = Some(n.desc());
                    }
                }
            }
        }
        if note_bytes.is_none() {
            for sh in sections.iter() {
                if let Some(mut notes) = sh.notes(endian, bytes)? {
                    while let Some(n) = notes.next()? {
                        if n.name() == b"AMDGPU" && n.n_type(endian).0 == NT_AMDGPU_METADATA {
                            note_bytes = Some(n.desc());
                        }
                    }
                }
            }
        }
        let metadata = note_bytes.map(Metadata::from_msgpack).transpose()?;

        // Symbols: .symtab (has local functions that bound a kernel's code) and .dynsym.
        let mut syms: Vec<SymInfo> = Vec::new();
        for table_type in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
            let table = sections.symbols(endian, bytes, table_type)?;
            for s in table.iter() {
                let name = table.symbol_name(endian, s)?;
                if name.is_empty() {
                    continue;
                }
                let name = String::from_utf8_lossy(name).into_owned();
                let value = s.st_value(endian);
                if syms.iter().any(|o| o.name == name && o.value == value) {
                    continue;
                }
                syms.push(SymInfo {
                    name,
                    value,
                    kind: s.st_type(),
                    section: s.st_shndx(endian).0,
                });
            }
        }

        // Executable sections: where code lives, and where a kernel's code must end.
        let mut exec_ranges: Vec<(u64, u64, usize)> = Vec::new();
        for (i, sh) in sections.enumerate() {
            let flags = sh.sh_flags(endian).0;
            if flags & elf::SHF_EXECINSTR.0 != 0 && sh.sh_type(endian) == elf::SHT_PROGBITS {
                let start = sh.sh_addr(endian);
                let end = start.checked_add(sh.sh_size(endian)).ok_or_else(|| {
                    CodeObjectError::Malformed("executable section wraps the address space".into())
                })?;
                exec_ranges.push((start, end, i.0));
            }
        }
        let (text, text_address) = match exec_ranges.first() {
            Some(&(start, end, _)) => {
                (read_at(&maps, start, end - start, ".text")?.to_vec(), start)
            }
            None => (Vec::new(), 0),
        };

        // Descriptor symbols, in metadata order if there is metadata.
        let kd_syms: Vec<&SymInfo> = {
            let mut v: Vec<&SymInfo> = syms
                .iter()
                .filter(|s| {
                    s.name.ends_with(".kd") && s.name.len() > 3 && s.kind != elf::STT_SECTION
                })
                .collect();
            v.sort_by_key(|s| s.value);
            v
        };
        let mut order: Vec<(String, &SymInfo, Option<&KernelMeta>)> = Vec::new();
        match &metadata {
            Some(md) => {
                for km in &md.kernels {
                    let sym = kd_syms
                        .iter()
                        .find(|s| s.name == km.symbol)
                        .ok_or_else(|| CodeObjectError::MissingDescriptor {
                            kernel: km.name.clone(),
                            symbol: km.symbol.clone(),
                        })?;
                    order.push((km.name.clone(), sym, Some(km)));
                }
            }
            None => {
                for s in &kd_syms {
                    order.push((s.name[..s.name.len() - 3].to_string(), s, None));
                }
            }
        }

        // Descriptors and entries first: every kernel's entry bounds the code before it.
        let mut found = Vec::with_capacity(order.len());
        for (name, kd_sym, km) in order {
            let raw = read_at(
                &maps,
                kd_sym.value,
                KERNEL_DESCRIPTOR_SIZE as u64,
                &format!("kernel descriptor '{}'", kd_sym.name),
            )?;
            let descriptor = KernelDescriptor::from_bytes(raw).map_err(|source| {
                CodeObjectError::Descriptor {
                    kernel: name.clone(),
                    source,
                }
            })?;
            let entry = kd_sym
                .value
                .checked_add_signed(descriptor.kernel_code_entry_byte_offset)
                .ok_or_else(|| CodeObjectError::EntryOutsideCode {
                    kernel: name.clone(),
                    addr: kd_sym.value,
                })?;
            found.push((name, kd_sym, km, descriptor, entry));
        }
        let entries: Vec<u64> = found.iter().map(|f| f.4).collect();

        let mut kernels = Vec::with_capacity(found.len());
        for (name, kd_sym, km, descriptor, entry) in found {
            let &(_, sec_end, sec_index) = exec_ranges
                .iter()
                .find(|(s, e, _)| entry >= *s && entry < *e)
                .ok_or_else(|| CodeObjectError::EntryOutsideCode {
                    kernel: name.clone(),
                    addr: entry,
                })?;
            // The code ends at the next kernel entry or function (or object) in the same
            // section; labels (`STT_NOTYPE`) are places inside it.
            let end = syms
                .iter()
                .filter(|s| s.section as usize == sec_index)
                .filter(|s| s.kind == elf::STT_FUNC || s.kind == elf::STT_OBJECT)
                .map(|s| s.value)
                .chain(entries.iter().copied())
                .filter(|&a| a > entry && a < sec_end)
                .min()
                .unwrap_or(sec_end);
            let code = read_at(
                &maps,
                entry,
                end - entry,
                &format!("code of kernel '{name}'"),
            )?
            .to_vec();
            let meta = match km {
                Some(m) => m.clone(),
                None => meta_from_descriptor(&name, &descriptor),
            };
            if let Some((index, why)) = arg_layout_error(&meta.args, meta.kernarg_segment_size) {
                let a = &meta.args[index];
                return Err(CodeObjectError::BadArgument {
                    kernel: name,
                    index,
                    kind: a.value_kind.as_str().to_string(),
                    offset: a.offset,
                    end: a.offset.saturating_add(a.size),
                    segment: meta.kernarg_segment_size,
                    why,
                });
            }
            kernels.push(Kernel {
                name,
                code,
                code_address: entry,
                descriptor,
                descriptor_address: kd_sym.value,
                meta,
            });
        }

        let mut symbols: Vec<CodeSymbol> = syms
            .iter()
            .filter(|s| exec_ranges.iter().any(|r| r.2 == s.section as usize))
            .filter_map(|s| {
                let kind = match s.kind {
                    elf::STT_NOTYPE => CodeSymbolKind::Label,
                    elf::STT_OBJECT => CodeSymbolKind::Object,
                    elf::STT_FUNC => CodeSymbolKind::Function,
                    _ => return None,
                };
                Some(CodeSymbol {
                    name: s.name.clone(),
                    address: s.value,
                    kind,
                })
            })
            .collect();
        symbols.sort_by(|a, b| (a.address, a.kind, &a.name).cmp(&(b.address, b.kind, &b.name)));

        Ok(CodeObject {
            target: tid.target,
            e_flags,
            xnack: tid.xnack,
            sramecc: tid.sramecc,
            version,
            kernels,
            metadata,
            text,
            text_address,
            symbols,
        })
    }
}

/// What can be said about a kernel without a metadata note: sizes from its descriptor, no args,
/// and gfx9's workgroup limit (1024) as its largest workgroup, since nothing states a smaller one.
fn meta_from_descriptor(name: &str, kd: &KernelDescriptor) -> KernelMeta {
    let mut m = KernelMeta::new(name);
    m.max_flat_workgroup_size = 1024;
    m.kernarg_segment_size = kd.kernarg_size;
    m.group_segment_fixed_size = kd.group_segment_fixed_size;
    m.private_segment_fixed_size = kd.private_segment_fixed_size;
    m.uses_dynamic_stack = kd.uses_dynamic_stack();
    m
}
