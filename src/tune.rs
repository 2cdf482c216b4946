//! The autotuner: compiles a kernel at every occupancy level of the target (and, where the
//! kernel declares tuning parameters, every choice of them), runs each candidate on kjit's
//! software GCN device with a timing model ([`tune`]) or on a device that times its own
//! launches, a GPU through HIP events ([`tune_on`], best of [`TuneOptions::runs`] launches),
//! rejects candidates whose output does not match the reference, and ranks the rest by
//! cycles (model) or microseconds (GPU).
//!
//! Takes a [`Job`] (any builder kernel: how to build it and make its inputs for one choice of
//! parameters, and how to check its outputs; [`Job::from_library`] makes one for a library
//! kernel) and [`TuneOptions`]; gives a [`TuneResult`] with every [`Candidate`] and the best.
//! [`cache`] keeps winners on disk; [`plot_svg`] draws cycles against occupancy.
//!
//! # Search strategy
//! The space is every parameter choice times every occupancy level (1 ..= the target's wave
//! slots) plus the default compile (no budget). When that product is at most
//! [`TuneOptions::exhaustive_limit`] it is searched exhaustively. Otherwise in two stages:
//! first the parameter choices at the default compile (all of them when they are at most the
//! limit, else one parameter at a time from the defaults, keeping each best value: coordinate
//! descent), then every occupancy level for the best choice.
//!
//! Candidates whose code object and launch equal an earlier candidate's are not run again:
//! they take its measurement (most kernels compile to the same code at several levels).

use std::hash::Hasher;
use std::time::Instant;

use anyhow::{anyhow, Result};
use kjit_backend_gcn::compile::{
    compile_selected, select_kernel, CompileError, CompileOptions, CompiledKernel, Selected,
};
use kjit_backend_gcn::Target;
use kjit_ir::interp::Arg;
use kjit_ir::Function;
use kjit_kernels::{Case, KernelSpec};
use kjit_runtime::emu::gcn::GcnEmulator;
use kjit_runtime::emu::RunConfig;
use kjit_runtime::Device;
use serde::{Deserialize, Serialize};

use crate::exec::{run_case_repeated, RunOutput};

/// What to search besides the occupancy levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Space {
    /// Occupancy levels only, the kernel's parameters at their defaults.
    Occupancy,
    /// Occupancy levels times the kernel's declared parameters.
    All,
}

/// How to tune.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Target to compile for.
    pub target: Target,
    /// Name of the timing model (recorded with the result and in the cache key).
    pub model: String,
    /// What to search.
    pub space: Space,
    /// Run the e-graph optimizer.
    pub optimize: bool,
    /// Largest space searched exhaustively.
    pub exhaustive_limit: usize,
    /// Launches per candidate on a device that times its launches ([`tune_on`]); the fastest
    /// counts. The timing model is deterministic and runs each candidate once.
    pub runs: u32,
}

impl TuneOptions {
    /// Occupancy levels only, optimized, exhaustive up to 96 candidates, the target's model.
    pub fn new(target: Target) -> TuneOptions {
        TuneOptions {
            target,
            model: default_model(target).to_string(),
            space: Space::Occupancy,
            optimize: true,
            exhaustive_limit: 96,
            runs: 5,
        }
    }
}

/// The timing model used for a target when none is named (the first listed for it).
pub fn default_model(target: Target) -> &'static str {
    kjit_backend_gcn::machine::default_machine(target).name
}

/// Builds a kernel for one choice of parameters.
pub type BuildFn<'a> = Box<dyn Fn(&[u32]) -> Result<Function, String> + 'a>;
/// Makes the inputs and launch shape for one choice of parameters.
pub type CaseFn<'a> = Box<dyn Fn(&[u32]) -> Case + 'a>;
/// Checks a run's arguments (after the run) against the reference.
pub type CheckFn<'a> = Box<dyn Fn(&Case, &[Arg]) -> Result<(), String> + 'a>;

