//! The `register` workload's compare-and-set, shared by the
//! clients (PG wire, MySQL wire, SQLite, etcd; hence the crate root): a cas arrives as the micro-ops `[r k old] [w k new]`
//! (`workloads::cas_register::as_cas`; a read carrying a value occurs in no
//! other workload) and runs as ONE statement, `UPDATE … SET val = new
//! WHERE id = k AND val = old`: one row matched → `ok`, none → a definite
//! `fail` (`cas-mismatch`: the compare failed at the statement, nothing
//! changed). Reads and writes are the rw-register statements.

use crate::client::ClientError;
use crate::sql::{int_key, int_val};
use store::MicroOp;

/// A cas's key, old and new value, if `txn` is one.
///
/// # Errors
/// A definite error for non-integer keys or values.
pub fn cas_parts(txn: &[MicroOp]) -> Result<Option<(i64, i64, i64)>, ClientError> {
    match workloads::cas_register::as_cas(txn) {
        Some((k, old, new)) => Ok(Some((int_key(k)?, int_val(old)?, int_val(new)?))),
        None => Ok(None),
    }
}

/// The definite failure of a cas whose compare did not match.
pub fn cas_mismatch(key: i64, old: i64) -> ClientError {
    ClientError::definite(
        "cas-mismatch",
        format!("cas on key {key}: the value was not {old} (0 rows updated)"),
    )
}

/// PostgreSQL wire: `$1` new value (text), `$2` key, `$3` old value (text).
pub fn pg_cas_sql(table: usize) -> String {
    format!("UPDATE txn{table} SET val = $1 WHERE id = $2 AND val = $3")
}

/// MySQL wire: params new value, key, old value. MariaDB counts *changed*
/// rows by default, so a cas with old = new would report 0: the client
/// compares matched rows (`CLIENT_FOUND_ROWS`) or, without it, re-reads.
pub fn mysql_cas_sql(table: usize) -> String {
    format!("UPDATE txn{table} SET val = ? WHERE id = ? AND val = ?")
}
