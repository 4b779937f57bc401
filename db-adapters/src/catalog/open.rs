//! What opening a database takes and gives ([`DbSettings`], [`OnNodes`],
//! [`LocalServer`], [`OpenError`]), and the checks every entry shares: how
//! `--url`/`--local` and the flags of other databases are refused
//! ([`check_reach_and_flags`]). The tarball databases' own checks and
//! settings are in `crate::tarball`.
//!
//! Key decision: nothing here names a database; each entry
//! (`<database>/database.rs`) calls the helpers that fit it, so the engine
//! asks the entry for a factory (embedded or behind a URL), a lifecycle on
//! connected nodes, or a local throwaway server, and gets an error naming
//! the database when it has none. Errors are messages ([`OpenError`] says
//! whether a spec or a setup step failed: exit 3 or 4).

use super::{Database, DbKind, Placement, names_where};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::Db;
use crate::sql::{DataModel, Isolation};
use crate::tarball::NewSqlSpec;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a run asks of the database it opens, beyond its kind.
#[derive(Clone, Debug)]
pub struct DbSettings {
    /// The level transactions run at (as `Database::check_settings` returned it).
    pub isolation: Isolation,
    /// List-append or rw-register tables.
    pub model: DataModel,
    /// An existing server (`--url`).
    pub url: Option<String>,
    /// A throwaway local server (`--local`).
    pub local: bool,
    /// Settings of the tarball databases.
    pub newsql: NewSqlSpec,
    /// PostgreSQL on nodes: read-only transactions go to a replica.
    pub replica_reads: bool,
    /// PostgreSQL on nodes: data directories on the lossy filesystem.
    pub lazyfs: bool,
    /// ... in strict mode (namespace operations lossy too).
    pub lazyfs_strict: bool,
    /// PostgreSQL on nodes: extra `postgresql.conf` lines.
    pub db_conf: Vec<String>,
    /// The client records the database's version order or commit order
    /// (`--version-order db`: PostgreSQL, CockroachDB, TiDB, SQLite).
    pub version_order_db: bool,
    /// The run directory (embedded databases keep their files there).
    pub dir: PathBuf,
    /// Per-transaction timeout (SQLite waits for a lock below it).
    pub op_timeout: Duration,
    /// A simulator bug mode replacing `isolation`.
    pub sim_bug: Option<crate::sim::SimMode>,
    /// Simulated replicas (`--sim-replicas`; 0: the single-node simulator).
    pub sim_replicas: usize,
    /// The run's seed (the simulator's choices).
    pub seed: u64,
    /// Clock faults are asked for (`--nemesis clock`): servers harness
    /// starts run under libfaketime with a control file per node.
    pub clock: bool,
    /// A Jepsen workload's clients instead of the transactional ones
    /// (`crate::jepsen`).
    pub jepsen: Option<workloads::JepsenWorkload>,
}

/// A database on nodes: its lifecycle and its clients' factory.
pub struct OnNodes {
    /// The lifecycle.
    pub db: Arc<dyn Db>,
    /// The client factory.
    pub factory: Arc<dyn ClientFactory>,
}

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The settings do not fit the database (exit 3).
    #[error("{0}")]
    Spec(String),
    /// The database could not be made to serve (exit 4).
    #[error("{0}")]
    Setup(String),
}

/// A throwaway server on this machine (`--local`).
pub trait LocalServer: Send {
    /// Its connection URL.
    fn url(&self) -> String;
    /// Stops it and removes its data.
    fn stop(self: Box<Self>) -> BoxFuture<'static, Result<(), String>>;
    /// Kill/start/pause/resume of its processes (`None`: not possible).
    /// Required, like every question of a database: a new local server says
    /// whether faults can reach it.
    fn process(&self) -> Option<std::sync::Arc<dyn nemesis::process::Process>>;
    /// Every setting harness imposed on it (`key`, `value`), for the run's
    /// record (test.json, the run header, the lost-writes report).
    fn settings(&self) -> Vec<(String, String)>;
}

/// The checks every database's `check_settings` starts with: `--url` and
/// `--local` only where the database can be reached so (`on_nodes`:
/// `--nodes` given), and the tarball flags only on tarball databases.
///
/// # Errors
/// A flag that does not apply; PostgreSQL-like databases with no way to
/// reach them.
pub fn check_reach_and_flags(
    db: &dyn Database,
    s: &DbSettings,
    on_nodes: bool,
) -> Result<(), String> {
    let local = |k: DbKind| k.has_local_server();
    if db.placement() != Placement::UrlOrNodes {
        if s.url.is_some() || s.local {
            return Err(format!(
                "--url applies to --db {}; --local to {} only",
                names_where(|k| k.placement() == Placement::UrlOrNodes),
                names_where(local)
            ));
        }
    } else if !db.capabilities().local_server {
        if s.local {
            return Err(format!(
                "--local applies to --db {} only",
                names_where(local)
            ));
        }
    } else if s.url.is_none() && !s.local && !on_nodes {
        return Err(format!(
            "--db {} needs --url {}://… or --local",
            db.name(),
            db.url_schemes().first().copied().unwrap_or("…")
        ));
    }
    if (s.lazyfs || !s.db_conf.is_empty()) && !db.capabilities().lossy_data_dir {
        return Err(format!(
            "--lazyfs and --db-conf apply to --db {} on nodes only",
            names_where(|k| k.capabilities().lossy_data_dir)
        ));
    }
    // No flag accepted and ignored: a server behind --url is configured
    // by its owner, and --lazyfs mounts data directories on nodes.
    if !s.db_conf.is_empty() && s.url.is_some() {
        return Err(
            "--db-conf configures a server harness starts (--local or --nodes); a server behind --url is configured by whoever started it"
                .to_string(),
        );
    }
    if s.lazyfs && !on_nodes {
        return Err(
            "--lazyfs mounts data directories on --nodes; it does not apply to --url or --local"
                .to_string(),
        );
    }
    if !db.capabilities().tarball && s.newsql.any_set() {
        return Err(format!(
            "--tarball, --no-setup, --db-port, --db-dir, --select-for-update, --txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db {} only",
            names_where(DbKind::is_tarball)
        ));
    }
    Ok(())
}

/// `start_local` of a database without a local server.
pub fn no_local_server(
    db: &dyn Database,
) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
    let msg = format!("--db {} has no local server (--local)", db.name());
    Box::pin(async move { Err(msg) })
}

/// `lifecycle` of a database that does not run on nodes.
pub fn not_on_nodes(db: &dyn Database) -> OpenError {
    OpenError::Spec(format!("--db {} does not run on nodes", db.name()))
}
