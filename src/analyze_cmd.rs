//! `harness analyze RUN_DIR [-c MODEL]...`: re-check a stored run (e.g.
//! against other consistency models) and regenerate its results and reports.
//!
//! Reads only `test.json` (through `store::run::RunMeta`: the workload and
//! the expected model),
//! the history (`history.jsonl.gz`, or `history.jsonl` of a run that did
//! not finish), and writes `results.json` plus everything
//! [`engine::report::write_reports`] writes, by the same path as `run`
//! ([`engine::check::check_history`], [`engine::check::write_results`]). `--reports-only` skips the
//! checker and regenerates the timeline and plots alone (`--keep edn` adds
//! `history.edn`).

use anyhow::Context;
use checker::anomaly::AnomalyType;
use checker::model::ConsistencyModel;
use checker::{Budget, CheckOptions, Workload};
use clap::Args;
use engine::exit;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `harness analyze` options.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// The run directory (`runs/<test>/<timestamp>`, or `runs/latest`).
    pub run_dir: PathBuf,

    /// Consistency model(s) to check against instead of the run's expected
    /// model; repeatable and comma-separated.
    #[arg(short = 'c', long = "consistency-models", visible_alias = "consistency-model",
          value_delimiter = ',', value_parser = str::parse::<ConsistencyModel>)]
    pub consistency_models: Vec<ConsistencyModel>,

    /// Extra anomaly types that must not occur; repeatable, comma-separated.
    #[arg(long = "anomalies", visible_alias = "anomaly", value_delimiter = ',',
          value_parser = str::parse::<AnomalyType>)]
    pub anomalies: Vec<AnomalyType>,

    /// Workload (default: from test.json, else detected from the history).
    #[arg(long, short = 'w', value_parser = str::parse::<Workload>)]
    pub workload: Option<Workload>,

    /// As `harness check --witness`: print (or write to FILE) the commit
    /// order the complete register check found for each valid level.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    pub witness: Option<PathBuf>,

    /// Time budget of the cycle search; exhausting it makes the verdict
    /// unknown, never valid.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub cycle_search_timeout: Duration,

    /// Do not re-check: regenerate the timeline and plots only.
    #[arg(long)]
    pub reports_only: bool,

    /// Also write what a run leaves out by default: edn (history.edn),
    /// timeline (every transaction, not a sample), all; comma-separated.
    #[arg(long, value_parser = crate::run_cmd::keep_arg(), value_delimiter = ',')]
    pub keep: Vec<engine::report::KeepItem>,
}

/// Runs `harness analyze`, returning the exit code of the verdict.
///
/// # Errors
/// A missing or unreadable run directory or history, a test.json naming an
/// unknown workload or model, or reports that cannot be written.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<u8> {
    let run = store::RunDir::open(&args.run_dir)
        .with_context(|| format!("opening run directory {}", args.run_dir.display()))?;
    let dir = run.path().to_path_buf();
    let history_path = run.history_path();
    let (history, warnings) = store::format::load_history(&history_path)
        .with_context(|| format!("reading history {}", history_path.display()))?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let keep = engine::report::Keep::from_items(&args.keep);
    if args.reports_only {
        engine::report::write_reports(&dir, &history, None, keep)?;
        engine::say!("reports regenerated in {}", dir.display());
        return Ok(exit::VALID);
    }
    let test = store::run::RunMeta::load_if_exists(&run.test_json_path())?.unwrap_or_default();
    let workload = match args.workload {
        Some(w) => w,
        None => match test.workload() {
            Some(name) => name
                .parse::<Workload>()
                .map_err(anyhow::Error::msg)
                .context("test.json: config.workload")?,
            None => Workload::detect(&history).with_context(|| {
                format!(
                    "cannot tell the workload of {}; pass --workload list-append or rw-register",
                    history_path.display()
                )
            })?,
        },
    };
    let models = if !args.consistency_models.is_empty() {
        args.consistency_models.clone()
    } else {
        match test.expected_model() {
            Some(name) => vec![
                name.parse::<ConsistencyModel>()
                    .context("test.json: expected consistency model")?,
            ],
            None => vec![checker::model::DEFAULT_MODEL],
        }
    };
    let deadline = Instant::now() + args.cycle_search_timeout;
    let opts = CheckOptions {
        workload,
        models: models.clone(),
        anomalies: args.anomalies.clone(),
        wfr_keys: false,
        sequential_keys: false,
        linearizable_keys: false,
        budget: Budget::until(Box::new(move || Instant::now() >= deadline)),
        complete: true,
    };
    let mut checked = engine::check::check_history(&history, &opts, true);
    let (_, written) = engine::check::write_results(&history, &mut checked, &run);
    written?;
    let engine::check::CheckedHistory {
        result,
        counts,
        engines,
        ..
    } = checked;
    engine::report::write_reports(&dir, &history, Some((&result, &counts)), keep)?;
    let names: Vec<&str> = result.anomaly_types.iter().map(|t| t.name()).collect();
    let model_names: Vec<&str> = models.iter().map(|m| m.name()).collect();
    engine::say!(
        "{} against {}{}",
        match result.valid {
            checker::Valid::True => "valid",
            checker::Valid::False => "invalid",
            checker::Valid::Unknown => "unknown",
        },
        model_names.join(", "),
        if names.is_empty() {
            String::new()
        } else {
            format!(": {}", names.join(", "))
        }
    );
    for r in &engines {
        engine::say!("decided by: {}", r.line());
    }
    if let Some(target) = &args.witness {
        crate::check_cmd::write_witness(target, &engines, crate::check_cmd::Format::Text)?;
    }
    // As the run settled it: no fault in effect, a loss a setting permits.
    let (valid, lines) = engine::no_fault::settle_record(&run, &test, result.valid);
    for l in lines {
        engine::say!("{l}");
    }
    engine::say!("results and reports written to {}", dir.display());
    Ok(valid.exit_code())
}
