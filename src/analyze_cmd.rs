//! `harness analyze RUN_DIR [-c MODEL]...`: re-check a stored run (e.g.
//! against other consistency models) and regenerate its results and reports.
//!
//! Reads only `test.json` (through `store::run::RunMeta`: the workload and
//! the expected model), the history (`history.jsonl.gz`, or
//! `history.jsonl` of a run that did not finish), and re-checks it as the
//! run checked it: the same entry of the check table, the same
//! [`engine::checks::CheckHow`] (built from the record as `run` builds it
//! from the plan), the same writer ([`engine::checks::write`]), so the
//! verdict and `results.json` are the run's. `--reports-only` skips the
//! checker and regenerates the timeline and plots alone (`--keep edn` adds
//! `history.edn`).

use anyhow::Context;
use checker::anomaly::AnomalyType;
use checker::model::ConsistencyModel;
use clap::Args;
use engine::checks::CheckHow;
use engine::exit;
use std::path::PathBuf;
use std::time::Duration;
use workloads::WorkloadKind;

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
    #[arg(long, short = 'w', value_parser = str::parse::<WorkloadKind>,
          help = format!(
              "Workload (default: from test.json, else detected from the history): {}",
              WorkloadKind::names_help(false)))]
    pub workload: Option<WorkloadKind>,

    /// As `harness check --witness`: print (or write to FILE) the commit
    /// order the complete register check found for each valid level.
    #[arg(long, num_args = 0..=1, default_missing_value = "-", value_name = "FILE")]
    pub witness: Option<PathBuf>,

    /// Time budget of the cycle search; exhausting it makes the verdict
    /// unknown, never valid.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub cycle_search_timeout: Duration,

    /// Memory the linearizability search may take (e.g. 4G); default: half
    /// of what the machine leaves.
    #[arg(long, value_parser = engine::checks::memory::parse_size)]
    pub memory: Option<u64>,

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
        .map_err(|e| crate::history_input::reading(e, &history_path))?;
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
        Some(w) => Some(w),
        // Every name a run ever recorded parses (`register` is the
        // linearizable register, as `run` meant it).
        None => test
            .workload()
            .map(|name| name.parse::<WorkloadKind>())
            .transpose()
            .context("test.json: config.workload")?,
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
    let how = CheckHow {
        models,
        anomalies: args.anomalies.clone(),
        time_limit: args.cycle_search_timeout,
        memory: args.memory,
        from_run: true,
        explain: 1,
        ..CheckHow::new(workload)
    };
    let verdict = engine::checks::check(&history, &how)
        .with_context(|| format!("checking {}", history_path.display()))?;
    let errors = engine::checks::write(&run, &history, &verdict, keep);
    if let Some(e) = &errors.results {
        anyhow::bail!("writing results.json: {e}");
    }
    for e in &errors.reports {
        eprintln!("warning: {e}");
    }
    engine::check::print_verdict(&history, &verdict);
    if let Some(target) = &args.witness {
        let engines = verdict.elle.as_ref().map_or(&[][..], |e| &e.engines[..]);
        crate::check_cmd::write_witness(target, engines, crate::check_cmd::Format::Text)?;
    }
    // As the run settled it: no fault in effect, a loss a setting permits.
    let (valid, lines) = engine::no_fault::settle_record(&run, &test, verdict.valid);
    for l in lines {
        engine::say!("{l}");
    }
    engine::say!("results and reports written to {}", dir.display());
    Ok(valid.exit_code())
}
