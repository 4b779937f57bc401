//! The check-and-report step of a run: read the history back, check it
//! through the check table (`crate::checks`), write `results.json` and the
//! reports, print the verdict.
//!
//! Key decision: one check-and-write path. [`check_history`] is the one
//! place that runs Elle's checker and cuts the result's anomaly lists
//! (`report::caps`); which checker decides a history, the budget, the
//! "no commit → unknown" rule and the one writer of `results.json` are
//! `crate::checks`' ([`crate::checks::check`], [`crate::checks::write`]),
//! shared by `run`, `analyze` and `check`, so a stored run re-checked
//! gives the verdict and `results.json` it was given.

use crate::checks::{CheckHow, Verdict};
use crate::report::Keep;
use anyhow::Context as _;
use checker::model::ConsistencyModel;
use checker::result::Valid;
use std::time::Duration;
use store::{MicroOp, OpType};
use workloads::WorkloadKind;

/// What to check a run's history against.
pub struct CheckSpec {
    /// The workload the history came from.
    pub workload: WorkloadKind,
    /// The model it must satisfy.
    pub expected: ConsistencyModel,
    /// Time the cycle search may take.
    pub time_limit: Duration,
    /// What the reports keep.
    pub keep: Keep,
}

/// What [`check_and_report`] found and whether it could record it.
pub struct Checked {
    /// The verdict.
    pub valid: Valid,
    /// Why `results.json` could not be written (a full disk), if so: the
    /// verdict is printed all the same.
    pub results_error: Option<String>,
}

impl CheckSpec {
    /// How the run's history is checked: the plan's workload and model,
    /// the run's time limit, harness's own reading of failed ops.
    pub fn how(&self) -> CheckHow {
        CheckHow {
            models: vec![self.expected],
            time_limit: self.time_limit,
            from_run: true,
            explain: 1,
            ..CheckHow::new(Some(self.workload))
        }
    }
}

/// Reads back the run's history, checks it, writes `results.json` and the
/// reports, prints the verdict with the first explanation of each anomaly.
///
/// # Errors
/// The history could not be read back, or does not have the workload's
/// shape.
pub fn check_and_report(spec: &CheckSpec, run_dir: &store::run::RunDir) -> anyhow::Result<Checked> {
    let how = spec.how();
    crate::say!(
        "checking the history: {} {} …",
        spec.workload,
        crate::checks::describe(spec.workload, &how)
    );
    let (history, warnings) = store::format::load_history(&run_dir.history_path())
        .with_context(|| format!("cannot read back {}", run_dir.history_path().display()))?;
    for w in &warnings {
        tracing::warn!("history: {w}");
    }
    let verdict = crate::checks::check(&history, &how)?;
    tracing::info!(
        "checked {} ops in {:.2} s",
        history.len(),
        verdict.elapsed_s
    );
    let errors = crate::checks::write(run_dir, &history, &verdict, spec.keep);
    for e in &errors.reports {
        // Reports never change the verdict: a failure is a warning (once
        // on stderr: the log's warnings go to stderr too).
        tracing::info!("warning: reports: {e}");
        eprintln!("warning: {e}");
    }
    print_verdict(&history, &verdict);
    crate::say!("run directory: {}", run_dir.path().display());
    Ok(Checked {
        valid: verdict.valid,
        results_error: errors.results,
    })
}

/// Prints a checked run's verdict, the same shape for every workload: the
/// client ops by outcome, what decided, lost writes, the explanations,
/// then the one verdict line (`checks::verdict_line`).
pub fn print_verdict(history: &store::History, v: &Verdict) {
    let c = count_types(history);
    let pending = c.invoked.saturating_sub(c.ok + c.fail + c.info);
    crate::say!(
        "checked {} client ops in {:.1} s: {} ok{}, {} fail (did not take effect), {} info \
         (outcome unknown){}",
        thousands(c.invoked as u64),
        v.elapsed_s,
        thousands(c.ok as u64),
        if c.writes > 0 {
            format!(" ({} writes committed)", thousands(c.writes as u64))
        } else {
            String::new()
        },
        thousands(c.fail as u64),
        thousands(c.info as u64),
        if pending > 0 {
            format!(", {} never completed", thousands(pending as u64))
        } else {
            String::new()
        }
    );
    for w in &v.warnings {
        crate::say!("note: {w}");
    }
    if let Some(e) = &v.elle {
        for r in &e.engines {
            crate::say!("decided by: {}", r.line());
        }
        let lost = crate::report::lost_writes::find(history);
        if lost.count > 0 {
            crate::say!("{}", lost.render_text(10).trim_end());
        }
    }
    if !v.details.trim().is_empty() {
        crate::say_raw!("{}\n", v.details.trim_end());
    }
    crate::say!("{}", crate::checks::verdict_line(v));
}

use crate::console::thousands;

fn count_types(history: &store::History) -> Counts {
    let mut c = Counts::default();
    for pos in (0..history.len()).filter(|&pos| history.is_client(pos)) {
        match history.op_type(pos) {
            OpType::Invoke => c.invoked += 1,
            OpType::Fail => c.fail += 1,
            OpType::Info => c.info += 1,
            OpType::Ok => {
                c.ok += 1;
                if let Some(m) = history.stored_txn(pos) {
                    c.committed += usize::from(!m.is_empty());
                    c.writes += m.iter().filter(|m| !matches!(m, MicroOp::Read(..))).count();
                }
            }
        }
    }
    c
}

/// Client transactions of a history by outcome, counted in one pass.
#[derive(Default)]
struct Counts {
    invoked: usize,
    ok: usize,
    fail: usize,
    info: usize,
    /// `ok` transactions with at least one micro-op.
    committed: usize,
    /// Write and append micro-ops of `ok` transactions.
    writes: usize,
}
