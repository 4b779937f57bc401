//! The check table: which checker decides a history, as one entry per
//! family in [`CHECKS`] — the shape of `checker::analysis::ANALYSES` and
//! `db_adapters::catalog::DATABASES`. `run`, `check FILE`, `analyze RUN`
//! and (through its child runs) `soak` all go through [`check`], which
//! picks the entry, builds the one budget and applies the shared rules
//! once, and [`write`], the one writer of `results.json` and of each
//! checker's files in a run directory.
//!
//! Key decision: the table lives in the engine, not the checker, because
//! pairing a workload (`workloads::WorkloadKind`, the one vocabulary) with
//! its analysis is the engine's job (the checker knows no workloads crate).
//!
//! # Adding a checker
//! A file here with a unit struct implementing [`Check`] (`handles`,
//! `detect`, `describe`, `check` returning a [`Verdict`], no IO), one line
//! in [`CHECKS`]; `checks::tests` proves every workload has exactly one
//! entry. A new workload is a line in `workloads::WORKLOADS` first.

mod elle;
mod entry;
mod jepsen;
mod linear;
pub mod memory;

pub use elle::{CheckedHistory, check_history, elle_workload};
pub use entry::{Check, CheckHow, ElleParts, Verdict};
pub use jepsen::{checker_for, property};

use anyhow::Context as _;
use checker::Budget;
use checker::result::Valid;
use serde_json::json;
use store::{History, OpType};
use workloads::WorkloadKind;

/// Every check, the order `detect` tries them in (Jepsen's workloads and
/// linearizability are told apart by `f`; Elle's by micro-ops).
pub static CHECKS: &[&dyn Check] = &[&jepsen::Jepsen, &linear::Linear, &elle::Elle];

/// The one check that handles `w`.
///
/// # Errors
/// No entry handles it (a table test rules this out).
pub fn entry_for(w: WorkloadKind) -> anyhow::Result<&'static dyn Check> {
    CHECKS
        .iter()
        .copied()
        .find(|c| c.handles(w))
        .with_context(|| format!("no check handles workload {w}"))
}

/// The workload of `history`, by the first entry that recognises it.
pub fn detect(history: &History) -> Option<WorkloadKind> {
    CHECKS.iter().find_map(|c| c.detect(history))
}

/// What the check of `w` under `how` checks, in words (the run header).
pub fn describe(w: WorkloadKind, how: &CheckHow) -> String {
    entry_for(w).map_or_else(|e| e.to_string(), |c| c.describe(w, how))
}

/// Checks `history` as `how` says: picks the entry (the workload given,
/// else detected), builds the budget from `how.time_limit`, and applies
/// the shared rules — a run in which nothing committed is `unknown`, never
/// `valid`; a file without any client op is linearizable (`valid`, with a
/// warning), as Knossos says.
///
/// # Errors
/// The workload cannot be told, or the history does not have its shape.
pub fn check(history: &History, how: &CheckHow) -> anyhow::Result<Verdict> {
    let clients = (0..history.len()).any(|p| history.is_client(p));
    let w = match how.workload {
        Some(w) => w,
        // Nothing to tell the workload by: Knossos' histories of nemesis
        // ops only are register histories, vacuously linearizable.
        None if !clients => WorkloadKind::Register,
        None => detect(history).with_context(|| {
            format!(
                "cannot tell the workload of the history (its ops fit no workload, or \
                 several); pass --workload, one of: {}",
                WorkloadKind::names_help(false)
            )
        })?,
    };
    let deadline = std::time::Instant::now() + how.time_limit;
    let budget = Budget::until(Box::new(move || std::time::Instant::now() >= deadline));
    let mut v = entry_for(w)?.check(w, history, how, budget)?;
    settle(history, how, &mut v);
    annotate(&mut v);
    Ok(v)
}

/// The shared rules, applied once for every family.
fn settle(history: &History, how: &CheckHow, v: &mut Verdict) {
    let clients = (0..history.len()).any(|p| history.is_client(p));
    if !clients && !how.from_run && v.checker == "linearizability" {
        // Knossos: the empty history is linearizable. (Elle calls an empty
        // dependency graph unknown, Jepsen's checkers a function that never
        // succeeded: their verdicts stand.)
        v.valid = Valid::True;
        set_valid(v, "no client operation: nothing to check".to_string());
        v.warnings
            .push("the history holds no client operation: valid, vacuously".to_string());
        return;
    }
    let has_reason = v.json.get("reason").is_some();
    if v.valid == Valid::False || (v.valid == Valid::Unknown && has_reason) || committed(history) {
        return;
    }
    v.valid = Valid::Unknown;
    let reason = if v.elle.is_some() {
        "no transaction committed"
    } else {
        "no op completed ok"
    };
    set_valid(v, reason.to_string());
}

