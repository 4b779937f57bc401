//! The check-and-report step of Jepsen's workloads (bank, set, set-full,
//! long-fork, monotonic, sequential, counter): the workload's checker
//! (`checker::workloads`) instead of Elle's, `results.json` from its
//! report, the timeline and plots, and for bank the totals plot.
//!
//! Key decision: the expected model tunes the checker where Jepsen has a
//! switch — set-full's stale elements are violations when the model is
//! real-time (strict/strong or linearizable), as Jepsen's
//! `:linearizable?` — and is otherwise not consulted: these checkers state
//! one property each.

use crate::check::CheckSpec;
use anyhow::Context as _;
use checker::model::ConsistencyModel;
use checker::result::Valid;
use checker::workloads::{Checker, Report, bank, set_full};
use workloads::JepsenWorkload;

/// The checker of workload `w` when `expected` should hold.
pub fn checker_for(w: JepsenWorkload, expected: ConsistencyModel) -> Checker {
    match w {
        JepsenWorkload::Bank | JepsenWorkload::BankMultitable | JepsenWorkload::BankInsert => {
            Checker::Bank(bank::Options {
                accounts: workloads::bank::ACCOUNTS,
                total: workloads::bank::TOTAL,
                negative_allowed: false,
                inserts: w == JepsenWorkload::BankInsert,
            })
        }
        JepsenWorkload::Set => Checker::Set,
        JepsenWorkload::SetFull => Checker::SetFull(set_full::Options {
            linearizable: realtime(expected),
        }),
        JepsenWorkload::LongFork => Checker::LongFork,
        JepsenWorkload::Monotonic => Checker::Monotonic,
        JepsenWorkload::Sequential => Checker::Sequential,
        JepsenWorkload::Counter => Checker::Counter,
    }
}

/// Whether `m` orders operations in real time.
fn realtime(m: ConsistencyModel) -> bool {
    let n = m.name();
    n.starts_with("strict") || n.starts_with("strong") || n == "linearizable"
}

/// Prints `report`'s verdict and up to three explanations of each kind.
pub fn print_report(report: &Report) {
    match report.valid {
        Valid::True => crate::say!("valid: {} found no violation", report.workload),
        Valid::False => crate::say!("INVALID: {}", report.kinds().join(", ")),
        Valid::Unknown => crate::say!(
            "unknown: {}",
            report
                .reason
                .as_deref()
                .unwrap_or("the checker could not decide")
        ),
    }
    for kind in report.kinds() {
        let n = report.of_kind(kind).count();
        crate::say!("\n{kind} ({n} found), e.g.:");
        for f in report.of_kind(kind).take(3) {
            crate::say!("  {}", f.explanation);
        }
    }
}

/// Reads back the run's history, runs workload `w`'s checker, writes
/// `results.json` and the reports, prints the verdict.
///
/// # Errors
/// The history or results could not be read or written.
pub fn check_and_report(
    spec: &CheckSpec,
    w: JepsenWorkload,
    run_dir: &store::run::RunDir,
) -> anyhow::Result<Valid> {
    crate::say!("checking the {w} history …");
    let (history, warnings) = store::format::load_history(&run_dir.history_path())
        .with_context(|| format!("reading back {}", run_dir.history_path().display()))?;
    for warning in &warnings {
        tracing::warn!("history: {warning}");
    }
    let checked_at = std::time::Instant::now();
    let report = checker::workloads::check(&history, &checker_for(w, spec.expected));
    let check_s = checked_at.elapsed().as_secs_f64();
    crate::check::save_results(
        run_dir,
        &history,
        store::run::RunResults::from_value(report.to_json())?,
    )?;
    if let Err(e) = crate::report::write_reports(run_dir.path(), &history, None, spec.keep) {
        tracing::warn!("reports: {e:#}");
        eprintln!("warning: {e:#}");
    }
    if w.is_bank() {
        let extract = crate::report::spans::extract(&history);
        if let Err(e) = crate::report::bank_plot::write(
            run_dir.path(),
            &bank::totals(&history),
            workloads::bank::TOTAL,
            1,
            &extract,
        ) {
            eprintln!("warning: bank plot: {e:#}");
        }
    }
    let stats = checker::workloads::op_stats(&history);
    let line: Vec<String> = stats
        .iter()
        .map(|(f, [ok, fail, info])| format!("{f}: {ok} ok, {fail} fail, {info} info"))
        .collect();
    crate::say!(
        "checked {} ops in {check_s:.1} s ({})",
        history.len(),
        line.join("; ")
    );
    print_report(&report);
    crate::say!("run directory: {}", run_dir.path().display());
    Ok(report.valid)
}
