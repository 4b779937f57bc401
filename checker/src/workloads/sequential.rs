//! The sequential checker (CockroachDB's `sequential`): a write inserts a
//! key's subkeys in order, each in its own transaction; a read reads them
//! in reverse order, each in its own transaction. Having seen a later
//! subkey, the reader must see every earlier one (its writer inserted them
//! first, and the reader read them after), so a read is *bad* when, after
//! its leading nils, a nil remains. Reads are counted `all` (every subkey),
//! `some`, `none`, `bad`; valid iff none is bad.

use super::{Finding, Report, atom_int, completions, idx, op_name};
use rustc_hash::FxHashMap;
use serde_json::json;
use store::{F, History, MicroOp, OpType, ReadValue};

/// Checks every ok read.
pub fn check(history: &History) -> Report {
    let mut report = Report::new("sequential");
    let mut writer: FxHashMap<i64, usize> = FxHashMap::default();
    let (mut all, mut some, mut none, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let mut reads: Vec<(usize, Vec<(i64, bool)>)> = Vec::new();
    for c in completions(history) {
        match c.f {
            F::Write if c.op_type != OpType::Fail => {
                for m in c.mops.iter() {
                    if let MicroOp::Write(k, _) = m
                        && let Some(k) = atom_int(&k.0)
                    {
                        writer.entry(k).or_insert(c.pos);
                    }
                }
            }
            F::Read if c.op_type == OpType::Ok => {
                let seen: Vec<(i64, bool)> = c
                    .mops
                    .iter()
                    .filter_map(|m| match m {
                        MicroOp::Read(k, v) => {
                            Some((atom_int(&k.0)?, !matches!(v, ReadValue::Nil)))
                        }
                        _ => None,
                    })
                    .collect();
                reads.push((c.pos, seen));
            }
            _ => {}
        }
    }
    for (pos, seen) in reads {
        let present = seen.iter().filter(|s| s.1).count();
        let first = seen.iter().position(|s| s.1);
        let hole = first.and_then(|f| seen[f..].iter().position(|s| !s.1).map(|h| h + f));
        match hole {
            Some(h) => {
                bad += 1;
                let (later, missing) = (seen[first.unwrap_or(0)].0, seen[h].0);
                let mut ops = vec![idx(history, pos)];
                let wrote = match writer.get(&missing) {
                    Some(&w) => {
                        ops.push(idx(history, w));
                        format!(", which {} inserted before it", op_name(history, w))
                    }
                    None => String::new(),
                };
                report.add(Finding {
                    kind: "bad-read",
                    ops,
                    explanation: format!(
                        "read {} saw subkey {later} but then missed the earlier subkey {missing}{wrote}: \
                         a trailing nil in {:?}",
                        op_name(history, pos),
                        seen.iter().map(|s| if s.1 { s.0.to_string() } else { "nil".into() }).collect::<Vec<_>>()
                    ),
                    data: json!({"read": seen.iter().map(|s| s.1.then_some(s.0)).collect::<Vec<_>>()}),
                });
            }
            None if present == seen.len() => all += 1,
            None if present == 0 => none += 1,
            None => some += 1,
        }
    }
    report.stat("all-count", all);
    report.stat("some-count", some);
    report.stat("none-count", none);
    report.stat("bad-count", bad);
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, r, rn, w};
    use super::*;
    use crate::result::Valid;

    fn read(h: &mut H, seen: [bool; 3]) -> u64 {
        // Subkeys 2, 1, 0 (reverse order).
        let keys = [2, 1, 0];
        h.both(
            OpType::Ok,
            1,
            F::Read,
            keys.iter().map(|&k| rn(k)).collect(),
            keys.iter()
                .zip(seen)
                .map(|(&k, s)| r(k, s.then_some(1)))
                .collect(),
        )
    }

    #[test]
    fn prefixes_are_valid_and_a_hole_is_bad() {
        let mut h = H::default();
        let wr = vec![w(0, 1), w(1, 1), w(2, 1)];
        let write = h.both(OpType::Ok, 0, F::Write, wr.clone(), wr);
        read(&mut h, [false, false, false]);
        read(&mut h, [false, true, true]);
        read(&mut h, [true, true, true]);
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(2));
        assert_eq!(
            (
                rep.stats["none-count"].clone(),
                rep.stats["some-count"].clone()
            ),
            (1.into(), 1.into())
        );
        let mut h2 = H::default();
        let wr = vec![w(0, 1), w(1, 1), w(2, 1)];
        h2.both(OpType::Ok, 0, F::Write, wr.clone(), wr);
        let bad = read(&mut h2, [false, true, false]);
        let rep = check(&h2.history());
        assert_eq!(rep.kinds(), ["bad-read"]);
        assert_eq!(rep.findings[0].ops, [bad, write]);
        assert!(
            rep.findings[0]
                .explanation
                .contains("saw subkey 1 but then missed the earlier subkey 0")
        );
    }
}