fn set_valid(v: &mut Verdict, reason: String) {
    if let Some(e) = &mut v.elle {
        // results.edn and the reports say what results.json says.
        e.result.valid = v.valid;
    }
    if let Some(map) = v.json.as_object_mut() {
        map.insert("valid?".into(), json!(v.valid));
        map.insert("reason".into(), json!(reason));
    }
    v.summary = reason;
}

/// Whether some client op completed `ok` with an effect (a transaction
/// with micro-ops, or any other op).
pub fn committed(history: &History) -> bool {
    (0..history.len()).any(|pos| {
        history.is_client(pos)
            && history.op_type(pos) == OpType::Ok
            && history.stored_txn(pos).is_none_or(|m| !m.is_empty())
    })
}

/// The keys every family's result map carries: `valid?`, `workload`,
/// `checker`, `checks`.
fn annotate(v: &mut Verdict) {
    if let Some(map) = v.json.as_object_mut() {
        map.insert("valid?".into(), json!(v.valid));
        map.insert("workload".into(), json!(v.workload.name()));
        map.insert("checker".into(), json!(v.checker));
        map.insert("checks".into(), json!(v.checks));
    }
}

/// The one verdict line, the same shape for every family:
/// `valid|INVALID|unknown: <workload> <what it checks> — <what was found>`.
pub fn verdict_line(v: &Verdict) -> String {
    format!(
        "{}: {} {} — {} ({:.2} s)",
        match v.valid {
            Valid::True => "valid",
            Valid::False => "INVALID",
            Valid::Unknown => "unknown",
        },
        v.workload,
        v.checks,
        v.summary,
        v.elapsed_s
    )
}

/// The `results.json` record of a checked run: the verdict's map, the
/// history's statistics, lost writes (transactions) and the timings.
pub fn run_results(history: &History, v: &Verdict) -> store::run::RunResults {
    let (mut results, misfit) = store::run::RunResults::from_value_lossless(v.json.clone());
    if let Some(e) = misfit {
        tracing::warn!(
            "results.json: the checker's map does not fit the typed record ({e}); kept whole"
        );
    }
    results.stats = Some(store::run::RunStats::of(history));
    if v.elle.is_some() {
        let lost = crate::report::lost_writes::find(history);
        if lost.count > 0 {
            results
                .extra
                .insert("lost-writes".to_string(), lost.to_json());
        }
    }
    results.checker_timings = v
        .timings
        .iter()
        .map(|(a, s)| store::run::CheckerTiming {
            analysis: (*a).to_string(),
            seconds: *s,
        })
        .chain(std::iter::once(store::run::CheckerTiming {
            analysis: "total".to_string(),
            seconds: v.elapsed_s,
        }))
        .collect();
    results
}

/// What [`write`] could not write (the verdict stands either way).
#[derive(Default)]
pub struct WriteErrors {
    /// `results.json` (a full disk).
    pub results: Option<String>,
    /// The checker's files, the timeline and plots.
    pub reports: Vec<String>,
}

/// Writes a checked run: `results.json`, the checker's files under
/// `<run>/<files_dir>/`, and the reports every workload gets
/// (`report::write_reports`: timeline, plots, and for Elle `results.edn`,
/// `elle/`, `repro.sql`; bank's totals plot).
pub fn write(
    run_dir: &store::run::RunDir,
    history: &History,
    v: &Verdict,
    keep: crate::report::Keep,
) -> WriteErrors {
    let mut errors = WriteErrors::default();
    if let Err(e) = run_results(history, v).save(&run_dir.results_path()) {
        errors.results = Some(format!("{e:#}"));
    }
    if !v.files.is_empty() {
        let dir = run_dir.path().join(v.files_dir);
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            v.files
                .iter()
                .try_for_each(|(name, text)| std::fs::write(dir.join(name), text))
        });
        if let Err(e) = written {
            errors.reports.push(format!("{}: {e}", dir.display()));
        }
    }
    let elle = v.elle.as_ref().map(|e| (&e.result, &e.counts));
    if let Err(e) = crate::report::write_reports(run_dir.path(), history, elle, keep) {
        errors.reports.push(format!("{e:#}"));
    }
    if let WorkloadKind::Jepsen(j) = v.workload
        && j.is_bank()
    {
        let extract = crate::report::spans::extract(history);
        if let Err(e) = crate::report::bank_plot::write(
            run_dir.path(),
            &checker::workloads::bank::totals(history),
            workloads::bank::TOTAL,
            1,
            &extract,
        ) {
            errors.reports.push(format!("bank plot: {e:#}"));
        }
    }
    errors
}

/// Writes the checker's files into `dir` (`check --directory`): Elle's
/// explanations and graphs, or the checker's own files.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_dir(dir: &std::path::Path, history: &History, v: &Verdict) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if let Some(e) = &v.elle {
        crate::report::elle::write(
            dir,
            &e.result,
            &e.counts,
            history,
            crate::report::elle::Limits::KEPT,
        )?;
    }
    for (name, text) in &v.files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
