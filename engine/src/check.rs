//! The check-and-report step of a run: read the history back, check it
//! against the expected model, settle the "no commit → unknown" policy,
//! write `results.json` and the reports, print the verdict.
//!
//! Key decision: one check-and-write path. [`check_history`] is the one
//! place that runs the checker and cuts the result's anomaly lists
//! (`report::caps`) — `run`, `analyze` and `check` all call it — and
//! [`write_results`] the one writer of `results.json` (a
//! [`store::run::RunResults`] with the run's statistics and the checker's
//! timings) and of the reports (`report::write_reports`, which owns the
//! one writer of `elle/`). `settle_no_commit` is the one place of the
//! "no commit → unknown" policy, so a stored run re-checked gives the same
//! verdict it was given; what is printed is one explanation per type.

use crate::report::Keep;
use crate::report::caps::AnomalyCounts;
use anyhow::Context as _;
use checker::model::ConsistencyModel;
use checker::result::Valid;
use serde_json::json;
use std::time::Duration;
use store::{MicroOp, OpType};
use workloads::WorkloadKind;

/// ARCHITECTURE.md: a run in which no transaction committed is `unknown`,
/// never `valid`. Settles that on `result` itself (so `results.edn` and the
/// reports agree with `results.json`) and returns the `results.json` value,
/// with a `reason` when it applied.
pub fn settle_no_commit(
    history: &store::History,
    result: &mut checker::CheckResult,
) -> serde_json::Value {
    let committed = (0..history.len()).any(|pos| {
        history.is_client(pos)
            && history.op_type(pos) == OpType::Ok
            && history.stored_txn(pos).is_some_and(|m| !m.is_empty())
    });
    let settle = !committed && result.valid == Valid::True;
    if settle {
        result.valid = Valid::Unknown;
    }
    let mut json = result.to_json();
    if settle && let Some(map) = json.as_object_mut() {
        // The checker's own map says what `result` says now; the reason is
        // the policy's.
        map.insert("reason".into(), json!("no transaction committed"));
    }
    json
}

