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
//!
//! # Threads
//! The candidates of a search step that do not depend on each other's results (a batch:
//! `Tuner::batch`) compile on [`TuneOptions::jobs`] scoped threads, and on the software
//! device they run on them too; the builds, the inputs and the checks stay on the calling
//! thread, and every step keeps the candidates' order, so the result is that of one thread
//! (`docs/tune.md`, "On every core").

use std::hash::Hasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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
    /// Threads that select and compile the candidates, and run them on the software device
    /// (at least 1; 1: one candidate after another on the calling thread).
    pub jobs: usize,
}

impl TuneOptions {
    /// Occupancy levels only, optimized, exhaustive up to 96 candidates, the target's model,
    /// [`default_jobs`] threads.
    pub fn new(target: Target) -> TuneOptions {
        TuneOptions {
            target,
            model: default_model(target).to_string(),
            space: Space::Occupancy,
            optimize: true,
            exhaustive_limit: 96,
            runs: 5,
            jobs: default_jobs(),
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
    /// FxHash of the code object (`None`: it did not compile): candidates with equal hashes
    /// have the same code.
    #[serde(default)]
    pub code_hash: Option<u64>,
    /// Compile time, ms: the CPU time of the threads that built, selected and compiled this
    /// candidate's code (a selection or compile two candidates share counts for the first).
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
    /// CPU time compiling, ms: the candidates' `compile_ms` summed (on all threads).
    pub compile_ms: f64,
    /// Time running the candidates on the device (model or GPU, with copies), ms: each run's
    /// wall time, summed (runs on several threads overlap: see `run_wall_ms`).
    pub run_ms: f64,
    /// Time computing references and comparing, ms.
    pub check_ms: f64,
    /// Threads the tuning used ([`TuneOptions::jobs`]).
    #[serde(default)]
    pub jobs: usize,
    /// Wall time of the compile phases, ms (builds, selections and compiles; on `jobs`
    /// threads the compiles overlap).
    #[serde(default)]
    pub compile_wall_ms: f64,
    /// The compile phases' critical path, ms: the builds' CPU time (on the calling thread) and,
    /// per round of compiles, the CPU time of its busiest thread. What `compile_wall_ms` is on
    /// idle cores, less waits: on a machine that other work keeps busy, the wall time is not.
    #[serde(default)]
    pub compile_span_ms: f64,
    /// Wall time of the run phases, ms (making the inputs, the runs, and the reference checks,
    /// which the calling thread makes while other threads run).
    #[serde(default)]
    pub run_wall_ms: f64,
    /// Wall time of the whole tuning, ms.
    #[serde(default)]
    pub wall_ms: f64,
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
    search(
        job,
        opts,
        Runner::Shared(&dev),
        Timer::Model,
        &opts.model,
        progress,
    )
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
    search(job, opts, Runner::Alone(dev), timer, &dev.name(), progress)
}

/// Where the candidates run: a device that several threads may launch on at once (kjit's
/// software device: each launch has its own buffers, whose placement does not change its
/// cycles (`emu::memory`), and its own timing-model replay), or one that takes them one at a
/// time (a GPU timing its launches with events: overlapping launches would time each other).
#[derive(Clone, Copy)]
enum Runner<'d> {
    /// Candidates run on up to [`TuneOptions::jobs`] threads.
    Shared(&'d (dyn Device + Sync)),
    /// Candidates run in turn on the calling thread.
    Alone(&'d dyn Device),
}

/// The search of [`tune`] and [`tune_on`]: `model` names the timing model or the device.
fn search(
    job: &Job<'_>,
    opts: &TuneOptions,
    runner: Runner<'_>,
    timer: Timer,
    model: &str,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TuneResult> {
    if opts.jobs == 0 {
        return Err(anyhow!(
            "jobs must be at least 1 (1 compiles and runs the candidates one at a time)"
        ));
    }
    let start = Instant::now();
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
        runner,
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
            jobs: opts.jobs,
            compile_wall_ms: 0.0,
            compile_span_ms: 0.0,
            run_wall_ms: 0.0,
            wall_ms: 0.0,
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
        t.batch(&pts, &mut |done| progress(done, pts.len()))?;
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
            let pts: Vec<Point> = stage1.iter().map(|c| (c.clone(), None)).collect();
            t.batch(&pts, &mut |k| progress(k, expected))?;
            done = pts.len();
            best_cfg = t.best_config().unwrap_or(defaults.clone());
        } else {
            for (k, (_, vals)) in params.iter().enumerate() {
                let pts: Vec<Point> = vals
                    .iter()
                    .map(|&v| {
                        let mut c = best_cfg.clone();
                        c[k] = v;
                        (c, None)
                    })
                    .collect();
                t.batch(&pts, &mut |_| {})?;
                best_cfg = t.best_config().unwrap_or(best_cfg);
                done += 1;
                progress(done, expected);
            }
        }
        let pts: Vec<Point> = levels[1..].iter().map(|&l| (best_cfg.clone(), l)).collect();
        t.batch(&pts, &mut |k| progress(done + k, expected))?;
    }
    t.finish();
    t.result.wall_ms = ms(start.elapsed());
    Ok(t.result)
}

/// A distinct kernel's index in `Tuner::kernels` and an occupancy level.
type LevelKey = (usize, Option<u32>);

struct Tuner<'j, 'a> {
    job: &'j Job<'a>,
    opts: &'j TuneOptions,
    runner: Runner<'j>,
    timer: Timer,
    result: TuneResult,
    /// (parameter values, code object) of every candidate so far, by candidate index.
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

/// One candidate of a batch on its way through [`Tuner::batch`].
struct Slot {
    cand: Candidate,
    cfg: Vec<u32>,
    /// Its kernel's index in `Tuner::kernels` (`None`: it did not build; the note says why).
    at: Option<usize>,
    /// Thread CPU time spent for it: its build, and the selection and compile it was the first
    /// of the batch to need.
    cpu: Duration,
    /// Its code object (empty when it did not compile).
    code: Vec<u8>,
    /// The earlier candidate with the same code and launch, whose measurement it takes.
    same: Option<usize>,
}

/// Milliseconds of `d`.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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

    /// Compiles, runs and checks the candidates `pts`, which do not depend on each other's
    /// results, and appends them in order; `done(k)` as the k-th is finished. The builds, the
    /// cases and the checks run on the calling thread (a [`Job`]'s functions need not be
    /// `Sync`); the selections and compiles on up to [`TuneOptions::jobs`] threads, and so do
    /// the runs on a [`Runner::Shared`] device. Every phase keeps the candidates' order, so the
    /// result is the same for any number of jobs.
    fn batch(&mut self, pts: &[Point], done: &mut dyn FnMut(usize)) -> Result<()> {
        let t0 = Instant::now();
        let (mut slots, pending) = self.prepare(pts)?;
        self.compile(&mut slots, pending)?;
        self.result.compile_wall_ms += ms(t0.elapsed());
        let base = self.result.candidates.len();
        let to_run = self.record(&mut slots, base);
        self.run_all(&mut slots, &to_run, done)?;
        for j in 0..slots.len() {
            if let Some(i) = slots[j].same {
                let same = if i < base {
                    &self.result.candidates[i]
                } else {
                    &slots[i - base].cand
                };
                let m = Measured {
                    note: Some(format!("same code as #{i}")),
                    ..Measured::of(same)
                };
                m.give(&mut slots[j].cand);
            }
        }
        for mut s in slots {
            s.cand.compile_ms = ms(s.cpu);
            self.result.compile_ms += s.cand.compile_ms;
            self.result.candidates.push(s.cand);
        }
        Ok(())
    }

    /// The batch's candidates with their kernels: each parameter choice not seen before is
    /// built (on this thread) and a kernel not seen before is returned to be selected, its
    /// index in `kernels` to be `kernels.len()` plus its place in the list.
    fn prepare(&mut self, pts: &[Point]) -> Result<(Vec<Slot>, Vec<Function>)> {
        let job = self.job;
        let mut pending: Vec<Function> = Vec::new();
        let mut slots = Vec::with_capacity(pts.len());
        for (cfg, occ) in pts {
            let named: Vec<(String, u32)> = job
                .params
                .iter()
                .zip(cfg)
                .map(|((n, _), &v)| (n.clone(), v))
                .collect();
            let budget = occ
                .map(|w| kjit_backend_gcn::compile::occupancy_budgets(self.opts.target, w))
                .transpose()?
                .map(|b| b.vgprs);
            let mut slot = Slot {
                cand: Candidate {
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
                    code_hash: None,
                    compile_ms: 0.0,
                },
                cfg: cfg.clone(),
                at: None,
                cpu: Duration::ZERO,
                code: Vec::new(),
                same: None,
            };
            slot.at = match self.choices.iter().find(|c| c.0 == *cfg) {
                Some(c) => Some(c.1),
                None => {
                    let cpu = thread_cpu();
                    let built = (job.build)(self.cfg_arg(cfg));
                    let took = thread_cpu().saturating_sub(cpu);
                    slot.cpu += took;
                    self.result.compile_span_ms += ms(took);
                    match built {
                        // A point the kernel refuses (e.g. tiles whose LDS does not fit) is a
                        // candidate with a note, not the end of the search.
                        Err(e) => {
                            slot.cand.note = Some(format!("build error: {e}"));
                            None
                        }
                        Ok(func) => {
                            let known = self.kernels.iter().map(|k| &k.0);
                            let at = match known.chain(&pending).position(|k| *k == func) {
                                Some(i) => i,
                                None => {
                                    pending.push(func);
                                    self.kernels.len() + pending.len() - 1
                                }
                            };
                            self.choices.push((cfg.clone(), at));
                            Some(at)
                        }
                    }
                }
            };
            slots.push(slot);
        }
        Ok((slots, pending))
    }

    /// The parameter values the job's functions take for `cfg` (none when it declares none).
    fn cfg_arg<'c>(&self, cfg: &'c [u32]) -> &'c [u32] {
        if self.job.params.is_empty() {
            &[]
        } else {
            cfg
        }
    }

