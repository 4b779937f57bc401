//! What a check is: the [`Check`] trait an entry of `checks::CHECKS`
//! implements, what it is asked ([`CheckHow`]) and what it answers
//! ([`Verdict`]). No IO here or in an entry's `check`: the one writer of
//! the results is `checks::write`.

use checker::anomaly::AnomalyType;
use checker::linear::FailedCas;
use checker::model::ConsistencyModel;
use checker::result::Valid;
use checker::{Budget, CheckResult};
use std::time::Duration;
use store::History;
use workloads::WorkloadKind;

/// How to check a history: built from the plan for `run`, from the run
/// record for `analyze`, from the flags for `check FILE`.
#[derive(Clone, Debug)]
pub struct CheckHow {
    /// The history's workload; `None`: detect it (the table's `detect`).
    pub workload: Option<WorkloadKind>,
    /// The models that should hold (empty: the default,
    /// strong-serializable). Elle checks against all of them; a Jepsen
    /// workload's checker is tuned by the first (set-full's real time).
    pub models: Vec<ConsistencyModel>,
    /// Extra anomaly types that must not occur (Elle).
    pub anomalies: Vec<AnomalyType>,
    /// rw-register key assumptions (Elle): writes follow reads.
    pub wfr_keys: bool,
    /// rw-register: each key sequentially consistent.
    pub sequential_keys: bool,
    /// rw-register: each key linearizable.
    pub linearizable_keys: bool,
    /// Time the check may take (the one budget is built from it).
    pub time_limit: Duration,
    /// What a failed op means to a linearizability check; `None`: what
    /// the source means ([`FailedCas::Observed`] for harness's own runs).
    pub failed_ops: Option<FailedCas>,
    /// Bytes the linearizability search may take (`None`: derived from
    /// the machine, `checks::machine_memory`).
    pub memory: Option<u64>,
    /// Keep every anomaly (no caps) and search every key.
    pub all: bool,
    /// Explanations on the terminal per anomaly type / failing key.
    pub explain: usize,
    /// The history is a run's (a run with no client op committed is
    /// `unknown`); `false` for `check FILE`, where a history without any
    /// client op is `valid` with a warning, as Knossos says.
    pub from_run: bool,
    /// The checker's own files ([`Verdict::files`]) are wanted: a run's,
    /// or `check --directory`. Rendering them is work (the
    /// linearizability timelines cost a `check` a third of its time), so
    /// `check` without a directory asks for none.
    pub files: bool,
}

impl CheckHow {
    /// Defaults for `workload` (detected when `None`): the default model,
    /// 30 s, caps on.
    pub fn new(workload: Option<WorkloadKind>) -> CheckHow {
        CheckHow {
            workload,
            models: Vec::new(),
            anomalies: Vec::new(),
            wfr_keys: false,
            sequential_keys: false,
            linearizable_keys: false,
            time_limit: Duration::from_secs(30),
            failed_ops: None,
            memory: None,
            all: false,
            explain: 3,
            from_run: false,
            files: true,
        }
    }

    /// The models a transactional check decides: those asked for, or the
    /// default, with Elle's single-object `causal` read as `causal-cerone`
    /// (transactional causal consistency: Cerone et al.'s, Biswas & Enea's,
    /// what AWDIT, Plume and dbcop call `causal`). Elle's `causal`
    /// proscribes no anomaly of a transaction history, so `-c causal` would
    /// otherwise check nothing ([`CheckHow::causal_note`] says so).
    pub fn models_or_default(&self) -> Vec<ConsistencyModel> {
        if self.models.is_empty() {
            return vec![checker::model::DEFAULT_MODEL];
        }
        let mut out: Vec<ConsistencyModel> = Vec::with_capacity(self.models.len());
        for &m in &self.models {
            let m = match m {
                ConsistencyModel::Causal => ConsistencyModel::CausalCerone,
                m => m,
            };
            if !out.contains(&m) {
                out.push(m);
            }
        }
        out
    }

    /// The warning for `-c causal` read as `causal-cerone`, if it was asked.
    pub fn causal_note(&self) -> Option<String> {
        self.models.contains(&ConsistencyModel::Causal).then(|| {
            "`causal` was checked as causal-cerone, transactional causal consistency \
                 (Cerone et al.; AWDIT's and Plume's `causal`): Elle's `causal` is a \
                 single-object model that proscribes no anomaly of a transaction history"
                .to_string()
        })
    }

    /// The first model asked for, or the default.
    pub fn first_model(&self) -> ConsistencyModel {
        self.models
            .first()
            .copied()
            .unwrap_or(checker::model::DEFAULT_MODEL)
    }
}

/// What Elle's check leaves beside the verdict, for `results.edn`, `elle/`,
/// `repro.sql`, `--witness` and `--directory`.
pub struct ElleParts {
    /// The checker's result (anomaly lists cut to the caps).
    pub result: CheckResult,
    /// Anomalies found per type, and what the caps left out.
    pub counts: crate::report::caps::AnomalyCounts,
    /// Who decided each level (complete checks).
    pub engines: Vec<checker::engines::LevelReport>,
    /// The analyses that ran.
    pub analyses: Vec<&'static str>,
    /// The transactions checked by outcome, and their keys.
    pub census: checker::txn::Census,
}

/// One check's answer, the same shape for every family.
pub struct Verdict {
    /// valid / invalid / unknown.
    pub valid: Valid,
    /// The workload checked.
    pub workload: WorkloadKind,
    /// The check's name in the table (`elle`, `linearizability`, `jepsen`).
    pub checker: &'static str,
    /// What was checked, in words ("checked for linearizability per key").
    pub checks: String,
    /// What was found, one line ("G1c (3 found)", "no violation").
    pub summary: String,
    /// The `results.json` map (`valid?`, the checker's keys).
    pub json: serde_json::Value,
    /// Explanations for the terminal (bounded by [`CheckHow::explain`]).
    pub details: String,
    /// Warnings that do not change the verdict.
    pub warnings: Vec<String>,
    /// Files of this checker: written under `<run>/<files_dir>/` for a
    /// run, into `--directory` for `check`.
    pub files: Vec<(&'static str, String)>,
    /// The folder of [`Verdict::files`] in a run directory.
    pub files_dir: &'static str,
    /// Elle's result, when Elle checked.
    pub elle: Option<ElleParts>,
    /// Wall time of each analysis, seconds.
    pub timings: Vec<(&'static str, f64)>,
    /// Wall time of the whole check, seconds.
    pub elapsed_s: f64,
}

/// An entry of `checks::CHECKS`: one family of checkers.
pub trait Check: Sync {
    /// Its name (`elle`, `linearizability`, `jepsen`).
    fn name(&self) -> &'static str;
    /// Whether it decides histories of `w`.
    fn handles(&self, w: WorkloadKind) -> bool;
    /// The workload of `history` if it is one this check handles.
    fn detect(&self, history: &History) -> Option<WorkloadKind>;
    /// What it checks of `w` under `how`, for the run header and the
    /// verdict ("checked for linearizability per key").
    fn describe(&self, w: WorkloadKind, how: &CheckHow) -> String;
    /// Checks `history` (no IO).
    ///
    /// # Errors
    /// The history does not have the shape of `w` (e.g. a register history
    /// with an op that is not read / write / cas).
    fn check(
        &self,
        w: WorkloadKind,
        history: &History,
        how: &CheckHow,
        budget: Budget,
    ) -> anyhow::Result<Verdict>;
}
