//! `harness analyze RUN_DIR [-c MODEL]...`: re-check a stored run (e.g.
//! against other consistency models) and regenerate its results and reports.
//!
//! Reads only `test.json` (loosely: the workload and the expected model),
//! the history (`history.jsonl.gz`, or `history.jsonl` of a run that did
//! not finish), and writes `results.json` plus everything
//! [`engine::report::write_reports`] writes. `--reports-only` skips the
//! checker and regenerates the timeline and plots alone (`--keep edn` adds
//! `history.edn`).

use anyhow::Context;
use checker::anomaly::AnomalyType;
use checker::model::ConsistencyModel;
use checker::{Budget, CheckOptions, Workload};
use clap::Args;
use engine::exit;
use serde_json::Value;
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

/// A string field of test.json, looked up at the top level and under `config`,
/// under either spelling.
fn test_field(test: &Value, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        test.get(n)
            .or_else(|| test.get("config").and_then(|c| c.get(n)))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
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
    let test: Value = match std::fs::read(run.test_json_path()) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("parsing {}", run.test_json_path().display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(e) => {
            return Err(e).with_context(|| format!("reading {}", run.test_json_path().display()));
        }
    };
    let workload = match args.workload {
        Some(w) => w,
        None => match test_field(&test, &["workload"]) {
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
        match test_field(
            &test,
            &[
                "expected_consistency_model",
                "expected-consistency-model",
                "expected_model",
            ],
        ) {
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
    let checker::Checked {
        mut result,
        engines,
        ..
    } = checker::check_with_engines(&history, &opts);
    let counts = engine::report::caps::cap(
        &mut result,
        Some(engine::report::caps::MAX_ANOMALIES_PER_TYPE),
    );
    let mut json = engine::check::settle_no_commit(&history, &mut result);
    counts.annotate_json(&mut json);
    if !engines.is_empty() {
        json["engines"] = checker::engines::to_json(&engines, false);
    }
    let results_path = run.results_path();
    let text = serde_json::to_string_pretty(&json).context("serializing results")? + "\n";
    std::fs::write(&results_path, text)
        .with_context(|| format!("writing {}", results_path.display()))?;
    engine::report::write_reports(&dir, &history, Some((&result, &counts)), keep)?;
    let names: Vec<&str> = result.anomaly_types.iter().map(|t| t.name()).collect();
    let model_names: Vec<&str> = models.iter().map(|m| m.name()).collect();
    engine::say!(
        "{} against {}{}",
        result.valid.as_str(),
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
    engine::say!("results and reports written to {}", dir.display());
    Ok(result.valid.exit_code())
}