    /// Selects the `pending` kernels and compiles every (kernel, level) the batch needs that is
    /// not compiled yet, on up to [`TuneOptions::jobs`] threads, in two rounds: first each new
    /// kernel's selection with the first compile the batch needs of it (its default compile,
    /// where the batch has one: the default compile's level search allocates the budgets it
    /// probes, and the levels then find them in the kernel's caches instead of two threads
    /// making them at once), then the rest. The thread CPU time of each goes to the candidate
    /// that first needed it.
    fn compile(&mut self, slots: &mut [Slot], pending: Vec<Function>) -> Result<()> {
        let mut keys: Vec<(LevelKey, usize)> = Vec::new();
        for (j, s) in slots.iter().enumerate() {
            let Some(at) = s.at else { continue };
            let key = (at, s.cand.occupancy);
            if !self.compiled.iter().any(|c| c.0 == key) && !keys.iter().any(|k| k.0 == key) {
                keys.push((key, j));
            }
        }
        let base = self.kernels.len();
        let leads: Vec<(Function, (LevelKey, usize))> = pending
            .into_iter()
            .enumerate()
            .map(|(p, f)| {
                let first = keys.iter().find(|k| k.0 .0 == base + p).copied();
                // Every pending kernel is some slot's, and its keys are all uncompiled.
                (f, first.unwrap_or(((base + p, None), 0)))
            })
            .collect();
        let (target, optimize) = (self.opts.target, self.opts.optimize);
        let copts = move |occupancy| CompileOptions {
            optimize,
            occupancy,
            ..CompileOptions::default()
        };
        let (lead_results, span) = par_map(self.opts.jobs, &leads, |(func, ((_, occ), _))| {
            let copts = copts(*occ);
            let cpu = thread_cpu();
            let sel = select_kernel(func, target, &copts);
            let compiled = sel.as_ref().ok().map(|s| compile_selected(s, &copts));
            (sel, compiled, thread_cpu().saturating_sub(cpu))
        });
        self.result.compile_span_ms += ms(span);
        for ((func, (key, j)), (sel, compiled, cpu)) in leads.into_iter().zip(lead_results) {
            let sel = sel.map_err(|e| anyhow!("compiling {}: {e}", self.job.name))?;
            self.kernels.push((func, sel));
            if let Some(c) = compiled {
                self.compiled.push((key, c));
            }
            slots[j].cpu += cpu;
        }
        let rest: Vec<(LevelKey, usize)> = keys
            .into_iter()
            .filter(|k| !self.compiled.iter().any(|c| c.0 == k.0))
            .collect();
        let kernels = &self.kernels;
        let (results, span) = par_map(self.opts.jobs, &rest, |&((at, occ), _)| {
            let cpu = thread_cpu();
            let c = compile_selected(&kernels[at].1, &copts(occ));
            (c, thread_cpu().saturating_sub(cpu))
        });
        self.result.compile_span_ms += ms(span);
        for ((key, j), (c, cpu)) in rest.into_iter().zip(results) {
            self.compiled.push((key, c));
            slots[j].cpu += cpu;
        }
        Ok(())
    }

