//! `--db cockroach|tidb|yugabyte`: the settings of the distributed SQL
//! databases ([`NewSqlSpec`]) and how they become a client factory and a
//! cluster lifecycle.
//!
//! Three ways to point harness at one of them:
//! * `--nodes … --tarball PATH|URL`: harness installs the release on every
//!   node over SSH, starts and initialises the cluster, and tears it down;
//! * `--nodes … --no-setup`: the cluster runs already on those nodes;
//!   clients connect to each node's SQL port, partitions still work, process
//!   faults do not (harness has no pid files for daemons it did not start);
//! * `--url`: an existing cluster behind one address, no SSH at all.

use crate::spec::NewSqlSpec;
use anyhow::bail;
use db_adapters::catalog::DbKind;
use db_adapters::client::ClientFactory;
use db_adapters::cluster::{ClusterDb, Tarball};
use db_adapters::sql::{DataModel, Isolation};
use db_adapters::tidb::{AutoRetry, Roles, TidbOptions};
use db_adapters::{cockroach, tidb, yugabyte};
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;

impl NewSqlSpec {
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

    fn tidb_options(&self) -> TidbOptions {
        TidbOptions {
            txn_mode: self.txn_mode,
            auto_retry: self.auto_retry.unwrap_or(AutoRetry::Default),
            retry_limit: self.auto_retry_limit,
            select_for_update: self.select_for_update,
        }
    }
}

/// Checks the flags before anything starts (exit 3 on error) and returns
/// the isolation level the database will run.
///
/// # Errors
/// A flag that does not apply, a bad value, a missing way to reach the
/// database.
pub fn validate(
    kind: DbKind,
    a: &NewSqlSpec,
    url: Option<&str>,
    nodes: Option<&[Node]>,
    isolation: Isolation,
) -> anyhow::Result<Isolation> {
    if !kind.is_tarball() {
        if a.any_set() {
            bail!(
                "--tarball, --no-setup, --db-port, --db-dir, --select-for-update, --txn-mode, --auto-retry, --auto-retry-limit and --roles apply to --db cockroach, tidb and yugabyte only"
            );
        }
        return Ok(isolation);
    }
    if kind != DbKind::Tidb && a.tidb_only_set() {
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
        DbKind::Cockroach => cockroach::check_isolation(isolation),
        DbKind::Yugabyte => yugabyte::check_isolation(isolation),
        _ => tidb::check_isolation(isolation, a.txn_mode),
    }
    .map_err(anyhow::Error::msg)?;
    Ok(iso)
}

