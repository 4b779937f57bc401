//! `harness check HISTORY`: checks a history file with the built-in Elle-grade
//! checker, prints the verdict, optionally writes explanations and graphs.
//!
//! Exit codes: 0 valid, 1 invalid, 2 unknown, 3 error (bad file, bad name).
//!
//! Output is bounded whatever the history: the text report
//! explains the first [`STDOUT_EXPLAINED_PER_TYPE`] anomalies of each type,
//! JSON/EDN and `--directory` keep the first
//! [`engine::report::caps::MAX_ANOMALIES_PER_TYPE`]; counts are always
//! exact (`anomaly-counts`), and `--all-anomalies` lifts every cap.
//! elle-cli's spellings work too: `-m/--model` is the workload, `-c` takes a
//! comma-separated list of consistency models and can be repeated.

use anyhow::{Context, bail};
use checker::anomaly::AnomalyType;
use checker::model::ConsistencyModel;
use checker::{Budget, CheckOptions, CheckResult, Workload};
use clap::{Args, ValueEnum};
use engine::report::caps::AnomalyCounts;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use store::History;
use store::import::FileFormat;

/// `harness check …`
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The history file (JSON Lines, Elle/elle-cli JSON or Jepsen EDN; or
    /// another checker's: PolySI/Plume/AWDIT text, dbcop JSON, dbcop's
    /// history.bincode or a directory holding one, a directory of Cobra
    /// logs).
    pub history: PathBuf,

    /// The history file's format, instead of detecting it from its content
    /// (then extension): jsonl, json (elle-json), edn, text (polysi, plume,
    /// isovista, awdit), dbcop (dbcop-json), dbcop-bincode (bincode), cobra.
    #[arg(long = "history-format", visible_aliases = ["input-format", "from"],
          value_parser = str::parse::<FileFormat>)]
    pub history_format: Option<FileFormat>,

    /// Workload: auto, list-append (append), rw-register (wr), or the
    /// linearizability check of register (read/write/cas) or kv
    /// (get/put/append) histories; auto picks register/kv by the ops' f.
    #[arg(long, short = 'm', visible_alias = "model", default_value = "auto",
          value_parser = str::parse::<WorkloadArg>)]
    pub workload: WorkloadArg,

    /// Consistency model(s) that should hold (default strong-serializable, alias strict-serializable);
    /// repeatable and comma-separated, e.g. `-c serializable,read-committed`.
    #[arg(short = 'c', long = "consistency-models", visible_alias = "consistency-model",
          value_delimiter = ',', value_parser = str::parse::<ConsistencyModel>)]
    pub consistency_models: Vec<ConsistencyModel>,

    /// Extra anomaly types that must not occur (e.g. G0, G1c); repeatable,
    /// comma-separated.
    #[arg(long = "anomalies", visible_alias = "anomaly", value_delimiter = ',',
          value_parser = str::parse::<AnomalyType>)]
    pub anomalies: Vec<AnomalyType>,

    /// rw-register: infer version orders from writes following reads.
    #[arg(long)]
    pub wfr_keys: bool,

    /// rw-register: assume each key is sequentially consistent (process order).
    #[arg(long)]
    pub sequential_keys: bool,

    /// rw-register: assume each key is linearizable (real-time order).
    #[arg(long)]
    pub linearizable_keys: bool,

    /// Time budget of the cycle search (e.g. 30s, 500ms); exhausting it makes
    /// the verdict unknown, never valid.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub cycle_search_timeout: Duration,

    /// Linearizability check: failed cas ops did not happen (Knossos),
    /// instead of "happened and saw another value" (Porcupine, the default).
    #[arg(long)]
    pub drop_failed_cas: bool,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write one `<anomaly-type>.txt` per reported type with its
    /// explanations, and `<anomaly-type>/<n>.dot` (+ `.svg` when Graphviz
    /// `dot` is installed) per cycle.
    #[arg(long)]
    pub directory: Option<PathBuf>,

    /// When the complete register check (serializable / snapshot-isolation
    /// models of a rw-register history) says valid, print its witness: the
    /// committed transactions' op indices in a commit order consistent with
    /// every read, one line per level. `--witness FILE` writes them to FILE
    /// instead (put the flag after the history, or use `--witness=FILE`).
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    pub witness: Option<PathBuf>,

    /// Print (and write to --directory) every anomaly found. By default the
    /// text report explains the first 3 of each type and JSON/EDN/--directory
    /// keep the first 100; the number found of each type is always given.
    /// A linearizability check searches every key instead of stopping at
    /// the first key that is not linearizable.
    #[arg(long)]
    pub all_anomalies: bool,
}

