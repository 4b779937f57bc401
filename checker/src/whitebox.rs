//! White-box version certificates (after Emme): what a database
//! told the harness about its own concurrency control, read back from the
//! extra fields of each transaction's `ok` completion.
//!
//! PostgreSQL (`--version-order db`, `db_adapters::postgres::whitebox`):
//! `txid` (an integer) and `snapshot` (`xmin:xmax:xip,…`, the text of
//! `pg_current_snapshot()`). A transaction id `x` is visible in a snapshot
//! iff `x < xmin`, or `x < xmax` and `x` is not in `xip` (PostgreSQL's
//! `XidInMVCCSnapshot`). At repeatable read and serializable, of two
//! committed writers of a row exactly one is visible to the other (else the
//! second fails with 40001), so visibility is each key's version order:
//! `rw_register`'s `db` provider. Malformed fields are ignored (that
//! transaction just adds no order), never a panic.
//!
//! Timestamp-ordered databases (CockroachDB, TiDB; `commit-ts`, an integer
//! or `[wall, logical]`) and SQLite at serializable (`commit-ts` from a
//! clock row every transaction bumps under its write lock: commit order): their expected serialization order is ascending
//! commit timestamp, so [`replay`] checks a history as Enne does — apply
//! the committed transactions in that order and compare every read with
//! the state it should have seen. Linear, no graph. It runs as the
//! `expected_order` entry of `analysis::ANALYSES` when every `ok`
//! transaction carries a `commit-ts`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use store::{Data, History, Key, MicroOp, OpIndex, OpType, RangeKind, RangeRead, ReadValue, Val};

/// A transaction's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Every id below this finished before the snapshot.
    pub xmin: u64,
    /// No id at or above this is visible.
    pub xmax: u64,
    /// Ids in `xmin..xmax` that were in progress (invisible).
    pub xip: Vec<u64>,
}

impl Snapshot {
    /// Parses `xmin:xmax:xip1,xip2` (`xip` may be empty).
    pub fn parse(s: &str) -> Option<Snapshot> {
        let mut parts = s.trim().split(':');
        let xmin = parts.next()?.parse().ok()?;
        let xmax = parts.next()?.parse().ok()?;
        let xip = match parts.next()? {
            "" => Vec::new(),
            l => l
                .split(',')
                .map(|x| x.parse().ok())
                .collect::<Option<Vec<u64>>>()?,
        };
        if parts.next().is_some() || xmax < xmin {
            return None;
        }
        Some(Snapshot { xmin, xmax, xip })
    }

    /// Whether transaction `txid`'s effects are visible in this snapshot.
    pub fn sees(&self, txid: u64) -> bool {
        txid < self.xmin || (txid < self.xmax && !self.xip.contains(&txid))
    }
}

/// One transaction's certificate: its id and snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cert {
    /// `pg_current_xact_id()`.
    pub txid: u64,
    /// `pg_current_snapshot()`.
    pub snapshot: Snapshot,
}

impl Cert {
    /// Whether `self`'s write of a key precedes `other`'s in the database's
    /// version order (`self` visible to `other`).
    pub fn precedes(&self, other: &Cert) -> bool {
        self.txid != other.txid && other.snapshot.sees(self.txid)
    }
}

/// The certificate an op carries, if it carries a well-formed one.
pub fn cert(extra: &[(String, Data)]) -> Option<Cert> {
    let field = |name: &str| extra.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let txid = match field("txid")? {
        Data::Int(i) => u64::try_from(*i).ok()?,
        Data::Str(s) => s.parse().ok()?,
        _ => return None,
    };
    let Data::Str(s) = field("snapshot")? else {
        return None;
    };
    Some(Cert {
        txid,
        snapshot: Snapshot::parse(s)?,
    })
}

