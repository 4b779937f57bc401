//! `harness run --db cockroach|tidb|yugabyte`: the flags of the distributed
//! SQL databases and how they become a client factory and a cluster
//! lifecycle.
//!
//! Three ways to point harness at one of them:
//! * `--nodes … --tarball PATH|URL`: harness installs the release on every
//!   node over SSH, starts and initialises the cluster, and tears it down;
//! * `--nodes … --no-setup`: the cluster runs already on those nodes;
//!   clients connect to each node's SQL port, partitions still work, process
//!   faults do not (harness has no pid files for daemons it did not start);
//! * `--url`: an existing cluster behind one address, no SSH at all.

use anyhow::bail;
use db_adapters::client::ClientFactory;
use db_adapters::cluster::{ClusterDb, Tarball};
use db_adapters::sql::{DataModel, Isolation};
use db_adapters::tidb::{AutoRetry, Roles, TidbOptions, TxnMode};
use db_adapters::{cockroach, tidb, yugabyte};
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;

/// Flags of `--db cockroach|tidb|yugabyte`.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "CockroachDB, TiDB and YugabyteDB")]
pub struct NewSqlArgs {
    /// Release tarball to install on every node (cockroach, tidb, yugabyte):
    /// a local path (copied over SSH) or an http(s) URL (downloaded by each
    /// node). Unpacked once per node under --db-dir.
    #[arg(long, value_name = "PATH|URL")]
    pub tarball: Option<String>,
    /// The cluster already runs on --nodes (cockroach, tidb, yugabyte):
    /// no install, no teardown; clients connect to each node's SQL port.
    #[arg(long)]
    pub no_setup: bool,
    /// SQL port on every node (default: cockroach 26257, tidb 4000,
    /// yugabyte 5433).
    #[arg(long, value_name = "PORT")]
    pub db_port: Option<u16>,
    /// Directory on the nodes for releases, data and logs (default:
    /// /var/lib/harness/<db>).
    #[arg(long, value_name = "DIR")]
    pub db_dir: Option<String>,
    /// TiDB transaction mode: optimistic or pessimistic (default: the
    /// server's, pessimistic since TiDB 3.0.8).
    #[arg(long, value_name = "MODE")]
    pub txn_mode: Option<String>,
    /// TiDB automatic retry of optimistic transactions: on or off (sets
    /// tidb_disable_txn_auto_retry; off also sets tidb_retry_limit = 0).
    #[arg(long, value_name = "on|off")]
    pub auto_retry: Option<String>,
    /// TiDB tidb_retry_limit.
    #[arg(long, value_name = "N")]
    pub auto_retry_limit: Option<u32>,
    /// Reads lock the rows they read (SELECT … FOR UPDATE): cockroach, tidb,
    /// yugabyte.
    #[arg(long)]
    pub select_for_update: bool,
    /// TiDB roles per node: `pd=n1,n2,n3;tikv=n1,n2,n3;tidb=n4,n5`
    /// (default: every role on every node). Started pd → tikv → tidb.
    #[arg(long, value_name = "ROLES")]
    pub roles: Option<String>,
}

/// The three databases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// CockroachDB.
    Cockroach,
    /// TiDB.
    Tidb,
    /// YugabyteDB YSQL.
    Yugabyte,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cockroach => "cockroach",
            Kind::Tidb => "tidb",
            Kind::Yugabyte => "yugabyte",
        }
    }
}

impl NewSqlArgs {
    fn any_set(&self) -> bool {
        self.tarball.is_some()
            || self.no_setup
            || self.db_port.is_some()
            || self.db_dir.is_some()
            || self.select_for_update
            || self.tidb_only_set()
    }

    fn tidb_only_set(&self) -> bool {
        self.txn_mode.is_some()
            || self.auto_retry.is_some()
            || self.auto_retry_limit.is_some()
            || self.roles.is_some()
    }

    fn tidb_options(&self) -> anyhow::Result<TidbOptions> {
        Ok(TidbOptions {
            txn_mode: self
                .txn_mode
                .as_deref()
                .map(TxnMode::parse)
                .transpose()
                .map_err(anyhow::Error::msg)?,
            auto_retry: self
                .auto_retry
                .as_deref()
                .map(AutoRetry::parse)
                .transpose()
                .map_err(anyhow::Error::msg)?
                .unwrap_or(AutoRetry::Default),
            retry_limit: self.auto_retry_limit,
            select_for_update: self.select_for_update,
        })
    }
}