/// A kernel to tune.
pub struct Job<'a> {
    /// Kernel name.
    pub name: String,
    /// Problem size (for the report and the cache's size bucket).
    pub n: usize,
    /// Tuning parameters: name and values, the default first (empty: occupancy only).
    pub params: Vec<(String, Vec<u32>)>,
    /// Builds the kernel.
    pub build: BuildFn<'a>,
    /// Makes its inputs.
    pub case: CaseFn<'a>,
    /// Checks its outputs.
    pub check: CheckFn<'a>,
}

impl Job<'static> {
    /// A job for a library kernel at size `n` (inputs from `seed`).
    pub fn from_library(spec: &'static KernelSpec, n: usize, seed: u64) -> Job<'static> {
        let params = spec
            .tuning
            .map(|t| {
                t.params
                    .iter()
                    .map(|p| (p.name.to_string(), p.values.to_vec()))
                    .collect()
            })
            .unwrap_or_default();
        Job {
            name: spec.name.to_string(),
            n,
            params,
            build: Box::new(move |p| spec.build_with(p).map_err(|e| e.to_string())),
            case: Box::new(move |p| spec.case_with(p, n, seed)),
            check: Box::new(move |c, args| {
                let want = (spec.reference)(c);
                kjit_kernels::check(c, args, &want, spec.tolerance).map_err(|m| m.to_string())
            }),
        }
    }
}

impl Job<'static> {
    /// A job for a kernel `kjit::kernel_files::resolve_kernel` found: a library kernel with its
    /// declared parameters, or an IR file's kernel (occupancy only, checked against the IR
    /// interpreter).
    pub fn from_resolved(
        kernel: crate::kernel_files::ResolvedKernel,
        n: usize,
        seed: u64,
    ) -> Job<'static> {
        if let Some(spec) = kernel.spec {
            return Job::from_library(spec, n, seed);
        }
        let kernel = std::sync::Arc::new(kernel);
        let (k1, k2, k3) = (kernel.clone(), kernel.clone(), kernel);
        Job {
            name: k1.name().to_string(),
            n,
            params: Vec::new(),
            build: Box::new(move |_| Ok(k1.func.clone())),
            case: Box::new(move |_| k2.case(n, seed)),
            check: Box::new(move |c, args| {
                let want = k3.reference(c)?;
                kjit_kernels::check(c, args, &want, k3.tolerance()).map_err(|m| m.to_string())
            }),
        }
    }
}

impl Job<'_> {
    /// The default parameter values.
    pub fn defaults(&self) -> Vec<u32> {
        self.params.iter().map(|(_, v)| v[0]).collect()
    }

    /// Hash of the kernel's IR at the default parameters (the cache key's kernel part).
    pub fn ir_hash(&self) -> Result<u64> {
        let f =
            (self.build)(&self.defaults()).map_err(|e| anyhow!("building {}: {e}", self.name))?;
        let mut h = rustc_hash::FxHasher::default();
        h.write(f.to_string().as_bytes());
        Ok(h.finish())
    }
}

/// One compiled and measured candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Parameter values by name.
    pub params: Vec<(String, u32)>,
    /// Occupancy asked for (`None`: the default compile, no budget).
    pub occupancy: Option<u32>,
    /// The VGPR(+AGPR) budget that occupancy gives.
    pub vgpr_budget: Option<u32>,
    /// VGPRs, AGPRs, SGPRs of the compiled kernel.
    pub vgprs: u32,
    /// AGPRs.
    pub agprs: u32,
    /// SGPRs (with VCC/FLAT_SCRATCH/XNACK_MASK).
    pub sgprs: u32,
    /// Values spilled, total.
    pub spills: u32,
    /// Spilled to spare VGPRs.
    pub spills_vgpr: u32,
    /// Spilled to AGPRs.
    pub spills_agpr: u32,
    /// Spilled to scratch.
    pub spills_scratch: u32,
    /// Waves per SIMD the compiled kernel reaches.
    pub reached_occupancy: u32,
    /// Cycles of the run on the timing model (`None` when it did not compile or run, and on
    /// a GPU, which gives µs).
    pub cycles: Option<u64>,
    /// Microseconds: at the model's clock, or on a GPU the fastest of `runs_us`.
    pub us: Option<f64>,
    /// On a GPU, every launch's time in µs (HIP events); empty on the timing model.
    #[serde(default)]
    pub runs_us: Vec<f64>,
    /// Device-memory bytes moved per second, GB/s.
    pub gbps: Option<f64>,
    /// Floating-point operations per second, GFLOP/s (`None` when the kernel does none).
    #[serde(default)]
    pub gflops: Option<f64>,
    /// Default compile's time (cycles, or µs on a GPU) over this one's.
    pub speedup: Option<f64>,
    /// Output matched the reference.
    pub correct: bool,
    /// Why it was rejected, or which earlier candidate had the same code.
    pub note: Option<String>,
    /// Compile time, ms.
    pub compile_ms: f64,
}

