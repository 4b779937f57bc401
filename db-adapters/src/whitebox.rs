//! White-box version certificates of CockroachDB and TiDB (after
//! Emme/Enne): the statements that expose each database's own timestamps,
//! and the parsing of what they return. PostgreSQL's are in
//! `postgres::whitebox` (txid + snapshot visibility).
//!
//! Both databases order transactions by timestamp (MVTO-like): the version
//! order of a key is its writers' commit-timestamp order and a transaction
//! reads, per key, the version with the greatest timestamp at or below its
//! own — so an expected serialization order exists and the checker can
//! replay it (`checker::whitebox::replay`, Enne).
//!
//! * CockroachDB: a row version's timestamp is `crdb_internal_mvcc_timestamp`
//!   and the transaction's is `cluster_logical_timestamp()` (both HLC
//!   decimals `<wall nanos>.<10-digit logical>`; reading the latter pins the
//!   transaction's timestamp, so a later push restarts it — a definite
//!   40001 `fail`, never a wrong certificate).
//! * TiDB: `@@tidb_current_ts` is the start TSO; the commit TSO is in
//!   `@@tidb_last_txn_info` (JSON) after `COMMIT`.
//!
//! [`WhiteBox`] is what the PG-wire client records under `--version-order
//! db`: PostgreSQL's txid/snapshot/xmin or CockroachDB's commit and
//! version timestamps (`commit-ts`, `version-ts`), from the same
//! two-column reads and one statement before `COMMIT`. TiDB's MySQL-wire
//! client reads `@@tidb_last_txn_info` after `COMMIT` ([`tidb_extra`]).
//! No CockroachDB or TiDB server runs on this machine: the parsing is
//! tested on literal server output, and the PG-wire path end to end
//! against PostgreSQL with CockroachDB's column and function stood in
//! (`db-adapters/tests/pg_wire_dialects.rs`).

use crate::client::ClientError;
use store::Data;

/// Which database's certificates a PG-wire client records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhiteBox {
    /// None (black-box).
    #[default]
    Off,
    /// PostgreSQL: `xmin` per read, `txid` + `snapshot` per transaction.
    Postgres,
    /// CockroachDB: `crdb_internal_mvcc_timestamp` per read,
    /// `cluster_logical_timestamp()` per transaction.
    Cockroach,
}

impl WhiteBox {
    /// The read-by-key statement returning `(val, version text)`, if any.
    pub fn read_sql(self, table: usize) -> Option<String> {
        match self {
            WhiteBox::Off => None,
            WhiteBox::Postgres => Some(crate::postgres::whitebox::read_sql(table)),
            WhiteBox::Cockroach => Some(crdb_read_sql(table)),
        }
    }