/// Anomalies of one type the text report explains (without `--all-anomalies`).
pub const STDOUT_EXPLAINED_PER_TYPE: usize = 3;

/// `--workload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    /// Detect from the micro-ops.
    Auto,
    /// A given workload.
    Given(Workload),
    /// A linearizability check (`register`, `kv`).
    Linear(crate::linear_cmd::LinearKind),
    /// One of Jepsen's workloads (bank, set, …): its own checker.
    Jepsen(workloads::JepsenWorkload),
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Verdict and explanations for humans.
    Text,
    /// Elle's result map as JSON.
    Json,
    /// Elle's result map as EDN.
    Edn,
}

impl std::str::FromStr for WorkloadArg {
    type Err = String;

    /// `auto` or a workload name.
    fn from_str(s: &str) -> Result<WorkloadArg, String> {
        match s.trim_start_matches(':') {
            "auto" => Ok(WorkloadArg::Auto),
            "register" | "cas-register" => Ok(WorkloadArg::Linear(crate::linear_cmd::LinearKind::Register)),
            "kv" => Ok(WorkloadArg::Linear(crate::linear_cmd::LinearKind::Kv)),
            w if workloads::JepsenWorkload::parse(w).is_some() => workloads::JepsenWorkload::parse(w)
                .map(WorkloadArg::Jepsen)
                .ok_or_else(|| format!("unknown workload {w:?}")),
            w => w.parse().map(WorkloadArg::Given).map_err(|_| {
                format!(
                    "unknown workload {w:?}; known workloads: auto, list-append (append), rw-register (wr), register, kv, bank, bank-multitable, bank-insert, set, set-full, long-fork, monotonic, sequential, counter"
                )
            }),
        }
    }
}

