//! What the timeline and the plots draw, extracted once from a `History`:
//! one [`Span`] per operation (invocation → completion) and one
//! [`FaultWindow`] per interval a fault was in force on the same targets
//! (`store::run::faults`: what took effect, not what was asked).
//!
//! Key decision: histories from other tools may lack `time`; then every op
//! gets its position as its time (one "tick" per op) and `synthetic_time` is
//! set, so the pictures still show order and overlap instead of failing.

use store::{History, OpType, Process};

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Definitely happened.
    Ok,
    /// Definitely did not happen.
    Fail,
    /// Unknown (timeout, connection lost, or never completed).
    Info,
}

impl Outcome {
    /// The history spelling.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Info => "info",
        }
    }

    /// All outcomes, in drawing order.
    pub const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Fail, Outcome::Info];
}

/// One operation from invocation to completion.
#[derive(Clone, Debug)]
pub struct Span {
    /// Position of the invocation (or of a completion-only op) in the history.
    pub invoke_pos: usize,
    /// Position of the completion, if any.
    pub complete_pos: Option<usize>,
    /// The process (`None` when the history did not say).
    pub process: Option<Process>,
    /// Start time, ns since the test start (or synthetic).
    pub start_ns: i64,
    /// End time; for an op that never completed, the end of the history.
    pub end_ns: i64,
    /// How it ended; an invocation that never completed counts as `info`.
    pub outcome: Outcome,
    /// Whether the op never completed.
    pub pending: bool,
}

impl Span {
    /// Latency in nanoseconds.
    pub fn latency_ns(&self) -> i64 {
        (self.end_ns - self.start_ns).max(0)
    }
}

/// The kind of a fault, from the nemesis op's `f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// `start-partition` … `stop-partition`.
    Partition,
    /// `kill` … `start`.
    Kill,
    /// `pause` … `resume`.
    Pause,
    /// `start-clock` … `stop-clock`.
    Clock,
    /// `start-loss` … `stop-loss`.
    Loss,
    /// `leave` … `join` (a node out of the cluster).
    Membership,
}

impl FaultKind {
    /// Every kind, in the order the lanes and legends draw them.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Partition,
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Clock,
        FaultKind::Loss,
        FaultKind::Membership,
    ];

    /// A short label.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Clock => "clock",
            FaultKind::Loss => "loss",
            FaultKind::Membership => "membership",
        }
    }

    /// Shading colour (RGB) used by the timeline and the plots alike.
    pub fn rgb(self) -> (u8, u8, u8) {
        match self {
            FaultKind::Partition => (120, 120, 220),
            FaultKind::Kill => (220, 110, 110),
            FaultKind::Pause => (220, 180, 80),
            FaultKind::Clock => (110, 190, 190),
            FaultKind::Loss => (170, 110, 200),
            FaultKind::Membership => (120, 180, 110),
        }
    }

    /// The kind of a fault window of `store::run::faults` (`None`: a
    /// fault the pictures do not shade, e.g. an instant).
    fn of_window(fault: &str) -> Option<FaultKind> {
        Some(match fault {
            "partition" => FaultKind::Partition,
            "kill" => FaultKind::Kill,
            "pause" => FaultKind::Pause,
            "clock" => FaultKind::Clock,
            "loss" => FaultKind::Loss,
            "membership" => FaultKind::Membership,
            _ => return None,
        })
    }
}

/// A period during which a fault was active.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultWindow {
    /// What kind of fault.
    pub kind: FaultKind,
    /// When the fault began (its start op's invocation).
    pub start_ns: i64,
    /// When it was healed (its stop op's completion), or the end of the history.
    pub end_ns: i64,
    /// Whether a stop op closed it.
    pub healed: bool,
    /// The start op's value, compactly (e.g. the grudge).
    pub detail: String,
    /// The nodes the fault was in force on (empty when its ops named none).
    pub targets: Vec<String>,
}

impl FaultWindow {
    /// `(kind, start, end)` in seconds after `t0_s`: what the plots shade.
    pub fn seconds_after(&self, t0_s: f64) -> (FaultKind, f64, f64) {
        (
            self.kind,
            self.start_ns as f64 / 1e9 - t0_s,
            self.end_ns as f64 / 1e9 - t0_s,
        )
    }
}

/// Everything drawn, in history order.
#[derive(Clone, Debug, Default)]
pub struct Extract {
    /// Client and nemesis operations (nemesis ops are spans too).
    pub spans: Vec<Span>,
    /// Fault windows.
    pub windows: Vec<FaultWindow>,
    /// First and last time in the history.
    pub t_min_ns: i64,
    /// Last time in the history.
    pub t_max_ns: i64,
    /// Times are op positions, not nanoseconds.
    pub synthetic_time: bool,
}

/// The time of every op: its `time`, or its position when any op lacks one.
fn op_times(history: &History) -> (Vec<i64>, bool) {
    let n = history.len();
    if (0..n).all(|pos| history.time_ns(pos).is_some()) {
        let times = (0..n).map(|pos| history.time_ns(pos).unwrap_or(0));
        (times.collect(), false)
    } else {
        ((0..n as i64).collect(), true)
    }
}

