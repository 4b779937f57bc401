//! The long-fork checker (Jepsen's `long-fork`): two reads of one group of
//! keys that saw two independent inserts in opposite orders — one saw x
//! but not y, the other y but not x — a fork that snapshot isolation
//! forbids (parallel snapshot isolation allows it).
//!
//! Writes must be single `[w k v]` transactions, each key written once
//! (else `unknown`, `multiple-writes`); reads are transactions of reads
//! only, grouped by their key set. Two reads are compared as key → value
//! maps; two different values for one key is an `illegal-history`.
//!
//! Key decision: Jepsen compares every pair of reads of a group (O(r²)).
//! A read of a group is fully described by which of its keys it saw, so
//! the pairs are compared per distinct *shape* (the set of keys present,
//! at most 2^group size of them), one example read each: linear in the
//! reads for the small groups the workload uses.

use super::{Finding, Report, atom_int, completions, idx, op_name, read_int};
use rustc_hash::FxHashMap;
use serde_json::json;
use store::{F, History, MicroOp, OpType};

/// Groups larger than this are compared pairwise per distinct shape
/// through a hash of key sets (still no pair of identical shapes twice).
const MAX_GROUP: usize = 64;

/// Checks every group of reads.
pub fn check(history: &History) -> Report {
    let mut report = Report::new("long-fork");
    let mut written: FxHashMap<i64, (i64, usize)> = FxHashMap::default();
    let mut groups: FxHashMap<Vec<i64>, FxHashMap<Vec<bool>, usize>> = FxHashMap::default();
    let (mut reads, mut early, mut late) = (0u64, 0u64, 0u64);
    for c in completions(history) {
        if c.f != F::Txn {
            continue;
        }
        match &c.mops[..] {
            [MicroOp::Write(k, v)] => {
                let (Some(k), Some(v)) = (atom_int(&k.0), super::val_int(v)) else {
                    continue;
                };
                if c.op_type == OpType::Invoke || c.op_type == OpType::Fail {
                    continue;
                }
                if let Some((_, first)) = written.insert(k, (v, c.pos))
                    && first != c.pos
                {
                    report.unknown(format!(
                        "key {k} was written twice ({} and {}): long-fork needs every key written once",
                        op_name(history, first),
                        op_name(history, c.pos)
                    ));
                    report.stat("error", json!(["multiple-writes", k]));
                }
            }
            mops if c.op_type == OpType::Ok
                && !mops.is_empty()
                && mops.iter().all(|m| matches!(m, MicroOp::Read(..))) =>
            {
                let mut kv: Vec<(i64, Option<i64>)> = Vec::with_capacity(mops.len());
                for m in mops {
                    if let MicroOp::Read(k, v) = m
                        && let (Some(k), Some(v)) = (atom_int(&k.0), read_int(v))
                    {
                        kv.push((k, v));
                    }
                }
                if kv.len() != mops.len() || kv.len() > MAX_GROUP {
                    continue;
                }
                kv.sort_unstable();
                reads += 1;
                if kv.iter().all(|(_, v)| v.is_none()) {
                    early += 1;
                }
                if kv.iter().all(|(_, v)| v.is_some()) {
                    late += 1;
                }
                let keys: Vec<i64> = kv.iter().map(|(k, _)| *k).collect();
                let shape: Vec<bool> = kv.iter().map(|(_, v)| v.is_some()).collect();
                for (k, v) in &kv {
                    if let (Some(v), Some((w, wpos))) = (v, written.get(k))
                        && v != w
                    {
                        report.add(Finding {
                            kind: "illegal-history",
                            ops: vec![idx(history, c.pos), idx(history, *wpos)],
                            explanation: format!(
                                "read {} saw key {k} = {v}, but its only write ({}) wrote {w}",
                                op_name(history, c.pos),
                                op_name(history, *wpos)
                            ),
                            data: json!({"key": k, "read": v, "written": w}),
                        });
                    }
                }
                groups
                    .entry(keys)
                    .or_default()
                    .entry(shape)
                    .or_insert(c.pos);
            }
            _ => {}
        }
    }
    let mut forks = 0u64;
    let mut group_keys: Vec<&Vec<i64>> = groups.keys().collect();
    group_keys.sort();
    for keys in group_keys {
        let mut shapes: Vec<(&Vec<bool>, &usize)> = groups[keys].iter().collect();
        shapes.sort();
        for (i, (a, apos)) in shapes.iter().enumerate() {
            for (b, bpos) in &shapes[i + 1..] {
                let a_only = (0..keys.len()).find(|&k| a[k] && !b[k]);
                let b_only = (0..keys.len()).find(|&k| b[k] && !a[k]);
                let (Some(x), Some(y)) = (a_only, b_only) else {
                    continue;
                };
                forks += 1;
                let (kx, ky) = (keys[x], keys[y]);
                let wop = |k: i64| {
                    written
                        .get(&k)
                        .map_or("an unrecorded write".to_string(), |(_, p)| {
                            op_name(history, *p)
                        })
                };
                let mut ops = vec![idx(history, **apos), idx(history, **bpos)];
                ops.extend(
                    [kx, ky]
                        .iter()
                        .filter_map(|k| written.get(k).map(|w| idx(history, w.1))),
                );
                report.add(Finding {
                    kind: "long-fork",
                    ops,
                    explanation: format!(
                        "read {} saw key {kx} but not key {ky}, while read {} saw key {ky} but not key {kx}: \
                         the inserts of {kx} ({}) and {ky} ({}) were observed in opposite orders, \
                         so no single order of commits explains both reads",
                        op_name(history, **apos),
                        op_name(history, **bpos),
                        wop(kx),
                        wop(ky)
                    ),
                    data: json!({"keys": keys, "reads": [idx(history, **apos), idx(history, **bpos)]}),
                });
            }
        }
    }
    report.stat("reads-count", reads);
    report.stat("early-read-count", early);
    report.stat("late-read-count", late);
    report.stat("fork-count", forks);
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, r, rn, w};
    use super::*;
    use crate::result::Valid;

    fn write(h: &mut H, p: u64, k: i64) -> u64 {
        h.both(OpType::Ok, p, F::Txn, vec![w(k, 1)], vec![w(k, 1)])
    }
    fn read(h: &mut H, p: u64, a: Option<i64>, b: Option<i64>) -> u64 {
        h.both(
            OpType::Ok,
            p,
            F::Txn,
            vec![rn(1), rn(0)],
            vec![r(1, b), r(0, a)],
        )
    }

    #[test]
    fn reads_in_one_order_are_valid() {
        let mut h = H::default();
        read(&mut h, 2, None, None);
        write(&mut h, 0, 0);
        read(&mut h, 2, Some(1), None);
        write(&mut h, 1, 1);
        read(&mut h, 3, Some(1), Some(1));
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(2));
        assert_eq!(rep.stats["early-read-count"], 1);
        assert_eq!(rep.stats["late-read-count"], 1);
    }

    #[test]
    fn opposite_orders_are_a_fork() {
        let mut h = H::default();
        write(&mut h, 0, 0);
        write(&mut h, 1, 1);
        let a = read(&mut h, 2, Some(1), None);
        let b = read(&mut h, 3, None, Some(1));
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::False);
        assert_eq!(rep.kinds(), ["long-fork"]);
        let f = &rep.findings[0];
        assert_eq!(&f.ops[..2], &[b, a]);
        assert!(
            f.explanation
                .contains("saw key 1 but not key 0, while read op 5"),
            "{}",
            f.explanation
        );
    }

    #[test]
    fn a_key_written_twice_is_unknown_and_a_wrong_value_illegal() {
        let mut h = H::default();
        write(&mut h, 0, 0);
        write(&mut h, 1, 0);
        read(&mut h, 2, Some(1), None);
        assert_eq!(check(&h.history()).valid, Valid::Unknown);
        let mut h = H::default();
        write(&mut h, 0, 0);
        read(&mut h, 2, Some(7), None);
        assert_eq!(check(&h.history()).kinds(), ["illegal-history"]);
    }
}
