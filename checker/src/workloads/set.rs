//! The set checker (Jepsen's `set`, with CockroachDB's `duplicates` and
//! `revived`): the last `ok` read must hold every acknowledged add, no
//! element nobody tried to add, no element twice, and no element whose add
//! definitely failed.
//!
//! `attempts` = every add invoked; `adds` = ok adds; the final read = the
//! last ok read. `lost` = adds − final; `unexpected` = final − attempts;
//! `duplicated` = elements more than once in the final read; `revived` =
//! final ∩ failed adds; `recovered` = final ∩ attempts − adds (info adds
//! that took effect; informational). Linear in the history.
//!
//! Also the element readers both set checkers use: the added element, a
//! read's elements (copied, or visited in place by [`read_ints`]) and the
//! value → id table of set-full ([`ElementIds`]).

use super::set_full::Elem;
use super::{Finding, Report, completions, data_int, idx, intervals, op_name, val_int};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::json;
use store::{Data, F, History, MicroOp, OpType, ReadValue};

/// The element an add op adds: `[append k x]` or Jepsen's integer value.
pub(crate) fn added(mops: &[MicroOp], data: Option<&Data>) -> Option<i64> {
    if let Some(d) = data {
        return data_int(d);
    }
    match mops {
        [MicroOp::Append(_, v)] | [MicroOp::Write(_, v)] => val_int(v),
        _ => None,
    }
}

/// The elements a read returned (duplicates kept), or `None` if it is not
/// a read of integers.
pub(crate) fn read_elements(mops: &[MicroOp], data: Option<&Data>) -> Option<Vec<i64>> {
    if let Some(d) = data {
        return match d {
            Data::Vec(v) | Data::Set(v) => v.iter().map(data_int).collect(),
            Data::Nil => Some(Vec::new()),
            _ => None,
        };
    }
    match mops {
        [MicroOp::Read(_, ReadValue::List(l))] => l.iter().map(val_int).collect(),
        [MicroOp::Read(_, ReadValue::Nil)] => Some(Vec::new()),
        _ => None,
    }
}

/// Element value → id: a table indexed by `value − min` when the values
/// are dense (Jepsen's and harness' adds count up from 0), else a map.
pub(crate) enum ElementIds {
    Dense { min: i64, ids: Vec<u32> },
    Sparse(FxHashMap<i64, u32>),
}

impl ElementIds {
    pub(crate) fn new(elems: &[Elem], map: FxHashMap<i64, u32>) -> ElementIds {
        let (Some(min), Some(max)) = (
            elems.iter().map(|e| e.value).min(),
            elems.iter().map(|e| e.value).max(),
        ) else {
            return ElementIds::Sparse(map);
        };
        // At most 4 slots per element (16 bytes): never much more than the map.
        let span = max.abs_diff(min);
        if span >= 4 * elems.len() as u64 + 1024 {
            return ElementIds::Sparse(map);
        }
        let mut ids = vec![u32::MAX; span as usize + 1];
        for (id, e) in elems.iter().enumerate() {
            ids[e.value.abs_diff(min) as usize] = id as u32;
        }
        ElementIds::Dense { min, ids }
    }

    pub(crate) fn get(&self, x: i64) -> Option<u32> {
        match self {
            ElementIds::Dense { min, ids } => {
                let at = usize::try_from(x.checked_sub(*min)?).ok()?;
                ids.get(at).copied().filter(|&id| id != u32::MAX)
            }
            ElementIds::Sparse(map) => map.get(&x).copied(),
        }
    }
}

/// Calls `f` with each element of the read completed at `pos`, borrowed
/// from the history, when every element is an integer; false (and no call)
/// when the op is not a read of integers.
pub(crate) fn read_ints(history: &History, pos: usize, f: impl FnMut(i64)) -> bool {
    if let Some(d) = history.data(pos) {
        return match d {
            Data::Vec(v) | Data::Set(v) => {
                if !v.iter().all(|d| data_int(d).is_some()) {
                    return false;
                }
                v.iter().filter_map(data_int).for_each(f);
                true
            }
            Data::Nil => true,
            _ => false,
        };
    }
    let Some(mops) = history.txn(pos) else {
        return false;
    };
    match &*mops {
        [MicroOp::Read(_, ReadValue::List(l))] => {
            if !l.iter().all(|v| val_int(v).is_some()) {
                return false;
            }
            l.iter().filter_map(val_int).for_each(f);
            true
        }
        [MicroOp::Read(_, ReadValue::Nil)] => true,
        _ => false,
    }
}

