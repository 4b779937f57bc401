//! CockroachDB's white-box certificates (`--version-order db`): a row
//! version's timestamp is `crdb_internal_mvcc_timestamp` and the
//! transaction's is `cluster_logical_timestamp()`, both HLC decimals
//! `<wall nanos>.<10-digit logical>` ([`Hlc`]); reading the latter pins the
//! transaction's timestamp, so a later push restarts it — a definite 40001
//! `fail`, never a wrong certificate. The PG-wire client records them
//! through the root `whitebox.rs` (`WhiteBox::Cockroach`).

use store::Data;

/// A hybrid logical clock timestamp: wall nanoseconds, then logical ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hlc {
    /// Wall time, nanoseconds since the epoch.
    pub wall: i64,
    /// Logical counter.
    pub logical: u32,
}

impl Hlc {
    /// Parses CockroachDB's decimal form: `1700000000123456789.0000000002`
    /// (the fraction is the logical counter, zero-padded to 10 digits; it
    /// may be absent).
    ///
    /// # Errors
    /// The text and what is wrong with it.
    pub fn parse(s: &str) -> Result<Hlc, String> {
        let s = s.trim();
        let (w, l) = s.split_once('.').unwrap_or((s, "0"));
        let wall = w
            .parse::<i64>()
            .map_err(|_| format!("HLC timestamp {s:?}: wall time {w:?} is not an integer"))?;
        if (l != "0" && l.len() != 10) || !l.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "HLC timestamp {s:?}: logical part {l:?} is not 10 digits"
            ));
        }
        let logical = l
            .parse::<u32>()
            .map_err(|_| format!("HLC timestamp {s:?}: logical part {l:?} is too large"))?;
        Ok(Hlc { wall, logical })
    }

    /// The certificate field value: `[wall, logical]`.
    pub fn to_data(self) -> Data {
        Data::Vec(vec![
            Data::Int(self.wall),
            Data::Int(i64::from(self.logical)),
        ])
    }
}

/// CockroachDB: read by key with the row version's MVCC timestamp (`$1`).
pub fn read_sql(table: usize) -> String {
    format!("SELECT val, crdb_internal_mvcc_timestamp::text FROM txn{table} WHERE id = $1")
}

/// CockroachDB: the transaction's timestamp.
pub const TXN_SQL: &str = "SELECT cluster_logical_timestamp()::text";

/// The completion's extra fields from the transaction's timestamp `ts`
/// and each micro-op's version timestamp (`None`: a write, an absent row).
///
/// # Errors
/// The text that is not an HLC timestamp.
pub fn extra(ts: &str, versions: &[Option<String>]) -> Result<Vec<(String, Data)>, String> {
    let commit = Hlc::parse(ts)?;
    let versions = versions
        .iter()
        .map(|v| match v {
            None => Ok(Data::Nil),
            Some(t) => Hlc::parse(t).map(Hlc::to_data),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ts_extra(commit.to_data(), versions))
}

/// The extra fields of a timestamp-ordered transaction: `commit-ts` (an
/// integer TSO or `[wall, logical]`), and per micro-op the version
/// timestamp a read returned (`version-ts`, `nil` for writes / absent rows).
fn ts_extra(commit_ts: Data, version_ts: Vec<Data>) -> Vec<(String, Data)> {
    vec![
        ("commit-ts".to_string(), commit_ts),
        ("version-ts".to_string(), Data::Vec(version_ts)),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hlc_parses_and_orders() {
        let a = Hlc::parse("1700000000123456789.0000000002").unwrap();
        assert_eq!(
            a,
            Hlc {
                wall: 1_700_000_000_123_456_789,
                logical: 2
            }
        );
        let b = Hlc::parse("1700000000123456789.0000000010").unwrap();
        let c = Hlc::parse("1700000000123456790").unwrap();
        assert!(a < b && b < c);
        assert_eq!(c.logical, 0);
        for bad in ["", "x.1", "17.5", "1.00000000001", "1.-2", "1.9999999999"] {
            assert!(Hlc::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            a.to_data(),
            Data::Vec(vec![Data::Int(a.wall), Data::Int(2)])
        );
    }

    #[test]
    fn statements() {
        assert!(read_sql(1).contains("crdb_internal_mvcc_timestamp::text FROM txn1"));
        assert!(TXN_SQL.contains("cluster_logical_timestamp()"));
    }

    #[test]
    fn timestamp_fields() {
        let e = ts_extra(Data::Int(5), vec![Data::Nil]);
        assert_eq!(e[0].0, "commit-ts");
    }
}
