//! White-box version certificates (after Emme/Enne): which database's
//! certificates a PG-wire client records ([`WhiteBox`]). In the crate root
//! because the PG-wire client (`pgwire.rs`) serves PostgreSQL and
//! CockroachDB alike. Each database's statements and the parsing of what
//! its server returns live in its own module: `postgres::whitebox` (txid + snapshot visibility),
//! `cockroach::whitebox` (HLC timestamps), `tidb::whitebox` (TSOs).
//!
//! CockroachDB and TiDB order transactions by timestamp (MVTO-like): the
//! version order of a key is its writers' commit-timestamp order and a
//! transaction reads, per key, the version with the greatest timestamp at
//! or below its own — so an expected serialization order exists and the
//! checker can replay it (`checker::whitebox::replay`, Enne).
//!
//! [`WhiteBox`] is what the PG-wire client records under `--version-order
//! db`: PostgreSQL's txid/snapshot/xmin or CockroachDB's commit and
//! version timestamps (`commit-ts`, `version-ts`), from the same
//! two-column reads and one statement before `COMMIT`. TiDB's MySQL-wire
//! client reads `@@tidb_last_txn_info` after `COMMIT`
//! (`tidb::whitebox::extra`).
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
            WhiteBox::Cockroach => Some(crate::cockroach::whitebox::read_sql(table)),
        }
    }

    /// The statement run before `COMMIT` (text columns), if any.
    pub fn txn_sql(self) -> Option<&'static str> {
        match self {
            WhiteBox::Off => None,
            WhiteBox::Postgres => Some(crate::postgres::whitebox::TXN_SQL),
            WhiteBox::Cockroach => Some(crate::cockroach::whitebox::TXN_SQL),
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
                crate::cockroach::whitebox::extra(ts, &versions).map_err(decode)
            }
            (w, c) => Err(decode(format!(
                "{w:?} certificate: unexpected {} columns",
                c.len()
            ))),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

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
}