/// Runs `harness check`, returning the exit code.
///
/// # Errors
/// An unreadable or malformed history, an undetectable workload, or an
/// output directory that cannot be written.
pub fn run(args: CheckArgs) -> anyhow::Result<u8> {
    let (history, warnings) = crate::history_input::load(&args.history, args.history_format)?;
    print_warnings(&warnings, &history);
    if args.linearizable_keys && !history.has_realtime_order() {
        eprintln!(
            "warning: {} records session order only (no clock): --linearizable-keys orders \
             versions by op position, which here is not real time",
            args.history.display()
        );
    }
    let jepsen = match args.workload {
        WorkloadArg::Jepsen(w) => Some(w),
        WorkloadArg::Auto => {
            checker::workloads::detect(&history).and_then(workloads::JepsenWorkload::parse)
        }
        WorkloadArg::Given(_) | WorkloadArg::Linear(_) => None,
    };
    if let Some(w) = jepsen {
        return Ok(check_jepsen(&args, &history, w));
    }
    let linear = match args.workload {
        WorkloadArg::Linear(k) => Some(k),
        WorkloadArg::Auto => crate::linear_cmd::detect(&history),
        WorkloadArg::Given(_) | WorkloadArg::Jepsen(_) => None,
    };
    if let Some(kind) = linear {
        return crate::linear_cmd::run(
            &history,
            kind,
            &crate::linear_cmd::LinearArgs {
                path: &args.history,
                json: args.format == Format::Json,
                directory: args.directory.as_deref(),
                timeout: args.cycle_search_timeout,
                drop_failed_cas: args.drop_failed_cas,
                all_keys: args.all_anomalies,
            },
        );
    }
    let workload = match args.workload {
        WorkloadArg::Given(w) => w,
        WorkloadArg::Linear(_) => unreachable_linear()?,
        // A Jepsen workload was checked above.
        WorkloadArg::Auto | WorkloadArg::Jepsen(_) => {
            Workload::detect(&history).with_context(|| {
                format!(
                    "cannot tell the workload of {} (no append and no write micro-op, or both); \
                 pass --workload list-append or --workload rw-register",
                    args.history.display()
                )
            })?
        }
    };
    let models = if args.consistency_models.is_empty() {
        vec![checker::model::DEFAULT_MODEL]
    } else {
        args.consistency_models.clone()
    };
    let deadline = Instant::now() + args.cycle_search_timeout;
    let opts = CheckOptions {
        workload,
        models,
        anomalies: args.anomalies.clone(),
        wfr_keys: args.wfr_keys,
        sequential_keys: args.sequential_keys,
        linearizable_keys: args.linearizable_keys,
        budget: Budget::until(Box::new(move || Instant::now() >= deadline)),
        complete: true,
    };
    let engine::check::CheckedHistory {
        result,
        counts,
        engines,
        analyses,
        elapsed_s,
        ..
    } = engine::check::check_history(&history, &opts, !args.all_anomalies);
    let elapsed = std::time::Duration::from_secs_f64(elapsed_s);
    let shown_per_type = (!args.all_anomalies).then_some(STDOUT_EXPLAINED_PER_TYPE);
    let witness_to_stdout = args.witness.as_deref() == Some(Path::new("-"));
    match args.format {
        Format::Json => {
            let mut j = result.to_json();
            counts.annotate_json(&mut j);
            if engines.is_empty() {
                engine::say!("{}", serde_json::to_string_pretty(&j).unwrap_or_default());
            } else {
                // Only when the complete check was asked for: Elle's map plus an
                // `engines` entry saying who decided each level.
                j["engines"] = checker::engines::to_json(&engines, witness_to_stdout);
                engine::say!("{}", serde_json::to_string(&j).unwrap_or_default());
            }
        }
        Format::Edn => {
            let mut data = result.to_data();
            counts.annotate_data(&mut data);
            engine::say_raw!("{}\n", store::format::data_to_edn(&data));
        }
        Format::Text => {
            engine::say_raw!(
                "{}",
                render_text(&result, &counts, shown_per_type, &history)
            );
            engine::say!("{}", what_was_checked(&history, &opts, &analyses, elapsed));
            for r in &engines {
                engine::say!("engine: {}", r.line());
            }
        }
    }
    if let Some(target) = &args.witness {
        write_witness(target, &engines, args.format)?;
    }
    if let Some(dir) = &args.directory {
        engine::report::elle::write(
            dir,
            &result,
            &counts,
            &history,
            engine::report::elle::Limits::KEPT,
        )
        .with_context(|| format!("writing explanations to {}", dir.display()))?;
    }
    let code = result.valid.exit_code();
    // The process ends next: freeing a million-transaction history piece by
    // piece costs ~5 % of a check (measured with perf), the OS does it at once.
    std::mem::forget(history);
    std::mem::forget(result);
    Ok(code)
}

fn unreachable_linear() -> anyhow::Result<Workload> {
    bail!("a linearizability workload was routed to the transaction checker")
}

