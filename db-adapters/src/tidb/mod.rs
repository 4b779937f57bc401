//! TiDB: the client (MySQL wire on port 4000, mysql_async; Jepsen's TiDB
//! append schema — 7 tables `txnN(id, sk, val)`, `INSERT … ON DUPLICATE KEY
//! UPDATE val = CONCAT(val, ',', ?)`, optional `SELECT … FOR UPDATE` reads)
//! and the cluster lifecycle (roles `pd`, `tikv`, `tidb`, started in that
//! order) from a release tarball, as command plans.
//!
//! Session settings: `--txn-mode optimistic|pessimistic` sets
//! `tidb_txn_mode`; `--auto-retry on|off` sets `tidb_disable_txn_auto_retry`
//! (and `tidb_retry_limit`, 0 for `off` unless `--auto-retry-limit` says
//! otherwise) — the settings behind TiDB 2.1's anomalies. Accepted
//! `--isolation` levels: `repeatable-read` (TiDB's snapshot isolation, the
//! default; `snapshot-isolation` is a synonym) and `read-committed`
//! (pessimistic mode only). TiDB rejects SERIALIZABLE.
//!
//! Errors: write conflicts (9007, 8005), `SELECT FOR UPDATE` not retryable
//! (8002), commit failed and rolled back (8022), information schema changed
//! (8028), deadlock (1213) and lock wait timeout (1205) → `fail` at any
//! phase; everything else as [`crate::mysql::client::classify_mysql`]
//! (before `COMMIT` definite, a lost connection at `COMMIT` indefinite).
//!
//! Key decision: the factory checks the server really is TiDB
//! (`SELECT tidb_version()`), because the `tidb_*` session variables are
//! what makes the test meaningful; [`TidbFactory::allow_non_tidb_server`]
//! lifts that for tests of the shared MySQL-wire path against MariaDB, and
//! then skips the TiDB-only variables.

mod client;
mod database;
mod lifecycle;
pub mod whitebox;

pub use client::*;
pub use database::Tidb;
pub use lifecycle::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ErrorKind;
    use crate::sql::TxnPhase;

    fn server(code: u16, msg: &str) -> mysql_async::Error {
        crate::mysql::client::server_error(code, "HY000", msg)
    }

    #[test]
    fn tidb_conflicts_are_definite_at_commit_and_timeouts_are_not() {
        let wc = classify(
            &server(
                9007,
                "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3, key=k [try again later]",
            ),
            TxnPhase::Commit,
        );
        assert_eq!(
            (wc.kind, wc.code.as_str()),
            (ErrorKind::Definite, "write-conflict")
        );
        for (code, tag) in [
            (8005, "write-conflict"),
            (8002, "select-for-update-conflict"),
            (8022, "txn-rolled-back"),
            (8028, "info-schema-changed"),
            (1213, "deadlock"),
        ] {
            let e = classify(&server(code, "x"), TxnPhase::Commit);
            assert_eq!(
                (e.kind, e.code.as_str()),
                (ErrorKind::Definite, tag),
                "{code}"
            );
        }
        // TiKV server timeout while COMMIT is in flight: unknown outcome.
        assert_eq!(
            classify(&server(9002, "TiKV server timeout"), TxnPhase::Commit).kind,
            ErrorKind::Indefinite
        );
        assert_eq!(
            classify(&server(9002, "TiKV server timeout"), TxnPhase::BeforeCommit).kind,
            ErrorKind::Definite
        );
    }
}
