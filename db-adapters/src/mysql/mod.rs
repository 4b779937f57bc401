//! MariaDB (single node) and MariaDB Galera (3+ nodes): their lifecycle on
//! nodes ([`lifecycle::MariaDb`]) and the client ([`client::MysqlFactory`],
//! mysql_async).
//!
//! Accepted `--isolation` levels: `serializable`, `repeatable-read` (InnoDB's
//! default; MariaDB 10.11 does not detect lost updates there),
//! `read-committed`, `read-uncommitted`. `snapshot-isolation` is rejected:
//! MariaDB has no such level.
//!
//! Errors: deadlock 1213 (also Galera's "WSREP detected deadlock/conflict"
//! certification failure), lock wait timeout 1205, "WSREP has not yet
//! prepared node" 1047 and any error before `COMMIT` was sent are `fail`; a
//! connection lost while `COMMIT` was in flight is `info`.

pub mod client;
mod database;
pub mod galera;
pub mod jepsen;
pub mod lifecycle;

pub use client::MysqlFactory;
pub use database::{Galera, Mariadb};
pub use lifecycle::{MariaDb, MariaDbConfig};