/// `harness check` of a Jepsen workload's history: its checker's report
/// (the first model given, else Elle's default, tunes it as in a run).
fn check_jepsen(args: &CheckArgs, history: &store::History, w: workloads::JepsenWorkload) -> u8 {
    let model = args
        .consistency_models
        .first()
        .copied()
        .unwrap_or(checker::model::DEFAULT_MODEL);
    let report = checker::workloads::check(history, &engine::jepsen::checker_for(w, model));
    match args.format {
        Format::Json => engine::say!("{}", report.to_json()),
        Format::Edn => engine::say_raw!(
            "{}",
            store::format::data_to_edn(&json_to_data(&report.to_json()))
        ),
        Format::Text => {
            engine::say!("{w} history, {} ops", history.len());
            engine::jepsen::print_report(&report);
        }
    }
    report.valid.exit_code()
}

fn json_to_data(v: &serde_json::Value) -> store::Data {
    use serde_json::Value;
    use store::Data;
    match v {
        Value::Null => Data::Nil,
        Value::Bool(b) => Data::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| Data::Float(n.as_f64().unwrap_or(0.0)), Data::Int),
        Value::String(s) => Data::Str(s.clone()),
        Value::Array(a) => Data::Vec(a.iter().map(json_to_data).collect()),
        Value::Object(m) => Data::Map(
            m.iter()
                .map(|(k, v)| (Data::Keyword(k.clone()), json_to_data(v)))
                .collect(),
        ),
    }
}

