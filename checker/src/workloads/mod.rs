//! Checkers of Jepsen's non-Elle workloads: [`bank`],
//! [`set`], [`set_full`], [`long_fork`], [`monotonic`], [`sequential`] and
//! [`counter`]. Each reads the history's client ops in the encoding the
//! `workloads` crate's `jepsen` module documents (and, where cheap, the
//! value shapes of Jepsen's own EDN histories: bank's `{acct balance}`
//! maps, set and counter integers) and returns a [`Report`]: a
//! three-valued verdict, explained [`Finding`]s naming ops by index, and
//! Jepsen's counters.
//!
//! Key decisions: findings are data (kind, ops, explanation text, a JSON
//! datum) rendered separately; every report composes Jepsen's `stats`
//! rule — a run in which some function never succeeded is `unknown`, never
//! `valid` ([`settle_stats`]); no check is quadratic in the history (set-full
//! walks each element's reads, long-fork compares distinct read shapes).

pub mod bank;
pub mod counter;
pub mod long_fork;
pub mod monotonic;
pub mod sequential;
pub mod set;
pub mod set_full;

use crate::result::Valid;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;
use store::{Atom, Data, F, History, MicroOp, OpType, ReadValue, Val};

/// Which checker to run, with its settings.
#[derive(Clone, Debug, PartialEq)]
pub enum Checker {
    /// bank, bank-multitable, bank-insert.
    Bank(bank::Options),
    /// set (final read).
    Set,
    /// set-full (reads throughout).
    SetFull(set_full::Options),
    /// long-fork.
    LongFork,
    /// monotonic (TiDB's form).
    Monotonic,
    /// sequential (CockroachDB's).
    Sequential,
    /// counter.
    Counter,
}

/// Runs `checker` over `history`, with the stats rule applied.
pub fn check(history: &History, checker: &Checker) -> Report {
    let mut report = match checker {
        Checker::Bank(o) => bank::check(history, o),
        Checker::Set => set::check(history),
        Checker::SetFull(o) => set_full::check(history, o),
        Checker::LongFork => long_fork::check(history),
        Checker::Monotonic => monotonic::check(history),
        Checker::Sequential => sequential::check(history),
        Checker::Counter => counter::check(history),
    };
    settle_stats(history, &mut report);
    report
}