/// A read the expected serialization order contradicts.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The reading transaction.
    pub op: OpIndex,
    /// The micro-op's position.
    pub mop: usize,
    /// The key (a range read: its lower bound).
    pub key: Key,
    /// What the replay says the read should have returned (EDN: a list,
    /// a value, `nil`, rows `[[k [v …]] …]`, or a count).
    pub expected: String,
}

/// Whether an op's extra fields carry a commit timestamp (white-box,
/// timestamp-ordered).
pub fn has_commit_ts(extra: &[(String, Data)]) -> bool {
    commit_ts(extra).is_some()
}

fn commit_ts(extra: &[(String, Data)]) -> Option<(i64, i64)> {
    match &extra.iter().find(|(k, _)| k == "commit-ts")?.1 {
        Data::Int(i) => Some((*i, 0)),
        Data::Vec(v) => match v.as_slice() {
            [Data::Int(w), Data::Int(l)] => Some((*w, *l)),
            _ => None,
        },
        _ => None,
    }
}

/// Enne's check: replays the `ok` transactions in ascending `commit-ts`
/// (ties by index) and returns every read that disagrees; `None` when some
/// `ok` transaction has no timestamp (no expected order to replay). Reads
/// of a key in `unsure` (written by a transaction that may or may not have
/// committed, with no timestamp to place it) are not judged.
pub fn replay(history: &History, unsure: &BTreeSet<&Key>) -> Option<Vec<Mismatch>> {
    let mut order: Vec<((i64, i64), usize)> = Vec::new();
    for pos in 0..history.len() {
        if history.op_type(pos) == OpType::Ok && history.is_txn(pos) {
            order.push((commit_ts(history.extra(pos))?, pos));
        }
    }
    order.sort_by_key(|&(ts, pos)| (ts, history.index(pos)));
    let mut lists: BTreeMap<&Key, Vec<&Val>> = BTreeMap::new();
    let mut regs: HashMap<&Key, &Val> = HashMap::new();
    let mut out = Vec::new();
    for (_, pos) in order {
        for (i, m) in history.stored_txn(pos).into_iter().flatten().enumerate() {
            let expected = match m {
                MicroOp::Append(k, v) => {
                    lists.entry(k).or_default().push(v);
                    None
                }
                MicroOp::Write(k, v) => {
                    regs.insert(k, v);
                    None
                }
                MicroOp::Read(k, _) if unsure.contains(k) => None,
                MicroOp::ReadRange(r)
                    if unsure.range::<Key, _>(&r.lo..=&r.hi).any(|k| r.matches(k)) =>
                {
                    None
                }
                MicroOp::Read(k, rv) => read_mismatch(k, rv, &lists, &regs),
                MicroOp::ReadRange(r) => range_mismatch(r, &lists),
            };
            if let Some(expected) = expected {
                out.push(Mismatch {
                    op: history.index(pos),
                    mop: i,
                    key: m.key().clone(),
                    expected,
                });
            }
        }
    }
    Some(out)
}

fn range_mismatch(r: &RangeRead, lists: &BTreeMap<&Key, Vec<&Val>>) -> Option<String> {
    let want: Vec<(&Key, &Vec<&Val>)> = lists
        .range::<Key, _>(&r.lo..=&r.hi)
        .filter(|(k, l)| r.matches(k) && !l.is_empty())
        .map(|(k, l)| (*k, l))
        .collect();
    if let RangeKind::Count(n) = r.kind {
        let n = n.and_then(|n| usize::try_from(n).ok());
        return (n != Some(want.len())).then(|| format!("count {}", want.len()));
    }
    let same = r.rows.as_ref().is_some_and(|rows| {
        rows.len() == want.len()
            && rows
                .iter()
                .zip(&want)
                .all(|((k, l), (wk, wl))| k == *wk && l.iter().eq(wl.iter().copied()))
    });
    let rows: Vec<String> = want
        .iter()
        .map(|(k, l)| format!("[{k} {}]", fmt_list(l)))
        .collect();
    (!same).then(|| format!("rows [{}]", rows.join(" ")))
}

