//! The check-and-report step of a `register` run: the
//! linearizability checker (`checker::linear`) over the run's history, per
//! key; `results.json` with its result (`valid?`, `failures`, per failing
//! key the longest prefix and the op that cannot be placed), and under
//! `linear/` the explanation (`linear.txt`) and the per-key timelines
//! (`linear.html`).
//!
//! Key decision: as for transactions, a run where no op completed `ok` is
//! `unknown`, never `valid`; a failed cas is an observed compare failure
//! (the client reports `fail` only when `UPDATE … WHERE val = old` matched
//! no row).

use crate::check::CheckSpec;
use anyhow::Context as _;
use checker::linear::model::CasRegister;
use checker::linear::{LinearOptions, report};
use checker::result::Valid;
use store::OpType;

/// Checks the run's register history and writes the reports.
///
/// # Errors
/// The history or results could not be read or written, or the history
/// holds ops that are not register ops.
pub fn check_and_report(spec: &CheckSpec, run_dir: &store::run::RunDir) -> anyhow::Result<Valid> {
    crate::say!("checking the history for linearizability (per key) …");
    let (history, warnings) = store::format::load_history(&run_dir.history_path())
        .with_context(|| format!("reading back {}", run_dir.history_path().display()))?;
    for w in &warnings {
        tracing::warn!("history: {w}");
    }
    let deadline = std::time::Instant::now() + spec.time_limit;
    let budget = checker::Budget::until(Box::new(move || std::time::Instant::now() >= deadline));
    let started = std::time::Instant::now();
    let result = checker::linear::check_register(&history, &LinearOptions::default(), &budget)
        .context("checking the register history")?;
    let check_s = started.elapsed().as_secs_f64();
    let model = CasRegister::default();
    let mut results = store::run::RunResults::from_value(report::to_json(&model, &result))?;
    let ok = (0..history.len())
        .filter(|&p| history.is_client(p) && history.op_type(p) == OpType::Ok)
        .count();
    let mut valid = result.valid;
    if ok == 0 && valid == Valid::True {
        valid = Valid::Unknown;
        results.valid = store::run::Verdict::Unknown;
        results.reason = Some("no op completed ok".to_string());
    }
    crate::check::save_results(run_dir, &history, results)?;
    let dir = run_dir.path().join("linear");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("linear.txt"), report::render_text(&model, &result)))
        .and_then(|()| {
            std::fs::write(
                dir.join("linear.html"),
                report::render_html(&model, &result, "register: linearizability per key"),
            )
        });
    if let Err(e) = written {
        // Reports never change the verdict.
        tracing::warn!("linear reports: {e}");
    }
    for w in &result.warnings {
        crate::say!("note: {w}");
    }
    crate::say!(
        "checked {} register ops over {} keys in {check_s:.2} s ({} ok)",
        result.op_count(),
        result.keys.len(),
        ok
    );
    match valid {
        Valid::True => crate::say!("valid: every key is linearizable"),
        Valid::Unknown => {
            crate::say!("unknown: some key was not decided (time limit) or no op completed")
        }
        Valid::False => {
            crate::say!(
                "INVALID: {} of {} keys not linearizable (see linear/linear.txt, linear/linear.html)",
                result.failures().count(),
                result.keys.len()
            );
            if let Some(k) = result.failures().next() {
                crate::say_raw!("{}", report::render_key_text(&model, k));
            }
        }
    }
    crate::say!("run directory: {}", run_dir.path().display());
    Ok(valid)
}
