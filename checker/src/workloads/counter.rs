//! The counter checker (Jepsen's `counter`): every ok read must lie between
//! the sum of the adds that certainly happened before it and the sum of
//! those that may have.
//!
//! Scanning the history in order with `lower = upper = 0`: an add's
//! invocation raises `upper` unless its completion is `fail` (looked up, so
//! a read beside a failed add is not excused — jepsen#303); its ok
//! completion raises `lower`; a read's ok completion must satisfy
//! `lower at its invocation ≤ value ≤ upper now`. Adds must be
//! non-negative (Jepsen asserts it); a negative one makes the check
//! `unknown`.

use super::{Finding, Report, completions, data_int, idx, op_name, read_int, val_int};
use serde_json::json;
use store::{Data, F, History, MicroOp, OpType};

fn amount(mops: &[MicroOp], data: Option<&Data>) -> Option<i64> {
    if let Some(d) = data {
        return data_int(d);
    }
    match mops {
        [MicroOp::Append(_, v)] | [MicroOp::Write(_, v)] => val_int(v),
        _ => None,
    }
}

fn value(mops: &[MicroOp], data: Option<&Data>) -> Option<i64> {
    if let Some(d) = data {
        return data_int(d);
    }
    match mops {
        [MicroOp::Read(_, v)] => read_int(v).map(|v| v.unwrap_or(0)),
        _ => None,
    }
}

/// Checks every ok read against the bounds.
pub fn check(history: &History) -> Report {
    let mut report = Report::new("counter");
    let (mut lower, mut upper) = (0i64, 0i64);
    let mut lower_at: Vec<Option<i64>> = vec![None; history.len()];
    let mut reads = 0u64;
    let _ = completions; // ops are scanned in history order, invocations included
    for pos in 0..history.len() {
        if !history.is_client(pos) {
            continue;
        }
        let t = history.op_type(pos);
        let Some(f) = history.f(pos) else { continue };
        let Some(mops) = history.txn(pos) else {
            continue;
        };
        match (f, t) {
            (F::Add, OpType::Invoke) => {
                let Some(n) = amount(&mops, history.data(pos)) else {
                    continue;
                };
                if n < 0 {
                    report.unknown(format!(
                        "{} adds {n}: the counter checker's bounds need non-negative adds",
                        op_name(history, pos)
                    ));
                }
                let failed = history
                    .completion(pos)
                    .is_some_and(|c| history.op_type(c) == OpType::Fail);
                if !failed {
                    upper = upper.saturating_add(n);
                }
            }
            (F::Add, OpType::Ok) => {
                if let Some(n) = amount(&mops, history.data(pos)) {
                    lower = lower.saturating_add(n);
                }
            }
            (F::Read, OpType::Invoke) => lower_at[pos] = Some(lower),
            (F::Read, OpType::Ok) => {
                let Some(v) = value(&mops, history.data(pos)) else {
                    continue;
                };
                reads += 1;
                let lo = history
                    .invocation(pos)
                    .and_then(|i| lower_at[i])
                    .unwrap_or(lower);
                if v < lo || v > upper {
                    report.add(Finding {
                        kind: "out-of-bounds",
                        ops: vec![idx(history, pos)],
                        explanation: format!(
                            "read {} returned {v}, but the counter was between {lo} (adds certainly done before it began) and {upper} (adds that may have been done by its end)",
                            op_name(history, pos)
                        ),
                        data: json!([lo, v, upper]),
                    });
                }
            }
            _ => {}
        }
    }
    report.stat("read-count", reads);
    report.stat("error-count", report.findings.len());
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, ap, r, rn};
    use super::*;
    use crate::result::Valid;

    #[test]
    fn reads_within_bounds_are_valid_and_outside_are_not() {
        let mut h = H::default();
        h.both(OpType::Ok, 0, F::Add, vec![ap(0, 1)], vec![ap(0, 1)]);
        h.op(OpType::Invoke, 1, F::Add, vec![ap(0, 1)]);
        h.both(OpType::Ok, 2, F::Read, vec![rn(0)], vec![r(0, Some(2))]);
        h.op(OpType::Info, 1, F::Add, vec![ap(0, 1)]);
        let hist = h.history();
        assert_eq!(check(&hist).valid, Valid::True);
        let mut h = H::default();
        h.both(OpType::Ok, 0, F::Add, vec![ap(0, 1)], vec![ap(0, 1)]);
        h.op(OpType::Invoke, 1, F::Add, vec![ap(0, 1)]);
        let bad = h.both(OpType::Ok, 2, F::Read, vec![rn(0)], vec![r(0, Some(2))]);
        h.op(OpType::Fail, 1, F::Add, vec![ap(0, 1)]);
        let rep = check(&h.history());
        assert_eq!(rep.kinds(), ["out-of-bounds"]);
        assert_eq!(rep.findings[0].ops, [bad]);
        assert!(rep.findings[0].explanation.contains("between 1 (adds"));
    }
}
