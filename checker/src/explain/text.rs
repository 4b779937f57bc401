//! Anomalies as Elle-style text: each step's reason, the transactions involved.

use super::{Anomaly, DataStep, Derived, Evidence, Expected, PredicateSite, Step};
use crate::anomaly::AnomalyType;
use std::fmt::Write as _;
use store::{History, MicroOp, Op, OpIndex, ReadValue, Val};

/// The op with index `i`, as read (an elided invocation's micro-ops rebuilt).
pub(super) fn find_op(h: &History, i: OpIndex) -> Option<Op> {
    h.position_of(i).map(|p| h.op(p))
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

pub(super) fn render_expected(e: &Expected) -> String {
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
        let text = find_op(h, *o).map_or_else(|| format!("{{:index {o}}}"), |op| fmt_op(&op));
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