    /// The statement run before `COMMIT` (text columns), if any.
    pub fn txn_sql(self) -> Option<&'static str> {
        match self {
            WhiteBox::Off => None,
            WhiteBox::Postgres => Some(crate::postgres::whitebox::TXN_SQL),
            WhiteBox::Cockroach => Some(CRDB_TXN_TS_SQL),
        }
    }

    /// The completion's extra fields from `txn_sql`'s columns and each
    /// micro-op's version text (`None`: a write, an absent row).
    ///
    /// # Errors
    /// A definite `decode` error naming what the server returned (the
    /// transaction is rolled back, nothing recorded wrong).
    pub fn extra(
        self,
        cols: &[String],
        versions: Vec<Option<String>>,
    ) -> Result<Vec<(String, Data)>, ClientError> {
        let decode = |m: String| ClientError::definite("decode", m);
        match (self, cols) {
            (WhiteBox::Off, _) => Ok(Vec::new()),
            (WhiteBox::Postgres, [txid, snapshot]) => {
                Ok(crate::postgres::whitebox::extra(txid, snapshot, versions))
            }
            (WhiteBox::Cockroach, [ts]) => {
                let commit = Hlc::parse(ts).map_err(decode)?;
                let versions = versions
                    .iter()
                    .map(|v| match v {
                        None => Ok(Data::Nil),
                        Some(t) => Hlc::parse(t).map(Hlc::to_data),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(decode)?;
                Ok(ts_extra(commit.to_data(), versions))
            }
            (w, c) => Err(decode(format!(
                "{w:?} certificate: unexpected {} columns",
                c.len()
            ))),
        }
    }
}

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
pub fn crdb_read_sql(table: usize) -> String {
    format!("SELECT val, crdb_internal_mvcc_timestamp::text FROM txn{table} WHERE id = $1")
}

/// CockroachDB: the transaction's timestamp.
pub const CRDB_TXN_TS_SQL: &str = "SELECT cluster_logical_timestamp()::text";

/// TiDB: the transaction's start TSO.
pub const TIDB_START_TS_SQL: &str = "SELECT @@tidb_current_ts";

/// TiDB: the last transaction's info (JSON with `start_ts`, `commit_ts`),
/// read after `COMMIT`.
pub const TIDB_LAST_TXN_SQL: &str = "SELECT @@tidb_last_txn_info";

/// TiDB: the extra fields from `@@tidb_last_txn_info` (read after
/// `COMMIT`): `commit-ts` (the commit TSO) and `start-ts`.
///
/// # Errors
/// The text and the missing or malformed field.
pub fn tidb_extra(json: &str) -> Result<Vec<(String, Data)>, String> {
    let (start, commit) = tidb_last_txn(json)?;
    let int = |x: u64| {
        i64::try_from(x)
            .map(Data::Int)
            .map_err(|_| format!("TSO {x} out of range"))
    };
    Ok(vec![
        ("commit-ts".to_string(), int(commit)?),
        ("start-ts".to_string(), int(start)?),
    ])
}

/// TiDB: `(start_ts, commit_ts)` from `@@tidb_last_txn_info`, e.g.
/// `{"txn_scope":"global","start_ts":4301,"commit_ts":4302}`.
///
/// # Errors
/// The text and the missing or malformed field.
pub fn tidb_last_txn(json: &str) -> Result<(u64, u64), String> {
    let field = |name: &str| -> Result<u64, String> {
        let key = format!("\"{name}\":");
        let at = json
            .find(&key)
            .ok_or_else(|| format!("tidb_last_txn_info {json:?}: no {name}"))?;
        let rest = json[at + key.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .map_err(|_| format!("tidb_last_txn_info {json:?}: {name} is not an integer"))
    };
    Ok((field("start_ts")?, field("commit_ts")?))
}

/// The extra fields of a timestamp-ordered transaction: `commit-ts` (an
/// integer TSO or `[wall, logical]`), and per micro-op the version
/// timestamp a read returned (`version-ts`, `nil` for writes / absent rows).
pub fn ts_extra(commit_ts: Data, version_ts: Vec<Data>) -> Vec<(String, Data)> {
    vec![
        ("commit-ts".to_string(), commit_ts),
        ("version-ts".to_string(), Data::Vec(version_ts)),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
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
    fn tidb_txn_info_gives_start_and_commit() {
        let j = r#"{"txn_scope":"global","start_ts":434520817946345473,"commit_ts":434520817946345474}"#;
        assert_eq!(
            tidb_last_txn(j).unwrap(),
            (434520817946345473, 434520817946345474)
        );
        assert!(
            tidb_last_txn(r#"{"start_ts":1}"#)
                .unwrap_err()
                .contains("commit_ts")
        );
    }

    #[test]
    fn cockroach_certificates_decode_from_server_text() {
        let w = WhiteBox::Cockroach;
        assert!(
            w.read_sql(0)
                .unwrap()
                .contains("crdb_internal_mvcc_timestamp")
        );
        let e = w
            .extra(
                &["1700000000123456789.0000000002".to_string()],
                vec![None, Some("1700000000000000000.0000000000".to_string())],
            )
            .unwrap();
        assert_eq!(e[0].0, "commit-ts");
        assert_eq!(
            e[0].1,
            Data::Vec(vec![Data::Int(1_700_000_000_123_456_789), Data::Int(2)])
        );
        assert_eq!(
            e[1].1,
            Data::Vec(vec![
                Data::Nil,
                Data::Vec(vec![Data::Int(1_700_000_000_000_000_000), Data::Int(0)])
            ])
        );
        let bad = w.extra(&["soon".to_string()], vec![]).unwrap_err();
        assert!(format!("{bad:?}").contains("soon"));
        assert!(w.extra(&[], vec![]).is_err());
        assert!(WhiteBox::Off.extra(&[], vec![]).unwrap().is_empty());
        assert_eq!(WhiteBox::Off.txn_sql(), None);
    }

    #[test]
    fn tidb_extra_names_commit_and_start() {
        let e = tidb_extra(r#"{"txn_scope":"global","start_ts":4301,"commit_ts":4302}"#).unwrap();
        assert_eq!(e[0], ("commit-ts".to_string(), Data::Int(4302)));
        assert_eq!(e[1], ("start-ts".to_string(), Data::Int(4301)));
        assert!(tidb_extra("{}").is_err());
    }

    #[test]
    fn statements() {
        assert!(crdb_read_sql(1).contains("crdb_internal_mvcc_timestamp::text FROM txn1"));
        assert!(CRDB_TXN_TS_SQL.contains("cluster_logical_timestamp()"));
        assert!(TIDB_START_TS_SQL.contains("tidb_current_ts"));
        let e = ts_extra(Data::Int(5), vec![Data::Nil]);
        assert_eq!(e[0].0, "commit-ts");
    }
}