/// Checks the final read against the adds.
pub fn check(history: &History) -> Report {
    let mut report = Report::new("set");
    // element → (op index of its add's completion, outcome)
    let mut attempts: FxHashMap<i64, (u64, OpType)> = FxHashMap::default();
    let mut final_read: Option<(usize, Vec<i64>)> = None;
    for c in completions(history) {
        match c.f {
            F::Add => {
                if let Some(x) = added(&c.mops, history.data(c.pos)) {
                    attempts.insert(x, (idx(history, c.pos), c.op_type));
                }
            }
            F::Read if c.op_type == OpType::Ok => {
                if let Some(v) = read_elements(&c.mops, history.data(c.pos)) {
                    final_read = Some((c.pos, v));
                }
            }
            _ => {}
        }
    }
    // Adds never completed still count as attempts.
    for pos in 0..history.len() {
        if history.is_client(pos)
            && history.op_type(pos) == OpType::Invoke
            && history.f(pos) == Some(&F::Add)
            && history.completion(pos).is_none()
            && let Some(x) = history.txn(pos).and_then(|m| added(&m, history.data(pos)))
        {
            attempts
                .entry(x)
                .or_insert((idx(history, pos), OpType::Info));
        }
    }
    let Some((read_pos, elements)) = final_read else {
        report.stat("attempt-count", attempts.len());
        report.unknown("Set was never read");
        return report;
    };
    let who = op_name(history, read_pos);
    let read_ix = idx(history, read_pos);
    let mut seen: FxHashSet<i64> = FxHashSet::default();
    let mut duplicated: Vec<i64> = Vec::new();
    for &e in &elements {
        if !seen.insert(e) {
            duplicated.push(e);
        }
    }
    duplicated.sort_unstable();
    duplicated.dedup();
    let sorted = |mut v: Vec<i64>| {
        v.sort_unstable();
        v
    };
    let lost = sorted(
        attempts
            .iter()
            .filter(|(e, (_, t))| *t == OpType::Ok && !seen.contains(e))
            .map(|(e, _)| *e)
            .collect(),
    );
    let unexpected = sorted(
        seen.iter()
            .filter(|e| !attempts.contains_key(e))
            .copied()
            .collect(),
    );
    let revived = sorted(
        seen.iter()
            .filter(|e| attempts.get(e).is_some_and(|(_, t)| *t == OpType::Fail))
            .copied()
            .collect(),
    );
    let recovered = sorted(
        seen.iter()
            .filter(|e| attempts.get(e).is_some_and(|(_, t)| *t == OpType::Info))
            .copied()
            .collect(),
    );
    let ok_count = seen.iter().filter(|e| attempts.contains_key(e)).count();
    let add_ops = |es: &[i64]| -> Vec<u64> {
        std::iter::once(read_ix)
            .chain(
                es.iter()
                    .take(8)
                    .filter_map(|e| attempts.get(e).map(|(i, _)| *i)),
            )
            .collect()
    };
    if !lost.is_empty() {
        let e = lost[0];
        report.add(Finding {
            kind: "lost",
            ops: add_ops(&lost),
            explanation: format!(
                "{} acknowledged adds are missing from the final read {who}: {}; e.g. the add of {e} completed ok as op {}",
                lost.len(),
                intervals(&lost),
                attempts.get(&e).map_or(0, |a| a.0)
            ),
            data: json!({"lost": intervals(&lost), "lost-count": lost.len()}),
        });
    }
    if !unexpected.is_empty() {
        report.add(Finding {
            kind: "unexpected",
            ops: vec![read_ix],
            explanation: format!(
                "the final read {who} holds {} elements nobody tried to add: {}",
                unexpected.len(),
                intervals(&unexpected)
            ),
            data: json!({"unexpected": intervals(&unexpected)}),
        });
    }
    if !duplicated.is_empty() {
        report.add(Finding {
            kind: "duplicated",
            ops: add_ops(&duplicated),
            explanation: format!(
                "the final read {who} holds {} elements more than once (each was added once): {}",
                duplicated.len(),
                intervals(&duplicated)
            ),
            data: json!({"duplicated": intervals(&duplicated)}),
        });
    }
    if !revived.is_empty() {
        report.add(Finding {
            kind: "revived",
            ops: add_ops(&revived),
            explanation: format!(
                "the final read {who} holds {} elements whose add failed (definitely not applied): {}",
                revived.len(),
                intervals(&revived)
            ),
            data: json!({"revived": intervals(&revived)}),
        });
    }
    let acknowledged = attempts.values().filter(|(_, t)| *t == OpType::Ok).count();
    report.stat("attempt-count", attempts.len());
    report.stat("acknowledged-count", acknowledged);
    report.stat("ok-count", ok_count);
    report.stat("lost-count", lost.len());
    report.stat("lost", intervals(&lost));
    report.stat("recovered-count", recovered.len());
    report.stat("recovered", intervals(&recovered));
    report.stat("unexpected-count", unexpected.len());
    report.stat("duplicated-count", duplicated.len());
    report.stat("revived-count", revived.len());
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, ap, rl, rn};
    use super::*;
    use crate::result::Valid;

    fn add(h: &mut H, t: OpType, x: i64) {
        h.both(t, x as u64 % 3, F::Add, vec![ap(0, x)], vec![ap(0, x)]);
    }

    #[test]
    fn a_complete_final_read_is_valid_and_counts_recovered() {
        let mut h = H::default();
        for x in 0..5 {
            add(&mut h, OpType::Ok, x);
        }
        add(&mut h, OpType::Info, 5);
        add(&mut h, OpType::Fail, 6);
        h.both(
            OpType::Ok,
            9,
            F::Read,
            vec![rn(0)],
            vec![rl(0, &[0, 1, 2, 3, 4, 5])],
        );
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(3));
        assert_eq!(rep.stats["recovered"], "#{5}");
        assert_eq!(rep.stats["attempt-count"], 7);
    }

    #[test]
    fn lost_unexpected_duplicated_revived() {
        let mut h = H::default();
        for x in 0..5 {
            add(&mut h, OpType::Ok, x);
        }
        add(&mut h, OpType::Fail, 6);
        h.both(
            OpType::Ok,
            9,
            F::Read,
            vec![rn(0)],
            vec![rl(0, &[0, 3, 3, 6, 42])],
        );
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::False);
        assert_eq!(rep.kinds(), ["duplicated", "lost", "revived", "unexpected"]);
        let lost = rep.of_kind("lost").next().unwrap();
        assert!(
            lost.explanation
                .starts_with("3 acknowledged adds are missing"),
            "{}",
            lost.explanation
        );
        assert!(lost.explanation.contains("#{1..2 4}"));
        assert_eq!(rep.stats["lost"], "#{1..2 4}");
    }

    #[test]
    fn never_read_is_unknown() {
        let mut h = H::default();
        add(&mut h, OpType::Ok, 1);
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::Unknown);
        assert_eq!(rep.reason.as_deref(), Some("Set was never read"));
    }
}
