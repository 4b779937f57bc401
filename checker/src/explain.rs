//! Explanations of anomalies: data first ([`Anomaly`], [`Evidence`], [`Step`]),
//! rendered separately as Elle-style text ([`render_text`]) and as Graphviz DOT
//! per cycle ([`render_dot`]).

use crate::anomaly::AnomalyType;
use crate::rels::Rel;
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
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

/// One explained edge of a cycle: why `from` must precede `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The relation used.
    pub rel: Rel,
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// Whether data steps concern lists (`append`) or registers (`w`).
    pub list: bool,
    /// Key (data steps).
    pub key: Option<Key>,
    /// `from`'s value: element appended/written/read last; `None` with a key =
    /// the initial (nil) state.
    pub value: Option<Val>,
    /// `to`'s value (ww, rw).
    pub value2: Option<Val>,
    /// Micro-op index in `from`.
    pub a_mop: Option<usize>,
    /// Micro-op index in `to`.
    pub b_mop: Option<usize>,
    /// Process (process steps).
    pub process: Option<u64>,
    /// `from`'s completion and `to`'s invocation (realtime steps).
    pub realtime: Option<(OpIndex, OpIndex)>,
    /// Nanoseconds between them, when both ops carry a time.
    pub dt_ns: Option<i64>,
    /// For a ww/rw step whose version order the complete (SAT) check chose
    /// rather than read off the history: why this order and not the other.
    pub derived: Option<Box<Derived>>,
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

impl Step {
    /// A step with only its relation and endpoints.
    pub fn bare(rel: Rel, from: OpIndex, to: OpIndex) -> Step {
        Step {
            rel,
            from,
            to,
            list: true,
            key: None,
            value: None,
            value2: None,
            a_mop: None,
            b_mop: None,
            process: None,
            realtime: None,
            dt_ns: None,
            derived: None,
        }
    }
}

fn atom_json(a: &Atom) -> Value {
    match a {
        Atom::Int(i) => json!(i),
        Atom::Str(s) => json!(s.as_ref()),
        Atom::Keyword(k) => json!(k.as_ref()),
    }
}

fn vals_json(v: &[Val]) -> Value {
    Value::Array(v.iter().map(|x| atom_json(&x.0)).collect())
}

fn read_json(r: &ReadValue) -> Value {
    match r {
        ReadValue::Nil => Value::Null,
        ReadValue::List(l) => vals_json(l),
        ReadValue::Scalar(v) => atom_json(&v.0),
    }
}

impl Step {
    /// JSON with Elle's step keys.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!(self.rel.name()));
        m.insert("from".into(), json!(self.from.0));
        m.insert("to".into(), json!(self.to.0));
        if let Some(k) = &self.key {
            m.insert("key".into(), atom_json(&k.0));
            m.insert(
                "value".into(),
                self.value.as_ref().map_or(Value::Null, |v| atom_json(&v.0)),
            );
        }
        if let Some(v) = &self.value2 {
            m.insert("value'".into(), atom_json(&v.0));
        }
        if let Some(i) = self.a_mop {
            m.insert("a-mop-index".into(), json!(i));
        }
        if let Some(i) = self.b_mop {
            m.insert("b-mop-index".into(), json!(i));
        }
        if let Some(p) = self.process {
            m.insert("process".into(), json!(p));
        }
        if let Some((a, b)) = self.realtime {
            m.insert("a'".into(), json!(a.0));
            m.insert("b".into(), json!(b.0));
        }
        if let Some(d) = &self.derived {
            m.insert(
                "derived".into(),
                json!({
                    "refuted": d.refuted.to_json(),
                    "cycle": d.cycle.iter().map(|o| o.0).collect::<Vec<_>>(),
                    "rels": d.rels.iter().map(|r| r.name()).collect::<Vec<_>>(),
                    "assumed": d.assumed,
                }),
            );
        }
        Value::Object(m)
    }
}

