//! `kjit disasm FILE`: every kernel of an AMDGPU code object (kjit's, clang's, Triton's) with its
//! descriptor summary — registers used and allocated, LDS, scratch, kernarg layout, occupancy
//! per SIMD on the object's target — and its instructions with addresses and encodings in the
//! style of `llvm-objdump -d`.

use std::fmt::Write as _;
use std::path::PathBuf;

use kjit_backend_gcn::codeobj::{CodeObject, CodeSymbol, CodeSymbolKind, FeatureSetting, Kernel};
use kjit_backend_gcn::isa;
use kjit_backend_gcn::Target;

/// Arguments of `kjit disasm`.
#[derive(clap::Args, Debug)]
pub struct DisasmArgs {
    /// The code object (`.hsaco`, a linked ELF).
    pub file: PathBuf,
    /// Only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Print the summaries only, no instructions.
    #[arg(long)]
    pub summary: bool,
    /// Workgroup size for the LDS part of the occupancy estimate (default: the kernel's
    /// `.reqd_workgroup_size`, else its maximum workgroup size).
    #[arg(long)]
    pub workgroup_size: Option<u32>,
}

/// Runs `kjit disasm`.
pub fn run(args: &DisasmArgs) -> anyhow::Result<()> {
    // One line per error: "FILE: what is wrong".
    let bytes =
        std::fs::read(&args.file).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let co =
        CodeObject::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let mut out = String::new();
    render(&co, &args.file.display().to_string(), args, &mut out);
    print!("{out}");
    if let Some(name) = &args.kernel {
        if co.kernel(name).is_none() {
            anyhow::bail!("{}: no kernel named '{name}'", args.file.display());
        }
    }
    Ok(())
}

fn feature(s: FeatureSetting) -> &'static str {
    match s {
        FeatureSetting::Unsupported => "unsupported",
        FeatureSetting::Any => "any",
        FeatureSetting::Off => "off",
        FeatureSetting::On => "on",
    }
}

/// Renders the whole listing into `out`.
pub fn render(co: &CodeObject, file: &str, args: &DisasmArgs, out: &mut String) {
    let _ = writeln!(
        out,
        "{file}: code object v{}, {} (xnack {}, sramecc {}), e_flags {:#x}, {} kernel{}",
        co.version,
        co.target,
        feature(co.xnack),
        feature(co.sramecc),
        co.e_flags,
        co.kernels.len(),
        if co.kernels.len() == 1 { "" } else { "s" }
    );
    let symbols = code_symbols(co);
    for k in &co.kernels {
        if args.kernel.as_deref().is_some_and(|n| n != k.name) {
            continue;
        }
        out.push('\n');
        summary(co.target, k, args.workgroup_size, out);
        if !args.summary {
            out.push('\n');
            listing(co.target, k, &symbols, out);
        }
    }
}

