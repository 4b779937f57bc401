//! The analysis pipeline (Elle): preprocessing (`txn`), the
//! observations (`observe`, computed once), the workload's version order
//! (`versions`: list prefixes, or the register providers), then a list of
//! [`Analysis`] entries, each turning those into anomalies. Entry point:
//! [`analyze`].
//!
//! # Adding an analysis
//!
//! 1. Write one file here, `analysis/<name>.rs`, with a unit struct that
//!    implements [`Analysis`]: `needed` says whether the anomaly types the
//!    requested models and anomalies call for (`search`, from
//!    `model::anomalies_to_search`) include any it can find; `run` reads the
//!    [`Context`] — transactions (`txns`, with commit states and interned
//!    keys), what was observed (`obs`: every write and each read's writer),
//!    the version order (`versions`: `ww`/`wr`/`rw` edges, their
//!    explanations, the version a read saw), the history for op indices
//!    (and `order` for process / real-time order) — and pushes
//!    [`Anomaly`]s into [`Found`]. Keep it pure and panic-free.
//! 2. Add a `mod` line and an entry in [`ANALYSES`].
//! 3. New anomaly types go in `anomaly.rs` (name, implications) and, if a
//!    model proscribes them, in `model.rs`'s tables; new evidence shapes in
//!    `explain/` (data, JSON, text).

mod cycles;
mod expected_order;
mod lost_update;
mod predicate;
mod reads;
mod sat;
mod weak;

use crate::anomaly::AnomalyType;
use crate::budget::Budget;
use crate::explain::Anomaly;
use crate::graph::{PARALLEL_FROM, beside_if};
use crate::list_append::ListAppend;
use crate::model::ConsistencyModel;
use crate::observe::Observations;
use crate::rw_register::{RwRegister, Sources};
use crate::txn::Txns;
use crate::versions::VersionOrder;
use std::collections::{BTreeMap, BTreeSet};
use store::History;

pub use crate::workload::Workload;

/// What to analyze and how.
#[derive(Debug)]
pub struct AnalyzeOptions<'a> {
    /// The workload's inference rules.
    pub workload: Workload,
    /// Cycle classes to look for (and `*-cycle-exists` types); non-cycle
    /// anomalies are always reported. Order edges are added as Elle does:
    /// realtime if a `*-realtime` class is here, else process if a
    /// `*-process` class is.
    pub search: BTreeSet<AnomalyType>,
    /// rw-register: infer version order from writes following reads.
    pub wfr_keys: bool,
    /// rw-register: infer version order from process order.
    pub sequential_keys: bool,
    /// rw-register: infer version order from real-time order.
    pub linearizable_keys: bool,
    /// Limit on the cycle search (and the complete checks).
    pub budget: &'a Budget,
    /// The models asked for (empty: only Elle's inference runs; the
    /// complete checks, `weak` and `sat`, run for the models that need
    /// them).
    pub models: &'a [ConsistencyModel],
    /// The extra anomalies asked for (they may call for a `weak` level).
    pub anomalies: &'a [AnomalyType],
    /// rw-register: decide serializable / snapshot-isolation models
    /// completely with `sat` (`CheckOptions::complete`).
    pub complete: bool,
    /// Cases of one anomaly type [`Found`] keeps (the first ones found);
    /// the rest are only counted. `None` keeps every one.
    pub max_per_type: Option<usize>,
}

impl<'a> AnalyzeOptions<'a> {
    /// Elle's inference alone: `search` for `workload` within `budget`, no
    /// extra version-order sources, no models or anomalies asked for, no
    /// complete checks. Set the other fields with struct update syntax.
    pub fn new(
        workload: Workload,
        search: BTreeSet<AnomalyType>,
        budget: &'a Budget,
    ) -> AnalyzeOptions<'a> {
        AnalyzeOptions {
            workload,
            search,
            wfr_keys: false,
            sequential_keys: false,
            linearizable_keys: false,
            budget,
            models: &[],
            anomalies: &[],
            complete: false,
            max_per_type: None,
        }
    }
}

