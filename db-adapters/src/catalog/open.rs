//! The catalog's wiring: how each database kind becomes a client factory
//! and, on nodes, a lifecycle ([`DbKind::client_factory`],
//! [`DbKind::lifecycle`], [`DbKind::start_local`]), and the checks of the
//! settings that only some databases take ([`DbKind::check_settings`]).
//!
//! Key decision: one `match` on the kind per question, here, so the engine
//! never names a database: it asks for a factory (embedded or behind a
//! URL), a lifecycle on connected nodes, or a local throwaway server, and
//! gets an error naming the database when the kind has none. Errors are
//! messages ([`OpenError`] says whether a spec or a setup step failed: exit
//! 3 or 4).

use super::{DbKind, Placement, names_where};
use crate::client::{BoxFuture, ClientFactory};
use crate::cluster::{ClusterDb, Install, Tarball};
use crate::db::Db;
use crate::mysql::{MariaDb, MariaDbConfig, MysqlFactory};
use crate::newsql::NewSqlSpec;
use crate::pg_cluster::{LossyConfig, PgCluster, PgClusterConfig, ReplicaReadsFactory};
use crate::pgwire::Target;
use crate::postgres::PgFactory;
use crate::postgres::local::LocalCluster;
use crate::sim::{SimFactory, SimMode};
use crate::sql::{DataModel, Isolation};
use crate::sqlite::SqliteFactory;
use crate::tidb::{Roles, TidbFactory};
use crate::{cockroach, tidb, yugabyte};
use nemesis::Node;
use nemesis::remote::Remote;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What a run asks of the database it opens, beyond its kind.
#[derive(Clone, Debug)]
pub struct DbSettings {
    /// The level transactions run at (as [`DbKind::check_settings`] returned it).
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
    pub sim_bug: Option<SimMode>,
    /// The run's seed (the simulator's choices).
    pub seed: u64,
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
}

impl LocalServer for LocalCluster {
    fn url(&self) -> String {
        LocalCluster::url(self)
    }
    fn stop(self: Box<Self>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { LocalCluster::stop(*self).await.map_err(|e| e.to_string()) })
    }
}

/// The simulator's mode: the bug mode, or the behaviour of `isolation`.
///
/// # Errors
/// A level the simulator does not model, naming `--isolation`.
pub fn sim_mode(bug: Option<SimMode>, isolation: Isolation) -> Result<SimMode, String> {
    match bug {
        Some(b) => Ok(b),
        None => {
            SimMode::parse(isolation.name()).map_err(|e| format!("--isolation (for --db sim): {e}"))
        }
    }
}

impl DbKind {
    /// Checks the settings only some databases take before anything starts
    /// (exit 3 on error) and returns the level the database will run.
    ///
    /// # Errors
    /// A flag that does not apply, a bad value, a level the database does
    /// not run, a missing way to reach it.
    pub fn check_settings(
        self,
        s: &DbSettings,
        nodes: Option<&[Node]>,
    ) -> Result<Isolation, String> {
        self.check_reach(s, nodes.is_some())?;
        if self.is_tarball() {
            return self.check_newsql(s, nodes);
        }
        if s.newsql.any_set() {
            return Err("--tarball, --no-setup, --db-port, --db-dir, --select-for-update, --txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db cockroach, tidb and yugabyte only".to_string());
        }
        match self {
            DbKind::Sqlite => sqlite_factory(s).map(|_| s.isolation),
            DbKind::Sim => sim_mode(s.sim_bug, s.isolation).map(|_| s.isolation),
            _ => Ok(s.isolation),
        }
    }