/// `--witness`: one line per level the complete check found valid, to
/// stdout (text output; JSON carries it in `engines`) or to a file. Says so
/// on stderr when there is no witness to give.
pub(crate) fn write_witness(
    target: &Path,
    engines: &[checker::engines::LevelReport],
    format: Format,
) -> anyhow::Result<()> {
    let lines: Vec<String> = engines
        .iter()
        .filter_map(checker::engines::LevelReport::witness_line)
        .collect();
    if lines.is_empty() {
        eprintln!(
            "warning: no witness: the complete register check did not find a serializable or \
             snapshot-isolation model valid (it runs for rw-register histories checked against one)"
        );
        return Ok(());
    }
    if target == Path::new("-") {
        if format == Format::Text {
            for l in &lines {
                engine::say!("witness (commit order, op indices) {l}");
            }
        }
        return Ok(());
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(target, text).with_context(|| format!("writing {}", target.display()))
}

fn join_names<T: std::fmt::Display>(xs: &[T]) -> String {
    xs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line (to stdout after the verdict, in text output only) saying what
/// was checked: transactions by outcome, keys, workload, models, the
/// analyses that ran (their names in `checker::analysis::ANALYSES`), time.
fn what_was_checked(
    history: &History,
    opts: &CheckOptions,
    analyses: &[&str],
    elapsed: Duration,
) -> String {
    use store::{MicroOp, OpType};
    let (mut ok, mut fail, mut info) = (0u64, 0u64, 0u64);
    // Fx, not SipHash: this visits every micro-op (it showed in the profile).
    let mut keys = rustc_hash::FxHashSet::default();
    for pos in (0..history.len()).filter(|&pos| history.is_client(pos)) {
        match history.op_type(pos) {
            OpType::Ok => ok += 1,
            OpType::Fail => fail += 1,
            OpType::Info => info += 1,
            // Never completed: treated as info by the checker, so counted
            // as info here (the counts add up to the transactions).
            OpType::Invoke if history.completion(pos).is_none() => info += 1,
            OpType::Invoke => {}
        }
        // An elided invocation's keys are its completion's, counted there.
        for m in history.stored_txn(pos).into_iter().flatten() {
            if let MicroOp::Append(k, _) | MicroOp::Write(k, _) | MicroOp::Read(k, _) = m {
                keys.insert(k);
            }
        }
    }
    let models: Vec<&str> = opts.models.iter().map(|m| m.name()).collect();
    format!(
        "checked: {} transactions ({ok} ok, {fail} fail, {info} info) on {} key{}, {}, against {} \
         (analyses: {}), in {:.2} s",
        ok + fail + info,
        keys.len(),
        if keys.len() == 1 { "" } else { "s" },
        opts.workload.name(),
        if models.is_empty() {
            "the given anomalies only".to_string()
        } else {
            models.join(", ")
        },
        analyses.join(", "),
        elapsed.as_secs_f64()
    )
}

/// Warnings printed one by one, at most; the rest are counted.
const MAX_WARNINGS_PRINTED: usize = 20;

/// Prints what the reader forgave: each warning with its position (the
/// first [`MAX_WARNINGS_PRINTED`]), then one line counting them by kind.
fn print_warnings(warnings: &[String], history: &History) {
    for w in warnings.iter().take(MAX_WARNINGS_PRINTED) {
        eprintln!("warning: {w}");
    }
    if warnings.len() > MAX_WARNINGS_PRINTED {
        eprintln!(
            "warning: … and {} more warnings",
            warnings.len() - MAX_WARNINGS_PRINTED
        );
    }
    let (mut unmatched, mut orphans, mut reused) = (0u64, 0u64, 0u64);
    for w in history.warnings() {
        match w {
            store::HistoryWarning::Unmatched { .. } => unmatched += 1,
            store::HistoryWarning::CompletionWithoutInvocation { .. } => orphans += 1,
            store::HistoryWarning::MoreCompletionsWithoutInvocation { count } => orphans += count,
            store::HistoryWarning::ProcessReusedAfterInfo { .. } => reused += 1,
        }
    }
    let other = warnings.len() as u64 - history.warnings().len().min(warnings.len()) as u64;
    let mut parts = Vec::new();
    for (n, what) in [
        (unmatched, "invocations never completed (counted as info)"),
        (orphans, "completions without an invocation"),
        (reused, "processes reused after info"),
        (
            other,
            "other reader warnings (torn or padded ends, byte-order marks)",
        ),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if !parts.is_empty() {
        eprintln!("warnings: {}", parts.join(", "));
    }
}

/// The human-readable report: verdict, boundary, then the explanations:
/// the first `per_type` of each type (all when `None`), saying how many
/// were found and how to see the rest.
fn render_text(
    result: &CheckResult,
    counts: &AnomalyCounts,
    per_type: Option<usize>,
    history: &History,
) -> String {
    let mut out = format!("valid?: {}\n", result.valid);
    if !result.anomaly_types.is_empty() {
        out += &format!("anomaly-types: {}\n", join_names(&result.anomaly_types));
    }
    if !result.not.is_empty() {
        out += &format!("not: {}\n", join_names(&result.not));
    }
    if !result.also_not.is_empty() {
        out += &format!("also-not: {}\n", join_names(&result.also_not));
    }
    let allowed: Vec<AnomalyType> = result
        .found_types
        .iter()
        .copied()
        .filter(|a| !result.anomaly_types.contains(a) && !a.is_cycle_exists())
        .collect();
    if !allowed.is_empty() {
        // Elle prints nothing about these; they are allowed by the requested
        // models, but a reader deserves to know they were seen.
        out += &format!(
            "also found (allowed by the requested models): {}\n",
            join_names(&allowed)
        );
    }
    for w in &result.warnings {
        out += &format!("warning: {w}\n");
    }
    for (t, cases) in &result.anomalies {
        let found = counts.found.get(t).copied().unwrap_or(0).max(cases.len());
        let shown = per_type.map_or(cases.len(), |n| n.min(cases.len()));
        out += "\n";
        out += &engine::report::elle::type_text(*t, &cases[..shown], history);
        if found > shown {
            out += &format!(
                "… {} of {} {t} anomalies not shown: --all-anomalies prints every one, \
                 --directory DIR writes {}\n",
                found - shown,
                found,
                if counts.kept_per_type.is_some() {
                    format!(
                        "the first {} of each type",
                        counts.kept_per_type.unwrap_or(0)
                    )
                } else {
                    "every one".to_string()
                }
            );
        }
    }
    out
}
