//! The bank checker (Jepsen's `bank` checker, with CockroachDB's and
//! YugabyteDB's variants): every `ok` read of all balances must hold the
//! bank's total, and (unless allowed) no negative balance.
//!
//! Per ok read, the first rule that applies (Jepsen's order):
//! `unexpected-key` (an account outside the bank), `nil-balance` (an
//! account without a balance — not with inserts/deletes, where a missing
//! row is an account that does not exist), `wrong-total`,
//! `negative-value`. A read is either our micro-ops (`[r a balance]`) or
//! Jepsen's `{acct balance}` map / CockroachDB's balance vector.
//! [`totals`] is what the engine's plot draws.

use super::{Finding, Report, completions, data_int, idx, op_name, read_int, secs};
use serde_json::json;
use store::{Data, F, History, MicroOp, OpType};

/// What the bank holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Accounts `0..accounts` may exist.
    pub accounts: i64,
    /// The money in the bank.
    pub total: i64,
    /// Whether negative balances are allowed.
    pub negative_allowed: bool,
    /// Accounts are inserted and deleted (a missing row is no error).
    pub inserts: bool,
}

impl Default for Options {
    /// Jepsen's defaults: 8 accounts, 100 in all, no negative balances.
    fn default() -> Options {
        Options {
            accounts: 8,
            total: 100,
            negative_allowed: false,
            inserts: false,
        }
    }
}

/// One ok read: account → balance (`None`: nil / no row).
type Balances = Vec<(i64, Option<i64>)>;

fn balances(mops: &[MicroOp], data: Option<&Data>) -> Option<Balances> {
    if let Some(d) = data {
        return match d {
            Data::Map(entries) => entries
                .iter()
                .map(|(k, v)| {
                    let a = data_int(k)?;
                    Some((
                        a,
                        if *v == Data::Nil {
                            None
                        } else {
                            Some(data_int(v)?)
                        },
                    ))
                })
                .collect(),
            Data::Vec(vs) => vs
                .iter()
                .enumerate()
                .map(|(i, v)| Some((i as i64, data_int(v))))
                .collect(),
            _ => None,
        };
    }
    mops.iter()
        .map(|m| match m {
            MicroOp::Read(k, v) => Some((super::atom_int(&k.0)?, read_int(v)?)),
            _ => None,
        })
        .collect()
}

/// `(seconds, total of the non-nil balances, process)` of every ok read, in
/// history order: the bank plot's points.
pub fn totals(history: &History) -> Vec<(f64, i64, u64)> {
    completions(history)
        .filter(|c| c.f == F::Read && c.op_type == OpType::Ok)
        .filter_map(|c| {
            let b = balances(&c.mops, history.data(c.pos))?;
            let total = b.iter().filter_map(|(_, v)| *v).sum();
            let p = match history.process(c.pos) {
                Some(store::Process::Client(p)) => p.0,
                _ => 0,
            };
            Some((secs(history, c.pos), total, p))
        })
        .collect()
}

