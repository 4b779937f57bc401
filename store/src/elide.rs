//! Invocations stored once: an invocation whose micro-ops are its
//! completion's with every read `nil` (what every Jepsen-style client
//! records) keeps [`OpValue::AsCompletion`] instead of its own copy
//! (issue 15: at 1M transactions the copies were ~100 MB of a check's peak).
//!
//! Key decision: the marker is lossless by construction — an invocation is
//! elided only when it can be rebuilt exactly from its completion
//! ([`elidable`]: same f, same number of micro-ops, same appends and writes,
//! reads `nil` where the completion read something; transactions with
//! range reads are left alone) — and it is set as early as possible: the
//! readers that keep a whole history ([`Elider`], per reader thread) drop
//! an invocation's micro-ops the moment its completion is read, so the
//! allocator reuses the block for the next op instead of the copies piling
//! up; `History::new` elides what is left (ops built in memory, pairs cut by
//! a parallel reader's chunk boundary). `History::txn` / `History::op` /
//! `History::into_ops` give the micro-ops back, so writers and round trips
//! see what was read.

use crate::history::{MicroOp, Op, OpType, OpValue, Process, ReadValue};
use rustc_hash::FxHashMap;

/// Whether `inv` can be stored as [`OpValue::AsCompletion`] of `comp`.
pub(crate) fn elidable(inv: &Op, comp: &Op) -> bool {
    let (OpValue::Txn(a), OpValue::Txn(b)) = (&inv.value, &comp.value) else {
        return false;
    };
    inv.op_type == OpType::Invoke
        && inv.f == comp.f
        && a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| is_nil_read_of(x, y))
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

/// Elides invocations in a stream of ops as their completions arrive
/// (pairing by client process, as `History::new` does; ops without a
/// process are left to `History::new`). Any pair it elides is the pair
/// `History::new` makes of the same ops, or `History::new` refuses them
/// (a second invocation of a process while one is open).
#[derive(Debug, Default)]
pub(crate) struct Elider {
    open: FxHashMap<u64, usize>,
}

impl Elider {
    /// Takes the op at position `pos` (counting up from 0); `op_at` gives
    /// an earlier op, which it may change.
    pub(crate) fn push<'o>(
        &mut self,
        pos: usize,
        op: &Op,
        op_at: impl FnOnce(usize) -> &'o mut Op,
    ) {
        let Some(Process::Client(p)) = op.process else {
            return;
        };
        if op.op_type == OpType::Invoke {
            self.open.insert(p.0, pos);
            return;
        }
        if let Some(inv) = self.open.remove(&p.0) {
            let inv = op_at(inv);
            if elidable(inv, op) {
                inv.value = OpValue::AsCompletion;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::history::{History, Key, MicroOp, Op, OpType, OpValue, ReadValue, Val};
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
        let elided: Vec<bool> = h
            .ops()
            .iter()
            .map(|o| matches!(o.value, OpValue::AsCompletion))
            .collect();
        assert_eq!(elided, [true, false, false, false, false, false, false]);
        assert_eq!(h.txn(0).as_deref(), Some(&[a(1), r(None)][..]));
        assert_eq!(*h.op(0), ops[0]);
        assert_eq!(h.iter_ops().map(Cow::into_owned).collect::<Vec<_>>(), ops);
        // Pairing a copy of the stored ops again gives the same history.
        let again = History::new(h.ops().to_vec()).unwrap_or_default();
        assert_eq!(again.into_ops(), ops);
        assert_eq!(h.into_ops(), ops);
    }

    #[test]
    fn a_marker_completed_by_no_transaction_is_refused() {
        let mut inv = Op::txn(0, OpType::Invoke, 0, vec![]);
        inv.value = OpValue::AsCompletion;
        let mut comp = Op::txn(1, OpType::Ok, 0, vec![]);
        comp.value = OpValue::Data(Box::new(crate::Data::Nil));
        let e = History::new(vec![inv, comp]).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("completed by no transaction"), "{e}");
    }
}
