//! Lost acknowledged writes, in plain words: the `ok` writes of a
//! list-append or rw-register history that the database acknowledged and
//! later reads no longer show, each placed in the crash window it fell in
//! (acknowledged before which kill / loss of un-fsynced writes, missing
//! from which read after which restart).
//!
//! This is a reading aid on top of the checker's verdict, not a verdict of
//! its own: the cycle or `lost-update`/`incompatible-order` anomaly the
//! checker reports is the proof; this module names the writes.
//!
//! Rules (real-time order by history position: a read "after" a write is
//! invoked after the write's `ok` completion):
//! * list-append: an `ok` append `(k, v)` is lost when at least one `ok`
//!   read of `k` was invoked after it was acknowledged and none of those
//!   reads contains `v`.
//! * rw-register: an `ok` write `(k, v)` is lost when reads of `k` were
//!   invoked after it was acknowledged, none of them returned `v`, and one
//!   of them returned an *older* state: the initial `nil`, or a value
//!   whose write was acknowledged before this write was invoked (the key
//!   went back in time; a newer overwrite is not a loss).
//!
//! Crash window of a lost write: the first `kill` or
//! `lose-unfsynced-writes` nemesis op completed after its acknowledgement
//! and before the first read that misses it (none: the write was missing
//! before any later crash)
//! (with when it began: a write acknowledged while a coordinated kill is
//! under way came from a node not yet killed), and the first `start` after
//! that fault (the restart). The report is bounded
//! ([`MAX_LISTED`] writes listed); the count is exact.

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use store::{Atom, F, History, MicroOp, OpType, Process, ReadValue};

/// Most lost writes listed in `results.json` and the text report.
pub const MAX_LISTED: usize = 100;

/// The fault a lost write was acknowledged before, and the restart after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashWindow {
    /// `kill` or `lose-unfsynced-writes`.
    pub fault: String,
    /// History index of the fault's `info` completion (else its invocation).
    pub fault_index: u64,
    /// When it began (its invocation), ns since the test began.
    pub fault_begin_ns: Option<i64>,
    /// When it was done (its completion).
    pub fault_ns: Option<i64>,
    /// The nodes it hit (from its value), when it names them.
    pub nodes: Vec<String>,
    /// History index and time of the first `start` completion after it.
    pub restart: Option<(u64, Option<i64>)>,
}

/// One acknowledged write that later reads do not show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostWrite {
    /// The key.
    pub key: String,
    /// The value appended or written.
    pub value: String,
    /// History index of the `ok` completion that acknowledged it.
    pub ack_index: u64,
    /// Its time.
    pub ack_ns: Option<i64>,
    /// History index of the first later read that lacks it.
    pub missing_index: u64,
    /// Its time.
    pub missing_ns: Option<i64>,
    /// The crash window, when a kill or loss followed the acknowledgement.
    pub window: Option<CrashWindow>,
}

/// Every lost write of a history (bounded list, exact count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LostWrites {
    /// How many there are.
    pub count: u64,
    /// The first [`MAX_LISTED`], in acknowledgement order.
    pub listed: Vec<LostWrite>,
    /// How many of them fall in a crash window.
    pub in_crash_windows: u64,
}

fn atom(a: &Atom) -> String {
    match a {
        Atom::Int(i) => i.to_string(),
        other => other.to_string(),
    }
}

struct Write {
    key: store::Key,
    val: store::Val,
    invoke_pos: usize,
    ack_pos: usize,
    append: bool,
}

struct Read {
    invoke_pos: usize,
    pos: usize,
    value: ReadValue,
}

