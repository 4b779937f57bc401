//! YugabyteDB YSQL's client: its isolation levels, error classification, dialect
//! and client factory (see the module doc of `super`).

use crate::client::ClientError;
use crate::pgwire::{Dialect, PgWireDb, definite, indefinite, message_contains};
use crate::sql::{Isolation, TxnPhase, TxnTables, classify_pg};

/// YSQL's port.
pub const DEFAULT_PORT: u16 = 5433;

/// Tables of the append schema on YSQL (as Jepsen's YugabyteDB suite).
pub const TABLES: TxnTables = TxnTables { table_count: 5 };
/// yb-master RPC port.
pub const MASTER_RPC_PORT: u16 = 7100;
/// yb-tserver RPC port.
pub const TSERVER_RPC_PORT: u16 = 9100;
/// YCQL port.
pub const CQL_PORT: u16 = 9042;

/// Checks `--isolation` for YSQL (`snapshot-isolation` becomes
/// `repeatable-read`).
///
/// # Errors
/// Names the level and the accepted ones.
pub fn check_isolation(i: Isolation) -> Result<Isolation, String> {
    match i {
        Isolation::Serializable | Isolation::RepeatableRead | Isolation::ReadCommitted => Ok(i),
        Isolation::SnapshotIsolation => Ok(Isolation::RepeatableRead),
        other => Err(format!(
            "--isolation {other}: YugabyteDB YSQL runs serializable, repeatable-read or read-committed transactions only"
        )),
    }
}

/// Messages meaning the transaction was aborted (definite).
const ABORTED: [&str; 5] = [
    "restart read required",
    "conflicts with",
    "catalog version mismatch",
    "try again",
    "could not serialize access",
];
/// Messages meaning the outcome is unknown (indefinite).
const UNKNOWN: [&str; 3] = ["operation expired", "timed out", "deadline exceeded"];

/// Classifies a YSQL error (see the module docs).
pub fn classify(err: &tokio_postgres::Error, phase: TxnPhase) -> ClientError {
    let base = classify_pg(err, phase);
    if UNKNOWN.iter().any(|m| message_contains(err, m)) {
        return indefinite(ClientError {
            code: "yb-unknown".to_string(),
            ..base
        });
    }
    if ABORTED.iter().any(|m| message_contains(err, m)) {
        let code = if message_contains(err, "restart read required") {
            "restart-read-required".to_string()
        } else {
            base.code.clone()
        };
        return definite(ClientError { code, ..base });
    }
    base
}

/// The YSQL dialect of the PG-wire client (no setup statements: isolation
/// is configured on the tservers).
pub fn dialect(select_for_update: bool) -> Dialect {
    Dialect {
        db: "YugabyteDB",
        classify,
        setup_statements: Vec::new(),
        version_marker: "-YB-",
        read_lock: select_for_update.then_some(" FOR UPDATE"),
    }
}

/// YSQL's PG-wire client: `yugabyte` on database `yugabyte`, 5 tables (as
/// Jepsen's YSQL append workload).
pub const PG_WIRE: PgWireDb = PgWireDb {
    user: "yugabyte",
    dbname: "yugabyte",
    tables: TABLES,
    check_isolation,
    dialect: |_, select_for_update| dialect(select_for_update),
};
