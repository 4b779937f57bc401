//! Fault windows from what took effect, not from what was asked: the one
//! extraction behind `results.json`'s `fault-windows` ([`super::RunStats`]),
//! the plots, the timeline and the lost-writes report (`engine::report`).
//!
//! A window is an interval in which a fault was in force on a set of
//! targets (nodes); one window per (fault, target set) interval, so a
//! window ends when its fault is healed or when the set of targets it is
//! in force on changes. Per fault:
//!
//! - `kill` … `start`, `pause` … `resume`: the targets are the nodes the
//!   `info` completion's value lists (`nemesis` records the nodes an op
//!   took effect on: a pause of a dead process lists nothing and is no
//!   window; a start lists the nodes running again). A kill that takes
//!   effect on a paused node ends its pause (a killed, restarted process
//!   is not paused).
//! - `start-partition` … `stop-partition`: the nodes of the recorded grudge
//!   that drop something (a grudge that installed no rule is no window).
//! - clock (`start-clock`, `stop-clock`): per node, in force while its
//!   clock is off true time (offset or rate): the completion's
//!   `clock-in-force` map names every such node after the op; a strobe is
//!   in force on its nodes for its op (its duration); a reset closes and
//!   never opens a window. Records without `clock-in-force` follow the
//!   ops' values (bump, set, reset, skew).
//! - any other `start-X` … `stop-X`, `leave` … `join`: as asked (targets
//!   when the value is a node list); any other nemesis op is an instant.
//!
//! Times: a fault is in force from its start op's invocation to its stop
//! op's completion (covering: the fault may take effect any time within
//! its op). An op without completion (the run died) is in force as asked
//! until the end. Old records (values listing what was asked) load and
//! give the windows they always gave.

use crate::Data;
use crate::history::{History, OpType};
use std::collections::{BTreeMap, BTreeSet};

/// The key of a clock op's completion value that names every node whose
/// clock is off true time after the op (`nemesis::clock`).
pub const CLOCK_IN_FORCE: &str = "clock-in-force";

/// The target of a fault whose op did not name its nodes.
const UNKNOWN: &str = "";

/// One interval in which a fault was in force on the same targets.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The fault: `kill`, `pause`, `partition`, `clock`, `membership`, the
    /// `X` of `start-X`, or the `f` of an instant.
    pub fault: String,
    /// When it began, ns (history time).
    pub start_ns: i64,
    /// When it ended; `None` when still in force at the end of the history.
    pub end_ns: Option<i64>,
    /// The nodes it was in force on (empty when the ops named none).
    pub targets: Vec<String>,
    /// History position of the op that opened it (its invocation when it
    /// has one).
    pub start_pos: usize,
}

/// What an op does to its fault's target set.
enum Change {
    /// Adds these targets.
    Add(Vec<String>),
    /// Removes these targets (`None`: all).
    Remove(Option<Vec<String>>),
}

#[derive(Default)]
struct Fault {
    set: BTreeSet<String>,
    open: Option<usize>,
    last_ns: i64,
}

#[derive(Default)]
struct Builder {
    faults: BTreeMap<String, Fault>,
    windows: Vec<Window>,
    /// Old records: each node's clock offset and rate as the ops asked.
    clock_offsets: BTreeMap<String, f64>,
    clock_rates: BTreeSet<String>,
}

impl Builder {
    /// Sets `fault`'s target set to `set` at `t` (clamped so a fault's
    /// changes stay in time order), closing and opening windows.
    fn set(&mut self, fault: &str, set: BTreeSet<String>, t: i64, pos: usize) {
        let st = self.faults.entry(fault.to_string()).or_default();
        if st.set == set {
            return;
        }
        let t = t.max(st.last_ns);
        st.last_ns = t;
        if let Some(i) = st.open.take()
            && let Some(w) = self.windows.get_mut(i)
        {
            w.end_ns = Some(t);
        }
        if !set.is_empty() {
            st.open = Some(self.windows.len());
            self.windows.push(Window {
                fault: fault.to_string(),
                start_ns: t,
                end_ns: None,
                targets: set
                    .iter()
                    .filter(|n| n.as_str() != UNKNOWN)
                    .cloned()
                    .collect(),
                start_pos: pos,
            });
        }
        st.set = set;
    }

    fn current(&self, fault: &str) -> BTreeSet<String> {
        self.faults
            .get(fault)
            .map(|f| f.set.clone())
            .unwrap_or_default()
    }

