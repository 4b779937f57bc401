//! Settings of the tarball databases (`--db cockroach|tidb|yugabyte`):
//! [`NewSqlSpec`] and its checks.
//!
//! Three ways to point harness at one of them:
//! * `--nodes … --tarball PATH|URL`: harness installs the release on every
//!   node over SSH, starts and initialises the cluster, and tears it down;
//! * `--nodes … --no-setup`: the cluster runs already on those nodes;
//!   clients connect to each node's SQL port, partitions still work, process
//!   faults do not (harness has no pid files for daemons it did not start);
//! * `--url`: an existing cluster behind one address, no SSH at all.
//!
//! Each tarball database's catalog entry (`<database>/database.rs`)
//! checks these settings (with `catalog::check_tarball`) and turns them
//! into a client factory and a lifecycle; this module holds them and the
//! workloads those databases' clients run ([`runs_workload`]).

use crate::tidb::{AutoRetry, TidbOptions, TxnMode};

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

/// The workloads the tarball databases' clients run: the transactional
/// ones and long-fork (Jepsen's other SQL workloads have no client for
/// them yet).
pub fn runs_workload(w: workloads::WorkloadKind) -> bool {
    match w {
        workloads::WorkloadKind::Jepsen(j) => j == workloads::JepsenWorkload::LongFork,
        _ => true,
    }
}

/// Refuses a Jepsen workload the database's clients do not run
/// ([`runs_workload`]).
///
/// # Errors
/// Names the workload and the database.
pub fn refuse_jepsen(
    db: &dyn crate::catalog::Database,
    s: &crate::catalog::DbSettings,
) -> Result<(), String> {
    match s.jepsen {
        Some(w) if w != workloads::JepsenWorkload::LongFork => {
            Err(format!("--workload {w} does not run on --db {}", db.name()))
        }
        _ => Ok(()),
    }
}

/// What every tarball database (CockroachDB, TiDB, YugabyteDB) can do: range
/// reads, installed from a release tarball on `--nodes`, nothing else.
pub(crate) const CAPABILITIES: crate::catalog::Capabilities = crate::catalog::Capabilities {
    range_reads: true,
    bug_modes: false,
    tarball: true,
    local_server: false,
    replicas: false,
    lossy_data_dir: false,
    clock_faults: crate::catalog::ClockFaults::No(
        "its servers are installed from a release tarball and not started under libfaketime (the Go ones read the clock through the vDSO, which libfaketime cannot intercept)",
    ),
    membership: false,
    default_ops: None,
};

/// A tarball database's lifecycle on `remotes`: its client factory (behind
/// `--url` or the nodes) and the command-plan cluster `spec` builds from
/// the release (`--tarball`, or nothing with `--no-setup`) and the nodes.
///
/// # Errors
/// A setting that does not fit (`Spec`).
pub(crate) fn on_nodes(
    db: &dyn crate::catalog::Database,
    s: &crate::catalog::DbSettings,
    remotes: Vec<std::sync::Arc<dyn nemesis::remote::Remote>>,
    spec: impl FnOnce(crate::cluster::Tarball, &[nemesis::Node]) -> Result<crate::cluster::Spec, String>,
) -> Result<crate::catalog::OnNodes, crate::catalog::OpenError> {
    use crate::catalog::OpenError;
    let factory = db
        .client_factory(s, s.url.as_deref())
        .map_err(OpenError::Spec)?;
    let nodes: Vec<nemesis::Node> = remotes.iter().map(|r| r.node().clone()).collect();
    let tarball = crate::catalog::tarball(s).map_err(OpenError::Spec)?;
    let spec = spec(tarball, &nodes).map_err(OpenError::Spec)?;
    Ok(crate::catalog::OnNodes {
        db: std::sync::Arc::new(crate::cluster::ClusterDb::new(spec, remotes)),
        factory,
    })
}
