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
    run_with_stderr(tool, args, stdin).map(|(stdout, _)| stdout)
}

/// As [`run`], but returns stderr too: clang prints its `-R` remarks (e.g. kernel resource usage)
/// there, and some tests compare against them.
pub fn run_with_stderr(
    tool: &std::path::Path,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Result<(String, String), String> {
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
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A new, empty directory under the temp dir, unique per call and process.
///
/// Tests run in parallel and may build the same source for the same target; a shared output
/// path would race (lld replaces the file while another test reads it: ENOENT flakes).
pub fn scratch_dir(tag: &str) -> Result<PathBuf, String> {
    static DIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kjit-{tag}-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Writes `text` to a file called `name` in a fresh [`scratch_dir`] and returns its path, for
/// tests that generate their OpenCL C or assembly.
pub fn scratch_file(name: &str, text: &str) -> Result<PathBuf, String> {
    let stem = name.split('.').next().unwrap_or(name);
    let path = scratch_dir(stem)?.join(name);
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The clang-19 arguments every oracle build of OpenCL C uses: `-x cl -cl-std=CL2.0 -target
/// amdgcn-amd-amdhsa -mcpu=<target> -nogpulib -O3`. For tests that want another output than an
/// object (e.g. `-S -emit-llvm`); [`compile_opencl`] uses the same list.
pub fn opencl_args(target: &str) -> Vec<String> {
    ["-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("-mcpu={target}"), "-nogpulib".into(), "-O3".into()])
        .collect()
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
    let (obj, _) = compile_opencl_object(clang, src, target, build)?;
    link_code_object(lld, &obj)
}

/// The clang-19 half of [`compile_opencl`]: OpenCL C to a relocatable object, not linked.
/// Returns the object's path and clang's stderr (warnings and any `-R` remarks asked for).
pub fn compile_opencl_object(
    clang: &std::path::Path,
    src: &std::path::Path,
    target: &str,
    build: &OpenClBuild<'_>,
) -> Result<(PathBuf, String), String> {
    let (dir, stem) = out_dir_and_stem(build, src, "opencl")?;
    let obj = dir.join(format!("{stem}-{target}.o"));
    let (src_s, obj_s) = (src.to_string_lossy(), obj.to_string_lossy());
    let common = opencl_args(target);
    let mut args: Vec<&str> = common.iter().map(String::as_str).collect();
    args.extend_from_slice(build.extra_args);
    args.extend_from_slice(&["-c", &src_s, "-o", &obj_s]);
    let (_, stderr) = run_with_stderr(clang, &args, None)
        .map_err(|e| format!("clang-19 {stem} for {target}: {e}"))?;
    Ok((obj, stderr))
}

/// The build's output directory (a fresh [`scratch_dir`] unless given) and `src`'s file stem.
fn out_dir_and_stem<'s>(
    build: &OpenClBuild<'_>,
    src: &'s std::path::Path,
    tag: &str,
) -> Result<(PathBuf, &'s str), String> {
    let dir = match &build.out_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
            d.clone()
        }
        None => scratch_dir(tag)?,
    };
    let stem = src
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{}: no file name", src.display()))?;
    Ok((dir, stem))
}

/// Links relocatable object `obj` with `ld.lld-19 -shared` into a loadable code object next to
/// it (same stem, `.hsaco`), returning its path.
pub fn link_code_object(lld: &std::path::Path, obj: &std::path::Path) -> Result<PathBuf, String> {
    let so = obj.with_extension("hsaco");
    let (obj_s, so_s) = (obj.to_string_lossy(), so.to_string_lossy());
    run(lld, &["-shared", &obj_s, "-o", &so_s], None)
        .map_err(|e| format!("ld.lld-19 {}: {e}", obj.display()))?;
    Ok(so)
}

/// Assembles AMDGPU assembly file `src` with `clang-19 -x assembler -target amdgcn-amd-amdhsa
/// -mcpu=<mcpu>` (`mcpu` may carry features, e.g. `gfx942:xnack-`) and links it like
/// [`compile_opencl`], returning the code object's path.
pub fn assemble_code_object(
    clang: &std::path::Path,
    lld: &std::path::Path,
    src: &std::path::Path,
    mcpu: &str,
    build: &OpenClBuild<'_>,
) -> Result<PathBuf, String> {
    let (dir, stem) = out_dir_and_stem(build, src, "asm")?;
    let obj = dir.join(format!("{stem}-{}.o", mcpu.replace(':', "_")));
    let (src_s, obj_s) = (src.to_string_lossy(), obj.to_string_lossy());
    let cpu = format!("-mcpu={mcpu}");
    let mut args = vec!["-x", "assembler", "-target", "amdgcn-amd-amdhsa", &cpu];
    args.extend_from_slice(build.extra_args);
    args.extend_from_slice(&["-c", &src_s, "-o", &obj_s]);
    run(clang, &args, None).map_err(|e| format!("clang-19 -x assembler {stem} for {mcpu}: {e}"))?;
    link_code_object(lld, &obj)
}
