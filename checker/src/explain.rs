//! Explanations of anomalies: data first ([`Anomaly`], [`Evidence`], [`Step`]),
//! rendered separately as Elle-style text ([`render_text`]) and as Graphviz DOT
//! per cycle ([`render_dot`]).

use crate::anomaly::AnomalyType;
use crate::rels::Rel;
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use store::Data;
use store::{Atom, History, Key, MicroOp, Op, OpIndex, OpType, ReadValue, Val};

/// One anomaly found in a history: its type and the evidence for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Anomaly {
    /// The anomaly type.
    pub kind: AnomalyType,
    /// Ops involved and why.
    pub evidence: Evidence,
}

/// A state a read was expected to see (for `internal`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// A list; `unknown_prefix` when only the tail (the transaction's own
    /// appends) is known, rendered `[... 6]`.
    List {
        /// Whether elements before `tail` are unknown.
        unknown_prefix: bool,
        /// The known elements.
        tail: Vec<Val>,
    },
    /// A register value (`None` = nil).
    Register(Option<Val>),
}

/// The evidence for an anomaly.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// A dependency cycle: `cycle` lists the transactions (first repeated at
    /// the end); `steps[i]` explains `cycle[i] → cycle[i+1]`.
    Cycle {
        /// Transactions around the cycle, the first repeated last.
        cycle: Vec<OpIndex>,
        /// One explained edge per step.
        steps: Vec<Step>,
    },
    /// A read of something it should not have seen (`G1a`, `G1b`,
    /// `garbage-read`, `future-read`).
    Read {
        /// The reading transaction.
        op: OpIndex,
        /// The read micro-op's position in it.
        mop: usize,
        /// The key read.
        key: Key,
        /// The offending element (list-append) or value (rw-register).
        element: Val,
        /// The transaction that wrote it, if any did.
        writer: Option<OpIndex>,
    },
    /// A read inconsistent with the transaction's own earlier reads and writes.
    Internal {
        /// The transaction.
        op: OpIndex,
        /// The read micro-op's position.
        mop: usize,
        /// The key.
        key: Key,
        /// What the read should have returned.
        expected: Expected,
    },
    /// A read list holding an element more than once.
    DuplicateElements {
        /// The transaction.
        op: OpIndex,
        /// The read micro-op's position.
        mop: usize,
        /// The key.
        key: Key,
        /// Each duplicated element with its count.
        duplicates: Vec<(Val, usize)>,
    },
    /// Two reads of a key neither of which is a prefix of the other.
    IncompatibleOrder {
        /// The key.
        key: Key,
        /// The two reads.
        values: [Vec<Val>; 2],
    },
    /// A committed append built on an aborted one.
    DirtyUpdate {
        /// The key.
        key: Key,
        /// The aborted element, then the committed one.
        values: Vec<Val>,
        /// The aborted writer, then the committed one.
        txns: Vec<OpIndex>,
    },
    /// Committed transactions that read the same version of a key and then
    /// all wrote it.
    LostUpdate {
        /// The key.
        key: Key,
        /// The version they read (list or register value; empty/None = initial).
        value: ReadValue,
        /// The transactions.
        txns: Vec<OpIndex>,
    },
    /// A count read whose `count(*)` no version set of its range can give
    /// (`predicate-read-miss`): fewer rows than the transaction itself
    /// inserted there, or more than were ever inserted.
    CountMiss {
        /// The reading transaction.
        op: OpIndex,
        /// The count micro-op's position in it.
        mop: usize,
        /// Inclusive bounds of the range.
        range: [Key; 2],
        /// The count returned.
        count: u64,
        /// The fewest and most rows the range can have held.
        bounds: [u64; 2],
    },
    /// A read the database's expected serialization order contradicts
    /// (`expected-order-violation`, `crate::whitebox::replay`).
    Replay {
        /// The reading transaction.
        op: OpIndex,
        /// The read micro-op's position in it.
        mop: usize,
        /// The key (a range or count read: its lower bound).
        key: Key,
        /// What replaying in commit-timestamp order says it should have
        /// returned (EDN).
        expected: String,
    },
    /// A register's inferred version order is cyclic.
    CyclicVersions {
        /// The key.
        key: Key,
        /// Values in the cycle (`None` = nil).
        scc: Vec<Option<Val>>,
        /// The sources merged so far, the last being the one that was dropped.
        sources: Vec<&'static str>,
    },
    /// A cycle exists among these transactions using only the relations a
    /// model forbids cycles in (Elle's `<model>-cycle-exists`), though no
    /// specific cycle was reported for it.
    CycleExists {
        /// The relations of the subgraph (`extension` marks rw as non-adjacent jumps).
        subgraph: &'static str,
        /// Size of the strongly connected component of that subgraph.
        scc_size: usize,
        /// Its transactions (at most the first 64).
        scc: Vec<OpIndex>,
    },
    /// The dependency graph has no vertex (nothing to check: verdict unknown).
    EmptyGraph,
    /// The cycle search in a component ran out of budget.
    Timeout {
        /// Number of transactions in the component.
        scc_size: usize,
        /// Anomaly types not yet ruled out for it.
        does_not_contain: Vec<AnomalyType>,
    },
}

