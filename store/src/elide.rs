//! Invocations stored once: an invocation whose micro-ops are its
//! completion's with every read `nil` (what every Jepsen-style client
//! records) keeps none of its own in a `History`'s arena: the copies were a
//! large share of a big check's peak memory (BENCHMARKS.md).
//!
//! Key decision: eliding is lossless by construction — an invocation is
//! elided only when it can be rebuilt exactly from its completion
//! ([`elidable`]: same f, same number of micro-ops, same appends and writes,
//! reads `nil` where the completion read something; transactions with
//! range reads are left alone) — and it happens while the history is built
//! (`crate::columns::HistoryBuilder` keeps an open invocation's micro-ops
//! aside until its completion comes), so the copies never pile up.
//! `History::txn` / `History::op` / `History::into_ops` give the micro-ops
//! back, so writers and round trips see what was read.

use crate::history::{MicroOp, ReadValue};

/// Whether an invocation with micro-ops `inv` can be stored as its
/// completion's `comp` (the caller checks that their `f`s are equal).
pub(crate) fn elidable(inv: &[MicroOp], comp: &[MicroOp]) -> bool {
    inv.len() == comp.len() && inv.iter().zip(comp).all(|(x, y)| is_nil_read_of(x, y))
}

/// Whether `inv` is `comp` with its read's result unknown.
fn is_nil_read_of(inv: &MicroOp, comp: &MicroOp) -> bool {
    match (inv, comp) {
        (MicroOp::Append(k1, v1), MicroOp::Append(k2, v2))
        | (MicroOp::Write(k1, v1), MicroOp::Write(k2, v2)) => k1 == k2 && v1 == v2,
        (MicroOp::Read(k1, ReadValue::Nil), MicroOp::Read(k2, _)) => k1 == k2,
        _ => false,
    }
}

/// The micro-ops of an elided invocation whose completion has `comp`.
pub(crate) fn invocation_mops(comp: &[MicroOp]) -> Vec<MicroOp> {
    comp.iter()
        .map(|m| match m {
            MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
            other => other.clone(),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::history::{History, Key, MicroOp, Op, OpType, ReadValue, Val};
    use std::borrow::Cow;

    fn a(v: i64) -> MicroOp {
        MicroOp::Append(Key::int(1), Val::int(v))
    }

    fn r(l: Option<&[i64]>) -> MicroOp {
        let rv = l.map_or(ReadValue::Nil, |l| {
            ReadValue::List(l.iter().map(|&v| Val::int(v)).collect::<Vec<_>>().into())
        });
        MicroOp::Read(Key::int(1), rv)
    }

    #[test]
    fn an_invocation_like_its_completion_is_stored_once_and_given_back() {
        let ops = vec![
            Op::txn(0, OpType::Invoke, 0, vec![a(1), r(None)]),
            // Not elided: its read already has a value.
            Op::txn(1, OpType::Invoke, 1, vec![r(Some(&[]))]),
            Op::txn(2, OpType::Ok, 0, vec![a(1), r(Some(&[1]))]),
            Op::txn(3, OpType::Ok, 1, vec![r(Some(&[1]))]),
            // Not elided: the info completion carries no micro-ops.
            Op::txn(4, OpType::Invoke, 2, vec![a(2)]),
            Op::txn(5, OpType::Info, 2, vec![]),
            // Not elided: never completed.
            Op::txn(6, OpType::Invoke, 3, vec![a(3)]),
        ];
        let h = History::new(ops.clone()).unwrap_or_default();
        let elided: Vec<bool> = (0..h.len())
            .map(|pos| h.is_txn(pos) && h.stored_txn(pos).is_none())
            .collect();
        assert_eq!(elided, [true, false, false, false, false, false, false]);
        assert!(matches!(h.txn(0), Some(Cow::Owned(_))));
        assert_eq!(h.txn(0).as_deref(), Some(&[a(1), r(None)][..]));
        assert_eq!(h.op(0), ops[0]);
        assert_eq!(h.iter_ops().collect::<Vec<_>>(), ops);
        // The arena holds the micro-ops not elided: 6 of the 8 read.
        assert_eq!(h.mop_count(), 6);
        assert_eq!(h.into_ops(), ops);
    }
}