/// Finds the lost writes of `history` ([`LostWrites`]; empty for other
/// workloads).
pub fn find(history: &History) -> LostWrites {
    let mut pending: HashMap<u64, usize> = HashMap::new();
    let mut writes: Vec<Write> = Vec::new();
    let mut reads: BTreeMap<store::Key, Vec<Read>> = BTreeMap::new();
    // (completion, invocation, f) of every kill and loss.
    let mut faults: Vec<(usize, usize, String)> = Vec::new();
    let mut nemesis_invoke = 0usize;
    let mut starts: Vec<usize> = Vec::new();
    for pos in 0..history.len() {
        match history.process(pos) {
            Some(Process::Nemesis) => {
                if history.op_type(pos) != OpType::Info {
                    nemesis_invoke = pos;
                    continue;
                }
                // Nemesis ops are sequential: the last invocation is this one's.
                let begin = nemesis_invoke.min(pos);
                match history.f(pos) {
                    Some(F::Kill) if store::run::faults::took_effect(history, pos) => {
                        faults.push((pos, begin, "kill".into()))
                    }
                    Some(F::Start) => starts.push(pos),
                    Some(F::Other(s)) if &**s == "lose-unfsynced-writes" => {
                        faults.push((pos, begin, s.to_string()))
                    }
                    _ => {}
                }
            }
            Some(Process::Client(p)) => {
                let t = history.op_type(pos);
                if t == OpType::Invoke {
                    pending.insert(p.0, pos);
                    continue;
                }
                let invoke_pos = pending.remove(&p.0).unwrap_or(pos);
                if t != OpType::Ok {
                    continue;
                }
                let Some(txn) = history.txn(pos) else {
                    continue;
                };
                for m in txn.iter() {
                    match m {
                        MicroOp::Append(k, v) | MicroOp::Write(k, v) => writes.push(Write {
                            key: k.clone(),
                            val: v.clone(),
                            invoke_pos,
                            ack_pos: pos,
                            append: matches!(m, MicroOp::Append(..)),
                        }),
                        MicroOp::Read(k, v) => reads.entry(k.clone()).or_default().push(Read {
                            invoke_pos,
                            pos,
                            value: v.clone(),
                        }),
                        MicroOp::ReadRange(_) => {}
                    }
                }
            }
            None => {}
        }
    }
    // Register: when each value's write was acknowledged (older-state test).
    let mut acked_at: HashMap<(&store::Key, &store::Val), usize> = HashMap::new();
    for w in writes.iter().filter(|w| !w.append) {
        acked_at.insert((&w.key, &w.val), w.ack_pos);
    }
    let mut out = LostWrites::default();
    for w in &writes {
        let Some(rs) = reads.get(&w.key) else {
            continue;
        };
        let later: Vec<&Read> = rs.iter().filter(|r| r.invoke_pos > w.ack_pos).collect();
        if later.is_empty() {
            continue;
        }
        let shows = |r: &Read| match &r.value {
            ReadValue::List(l) => l.contains(&w.val),
            ReadValue::Scalar(x) => *x == w.val,
            ReadValue::Nil => false,
        };
        if later.iter().any(|r| shows(r)) {
            continue;
        }
        let missing = if w.append {
            later.first().copied()
        } else {
            later.iter().copied().find(|r| match &r.value {
                ReadValue::Nil => true,
                ReadValue::Scalar(x) => acked_at
                    .get(&(&w.key, x))
                    .is_some_and(|&a| a < w.invoke_pos),
                ReadValue::List(_) => false,
            })
        };
        let Some(missing) = missing else {
            continue;
        };
        let window = faults
            .iter()
            .find(|(p, _, _)| *p > w.ack_pos)
            // Only a fault before the read that misses the write is its window.
            .filter(|(p, _, _)| *p < missing.pos)
            .map(|(p, begin, f)| CrashWindow {
                fault: f.clone(),
                fault_index: history.index(*p).0,
                fault_begin_ns: history.time_ns(*begin),
                fault_ns: history.time_ns(*p),
                nodes: nodes_of(history, *p),
                restart: starts
                    .iter()
                    .find(|s| **s > *p)
                    .map(|s| (history.index(*s).0, history.time_ns(*s))),
            });
        out.count += 1;
        if window.is_some() {
            out.in_crash_windows += 1;
        }
        if out.listed.len() < MAX_LISTED {
            out.listed.push(LostWrite {
                key: atom(&w.key.0),
                value: atom(&w.val.0),
                ack_index: history.index(w.ack_pos).0,
                ack_ns: history.time_ns(w.ack_pos),
                missing_index: history.index(missing.pos).0,
                missing_ns: history.time_ns(missing.pos),
                window,
            });
        }
    }
    out
}