/// Where a data step happened: the key and the micro-ops of both ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// The key.
    pub key: Key,
    /// Micro-op index in the step's `from`.
    pub a_mop: usize,
    /// Micro-op index in the step's `to`.
    pub b_mop: usize,
}

/// The state of a data step's key that `from` and `to` touched.
#[derive(Clone, Debug, PartialEq)]
pub struct DataStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// Whether the key is a list (`append`) or a register (`w`).
    pub list: bool,
    /// Key and micro-ops; `None` when the edge could not be explained.
    pub site: Option<Site>,
    /// `from`'s value: the element appended / value written or read last;
    /// `None` with a site = the initial (nil) state.
    pub value: Option<Val>,
    /// `to`'s value (ww, rw; always `None` for wr).
    pub value2: Option<Val>,
    /// For a ww/rw step whose version order the complete (SAT) check chose
    /// rather than read off the history: why this order and not the other.
    pub derived: Option<Box<Derived>>,
    /// For a predicate step (`wr`/`rw` of a range read, issue 16): the
    /// range and the row.
    pub predicate: Option<Box<PredicateSite>>,
}

/// Where a predicate step happened: the reader's range read and the row
/// whose insertion changed the predicate's matches.
#[derive(Clone, Debug, PartialEq)]
pub struct PredicateSite {
    /// Inclusive bounds of the range read.
    pub lo: Key,
    /// Upper bound.
    pub hi: Key,
    /// The row (key) inserted.
    pub row: Key,
    /// Whether the range read returned the row (predicate-wr) or missed it
    /// (predicate-rw).
    pub seen: bool,
    /// For a count read: the count it returned (all rows, or none, of the
    /// range; the only counts that pin rows down).
    pub count: Option<u64>,
}

/// A process step: `from` and `to` ran one after the other on one process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// The process, when known.
    pub process: Option<u64>,
}

/// A real-time step: `from` completed before `to` was invoked.
#[derive(Clone, Debug, PartialEq)]
pub struct RealtimeStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// `from`'s completion and `to`'s invocation, when known.
    pub ops: Option<(OpIndex, OpIndex)>,
    /// Nanoseconds between them, when both ops carry a time.
    pub dt_ns: Option<i64>,
}

/// Why the complete check ordered two writers of a key one way.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// The step the opposite order of the two writers would have needed.
    pub refuted: Step,
    /// The cycle that step would have closed (transactions, the first
    /// repeated last) with the relation of each of its steps; empty when
    /// the order is a case of the solver's search.
    pub cycle: Vec<OpIndex>,
    /// Relations along `cycle`.
    pub rels: Vec<Rel>,
    /// `true`: a case of the search (every other case also led to a cycle),
    /// not forced by a single cycle.
    pub assumed: bool,
}

/// One explained edge of a cycle: why `from` must precede `to`, one type
/// per relation.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `to` overwrote (appended after) `from`'s write.
    Ww(DataStep),
    /// `to` read `from`'s write.
    Wr(DataStep),
    /// `from` read a state `to` overwrote.
    Rw(DataStep),
    /// Process order.
    Process(ProcessStep),
    /// Real-time order.
    Realtime(RealtimeStep),
}

impl Step {
    /// A step with only its relation and endpoints (nothing explained).
    pub fn bare(rel: Rel, from: OpIndex, to: OpIndex) -> Step {
        Step::data(rel, from, to, true, None, None, None)
    }

    /// A step of relation `rel` with its data (a process or real-time
    /// `rel` ignores the data).
    pub fn data(
        rel: Rel,
        from: OpIndex,
        to: OpIndex,
        list: bool,
        site: Option<Site>,
        value: Option<Val>,
        value2: Option<Val>,
    ) -> Step {
        let d = DataStep {
            from,
            to,
            list,
            site,
            value,
            value2,
            derived: None,
            predicate: None,
        };
        match rel {
            Rel::Ww => Step::Ww(d),
            Rel::Wr => Step::Wr(d),
            Rel::Rw => Step::Rw(d),
            Rel::Process => Step::Process(ProcessStep {
                from,
                to,
                process: None,
            }),
            Rel::Realtime => Step::Realtime(RealtimeStep {
                from,
                to,
                ops: None,
                dt_ns: None,
            }),
        }
    }

