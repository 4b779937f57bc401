//! The Jepsen-workload entry (bank, bank-multitable, bank-insert, set,
//! set-full, long-fork, monotonic, sequential, counter): each workload's
//! own checker (`checker::workloads`), which states one property.
//!
//! Key decision: the expected model tunes the checker where Jepsen has a
//! switch — set-full's stale elements are violations when the model is
//! real-time (strict/strong or linearizable), as Jepsen's
//! `:linearizable?` — and is otherwise not consulted.

use super::entry::{Check, CheckHow, Verdict};
use checker::Budget;
use checker::model::ConsistencyModel;
use checker::result::Valid;
use checker::workloads::{Checker, bank, set_full};
use store::History;
use workloads::{JepsenWorkload, WorkloadKind};

/// Jepsen's workload checkers.
pub struct Jepsen;

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

/// What workload `w`'s checker checks, in words.
pub fn property(w: JepsenWorkload, expected: ConsistencyModel) -> &'static str {
    match w {
        JepsenWorkload::Bank | JepsenWorkload::BankMultitable => {
            "checked for a conserved total and no negative balance"
        }
        JepsenWorkload::BankInsert => {
            "checked for a conserved total over inserts and deletes and no negative balance"
        }
        JepsenWorkload::Set => "checked that every acknowledged add is in the final read",
        JepsenWorkload::SetFull if realtime(expected) => {
            "checked that every acknowledged add is read, never lost, never stale (real time)"
        }
        JepsenWorkload::SetFull => "checked that every acknowledged add is read and never lost",
        JepsenWorkload::LongFork => "checked that no two reads see inserts in incompatible orders",
        JepsenWorkload::Monotonic => "checked that reads of each key never go backwards",
        JepsenWorkload::Sequential => {
            "checked that a read seeing a later subkey sees the earlier ones"
        }
        JepsenWorkload::Counter => {
            "checked that every read lies between acknowledged and attempted adds"
        }
    }
}

impl Check for Jepsen {
    fn name(&self) -> &'static str {
        "jepsen"
    }

    fn handles(&self, w: WorkloadKind) -> bool {
        matches!(w, WorkloadKind::Jepsen(_))
    }

    fn detect(&self, history: &History) -> Option<WorkloadKind> {
        checker::workloads::detect(history)
            .and_then(JepsenWorkload::parse)
            .map(WorkloadKind::Jepsen)
    }

    fn describe(&self, w: WorkloadKind, how: &CheckHow) -> String {
        match w {
            WorkloadKind::Jepsen(j) => property(j, how.first_model()).to_string(),
            other => format!("{other}: not a Jepsen workload"),
        }
    }

    fn check(
        &self,
        w: WorkloadKind,
        history: &History,
        how: &CheckHow,
        _budget: Budget,
    ) -> anyhow::Result<Verdict> {
        let WorkloadKind::Jepsen(j) = w else {
            anyhow::bail!("the Jepsen check was given a {w} history");
        };
        let started = std::time::Instant::now();
        let report = checker::workloads::check(history, &checker_for(j, how.first_model()));
        let elapsed_s = started.elapsed().as_secs_f64();
        let summary = match report.valid {
            Valid::True => "no violation found".to_string(),
            Valid::False => report
                .kinds()
                .iter()
                .map(|k| format!("{k} ({} found)", report.of_kind(k).count()))
                .collect::<Vec<_>>()
                .join(", "),
            Valid::Unknown => report
                .reason
                .clone()
                .unwrap_or_else(|| "the checker could not decide".to_string()),
        };
        let limit = if how.all { usize::MAX } else { how.explain };
        let mut details = String::new();
        for kind in report.kinds() {
            let n = report.of_kind(kind).count();
            details += &format!("\n{kind} ({n} found), e.g.:\n");
            for f in report.of_kind(kind).take(limit) {
                details += &format!("  {}\n", f.explanation);
            }
        }
        Ok(Verdict {
            valid: report.valid,
            workload: w,
            checker: self.name(),
            checks: self.describe(w, how),
            summary,
            json: report.to_json(),
            details,
            warnings: Vec::new(),
            files: Vec::new(),
            files_dir: "jepsen",
            elle: None,
            timings: vec![(report.workload, elapsed_s)],
            elapsed_s,
        })
    }
}
