//! The independent check of a `valid` witness: before the complete engine
//! may say `valid`, its witness is replayed against a key → value store
//! from the definitions, using nothing of the solver (no polygraph, no
//! graph): only the history's transactions ([`Txns`]), the witness and
//! the level.
//!
//! A witness is a commit order of transactions (op indices) plus, for each,
//! its snapshot point: how many of the transactions before it in the
//! commit order had committed when it started. For serializability the
//! snapshot point of the `i`-th transaction is `i` (it runs alone, at its
//! commit); for snapshot isolation it may be smaller.
//!
//! The replay checks, from the definitions:
//! - every `ok` transaction is in the witness exactly once, no `fail` one
//!   is, and `info` ones at most once (those in it count as committed);
//! - every snapshot point is at most the transaction's own position;
//! - **reads**: a transaction's first access of a key, when it is a read
//!   of a committed transaction (`ok` only: an `info` one's reads are not
//!   observations), returns the key's value in the store made of the
//!   commits before its snapshot point, starting from the initial state
//!   (nil, or the format's initial value, [`History::initial_value`]). A read
//!   whose value no transaction's final write of the key carries — nor the
//!   initial state — is an aborted, intermediate or garbage read, which other
//!   analyses report; it is not checked here, nor is a read of a value that
//!   the reader itself writes (a future read), nor reads after the
//!   transaction's own access of the key (internal consistency);
//! - **first committer wins** (SI): the previous writer of a key in commit
//!   order committed before the writer's snapshot point (no two concurrent
//!   transactions write one key). Under serializability this always holds;
//! - **order**: for session levels every `ok` transaction's session
//!   predecessor (an `ok` transaction) committed before its snapshot point;
//!   for strict levels every `ok` transaction that completed before a
//!   transaction's invocation did (a history without real time: session
//!   order, as [`History::has_realtime_order`] says).

use super::Level;
use crate::txn::{Status, Txns};
use rustc_hash::{FxHashMap, FxHashSet};
use store::{Atom, History, MicroOp, OpIndex, ReadValue};

