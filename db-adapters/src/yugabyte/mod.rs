//! YugabyteDB YSQL: the client (PostgreSQL wire on port 5433, the shared
//! statements — YSQL is PostgreSQL 11+ and supports `INSERT … ON CONFLICT`)
//! and the cluster lifecycle (`yb-master` + `yb-tserver` per node) from a
//! release tarball, as command plans.
//!
//! Accepted `--isolation` levels: `serializable`, `repeatable-read` (YSQL's
//! snapshot isolation; `snapshot-isolation` is a synonym), `read-committed`
//! (needs the tserver flag `--yb_enable_read_committed_isolation=true`,
//! which the lifecycle sets; without it YSQL runs READ COMMITTED as
//! REPEATABLE READ).
//!
//! Errors (after Jepsen's yugabyte/ysql/client.clj): 40001, `Restart read
//! required`, `Conflicts with … transaction`, `Catalog Version Mismatch`,
//! `try again` → `fail`; `Operation expired` and `Timed out` → `info` at any
//! phase (YugabyteDB may have applied the operation); the rest as
//! [`crate::sql::classify_pg`].
//!
//! Lifecycle documented in
//! <https://docs.yugabyte.com/preview/deploy/manual-deployment/>.

mod client;
mod database;
mod lifecycle;

pub use client::*;
pub use database::Yugabyte;
pub use lifecycle::*;