fn show(b: &Balances) -> String {
    let parts: Vec<String> = b
        .iter()
        .map(|(a, v)| match v {
            Some(v) => format!("{a}: {v}"),
            None => format!("{a}: nil"),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Checks every ok read.
pub fn check(history: &History, o: &Options) -> Report {
    let mut report = Report::new(if o.inserts { "bank-insert" } else { "bank" });
    let mut reads = 0u64;
    let (mut lowest, mut highest): (Option<i64>, Option<i64>) = (None, None);
    let mut unreadable = 0u64;
    for c in completions(history) {
        if c.f != F::Read || c.op_type != OpType::Ok {
            continue;
        }
        reads += 1;
        let Some(b) = balances(&c.mops, history.data(c.pos)) else {
            unreadable += 1;
            continue;
        };
        let who = op_name(history, c.pos);
        let ops = vec![idx(history, c.pos)];
        let unexpected: Vec<i64> = b
            .iter()
            .map(|(a, _)| *a)
            .filter(|a| !(0..o.accounts).contains(a))
            .collect();
        if !unexpected.is_empty() {
            report.add(Finding {
                kind: "unexpected-key",
                ops,
                explanation: format!(
                    "read {who} returned accounts {unexpected:?}, which the bank (accounts 0..{}) does not have",
                    o.accounts
                ),
                data: json!({"unexpected": unexpected}),
            });
            continue;
        }
        let nils: Vec<i64> = b
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(a, _)| *a)
            .collect();
        if !o.inserts && !nils.is_empty() {
            report.add(Finding {
                kind: "nil-balance",
                ops,
                explanation: format!(
                    "read {who} saw no balance for accounts {nils:?}: {}",
                    show(&b)
                ),
                data: json!({"nils": nils}),
            });
            continue;
        }
        let total: i64 = b.iter().filter_map(|(_, v)| *v).sum();
        if total != o.total {
            lowest = Some(lowest.map_or(total, |l| l.min(total)));
            highest = Some(highest.map_or(total, |h| h.max(total)));
            let diff = total - o.total;
            report.add(Finding {
                kind: "wrong-total",
                ops,
                explanation: format!(
                    "read {who} saw balances {} summing to {total}, not {}: money was {} ({} {})",
                    show(&b),
                    o.total,
                    if diff > 0 { "created" } else { "destroyed" },
                    if diff > 0 { "+" } else { "-" },
                    diff.abs()
                ),
                data: json!({"total": total, "expected": o.total,
                    "balances": b.iter().map(|(a, v)| json!([a, v])).collect::<Vec<_>>()}),
            });
            continue;
        }
        let negative: Vec<i64> = b
            .iter()
            .filter_map(|(_, v)| *v)
            .filter(|v| *v < 0)
            .collect();
        if !o.negative_allowed && !negative.is_empty() {
            report.add(Finding {
                kind: "negative-value",
                ops,
                explanation: format!(
                    "read {who} saw negative balances {negative:?} ({}); transfers must not overdraw",
                    show(&b)
                ),
                data: json!({"negative": negative}),
            });
        }
    }
    report.stat("read-count", reads);
    report.stat("error-count", report.findings.len());
    if let (Some(l), Some(h)) = (lowest, highest) {
        report.stat("lowest-total", l);
        report.stat("highest-total", h);
    }
    if unreadable > 0 {
        report.stat("unreadable-read-count", unreadable);
        report.unknown(format!(
            "{unreadable} reads were not account → balance maps"
        ));
    }
    if reads == 0 {
        report.unknown("no read completed ok");
    }
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, r, rn, w};
    use super::*;
    use crate::result::Valid;

    fn opts() -> Options {
        Options {
            accounts: 3,
            total: 30,
            ..Options::default()
        }
    }
    fn read(h: &mut H, p: u64, b: [Option<i64>; 3]) -> u64 {
        h.both(
            OpType::Ok,
            p,
            F::Read,
            vec![rn(0), rn(1), rn(2)],
            vec![r(0, b[0]), r(1, b[1]), r(2, b[2])],
        )
    }
    fn transfer(h: &mut H, p: u64) {
        let t = vec![w(0, -5), w(1, 5)];
        h.both(OpType::Ok, p, F::Transfer, t.clone(), t);
    }

    #[test]
    fn conserved_totals_are_valid() {
        let mut h = H::default();
        read(&mut h, 0, [Some(10), Some(10), Some(10)]);
        transfer(&mut h, 1);
        read(&mut h, 0, [Some(5), Some(15), Some(10)]);
        let rep = check(&h.history(), &opts());
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(3));
        assert_eq!(rep.stats["read-count"], 2);
    }

    #[test]
    fn a_wrong_total_is_explained() {
        let mut h = H::default();
        transfer(&mut h, 1);
        let bad = read(&mut h, 0, [Some(5), Some(10), Some(10)]);
        let rep = check(&h.history(), &opts());
        assert_eq!(rep.valid, Valid::False);
        assert_eq!(rep.kinds(), ["wrong-total"]);
        let f = &rep.findings[0];
        assert_eq!(f.ops, [bad]);
        assert!(
            f.explanation
                .contains("summing to 25, not 30: money was destroyed (- 5)"),
            "{}",
            f.explanation
        );
        assert_eq!(rep.stats["lowest-total"], 25);
    }

    #[test]
    fn nil_negative_and_foreign_accounts() {
        let mut h = H::default();
        transfer(&mut h, 1);
        read(&mut h, 0, [Some(10), None, Some(20)]);
        read(&mut h, 0, [Some(-5), Some(25), Some(10)]);
        h.both(OpType::Ok, 2, F::Read, vec![rn(7)], vec![r(7, Some(30))]);
        let rep = check(&h.history(), &opts());
        assert_eq!(
            rep.kinds(),
            ["negative-value", "nil-balance", "unexpected-key"]
        );
        let allowed = check(
            &{
                let mut h = H::default();
                transfer(&mut h, 1);
                read(&mut h, 0, [Some(-5), Some(25), Some(10)]);
                h.history()
            },
            &Options {
                negative_allowed: true,
                ..opts()
            },
        );
        assert_eq!(allowed.valid, Valid::True);
    }

    #[test]
    fn with_inserts_a_missing_row_is_no_error_but_a_lost_balance_is() {
        let o = Options {
            inserts: true,
            ..opts()
        };
        let mut h = H::default();
        transfer(&mut h, 1);
        read(&mut h, 0, [Some(10), Some(20), None]);
        assert_eq!(check(&h.history(), &o).valid, Valid::True);
        let mut h = H::default();
        transfer(&mut h, 1);
        read(&mut h, 0, [Some(10), Some(10), None]);
        assert_eq!(check(&h.history(), &o).kinds(), ["wrong-total"]);
    }

    #[test]
    fn jepsen_map_reads_are_understood() {
        let ops = vec![
            store::Op {
                index: store::OpIndex(0),
                time_ns: Some(0),
                op_type: OpType::Invoke,
                process: Some(store::Process::Client(store::ProcessId(0))),
                f: Some(F::Read),
                value: store::OpValue::Data(Box::new(Data::Nil)),
                error: None,
                extra: store::Extra::new(),
            },
            store::Op {
                index: store::OpIndex(1),
                time_ns: Some(1),
                op_type: OpType::Ok,
                process: Some(store::Process::Client(store::ProcessId(0))),
                f: Some(F::Read),
                value: store::OpValue::Data(Box::new(Data::Map(vec![
                    (Data::Int(0), Data::Int(10)),
                    (Data::Int(1), Data::Int(19)),
                ]))),
                error: None,
                extra: store::Extra::new(),
            },
        ];
        let h = History::new(ops).unwrap();
        let rep = check(
            &h,
            &Options {
                accounts: 2,
                total: 30,
                ..Options::default()
            },
        );
        assert_eq!(rep.kinds(), ["wrong-total"]);
        assert_eq!(totals(&h), vec![(1e-9, 29, 0)]);
    }
}