/// The descriptor/metadata summary of one kernel.
pub fn summary(target: Target, k: &Kernel, workgroup_size: Option<u32>, out: &mut String) {
    let kd = &k.descriptor;
    let m = &k.meta;
    let _ = writeln!(
        out,
        "kernel {}: entry {:#x} ({} bytes of code), descriptor {:#x}",
        k.name,
        k.code_address,
        k.code.len(),
        k.descriptor_address
    );
    let accum = match kd.accum_offset(target) {
        Some(a) => format!(", accum_offset {a}"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "  registers: VGPRs {} used / {} allocated; AGPRs {} used / {} allocated{accum}; SGPRs {} used / {} allocated",
        m.vgpr_count,
        kd.vgprs_allocated(target),
        m.agpr_count,
        kd.agprs(target),
        m.sgpr_count,
        kd.sgprs_allocated(target)
    );
    if m.vgpr_spill_count + m.sgpr_spill_count > 0 {
        let _ = writeln!(
            out,
            "  spills: {} VGPRs, {} SGPRs",
            m.vgpr_spill_count, m.sgpr_spill_count
        );
    }
    let _ = writeln!(
        out,
        "  memory: LDS {} B static{}, scratch {} B per work-item{}, kernarg {} B (align {})",
        kd.group_segment_fixed_size,
        if m.args
            .iter()
            .any(|a| a.value_kind == kjit_backend_gcn::codeobj::ValueKind::DynamicSharedPointer)
        {
            " + dynamic"
        } else {
            ""
        },
        kd.private_segment_fixed_size,
        if kd.uses_dynamic_stack() {
            " (dynamic stack)"
        } else {
            ""
        },
        kd.kernarg_size,
        m.kernarg_segment_align
    );
    let wg = workgroup_size
        .or(m.reqd_workgroup_size.map(|d| d[0] * d[1] * d[2]))
        .unwrap_or(m.max_flat_workgroup_size);
    let occ = k.occupancy(target, Some(wg));
    let lds = match occ.by_lds {
        Some(l) => format!(", workgroups/LDS {l} at {wg} work-items"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "  occupancy: {} waves/SIMD on {target} (limited by {:?}: registers {}, SGPRs {}{lds}, slots {})",
        occ.waves_per_simd,
        occ.limited_by,
        occ.by_vgprs,
        occ.by_sgprs,
        target.max_waves_per_simd()
    );
    let sgprs: Vec<String> = kd
        .initial_sgprs(target)
        .iter()
        .map(|(what, first, n)| {
            if *n == 1 {
                format!("s{first} {what}")
            } else {
                format!("s[{first}:{}] {what}", first + n - 1)
            }
        })
        .collect();
    let vgprs = [
        "v0 = work-item id x",
        "v0,v1 = work-item ids x,y",
        "v0,v1,v2 = work-item ids x,y,z",
    ][kd.enable_vgpr_workitem_id().min(2) as usize];
    if kd.kernarg_preload_length() > 0 {
        let _ = writeln!(
            out,
            "  kernarg preload: {} dwords from dword {} into user SGPRs",
            kd.kernarg_preload_length(),
            kd.kernarg_preload_offset()
        );
    }
    let _ = writeln!(
        out,
        "  initial state: {}; {vgprs}",
        if sgprs.is_empty() {
            "no SGPRs".to_string()
        } else {
            sgprs.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "  modes: round f32 {} f16/f64 {}, denorm f32 {} f16/f64 {}, dx10_clamp {}, ieee {}{}",
        kd.float_round_mode_32(),
        kd.float_round_mode_16_64(),
        kd.float_denorm_mode_32(),
        kd.float_denorm_mode_16_64(),
        kd.dx10_clamp() as u8,
        kd.ieee_mode() as u8,
        if kd.tg_split() { ", tg_split" } else { "" }
    );
    let _ = writeln!(
        out,
        "  workgroup: max {} work-items{}, wavefront {}",
        m.max_flat_workgroup_size,
        match m.reqd_workgroup_size {
            Some([x, y, z]) => format!(", required {x}x{y}x{z}"),
            None => String::new(),
        },
        m.wavefront_size
    );
    if !m.args.is_empty() {
        let _ = writeln!(out, "  args:");
        for a in &m.args {
            let mut line = format!("    {:>4} +{:<3} {}", a.offset, a.size, a.value_kind);
            if let Some(n) = &a.name {
                let _ = write!(line, " {n}");
            }
            if let Some(t) = &a.type_name {
                let _ = write!(line, " '{t}'");
            }
            if let Some(s) = &a.address_space {
                let _ = write!(line, " {}", s.as_str());
            }
            if a.is_const {
                line.push_str(" const");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// One decoded instruction: its address, its words and its text.
pub struct Line {
    /// Byte address.
    pub address: u64,
    /// The instruction's 32-bit words.
    pub words: Vec<u32>,
    /// Assembly text (`.long 0x...` for a word that does not decode).
    pub text: String,
    /// For a branch: the byte address it jumps to.
    pub branch_target: Option<u64>,
}

/// Decodes `code` (at `address`) into lines with kjit's instruction layer. A word that does not
/// decode is shown as data (`.long`) with the decoder's reason, and decoding resumes at the next
/// word, as `llvm-objdump` does.
pub fn decode_lines(target: Target, code: &[u8], address: u64) -> Vec<Line> {
    let words: Vec<u32> = code
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut lines = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let at = address + 4 * i as u64;
        match isa::decode(&words[i..], target) {
            Ok((inst, n)) => {
                let n = n.clamp(1, words.len() - i);
                // SOPP branches: offset in dwords from the next instruction.
                let branch_target = inst
                    .operand_infos()
                    .iter()
                    .zip(&inst.operands)
                    .find(|(info, _)| info.kind == isa::Kind::Label)
                    .and_then(|(_, op)| match op {
                        isa::Operand::Imm(off) => Some((at as i64 + 4 * n as i64 + 4 * off) as u64),
                        _ => None,
                    });
                lines.push(Line {
                    address: at,
                    words: words[i..i + n].to_vec(),
                    text: inst.display(target).to_string(),
                    branch_target,
                });
                i += n;
            }
            Err(e) => {
                lines.push(Line {
                    address: at,
                    words: vec![words[i]],
                    text: format!(".long 0x{:08x} ; {e}", words[i]),
                    branch_target: None,
                });
                i += 1;
            }
        }
    }
    lines
}

/// The code section's symbols by address, with every kernel entry among them (a kernel whose
/// entry has no symbol of its own is named by its metadata).
pub fn code_symbols(co: &CodeObject) -> Vec<CodeSymbol> {
    let mut symbols = co.symbols.clone();
    for k in &co.kernels {
        if !symbols.iter().any(|s| s.address == k.code_address) {
            symbols.push(CodeSymbol {
                name: k.name.clone(),
                address: k.code_address,
                kind: CodeSymbolKind::Function,
            });
        }
    }
    symbols.sort_by(|a, b| (a.address, a.kind, &a.name).cmp(&(b.address, b.kind, &b.name)));
    symbols
}

/// The symbol `llvm-objdump -d` names a place after: of those at the greatest address at or
/// below `addr`, a function before an object before a label (the last in `symbols`' order).
fn symbol_at_or_below(symbols: &[CodeSymbol], addr: u64) -> Option<&CodeSymbol> {
    symbols.iter().rev().find(|s| s.address <= addr)
}

/// `<symbol+0xoff>` for an address.
fn symbolize(symbols: &[CodeSymbol], addr: u64) -> Option<String> {
    let s = symbol_at_or_below(symbols, addr)?;
    Some(if addr == s.address {
        format!("<{}>", s.name)
    } else {
        format!("<{}+0x{:x}>", s.name, addr - s.address)
    })
}

/// The kernel's instructions, `llvm-objdump -d` style: a `ADDRESS <name>:` header at the entry
/// and at every label inside the code, then per instruction its text and `// ADDRESS: WORDS`.
/// A branch to a label names the label as its operand; any other branch keeps its offset and
/// gets the target as `<symbol+offset>` after the words.
pub fn listing(target: Target, k: &Kernel, symbols: &[CodeSymbol], out: &mut String) {
    let _ = writeln!(out, "{:016x} <{}>:", k.code_address, k.name);
    for l in decode_lines(target, &k.code, k.code_address) {
        if l.address != k.code_address {
            if let Some(s) = symbols.iter().rev().find(|s| s.address == l.address) {
                let _ = writeln!(out, "\n{:016x} <{}>:", l.address, s.name);
            }
        }
        let label = l.branch_target.and_then(|t| {
            symbols
                .iter()
                .find(|s| s.address == t && s.kind == CodeSymbolKind::Label)
        });
        let text = match (label, l.text.split_once(' ')) {
            (Some(s), Some((mnemonic, _))) => format!("{mnemonic} {}", s.name),
            _ => l.text.clone(),
        };
        let words: Vec<String> = l.words.iter().map(|w| format!("{w:08X}")).collect();
        let mut line = format!("\t{:<59}// {:012X}: {}", text, l.address, words.join(" "));
        if label.is_none() {
            if let Some(sym) = l.branch_target.and_then(|t| symbolize(symbols, t)) {
                line.push(' ');
                line.push_str(&sym);
            }
        }
        let _ = writeln!(out, "{line}");
    }
}