/// Checks the flags before anything starts (exit 3 on error) and returns
/// the isolation level the database will run.
///
/// # Errors
/// A flag that does not apply, a bad value, a missing way to reach the
/// database.
pub fn validate(
    kind: Option<Kind>,
    a: &NewSqlArgs,
    url: Option<&str>,
    nodes: Option<&[Node]>,
    isolation: Isolation,
) -> anyhow::Result<Isolation> {
    let Some(kind) = kind else {
        if a.any_set() {
            bail!(
                "--tarball, --no-setup, --db-port, --db-dir, --select-for-update, --txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db cockroach, tidb and yugabyte only"
            );
        }
        return Ok(isolation);
    };
    if kind != Kind::Tidb && a.tidb_only_set() {
        bail!("--txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db tidb only");
    }
    match (url, nodes) {
        (Some(_), _) if a.tarball.is_some() => {
            bail!("--url connects to a running cluster; it does not combine with --tarball")
        }
        (Some(_), _) => {}
        (None, None) => bail!(
            "--db {} needs --nodes with --tarball PATH|URL (install) or --no-setup (running cluster), or --url",
            kind.name()
        ),
        (None, Some(_)) => match (&a.tarball, a.no_setup) {
            (Some(_), true) => bail!("--tarball and --no-setup exclude each other"),
            (None, false) => bail!(
                "--db {} on --nodes needs --tarball PATH|URL (a release to install) or --no-setup (the cluster runs already)",
                kind.name()
            ),
            (Some(t), false) => {
                Tarball::parse(t).map_err(anyhow::Error::msg)?;
            }
            (None, true) => {}
        },
    }
    if let (Some(r), Some(n)) = (&a.roles, nodes) {
        Roles::parse(r, n).map_err(anyhow::Error::msg)?;
    } else if a.roles.is_some() {
        bail!("--roles needs --nodes");
    }
    let iso = match kind {
        Kind::Cockroach => cockroach::check_isolation(isolation),
        Kind::Yugabyte => yugabyte::check_isolation(isolation),
        Kind::Tidb => tidb::check_isolation(isolation, a.tidb_options()?.txn_mode),
    }
    .map_err(anyhow::Error::msg)?;
    Ok(iso)
}

/// The nodes workers connect to: TiDB's `tidb` role nodes under
/// `--roles`, else every node.
///
/// # Errors
/// A bad `--roles`.
pub fn client_nodes(kind: Kind, a: &NewSqlArgs, nodes: Vec<Node>) -> anyhow::Result<Vec<Node>> {
    match (kind, &a.roles) {
        (Kind::Tidb, Some(r)) => {
            let roles = Roles::parse(r, &nodes).map_err(anyhow::Error::msg)?;
            Ok(roles.nodes(tidb::Role::Tidb).to_vec())
        }
        _ => Ok(nodes),
    }
}

/// The client factory.
///
/// # Errors
/// A bad URL or flag value.
pub fn factory(
    kind: Kind,
    a: &NewSqlArgs,
    url: Option<&str>,
    isolation: Isolation,
    model: DataModel,
) -> anyhow::Result<Arc<dyn ClientFactory>> {
    Ok(match kind {
        Kind::Cockroach => {
            let target = match url {
                Some(u) => db_adapters::pgwire::Target::Url(u.to_string()),
                None => cockroach::node_target(a.db_port.unwrap_or(cockroach::DEFAULT_PORT)),
            };
            Arc::new(
                cockroach::factory(target, isolation, model, a.select_for_update)
                    .map_err(anyhow::Error::msg)?,
            )
        }
        Kind::Yugabyte => {
            let target = match url {
                Some(u) => db_adapters::pgwire::Target::Url(u.to_string()),
                None => yugabyte::node_target(a.db_port.unwrap_or(yugabyte::DEFAULT_PORT)),
            };
            Arc::new(
                yugabyte::factory(target, isolation, model, a.select_for_update)
                    .map_err(anyhow::Error::msg)?,
            )
        }
        Kind::Tidb => {
            let mut f = tidb::TidbFactory::new(isolation, model, a.tidb_options()?)
                .map_err(anyhow::Error::msg)?;
            f.port = a.db_port.unwrap_or(tidb::DEFAULT_PORT);
            f.url = url.map(str::to_string);
            Arc::new(f)
        }
    })
}

