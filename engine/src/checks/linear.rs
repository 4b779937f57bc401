//! The linearizability entry: `register` (read / write / cas per key),
//! `kv` (Porcupine's get / put / append) and Knossos' other models
//! (multi-register, mutex, FIFO and unordered queue, set), one Wing–Gong–Lowe
//! search per key (`checker::linear`), with its explanation
//! (`linear.txt`), its result map (`linear.json`) and the per-key
//! timelines (`linear.html`).

use super::entry::{Check, CheckHow, Verdict};
use anyhow::Context as _;
use checker::Budget;
use checker::linear::model::Model;
use checker::linear::search::Exhausted;
use checker::linear::{FailedCas, LinearOptions, LinearResult, report};
use store::{History, OpType, Process};
use workloads::{KnossosModel, WorkloadKind};

/// The checker's model of a Knossos workload.
fn knossos_kind(m: KnossosModel) -> checker::linear::knossos::Kind {
    use checker::linear::knossos::Kind;
    match m {
        KnossosModel::MultiRegister => Kind::MultiRegister,
        KnossosModel::Mutex => Kind::Mutex,
        KnossosModel::FifoQueue => Kind::FifoQueue,
        KnossosModel::UnorderedQueue => Kind::UnorderedQueue,
        KnossosModel::Set => Kind::Set,
    }
}

/// The linearizability check.
pub struct Linear;

impl Check for Linear {
    fn name(&self) -> &'static str {
        "linearizability"
    }

    fn handles(&self, w: WorkloadKind) -> bool {
        matches!(
            w,
            WorkloadKind::Register | WorkloadKind::Kv | WorkloadKind::Knossos(_)
        )
    }

    /// Register or kv by the client ops' `f`; `None` for anything else.
    fn detect(&self, history: &History) -> Option<WorkloadKind> {
        let mut kind = None;
        for pos in 0..history.len() {
            if history.process(pos) == Some(Process::Nemesis)
                || history.op_type(pos) != OpType::Invoke
            {
                continue;
            }
            let k = match history.f(pos).map(|f| f.as_str()) {
                Some("read" | "write" | "cas") => WorkloadKind::Register,
                Some("get" | "put" | "append") => WorkloadKind::Kv,
                Some("acquire" | "release") => WorkloadKind::Knossos(KnossosModel::Mutex),
                _ => return None,
            };
            if kind.is_some_and(|x| x != k) {
                return None;
            }
            kind = Some(k);
        }
        kind
    }

    fn describe(&self, w: WorkloadKind, how: &CheckHow) -> String {
        match w {
            WorkloadKind::Knossos(m) => format!(
                "checked for linearizability ({} model, failed ops: dropped, as Knossos)",
                knossos_kind(m).name()
            ),
            WorkloadKind::Kv => "checked for linearizability per key (kv model)".to_string(),
            _ => format!(
                "checked for linearizability per key (cas-register model, failed ops: {})",
                failed_ops(how).name()
            ),
        }
    }

    fn check(
        &self,
        w: WorkloadKind,
        history: &History,
        how: &CheckHow,
        budget: Budget,
    ) -> anyhow::Result<Verdict> {
        let memory = how.memory.or_else(super::memory::machine_memory);
        let opts = LinearOptions {
            failed_cas: failed_ops(how),
            // A run's record names every failing key: which keys a search
            // stopped at the first failure reaches depends on its threads'
            // timing, and `analyze` must reproduce the record.
            all_keys: how.all || how.from_run,
            max_memory: memory.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX)),
            ..LinearOptions::default()
        };
        let started = std::time::Instant::now();
        let shape = || format!("checking the {w} history");
        match w {
            WorkloadKind::Kv => {
                let r = checker::linear::check_kv(history, &opts, &budget).with_context(shape)?;
                Ok(verdict(
                    &checker::linear::model::KvString,
                    &r,
                    w,
                    self,
                    how,
                    started,
                ))
            }
            WorkloadKind::Knossos(m) => {
                let kind = knossos_kind(m);
                let r = checker::linear::check_knossos(history, kind, &opts, &budget)
                    .with_context(shape)?;
                Ok(verdict(
                    &checker::linear::knossos::Knossos(kind),
                    &r,
                    w,
                    self,
                    how,
                    started,
                ))
            }
            _ => {
                let model = checker::linear::model::CasRegister::default();
                let r =
                    checker::linear::check_register(history, &opts, &budget).with_context(shape)?;
                Ok(verdict(&model, &r, w, self, how, started))
            }
        }
    }
}

/// What a failed op means: as asked, else harness's own reading (a failed
/// cas saw another value: SQL's "0 rows updated").
fn failed_ops(how: &CheckHow) -> FailedCas {
    how.failed_ops.unwrap_or(FailedCas::Observed)
}

fn verdict<M: Model>(
    model: &M,
    r: &LinearResult<M>,
    w: WorkloadKind,
    check: &Linear,
    how: &CheckHow,
    started: std::time::Instant,
) -> Verdict {
    let elapsed_s = started.elapsed().as_secs_f64();
    let json = report::to_json(model, r);
    let undecided: Vec<_> = r
        .keys
        .iter()
        .filter(|k| {
            k.searched.verdict == checker::linear::search::Verdict::Unknown
                && k.searched.exhausted != Some(Exhausted::Stopped)
        })
        .collect();
    let mut why: Vec<String> = Vec::new();
    for reason in [
        Exhausted::Time,
        Exhausted::Memory,
        Exhausted::Configurations,
    ] {
        let keys: Vec<_> = undecided
            .iter()
            .filter(|k| k.searched.exhausted == Some(reason))
            .collect();
        if let Some(longest) = keys.iter().max_by_key(|k| k.searched.order.len()) {
            why.push(format!(
                ", {} key(s) undecided: {}{} (longest linearizable prefix: {} of {} ops)",
                keys.len(),
                reason.name(),
                match (reason, how.memory.or_else(super::memory::machine_memory)) {
                    (Exhausted::Memory, Some(m)) => format!(" of {}", super::memory::gib(m)),
                    (Exhausted::Time, _) => format!(" of {:?}", how.time_limit),
                    _ => String::new(),
                },
                longest.searched.order.len(),
                longest.ops.len()
            ));
        }
    }
    let summary = format!(
        "{} op(s) over {} key(s), {} key(s) not linearizable{}{}",
        r.op_count(),
        r.keys.len(),
        r.failures().count(),
        why.concat(),
        if r.skipped > 0 {
            format!(
                ", {} not searched to the end after the first failure (--all-anomalies searches every key)",
                r.skipped
            )
        } else {
            String::new()
        }
    );
    let limit = if how.all { usize::MAX } else { how.explain };
    let details: String = r
        .failures()
        .take(limit)
        .map(|k| report::render_key_text(model, k))
        .collect();
    let title = format!("{w}: linearizability per key");
    Verdict {
        valid: r.valid,
        workload: w,
        checker: check.name(),
        checks: check.describe(w, how),
        summary,
        files: if how.files {
            vec![
                ("linear.txt", report::render_text(model, r)),
                (
                    "linear.json",
                    serde_json::to_string_pretty(&json).unwrap_or_default(),
                ),
                ("linear.html", report::render_html(model, r, &title)),
            ]
        } else {
            Vec::new()
        },
        json,
        details,
        warnings: r.warnings.clone(),
        files_dir: "linear",
        elle: None,
        timings: vec![("linearizability", elapsed_s)],
        elapsed_s,
    }
}