/// Extracts spans and fault windows from `history`.
pub fn extract(history: &History) -> Extract {
    let (times, synthetic_time) = op_times(history);
    let t_min_ns = times.iter().copied().min().unwrap_or(0);
    let t_max_ns = times.iter().copied().max().unwrap_or(0);
    let mut spans = Vec::with_capacity(history.len() / 2 + 1);
    for pos in 0..history.len() {
        let partner = history.partner(pos);
        let is_invoke = history.op_type(pos) == OpType::Invoke;
        if !is_invoke && partner.is_some() {
            continue;
        }
        let complete_pos = if is_invoke { partner } else { Some(pos) };
        let (end_ns, outcome, pending) = match complete_pos {
            Some(c) => (
                times[c],
                match history.op_type(c) {
                    OpType::Ok => Outcome::Ok,
                    OpType::Fail => Outcome::Fail,
                    _ => Outcome::Info,
                },
                false,
            ),
            None => (t_max_ns, Outcome::Info, true),
        };
        spans.push(Span {
            invoke_pos: pos,
            complete_pos,
            process: history.process(pos),
            start_ns: times[pos],
            end_ns: end_ns.max(times[pos]),
            outcome,
            pending,
        });
    }
    // One extraction of what took effect (`store::run::faults`), shared
    // with results.json and the lost-writes report.
    let windows = store::run::faults::windows(history, &|p| times.get(p).copied().unwrap_or(0))
        .into_iter()
        .filter_map(|w| {
            let kind = FaultKind::of_window(&w.fault)?;
            Some(FaultWindow {
                kind,
                start_ns: w.start_ns,
                end_ns: w.end_ns.unwrap_or(t_max_ns).max(w.start_ns),
                healed: w.end_ns.is_some(),
                detail: value_text(history, w.start_pos, 200),
                targets: w.targets,
            })
        })
        .collect();
    Extract {
        spans,
        windows,
        t_min_ns,
        t_max_ns,
        synthetic_time,
    }
}

/// The value of the op at `pos` as compact text (`[[append 3 7] [r 4 [1 7]]]`),
/// cut at `max` chars; read from the history, not from a materialised op.
pub fn value_text(history: &History, pos: usize, max: usize) -> String {
    let mut s = String::new();
    match (history.txn(pos), history.data(pos)) {
        (Some(mops), _) => {
            s.push('[');
            for (i, m) in mops.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                if s.len() > max {
                    break;
                }
                match m {
                    store::MicroOp::ReadRange(_) => {
                        s.push_str(&checker::explain::fmt_mop(m));
                    }
                    store::MicroOp::Append(k, v) => s.push_str(&format!("[append {k} {v}]")),
                    store::MicroOp::Write(k, v) => s.push_str(&format!("[w {k} {v}]")),
                    store::MicroOp::Read(k, r) => {
                        s.push_str(&format!("[r {k} "));
                        match r {
                            store::ReadValue::Nil => s.push_str("nil"),
                            store::ReadValue::Scalar(v) => s.push_str(&v.to_string()),
                            store::ReadValue::List(l) => {
                                s.push('[');
                                for (j, v) in l.iter().enumerate() {
                                    if j > 0 {
                                        s.push(' ');
                                    }
                                    if s.len() > max {
                                        break;
                                    }
                                    s.push_str(&v.to_string());
                                }
                                s.push(']');
                            }
                        }
                        s.push(']');
                    }
                }
            }
            s.push(']');
        }
        (None, Some(d)) => data_text(d, &mut s, max),
        (None, None) => {}
    }
    truncate(s, max)
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// Compact EDN-ish text of a data tree.
pub fn data_text(d: &store::Data, s: &mut String, max: usize) {
    use store::Data;
    if s.len() > max {
        return;
    }
    match d {
        Data::Nil => s.push_str("nil"),
        Data::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Data::Int(i) => s.push_str(&i.to_string()),
        Data::Float(f) => s.push_str(&f.to_string()),
        Data::Str(x) => s.push_str(&format!("{x:?}")),
        Data::Keyword(k) => {
            s.push(':');
            s.push_str(k);
        }
        Data::Symbol(x) => s.push_str(x),
        Data::Vec(v) | Data::Set(v) => {
            s.push_str(if matches!(d, Data::Set(_)) { "#{" } else { "[" });
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                data_text(x, s, max);
            }
            s.push(if matches!(d, Data::Set(_)) { '}' } else { ']' });
        }
        Data::Map(m) => {
            s.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                data_text(k, s, max);
                s.push(' ');
                data_text(v, s, max);
            }
            s.push('}');
        }
        Data::Tagged(t, inner) => {
            s.push('#');
            s.push_str(t);
            s.push(' ');
            data_text(inner, s, max);
        }
    }
}