/// The lifecycle on `remotes`' nodes (`--tarball` or `--no-setup`).
///
/// # Errors
/// A bad flag value.
pub fn cluster_db(
    kind: Kind,
    a: &NewSqlArgs,
    isolation: Isolation,
    remotes: Vec<Arc<dyn Remote>>,
) -> anyhow::Result<ClusterDb> {
    let nodes: Vec<Node> = remotes.iter().map(|r| r.node().clone()).collect();
    // With --no-setup nothing is installed; the tarball is never read.
    let tarball = match &a.tarball {
        Some(t) => Tarball::parse(t).map_err(anyhow::Error::msg)?,
        None => Tarball::Url(String::new()),
    };
    let spec = match kind {
        Kind::Cockroach => {
            let mut c = cockroach::CockroachConfig::new(tarball);
            if let Some(d) = &a.db_dir {
                c.layout.base = d.clone();
            }
            c.port = a.db_port.unwrap_or(c.port);
            c.no_setup = a.no_setup;
            c.spec(&nodes)
        }
        Kind::Yugabyte => {
            let mut c = yugabyte::YugabyteConfig::new(tarball);
            if let Some(d) = &a.db_dir {
                c.layout.base = d.clone();
            }
            c.port = a.db_port.unwrap_or(c.port);
            c.no_setup = a.no_setup;
            c.read_committed = isolation == Isolation::ReadCommitted;
            c.spec(&nodes)
        }
        Kind::Tidb => {
            let roles = match &a.roles {
                Some(r) => Roles::parse(r, &nodes).map_err(anyhow::Error::msg)?,
                None => Roles::spread(&nodes),
            };
            let mut c = tidb::TidbConfig::new(tarball, roles);
            if let Some(d) = &a.db_dir {
                c.layout.base = d.clone();
            }
            c.port = a.db_port.unwrap_or(c.port);
            c.no_setup = a.no_setup;
            c.spec(&nodes)
        }
    };
    Ok(ClusterDb::new(spec, remotes))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node::new(format!("n{i}"), format!("10.0.0.{i}")))
            .collect()
    }

    #[test]
    fn flags_are_checked_per_database() {
        let n = nodes();
        let none = NewSqlArgs::default();
        let e = validate(
            Some(Kind::Cockroach),
            &none,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--tarball PATH|URL"), "{e}");
        let e = validate(
            Some(Kind::Yugabyte),
            &none,
            None,
            None,
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--db yugabyte needs --nodes"), "{e}");
        let no_setup = NewSqlArgs {
            no_setup: true,
            ..NewSqlArgs::default()
        };
        assert_eq!(
            validate(
                Some(Kind::Yugabyte),
                &no_setup,
                None,
                Some(&n),
                Isolation::SnapshotIsolation
            )
            .unwrap(),
            Isolation::RepeatableRead
        );
        let tidb_flags = NewSqlArgs {
            txn_mode: Some("pessimistic".into()),
            ..no_setup.clone()
        };
        let e = validate(
            Some(Kind::Cockroach),
            &tidb_flags,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("apply to --db tidb only"), "{e}");
        let e = validate(None, &tidb_flags, None, None, Isolation::Serializable).unwrap_err();
        assert!(
            e.to_string()
                .contains("apply to --db cockroach, tidb and yugabyte only"),
            "{e}"
        );
        assert_eq!(
            validate(
                Some(Kind::Tidb),
                &tidb_flags,
                None,
                Some(&n),
                Isolation::ReadCommitted
            )
            .unwrap(),
            Isolation::ReadCommitted
        );
        let e = validate(
            Some(Kind::Tidb),
            &no_setup,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("TiDB runs repeatable-read"), "{e}");
        let bad_roles = NewSqlArgs {
            roles: Some("pd=n1;tikv=n9;tidb=n1".into()),
            ..no_setup.clone()
        };
        let e = validate(
            Some(Kind::Tidb),
            &bad_roles,
            None,
            Some(&n),
            Isolation::RepeatableRead,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown node \"n9\""), "{e}");
        let missing = NewSqlArgs {
            tarball: Some("/nonexistent/crdb.tgz".into()),
            ..NewSqlArgs::default()
        };
        let e = validate(
            Some(Kind::Cockroach),
            &missing,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/crdb.tgz"), "{e}");
        // --url: no nodes needed.
        assert!(
            validate(
                Some(Kind::Cockroach),
                &none,
                Some("postgres://root@h:26257/defaultdb"),
                None,
                Isolation::ReadCommitted
            )
            .is_ok()
        );
        let bad_retry = NewSqlArgs {
            auto_retry: Some("sometimes".into()),
            ..no_setup
        };
        assert!(
            validate(
                Some(Kind::Tidb),
                &bad_retry,
                None,
                Some(&n),
                Isolation::RepeatableRead
            )
            .is_err()
        );
    }
}
