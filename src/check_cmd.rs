//! `harness check HISTORY`: checks a history file through the engine's
//! check table (`engine::checks`: Elle for transactions, linearizability
//! for register / kv histories, Jepsen's workload checkers), prints the
//! verdict, optionally writes explanations and graphs.
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

use anyhow::Context;
use checker::CheckResult;
use checker::anomaly::AnomalyType;
use checker::linear::FailedCas;
use checker::model::ConsistencyModel;
use clap::{Args, ValueEnum};
use engine::checks::{CheckHow, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::History;
use store::import::FileFormat;
use workloads::WorkloadKind;

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

    /// Workload: auto (detected from the ops), or one of the names
    /// `workloads::WORKLOADS` lists.
    #[arg(long, short = 'm', visible_alias = "model", default_value = DEFAULT_WORKLOAD,
          value_parser = str::parse::<WorkloadArg>,
          help = format!("Workload: auto (detected from the ops) or {}", WorkloadKind::names_help(false)))]
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
    #[arg(long, default_value = DEFAULT_CYCLE_SEARCH_TIMEOUT, value_parser = humantime::parse_duration)]
    pub cycle_search_timeout: Duration,

    /// Linearizability check: what a failed op means. `dropped`: it did not
    /// happen (Knossos and Jepsen's EDN histories: the default for EDN);
    /// `observed`: a failed cas happened and saw another value (Porcupine's
    /// logs, SQL's "0 rows updated": the default for every other format).
    #[arg(long, value_parser = ["observed", "dropped"])]
    pub failed_ops: Option<String>,

    /// Memory the linearizability search may take (e.g. 4G, 512M); running
    /// out is `unknown` with the longest linearizable prefix. Default: half
    /// of what the machine leaves (available memory, `ulimit -v`, cgroup).
    #[arg(long, value_parser = engine::checks::memory::parse_size)]
    pub memory: Option<u64>,

    /// The same as `--failed-ops dropped`.
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

/// `--workload`'s default (also `check_args_fast`'s).
pub const DEFAULT_WORKLOAD: &str = "auto";

/// `--cycle-search-timeout`'s default (also `check_args_fast`'s).
pub const DEFAULT_CYCLE_SEARCH_TIMEOUT: &str = "30s";

/// Anomalies of one type the text report explains (without `--all-anomalies`).
pub const STDOUT_EXPLAINED_PER_TYPE: usize = 3;

/// `--workload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    /// Detect from the ops (the check table's `detect`).
    Auto,
    /// A given workload.
    Given(WorkloadKind),
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

    /// `auto` or a workload name (`workloads::WORKLOADS`).
    fn from_str(s: &str) -> Result<WorkloadArg, String> {
        if s.trim_start_matches(':') == "auto" {
            return Ok(WorkloadArg::Auto);
        }
        WorkloadKind::parse(s)
            .map(WorkloadArg::Given)
            .map_err(|e| format!("{e} (or auto)"))
    }
}

/// What a failed op means in this file: as asked, else what its format
/// means (Knossos' and Jepsen's EDN: it did not happen; anything else,
/// Porcupine's logs included: a failed cas saw another value). `read_as`:
/// the format the file was read as (`None` for a stream).
fn failed_ops(args: &CheckArgs, read_as: Option<FileFormat>) -> FailedCas {
    if args.drop_failed_cas || args.failed_ops.as_deref() == Some("dropped") {
        return FailedCas::Dropped;
    }
    if args.failed_ops.as_deref() == Some("observed") {
        return FailedCas::Observed;
    }
    // A stream's format is not looked at: `read_as` is `None` for one.
    let format = args.history_format.or(read_as);
    match format {
        Some(FileFormat::Ours(store::Format::Edn)) => FailedCas::Dropped,
        _ => FailedCas::Observed,
    }
}

