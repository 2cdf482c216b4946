//! Finding LLVM 19's AMDGPU tools, the independent oracle for kjit's tests.
//!
//! Tests call [`require`] to get a tool. When the tool is absent the test should skip with the printed
//! reason; but when `KJIT_REQUIRE_LLVM=1` (CI sets it) an absent tool is a failure, so a skipped oracle is
//! never silently green.

use std::path::PathBuf;
use std::process::Command;

/// The LLVM 19 tools kjit checks itself against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `llvm-mc-19`: assembler and disassembler.
    Mc,
    /// `llvm-objdump-19`.
    Objdump,
    /// `llvm-readelf-19`.
    Readelf,
    /// `clang-19`: OpenCL C and assembly to relocatable objects.
    Clang,
    /// `ld.lld-19`: links relocatable objects into loadable code objects.
    Lld,
}

impl Tool {
    /// The command name as Debian's `llvm-19`/`clang-19`/`lld-19` packages install it.
    pub fn command_name(self) -> &'static str {
        match self {
            Tool::Mc => "llvm-mc-19",
            Tool::Objdump => "llvm-objdump-19",
            Tool::Readelf => "llvm-readelf-19",
            Tool::Clang => "clang-19",
            Tool::Lld => "ld.lld-19",
        }
    }
}

/// Whether the environment demands the oracle (`KJIT_REQUIRE_LLVM=1`).
pub fn llvm_required() -> bool {
    std::env::var("KJIT_REQUIRE_LLVM")
        .map(|v| v == "1")
        .unwrap_or(false)
}

/// Locates `tool` on `PATH` (or in `/usr/lib/llvm-19/bin`).
pub fn find(tool: Tool) -> Option<PathBuf> {
    let name = tool.command_name();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.push(PathBuf::from("/usr/lib/llvm-19/bin"));
    for dir in dirs {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    None
}

/// Returns the tool's path, or `None` after printing why the calling test skips.
///
/// Panics (failing the test) when the tool is missing and `KJIT_REQUIRE_LLVM=1`.
pub fn require(tool: Tool, test: &str) -> Option<PathBuf> {
    match find(tool) {
        Some(p) => Some(p),
        None if llvm_required() => panic!(
            "{test}: {} not found and KJIT_REQUIRE_LLVM=1 (install Debian's llvm-19 clang-19 lld-19)",
            tool.command_name()
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: {} not found (install llvm-19 clang-19 lld-19; set KJIT_REQUIRE_LLVM=1 to make this a failure)",
                tool.command_name()
            );
            None
        }
    }
}

/// Returns every tool in `tools`, or `None` (after printing the reason) if any is missing.
pub fn require_all(tools: &[Tool], test: &str) -> Option<Vec<PathBuf>> {
    tools.iter().map(|&t| require(t, test)).collect()
}

/// Runs a tool with arguments and standard input, returning stdout, or an error with stderr.
pub fn run(tool: &std::path::Path, args: &[&str], stdin: Option<&[u8]>) -> Result<String, String> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", tool.display()))?;
    {
        let mut input = child.stdin.take().expect("stdin was piped");
        if let Some(bytes) = stdin {
            input
                .write_all(bytes)
                .map_err(|e| format!("writing to {}: {e}", tool.display()))?;
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for {}: {e}", tool.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {:?} failed ({}): {}",
            tool.display(),
            args,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How [`compile_opencl`] calls clang-19.
#[derive(Clone, Debug, Default)]
pub struct OpenClBuild<'a> {
    /// Extra clang arguments (`-I..`, `-D..`, `-cl-fp32-correctly-rounded-divide-sqrt`, ...).
    pub extra_args: &'a [&'a str],
    /// Directory for the `.o` and `.hsaco` (default: a fresh directory per call under the temp dir).
    pub out_dir: Option<PathBuf>,
}

/// Compiles OpenCL C file `src` for `target` with `clang-19 -x cl -cl-std=CL2.0 -target
/// amdgcn-amd-amdhsa -mcpu=<target> -nogpulib -O3` and links it with `ld.lld-19 -shared` into a
/// loadable code object, returning its path. `clang`/`lld` come from [`require_all`].
pub fn compile_opencl(
    clang: &std::path::Path,
    lld: &std::path::Path,
    src: &std::path::Path,
    target: &str,
    build: &OpenClBuild<'_>,
) -> Result<PathBuf, String> {
    // Without a directory, one per call: tests run in parallel and may build the same source,
    // and a shared output path would race (lld replaces the file while another test reads it).
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = build.out_dir.clone().unwrap_or_else(|| {
        let k = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::env::temp_dir().join(format!("kjit-opencl-{}-{k}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let stem = src
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{}: no file name", src.display()))?;
    let obj = dir.join(format!("{stem}-{target}.o"));
    let so = dir.join(format!("{stem}-{target}.hsaco"));
    let cpu = format!("-mcpu={target}");
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let (src_s, obj_s, so_s) = (path(src), path(&obj), path(&so));
    let mut args = vec![
        "-x",
        "cl",
        "-cl-std=CL2.0",
        "-target",
        "amdgcn-amd-amdhsa",
        &cpu,
        "-nogpulib",
        "-O3",
    ];
    args.extend_from_slice(build.extra_args);
    args.extend_from_slice(&["-c", &src_s, "-o", &obj_s]);
    run(clang, &args, None).map_err(|e| format!("clang-19 {stem} for {target}: {e}"))?;
    run(lld, &["-shared", &obj_s, "-o", &so_s], None)
        .map_err(|e| format!("ld.lld-19 {stem} for {target}: {e}"))?;
    Ok(so)
}
