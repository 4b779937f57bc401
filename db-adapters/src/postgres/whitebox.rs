//! White-box PostgreSQL (`--version-order db`): what the client
//! asks the server besides the transaction itself, so the checker can use
//! the database's own version order instead of inferring one.
//!
//! Per transaction, recorded as extra fields of its `ok` completion (kept
//! losslessly by `store`):
//! * `txid` — `pg_current_xact_id()`, the transaction's id (an integer);
//! * `snapshot` — `pg_current_snapshot()` as text, `xmin:xmax:xip,…`,
//!   taken just before `COMMIT` (at repeatable read and serializable that
//!   is the transaction's one snapshot);
//! * `xmin` — per micro-op, the `xmin` (creating transaction id) of the row
//!   version a read returned, `nil` for writes and absent rows.
//!
//! Key decision: the version order follows from visibility. At repeatable
//! read and serializable a transaction may overwrite a row only if the row's
//! last writer is visible in its snapshot (else it fails with 40001), so of
//! two committed writers of a key exactly one sees the other, and "A's
//! write precedes B's" ⇔ A's txid is visible in B's snapshot. The checker
//! (`rw_register`'s `db` provider) reads the fields back; nothing here is
//! interpreted by the client.

use store::Data;

/// Read by key, with the row version's creator: `$1` = key.
pub fn read_sql(table: usize) -> String {
    format!("SELECT val, xmin::text FROM txn{table} WHERE id = $1")
}

/// The transaction's id and snapshot, as text.
pub const TXN_SQL: &str = "SELECT pg_current_xact_id()::text, pg_current_snapshot()::text";

/// The extra fields of one transaction: `txid`, `snapshot`, `xmin`.
pub fn extra(txid: &str, snapshot: &str, xmins: Vec<Option<String>>) -> Vec<(String, Data)> {
    let int_or_text = |s: &str| {
        s.parse::<i64>()
            .map(Data::Int)
            .unwrap_or_else(|_| Data::Str(s.to_string()))
    };
    vec![
        ("txid".to_string(), int_or_text(txid)),
        ("snapshot".to_string(), Data::Str(snapshot.to_string())),
        (
            "xmin".to_string(),
            Data::Vec(
                xmins
                    .iter()
                    .map(|x| x.as_deref().map_or(Data::Nil, int_or_text))
                    .collect(),
            ),
        ),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_integers_where_they_parse() {
        let e = extra("742", "740:745:741,743", vec![None, Some("739".into())]);
        assert_eq!(e[0], ("txid".to_string(), Data::Int(742)));
        assert_eq!(
            e[1],
            ("snapshot".to_string(), Data::Str("740:745:741,743".into()))
        );
        assert_eq!(e[2].1, Data::Vec(vec![Data::Nil, Data::Int(739)]));
        assert!(read_sql(2).contains("xmin::text FROM txn2"));
    }
}