/// Replays `witness` (commit order, op indices) with `starts` (snapshot
/// point per witness entry) as `level` demands; the first defect found.
pub fn replay(
    txns: &Txns<'_>,
    history: &History,
    level: Level,
    witness: &[OpIndex],
    starts: &[u32],
) -> Result<(), String> {
    if witness.len() != starts.len() {
        return Err(format!(
            "{} transactions but {} snapshot points",
            witness.len(),
            starts.len()
        ));
    }
    let serial = !level.split();
    let by_op: FxHashMap<OpIndex, u32> = (0..txns.len() as u32)
        .map(|t| (txns.op_index(history, t), t))
        .collect();
    // rank[t]: position of txn t in the commit order; snap[t]: its snapshot.
    const NO: u32 = u32::MAX;
    let mut rank = vec![NO; txns.len()];
    let mut snap = vec![NO; txns.len()];
    for (i, (op, &s)) in witness.iter().zip(starts).enumerate() {
        let Some(&t) = by_op.get(op) else {
            return Err(format!("op {} in the witness is no transaction", op.0));
        };
        let tx = &txns.txns[t as usize];
        if tx.status == Status::Fail {
            return Err(format!("op {} in the witness aborted", op.0));
        }
        if rank[t as usize] != NO {
            return Err(format!("op {} is twice in the witness", op.0));
        }
        if s as usize > i || (serial && s as usize != i) {
            return Err(format!(
                "op {}: snapshot point {s} at commit position {i}",
                op.0
            ));
        }
        rank[t as usize] = i as u32;
        snap[t as usize] = s;
    }
    if let Some(t) = (0..txns.len()).find(|&t| txns.txns[t].status == Status::Ok && rank[t] == NO) {
        return Err(format!(
            "committed op {} is missing from the witness",
            txns.op_index(history, t as u32).0
        ));
    }
    let op = |t: u32| txns.op_index(history, t).0;
    // The store's versions per key, in commit order: (rank, writer).
    // Values are compared through their writers' micro-ops.
    let mut versions: FxHashMap<&Atom, Vec<(u32, Option<&Atom>)>> = FxHashMap::default();
    // Every final write of an ok or info transaction: whether a read's
    // value is an observation of some write at all.
    let mut finals: FxHashMap<(&Atom, &Atom), u32> = FxHashMap::default();
    for (t, tx) in txns.txns.iter().enumerate() {
        if tx.status == Status::Fail {
            continue;
        }
        for (k, v) in final_writes(txns.mops_of(tx)) {
            finals.entry((k, v)).or_insert(t as u32);
            if rank[t] != NO {
                versions.entry(k).or_default().push((rank[t], Some(v)));
            }
        }
    }
    for v in versions.values_mut() {
        v.sort_unstable_by_key(|x| x.0);
    }
    let initial = history.initial_value().map(|v| &v.0);
    // Keys some transaction (any status) writes the initial value to: there
    // a read of it is that write's, not the initial state's.
    let writes_initial: FxHashSet<&Atom> = match initial {
        None => FxHashSet::default(),
        Some(iv) => txns
            .txns
            .iter()
            .flat_map(|tx| txns.mops_of(tx).iter())
            .filter_map(|m| match m {
                MicroOp::Write(k, v) if &v.0 == iv => Some(&k.0),
                _ => None,
            })
            .collect(),
    };
    // The value of `k` that a transaction with snapshot point `s` sees.
    let visible = |k: &Atom, s: u32| -> Option<&Atom> {
        let vs = versions.get(k)?;
        let n = vs.partition_point(|x| x.0 < s);
        if n == 0 { None } else { vs[n - 1].1 }
    };
    for (t, tx) in txns.txns.iter().enumerate() {
        if rank[t] == NO {
            continue;
        }
        let s = snap[t];
        // First committer wins: the previous writer of each key committed
        // before this transaction's snapshot.
        for (k, _) in final_writes(txns.mops_of(tx)) {
            if let Some(vs) = versions.get(k) {
                let n = vs.partition_point(|x| x.0 < rank[t]);
                if n > 0 && vs[n - 1].0 >= s {
                    return Err(format!(
                        "ops {} and {} are concurrent and both write key {}",
                        op(by_rank(&rank, vs[n - 1].0)),
                        op(t as u32),
                        k
                    ));
                }
            }
        }
        if tx.status != Status::Ok {
            continue;
        }
        let mut seen: Vec<&Atom> = Vec::new();
        for m in txns.mops_of(tx) {
            let (k, rv) = match m {
                MicroOp::Read(k, rv) => (&k.0, rv),
                MicroOp::Write(k, _) => {
                    if !seen.contains(&&k.0) {
                        seen.push(&k.0);
                    }
                    continue;
                }
                _ => continue,
            };
            if seen.contains(&k) {
                continue;
            }
            seen.push(k);
            let got = match rv {
                ReadValue::Nil => None,
                ReadValue::Scalar(v) => Some(&v.0),
                ReadValue::List(_) => continue,
            };
            let sees = visible(k, s);
            let ok = match got {
                None => sees.is_none(),
                Some(v) => {
                    let writer = finals.get(&(k, v)).copied();
                    if writer == Some(t as u32) {
                        continue; // a future read: another analysis' anomaly
                    }
                    let is_initial =
                        writer.is_none() && initial == Some(v) && !writes_initial.contains(k);
                    if writer.is_none() && !is_initial {
                        continue; // aborted, intermediate or garbage read
                    }
                    match sees {
                        Some(w) => w == v,
                        None => is_initial,
                    }
                }
            };
            if !ok {
                let shown =
                    |x: Option<&Atom>| x.map_or("the initial state".to_string(), |a| a.to_string());
                return Err(format!(
                    "op {} reads {} from key {k} but its snapshot (after {s} commits) holds {}",
                    op(t as u32),
                    shown(got),
                    shown(sees)
                ));
            }
        }
    }
    // Order: (a before b) means a committed before b's snapshot point.
    let check_order = |a: u32, b: u32, what: &str| -> Result<(), String> {
        if rank[a as usize] == NO || rank[b as usize] == NO || rank[a as usize] < snap[b as usize] {
            Ok(())
        } else {
            Err(format!(
                "op {} precedes op {} in {what} but the witness does not",
                op(a),
                op(b)
            ))
        }
    };
    let session = matches!(
        level,
        Level::StrongSessionSerializable | Level::StrongSessionSnapshotIsolation
    );
    let strict = matches!(
        level,
        Level::StrictSerializable | Level::StrongSnapshotIsolation
    );
    if session || (strict && !history.has_realtime_order()) {
        let mut by_pos: Vec<u32> = (0..txns.len() as u32)
            .filter(|&t| txns.txns[t as usize].status == Status::Ok)
            .collect();
        by_pos.sort_unstable_by_key(|&t| txns.txns[t as usize].pos);
        let mut last: FxHashMap<u64, u32> = FxHashMap::default();
        for t in by_pos {
            let Some(p) = txns.process(t) else {
                continue;
            };
            if let Some(prev) = last.insert(p, t) {
                check_order(prev, t, "session order")?;
            }
        }
    }
    if strict && history.has_realtime_order() {
        // For each transaction, the ok transaction of highest rank among
        // those completed before its invocation.
        let mut done: Vec<(u32, u32)> = (0..txns.len() as u32)
            .filter(|&t| txns.txns[t as usize].status == Status::Ok)
            .map(|t| (txns.txns[t as usize].pos, t))
            .collect();
        done.sort_unstable();
        let mut best: Vec<u32> = Vec::with_capacity(done.len());
        for &(_, t) in &done {
            let b = match best.last() {
                Some(&p) if rank[p as usize] > rank[t as usize] => p,
                _ => t,
            };
            best.push(b);
        }
        for b in 0..txns.len() as u32 {
            let inv = txns.txns[b as usize].inv;
            let n = done.partition_point(|x| x.0 < inv);
            if n > 0 {
                check_order(best[n - 1], b, "real time")?;
            }
        }
    }
    Ok(())
}

/// The transaction at commit position `r`.
fn by_rank(rank: &[u32], r: u32) -> u32 {
    rank.iter()
        .position(|&x| x == r)
        .map_or(u32::MAX, |t| t as u32)
}

/// The last write of each key of a transaction: (key, value).
fn final_writes(mops: &[MicroOp]) -> Vec<(&Atom, &Atom)> {
    let mut out: Vec<(&Atom, &Atom)> = Vec::new();
    for m in mops.iter().rev() {
        if let MicroOp::Write(k, v) = m
            && !out.iter().any(|(x, _)| *x == &k.0)
        {
            out.push((&k.0, &v.0));
        }
    }
    out
}