    /// The relation.
    pub fn rel(&self) -> Rel {
        match self {
            Step::Ww(_) => Rel::Ww,
            Step::Wr(_) => Rel::Wr,
            Step::Rw(_) => Rel::Rw,
            Step::Process(_) => Rel::Process,
            Step::Realtime(_) => Rel::Realtime,
        }
    }

    /// Source and target transactions.
    pub fn ends(&self) -> (OpIndex, OpIndex) {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => (d.from, d.to),
            Step::Process(p) => (p.from, p.to),
            Step::Realtime(r) => (r.from, r.to),
        }
    }

    /// The key and micro-ops of a data step.
    pub fn site(&self) -> Option<&Site> {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => d.site.as_ref(),
            _ => None,
        }
    }

    /// The data of a ww, wr or rw step.
    pub fn data_step(&self) -> Option<&DataStep> {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => Some(d),
            _ => None,
        }
    }

    /// Why the complete check chose this step's version order, if it did.
    pub fn derived(&self) -> Option<&Derived> {
        self.data_step().and_then(|d| d.derived.as_deref())
    }
}

fn atom_data(a: &Atom) -> Data {
    match a {
        Atom::Int(i) => Data::Int(*i),
        // Keys and values are written as Elle's JSON files spell them.
        Atom::Str(s) => Data::Str(s.to_string()),
        Atom::Keyword(k) => Data::Str(k.to_string()),
    }
}

fn vals_data(v: &[Val]) -> Data {
    Data::Vec(v.iter().map(|x| atom_data(&x.0)).collect())
}

fn read_data(r: &ReadValue) -> Data {
    match r {
        ReadValue::Nil => Data::Nil,
        ReadValue::List(l) => vals_data(l),
        ReadValue::Scalar(v) => atom_data(&v.0),
    }
}

fn int(i: impl TryInto<i64>) -> Data {
    i.try_into().map_or(Data::Nil, Data::Int)
}

fn ops_data(ops: &[OpIndex]) -> Data {
    Data::Vec(ops.iter().map(|o| int(o.0)).collect())
}

fn opt_val_data(v: &Option<Val>) -> Data {
    v.as_ref().map_or(Data::Nil, |v| atom_data(&v.0))
}

/// A result map: keyword keys, sorted by name (the order Elle's JSON keys
/// come out in, kept for EDN too).
pub(crate) fn map(mut entries: Vec<(&str, Data)>) -> Data {
    entries.sort_by(|a, b| a.0.cmp(b.0));
    Data::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Data::Keyword(k.to_string()), v))
            .collect(),
    )
}

/// `d` as JSON: keywords become strings.
pub(crate) fn data_to_json(d: &Data) -> Value {
    match d {
        Data::Nil => Value::Null,
        Data::Bool(b) => Value::Bool(*b),
        Data::Int(i) => json!(i),
        Data::Float(f) => json!(f),
        Data::Str(s) | Data::Keyword(s) | Data::Symbol(s) => Value::String(s.clone()),
        Data::Vec(v) | Data::Set(v) => Value::Array(v.iter().map(data_to_json).collect()),
        Data::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Data::Str(s) | Data::Keyword(s) | Data::Symbol(s) => s.clone(),
                        other => data_to_json(other).to_string(),
                    };
                    (key, data_to_json(v))
                })
                .collect::<Map<String, Value>>(),
        ),
        Data::Tagged(_, v) => data_to_json(v),
    }
}

impl Step {
    /// Elle's step map (`type`, `from`, `to`, `key`, `value`, `value'`,
    /// `a-mop-index`, `b-mop-index`, `process`, `a'`, `b`).
    pub fn to_data(&self) -> Data {
        let (from, to) = self.ends();
        let mut m = vec![
            ("type", Data::Keyword(self.rel().name().to_string())),
            ("from", int(from.0)),
            ("to", int(to.0)),
        ];
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => {
                if let Some(site) = &d.site {
                    m.push(("key", atom_data(&site.key.0)));
                    m.push(("value", opt_val_data(&d.value)));
                }
                if let Some(v) = &d.value2 {
                    m.push(("value'", atom_data(&v.0)));
                }
                if let Some(site) = &d.site {
                    m.push(("a-mop-index", int(site.a_mop)));
                    m.push(("b-mop-index", int(site.b_mop)));
                }
                if let Some(p) = &d.predicate {
                    m.push((
                        "predicate",
                        map(vec![
                            (
                                "range",
                                Data::Vec(vec![atom_data(&p.lo.0), atom_data(&p.hi.0)]),
                            ),
                            ("row", atom_data(&p.row.0)),
                            ("seen", Data::Bool(p.seen)),
                            ("count", p.count.map_or(Data::Nil, int)),
                        ]),
                    ));
                }
                if let Some(x) = &d.derived {
                    m.push((
                        "derived",
                        map(vec![
                            ("refuted", x.refuted.to_data()),
                            ("cycle", ops_data(&x.cycle)),
                            (
                                "rels",
                                Data::Vec(
                                    x.rels
                                        .iter()
                                        .map(|r| Data::Str(r.name().to_string()))
                                        .collect(),
                                ),
                            ),
                            ("assumed", Data::Bool(x.assumed)),
                        ]),
                    ));
                }
            }
            Step::Process(p) => {
                if let Some(p) = p.process {
                    m.push(("process", int(p)));
                }
            }
            Step::Realtime(r) => {
                if let Some((a, b)) = r.ops {
                    m.push(("a'", int(a.0)));
                    m.push(("b", int(b.0)));
                }
            }
        }
        map(m)
    }

    /// [`Step::to_data`] as JSON.
    pub fn to_json(&self) -> Value {
        data_to_json(&self.to_data())
    }
}

