//! White-box version certificates (issue 16, after Emme): what a database
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

use store::{Data, Op};

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
pub fn cert(op: &Op) -> Option<Cert> {
    let field = |name: &str| op.extra.iter().find(|(k, _)| k == name).map(|(_, v)| v);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(cert(&op), None);
        op.extra = vec![
            ("txid".into(), Data::Int(101)),
            ("snapshot".into(), Data::Str("100:101:".into())),
        ];
        let a = cert(&op).unwrap();
        let b = Cert {
            txid: 102,
            snapshot: Snapshot::parse("102:102:").unwrap(),
        };
        assert!(a.precedes(&b) && !b.precedes(&a));
        op.extra[1].1 = Data::Int(3);
        assert_eq!(cert(&op), None);
    }
}