/// What the analyses found.
///
/// Key decision: with a cap (`AnalyzeOptions::max_per_type`) each type
/// keeps its first cases as they are found and only counts the rest
/// ([`Left`]): a history with a million lost updates never holds a million
/// cases. What the verdict reads of the cases left out — that one chose no
/// order — is kept with the count.
#[derive(Debug, Default)]
pub struct Found {
    /// Anomalies by type (only non-empty entries).
    pub anomalies: BTreeMap<AnomalyType, Vec<Anomaly>>,
    /// Per type, the cases left out by the cap.
    pub left: BTreeMap<AnomalyType, Left>,
    /// Cases of one type kept (`None`: all).
    pub cap: Option<usize>,
    /// Oddities in the input that did not stop the analysis.
    pub warnings: Vec<String>,
    /// How each serializable / snapshot-isolation level was decided (the
    /// `sat` analysis fills it; empty when it did not run).
    pub engines: Vec<crate::engines::LevelReport>,
    /// The names of the analyses that ran, in order.
    pub ran: Vec<&'static str>,
    /// Wall time of each analysis that ran, seconds, in the order of `ran`.
    pub timings: Vec<(&'static str, f64)>,
    /// The level the complete weak-isolation check decided (it ran to the
    /// end); `None` when it did not run or ran out of its limits.
    pub weak_decided: Option<crate::weak::Level>,
    /// What was checked: the transactions by outcome, their keys (set by
    /// [`analyze`] from the transactions it read; [`Found::merge`] keeps
    /// this one's).
    pub census: crate::txn::Census,
}

/// The cases of one type a cap left out of [`Found`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Left {
    /// How many.
    pub count: usize,
    /// Whether one of them is not a cycle whose order a complete check
    /// chose (`CheckResult::from_found_refuted`).
    pub chose_no_order: bool,
}

impl Left {
    fn add(&mut self, a: &Anomaly) {
        self.count += 1;
        // Once one chose no order, the rest need not be looked at.
        self.chose_no_order = self.chose_no_order || !crate::result::chose_an_order(a);
    }
}

impl Found {
    /// Nothing found yet; each type keeps at most `cap` cases.
    pub fn capped(cap: Option<usize>) -> Found {
        Found {
            cap,
            ..Found::default()
        }
    }

    /// Records one anomaly (after the others of its type), or counts it
    /// when its type holds as many as the cap.
    pub fn push(&mut self, a: Anomaly) {
        let list = self.anomalies.entry(a.kind).or_default();
        if self.cap.is_some_and(|cap| list.len() >= cap) {
            self.left.entry(a.kind).or_default().add(&a);
        } else {
            list.push(a);
        }
    }

    /// Adds what another analysis found after what this one holds (the
    /// same first cases as finding them one after the other).
    pub fn merge(&mut self, other: Found) {
        for list in other.anomalies.into_values() {
            for a in list {
                self.push(a);
            }
        }
        for (kind, l) in other.left {
            let mine = self.left.entry(kind).or_default();
            mine.count += l.count;
            mine.chose_no_order |= l.chose_no_order;
        }
        self.warnings.extend(other.warnings);
        self.engines.extend(other.engines);
        self.ran.extend(other.ran);
        self.timings.extend(other.timings);
        self.weak_decided = self.weak_decided.max(other.weak_decided);
    }

    /// Cuts lists an analysis filled without [`Found::push`] to the cap.
    fn enforce_cap(&mut self) {
        let Some(cap) = self.cap else {
            return;
        };
        for (kind, list) in &mut self.anomalies {
            if list.len() > cap {
                let left = self.left.entry(*kind).or_default();
                for a in list.drain(cap..) {
                    left.add(&a);
                }
            }
        }
    }
}

/// What every analysis may use.
pub struct Context<'a, 'h> {
    /// The history (for op indices, times, process order).
    pub history: &'h History,
    /// Its client transactions.
    pub txns: &'a Txns<'h>,
    /// What was observed: writes, and each read's writer.
    pub obs: &'a Observations<'h>,
    /// The workload's version order and the data edges it implies.
    pub versions: &'a dyn VersionOrder<'h>,
    /// What was asked for.
    pub opts: &'a AnalyzeOptions<'a>,
}

/// One analysis: transactions + observations (+ version order, process and
/// real-time order) in, anomalies out.
pub trait Analysis: Sync {
    /// A short name (for docs and diagnostics).
    fn name(&self) -> &'static str;