/// Runs `harness check`, returning the exit code.
///
/// # Errors
/// An unreadable or malformed history, an undetectable workload, or an
/// output directory that cannot be written.
pub fn run(args: CheckArgs) -> anyhow::Result<u8> {
    let crate::history_input::LoadedFile {
        history,
        warnings,
        file_format,
    } = crate::history_input::load(&args.history, args.history_format)?;
    print_warnings(&warnings, &history);
    if args.linearizable_keys && !history.has_realtime_order() {
        eprintln!(
            "warning: {} records session order only (no clock): --linearizable-keys orders \
             versions by op position, which here is not real time",
            args.history.display()
        );
    }
    let how = CheckHow {
        workload: match args.workload {
            WorkloadArg::Auto => None,
            WorkloadArg::Given(w) => Some(w),
        },
        models: args.consistency_models.clone(),
        anomalies: args.anomalies.clone(),
        wfr_keys: args.wfr_keys,
        sequential_keys: args.sequential_keys,
        linearizable_keys: args.linearizable_keys,
        time_limit: args.cycle_search_timeout,
        failed_ops: Some(failed_ops(&args, file_format)),
        memory: args.memory,
        all: args.all_anomalies,
        explain: STDOUT_EXPLAINED_PER_TYPE,
        from_run: false,
        files: args.directory.is_some(),
    };
    let verdict = engine::checks::check(&history, &how)
        .with_context(|| format!("checking {}", args.history.display()))?;
    let witness_to_stdout = args.witness.as_deref() == Some(Path::new("-"));
    match args.format {
        Format::Json => {
            let mut j = verdict.json.clone();
            if let Some(e) = verdict.elle.as_ref().filter(|e| !e.engines.is_empty()) {
                // Who decided each level, with the witness when asked.
                j["engines"] = checker::engines::to_json(&e.engines, witness_to_stdout);
            }
            engine::say!("{}", serde_json::to_string(&j).unwrap_or_default());
        }
        Format::Edn => {
            let data = match &verdict.elle {
                Some(e) => {
                    let mut data = e.result.to_data();
                    e.counts.annotate_data(&mut data);
                    data
                }
                None => json_to_data(&verdict.json),
            };
            engine::say_raw!("{}\n", store::format::data_to_edn(&data));
        }
        Format::Text => print_text(&verdict, &how),
    }
    if let Some(target) = &args.witness {
        let engines = verdict.elle.as_ref().map_or(&[][..], |e| &e.engines[..]);
        write_witness(target, engines, args.format)?;
    }
    if let Some(dir) = &args.directory {
        engine::checks::write_dir(dir, &history, &verdict).context("writing the explanations")?;
    }
    let code = verdict.valid.exit_code();
    // The process ends next: freeing a million-transaction history piece by
    // piece costs ~5 % of a check (measured with perf), the OS does it at once.
    std::mem::forget(history);
    std::mem::forget(verdict);
    Ok(code)
}

/// The text report: Elle's map (valid?, anomaly types, the models ruled
/// out) for transactions, the explanations, what was checked, and the one
/// verdict line every family ends with.
fn print_text(v: &Verdict, how: &CheckHow) {
    match &v.elle {
        Some(e) => {
            engine::say_raw!("{}", render_head(&e.result));
            engine::say_raw!("{}", v.details);
            let elapsed = Duration::from_secs_f64(v.elapsed_s);
            engine::say!(
                "{}",
                what_was_checked(&e.census, v.workload, how, &e.analyses, elapsed)
            );
            for r in &e.engines {
                engine::say!("engine: {}", r.line());
            }
        }
        None => {
            for w in &v.warnings {
                eprintln!("warning: {w}");
            }
            engine::say_raw!("{}", v.details);
        }
    }
    engine::say!("{}", engine::checks::verdict_line(v));
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
/// was checked: transactions by outcome, keys (the checker's census of the
/// transactions it read: no pass over the history here), workload, models,
/// the analyses that ran (their names in `checker::analysis::ANALYSES`),
/// time.
fn what_was_checked(
    census: &checker::txn::Census,
    workload: WorkloadKind,
    how: &CheckHow,
    analyses: &[&str],
    elapsed: Duration,
) -> String {
    let checker::txn::Census {
        ok,
        fail,
        info,
        keys,
        ..
    } = *census;
    let models: Vec<&str> = how.models_or_default().iter().map(|m| m.name()).collect();
    format!(
        "checked: {} transactions ({ok} ok, {fail} fail, {info} info) on {keys} key{}, {}, \
         against {} (analyses: {}), in {:.2} s",
        ok + fail + info,
        if keys == 1 { "" } else { "s" },
        workload.name(),
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

/// Elle's map in words: verdict, anomaly types, the models ruled out,
/// what was seen but allowed, the checker's warnings.
fn render_head(result: &CheckResult) -> String {
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
    out
}