/// The outcome of tuning one kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneResult {
    /// Kernel name.
    pub kernel: String,
    /// Target.
    pub target: String,
    /// Timing model name, or on a GPU the device's name.
    pub model: String,
    /// Where the cycles (or on a GPU the µs) come from.
    pub cycle_source: String,
    /// Problem size.
    pub n: usize,
    /// Search strategy used.
    pub strategy: String,
    /// Every candidate, in search order; the default compile first.
    pub candidates: Vec<Candidate>,
    /// Index of the fastest correct candidate.
    pub best: Option<usize>,
    /// Time compiling, ms (all candidates).
    pub compile_ms: f64,
    /// Time running the candidates on the device (model or GPU, with copies), ms.
    pub run_ms: f64,
    /// Time computing references and comparing, ms.
    pub check_ms: f64,
    /// Answered from the cache (not stored; set when loaded).
    #[serde(skip)]
    pub from_cache: bool,
}

impl TuneResult {
    /// The best candidate.
    pub fn best(&self) -> Option<&Candidate> {
        self.best.map(|i| &self.candidates[i])
    }

    /// The JSON report: `candidates` and `best` plus the run's facts.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        v["best"] = serde_json::to_value(self.best()).unwrap_or_default();
        v["best_index"] = serde_json::to_value(self.best).unwrap_or_default();
        v["from_cache"] = self.from_cache.into();
        v
    }
}

/// What times the candidates.
#[derive(Clone, Copy, Debug)]
enum Timer {
    /// The timing model of the software device (`LaunchStats::timing`): cycles.
    Model,
    /// The device's own clock (`LaunchStats::device_time_ns`: HIP events on a GPU), the
    /// fastest of `runs` launches.
    Device { runs: u32 },
}

/// A run's cycles and seconds. This is the one place the tuner's times come from.
struct Measure {
    /// Cycles on the timing model (`None` on a GPU).
    cycles: Option<u64>,
    /// Microseconds: the model's, or the fastest of a GPU's launches.
    us: f64,
    /// FLOP/s, when the model counted floating-point work.
    flops_per_second: Option<f64>,
    /// Every timed launch, µs (a GPU's runs; empty on the model).
    runs_us: Vec<f64>,
}

impl Timer {
    /// Launches per candidate.
    fn runs(self) -> u32 {
        match self {
            Timer::Model => 1,
            Timer::Device { runs } => runs.max(1),
        }
    }

    /// Description of [`Timer::measure`]'s source, stored with every result.
    fn source(self, model: &str) -> String {
        match self {
            Timer::Model => {
                format!("timing model {model} on kjit's software GCN device (LaunchStats::timing)")
            }
            Timer::Device { runs } => format!(
                "{model}: device time of each launch (HIP events), fastest of {} runs; µs, no cycles",
                runs.max(1)
            ),
        }
    }

