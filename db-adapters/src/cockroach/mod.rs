//! CockroachDB: the client (PostgreSQL wire on port 26257, shared
//! statements: list-append is `INSERT … ON CONFLICT (id) DO UPDATE SET val =
//! CONCAT(t.val, ',', $2)`) and the cluster lifecycle from a release
//! tarball, as command plans.
//!
//! Accepted `--isolation` levels: `serializable` (the default) and
//! `read-committed` (CockroachDB ≥ 23.2; setup enables the cluster setting
//! `sql.txn.read_committed_isolation.enabled` and then verifies the level is
//! really in effect — CockroachDB silently upgrades READ COMMITTED to
//! SERIALIZABLE otherwise).
//!
//! Errors: SQLSTATE 40001 (`restart transaction`) → `fail`; 40003
//! (`result is ambiguous`) → `info` at any phase; a connection lost while
//! `COMMIT` was in flight → `info`; the rest as
//! [`crate::sql::classify_pg`].
//!
//! Lifecycle (documented in <https://www.cockroachlabs.com/docs/stable/deploy-cockroachdb-on-premises-insecure>):
//! `cockroach start --insecure --join=…` on every node, then `cockroach init
//! --insecure --host=…` once.

mod client;
mod database;
mod lifecycle;
pub mod whitebox;

pub use client::*;
pub use database::Cockroach;
pub use lifecycle::*;