/// The nodes workers connect to: TiDB's `tidb` role nodes under
/// `--roles`, else every node.
///
/// # Errors
/// A bad `--roles`.
pub fn client_nodes(kind: DbKind, a: &NewSqlSpec, nodes: Vec<Node>) -> anyhow::Result<Vec<Node>> {
    match (kind, &a.roles) {
        (DbKind::Tidb, Some(r)) => {
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
    kind: DbKind,
    a: &NewSqlSpec,
    url: Option<&str>,
    isolation: Isolation,
    model: DataModel,
    version_order_db: bool,
) -> anyhow::Result<Arc<dyn ClientFactory>> {
    Ok(match kind {
        DbKind::Cockroach => {
            let target = match url {
                Some(u) => db_adapters::pgwire::Target::Url(u.to_string()),
                None => cockroach::node_target(a.db_port.unwrap_or(cockroach::DEFAULT_PORT)),
            };
            let f = cockroach::factory(target, isolation, model, a.select_for_update)
                .map_err(anyhow::Error::msg)?;
            Arc::new(if version_order_db {
                f.with_version_order_db()
            } else {
                f
            })
        }
        DbKind::Yugabyte => {
            let target = match url {
                Some(u) => db_adapters::pgwire::Target::Url(u.to_string()),
                None => yugabyte::node_target(a.db_port.unwrap_or(yugabyte::DEFAULT_PORT)),
            };
            Arc::new(
                yugabyte::factory(target, isolation, model, a.select_for_update)
                    .map_err(anyhow::Error::msg)?,
            )
        }
        DbKind::Tidb => {
            let mut f = tidb::TidbFactory::new(isolation, model, a.tidb_options())
                .map_err(anyhow::Error::msg)?;
            f.port = a.db_port.unwrap_or(tidb::DEFAULT_PORT);
            f.url = url.map(str::to_string);
            f.version_order_db = version_order_db;
            Arc::new(f)
        }
        other => bail!("not a tarball database: {other}"),
    })
}

/// The lifecycle on `remotes`' nodes (`--tarball` or `--no-setup`).
///
/// # Errors
/// A bad flag value.
pub fn cluster_db(
    kind: DbKind,
    a: &NewSqlSpec,
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
        DbKind::Cockroach => {
            let mut c = cockroach::CockroachConfig::new(tarball);
            if let Some(d) = &a.db_dir {
                c.layout.base = d.clone();
            }
            c.port = a.db_port.unwrap_or(c.port);
            c.no_setup = a.no_setup;
            c.spec(&nodes)
        }
        DbKind::Yugabyte => {
            let mut c = yugabyte::YugabyteConfig::new(tarball);
            if let Some(d) = &a.db_dir {
                c.layout.base = d.clone();
            }
            c.port = a.db_port.unwrap_or(c.port);
            c.no_setup = a.no_setup;
            c.read_committed = isolation == Isolation::ReadCommitted;
            c.spec(&nodes)
        }
        DbKind::Tidb => {
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
        other => bail!("not a tarball database: {other}"),
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
        let none = NewSqlSpec::default();
        let e = validate(
            DbKind::Cockroach,
            &none,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--tarball PATH|URL"), "{e}");
        let e = validate(DbKind::Yugabyte, &none, None, None, Isolation::Serializable).unwrap_err();
        assert!(e.to_string().contains("--db yugabyte needs --nodes"), "{e}");
        let no_setup = NewSqlSpec {
            no_setup: true,
            ..NewSqlSpec::default()
        };
        assert_eq!(
            validate(
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
            txn_mode: Some(db_adapters::tidb::TxnMode::Pessimistic),
            ..no_setup.clone()
        };
        let e = validate(
            DbKind::Cockroach,
            &tidb_flags,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("apply to --db tidb only"), "{e}");
        let e = validate(
            DbKind::Postgres,
            &tidb_flags,
            None,
            None,
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("apply to --db cockroach, tidb and yugabyte only"),
            "{e}"
        );
        assert_eq!(
            validate(
                DbKind::Tidb,
                &tidb_flags,
                None,
                Some(&n),
                Isolation::ReadCommitted
            )
            .unwrap(),
            Isolation::ReadCommitted
        );
        let e = validate(
            DbKind::Tidb,
            &no_setup,
            None,
            Some(&n),
            Isolation::Serializable,
        )
        .unwrap_err();
        assert!(e.to_string().contains("TiDB runs repeatable-read"), "{e}");
        let bad_roles = NewSqlSpec {
            roles: Some("pd=n1;tikv=n9;tidb=n1".into()),
            ..no_setup.clone()
        };
        let e = validate(
            DbKind::Tidb,
            &bad_roles,
            None,
            Some(&n),
            Isolation::RepeatableRead,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown node \"n9\""), "{e}");
        let missing = NewSqlSpec {
            tarball: Some("/nonexistent/crdb.tgz".into()),
            ..NewSqlSpec::default()
        };
        let e = validate(
            DbKind::Cockroach,
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
                DbKind::Cockroach,
                &none,
                Some("postgres://root@h:26257/defaultdb"),
                None,
                Isolation::ReadCommitted
            )
            .is_ok()
        );
        // A bad --auto-retry is refused where the text is parsed.
        assert!("sometimes".parse::<db_adapters::tidb::AutoRetry>().is_err());
        let _ = no_setup;
    }
}