    fn apply(&mut self, fault: &str, change: Change, t: i64, pos: usize) {
        let mut set = self.current(fault);
        match change {
            Change::Add(nodes) => set.extend(nodes),
            Change::Remove(None) => set.clear(),
            Change::Remove(Some(nodes)) => {
                if set.contains(UNKNOWN) {
                    // The start named no nodes: any stop ends it.
                    set.clear();
                }
                for n in nodes {
                    set.remove(&n);
                }
            }
        }
        self.set(fault, set, t, pos);
    }
}

fn name(d: &Data) -> Option<&str> {
    match d {
        Data::Str(s) | Data::Keyword(s) => Some(s),
        _ => None,
    }
}

/// A node list (`["n1" "n2"]`, a set, or one name).
fn node_list(d: &Data) -> Option<Vec<String>> {
    match d {
        Data::Vec(v) | Data::Set(v) => v.iter().map(|x| name(x).map(str::to_string)).collect(),
        Data::Str(s) | Data::Keyword(s) => Some(vec![s.clone()]),
        _ => None,
    }
}

fn field<'a>(d: &'a Data, key: &str) -> Option<&'a Data> {
    match d {
        Data::Map(m) => m.iter().find(|(k, _)| name(k) == Some(key)).map(|(_, v)| v),
        _ => None,
    }
}

/// The nodes a kill/pause/start/resume value names: a node list, or a
/// map keyed by node (Jepsen's `{"n1" :killed}`).
fn process_targets(d: &Data) -> Option<Vec<String>> {
    node_list(d).or_else(|| match d {
        Data::Map(m) => m.iter().map(|(k, _)| name(k).map(str::to_string)).collect(),
        _ => None,
    })
}