    /// Takes each compiled candidate's registers, spills and code, and finds the earlier
    /// candidate (of this batch or before, `base` being this batch's first index) with the
    /// same code and parameters; the indices of the slots that must run.
    fn record(&mut self, slots: &mut [Slot], base: usize) -> Vec<usize> {
        let mut to_run = Vec::new();
        for (j, s) in slots.iter_mut().enumerate() {
            let compiled = s.at.and_then(|at| {
                let key = (at, s.cand.occupancy);
                self.compiled.iter().find(|c| c.0 == key).map(|c| &c.1)
            });
            match compiled {
                None => {}
                Some(Err(e @ CompileError::OccupancyUnreachable { .. })) => {
                    s.cand.note = Some(format!("unreachable: {e}"));
                }
                Some(Err(e)) => s.cand.note = Some(format!("compile error: {e}")),
                Some(Ok(k)) => {
                    let h = &k.header;
                    let c = &mut s.cand;
                    c.vgprs = h.vgprs;
                    c.agprs = h.agprs;
                    c.sgprs = h.sgprs;
                    c.spills = h.spills;
                    c.spills_vgpr = h.spills_vgpr;
                    c.spills_agpr = h.spills_agpr;
                    c.spills_scratch = h.spills_scratch;
                    c.reached_occupancy = h.occupancy;
                    s.code = k.code_object.clone();
                    let mut h = rustc_hash::FxHasher::default();
                    h.write(&s.code);
                    c.code_hash = Some(h.finish());
                    s.same = self
                        .seen
                        .iter()
                        .position(|(c, code)| *c == s.cfg && *code == s.code);
                    if s.same.is_none() {
                        to_run.push(j);
                    }
                }
            }
            debug_assert_eq!(self.seen.len(), base + j);
            self.seen.push((s.cfg.clone(), s.code.clone()));
        }
        to_run
    }

