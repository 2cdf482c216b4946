//! Loads a code object's image into device memory, as the ROCr loader does: every `PT_LOAD`
//! segment at its virtual address inside one allocation (zero-filled beyond the file bytes), and
//! `R_AMDGPU_RELATIVE64` dynamic relocations applied. Kernels then run at `base + code address`,
//! so `s_getpc_b64`-relative accesses to `.rodata` and `.data` reach the loaded bytes.

use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{elf, Endianness, Object, ObjectSection, RelocationFlags, RelocationTarget};

use super::memory::Memory;

/// `R_AMDGPU_RELATIVE64`: `*(base + offset) = base + addend`.
const R_AMDGPU_RELATIVE64: u32 = 13;

/// A code object image in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadedImage {
    /// Device address of virtual address 0.
    pub base: u64,
    /// Bytes spanned by the loadable segments.
    pub size: u64,
}

/// Copies the loadable segments of `elf_bytes` into a new allocation of `mem`.
pub fn load_image(mem: &Memory, elf_bytes: &[u8]) -> Result<LoadedImage, String> {
    let file = ElfFile64::<Endianness>::parse(elf_bytes)
        .map_err(|e| format!("not a loadable ELF64 object: {e}"))?;
    let endian = file.endian();
    let mut span = 0u64;
    let mut loads = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let vaddr: u64 = ph.p_vaddr(endian);
        let memsz: u64 = ph.p_memsz(endian);
        let filesz: u64 = ph.p_filesz(endian);
        if filesz > memsz {
            return Err(format!(
                "PT_LOAD at {vaddr:#x} has more file bytes ({filesz}) than memory bytes ({memsz})"
            ));
        }
        let data = ph.data(endian, elf_bytes).map_err(|_| {
            format!("PT_LOAD at {vaddr:#x} points outside the file (truncated object?)")
        })?;
        span = span.max(
            vaddr
                .checked_add(memsz)
                .ok_or("PT_LOAD address overflows")?,
        );
        loads.push((vaddr, data));
    }
    if loads.is_empty() {
        return Err("the object has no PT_LOAD segments (not linked with ld.lld -shared?)".into());
    }
    if span > 1 << 32 {
        return Err(format!(
            "loadable segments span {span} bytes; refusing images over 4 GiB"
        ));
    }
    let base = mem.alloc(span)?;
    for (vaddr, data) in loads {
        mem.write(base + vaddr, data).map_err(|f| f.to_string())?;
    }
    if let Some(relocs) = file.dynamic_relocations() {
        for (offset, r) in relocs {
            match r.flags() {
                RelocationFlags::Elf { r_type }
                    if r_type == elf::RelocationType(R_AMDGPU_RELATIVE64) =>
                {
                    let v = base.wrapping_add(r.addend() as u64);
                    mem.write(base + offset, &v.to_le_bytes())
                        .map_err(|f| f.to_string())?;
                }
                RelocationFlags::Elf { r_type } => {
                    let sym = match r.target() {
                        RelocationTarget::Symbol(i) => format!(" against symbol #{}", i.0),
                        _ => String::new(),
                    };
                    return Err(format!(
                        "unsupported dynamic relocation type {r_type} at {offset:#x}{sym}"
                    ));
                }
                _ => {}
            }
        }
    }
    // Touch a section accessor so malformed section tables are reported here, not later.
    for s in file.sections() {
        let _ = s.name();
    }
    let _ = file.elf_header().e_type(endian);
    Ok(LoadedImage { base, size: span })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_objects_are_errors() {
        let mem = Memory::new();
        assert!(load_image(&mem, b"not an elf").is_err());
        assert!(load_image(&mem, &[0x7f, b'E', b'L', b'F', 2, 1, 1]).is_err());
    }
}