/// The nodes of a grudge (`{node: [nodes it drops]}`) that drop something.
fn grudge_targets(d: &Data) -> Option<Vec<String>> {
    match d {
        Data::Map(m) => m
            .iter()
            .filter(|(_, v)| !matches!(v, Data::Vec(x) | Data::Set(x) if x.is_empty()))
            .map(|(k, _)| name(k).map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// A number of an op's value (an integer or a float).
pub fn number(d: &Data) -> Option<f64> {
    match d {
        Data::Float(f) => Some(*f),
        Data::Int(i) => Some(*i as f64),
        _ => None,
    }
}

/// The fault a nemesis `f` opens or closes, and whether it opens it.
pub fn window_of(f: &str) -> Option<(&str, bool)> {
    match f {
        "kill" => Some(("kill", true)),
        "start" => Some(("kill", false)),
        "pause" => Some(("pause", true)),
        "resume" => Some(("pause", false)),
        "leave" => Some(("membership", true)),
        "join" => Some(("membership", false)),
        _ => {
            if let Some(k) = f.strip_prefix("start-") {
                Some((k, true))
            } else {
                f.strip_prefix("stop-").map(|k| (k, false))
            }
        }
    }
}

/// Whether the nemesis op completed at `pos` took effect on at least one
/// target (a kill of a process that was already down did not); ops whose
/// value names no targets count as in effect.
pub fn took_effect(history: &History, pos: usize) -> bool {
    let Some(d) = history.data(pos) else {
        return true;
    };
    match history.f(pos).map(|f| f.as_str()) {
        Some("kill" | "pause") => process_targets(d).is_none_or(|t| !t.is_empty()),
        Some("start-partition") => grudge_targets(d).is_none_or(|t| !t.is_empty()),
        _ => true,
    }
}

/// Whether the nemesis op completed at `pos` names at least one target it
/// took effect on (a kill or pause that reached some nodes and failed on
/// others carries an error and still took effect on those).
pub fn names_effect(history: &History, pos: usize) -> bool {
    let Some(d) = history.data(pos) else {
        return false;
    };
    match history.f(pos).map(|f| f.as_str()) {
        Some("kill" | "pause") => process_targets(d).is_some_and(|t| !t.is_empty()),
        Some("start-partition") => grudge_targets(d).is_some_and(|t| !t.is_empty()),
        _ => false,
    }
}

/// The fault windows of `history`, in start order; `time` gives each
/// op's time in ns.
pub fn windows(history: &History, time: &dyn Fn(usize) -> i64) -> Vec<Window> {
    let mut b = Builder::default();
    for pos in 0..history.len() {
        if !history.is_nemesis(pos) {
            continue;
        }
        let Some(f) = history.f(pos).map(|f| f.as_str().to_string()) else {
            continue;
        };
        let is_invoke = history.op_type(pos) == OpType::Invoke;
        if is_invoke && history.partner(pos).is_some() {
            // Taken at its completion, which says what took effect.
            continue;
        }
        let inv = history.invocation(pos).unwrap_or(pos);
        let (t_inv, t_done) = (time(inv), time(pos));
        let value = history.data(pos).cloned().unwrap_or(Data::Nil);
        if f == "start-clock" || f == "stop-clock" {
            clock(&mut b, &value, is_invoke, t_inv, t_done, inv, pos);
            continue;
        }
        let Some((fault, opens)) = window_of(&f) else {
            b.windows.push(Window {
                fault: f.clone(),
                start_ns: t_inv,
                end_ns: Some(t_inv),
                targets: Vec::new(),
                start_pos: inv,
            });
            continue;
        };
        let fault = fault.to_string();
        let targets = match fault.as_str() {
            "kill" | "pause" => process_targets(&value),
            "partition" if opens => grudge_targets(&value),
            "membership" => membership_targets(&value),
            _ => node_list(&value),
        };
        if opens {
            let targets = targets.unwrap_or_else(|| vec![UNKNOWN.to_string()]);
            if fault == "kill" && !is_invoke {
                // A killed process is no longer paused.
                b.apply("pause", Change::Remove(Some(targets.clone())), t_done, pos);
            }
            b.apply(&fault, Change::Add(targets), t_inv, inv);
        } else if !is_invoke {
            b.apply(&fault, Change::Remove(targets), t_done, pos);
        }
    }
    let mut out = b.windows;
    out.sort_by_key(|w| w.start_ns);
    out
}

/// A leave's targets: its node, unless the completion says it was skipped
/// or failed (`[node {"skipped" …}]`).
fn membership_targets(d: &Data) -> Option<Vec<String>> {
    if let Data::Vec(v) = d
        && let [node, result] = v.as_slice()
        && let Some(node) = name(node)
    {
        let not_done = field(result, "skipped").is_some() || field(result, "error").is_some();
        return Some(if not_done {
            Vec::new()
        } else {
            vec![node.to_string()]
        });
    }
    node_list(d)
}

/// A clock op: a strobe is in force on its nodes for the op; after the op
/// the nodes off true time are those of `clock-in-force` (or, in old
/// records, those the ops' values leave off true time).
fn clock(
    b: &mut Builder,
    value: &Data,
    pending: bool,
    t_inv: i64,
    t_done: i64,
    inv: usize,
    pos: usize,
) {
    if let Some(strobe) = field(value, "strobe")
        && let Some(nodes) = process_targets(strobe)
    {
        let mut during = b.current("clock");
        during.extend(nodes);
        b.set("clock", during, t_inv, inv);
    }
    if pending {
        // Never completed: as asked, to the end.
        if let Some(bump) = field(value, "bump").or_else(|| field(value, "set"))
            && let Some(nodes) = process_targets(bump)
        {
            b.apply("clock", Change::Add(nodes), t_inv, inv);
        }
        return;
    }
    let after: BTreeSet<String> = match field(value, CLOCK_IN_FORCE) {
        Some(m) => process_targets(m).unwrap_or_default().into_iter().collect(),
        None => old_clock_state(b, value),
    };
    let t = if after.difference(&b.current("clock")).next().is_some() {
        // Nodes newly off true time: from the op's start.
        t_inv
    } else {
        t_done
    };
    // A node that stays off true time keeps its window; one that is back
    // ends it at the op's completion; one newly off opens at the start.
    let cur = b.current("clock");
    if after.is_superset(&cur) {
        b.set("clock", after, t, inv);
    } else {
        let kept: BTreeSet<String> = cur.intersection(&after).cloned().collect();
        b.set("clock", kept.clone(), t_done, pos);
        if kept != after {
            b.set("clock", after, t_done, pos);
        }
    }
}

/// Old records: each node's offset and rate as bumps, sets, resets and
/// skews asked; the nodes off true time after `value`.
fn old_clock_state(b: &mut Builder, value: &Data) -> BTreeSet<String> {
    let pairs = |k: &str| -> Vec<(String, f64)> {
        match field(value, k) {
            Some(Data::Map(m)) => m
                .iter()
                .filter_map(|(n, v)| Some((name(n)?.to_string(), number(v)?)))
                .collect(),
            _ => Vec::new(),
        }
    };
    for (n, d) in pairs("bump") {
        *b.clock_offsets.entry(n).or_insert(0.0) += d;
    }
    for (n, v) in pairs("set") {
        b.clock_offsets.insert(n, v);
    }
    for (n, r) in pairs("skew") {
        if r != 1.0 {
            b.clock_rates.insert(n);
        }
    }
    if let Some(nodes) = field(value, "reset").and_then(node_list) {
        for n in nodes {
            b.clock_offsets.remove(&n);
            b.clock_rates.remove(&n);
        }
    }
    b.clock_offsets
        .iter()
        .filter(|(_, o)| o.abs() > 1e-9)
        .map(|(n, _)| n.clone())
        .chain(b.clock_rates.iter().cloned())
        .collect()
}