/// What one check of a history found, its anomaly lists cut to the cap.
pub struct CheckedHistory {
    /// The verdict and the anomalies kept.
    pub result: checker::CheckResult,
    /// How many of each type were found and left out.
    pub counts: AnomalyCounts,
    /// Who decided each level (complete checks).
    pub engines: Vec<checker::engines::LevelReport>,
    /// The analyses that ran.
    pub analyses: Vec<&'static str>,
    /// Wall time of each analysis, seconds.
    pub timings: Vec<(&'static str, f64)>,
    /// Wall time of the whole check, seconds.
    pub elapsed_s: f64,
}

/// Checks `history` — the one call of the checker that `run`, `analyze`
/// and `check` share — and cuts each anomaly type to
/// `caps::MAX_ANOMALIES_PER_TYPE` unless `cap` is false (`check
/// --all-anomalies`), counting what it left out.
pub fn check_history(
    history: &store::History,
    opts: &checker::CheckOptions,
    cap: bool,
) -> CheckedHistory {
    let started = std::time::Instant::now();
    let checker::Checked {
        mut result,
        engines,
        analyses,
        timings,
    } = checker::check_with_engines(history, opts);
    let elapsed_s = started.elapsed().as_secs_f64();
    let counts = if cap {
        crate::report::caps::cap(
            &mut result,
            Some(crate::report::caps::MAX_ANOMALIES_PER_TYPE),
        )
    } else {
        AnomalyCounts::of(&result)
    };
    CheckedHistory {
        result,
        counts,
        engines,
        analyses,
        timings,
        elapsed_s,
    }
}

/// The `results.json` record of a checked run: the checker's map (the
/// no-commit policy settled, the caps' counts, the engines), the history's
/// statistics and the checker's timings.
pub fn run_results(
    history: &store::History,
    checked: &mut CheckedHistory,
) -> store::run::RunResults {
    let mut json = settle_no_commit(history, &mut checked.result);
    checked.counts.annotate_json(&mut json);
    if !checked.engines.is_empty() {
        // Which engine decided (only when the complete register check was
        // asked for, so other runs' results keep Elle's map exactly).
        json["engines"] = checker::engines::to_json(&checked.engines, false);
    }
    let (mut results, misfit) = store::run::RunResults::from_value_lossless(json);
    if let Some(e) = misfit {
        tracing::warn!(
            "results.json: the checker's map does not fit the typed record ({e}); kept whole"
        );
    }
    results.stats = Some(store::run::RunStats::of(history));
    let lost = crate::report::lost_writes::find(history);
    if lost.count > 0 {
        results
            .extra
            .insert("lost-writes".to_string(), lost.to_json());
    }
    results.checker_timings = checked
        .timings
        .iter()
        .map(|(a, s)| store::run::CheckerTiming {
            analysis: (*a).to_string(),
            seconds: *s,
        })
        .chain(std::iter::once(store::run::CheckerTiming {
            analysis: "total".to_string(),
            seconds: checked.elapsed_s,
        }))
        .collect();
    results
}

/// Writes a checked run's `results.json` ([`run_results`]); returns the
/// record and whether it could be written (a full disk is the caller's
/// to report: the verdict stands).
pub fn write_results(
    history: &store::History,
    checked: &mut CheckedHistory,
    run_dir: &store::run::RunDir,
) -> (store::run::RunResults, Result<(), store::run::RecordError>) {
    let results = run_results(history, checked);
    let written = results.save(&run_dir.results_path());
    (results, written)
}

/// Writes a workload checker's own result map (linearizability, Jepsen
/// workloads) as the run's `results.json`, with the history's statistics.
///
/// # Errors
/// The file could not be written.
pub(crate) fn save_results(
    run_dir: &store::run::RunDir,
    history: &store::History,
    mut results: store::run::RunResults,
) -> anyhow::Result<()> {
    results.stats = Some(store::run::RunStats::of(history));
    Ok(results.save(&run_dir.results_path())?)
}

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

/// Reads back the run's history, checks it, writes `results.json` and the
/// reports, prints the verdict with the first explanation of each anomaly.
///
/// # Errors
/// The history could not be read back.
pub fn check_and_report(spec: &CheckSpec, run_dir: &store::run::RunDir) -> anyhow::Result<Checked> {
    // The linearizability and Jepsen-workload checks write their own
    // results; an error writing them is an error of the run.
    if spec.workload == WorkloadKind::Register {
        return crate::linear_check::check_and_report(spec, run_dir).map(|valid| Checked {
            valid,
            results_error: None,
        });
    }
    if let WorkloadKind::Jepsen(w) = spec.workload {
        return crate::jepsen::check_and_report(spec, w, run_dir).map(|valid| Checked {
            valid,
            results_error: None,
        });
    }
    let keep = spec.keep;
    crate::say!("checking the history against {} …", spec.expected.name());
    let (history, warnings) = store::format::load_history(&run_dir.history_path())
        .with_context(|| format!("reading back {}", run_dir.history_path().display()))?;
    for w in &warnings {
        tracing::warn!("history: {w}");
    }
    let txn_counts = count_types(&history);
    let committed = txn_counts.committed;
    let deadline = std::time::Instant::now() + spec.time_limit;
    let opts = checker::CheckOptions {
        workload: checker_workload(spec.workload),
        models: vec![spec.expected],
        anomalies: Vec::new(),
        wfr_keys: false,
        sequential_keys: false,
        linearizable_keys: false,
        budget: checker::budget::Budget::until(Box::new(move || {
            std::time::Instant::now() >= deadline
        })),
        complete: true,
    };
    let mut checked = check_history(&history, &opts, true);
    let check_s = checked.elapsed_s;
    tracing::info!("checked {} ops in {check_s:.2} s", history.len());
    let (_, written) = write_results(&history, &mut checked, run_dir);
    let results_error = written.err().map(|e| format!("{e:#}"));
    let CheckedHistory {
        result,
        counts,
        engines,
        ..
    } = checked;
    let valid = result.valid;
    // Reports never change the verdict: a failure is a warning.
    if let Err(e) =
        crate::report::write_reports(run_dir.path(), &history, Some((&result, &counts)), keep)
    {
        // Once on stderr: the log's warnings go to stderr too.
        tracing::info!("warning: reports: {e:#}");
        eprintln!("warning: {e:#}");
    }
    let Counts {
        invoked,
        ok: ok_all,
        fail,
        info,
        writes: writes_ok,
        ..
    } = txn_counts;
    let pending = invoked.saturating_sub(ok_all + fail + info);
    crate::say!(
        "checked {} transactions against {} in {check_s:.1} s: {} ok ({} writes committed), \
         {} fail (did not take effect), {} info (outcome unknown){}",
        thousands(invoked as u64),
        spec.expected.name(),
        thousands(ok_all as u64),
        thousands(writes_ok as u64),
        thousands(fail as u64),
        thousands(info as u64),
        if pending > 0 {
            format!(", {} never completed", thousands(pending as u64))
        } else {
            String::new()
        }
    );
    for r in &engines {
        crate::say!("decided by: {}", r.line());
    }
    let lost = crate::report::lost_writes::find(&history);
    if lost.count > 0 {
        crate::say!("{}", lost.render_text(10).trim_end());
    }
    match valid {
        Valid::True => crate::say!(
            "valid: no anomaly forbidden by {} was found",
            spec.expected.name()
        ),
        Valid::False => {
            let names: Vec<&str> = result.anomaly_types.iter().map(|a| a.name()).collect();
            crate::say!(
                "INVALID: {} (expected {}; not {})",
                names.join(", "),
                spec.expected.name(),
                result
                    .not
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (t, cases) in &result.anomalies {
                if let Some(first) = cases.first() {
                    let found = counts.found.get(t).copied().unwrap_or(cases.len());
                    crate::say!("\n{} ({} found), e.g.:", t.name(), thousands(found as u64));
                    crate::say!("{}", checker::explain::render_text(first, &history));
                }
            }
        }
        Valid::Unknown => {
            if committed == 0 {
                crate::say!("unknown: no transaction committed, so nothing could be checked");
            } else {
                let names: Vec<&str> = result.anomaly_types.iter().map(|a| a.name()).collect();
                crate::say!(
                    "unknown: the checker could not decide ({})",
                    names.join(", ")
                );
            }
        }
    }
    crate::say!("run directory: {}", run_dir.path().display());
    Ok(Checked {
        valid,
        results_error,
    })
}

fn checker_workload(w: WorkloadKind) -> checker::analysis::Workload {
    match w {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => {
            checker::analysis::Workload::ListAppend
        }
        WorkloadKind::RwRegister | WorkloadKind::Register | WorkloadKind::Jepsen(_) => {
            checker::analysis::Workload::RwRegister
        }
    }
}

/// `n` with a comma every three digits.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn history(jsonl: &str) -> store::History {
        let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
        store::History::new(read.ops).unwrap()
    }

    #[test]
    fn a_history_without_commits_is_unknown_in_every_result_file() {
        let failed = history(concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"fail\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        ));
        let committed = history(concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}\n",
        ));
        let opts = checker::CheckOptions::new(checker::analysis::Workload::ListAppend);
        // With a commit, the checker's verdict stands.
        let mut result = checker::check(&committed, &opts);
        assert_eq!(result.valid, Valid::True);
        let json = settle_no_commit(&committed, &mut result);
        assert_eq!(json["valid?"], true);
        assert!(json.get("reason").is_none());
        // The same verdict over a history without commits becomes unknown,
        // in the result itself (results.edn, reports) and in results.json.
        let json = settle_no_commit(&failed, &mut result);
        assert_eq!(result.valid, Valid::Unknown);
        assert_eq!(json["valid?"], "unknown");
        assert_eq!(json["reason"], "no transaction committed");
        assert!(
            result.to_edn().contains(":valid? :unknown"),
            "{}",
            result.to_edn()
        );
        // The checker alone already says unknown there (no dependency graph).
        assert_eq!(checker::check(&failed, &opts).valid, Valid::Unknown);
    }
}