    /// The time of one candidate's runs, or why there is none.
    fn measure(self, out: &RunOutput) -> Result<Measure, String> {
        match self {
            Timer::Model => {
                let t = out
                    .stats
                    .timing
                    .as_ref()
                    .ok_or("the device ran without the timing model")?;
                Ok(Measure {
                    cycles: Some(t.cycles),
                    us: t.seconds * 1e6,
                    flops_per_second: (t.flops > 0 && t.seconds > 0.0)
                        .then(|| t.flops as f64 / t.seconds),
                    runs_us: Vec::new(),
                })
            }
            Timer::Device { .. } => {
                let best = out.device_times_ns.iter().min().ok_or(
                    "the device does not time its launches (LaunchStats::device_time_ns); \
                     tune on the software device's timing model instead",
                )?;
                Ok(Measure {
                    cycles: None,
                    us: *best as f64 / 1e3,
                    flops_per_second: None,
                    runs_us: out
                        .device_times_ns
                        .iter()
                        .map(|&t| t as f64 / 1e3)
                        .collect(),
                })
            }
        }
    }
}

/// The candidates to try: (parameter values, occupancy).
type Point = (Vec<u32>, Option<u32>);

fn product(params: &[(String, Vec<u32>)]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    for (_, vals) in params {
        out = out
            .iter()
            .flat_map(|p| {
                vals.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    out
}

/// Tunes `job` on kjit's software device with the timing model `opts.model`;
/// `progress(done, total)` is called after every candidate.
pub fn tune(
    job: &Job<'_>,
    opts: &TuneOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TuneResult> {
    let machine =
        kjit_backend_gcn::machine::machine_by_name(&opts.model).map_err(|e| anyhow!("{e}"))?;
    if machine.target != opts.target {
        return Err(anyhow!(
            "timing model {} is a {}, not a {}",
            machine.name,
            machine.target,
            opts.target
        ));
    }
    let dev = GcnEmulator::with_config(RunConfig {
        timing: Some(machine),
        ..RunConfig::default()
    });
    search(job, opts, &dev, Timer::Model, &opts.model, progress)
}

/// Tunes `job` on `dev`, a device that times its own launches (a GPU: HIP events), each
/// candidate launched `opts.runs` times and the fastest kept; `opts.model` is not used, the
/// result names the device. The device must be a `opts.target`.
pub fn tune_on(
    job: &Job<'_>,
    opts: &TuneOptions,
    dev: &dyn Device,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TuneResult> {
    if dev.target() != Some(opts.target) {
        return Err(anyhow!(
            "{} is {}, not the target {}",
            dev.name(),
            dev.target()
                .map_or("not a GPU".to_string(), |t| format!("a {t}")),
            opts.target
        ));
    }
    if opts.runs == 0 {
        return Err(anyhow!("runs must be at least 1"));
    }
    let timer = Timer::Device { runs: opts.runs };
    search(job, opts, dev, timer, &dev.name(), progress)
}

/// The search of [`tune`] and [`tune_on`]: `model` names the timing model or the device.
fn search(
    job: &Job<'_>,
    opts: &TuneOptions,
    dev: &dyn Device,
    timer: Timer,
    model: &str,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TuneResult> {
    let levels: Vec<Option<u32>> = std::iter::once(None)
        .chain((1..=opts.target.max_waves_per_simd()).map(Some))
        .collect();
    let defaults = job.defaults();
    let params = if opts.space == Space::All {
        job.params.clone()
    } else {
        Vec::new()
    };
    let configs = if params.is_empty() {
        vec![defaults.clone()]
    } else {
        product(&params)
    };
    let mut t = Tuner {
        job,
        opts,
        dev,
        timer,
        result: TuneResult {
            kernel: job.name.clone(),
            target: opts.target.to_string(),
            model: model.to_string(),
            cycle_source: timer.source(model),
            n: job.n,
            strategy: String::new(),
            candidates: Vec::new(),
            best: None,
            compile_ms: 0.0,
            run_ms: 0.0,
            check_ms: 0.0,
            from_cache: false,
        },
        seen: Vec::new(),
        choices: Vec::new(),
        kernels: Vec::new(),
        compiled: Vec::new(),
    };
    let total = configs.len() * levels.len();
    if total <= opts.exhaustive_limit {
        t.result.strategy = format!("exhaustive ({total} candidates)");
        let pts: Vec<Point> = configs
            .iter()
            .flat_map(|c| levels.iter().map(move |&l| (c.clone(), l)))
            .collect();
        for (i, p) in pts.iter().enumerate() {
            t.run(p)?;
            progress(i + 1, pts.len());
        }
    } else {
        // Stage 1: the parameters at the default compile.
        let stage1: Vec<Vec<u32>> = if configs.len() <= opts.exhaustive_limit {
            t.result.strategy = format!(
                "staged: {} parameter choices at the default compile, then {} occupancy levels of the best",
                configs.len(),
                levels.len() - 1
            );
            configs.clone()
        } else {
            t.result.strategy = "staged: coordinate descent over the parameters at the default compile, then the occupancy levels of the best".into();
            Vec::new()
        };
        let expected = stage1.len().max(params.len()) + levels.len();
        let mut done = 0;
        let mut best_cfg = defaults.clone();
        if !stage1.is_empty() {
            for c in &stage1 {
                t.run(&(c.clone(), None))?;
                done += 1;
                progress(done, expected);
            }
            best_cfg = t.best_config().unwrap_or(defaults.clone());
        } else {
            for (k, (_, vals)) in params.iter().enumerate() {
                for &v in vals {
                    let mut c = best_cfg.clone();
                    c[k] = v;
                    t.run(&(c, None))?;
                }
                best_cfg = t.best_config().unwrap_or(best_cfg);
                done += 1;
                progress(done, expected);
            }
        }
        for &l in &levels[1..] {
            t.run(&(best_cfg.clone(), l))?;
            done += 1;
            progress(done, expected);
        }
    }
    t.finish();
    Ok(t.result)
}

/// A distinct kernel's index in `Tuner::kernels` and an occupancy level.
type LevelKey = (usize, Option<u32>);

struct Tuner<'j, 'a> {
    job: &'j Job<'a>,
    opts: &'j TuneOptions,
    dev: &'j dyn Device,
    timer: Timer,
    result: TuneResult,
    /// (parameter values, code object) of every candidate run, by candidate index.
    seen: Vec<(Vec<u32>, Vec<u8>)>,
    /// Per parameter choice: the index of its kernel in `kernels`.
    choices: Vec<(Vec<u32>, usize)>,
    /// Every distinct kernel the parameter choices built, with its selected and scheduled
    /// machine code (shared by all occupancy levels; only allocation and what follows runs per
    /// level). Choices that change only the launch shape (a `block` the code does not depend
    /// on) build the same kernel and share its entry.
    kernels: Vec<(Function, Selected)>,
    /// (kernel index, occupancy) → its compile, so a choice that shares a kernel also shares
    /// every level's code.
    compiled: Vec<(LevelKey, Result<CompiledKernel, CompileError>)>,
}

impl Tuner<'_, '_> {
    /// Parameter values of the fastest correct candidate so far.
    fn best_config(&self) -> Option<Vec<u32>> {
        let i = best_index(&self.result.candidates)?;
        Some(
            self.result.candidates[i]
                .params
                .iter()
                .map(|p| p.1)
                .collect(),
        )
    }

    fn run(&mut self, (cfg, occ): &Point) -> Result<()> {
        let job = self.job;
        let named: Vec<(String, u32)> = job
            .params
            .iter()
            .zip(cfg)
            .map(|((n, _), &v)| (n.clone(), v))
            .collect();
        let cfg_arg: &[u32] = if job.params.is_empty() { &[] } else { cfg };
        let budget = occ
            .map(|w| kjit_backend_gcn::compile::occupancy_budgets(self.opts.target, w))
            .transpose()?
            .map(|b| b.vgprs);
        let mut cand = Candidate {
            params: named,
            occupancy: *occ,
            vgpr_budget: budget,
            vgprs: 0,
            agprs: 0,
            sgprs: 0,
            spills: 0,
            spills_vgpr: 0,
            spills_agpr: 0,
            spills_scratch: 0,
            reached_occupancy: 0,
            cycles: None,
            us: None,
            runs_us: Vec::new(),
            gbps: None,
            gflops: None,
            speedup: None,
            correct: false,
            note: None,
            compile_ms: 0.0,
        };
        let copts = CompileOptions {
            optimize: self.opts.optimize,
            occupancy: *occ,
            ..CompileOptions::default()
        };
        let t0 = Instant::now();
        let at = match self.choices.iter().find(|c| c.0 == *cfg) {
            Some(c) => c.1,
            None => {
                // A point the kernel refuses (e.g. tiles whose LDS does not fit) is a
                // candidate with a note, not the end of the search.
                let func = match (job.build)(cfg_arg) {
                    Ok(f) => f,
                    Err(e) => {
                        cand.note = Some(format!("build error: {e}"));
                        self.push(cand, cfg, Vec::new());
                        return Ok(());
                    }
                };
                let at = match self.kernels.iter().position(|k| k.0 == func) {
                    Some(i) => i,
                    None => {
                        let sel = select_kernel(&func, self.opts.target, &copts)
                            .map_err(|e| anyhow!("compiling {}: {e}", job.name))?;
                        self.kernels.push((func, sel));
                        self.kernels.len() - 1
                    }
                };
                self.choices.push((cfg.clone(), at));
                at
            }
        };
        let compiled = match self.compiled.iter().find(|c| c.0 == (at, *occ)) {
            Some(c) => c.1.clone(),
            None => {
                let c = compile_selected(&self.kernels[at].1, &copts);
                self.compiled.push(((at, *occ), c.clone()));
                c
            }
        };
        cand.compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.result.compile_ms += cand.compile_ms;
        let k = match compiled {
            Ok(k) => k,
            Err(e @ CompileError::OccupancyUnreachable { .. }) => {
                cand.note = Some(format!("unreachable: {e}"));
                self.push(cand, cfg, Vec::new());
                return Ok(());
            }
            Err(e) => {
                cand.note = Some(format!("compile error: {e}"));
                self.push(cand, cfg, Vec::new());
                return Ok(());
            }
        };
        let h = &k.header;
        cand.vgprs = h.vgprs;
        cand.agprs = h.agprs;
        cand.sgprs = h.sgprs;
        cand.spills = h.spills;
        cand.spills_vgpr = h.spills_vgpr;
        cand.spills_agpr = h.spills_agpr;
        cand.spills_scratch = h.spills_scratch;
        cand.reached_occupancy = h.occupancy;
        if let Some(i) = self
            .seen
            .iter()
            .position(|(c, code)| c == cfg && *code == k.code_object)
        {
            let same = &self.result.candidates[i];
            cand.cycles = same.cycles;
            cand.us = same.us;
            cand.runs_us = same.runs_us.clone();
            cand.gbps = same.gbps;
            cand.gflops = same.gflops;
            cand.correct = same.correct;
            cand.note = Some(format!("same code as #{i}"));
            self.push(cand, cfg, k.code_object);
            return Ok(());
        }
        let case = (job.case)(cfg_arg);
        let t1 = Instant::now();
        let out = run_case_repeated(
            self.dev,
            &k.code_object,
            &self.kernels[at].0,
            &case,
            self.timer.runs(),
        );
        self.result.run_ms += t1.elapsed().as_secs_f64() * 1e3;
        match out {
            Ok(out) => {
                let m = self.timer.measure(&out).map_err(|e| anyhow!("{e}"))?;
                cand.cycles = m.cycles;
                cand.us = Some(m.us);
                let seconds = m.us * 1e-6;
                // Bytes as the device counted them (a GPU counts none).
                let bytes = (out.stats.bytes_read + out.stats.bytes_written) as f64;
                cand.gbps = (seconds > 0.0 && bytes > 0.0).then(|| bytes / seconds / 1e9);
                cand.gflops = m.flops_per_second.map(|f| f / 1e9);
                cand.runs_us = m.runs_us;
                let t2 = Instant::now();
                match (job.check)(&case, &out.args) {
                    Ok(()) => cand.correct = true,
                    Err(e) => cand.note = Some(format!("wrong result: {e}")),
                }
                self.result.check_ms += t2.elapsed().as_secs_f64() * 1e3;
            }
            Err(e) => cand.note = Some(format!("run failed: {e}")),
        }
        self.push(cand, cfg, k.code_object);
        Ok(())
    }

    fn push(&mut self, c: Candidate, cfg: &[u32], code: Vec<u8>) {
        self.result.candidates.push(c);
        self.seen.push((cfg.to_vec(), code));
    }

    fn finish(&mut self) {
        let defaults = self.job.defaults();
        let base = self.result.candidates.iter().find(|c| {
            c.occupancy.is_none() && c.params.iter().map(|p| p.1).eq(defaults.iter().copied())
        });
        let base_time = base.filter(|c| c.correct).and_then(time_of);
        for c in &mut self.result.candidates {
            c.speedup = match (base_time, time_of(c)) {
                (Some(b), Some(x)) if x > 0.0 && c.correct => Some(b / x),
                _ => None,
            };
        }
        self.result.best = best_index(&self.result.candidates);
    }
}

/// What candidates are ranked by: cycles on the timing model, µs on a GPU (one tuning has
/// one or the other for all its candidates).
fn time_of(c: &Candidate) -> Option<f64> {
    c.cycles.map(|x| x as f64).or(c.us)
}

/// The fastest correct candidate; ties go to the earlier one (the default compile first, then
/// lower occupancy levels).
fn best_index(cands: &[Candidate]) -> Option<usize> {
    cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.correct)
        .filter_map(|(i, c)| time_of(c).map(|x| (x, i)))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, i)| i)
}

/// The result as a table, one candidate a line.
pub fn table(r: &TuneResult) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let pnames: Vec<&str> = r
        .candidates
        .first()
        .map(|c| c.params.iter().map(|p| p.0.as_str()).collect())
        .unwrap_or_default();
    let _ = write!(s, "{:>3} ", "#");
    for p in &pnames {
        let _ = write!(s, "{p:>7} ");
    }
    let _ = writeln!(
        s,
        "{:>5} {:>6} {:>5} {:>5} {:>5} {:>14} {:>5} {:>10} {:>9} {:>8} {:>8} {:>7}  note",
        "occ",
        "budget",
        "VGPR",
        "AGPR",
        "SGPR",
        "spill v/a/scr",
        "waves",
        "cycles",
        "us",
        "GB/s",
        "GFLOP/s",
        "speedup"
    );
    let opt = |x: Option<f64>, prec: usize| x.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    for (i, c) in r.candidates.iter().enumerate() {
        let mark = if Some(i) == r.best { "*" } else { " " };
        let _ = write!(s, "{i:>2}{mark} ");
        for p in &c.params {
            let _ = write!(s, "{:>7} ", p.1);
        }
        let _ = writeln!(
            s,
            "{:>5} {:>6} {:>5} {:>5} {:>5} {:>14} {:>5} {:>10} {:>9} {:>8} {:>8} {:>7}  {}",
            c.occupancy.map_or("def".into(), |w| w.to_string()),
            c.vgpr_budget.map_or("-".into(), |b| b.to_string()),
            c.vgprs,
            c.agprs,
            c.sgprs,
            format!("{}/{}/{}", c.spills_vgpr, c.spills_agpr, c.spills_scratch),
            c.reached_occupancy,
            c.cycles.map_or("-".into(), |x| x.to_string()),
            opt(c.us, 2),
            opt(c.gbps, 1),
            opt(c.gflops, 1),
            c.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
            match (&c.note, c.correct) {
                (Some(n), _) => n.clone(),
                (None, true) => "ok".into(),
                (None, false) => "wrong".into(),
            }
        );
    }
    s
}

/// Draws cycles against occupancy (waves per SIMD asked for), one line per parameter choice,
/// the best candidate circled, as an SVG file.
pub fn plot_svg(r: &TuneResult, path: &std::path::Path) -> Result<()> {
    use plotters::prelude::*;
    let pts: Vec<(&Candidate, u32, f64)> = r
        .candidates
        .iter()
        .filter(|c| c.correct)
        .filter_map(|c| Some((c, c.occupancy?, time_of(c)?)))
        .collect();
    let unit = if pts.iter().any(|p| p.0.cycles.is_some()) {
        "cycles"
    } else {
        "µs"
    };
    if pts.is_empty() {
        return Err(anyhow!(
            "no correct candidate at an occupancy level to plot"
        ));
    }
    let max_w = pts.iter().map(|p| p.1).max().unwrap_or(1);
    let max_c = pts.iter().map(|p| p.2).fold(0.0, f64::max).max(1e-9) * 1.1;
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| anyhow!("plot {}: {e:?}", path.display());
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} on {} ({}): {unit} by occupancy",
                r.kernel, r.target, r.model
            ),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0u32..max_w + 1, 0f64..max_c)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("occupancy asked for (waves/SIMD)")
        .y_desc(unit)
        .draw()
        .map_err(err)?;
    let mut configs: Vec<Vec<(String, u32)>> = Vec::new();
    for (c, _, _) in &pts {
        if !configs.contains(&c.params) {
            configs.push(c.params.clone());
        }
    }
    for (k, cfg) in configs.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let line: Vec<(u32, f64)> = pts
            .iter()
            .filter(|p| &p.0.params == cfg)
            .map(|p| (p.1, p.2))
            .collect();
        let label = if cfg.is_empty() {
            "default parameters".to_string()
        } else {
            cfg.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
    }
    if let Some(b) = r.best() {
        if let (Some(w), Some(c)) = (b.occupancy, time_of(b)) {
            chart
                .draw_series(std::iter::once(Circle::new((w, c), 8, RED.stroke_width(2))))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The on-disk cache of tuning results: one JSON file per (kernel, target, model, size bucket,
/// IR hash) under `$KJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/kjit/tune`, else
/// `~/.cache/kjit/tune`.
pub mod cache {
    use super::*;
    use std::path::PathBuf;

    /// The cache directory.
    pub fn dir() -> PathBuf {
        if let Some(d) = std::env::var_os("KJIT_CACHE_DIR") {
            return PathBuf::from(d);
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("kjit").join("tune")
    }

    /// The cache key's model part for a GPU: its name (`Device::name`, e.g. "HIP: AMD
    /// Instinct MI300X (gfx942:sramecc+:xnack-)") with everything but letters, digits, `.`
    /// and `_` made `_`, so that it is one file-name word.
    pub fn device_key(name: &str) -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    /// The size bucket of `n`: the next power of two.
    pub fn bucket(n: usize) -> usize {
        n.max(1).next_power_of_two()
    }

    /// The file of one tuning.
    pub fn path(
        kernel: &str,
        ir_hash: u64,
        target: Target,
        model: &str,
        n: usize,
        space: Space,
    ) -> PathBuf {
        let space = match space {
            Space::Occupancy => "occ",
            Space::All => "all",
        };
        dir().join(format!(
            "{kernel}-{target}-{model}-n{}-{space}-{ir_hash:016x}.json",
            bucket(n)
        ))
    }

    /// A stored result, if any (a file that does not parse counts as absent).
    pub fn load(path: &std::path::Path) -> Option<TuneResult> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut r: TuneResult = serde_json::from_str(&text).ok()?;
        r.from_cache = true;
        Some(r)
    }

    /// Stores a result.
    pub fn store(path: &std::path::Path, r: &TuneResult) -> Result<()> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(r)?)?;
        Ok(())
    }

    /// The most recent stored winner for a kernel with this IR hash on `target`, any model,
    /// size or space; `n` prefers results of its size bucket.
    pub fn winner(
        kernel: &str,
        ir_hash: u64,
        target: Target,
        n: Option<usize>,
    ) -> Option<(PathBuf, Candidate)> {
        let prefix = format!("{kernel}-{target}-");
        let suffix = format!("-{ir_hash:016x}.json");
        let mut found: Vec<(bool, std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir())
            .ok()?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                if !name.starts_with(&prefix) || !name.ends_with(&suffix) {
                    return None;
                }
                let same_size = n.is_some_and(|n| name.contains(&format!("-n{}-", bucket(n))));
                let time = e.metadata().and_then(|m| m.modified()).ok()?;
                Some((same_size, time, e.path()))
            })
            .collect();
        found.sort();
        let (_, _, p) = found.pop()?;
        let best = load(&p)?.best()?.clone();
        Some((p, best))
    }
}