impl Anomaly {
    /// JSON with Elle-like keys (`type`, `cycle`, `steps`, `op`, `mop`, `key`, …).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!(self.kind.name()));
        match &self.evidence {
            Evidence::Cycle { cycle, steps } => {
                m.insert(
                    "cycle".into(),
                    json!(cycle.iter().map(|o| o.0).collect::<Vec<_>>()),
                );
                m.insert(
                    "steps".into(),
                    Value::Array(steps.iter().map(Step::to_json).collect()),
                );
            }
            Evidence::Read {
                op,
                mop,
                key,
                element,
                writer,
            } => {
                m.insert("op".into(), json!(op.0));
                m.insert("mop".into(), json!(mop));
                m.insert("key".into(), atom_json(&key.0));
                m.insert("element".into(), atom_json(&element.0));
                m.insert("writer".into(), writer.map_or(Value::Null, |w| json!(w.0)));
            }
            Evidence::Internal {
                op,
                mop,
                key,
                expected,
            } => {
                m.insert("op".into(), json!(op.0));
                m.insert("mop".into(), json!(mop));
                m.insert("key".into(), atom_json(&key.0));
                m.insert("expected".into(), json!(render_expected(expected)));
            }
            Evidence::DuplicateElements {
                op,
                mop,
                key,
                duplicates,
            } => {
                m.insert("op".into(), json!(op.0));
                m.insert("mop".into(), json!(mop));
                m.insert("key".into(), atom_json(&key.0));
                m.insert(
                    "duplicates".into(),
                    Value::Array(
                        duplicates
                            .iter()
                            .map(|(v, n)| json!([atom_json(&v.0), n]))
                            .collect(),
                    ),
                );
            }
            Evidence::IncompatibleOrder { key, values } => {
                m.insert("key".into(), atom_json(&key.0));
                m.insert(
                    "values".into(),
                    json!([vals_json(&values[0]), vals_json(&values[1])]),
                );
            }
            Evidence::DirtyUpdate { key, values, txns } => {
                m.insert("key".into(), atom_json(&key.0));
                m.insert("values".into(), vals_json(values));
                m.insert(
                    "txns".into(),
                    json!(txns.iter().map(|o| o.0).collect::<Vec<_>>()),
                );
            }
            Evidence::LostUpdate { key, value, txns } => {
                m.insert("key".into(), atom_json(&key.0));
                m.insert("value".into(), read_json(value));
                m.insert(
                    "txns".into(),
                    json!(txns.iter().map(|o| o.0).collect::<Vec<_>>()),
                );
            }
            Evidence::CyclicVersions { key, scc, sources } => {
                m.insert("key".into(), atom_json(&key.0));
                m.insert(
                    "scc".into(),
                    Value::Array(
                        scc.iter()
                            .map(|v| v.as_ref().map_or(Value::Null, |v| atom_json(&v.0)))
                            .collect(),
                    ),
                );
                m.insert("sources".into(), json!(sources));
            }
            Evidence::CycleExists {
                subgraph,
                scc_size,
                scc,
            } => {
                m.insert("subgraph".into(), json!(subgraph));
                m.insert("scc-size".into(), json!(scc_size));
                m.insert(
                    "scc".into(),
                    json!(scc.iter().map(|o| o.0).collect::<Vec<_>>()),
                );
            }
            Evidence::EmptyGraph => {}
            Evidence::Timeout {
                scc_size,
                does_not_contain,
            } => {
                m.insert("scc-size".into(), json!(scc_size));
                m.insert(
                    "does-not-contain".into(),
                    json!(
                        does_not_contain
                            .iter()
                            .map(|a| a.name())
                            .collect::<Vec<_>>()
                    ),
                );
            }
        }
        Value::Object(m)
    }

    /// The ops this anomaly names.
    pub fn ops(&self) -> Vec<OpIndex> {
        let mut v = match &self.evidence {
            Evidence::Cycle { cycle, .. } => cycle.clone(),
            Evidence::Read { op, writer, .. } => std::iter::once(*op).chain(*writer).collect(),
            Evidence::Internal { op, .. } | Evidence::DuplicateElements { op, .. } => vec![*op],
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
    }
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

/// Why `a` precedes `b`, in Elle's words (`a`/`b` are the names to use).
/// Why a derived version order holds, as a clause appended to the step.
fn derived_reason(d: &Derived, name: &dyn Fn(&OpIndex) -> String) -> String {
    let (ra, rb) = (name(&d.refuted.from), name(&d.refuted.to));
    let k = d
        .refuted
        .key
        .as_ref()
        .map_or(String::new(), |k| k.to_string());
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
        d.refuted.rel.name()
    )
}

fn step_reason(s: &Step, a: &str, b: &str) -> String {
    let k = s.key.as_ref().map_or(String::new(), |k| k.to_string());
    let v = opt_val(&s.value);
    let v2 = opt_val(&s.value2);
    match (s.rel, s.list) {
        (Rel::Ww, true) => format!("{b} appended {v2} after {a} appended {v} to {k}"),
        (Rel::Wr, true) => format!("{b} observed {a}'s append of {v} to key {k}"),
        (Rel::Rw, true) => {
            if s.value.is_none() {
                format!(
                    "{a} observed the initial (nil) state of {k}, which {b} created by appending {v2}"
                )
            } else {
                format!("{a} did not observe {b}'s append of {v2} to {k}")
            }
        }
        (Rel::Ww, false) => format!(
            "{a} set key {k} to {v}, and {b} set it to {v2}, which came later in the version order"
        ),
        (Rel::Wr, false) => format!("{a} wrote {k} = {v}, which was read by {b}"),
        (Rel::Rw, false) => format!(
            "{a} read key {k} = {v}, and {b} set it to {v2}, which came later in the version order"
        ),
        (Rel::Process, _) => match s.process {
            Some(p) => format!("process {p} executed {a} before {b}"),
            None => format!("the same process executed {a} before {b}"),
        },
        (Rel::Realtime, _) => match s.realtime {
            Some((i, j)) => match s.dt_ns {
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
            for d in steps.iter().filter_map(|s| s.derived.as_ref()) {
                for o in d.cycle.iter().chain([&d.refuted.from, &d.refuted.to]) {
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
                let (ta, tb) = (name(&s.from), name(&s.to));
                let mut reason = step_reason(s, &ta, &tb);
                if let Some(d) = &s.derived {
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
        } => {
            let_block(history, &[*op], &mut out);
            let _ = write!(
                out,
                "\nThen:\n  - T1's read of key {key} (micro-op {mop}) should have returned {}, given T1's own earlier reads and writes: an internal inconsistency.",
                render_expected(expected)
            );
        }
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
        let c = rel_color(s.rel);
        let _ = writeln!(
            out,
            "  T{}{} -> T{}{} [label=\"{}\" color=\"{c}\" fontcolor=\"{c}\"];",
            s.from,
            port(s.a_mop),
            s.to,
            port(s.b_mop),
            s.rel.short()
        );
    }
    out.push_str("}\n");
    Some(out)
}