    /// Whether what was asked for needs this analysis: the anomaly types
    /// the requested models and anomalies call for (`opts.search`), or the
    /// models and anomalies themselves (`opts.models`, `opts.anomalies`).
    /// Analyses whose findings count for `not` whatever was asked return
    /// `true`.
    fn needed(&self, opts: &AnalyzeOptions<'_>) -> bool;

    /// Whether the history holds anything this analysis reads (default:
    /// yes); an analysis that does not apply neither runs nor is named.
    fn applies(&self, _cx: &Context<'_, '_>) -> bool {
        true
    }

    /// Runs it, adding what it finds to `out`.
    fn run(&self, cx: &Context<'_, '_>, out: &mut Found);

    /// Whether `run` reads what the analyses before it found (then `out`
    /// holds their findings, and it runs after them); otherwise `out`
    /// starts empty and it runs beside the others, on a thread of its own
    /// (or alone, if [`Analysis::heavy`]).
    fn reads_earlier_findings(&self) -> bool {
        false
    }

    /// Whether, on `cx`, its scratch is history-sized and big enough to
    /// matter (the dependency graph of a big history): then it runs alone
    /// rather than beside the others.
    fn heavy(&self, _cx: &Context<'_, '_>) -> bool {
        false
    }
}

/// The analyses [`analyze`] runs (those `needed`), their findings merged in
/// this order. The complete checks come last: `sat` skips a level whose
/// verdict the anomalies found before it already decide (it
/// `reads_earlier_findings`; such entries come after all the others).
pub const ANALYSES: &[&dyn Analysis] = &[
    &reads::Reads,
    &lost_update::LostUpdate,
    &cycles::Cycles,
    &predicate::Predicate,
    &expected_order::ExpectedOrder,
    &weak::Weak,
    &sat::Sat,
];

/// Runs the analysis. Never panics on odd input: what it cannot interpret
/// becomes a warning.
pub fn analyze(history: &History, opts: &AnalyzeOptions<'_>) -> Found {
    let txns = Txns::new(history);
    let obs = Observations::new(&txns, history, opts.workload);
    let mut out = Found {
        warnings: txns.warnings.clone(),
        census: txns.census(),
        ..Found::capped(opts.max_per_type)
    };
    out.warnings.extend(obs.warnings.iter().cloned());
    let sources = Sources {
        wfr: opts.wfr_keys,
        sequential: opts.sequential_keys,
        linearizable: opts.linearizable_keys,
    };
    let list;
    let register;
    let versions: &dyn VersionOrder<'_> = match opts.workload {
        Workload::ListAppend => {
            list = ListAppend::new(&txns, &obs);
            for a in list.anomalies(&txns, history) {
                out.push(a);
            }
            &list
        }
        Workload::RwRegister => {
            let (r, anomalies) = RwRegister::new(&txns, &obs, history, sources);
            for a in anomalies {
                out.push(a);
            }
            register = r;
            &register
        }
    };
    let cx = Context {
        history,
        txns: &txns,
        obs: &obs,
        versions,
        opts,
    };
    let (after, beside): (Vec<&dyn Analysis>, Vec<&dyn Analysis>) = ANALYSES
        .iter()
        .copied()
        .filter(|a| a.needed(opts) && a.applies(&cx))
        .partition(|a| a.reads_earlier_findings());
    for (a, found) in beside.iter().zip(run_each(&cx, &beside)) {
        out.ran.push(a.name());
        out.merge(found);
    }
    for a in after {
        out.ran.push(a.name());
        let started = std::time::Instant::now();
        a.run(&cx, &mut out);
        out.timings
            .push((a.name(), started.elapsed().as_secs_f64()));
    }
    out.enforce_cap();
    out.anomalies.retain(|_, v| !v.is_empty());
    out
}