    /// `--url` and `--local` only where the database can be reached so.
    fn check_reach(self, s: &DbSettings, on_nodes: bool) -> Result<(), String> {
        if self.placement() != Placement::UrlOrNodes {
            if s.url.is_some() || s.local {
                return Err(format!(
                    "--url applies to --db {}; --local to {} only",
                    names_where(|k| k.placement() == Placement::UrlOrNodes),
                    names_where(DbKind::has_local_server)
                ));
            }
        } else if !self.has_local_server() {
            if s.local {
                return Err(format!(
                    "--local applies to --db {} only",
                    names_where(DbKind::has_local_server)
                ));
            }
        } else if s.url.is_none() && !s.local && !on_nodes {
            return Err(format!("--db {self} needs --url postgres://… or --local"));
        }
        Ok(())
    }

    fn check_newsql(self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        let a = &s.newsql;
        if self != DbKind::Tidb && a.tidb_only_set() {
            return Err(
                "--txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db tidb only"
                    .to_string(),
            );
        }
        let name = self.name();
        match (&s.url, nodes, &a.tarball, a.no_setup) {
            (Some(_), _, Some(_), _) => {
                return Err(
                    "--url connects to a running cluster; it does not combine with --tarball"
                        .to_string(),
                );
            }
            (Some(_), ..) => {}
            (None, None, ..) => {
                return Err(format!(
                    "--db {name} needs --nodes with --tarball PATH|URL (install) or --no-setup (running cluster), or --url"
                ));
            }
            (None, Some(_), Some(_), true) => {
                return Err("--tarball and --no-setup exclude each other".to_string());
            }
            (None, Some(_), None, false) => {
                return Err(format!(
                    "--db {name} on --nodes needs --tarball PATH|URL (a release to install) or --no-setup (the cluster runs already)"
                ));
            }
            (None, Some(_), Some(t), false) => {
                Tarball::parse(t)?;
            }
            (None, Some(_), None, true) => {}
        }
        match (&a.roles, nodes) {
            (Some(r), Some(n)) => {
                Roles::parse(r, n)?;
            }
            (Some(_), None) => return Err("--roles needs --nodes".to_string()),
            (None, _) => {}
        }
        match self {
            DbKind::Cockroach => cockroach::check_isolation(s.isolation),
            DbKind::Yugabyte => yugabyte::check_isolation(s.isolation),
            _ => tidb::check_isolation(s.isolation, a.txn_mode),
        }
    }

    /// The nodes workers connect to among the database's `nodes`: TiDB's
    /// `tidb` role nodes under `--roles`, MariaDB's first node, else every
    /// node.
    ///
    /// # Errors
    /// A bad `--roles`.
    pub fn client_nodes(
        self,
        newsql: &NewSqlSpec,
        mut nodes: Vec<Node>,
    ) -> Result<Vec<Node>, String> {
        match (self, &newsql.roles) {
            (DbKind::Tidb, Some(r)) => {
                let roles = Roles::parse(r, &nodes)?;
                Ok(roles.nodes(tidb::Role::Tidb).to_vec())
            }
            _ => {
                nodes.truncate(self.max_nodes());
                Ok(nodes)
            }
        }
    }

    /// The client factory of a database not on nodes: embedded, or behind
    /// `url` (`--url`, or a local server's).
    ///
    /// # Errors
    /// A bad URL or setting; a database that runs on nodes only.
    pub fn client_factory(
        self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        if let Some(w) = s.jepsen
            && let Some(f) = super::jepsen::client_factory(self, w, s, url)?
        {
            return Ok(f);
        }
        Ok(match self {
            DbKind::Sqlite => Arc::new(sqlite_factory(s)?),
            DbKind::Sim => Arc::new(SimFactory::new(sim_mode(s.sim_bug, s.isolation)?, s.seed)),
            DbKind::Postgres => {
                let url = url.ok_or("--db postgres needs --url postgres://… or --local")?;
                let f = PgFactory::new(url, s.isolation, s.model).map_err(|e| e.to_string())?;
                Arc::new(if s.version_order_db {
                    f.with_version_order_db()
                } else {
                    f
                })
            }
            DbKind::Cockroach | DbKind::Yugabyte | DbKind::Tidb => self.newsql_factory(s, url)?,
            DbKind::Galera | DbKind::Mariadb => {
                return Err(format!("--db {self} runs on --nodes only"));
            }
        })
    }