    /// Runs the slots `to_run` (on up to [`TuneOptions::jobs`] threads on a shared device, else
    /// in turn) and checks each on this thread as it finishes.
    fn run_all(
        &mut self,
        slots: &mut [Slot],
        to_run: &[usize],
        done: &mut dyn FnMut(usize),
    ) -> Result<()> {
        let t0 = Instant::now();
        let job = self.job;
        // One call per candidate: first those that need no run (same code as another, or no
        // code), then each run as it is checked.
        let mut finished = 0;
        for _ in to_run.len()..slots.len() {
            finished += 1;
            done(finished);
        }
        let cases: Vec<Case> = to_run
            .iter()
            .map(|&j| (job.case)(self.cfg_arg(&slots[j].cfg)))
            .collect();
        let timer = self.timer;
        let runs = timer.runs();
        let kernels = &self.kernels;
        let items: Vec<(&[u8], &Function, &Case)> = to_run
            .iter()
            .zip(&cases)
            .map(|(&j, case)| {
                let at = slots[j].at.unwrap_or_default();
                (slots[j].code.as_slice(), &kernels[at].0, case)
            })
            .collect();
        let run = |dev: &dyn Device, (code, func, case): &(&[u8], &Function, &Case)| {
            let t = Instant::now();
            let out = run_case_repeated(dev, code, func, case, runs);
            (out, t.elapsed())
        };
        let mut measured: Vec<Option<Result<Measured>>> = (0..items.len()).map(|_| None).collect();
        let (mut run_ms, mut check_ms) = (0.0, 0.0);
        let mut each = |k: usize, (out, took): (Result<RunOutput, _>, Duration)| {
            run_ms += ms(took);
            let mut cand = Measured::default();
            let r = match out {
                Ok(out) => timer.measure(&out).map_err(|e| anyhow!("{e}")).map(|m| {
                    cand.cycles = m.cycles;
                    cand.us = Some(m.us);
                    let seconds = m.us * 1e-6;
                    // Bytes as the device counted them (a GPU counts none).
                    let bytes = (out.stats.bytes_read + out.stats.bytes_written) as f64;
                    cand.gbps = (seconds > 0.0 && bytes > 0.0).then(|| bytes / seconds / 1e9);
                    cand.gflops = m.flops_per_second.map(|f| f / 1e9);
                    cand.runs_us = m.runs_us;
                    let t2 = Instant::now();
                    match (job.check)(items[k].2, &out.args) {
                        Ok(()) => cand.correct = true,
                        Err(e) => cand.note = Some(format!("wrong result: {e}")),
                    }
                    check_ms += ms(t2.elapsed());
                    cand
                }),
                Err(e) => {
                    cand.note = Some(format!("run failed: {e}"));
                    Ok(cand)
                }
            };
            measured[k] = Some(r);
            finished += 1;
            done(finished);
        };
        match self.runner {
            Runner::Shared(dev) => {
                // The device's own threads do most of a run's work: no CPU figure of it here.
                par_each(self.opts.jobs, &items, |x| run(dev, x), &mut each);
            }
            Runner::Alone(dev) => {
                for (k, x) in items.iter().enumerate() {
                    each(k, run(dev, x));
                }
            }
        }
        for (&j, m) in to_run.iter().zip(measured) {
            if let Some(m) = m {
                m?.give(&mut slots[j].cand);
            }
        }
        self.result.run_ms += run_ms;
        self.result.check_ms += check_ms;
        self.result.run_wall_ms += ms(t0.elapsed());
        Ok(())
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

/// What a candidate's run gives it.
#[derive(Default)]
struct Measured {
    cycles: Option<u64>,
    us: Option<f64>,
    runs_us: Vec<f64>,
    gbps: Option<f64>,
    gflops: Option<f64>,
    correct: bool,
    note: Option<String>,
}

impl Measured {
    /// What `c`'s run gave it.
    fn of(c: &Candidate) -> Measured {
        Measured {
            cycles: c.cycles,
            us: c.us,
            runs_us: c.runs_us.clone(),
            gbps: c.gbps,
            gflops: c.gflops,
            correct: c.correct,
            note: c.note.clone(),
        }
    }

    /// Gives it to `c`.
    fn give(self, c: &mut Candidate) {
        c.cycles = self.cycles;
        c.us = self.us;
        c.runs_us = self.runs_us;
        c.gbps = self.gbps;
        c.gflops = self.gflops;
        c.correct = self.correct;
        c.note = self.note;
    }
}

/// Calls `f` on every item on up to `jobs` scoped threads (each free thread takes the next
/// item in order) and `each(i, result)` on the calling thread as the results come in; with one
/// job (or one item), `f` and `each` in turn on the calling thread, spawning nothing. Gives
/// the busiest thread's CPU time in `f`: the phase's wall time on idle cores, less waits.
fn par_each<T: Sync, R: Send>(
    jobs: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
    each: &mut dyn FnMut(usize, R),
) -> Duration {
    let timed = |x: &T| {
        let cpu = thread_cpu();
        let r = f(x);
        (r, thread_cpu().saturating_sub(cpu))
    };
    if jobs <= 1 || items.len() <= 1 {
        let mut busy = Duration::ZERO;
        for (i, x) in items.iter().enumerate() {
            let (r, cpu) = timed(x);
            busy += cpu;
            each(i, r);
        }
        return busy;
    }
    let next = AtomicUsize::new(0);
    let busiest = std::sync::Mutex::new(Duration::ZERO);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(items.len()) {
            let (tx, next, timed, busiest) = (tx.clone(), &next, &timed, &busiest);
            s.spawn(move || {
                let mut busy = Duration::ZERO;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(x) = items.get(i) else { break };
                    let (r, cpu) = timed(x);
                    busy += cpu;
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
                let mut b = busiest.lock().unwrap_or_else(|p| p.into_inner());
                *b = (*b).max(busy);
            });
        }
        drop(tx);
        // Ends when every worker has finished (or one panicked: the scope then re-raises it).
        for (i, r) in rx {
            each(i, r);
        }
    });
    busiest.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// `f` of every item, in the items' order, computed on up to `jobs` threads ([`par_each`]),
/// and the busiest thread's CPU time.
fn par_map<T: Sync, R: Send>(
    jobs: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
) -> (Vec<R>, Duration) {
    let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let busiest = par_each(jobs, items, f, &mut |i, r| out[i] = Some(r));
    (out.into_iter().flatten().collect(), busiest)
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`): what a compile cost, however
/// many other threads and processes share the cores.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Worker threads a tuning uses unless told: the cores `std::thread::available_parallelism`
/// reports (1 when it cannot tell).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