/// Node names in a nemesis op's value: a list of names, or the keys of a
/// per-node map.
fn nodes_of(history: &History, pos: usize) -> Vec<String> {
    use store::Data;
    let name = |d: &Data| match d {
        Data::Str(s) => Some(s.to_string()),
        _ => None,
    };
    match history.data(pos) {
        Some(Data::Vec(v)) => v.iter().filter_map(name).collect(),
        Some(Data::Map(m)) => m.iter().filter_map(|(k, _)| name(k)).collect(),
        _ => Vec::new(),
    }
}

fn secs(ns: Option<i64>) -> String {
    ns.map_or_else(|| "?".to_string(), |n| format!("{:.3} s", n as f64 / 1e9))
}

impl LostWrite {
    /// One line: which write, when acknowledged, in which window, where missing.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} to key {} acknowledged at {} (op {})",
            self.value,
            self.key,
            secs(self.ack_ns),
            self.ack_index
        );
        match &self.window {
            Some(w) => {
                let nodes = if w.nodes.is_empty() {
                    String::new()
                } else {
                    format!(" of {}", w.nodes.join(", "))
                };
                let when = if w.fault_begin_ns.is_some_and(|b| Some(b) != w.fault_ns) {
                    format!("begun at {}, done at", secs(w.fault_begin_ns))
                } else {
                    "at".to_string()
                };
                s.push_str(&format!(
                    ", before {}{nodes} {when} {} (op {})",
                    w.fault,
                    secs(w.fault_ns),
                    w.fault_index
                ));
                match w.restart {
                    Some((i, t)) => {
                        s.push_str(&format!(", restarted at {} (op {i})", secs(t)));
                    }
                    None => s.push_str(", never restarted"),
                }
            }
            None => s.push_str(", with no kill or loss between it and the read that misses it"),
        }
        s.push_str(&format!(
            "; missing from the read at {} (op {})",
            secs(self.missing_ns),
            self.missing_index
        ));
        s
    }
}

impl LostWrites {
    /// The `results.json` field `lost-writes`: `{count, in-crash-windows,
    /// listed: [...], omitted}`.
    pub fn to_json(&self) -> Value {
        let listed: Vec<Value> = self
            .listed
            .iter()
            .map(|l| {
                let mut v = json!({
                    "key": l.key, "value": l.value,
                    "ack-index": l.ack_index, "ack-time-ns": l.ack_ns,
                    "missing-index": l.missing_index, "missing-time-ns": l.missing_ns,
                    "explanation": l.sentence(),
                });
                if let Some(w) = &l.window {
                    v["window"] = json!({
                        "fault": w.fault, "fault-index": w.fault_index,
                        "fault-begin-time-ns": w.fault_begin_ns,
                        "fault-time-ns": w.fault_ns, "nodes": w.nodes,
                        "restart-index": w.restart.map(|r| r.0),
                        "restart-time-ns": w.restart.and_then(|r| r.1),
                    });
                }
                v
            })
            .collect();
        json!({
            "count": self.count,
            "in-crash-windows": self.in_crash_windows,
            "listed": listed,
            "omitted": self.count - self.listed.len() as u64,
        })
    }

