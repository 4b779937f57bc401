//! rw-register: Elle's inference sees only the version orders that reads
//! give away; for the serializable and snapshot-isolation models asked for
//! (`sat::Level::for_models`), decide them exactly with `crate::sat` and
//! add its cycle. Skipped for a level when an earlier analysis already found
//! a cycle the level proscribes (the verdict is decided; the SAT cycle would
//! repeat it). A `valid` stands only once its witness replays
//! (`sat::replay`); a witness that does not is a bug, reported as a warning,
//! and the level is `unknown`. Out of budget: a warning, and the level is
//! `unknown` (the verdict too: `crate::check_with_engines` folds every
//! level's outcome in, `engines::LevelReport::outcome`).

use super::{Analysis, AnalyzeOptions, Context, Found, Workload};
use crate::engines::{LevelReport, Outcome};
use crate::model;
use crate::sat::{Level, SatOutcome, check_register, replay};

/// `sat`: exact serializability and snapshot isolation for rw-register.
pub struct Sat;

impl Analysis for Sat {
    fn name(&self) -> &'static str {
        "sat"
    }

    /// rw-register with the complete check on, when a model asked for
    /// implies a serializable or snapshot-isolation level.
    fn needed(&self, opts: &AnalyzeOptions<'_>) -> bool {
        opts.workload == Workload::RwRegister
            && opts.complete
            && !Level::for_models(opts.models).is_empty()
    }

    /// Skips a level that the cycles found before it already decide.
    fn reads_earlier_findings(&self) -> bool {
        true
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let timed_out = out
            .anomalies
            .contains_key(&crate::anomaly::AnomalyType::CycleSearchTimeout);
        for level in Level::for_models(cx.opts.models) {
            let proscribed = model::anomalies_prohibited_by([level.model()]);
            let decided = out
                .anomalies
                .keys()
                .any(|a| a.is_cycle() && proscribed.contains(a));
            let inference = if decided {
                Outcome::Invalid
            } else if timed_out {
                Outcome::Unknown("cycle search ran out of budget".to_string())
            } else {
                Outcome::Valid
            };
            let mut report = LevelReport {
                model: level.model(),
                inference,
                complete: Outcome::NotRun("inference already found a forbidden cycle".to_string()),
                witness: None,
            };
            if !decided {
                match check_register(cx.txns, cx.history, level, cx.opts.budget) {
                    SatOutcome::Valid { witness, starts } => {
                        // Never `valid` on a witness that does not replay.
                        match replay(cx.txns, cx.history, level, &witness, &starts) {
                            Ok(()) => {
                                report.complete = Outcome::Valid;
                                report.witness = Some(witness);
                            }
                            Err(defect) => {
                                let reason = format!(
                                    "the complete {} check's witness failed its replay ({defect}): \
                                     a bug in the checker, please report it",
                                    level.model().name()
                                );
                                out.warnings
                                    .push(format!("{reason}; the verdict is unknown"));
                                report.complete = Outcome::Unknown(reason);
                            }
                        }
                    }
                    SatOutcome::Invalid { anomalies } => {
                        report.complete = Outcome::Invalid;
                        for a in anomalies {
                            out.push(a);
                        }
                    }
                    SatOutcome::Unknown { reason } => {
                        out.warnings.push(format!(
                            "{reason}; the {} verdict is unknown (Elle's inference \
                             found no cycle, which does not make it valid)",
                            level.model().name()
                        ));
                        report.complete = Outcome::Unknown(reason);
                    }
                }
            }
            out.engines.push(report);
        }
    }
}
