//! The shape every peer format shares: sessions of transactions, each
//! committed or aborted, of register micro-ops; and its mapping to ops.
//!
//! Key decision: a transaction becomes one completion (`ok` or `fail`), in
//! the order the file lists transactions, with no invocation: the files
//! have no clock, so an invocation would say nothing a completion does not
//! (Elle reads a completion without invocation as standing for itself), and
//! leaving it out halves the ops a big file loads into. Positions mean
//! nothing across sessions, so the history is marked session-order-only and
//! the checker derives no real-time edges between sessions from them.

use crate::history::{
    F, History, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId, ReadValue, Val,
};
use std::collections::HashSet;

/// One transaction of a peer history.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PTxn {
    /// The session (becomes the op's process).
    pub session: u64,
    /// Committed (`ok`) or aborted (`fail`).
    pub committed: bool,
    /// Reads and writes in program order.
    pub mops: Vec<MicroOp>,
}

/// Ops for `txns`, in their order: one completion each, at consecutive
/// indices from 0.
pub(crate) fn to_ops(txns: Vec<PTxn>) -> Vec<Op> {
    txns.into_iter()
        .enumerate()
        .map(|(i, t)| Op {
            index: OpIndex(i as u64),
            time_ns: None,
            op_type: if t.committed {
                OpType::Ok
            } else {
                OpType::Fail
            },
            process: Some(Process::Client(ProcessId(t.session))),
            f: Some(F::Txn),
            value: OpValue::Txn(t.mops),
            error: None,
            extra: crate::history::Extra::new(),
        })
        .collect()
}

/// What a history holds that a peer format can say: its `ok` and `fail`
/// transactions in completion order, and each `info` transaction as a
/// committed one holding its writes only. None of these formats can say
/// that a transaction may or may not have committed; left out, an `info`
/// write that a later read saw would make that read a garbage read the
/// original does not have, so the converted file's verdict would differ.
/// Its reads (unknown) are dropped; one without writes is left out.
/// Returns the transactions and warnings for what changed (nemesis and
/// non-transaction ops are left out).
pub(crate) fn from_history(h: &History) -> (Vec<PTxn>, Vec<String>) {
    let mut out = Vec::new();
    let mut info = 0u64;
    let mut info_dropped = 0u64;
    let mut other = 0u64;
    // Sessions for ops without a process: one fresh session each, above
    // every process id, so they claim no session order.
    let mut next_free = (0..h.len())
        .filter_map(|pos| match h.process(pos) {
            Some(Process::Client(p)) => Some(p.0.saturating_add(1)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    for pos in 0..h.len() {
        let op_type = h.op_type(pos);
        if op_type == OpType::Invoke {
            continue;
        }
        let session = match h.process(pos) {
            Some(Process::Client(p)) => p.0,
            Some(Process::Nemesis) => {
                other += 1;
                continue;
            }
            None => {
                next_free = next_free.saturating_add(1);
                next_free - 1
            }
        };
        let Some(mops) = h.txn(pos) else {
            other += 1;
            continue;
        };
        match op_type {
            OpType::Ok => out.push(PTxn {
                session,
                committed: true,
                mops: mops.into_owned(),
            }),
            OpType::Fail => {
                // A failed completion may carry no micro-ops: take the invocation's.
                let mops = match h.invocation(pos).and_then(|i| h.txn(i)) {
                    Some(inv) if mops.is_empty() => inv,
                    _ => mops,
                };
                out.push(PTxn {
                    session,
                    committed: false,
                    mops: mops.into_owned(),
                });
            }
            _ => {
                // An info completion may carry no micro-ops: the
                // invocation's writes are what may have happened.
                let mops = match h.invocation(pos).and_then(|i| h.txn(i)) {
                    Some(inv) if mops.is_empty() => inv,
                    _ => mops,
                };
                let writes: Vec<MicroOp> = mops
                    .iter()
                    .filter(|m| matches!(m, MicroOp::Write(..) | MicroOp::Append(..)))
                    .cloned()
                    .collect();
                if writes.is_empty() {
                    info_dropped += 1;
                } else {
                    info += 1;
                    out.push(PTxn {
                        session,
                        committed: true,
                        mops: writes,
                    });
                }
            }
        }
    }
    let mut warnings = Vec::new();
    if info > 0 {
        warnings.push(format!(
            "{info} indeterminate (info) transactions written as committed with their writes only (their reads, unknown, dropped): the format cannot say that a transaction may or may not have committed"
        ));
    }
    if info_dropped > 0 {
        warnings.push(format!(
            "{info_dropped} indeterminate (info) transactions without writes left out"
        ));
    }
    if other > 0 {
        warnings.push(format!(
            "{other} nemesis or non-transaction ops left out: the format holds transactions only"
        ));
    }
    (out, warnings)
}

/// Turns reads of `initial` into `nil` reads on keys no transaction writes
/// `initial` to (for a target format whose initial value differs).
pub(crate) fn initial_reads_to_nil(txns: &mut [PTxn], initial: &Val) {
    let written: HashSet<Key> = txns
        .iter()
        .flat_map(|t| &t.mops)
        .filter_map(|m| match m {
            MicroOp::Write(k, v) if v == initial => Some(k.clone()),
            _ => None,
        })
        .collect();
    for m in txns.iter_mut().flat_map(|t| &mut t.mops) {
        if let MicroOp::Read(k, rv) = m
            && matches!(rv, ReadValue::Scalar(v) if v == initial)
            && !written.contains(k)
        {
            *rv = ReadValue::Nil;
        }
    }
}