/// The Jepsen workload a history comes from, by the functions of its
/// client ops: `transfer` → bank (`insert`/`delete` → bank-insert), `inc`
/// → monotonic, `write` → sequential, `add` → set-full (elements read as
/// lists or collections) or counter (reads of one number); `None` for
/// transactions only (Elle's workloads, long-fork: name it).
pub fn detect(history: &History) -> Option<&'static str> {
    let (mut add, mut list_read, mut int_read) = (false, false, false);
    for pos in 0..history.len() {
        if !history.is_client(pos) {
            continue;
        }
        match history.f(pos) {
            Some(F::Insert | F::Delete) => return Some("bank-insert"),
            Some(F::Transfer) => return Some("bank"),
            Some(F::Inc) => return Some("monotonic"),
            // Sequential's writes carry micro-ops; a register's write
            // (Jepsen's `[k v]` or a bare value) is data: linearizability.
            Some(F::Write) if history.data(pos).is_none() => return Some("sequential"),
            Some(F::Add) => add = true,
            Some(F::Read) if history.op_type(pos) == OpType::Ok => {
                match (history.stored_txn(pos), history.data(pos)) {
                    (Some([MicroOp::Read(_, ReadValue::List(_))]), _)
                    | (_, Some(Data::Vec(_) | Data::Set(_))) => list_read = true,
                    (Some([MicroOp::Read(_, ReadValue::Scalar(_))]), _)
                    | (_, Some(Data::Int(_))) => int_read = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    match (add, list_read, int_read) {
        (true, true, _) => Some("set-full"),
        (true, false, true) => Some("counter"),
        _ => None,
    }
}

/// One explained violation.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Its kind (Jepsen's name: `wrong-total`, `lost`, `fork`, …).
    pub kind: &'static str,
    /// The ops it is about (indices), the most telling first.
    pub ops: Vec<u64>,
    /// One paragraph saying what was seen and why it is wrong.
    pub explanation: String,
    /// The same as data (Jepsen's keys).
    pub data: Value,
}

/// A workload checker's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The workload's name.
    pub workload: &'static str,
    /// The verdict.
    pub valid: Valid,
    /// Why the verdict is `unknown`, when it is.
    pub reason: Option<String>,
    /// The violations, in history order within each kind.
    pub findings: Vec<Finding>,
    /// Jepsen's counters and summaries (`read-count`, `lost-count`, …).
    pub stats: Map<String, Value>,
}

/// At most this many findings of one kind are kept in `results.json`
/// (their count is always complete).
pub const MAX_FINDINGS_SHOWN: usize = 8;

impl Report {
    /// An empty, valid report.
    pub fn new(workload: &'static str) -> Report {
        Report {
            workload,
            valid: Valid::True,
            reason: None,
            findings: Vec::new(),
            stats: Map::new(),
        }
    }

    /// Records a finding and makes the verdict invalid.
    pub fn add(&mut self, f: Finding) {
        self.valid = Valid::False;
        self.findings.push(f);
    }

    /// Makes a valid verdict `unknown`, saying why.
    pub fn unknown(&mut self, reason: impl Into<String>) {
        if self.valid == Valid::True {
            self.valid = Valid::Unknown;
            self.reason = Some(reason.into());
        }
    }

    /// Sets a counter or summary.
    pub fn stat(&mut self, key: &str, v: impl Into<Value>) {
        self.stats.insert(key.to_string(), v.into());
    }

    /// The kinds found, sorted, without repeats.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k: Vec<&'static str> = self.findings.iter().map(|f| f.kind).collect();
        k.sort_unstable();
        k.dedup();
        k
    }

    /// The findings of `kind`.
    pub fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.kind == kind)
    }

    /// `results.json`: `valid?`, `workload`, the counters, `error-types`
    /// and `errors` (per kind: `count` and the first
    /// [`MAX_FINDINGS_SHOWN`] findings).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "valid?".into(),
            serde_json::to_value(self.valid).unwrap_or(Value::Null),
        );
        m.insert("workload".into(), json!(self.workload));
        if let Some(r) = &self.reason {
            m.insert("reason".into(), json!(r));
        }
        for (k, v) in &self.stats {
            m.insert(k.clone(), v.clone());
        }
        m.insert("error-types".into(), json!(self.kinds()));
        let mut errors = Map::new();
        for kind in self.kinds() {
            let all: Vec<&Finding> = self.of_kind(kind).collect();
            let shown: Vec<Value> = all
                .iter()
                .take(MAX_FINDINGS_SHOWN)
                .map(|f| json!({"ops": f.ops, "explanation": f.explanation, "data": f.data}))
                .collect();
            errors.insert(kind.into(), json!({"count": all.len(), "first": shown}));
        }
        m.insert("errors".into(), Value::Object(errors));
        Value::Object(m)
    }

    /// The verdict and up to `per_kind` explanations of each kind, as text.
    pub fn render_text(&self, per_kind: usize) -> String {
        let mut out = format!("{}: valid? {}", self.workload, self.valid);
        if let Some(r) = &self.reason {
            out.push_str(&format!(" ({r})"));
        }
        out.push('\n');
        for kind in self.kinds() {
            let n = self.of_kind(kind).count();
            out.push_str(&format!("{kind} ({n}):\n"));
            for f in self.of_kind(kind).take(per_kind) {
                out.push_str(&format!("  - {}\n", f.explanation));
            }
        }
        out
    }
}

/// Jepsen's `stats`: ok / fail / info counts per function of client ops.
pub fn op_stats(history: &History) -> BTreeMap<String, [u64; 3]> {
    let mut by_f: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for pos in 0..history.len() {
        if !history.is_client(pos) {
            continue;
        }
        let slot = match history.op_type(pos) {
            OpType::Ok => 0,
            OpType::Fail => 1,
            OpType::Info => 2,
            _ => continue,
        };
        let f = history.f(pos).map_or("txn", F::as_str).to_string();
        by_f.entry(f).or_default()[slot] += 1;
    }
    by_f
}

/// Adds the `stats` counters to `report` and makes a valid verdict
/// `unknown` when some function never completed `ok` (a bank run without
/// a successful transfer proves nothing).
pub fn settle_stats(history: &History, report: &mut Report) {
    let stats = op_stats(history);
    let mut by_f = Map::new();
    for (f, [ok, fail, info]) in &stats {
        by_f.insert(
            f.clone(),
            json!({"ok-count": ok, "fail-count": fail, "info-count": info}),
        );
    }
    report.stat("by-f", Value::Object(by_f));
    if let Some((f, _)) = stats.iter().find(|(_, c)| c[0] == 0) {
        report.unknown(format!("no {f} operation completed ok"));
    }
    if stats.is_empty() {
        report.unknown("the history has no client operation");
    }
}

/// A client op's completion, with its invocation when known.
pub(crate) struct Completed<'h> {
    pub pos: usize,
    pub inv: Option<usize>,
    pub f: F,
    pub op_type: OpType,
    pub mops: Cow<'h, [MicroOp]>,
}

/// Every client completion (`ok`, `fail`, `info`), in history order.
pub(crate) fn completions(history: &History) -> impl Iterator<Item = Completed<'_>> {
    (0..history.len()).filter_map(move |pos| {
        if !history.is_client(pos) || history.op_type(pos) == OpType::Invoke {
            return None;
        }
        Some(Completed {
            pos,
            inv: history.invocation(pos),
            f: history.f(pos).cloned().unwrap_or(F::Txn),
            op_type: history.op_type(pos),
            mops: history.txn(pos).unwrap_or(Cow::Borrowed(&[])),
        })
    })
}

