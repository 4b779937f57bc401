//! White-box version certificates of CockroachDB and TiDB (issue 16, after
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
//! Not wired into the clients yet: these adapters are written and tested
//! against literal server output here (no CockroachDB or TiDB server on
//! this machine).

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
    fn statements() {
        assert!(crdb_read_sql(1).contains("crdb_internal_mvcc_timestamp::text FROM txn1"));
        assert!(CRDB_TXN_TS_SQL.contains("cluster_logical_timestamp()"));
        assert!(TIDB_START_TS_SQL.contains("tidb_current_ts"));
        let e = ts_extra(Data::Int(5), vec![Data::Nil]);
        assert_eq!(e[0].0, "commit-ts");
    }
}