/// Runs `analyses` on `cx` and returns what each found, in the order given
/// — so the merged result is the same as running them one after the
/// other. The light ones run side by side (they only read the context),
/// each on a thread of its own (in turn on a history too small to gain); a [`Analysis::heavy`] one runs alone after
/// them, so its scratch never adds up with theirs.
fn run_each(cx: &Context<'_, '_>, analyses: &[&dyn Analysis]) -> Vec<Found> {
    let run = |a: &dyn Analysis| {
        let mut found = Found::capped(cx.opts.max_per_type);
        let started = std::time::Instant::now();
        a.run(cx, &mut found);
        found
            .timings
            .push((a.name(), started.elapsed().as_secs_f64()));
        found
    };
    let (heavy, light): (Vec<_>, Vec<_>) = analyses.iter().copied().partition(|a| a.heavy(cx));
    let parallel = cx.history.len() >= PARALLEL_FROM;
    let mut light = beside_if(parallel, light, run).into_iter();
    let mut heavy = heavy.into_iter().map(run);
    analyses
        .iter()
        .filter_map(|a| {
            if a.heavy(cx) {
                heavy.next()
            } else {
                light.next()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry that writes its name as a warning; heavy or not.
    struct Named(&'static str, bool);

    impl Analysis for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
            true
        }
        fn run(&self, _: &Context<'_, '_>, out: &mut Found) {
            out.warnings.push(self.0.to_string());
        }
        fn heavy(&self, _: &Context<'_, '_>) -> bool {
            self.1
        }
    }

    /// Heavy entries run after the light ones but their findings come
    /// back where the table puts them.
    #[test]
    fn findings_keep_the_given_order_whoever_runs_alone() {
        let history = History::default();
        let txns = Txns::new(&history);
        let obs = Observations::new(&txns, &history, Workload::ListAppend);
        let list = ListAppend::new(&txns, &obs);
        let budget = Budget::unlimited();
        let opts = AnalyzeOptions::new(Workload::ListAppend, BTreeSet::new(), &budget);
        let cx = Context {
            history: &history,
            txns: &txns,
            obs: &obs,
            versions: &list,
            opts: &opts,
        };
        let entries = [
            Named("a", false),
            Named("b", true),
            Named("c", false),
            Named("d", true),
            Named("e", false),
        ];
        let table: Vec<&dyn Analysis> = entries.iter().map(|e| e as &dyn Analysis).collect();
        let got: Vec<String> = run_each(&cx, &table)
            .into_iter()
            .flat_map(|f| f.warnings)
            .collect();
        assert_eq!(got, ["a", "b", "c", "d", "e"]);
    }

    /// Findings merge in table order whether an entry ran beside the others
    /// or after them only if every entry that reads earlier findings comes
    /// after all that do not.
    #[test]
    fn entries_that_read_earlier_findings_come_last() {
        let first_reader = ANALYSES.iter().position(|a| a.reads_earlier_findings());
        if let Some(i) = first_reader {
            assert!(ANALYSES[i..].iter().all(|a| a.reads_earlier_findings()));
        }
        assert_eq!(first_reader, Some(ANALYSES.len() - 1), "sat reads them");
    }

    /// A G1c cycle whose ww step a complete check chose (`derived`) or not.
    fn g1c(chose: bool) -> Anomaly {
        use crate::explain::{Derived, Evidence, Step};
        use crate::rels::Rel;
        use store::OpIndex;
        let (a, b) = (OpIndex(1), OpIndex(3));
        let mut ww = Step::bare(Rel::Ww, a, b);
        if chose && let Step::Ww(d) = &mut ww {
            d.derived = Some(Box::new(Derived {
                refuted: Step::bare(Rel::Ww, b, a),
                cycle: vec![],
                rels: vec![],
                assumed: true,
            }));
        }
        Anomaly {
            kind: AnomalyType::G1c,
            evidence: Evidence::Cycle {
                cycle: vec![a, b, a],
                steps: vec![ww, Step::bare(Rel::Wr, b, a)],
            },
        }
    }

    /// What the cap leaves out still counts for the verdict: a case that
    /// chose no order rules out every model proscribing its type even when
    /// the kept case chose one.
    #[test]
    fn a_case_the_cap_left_out_still_rules_out_models() {
        use crate::model::ConsistencyModel;
        use crate::result::CheckResult;
        let decide = |cases: &[bool], cap| {
            let mut f = Found::capped(cap);
            for &c in cases {
                f.push(g1c(c));
            }
            f.enforce_cap();
            let kept = f.anomalies.get(&AnomalyType::G1c).map_or(0, Vec::len);
            let r = CheckResult::from_found_refuted(
                f.anomalies,
                &f.left,
                &[],
                &[ConsistencyModel::ReadCommitted],
                &[],
                vec![],
            );
            (kept, f.left.get(&AnomalyType::G1c).copied(), r.not)
        };
        let rc = vec![
            ConsistencyModel::CursorStability,
            ConsistencyModel::ReadCommitted,
        ];
        let (kept, left, not) = decide(&[true, false], Some(1));
        let left_out = Left {
            count: 1,
            chose_no_order: true,
        };
        assert_eq!((kept, left, &not), (1, Some(left_out), &rc));
        assert_eq!(decide(&[true, false], None).2, rc);
        // Every case chose an order: G1c rules nothing out, capped or not.
        let (kept, left, not) = decide(&[true, true, true], Some(1));
        let chose = Left {
            count: 2,
            chose_no_order: false,
        };
        assert_eq!((kept, left, not), (1, Some(chose), vec![]));
        assert_eq!(decide(&[true, true, true], None).2, vec![]);
    }
}