    fn newsql_factory(
        self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        let a = &s.newsql;
        let port = a.db_port.or(self.default_port()).unwrap_or_default();
        let pg_wire = match self {
            DbKind::Cockroach => cockroach::PG_WIRE,
            DbKind::Yugabyte => yugabyte::PG_WIRE,
            _ => {
                let mut f = TidbFactory::new(s.isolation, s.model, a.tidb_options())?;
                f.port = port;
                f.url = url.map(str::to_string);
                f.version_order_db = s.version_order_db;
                return Ok(Arc::new(f));
            }
        };
        let target = match url {
            Some(u) => Target::Url(u.to_string()),
            None => pg_wire.node_target(port),
        };
        let f = pg_wire.factory(target, s.isolation, s.model, a.select_for_update)?;
        Ok(Arc::new(if s.version_order_db {
            f.with_version_order_db()
        } else {
            f
        }))
    }

    /// The lifecycle on `remotes`' nodes (connected already) and its
    /// clients' factory.
    ///
    /// # Errors
    /// A setting that does not fit (`Spec`), or a topology the database
    /// cannot serve from (`Setup`).
    pub fn lifecycle(
        self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        let setup = OpenError::Setup;
        if (s.lazyfs || !s.db_conf.is_empty()) && self != DbKind::Postgres {
            return Err(OpenError::Spec(format!(
                "--lazyfs and --db-conf are supported for --db postgres on nodes, not --db {self}"
            )));
        }
        match self {
            DbKind::Galera | DbKind::Mariadb => {
                let db = MariaDb::new(MariaDbConfig::new(self == DbKind::Galera), remotes);
                let f = MysqlFactory::new(s.isolation, s.model).map_err(setup)?;
                let factory: Arc<dyn ClientFactory> = match s.jepsen {
                    Some(w) if w != workloads::JepsenWorkload::LongFork => {
                        Arc::new(crate::jepsen::mysql::JepsenMysqlFactory::new(f, w, false))
                    }
                    _ => Arc::new(f),
                };
                Ok(OnNodes {
                    db: Arc::new(db),
                    factory,
                })
            }
            DbKind::Postgres => postgres_on_nodes(s, remotes).map_err(setup),
            DbKind::Cockroach | DbKind::Yugabyte | DbKind::Tidb => {
                let factory = self
                    .newsql_factory(s, s.url.as_deref())
                    .map_err(OpenError::Spec)?;
                let db = self.newsql_cluster(s, remotes).map_err(OpenError::Spec)?;
                Ok(OnNodes {
                    db: Arc::new(db),
                    factory,
                })
            }
            DbKind::Sqlite | DbKind::Sim => Err(OpenError::Spec(format!(
                "--db {self} does not run on nodes"
            ))),
        }
    }