fn fmt_list(l: &[&Val]) -> String {
    let v: Vec<String> = l.iter().map(ToString::to_string).collect();
    format!("[{}]", v.join(" "))
}

fn read_mismatch(
    k: &Key,
    rv: &ReadValue,
    lists: &BTreeMap<&Key, Vec<&Val>>,
    regs: &HashMap<&Key, &Val>,
) -> Option<String> {
    match rv {
        ReadValue::List(l) => {
            let want = lists.get(k).map_or(&[][..], Vec::as_slice);
            (!l.iter().eq(want.iter().copied())).then(|| fmt_list(want))
        }
        ReadValue::Scalar(v) => (regs.get(k) != Some(&v))
            .then(|| regs.get(k).map_or("nil".to_string(), |w| w.to_string())),
        ReadValue::Nil => {
            let written = regs.contains_key(k) || lists.get(k).is_some_and(|l| !l.is_empty());
            written.then(|| {
                regs.get(k).map_or_else(
                    || fmt_list(lists.get(k).map_or(&[][..], Vec::as_slice)),
                    |v| v.to_string(),
                )
            })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use store::Op;

    #[test]
    fn visibility_follows_postgres() {
        let s = Snapshot::parse("100:105:101,103").unwrap();
        assert!(s.sees(99) && s.sees(100) && s.sees(102) && s.sees(104));
        assert!(!s.sees(101) && !s.sees(103) && !s.sees(105) && !s.sees(200));
        assert_eq!(Snapshot::parse("7:7:").unwrap().xip, Vec::<u64>::new());
        for bad in ["", "1", "5:3:", "1:2:x", "1:2:3:4"] {
            assert_eq!(Snapshot::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn certificates_come_from_extra_fields() {
        let mut op = Op::txn(0, store::OpType::Ok, 0, vec![]);
        assert_eq!(cert(&op.extra), None);
        op.extra = vec![
            ("txid".into(), Data::Int(101)),
            ("snapshot".into(), Data::Str("100:101:".into())),
        ]
        .into();
        let a = cert(&op.extra).unwrap();
        let b = Cert {
            txid: 102,
            snapshot: Snapshot::parse("102:102:").unwrap(),
        };
        assert!(a.precedes(&b) && !b.precedes(&a));
        op.extra[1].1 = Data::Int(3);
        assert_eq!(cert(&op.extra), None);
    }

    #[test]
    fn replay_in_timestamp_order_finds_a_stale_read() {
        let ok = |i: u64, ts: i64, m: Vec<MicroOp>| {
            let mut op = Op::txn(i, OpType::Ok, i, m);
            op.extra = vec![(
                "commit-ts".into(),
                Data::Vec(vec![Data::Int(ts), Data::Int(0)]),
            )]
            .into();
            op
        };
        let k = Key::int(1);
        let ops = vec![
            ok(0, 20, vec![MicroOp::Append(k.clone(), Val::int(2))]),
            ok(1, 10, vec![MicroOp::Append(k.clone(), Val::int(1))]),
            ok(
                2,
                30,
                vec![MicroOp::Read(
                    k.clone(),
                    ReadValue::List(vec![Val::int(1), Val::int(2)].into()),
                )],
            ),
            ok(
                3,
                15,
                vec![MicroOp::Read(
                    k.clone(),
                    ReadValue::List(vec![Val::int(1), Val::int(2)].into()),
                )],
            ),
        ];
        let h = History::new(ops).unwrap();
        let m = replay(&h, &BTreeSet::new()).unwrap();
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!((m[0].op, m[0].expected.as_str()), (OpIndex(3), "[1]"));
        let mut bare = h.to_ops();
        bare[0].extra.clear();
        assert_eq!(replay(&History::new(bare).unwrap(), &BTreeSet::new()), None);
        // A key an indeterminate transaction wrote is not judged.
        assert_eq!(replay(&h, &BTreeSet::from([&k])), Some(vec![]));
    }
}