    /// The text report's paragraph (empty when nothing was lost).
    pub fn render_text(&self, shown: usize) -> String {
        if self.count == 0 {
            return String::new();
        }
        let mut s = format!(
            "LOST ACKNOWLEDGED WRITES: {} write(s) the database acknowledged are missing from every later read ({} in a crash window):\n",
            self.count, self.in_crash_windows
        );
        for l in self.listed.iter().take(shown) {
            s.push_str("  - ");
            s.push_str(&l.sentence());
            s.push('\n');
        }
        let more = self.count - self.listed.iter().take(shown).count() as u64;
        if more > 0 {
            s.push_str(&format!(
                "  … and {more} more (results.json `lost-writes` lists up to {MAX_LISTED})\n"
            ));
        }
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use store::{Data, Key, Op, OpIndex, OpValue, Val};

    /// A history written op by op; op `i` happens at `i` ms.
    #[derive(Default)]
    struct H(Vec<Op>);

    impl H {
        fn push(&mut self, mut op: Op) -> &mut H {
            let i = self.0.len() as u64;
            op.index = OpIndex(i);
            op.time_ns = Some(i as i64 * 1_000_000);
            self.0.push(op);
            self
        }
        /// Invoke + completion of one client transaction.
        fn txn(&mut self, p: u64, t: OpType, mops: Vec<MicroOp>) -> &mut H {
            let inv: Vec<MicroOp> = mops
                .iter()
                .map(|m| match m {
                    MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
                    m => m.clone(),
                })
                .collect();
            self.push(Op::txn(0, OpType::Invoke, p, inv));
            self.push(Op::txn(0, t, p, mops))
        }
        fn nemesis(&mut self, f: F, nodes: &[&str]) -> &mut H {
            let v = Data::Vec(nodes.iter().map(|n| Data::Str(n.to_string())).collect());
            for t in [OpType::Invoke, OpType::Info] {
                self.push(Op {
                    index: OpIndex(0),
                    time_ns: None,
                    op_type: t,
                    process: Some(Process::Nemesis),
                    f: Some(f.clone()),
                    value: OpValue::Data(Box::new(v.clone())),
                    error: None,
                    extra: store::Extra::new(),
                });
            }
            self
        }
        fn history(&self) -> History {
            History::new(self.0.clone()).unwrap()
        }
    }

    fn append(k: i64, v: i64) -> MicroOp {
        MicroOp::Append(Key::int(k), Val::int(v))
    }
    fn read(k: i64, vs: &[i64]) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            ReadValue::List(vs.iter().map(|v| Val::int(*v)).collect()),
        )
    }
    fn write(k: i64, v: i64) -> MicroOp {
        MicroOp::Write(Key::int(k), Val::int(v))
    }
    fn read_reg(k: i64, v: Option<i64>) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            v.map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(v))),
        )
    }

    #[test]
    fn an_append_acknowledged_before_a_kill_and_missing_after_the_restart_is_named() {
        let mut h = H::default();
        h.txn(0, OpType::Ok, vec![append(1, 1)])
            .txn(1, OpType::Ok, vec![append(1, 2)]) // ops 2,3: acked at 3 ms
            .nemesis(F::Kill, &["n1", "n2", "n3"]) // info at op 5
            .nemesis(F::Other("lose-unfsynced-writes".into()), &["n1"])
            .nemesis(F::Start, &["n1", "n2", "n3"]) // info at op 9
            .txn(0, OpType::Ok, vec![read(1, &[1])]) // read at op 11
            .txn(1, OpType::Ok, vec![append(1, 3)])
            .txn(0, OpType::Ok, vec![read(1, &[1, 3])]);
        let lost = find(&h.history());
        assert_eq!(lost.count, 1);
        assert_eq!(lost.in_crash_windows, 1);
        let l = &lost.listed[0];
        assert_eq!((l.key.as_str(), l.value.as_str()), ("1", "2"));
        assert_eq!(l.ack_index, 3);
        assert_eq!(l.missing_index, 11);
        let w = l.window.as_ref().unwrap();
        assert_eq!((w.fault.as_str(), w.fault_index), ("kill", 5));
        assert_eq!(w.nodes, vec!["n1", "n2", "n3"]);
        assert_eq!(w.restart.map(|r| r.0), Some(9));
        let text = lost.render_text(10);
        assert!(
            text.contains(
                "2 to key 1 acknowledged at 0.003 s (op 3), before kill of n1, n2, n3 begun at 0.004 s, done at 0.005 s (op 5), \
                 restarted at 0.009 s (op 9); missing from the read at 0.011 s (op 11)"
            ),
            "{text}"
        );
        let j = lost.to_json();
        assert_eq!(j["count"], 1);
        assert_eq!(j["listed"][0]["window"]["fault"], "kill");
        assert_eq!(j["omitted"], 0);
    }

    #[test]
    fn nothing_is_lost_when_later_reads_show_every_acknowledged_append() {
        let mut h = H::default();
        h.txn(0, OpType::Ok, vec![append(1, 1)])
            .nemesis(F::Kill, &["n1"])
            .nemesis(F::Start, &["n1"])
            .txn(1, OpType::Ok, vec![read(1, &[1])])
            // Failed and indeterminate appends are never "acknowledged".
            .txn(0, OpType::Fail, vec![append(1, 2)])
            .txn(0, OpType::Info, vec![append(1, 3)])
            .txn(1, OpType::Ok, vec![read(1, &[1])])
            // An append no later read looked at is not lost either.
            .txn(0, OpType::Ok, vec![append(2, 9)]);
        let lost = find(&h.history());
        assert_eq!(lost, LostWrites::default());
        assert!(lost.render_text(10).is_empty());
    }

    #[test]
    fn a_write_acknowledged_after_the_crash_is_judged_by_the_reads_after_it() {
        let mut h = H::default();
        h.txn(0, OpType::Ok, vec![append(1, 1)])
            .nemesis(F::Kill, &["n1"])
            .nemesis(F::Start, &["n1"])
            // Acknowledged after the restart, read back: not lost.
            .txn(1, OpType::Ok, vec![append(1, 2)])
            .txn(0, OpType::Ok, vec![read(1, &[2])])
            // Acknowledged after the crash, missing later, no fault after
            // it: lost, outside any crash window.
            .txn(1, OpType::Ok, vec![append(1, 3)])
            .txn(0, OpType::Ok, vec![read(1, &[2])]);
        let lost = find(&h.history());
        assert_eq!(lost.count, 2, "{:?}", lost.listed);
        assert_eq!(lost.in_crash_windows, 1);
        let vals: Vec<&str> = lost.listed.iter().map(|l| l.value.as_str()).collect();
        assert_eq!(vals, vec!["1", "3"]);
        assert!(lost.listed[1].window.is_none());
        assert!(
            lost.listed[1]
                .sentence()
                .contains("with no kill or loss between it and the read that misses it")
        );
    }

    #[test]
    fn a_write_missing_before_the_next_kill_has_no_crash_window() {
        let mut h = H::default();
        h.txn(0, OpType::Ok, vec![append(1, 1)])
            .txn(1, OpType::Ok, vec![read(1, &[])])
            .nemesis(F::Kill, &["n1"])
            .txn(1, OpType::Ok, vec![read(1, &[])]);
        let lost = find(&h.history());
        assert_eq!(lost.count, 1);
        assert_eq!(lost.in_crash_windows, 0);
        assert!(lost.listed[0].window.is_none());
    }

    #[test]
    fn a_register_that_goes_back_to_an_older_value_lost_the_newer_write() {
        let mut h = H::default();
        h.txn(0, OpType::Ok, vec![write(1, 1)])
            .txn(1, OpType::Ok, vec![write(1, 2)])
            .nemesis(F::Kill, &["n2"])
            .nemesis(F::Start, &["n2"])
            .txn(0, OpType::Ok, vec![read_reg(1, Some(1))])
            // A newer overwrite hides 3 without losing it.
            .txn(0, OpType::Ok, vec![write(2, 3)])
            .txn(1, OpType::Ok, vec![write(2, 4)])
            .txn(0, OpType::Ok, vec![read_reg(2, Some(4))]);
        let lost = find(&h.history());
        assert_eq!(lost.count, 1, "{:?}", lost.listed);
        assert_eq!(lost.listed[0].value, "2");
        assert_eq!(
            lost.listed[0].window.as_ref().unwrap().nodes,
            vec!["n2".to_string()]
        );
    }

    #[test]
    fn the_list_is_bounded_and_the_count_exact() {
        let mut h = H::default();
        for v in 0..(MAX_LISTED as i64 + 20) {
            h.txn(0, OpType::Ok, vec![append(1, v)]);
        }
        h.nemesis(F::Kill, &["n1"])
            .txn(1, OpType::Ok, vec![read(1, &[])]);
        let lost = find(&h.history());
        assert_eq!(lost.count, MAX_LISTED as u64 + 20);
        assert_eq!(lost.listed.len(), MAX_LISTED);
        assert_eq!(lost.to_json()["omitted"], 20);
        assert!(lost.render_text(3).contains("… and 117 more"));
    }
}