impl Anomaly {
    /// Elle-like keys (`type`, `cycle`, `steps`, `op`, `mop`, `key`, …);
    /// names (`type`) are keywords.
    pub fn to_data(&self) -> Data {
        let mut m = vec![("type", Data::Keyword(self.kind.name().to_string()))];
        match &self.evidence {
            Evidence::Cycle { cycle, steps } => {
                m.push(("cycle", ops_data(cycle)));
                m.push((
                    "steps",
                    Data::Vec(steps.iter().map(Step::to_data).collect()),
                ));
            }
            Evidence::Read {
                op,
                mop,
                key,
                element,
                writer,
            } => {
                m.push(("op", int(op.0)));
                m.push(("mop", int(*mop)));
                m.push(("key", atom_data(&key.0)));
                m.push(("element", atom_data(&element.0)));
                m.push(("writer", writer.map_or(Data::Nil, |w| int(w.0))));
            }
            Evidence::CountMiss {
                op,
                mop,
                range,
                count,
                bounds,
            } => {
                m.push(("op", int(op.0)));
                m.push(("mop", int(*mop)));
                m.push((
                    "range",
                    Data::Vec(range.iter().map(|k| atom_data(&k.0)).collect()),
                ));
                m.push(("count", int(*count)));
                m.push((
                    "bounds",
                    Data::Vec(bounds.iter().map(|&b| int(b)).collect()),
                ));
            }
            Evidence::Replay {
                op,
                mop,
                key,
                expected,
            } => read_site(&mut m, *op, *mop, key, expected.clone()),
            Evidence::Internal {
                op,
                mop,
                key,
                expected,
            } => read_site(&mut m, *op, *mop, key, render_expected(expected)),
            Evidence::DuplicateElements {
                op,
                mop,
                key,
                duplicates,
            } => {
                m.push(("op", int(op.0)));
                m.push(("mop", int(*mop)));
                m.push(("key", atom_data(&key.0)));
                m.push((
                    "duplicates",
                    Data::Vec(
                        duplicates
                            .iter()
                            .map(|(v, n)| Data::Vec(vec![atom_data(&v.0), int(*n)]))
                            .collect(),
                    ),
                ));
            }
            Evidence::IncompatibleOrder { key, values } => {
                m.push(("key", atom_data(&key.0)));
                m.push((
                    "values",
                    Data::Vec(vec![vals_data(&values[0]), vals_data(&values[1])]),
                ));
            }
            Evidence::DirtyUpdate { key, values, txns } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("values", vals_data(values)));
                m.push(("txns", ops_data(txns)));
            }
            Evidence::LostUpdate { key, value, txns } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("value", read_data(value)));
                m.push(("txns", ops_data(txns)));
            }
            Evidence::CyclicVersions { key, scc, sources } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("scc", Data::Vec(scc.iter().map(opt_val_data).collect())));
                m.push((
                    "sources",
                    Data::Vec(sources.iter().map(|s| Data::Str(s.to_string())).collect()),
                ));
            }
            Evidence::CycleExists {
                subgraph,
                scc_size,
                scc,
            } => {
                m.push(("subgraph", Data::Str(subgraph.to_string())));
                m.push(("scc-size", int(*scc_size)));
                m.push(("scc", ops_data(scc)));
            }
            Evidence::EmptyGraph => {}
            Evidence::Timeout {
                scc_size,
                does_not_contain,
            } => {
                m.push(("scc-size", int(*scc_size)));
                m.push((
                    "does-not-contain",
                    Data::Vec(
                        does_not_contain
                            .iter()
                            .map(|a| Data::Str(a.name().to_string()))
                            .collect(),
                    ),
                ));
            }
        }
        map(m)
    }

    /// [`Anomaly::to_data`] as JSON.
    pub fn to_json(&self) -> Value {
        data_to_json(&self.to_data())
    }

    /// The ops this anomaly names.
    pub fn ops(&self) -> Vec<OpIndex> {
        let mut v = match &self.evidence {
            Evidence::Cycle { cycle, .. } => cycle.clone(),
            Evidence::Read { op, writer, .. } => std::iter::once(*op).chain(*writer).collect(),
            Evidence::Internal { op, .. }
            | Evidence::DuplicateElements { op, .. }
            | Evidence::CountMiss { op, .. }
            | Evidence::Replay { op, .. } => vec![*op],
            Evidence::DirtyUpdate { txns, .. } | Evidence::LostUpdate { txns, .. } => txns.clone(),
            _ => Vec::new(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Serialize for Anomaly {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

fn find_op(h: &History, i: OpIndex) -> Option<&Op> {
    let ops = h.ops();
    ops.binary_search_by_key(&i, |o| o.index)
        .ok()
        .map(|p| &ops[p])
}

/// A list in Elle's EDN spelling (`[1 2 3]`).
pub fn fmt_vals(v: &[Val]) -> String {
    let mut s = String::from("[");
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{x}");
    }
    s.push(']');
    s
}

/// What a read returned, in Elle's EDN spelling (`nil`, `[1 2]`, `3`).
pub fn fmt_read(r: &ReadValue) -> String {
    match r {
        ReadValue::Nil => "nil".into(),
        ReadValue::List(l) => fmt_vals(l),
        ReadValue::Scalar(v) => v.to_string(),
    }
}

/// A micro-op in Elle's EDN spelling (`[:append :x 1]`, `[:r 3 [1 2]]`).
pub fn fmt_mop(m: &MicroOp) -> String {
    match m {
        MicroOp::Append(k, v) => format!("[:append {k} {v}]"),
        MicroOp::Write(k, v) => format!("[:w {k} {v}]"),
        MicroOp::Read(k, r) => format!("[:r {k} {}]", fmt_read(r)),
        MicroOp::ReadRange(r) => fmt_range_read(r),
    }
}

/// A range read in EDN (`[:rr [1 5] [[2 [7 8]] [4 [9]]]]`, `nil` rows
/// when unknown).
fn fmt_range_read(r: &store::RangeRead) -> String {
    if let store::RangeKind::Count(n) = r.kind {
        let n = n.map_or_else(|| "nil".to_string(), |n| n.to_string());
        return format!("[:rc [{} {}] {n}]", r.lo, r.hi);
    }
    let rows = match &r.rows {
        None => "nil".to_string(),
        Some(rows) => {
            let v: Vec<String> = rows
                .iter()
                .map(|(k, l)| format!("[{k} {}]", fmt_vals(l)))
                .collect();
            format!("[{}]", v.join(" "))
        }
    };
    format!("[:rr [{} {}] {rows}]", r.lo, r.hi)
}

/// An op in Elle's EDN spelling (`{:index 3, :type :ok, :process 0, :value [...]}`).
pub fn fmt_op(op: &Op) -> String {
    let mut s = format!("{{:index {}, :type :{}", op.index, op.op_type.as_str());
    if let Some(p) = op.process {
        let _ = write!(s, ", :process {p}");
    }
    if let Some(m) = op.value.txn() {
        s.push_str(", :value [");
        for (i, x) in m.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&fmt_mop(x));
        }
        s.push(']');
    }
    s.push('}');
    s
}

fn render_expected(e: &Expected) -> String {
    match e {
        Expected::List {
            unknown_prefix,
            tail,
        } => {
            if *unknown_prefix {
                let inner = fmt_vals(tail);
                format!(
                    "[...{}{}",
                    if tail.is_empty() { "" } else { " " },
                    &inner[1..]
                )
            } else {
                fmt_vals(tail)
            }
        }
        Expected::Register(v) => v.as_ref().map_or("nil".into(), |v| v.to_string()),
    }
}

fn opt_val(v: &Option<Val>) -> String {
    v.as_ref().map_or("nil".into(), |v| v.to_string())
}

/// Why a derived version order holds, as a clause appended to the step.
fn derived_reason(d: &Derived, name: &dyn Fn(&OpIndex) -> String) -> String {
    let (from, to) = d.refuted.ends();
    let (ra, rb) = (name(&from), name(&to));
    let k = d
        .refuted
        .site()
        .map_or(String::new(), |s| s.key.to_string());
    if d.assumed {
        return format!(
            " (an order the complete check chose in a case split over key {k}: the opposite order, {ra} < {rb}, also ends in a cycle)"
        );
    }
    let mut path = String::new();
    for (i, o) in d.cycle.iter().enumerate() {
        if i > 0 {
            let r = d.rels.get(i - 1).map_or("?", |r| r.name());
            let _ = write!(path, " -{r}-> ");
        }
        path.push_str(&name(o));
    }
    format!(
        " (the opposite order of these writes of {k} would need {ra} < {rb} ({}), which closes the cycle {path})",
        d.refuted.rel().name()
    )
}

/// Why `a` precedes `b`, in Elle's words (`a`/`b` are the names to use).
fn step_reason(s: &Step, a: &str, b: &str) -> String {
    let data = |d: &DataStep| {
        let k = d.site.as_ref().map_or(String::new(), |s| s.key.to_string());
        (k, opt_val(&d.value), opt_val(&d.value2))
    };
    if let Some(p) = s
        .data_step()
        .and_then(|d| d.predicate.as_ref().map(|p| (d, p)))
    {
        return predicate_reason(p.0, p.1, a, b);
    }
    match s {
        Step::Ww(d) => {
            let (k, v, v2) = data(d);
            if d.list {
                format!("{b} appended {v2} after {a} appended {v} to {k}")
            } else {
                format!(
                    "{a} set key {k} to {v}, and {b} set it to {v2}, which came later in the version order"
                )
            }
        }
        Step::Wr(d) => {
            let (k, v, _) = data(d);
            if d.list {
                format!("{b} observed {a}'s append of {v} to key {k}")
            } else {
                format!("{a} wrote {k} = {v}, which was read by {b}")
            }
        }
        Step::Rw(d) => {
            let (k, v, v2) = data(d);
            if !d.list {
                format!(
                    "{a} read key {k} = {v}, and {b} set it to {v2}, which came later in the version order"
                )
            } else if d.value.is_none() {
                format!(
                    "{a} observed the initial (nil) state of {k}, which {b} created by appending {v2}"
                )
            } else {
                format!("{a} did not observe {b}'s append of {v2} to {k}")
            }
        }
        Step::Process(p) => match p.process {
            Some(p) => format!("process {p} executed {a} before {b}"),
            None => format!("the same process executed {a} before {b}"),
        },
        Step::Realtime(r) => match r.ops {
            Some((i, j)) => match r.dt_ns {
                Some(dt) if dt > 0 => format!(
                    "{a} completed at index {i}, {:.3} seconds before the invocation of {b}, at index {j}",
                    dt as f64 / 1e9
                ),
                Some(_) => format!(
                    "{a} completed at index {i}, just before the invocation of {b}, at index {j}"
                ),
                None => format!(
                    "{a} completed at index {i}, before the invocation of {b}, at index {j}"
                ),
            },
            None => format!("{a} completed before the invocation of {b}"),
        },
    }
}

/// The fields of a read that should have returned `expected`.
fn read_site(
    m: &mut Vec<(&'static str, Data)>,
    op: OpIndex,
    mop: usize,
    key: &Key,
    expected: String,
) {
    m.push(("op", int(op.0)));
    m.push(("mop", int(mop)));
    m.push(("key", atom_data(&key.0)));
    m.push(("expected", Data::Str(expected)));
}

/// A predicate step in words: the range, the row, who inserted it.
fn predicate_reason(d: &DataStep, p: &PredicateSite, a: &str, b: &str) -> String {
    let (lo, hi, row) = (&p.lo, &p.hi, &p.row);
    if let Some(n) = p.count {
        let (what, who, v) = if p.seen {
            (
                "every row ever inserted there, so it counted row",
                a,
                &d.value,
            )
        } else {
            (
                "no more than the rows it wrote itself there, so it did not count row",
                b,
                &d.value2,
            )
        };
        let reader = if p.seen { b } else { a };
        return format!(
            "{reader}'s count read of keys {lo}..={hi} returned {n}, {what} {row}, which {who} inserted by appending {}",
            opt_val(v)
        );
    }
    if p.seen {
        format!(
            "{b}'s range read of keys {lo}..={hi} returned row {row}, which {a} inserted by appending {}",
            opt_val(&d.value)
        )
    } else {
        format!(
            "{a}'s range read of keys {lo}..={hi} did not return row {row} (missing row), which {b} inserted by appending {}",
            opt_val(&d.value2)
        )
    }
}

/// An anomaly of one transaction: "Let: T1 = … Then: - `why`".
fn one_txn(h: &History, op: OpIndex, out: &mut String, why: &str) {
    let_block(h, &[op], out);
    let _ = write!(out, "\nThen:\n  - {why}");
}

fn let_block(h: &History, ops: &[OpIndex], out: &mut String) {
    out.push_str("Let:\n");
    for (i, o) in ops.iter().enumerate() {
        let text = find_op(h, *o).map_or_else(|| format!("{{:index {o}}}"), fmt_op);
        let _ = writeln!(out, "  T{} = {}", i + 1, text);
    }
}

/// Renders an anomaly as text in Elle's style: for cycles
/// "Let:\n  T1 = {…}\n…\n\nThen:\n  - T1 < T2, because …\n  - However, …: a contradiction!".
pub fn render_text(a: &Anomaly, history: &History) -> String {
    let mut out = String::new();
    match &a.evidence {
        Evidence::Cycle { cycle, steps } => {
            let n = cycle.len().saturating_sub(1);
            let mut names: Vec<OpIndex> = cycle[..n].to_vec();
            // Transactions named only by derived orders' cycles are shown too.
            for d in steps.iter().filter_map(Step::derived) {
                let (rf, rt) = d.refuted.ends();
                for o in d.cycle.iter().chain([&rf, &rt]) {
                    if !names.contains(o) {
                        names.push(*o);
                    }
                }
            }
            let_block(history, &names, &mut out);
            out.push_str("\nThen:\n");
            let name = |o: &OpIndex| {
                names
                    .iter()
                    .position(|x| x == o)
                    .map_or_else(|| format!("op {o}"), |i| format!("T{}", i + 1))
            };
            for (i, s) in steps.iter().enumerate() {
                let (from, to) = s.ends();
                let (ta, tb) = (name(&from), name(&to));
                let mut reason = step_reason(s, &ta, &tb);
                if let Some(d) = s.derived() {
                    reason.push_str(&derived_reason(d, &name));
                }
                if i + 1 == steps.len() {
                    let _ = write!(out, "  - However, {ta} < {tb}, because {reason}: a contradiction!");
                } else {
                    let _ = writeln!(out, "  - {ta} < {tb}, because {reason}.");
                }
            }
        }
        Evidence::Read {
            op,
            mop,
            key,
            element,
            writer,
        } => {
            let ops: Vec<OpIndex> = std::iter::once(*op).chain(*writer).collect();
            let_block(history, &ops, &mut out);
            out.push_str("\nThen:\n  - ");
            let why = match (a.kind, writer) {
                (AnomalyType::G1a, Some(_)) => format!(
                    "T1 read {element} from key {key} (micro-op {mop}), but T2, which wrote it, aborted: an aborted read."
                ),
                (AnomalyType::G1b, Some(_)) => format!(
                    "T1 read {element} from key {key} (micro-op {mop}), an intermediate state of T2, which wrote to {key} again afterwards: an intermediate read."
                ),
                (AnomalyType::PredicateReadMiss, Some(_)) => format!(
                    "T1's range read (micro-op {mop}) did not return row {key}, which T1 itself inserted earlier by appending {element}: a predicate read miss."
                ),
                (AnomalyType::PredicateReadMiss, None) => format!(
                    "T1's range read (micro-op {mop}) returned row {key} (last element {element}), which lies outside its range: a predicate read miss."
                ),
                (AnomalyType::FutureRead, _) => format!(
                    "T1 read {element} from key {key} (micro-op {mop}), before T1 itself wrote it: a future read."
                ),
                _ => format!(
                    "T1 read {element} from key {key} (micro-op {mop}), but no transaction wrote {element} to {key}: a garbage read."
                ),
            };
            out.push_str(&why);
        }
        Evidence::Internal {
            op,
            mop,
            key,
            expected,
        } => one_txn(history, *op, &mut out, &format!(
            "T1's read of key {key} (micro-op {mop}) should have returned {}, given T1's own earlier reads and writes: an internal inconsistency.",
            render_expected(expected)
        )),
        Evidence::DuplicateElements {
            op,
            mop,
            key,
            duplicates,
        } => {
            let_block(history, &[*op], &mut out);
            let d: Vec<String> = duplicates.iter().map(|(v, n)| format!("{v} ({n} times)")).collect();
            let _ = write!(
                out,
                "\nThen:\n  - T1's read of key {key} (micro-op {mop}) contains {}: duplicate elements.",
                d.join(", ")
            );
        }
        Evidence::IncompatibleOrder { key, values } => {
            let _ = write!(
                out,
                "Key {key} was read as {} and as {}; neither is a prefix of the other, so they cannot come from one order of appends.",
                fmt_vals(&values[0]),
                fmt_vals(&values[1])
            );
        }
        Evidence::CountMiss {
            op,
            mop,
            range: [lo, hi],
            count,
            bounds: [least, most],
        } => one_txn(history, *op, &mut out, &format!(
            "T1's count read of keys {lo}..={hi} (micro-op {mop}) returned {count}, but the range held at least {least} (rows T1 wrote itself) and at most {most} rows (every row ever inserted there): a predicate read miss."
        )),
        Evidence::Replay {
            op,
            mop,
            key,
            expected,
        } => one_txn(history, *op, &mut out, &format!(
            "Replaying the committed transactions in ascending commit timestamp (the database's own serialization order), T1's micro-op {mop} on key {key} should have read {expected}, but it read something else: an expected-order violation."
        )),
        Evidence::DirtyUpdate { key, values, txns } => {
            let_block(history, txns, &mut out);
            let _ = write!(
                out,
                "\nThen:\n  - T1 aborted after appending {} to {key}, yet the committed T2's append of {} came after it in {key}'s version order: a dirty update.",
                values.first().map_or(String::new(), |v| v.to_string()),
                values.last().map_or(String::new(), |v| v.to_string())
            );
        }
        Evidence::LostUpdate { key, value, txns } => {
            let_block(history, txns, &mut out);
            let _ = write!(
                out,
                "\nThen:\n  - All of these read key {key} = {} and then wrote {key}, and all committed: a lost update.",
                fmt_read(value)
            );
        }
        Evidence::CyclicVersions { key, scc, sources } => {
            let vs: Vec<String> = scc.iter().map(opt_val).collect();
            let _ = write!(
                out,
                "The version order of key {key} inferred from {} is cyclic over values {{{}}}; the last source was left out of the graph.",
                sources.join(", "),
                vs.join(", ")
            );
        }
        Evidence::CycleExists {
            subgraph,
            scc_size,
            scc,
        } => {
            let ops: Vec<String> = scc.iter().map(|o| o.to_string()).collect();
            let _ = write!(
                out,
                "A cycle exists in the {subgraph} subgraph, among {scc_size} transactions (ops {}{}).",
                ops.join(", "),
                if *scc_size > scc.len() { ", …" } else { "" }
            );
        }
        Evidence::EmptyGraph => out.push_str(
            "No dependency between transactions could be inferred: the dependency graph is empty, so nothing was checked.",
        ),
        Evidence::Timeout {
            scc_size,
            does_not_contain,
        } => {
            let names: Vec<&str> = does_not_contain.iter().map(|a| a.name()).collect();
            let _ = write!(
                out,
                "The cycle search ran out of budget in a strongly connected component of {scc_size} transactions; not ruled out: {}.",
                names.join(", ")
            );
        }
    }
    out
}

fn dot_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '{' | '}' | '<' | '>' | '|' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn rel_color(r: Rel) -> &'static str {
    match r {
        Rel::Ww => "#C02700",
        Rel::Wr => "#C000A5",
        Rel::Rw => "#5B00C0",
        Rel::Realtime => "#0050C0",
        Rel::Process => "#00C0C0",
    }
}

/// Renders a cycle anomaly as a Graphviz DOT digraph (record nodes, one field
/// per micro-op; edges labelled and coloured by relation). `None` for
/// anomalies that are not cycles.
pub fn render_dot(a: &Anomaly, history: &History) -> Option<String> {
    let Evidence::Cycle { cycle, steps } = &a.evidence else {
        return None;
    };
    let n = cycle.len().saturating_sub(1);
    let mut out = String::from(
        "digraph a {\n  node [fontname=\"Helvetica\" shape=\"record\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    for o in &cycle[..n] {
        let op = find_op(history, *o);
        let color = match op.map(|o| o.op_type) {
            Some(OpType::Info) => "#AC6E00",
            Some(OpType::Fail) => "#A50053",
            _ => "#0058AD",
        };
        let fields: Vec<String> = op
            .and_then(|op| op.value.txn())
            .map(|m| {
                m.iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let t = fmt_mop(x);
                        format!("<f{i}> {}", dot_escape(&t[1..t.len() - 1]))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  T{o} [label=\"{}\" color=\"{color}\" fontcolor=\"{color}\"];",
            if fields.is_empty() {
                format!("T{o}")
            } else {
                fields.join("|")
            }
        );
    }
    for s in steps {
        let port = |m: Option<usize>| m.map_or(String::new(), |i| format!(":f{i}"));
        let (from, to) = s.ends();
        let c = rel_color(s.rel());
        let _ = writeln!(
            out,
            "  T{}{} -> T{}{} [label=\"{}\" color=\"{c}\" fontcolor=\"{c}\"];",
            from,
            port(s.site().map(|x| x.a_mop)),
            to,
            port(s.site().map(|x| x.b_mop)),
            s.rel().short()
        );
    }
    out.push_str("}\n");
    Some(out)
}
