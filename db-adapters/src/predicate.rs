//! Range reads: the SQL of `["rr", [lo, hi], rows]` for every
//! SQL database in the catalog, and the decoding of its rows (in the
//! crate root: the PG-wire, MySQL-wire and SQLite clients share it).
//!
//! Key decision: keys live in `table_count` tables (`TxnTables`), so one
//! range read is ONE statement, a `UNION ALL` over every table: a statement
//! sees one snapshot at every isolation level, so the rows of different
//! tables can never come from different snapshots (which would fake a
//! phantom at read committed). The client puts the rows in key order
//! ([`complete`]), not the statement: MariaDB runs an ordered `UNION` through
//! an internal temporary table, on disk because `val` is TEXT, where a plain
//! `UNION ALL` streams its rows (`Created_tmp_disk_tables` read back: 1 and
//! 0). CI once saw mariadbd 10.11 die of SIGSEGV cleaning up such a table
//! it had failed to create.
//!
//! PostgreSQL, CockroachDB and YugabyteDB use `$1`/`$2`
//! ([`pg_range_sql`]); MariaDB and TiDB `?` ([`mysql_range_sql`], four
//! bounds because each `?` binds once); SQLite has one table and its own
//! client. Rows come back as `(id, val)` text; a row with a NULL or empty
//! `val` is still a row (its list is empty).
//!
//! A count read (`["rc", [lo, hi], n]`) is `SELECT count(*)` over the same
//! `UNION ALL` ([`pg_count_sql`], [`mysql_count_sql`], [`SQLITE_COUNT_SQL`]):
//! still one statement, so one snapshot.

use crate::client::ClientError;
use crate::sql::{TxnTables, parse_list};
use store::{Key, RangeRead, Val};

/// `SELECT id, val FROM txn0 WHERE id BETWEEN $1 AND $2 UNION ALL …`.
pub fn pg_range_sql(tables: &TxnTables) -> String {
    union(tables, "$1", "$2")
}

/// The MySQL-wire form (params: lo, hi, lo, hi, … once per table).
pub fn mysql_range_sql(tables: &TxnTables) -> String {
    union(tables, "?", "?")
}

/// `SELECT count(*) FROM (… UNION ALL …) AS r` with `$1`/`$2`.
pub fn pg_count_sql(tables: &TxnTables) -> String {
    count(tables, "$1", "$2")
}

/// The MySQL-wire count (params as [`mysql_range_sql`]).
pub fn mysql_count_sql(tables: &TxnTables) -> String {
    count(tables, "?", "?")
}

/// SQLite's count over its one table.
pub const SQLITE_COUNT_SQL: &str = "SELECT count(*) FROM txn WHERE id BETWEEN ?1 AND ?2";

fn union(tables: &TxnTables, lo: &str, hi: &str) -> String {
    selects(tables, "id, val", lo, hi)
}

fn count(tables: &TxnTables, lo: &str, hi: &str) -> String {
    format!(
        "SELECT count(*) FROM ({}) AS r",
        selects(tables, "id", lo, hi)
    )
}

fn selects(tables: &TxnTables, cols: &str, lo: &str, hi: &str) -> String {
    let parts: Vec<String> = (0..tables.table_count.max(1))
        .map(|t| format!("SELECT {cols} FROM txn{t} WHERE id BETWEEN {lo} AND {hi}"))
        .collect();
    parts.join(" UNION ALL ")
}

/// The integer bounds of a range read.
///
/// # Errors
/// A definite error for non-integer bounds (nothing was sent).
pub fn bounds(r: &RangeRead) -> Result<(i64, i64), ClientError> {
    Ok((crate::sql::int_key(&r.lo)?, crate::sql::int_key(&r.hi)?))
}

/// The completed micro-op: `r`'s bounds with the rows `(id, val text)` the
/// database returned, in key order.
///
/// # Errors
/// The indefinite `unparseable-read` of [`parse_list`] for a value no
/// client wrote.
pub fn complete(r: &RangeRead, rows: Vec<(i64, Option<String>)>) -> Result<RangeRead, ClientError> {
    let mut out: Vec<(Key, Vec<Val>)> = Vec::with_capacity(rows.len());
    for (id, text) in rows {
        out.push((Key(store::Atom::Int(id)), parse_list(text.as_deref())?));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(RangeRead {
        rows: Some(out),
        ..r.clone()
    })
}

/// The completed count read: `r` with the database's `count(*)`.
///
/// # Errors
/// The indefinite `unparseable-read` for a negative count.
pub fn complete_count(r: &RangeRead, n: i64) -> Result<RangeRead, ClientError> {
    let n = u64::try_from(n).map_err(|_| {
        ClientError::indefinite("unparseable-read", format!("count(*) returned {n}"))
    })?;
    Ok(RangeRead {
        kind: store::RangeKind::Count(Some(n)),
        ..r.clone()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn one_statement_over_every_table() {
        let t = TxnTables { table_count: 3 };
        assert_eq!(
            pg_range_sql(&t),
            "SELECT id, val FROM txn0 WHERE id BETWEEN $1 AND $2 UNION ALL \
             SELECT id, val FROM txn1 WHERE id BETWEEN $1 AND $2 UNION ALL \
             SELECT id, val FROM txn2 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(mysql_range_sql(&t).matches('?').count(), 6);
        assert!(!mysql_range_sql(&t).contains("ORDER BY"));
        assert_eq!(
            pg_count_sql(&TxnTables { table_count: 2 }),
            "SELECT count(*) FROM (SELECT id FROM txn0 WHERE id BETWEEN $1 AND $2 UNION ALL \
             SELECT id FROM txn1 WHERE id BETWEEN $1 AND $2) AS r"
        );
        assert_eq!(mysql_count_sql(&t).matches('?').count(), 6);
    }

    #[test]
    fn counts_complete_and_negative_counts_are_indefinite() {
        let r = RangeRead::count(1, 9);
        let done = complete_count(&r, 3).unwrap();
        assert_eq!(done.kind, store::RangeKind::Count(Some(3)));
        assert!(done.rows.is_none());
        let e = complete_count(&r, -1).unwrap_err();
        assert!(format!("{e:?}").contains("unparseable-read"));
    }

    #[test]
    fn rows_decode_in_key_order_and_bad_values_are_indefinite() {
        let r = RangeRead::new(1, 9);
        let done = complete(&r, vec![(5, Some("3,4".into())), (2, None)]).unwrap();
        let rows = done.rows.unwrap();
        assert_eq!(rows[0], (Key(store::Atom::Int(2)), vec![]));
        assert_eq!(rows[1].1, vec![Val::int(3), Val::int(4)]);
        let e = complete(&r, vec![(5, Some("x".into()))]).unwrap_err();
        assert!(format!("{e:?}").contains("unparseable-read"));
    }
}
