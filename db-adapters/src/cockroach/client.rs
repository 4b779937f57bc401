//! CockroachDB's client: its isolation levels, error classification, dialect
//! and client factory (see the module doc of `super`).

use crate::client::ClientError;
use crate::pgwire::{Dialect, PgWireDb, message_contains};
use crate::sql::{Isolation, TxnPhase, TxnTables, classify_pg};

/// CockroachDB's SQL port.
pub const DEFAULT_PORT: u16 = 26257;
/// CockroachDB's DB Console (HTTP) port.
pub const DEFAULT_HTTP_PORT: u16 = 8080;

/// Checks `--isolation` for CockroachDB.
///
/// # Errors
/// Names the level and the accepted ones.
pub fn check_isolation(i: Isolation) -> Result<Isolation, String> {
    match i {
        Isolation::Serializable | Isolation::ReadCommitted => Ok(i),
        other => Err(format!(
            "--isolation {other}: CockroachDB runs serializable or read-committed transactions only"
        )),
    }
}

/// Classifies a CockroachDB error.
///
/// * 40003 `statement_completion_unknown` ("result is ambiguous") →
///   indefinite, whatever the phase: CockroachDB may have committed;
/// * 40001 (`restart transaction: TransactionRetryWithProtoRefreshError …`)
///   → definite;
/// * otherwise [`classify_pg`] (before `COMMIT` definite; a lost connection
///   during `COMMIT` indefinite).
pub fn classify(err: &tokio_postgres::Error, phase: TxnPhase) -> ClientError {
    let code = err.code().map(|c| c.code().to_string());
    if code.as_deref() == Some("40003") || message_contains(err, "result is ambiguous") {
        let mut e = classify_pg(err, phase);
        e.code = "40003".to_string();
        return crate::pgwire::indefinite(e);
    }
    if code.is_none() && message_contains(err, "restart transaction") {
        return ClientError::definite("40001", err.to_string());
    }
    classify_pg(err, phase)
}

/// The CockroachDB dialect of the PG-wire client.
pub fn dialect(isolation: Isolation, select_for_update: bool) -> Dialect {
    let mut setup_statements = Vec::new();
    if isolation == Isolation::ReadCommitted {
        // https://www.cockroachlabs.com/docs/stable/read-committed#enable-read-committed-isolation
        setup_statements.push(
            "SET CLUSTER SETTING sql.txn.read_committed_isolation.enabled = true".to_string(),
        );
    }
    Dialect {
        db: "CockroachDB",
        classify,
        setup_statements,
        version_marker: "CockroachDB",
        read_lock: select_for_update.then_some(" FOR UPDATE"),
    }
}

/// CockroachDB's PG-wire client: `root` (insecure mode) on `defaultdb`.
pub const PG_WIRE: PgWireDb = PgWireDb {
    user: "root",
    dbname: "defaultdb",
    tables: TxnTables::DEFAULT,
    check_isolation,
    dialect,
};
