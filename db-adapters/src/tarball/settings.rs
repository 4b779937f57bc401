//! The tarball databases' settings ([`NewSqlSpec`]: `--tarball`,
//! `--no-setup`, `--db-port`, `--db-dir`, TiDB's session flags) and what
//! their entries do with them: [`check_tarball`] (one way to be reached),
//! [`tarball`] (the release), [`install_settings`] (`--db-dir`,
//! `--db-port`) and [`pg_wire_factory`] (the PG-wire ones' clients).

use crate::catalog::{Database, DbSettings};
use crate::client::ClientFactory;
use crate::cluster::{Install, Tarball};
use crate::pgwire::{PgWireDb, Target};
use crate::tidb::{AutoRetry, TidbOptions, TxnMode};
use nemesis::Node;
use std::sync::Arc;

/// Settings of the tarball databases (cockroach, tidb, yugabyte).
#[derive(Clone, Debug, Default)]
pub struct NewSqlSpec {
    /// Release tarball: a local path or an http(s) URL.
    pub tarball: Option<String>,
    /// The cluster runs already on the nodes.
    pub no_setup: bool,
    /// SQL port on every node (`None`: the catalog's default).
    pub db_port: Option<u16>,
    /// Directory on the nodes for releases, data and logs.
    pub db_dir: Option<String>,
    /// TiDB transaction mode.
    pub txn_mode: Option<TxnMode>,
    /// TiDB automatic retry.
    pub auto_retry: Option<AutoRetry>,
    /// TiDB `tidb_retry_limit`.
    pub auto_retry_limit: Option<u32>,
    /// Reads lock the rows they read.
    pub select_for_update: bool,
    /// TiDB roles per node (`pd=…;tikv=…;tidb=…`), checked against the nodes.
    pub roles: Option<String>,
}

impl NewSqlSpec {
    pub(crate) fn any_set(&self) -> bool {
        self.tarball.is_some()
            || self.no_setup
            || self.db_port.is_some()
            || self.db_dir.is_some()
            || self.select_for_update
            || self.tidb_only_set()
    }

    pub(crate) fn tidb_only_set(&self) -> bool {
        self.txn_mode.is_some()
            || self.auto_retry.is_some()
            || self.auto_retry_limit.is_some()
            || self.roles.is_some()
    }

    pub(crate) fn tidb_options(&self) -> TidbOptions {
        TidbOptions {
            txn_mode: self.txn_mode,
            auto_retry: self.auto_retry.unwrap_or(AutoRetry::Default),
            retry_limit: self.auto_retry_limit,
            select_for_update: self.select_for_update,
        }
    }
}

/// A tarball database's way to be reached: `--url`, or `--nodes` with
/// `--tarball` (install) or `--no-setup` (running cluster); and the
/// TiDB-only flags only where `tidb_flags` (the database takes them).
///
/// # Errors
/// A missing or contradictory way; a tarball path that does not exist.
pub fn check_tarball(
    db: &dyn Database,
    s: &DbSettings,
    nodes: Option<&[Node]>,
    tidb_flags: bool,
) -> Result<(), String> {
    let a = &s.newsql;
    if !tidb_flags && a.tidb_only_set() {
        return Err(
            "--txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db tidb only"
                .to_string(),
        );
    }
    let name = db.name();
    match (&s.url, nodes, &a.tarball, a.no_setup) {
        (Some(_), _, Some(_), _) => Err(
            "--url connects to a running cluster; it does not combine with --tarball".to_string(),
        ),
        (Some(_), ..) | (None, Some(_), None, true) => Ok(()),
        (None, None, ..) => Err(format!(
            "--db {name} needs --nodes with --tarball PATH|URL (install) or --no-setup (running cluster), or --url"
        )),
        (None, Some(_), Some(_), true) => {
            Err("--tarball and --no-setup exclude each other".to_string())
        }
        (None, Some(_), None, false) => Err(format!(
            "--db {name} on --nodes needs --tarball PATH|URL (a release to install) or --no-setup (the cluster runs already)"
        )),
        (None, Some(_), Some(t), false) => Tarball::parse(t).map(|_| ()),
    }
}

/// The release a tarball database installs (with `--no-setup` nothing is
/// installed and the tarball is never read).
///
/// # Errors
/// A `--tarball` path that does not exist.
pub fn tarball(s: &DbSettings) -> Result<Tarball, String> {
    match &s.newsql.tarball {
        Some(t) => Tarball::parse(t),
        None => Ok(Tarball::Url(String::new())),
    }
}

/// Applies `--db-dir`, `--db-port` and `--no-setup` (which `--url` with
/// `--nodes` implies) to a tarball install.
pub fn install_settings(s: &DbSettings, i: &mut Install) {
    let a = &s.newsql;
    if let Some(d) = &a.db_dir {
        i.layout.base = d.clone();
    }
    i.port = a.db_port.unwrap_or(i.port);
    i.no_setup = a.no_setup || s.url.is_some();
}

/// A PG-wire tarball database's factory: behind `url`, else on every node
/// at `--db-port` or the database's default port.
///
/// # Errors
/// A bad URL or setting.
pub fn pg_wire_factory(
    db: &dyn Database,
    wire: &PgWireDb,
    s: &DbSettings,
    url: Option<&str>,
) -> Result<Arc<dyn ClientFactory>, String> {
    let port = s.newsql.db_port.or(db.default_port()).unwrap_or_default();
    let target = match url {
        Some(u) => Target::Url(u.to_string()),
        None => wire.node_target(port),
    };
    let f = wire.factory(target, s.isolation, s.model, s.newsql.select_for_update)?;
    Ok(Arc::new(if s.version_order_db {
        f.with_version_order_db()
    } else {
        f
    }))
}
