//! The Elle entry: list-append, predicate (list-append with range reads)
//! and rw-register transactions, checked against consistency models by
//! `checker::check` (dependency graph, cycles, the complete checks), the
//! anomaly lists cut to `report::caps`.

use super::entry::{Check, CheckHow, ElleParts, Verdict};
use crate::console::thousands;
use crate::report::caps::AnomalyCounts;
use checker::result::Valid;
use checker::{Budget, CheckOptions};
use store::History;
use workloads::WorkloadKind;

/// Elle's check of transactional histories.
pub struct Elle;

/// The checker's workload (its inference rules) of `w`.
pub fn elle_workload(w: WorkloadKind) -> checker::Workload {
    match w {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => checker::Workload::ListAppend,
        _ => checker::Workload::RwRegister,
    }
}

impl Check for Elle {
    fn name(&self) -> &'static str {
        "elle"
    }

    fn handles(&self, w: WorkloadKind) -> bool {
        matches!(
            w,
            WorkloadKind::ListAppend | WorkloadKind::RwRegister | WorkloadKind::Predicate
        )
    }

    fn detect(&self, history: &History) -> Option<WorkloadKind> {
        checker::Workload::detect(history).map(|w| match w {
            checker::Workload::ListAppend => WorkloadKind::ListAppend,
            checker::Workload::RwRegister => WorkloadKind::RwRegister,
        })
    }

    fn describe(&self, _w: WorkloadKind, how: &CheckHow) -> String {
        let models: Vec<&str> = how.models_or_default().iter().map(|m| m.name()).collect();
        format!(
            "checked as {} (Elle: dependency cycles and the complete checks)",
            models.join(", ")
        )
    }

    fn check(
        &self,
        w: WorkloadKind,
        history: &History,
        how: &CheckHow,
        budget: Budget,
    ) -> anyhow::Result<Verdict> {
        let opts = CheckOptions {
            workload: elle_workload(w),
            models: how.models_or_default(),
            anomalies: how.anomalies.clone(),
            wfr_keys: how.wfr_keys,
            sequential_keys: how.sequential_keys,
            linearizable_keys: how.linearizable_keys,
            budget,
            complete: true,
        };
        let CheckedHistory {
            mut result,
            counts,
            engines,
            analyses,
            timings,
            elapsed_s,
            census,
        } = check_history(history, &opts, !how.all);
        if let Some(note) = how.causal_note() {
            result.warnings.push(note);
        }
        let mut json = result.to_json();
        counts.annotate_json(&mut json);
        if !engines.is_empty() {
            // Which engine decided (only when the complete register check
            // ran, so other runs' results keep Elle's map exactly).
            json["engines"] = checker::engines::to_json(&engines, false);
        }
        let names: Vec<String> = result
            .anomaly_types
            .iter()
            .map(|t| {
                let n = counts
                    .found
                    .get(t)
                    .copied()
                    .or_else(|| result.anomalies.get(t).map(Vec::len));
                match n {
                    Some(n) if n > 0 => format!("{} ({} found)", t.name(), thousands(n as u64)),
                    _ => t.name().to_string(),
                }
            })
            .collect();
        let models: Vec<&str> = opts.models.iter().map(|m| m.name()).collect();
        let summary = match result.valid {
            Valid::True => format!("no anomaly forbidden by {} was found", models.join(", ")),
            Valid::False => format!(
                "{}; not {}",
                names.join(", "),
                result
                    .not
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Valid::Unknown if names.is_empty() => "the checker could not decide".to_string(),
            Valid::Unknown => format!("the checker could not decide ({})", names.join(", ")),
        };
        let details = details(&result, &counts, (!how.all).then_some(how.explain), history);
        let warnings = result.warnings.clone();
        Ok(Verdict {
            valid: result.valid,
            workload: w,
            checker: self.name(),
            checks: self.describe(w, how),
            summary,
            json,
            details,
            warnings,
            files: Vec::new(),
            files_dir: "elle",
            elle: Some(ElleParts {
                result,
                counts,
                engines,
                analyses,
                census,
            }),
            timings,
            elapsed_s,
        })
    }
}

/// The explanations: the first `per_type` of each type (all when `None`),
/// saying how many were found and how to see the rest.
fn details(
    result: &checker::CheckResult,
    counts: &crate::report::caps::AnomalyCounts,
    per_type: Option<usize>,
    history: &History,
) -> String {
    let mut out = String::new();
    for (t, cases) in &result.anomalies {
        let found = counts.found.get(t).copied().unwrap_or(0).max(cases.len());
        let shown = per_type.map_or(cases.len(), |n| n.min(cases.len()));
        out += "\n";
        out += &crate::report::elle::type_text(*t, &cases[..shown], history);
        if found > shown {
            out += &format!(
                "… {} of {} {t} anomalies not shown: --all-anomalies prints every one, \
                 --directory DIR writes {}\n",
                found - shown,
                found,
                match counts.kept_per_type {
                    Some(n) => format!("the first {n} of each type"),
                    None => "every one".to_string(),
                }
            );
        }
    }
    out
}

/// A check against models that proscribe no anomaly of a transaction
/// history (Elle's single-object models: linearizable, sequential, PRAM,
/// monotonic reads, …) and no `--anomalies` checked nothing: its verdict
/// is never `valid`, and a warning says why (Elle would say `valid`).
fn nothing_proscribed(opts: &checker::CheckOptions, result: &mut checker::CheckResult) {
    // The set the check itself asked for (remembered by the checker), so
    // this costs no second closure over the lattice.
    if !checker::model::prohibited_anomaly_types(&opts.models, &opts.anomalies).is_empty() {
        return;
    }
    let names: Vec<&str> = opts.models.iter().map(|m| m.name()).collect();
    result.valid = result.valid.combine(Valid::Unknown);
    result.warnings.push(format!(
        "{} proscribe(s) no anomaly of a transaction history (single-object models in \
         Elle's lattice), so nothing was checked and the verdict cannot be valid; ask for a \
         transactional model (e.g. strict-serializable, snapshot-isolation, causal-cerone, \
         read-committed) or name anomalies with --anomalies",
        names.join(", ")
    ));
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
    /// The transactions checked by outcome, and their keys.
    pub census: checker::txn::Census,
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
    let per_type = cap.then_some(crate::report::caps::MAX_ANOMALIES_PER_TYPE);
    // The checker keeps no more than the cap of each type in the first
    // place (a million lost updates are counted, never held).
    let checker::Checked {
        mut result,
        omitted,
        engines,
        analyses,
        timings,
        census,
    } = checker::check_capped(history, opts, per_type);
    let elapsed_s = started.elapsed().as_secs_f64();
    nothing_proscribed(opts, &mut result);
    let mut counts = crate::report::caps::cap(&mut result, per_type);
    for (t, n) in omitted {
        *counts.found.entry(t).or_default() += n;
    }
    CheckedHistory {
        result,
        counts,
        engines,
        analyses,
        timings,
        elapsed_s,
        census,
    }
}