    /// A tarball database's command-plan lifecycle (`--tarball`, or
    /// `--no-setup`, which `--url` with `--nodes` implies).
    fn newsql_cluster(
        self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<ClusterDb, String> {
        let a = &s.newsql;
        let nodes: Vec<Node> = remotes.iter().map(|r| r.node().clone()).collect();
        // With --no-setup nothing is installed; the tarball is never read.
        let tarball = match &a.tarball {
            Some(t) => Tarball::parse(t)?,
            None => Tarball::Url(String::new()),
        };
        let no_setup = a.no_setup || s.url.is_some();
        let common = |i: &mut Install| {
            if let Some(d) = &a.db_dir {
                i.layout.base = d.clone();
            }
            i.port = a.db_port.unwrap_or(i.port);
            i.no_setup = no_setup;
        };
        let spec = match self {
            DbKind::Cockroach => {
                let mut c = cockroach::CockroachConfig::new(tarball);
                common(&mut c.install);
                c.spec(&nodes)
            }
            DbKind::Yugabyte => {
                let mut c = yugabyte::YugabyteConfig::new(tarball);
                common(&mut c.install);
                c.read_committed = s.isolation == Isolation::ReadCommitted;
                c.spec(&nodes)
            }
            _ => {
                let roles = match &a.roles {
                    Some(r) => Roles::parse(r, &nodes)?,
                    None => Roles::spread(&nodes),
                };
                let mut c = tidb::TidbConfig::new(tarball, roles);
                common(&mut c.install);
                c.spec(&nodes)
            }
        };
        Ok(ClusterDb::new(spec, remotes))
    }

    /// Starts a throwaway server in `dir` (`--local`, or PostgreSQL without
    /// `--url` and `--nodes`).
    ///
    /// # Errors
    /// The server could not start; a database without a local server.
    pub async fn start_local(self, dir: &Path) -> Result<Box<dyn LocalServer>, String> {
        match self {
            DbKind::Postgres => match LocalCluster::start(dir).await {
                Ok(c) => Ok(Box::new(c)),
                Err(e) => Err(format!("local PostgreSQL: {e}")),
            },
            other => Err(format!("--db {other} has no local server (--local)")),
        }
    }
}

fn sqlite_factory(s: &DbSettings) -> Result<SqliteFactory, String> {
    // Below the op timeout, so a busy wait ends as a definite fail.
    let busy = (s.op_timeout / 2).min(Duration::from_secs(2));
    let f = SqliteFactory::new(s.dir.join("sqlite.db"), s.isolation, s.model, busy)
        .map_err(|e| e.to_string())?;
    if s.version_order_db {
        f.with_version_order_db().map_err(|e| e.to_string())
    } else {
        Ok(f)
    }
}

fn postgres_on_nodes(s: &DbSettings, remotes: Vec<Arc<dyn Remote>>) -> Result<OnNodes, String> {
    let mut cfg = PgClusterConfig {
        extra_conf: s.db_conf.clone(),
        ..PgClusterConfig::default()
    };
    if s.lazyfs {
        let exe = std::env::current_exe().map_err(|e| format!("--lazyfs: own binary: {e}"))?;
        cfg.lossy = Some(LossyConfig {
            binary: exe.to_string_lossy().into_owned(),
            cache_mib: 1024,
        });
    }
    let db = PgCluster::new(cfg, remotes);
    let pg = |url: &str, level| PgFactory::new(url, level, s.model).map_err(|e| e.to_string());
    let primary = pg(&db.primary_url(), s.isolation)?;
    let factory: Arc<dyn ClientFactory> = if s.replica_reads {
        let replica = db
            .replica_url()
            .ok_or("--replica-reads needs at least 2 nodes")?;
        // A hot standby refuses SERIALIZABLE; its strongest level is REPEATABLE READ.
        let level = match s.isolation {
            Isolation::Serializable => Isolation::RepeatableRead,
            other => other,
        };
        Arc::new(ReplicaReadsFactory::new(primary, pg(&replica, level)?))
    } else {
        Arc::new(primary)
    };
    Ok(OnNodes {
        db: Arc::new(db),
        factory,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn check(
        kind: DbKind,
        a: &NewSqlSpec,
        url: Option<&str>,
        nodes: Option<&[Node]>,
        isolation: Isolation,
    ) -> Result<Isolation, String> {
        let s = DbSettings {
            isolation,
            ..settings(a, url)
        };
        kind.check_settings(&s, nodes)
    }

    fn settings(a: &NewSqlSpec, url: Option<&str>) -> DbSettings {
        DbSettings {
            isolation: Isolation::Serializable,
            model: DataModel::ListAppend,
            url: url.map(str::to_string),
            local: false,
            newsql: a.clone(),
            replica_reads: false,
            lazyfs: false,
            db_conf: Vec::new(),
            version_order_db: false,
            dir: PathBuf::from("unused"),
            op_timeout: Duration::from_secs(1),
            sim_bug: None,
            seed: 0,
            jepsen: None,
        }
    }

    /// The error of a spec without `--url`.
    fn check_err(
        kind: DbKind,
        a: &NewSqlSpec,
        nodes: Option<&[Node]>,
        isolation: Isolation,
    ) -> String {
        check(kind, a, None, nodes, isolation).unwrap_err()
    }

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node::new(format!("n{i}"), format!("10.0.0.{i}")))
            .collect()
    }

    #[test]
    fn flags_are_checked_per_database() {
        let n = nodes();
        let none = NewSqlSpec::default();
        let e = check_err(DbKind::Cockroach, &none, Some(&n), Isolation::Serializable);
        assert!(e.contains("--tarball PATH|URL"), "{e}");
        let e = check_err(DbKind::Yugabyte, &none, None, Isolation::Serializable);
        assert!(e.contains("--db yugabyte needs --nodes"), "{e}");
        let no_setup = NewSqlSpec {
            no_setup: true,
            ..NewSqlSpec::default()
        };
        assert_eq!(
            check(
                DbKind::Yugabyte,
                &no_setup,
                None,
                Some(&n),
                Isolation::SnapshotIsolation
            )
            .unwrap(),
            Isolation::RepeatableRead
        );
        let tidb_flags = NewSqlSpec {
            txn_mode: Some(crate::tidb::TxnMode::Pessimistic),
            ..no_setup.clone()
        };
        let e = check_err(
            DbKind::Cockroach,
            &tidb_flags,
            Some(&n),
            Isolation::Serializable,
        );
        assert!(e.contains("apply to --db tidb only"), "{e}");
        // PostgreSQL on nodes: reachable, but the flags are not its own.
        let e = check_err(
            DbKind::Postgres,
            &tidb_flags,
            Some(&n),
            Isolation::Serializable,
        );
        assert!(
            e.contains("apply to --db cockroach, tidb and yugabyte only"),
            "{e}"
        );
        let e = check_err(DbKind::Postgres, &none, None, Isolation::Serializable);
        assert!(
            e.contains("--db postgres needs --url postgres://… or --local"),
            "{e}"
        );
        let local = DbSettings {
            local: true,
            ..settings(&none, None)
        };
        let e = DbKind::Sqlite.check_settings(&local, None).unwrap_err();
        assert_eq!(
            e,
            "--url applies to --db postgres, cockroach, tidb and yugabyte; --local to postgres only"
        );
        assert_eq!(
            check(
                DbKind::Tidb,
                &tidb_flags,
                None,
                Some(&n),
                Isolation::ReadCommitted
            )
            .unwrap(),
            Isolation::ReadCommitted
        );
        let e = check_err(DbKind::Tidb, &no_setup, Some(&n), Isolation::Serializable);
        assert!(e.contains("TiDB runs repeatable-read"), "{e}");
        let bad_roles = NewSqlSpec {
            roles: Some("pd=n1;tikv=n9;tidb=n1".into()),
            ..no_setup.clone()
        };
        let e = check_err(
            DbKind::Tidb,
            &bad_roles,
            Some(&n),
            Isolation::RepeatableRead,
        );
        assert!(e.contains("unknown node \"n9\""), "{e}");
        let missing = NewSqlSpec {
            tarball: Some("/nonexistent/crdb.tgz".into()),
            ..NewSqlSpec::default()
        };
        let e = check_err(
            DbKind::Cockroach,
            &missing,
            Some(&n),
            Isolation::Serializable,
        );
        assert!(e.contains("/nonexistent/crdb.tgz"), "{e}");
        // --url: no nodes needed.
        assert!(
            check(
                DbKind::Cockroach,
                &none,
                Some("postgres://root@h:26257/defaultdb"),
                None,
                Isolation::ReadCommitted
            )
            .is_ok()
        );
        // A bad --auto-retry is refused where the text is parsed.
        assert!("sometimes".parse::<crate::tidb::AutoRetry>().is_err());
        let _ = no_setup;
    }
}