/// An integer atom's value.
pub(crate) fn atom_int(a: &Atom) -> Option<i64> {
    match a {
        Atom::Int(i) => Some(*i),
        _ => None,
    }
}

/// An integer value.
pub(crate) fn val_int(v: &Val) -> Option<i64> {
    atom_int(&v.0)
}

/// A read's integer result: `Some(None)` for nil, `None` if not an integer.
pub(crate) fn read_int(r: &ReadValue) -> Option<Option<i64>> {
    match r {
        ReadValue::Nil => Some(None),
        ReadValue::Scalar(v) => val_int(v).map(Some),
        ReadValue::List(_) => None,
    }
}

/// An integer datum.
pub(crate) fn data_int(d: &Data) -> Option<i64> {
    match d {
        Data::Int(i) => Some(*i),
        _ => None,
    }
}

/// `pos`'s op index.
pub(crate) fn idx(history: &History, pos: usize) -> u64 {
    history.index(pos).0
}

/// Seconds since the start of the test at `pos` (0 without a time).
pub(crate) fn secs(history: &History, pos: usize) -> f64 {
    history.time_ns(pos).unwrap_or(0) as f64 / 1e9
}

/// The op at `pos` as people read it: `op 12 (process 3, 1.250 s)`.
pub(crate) fn op_name(history: &History, pos: usize) -> String {
    let process = match history.process(pos) {
        Some(store::Process::Client(p)) => format!("process {}", p.0),
        Some(store::Process::Nemesis) => "nemesis".to_string(),
        None => "no process".to_string(),
    };
    format!(
        "op {} ({process}, {:.3} s)",
        idx(history, pos),
        secs(history, pos)
    )
}

/// A sorted set of integers in Jepsen's interval notation: `#{0..4 7 9..12}`.
pub fn intervals(sorted: &[i64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}..{end}")
        });
        i += 1;
    }
    format!("#{{{}}}", parts.join(" "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
pub(crate) mod tests {
    use super::*;
    use store::{Key, Op, OpIndex, OpValue, Process, ProcessId};

    /// A compact history builder for the workload checkers' tests: ops are
    /// appended with increasing index and time (1 ms apart).
    #[derive(Default)]
    pub(crate) struct H {
        pub ops: Vec<Op>,
    }

    impl H {
        pub(crate) fn op(&mut self, t: OpType, p: u64, f: F, mops: Vec<MicroOp>) -> u64 {
            let i = self.ops.len() as u64;
            self.ops.push(Op {
                index: OpIndex(i),
                time_ns: Some(i as i64 * 1_000_000),
                op_type: t,
                process: Some(Process::Client(ProcessId(p))),
                f: Some(f),
                value: OpValue::Txn(mops),
                error: None,
                extra: store::Extra::new(),
            });
            i
        }
        /// Invocation and completion back to back.
        pub(crate) fn both(
            &mut self,
            t: OpType,
            p: u64,
            f: F,
            inv: Vec<MicroOp>,
            done: Vec<MicroOp>,
        ) -> u64 {
            self.op(OpType::Invoke, p, f.clone(), inv);
            self.op(t, p, f, done)
        }
        pub(crate) fn history(self) -> History {
            History::new(self.ops).unwrap()
        }
    }

    pub(crate) fn r(k: i64, v: Option<i64>) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            v.map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(v))),
        )
    }
    pub(crate) fn rn(k: i64) -> MicroOp {
        MicroOp::Read(Key::int(k), ReadValue::Nil)
    }
    pub(crate) fn w(k: i64, v: i64) -> MicroOp {
        MicroOp::Write(Key::int(k), Val::int(v))
    }
    pub(crate) fn ap(k: i64, v: i64) -> MicroOp {
        MicroOp::Append(Key::int(k), Val::int(v))
    }
    pub(crate) fn rl(k: i64, vs: &[i64]) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            ReadValue::List(vs.iter().map(|&v| Val::int(v)).collect::<Vec<_>>().into()),
        )
    }

    #[test]
    fn intervals_collapse_runs() {
        assert_eq!(
            intervals(&[0, 1, 2, 3, 4, 7, 9, 10, 11, 12]),
            "#{0..4 7 9..12}"
        );
        assert_eq!(intervals(&[]), "#{}");
    }

    #[test]
    fn a_function_that_never_succeeded_makes_the_run_unknown() {
        let mut h = H::default();
        h.both(
            OpType::Fail,
            0,
            F::Transfer,
            vec![w(0, -1), w(1, 1)],
            vec![w(0, -1), w(1, 1)],
        );
        h.both(OpType::Ok, 1, F::Read, vec![rn(0)], vec![r(0, Some(3))]);
        let h = h.history();
        let mut report = Report::new("bank");
        settle_stats(&h, &mut report);
        assert_eq!(report.valid, Valid::Unknown);
        assert_eq!(
            report.reason.as_deref(),
            Some("no transfer operation completed ok")
        );
        assert_eq!(report.stats["by-f"]["read"]["ok-count"], 1);
    }
}
