//! The tarball databases (`--db cockroach|tidb|yugabyte`): what they share,
//! so that each one's folder holds only what differs — its [`Recipe`]
//! (names, ports, isolation levels, client, the daemons of its cluster).
//!
//! Three ways to point harness at one of them:
//! * `--nodes … --tarball PATH|URL`: harness installs the release on every
//!   node over SSH, starts and initialises the cluster, and tears it down;
//! * `--nodes … --no-setup`: the cluster runs already on those nodes;
//!   clients connect to each node's SQL port, partitions still work, process
//!   faults do not (harness has no pid files for daemons it did not start);
//! * `--url`: an existing cluster behind one address, no SSH at all.
//!
//! Key decision: a tarball database is a [`Recipe`], and every recipe is a
//! catalog entry (`impl<R: Recipe> Database for R` below): the answers all
//! three give alike (placement, node count, capabilities, workloads, no
//! local server, the shared checks of the flags) are written once here,
//! and its lifecycle is [`lifecycle::Cluster`] (which nodes get which
//! binaries, the daemons in start order, readiness, what teardown wipes),
//! turned into command plans (`crate::cluster`) by one function.
//! Every question of the recipe is required, as the catalog's are.

pub mod lifecycle;
mod settings;

pub use settings::{NewSqlSpec, check_tarball, install_settings, pg_wire_factory, tarball};

use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags, no_local_server,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::cluster::{ClusterDb, Spec, Tarball};
use crate::db::NodeLog;
use crate::sql::Isolation;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::{JepsenWorkload, WorkloadKind};

/// What one tarball database is: the questions whose answers differ
/// between them. Its `impl Recipe` is its catalog entry (in its
/// `database.rs`).
pub trait Recipe: Send + Sync + 'static {
    /// The `--db` value.
    fn name(&self) -> &'static str;
    /// One line of `--db` help.
    fn about(&self) -> &'static str;
    /// The `--url` schemes its clients accept.
    fn url_schemes(&self) -> &'static [&'static str];
    /// Its SQL port (`--db-port` overrides it).
    fn default_port(&self) -> u16;
    /// Logs kept from every node.
    fn log_files(&self) -> &'static [NodeLog];
    /// The `--isolation` levels its adapter accepts.
    fn isolation_levels(&self) -> &'static [Isolation];
    /// Its SQL dialect.
    fn dialect(&self) -> SqlDialect;
    /// Its client records a version order (`--version-order db`).
    fn records_version_order(&self) -> bool;
    /// It takes TiDB's flags (`--txn-mode`, `--auto-retry`,
    /// `--auto-retry-limit`, `--roles`).
    fn takes_tidb_flags(&self) -> bool;
    /// Its own checks, after the shared ones: the level transactions run
    /// at.
    ///
    /// # Errors
    /// A setting that does not fit, named.
    fn check_own(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String>;
    /// The nodes its clients connect to, of the test's `nodes`.
    ///
    /// # Errors
    /// A `--roles` that does not fit the nodes.
    fn client_nodes(&self, newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String>;
    /// Its client factory, behind `url` or on the nodes.
    ///
    /// # Errors
    /// A bad URL or setting.
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String>;
    /// Its cluster on `nodes` from `tarball`, as command plans (usually
    /// `lifecycle::Cluster::spec`).
    ///
    /// # Errors
    /// A setting that does not fit the nodes.
    fn cluster(&self, s: &DbSettings, tarball: Tarball, nodes: &[Node]) -> Result<Spec, String>;
}

/// What every tarball database can do: range reads, installed from a
/// release tarball on `--nodes`, nothing else.
pub const CAPABILITIES: Capabilities = Capabilities {
    range_reads: true,
    bug_modes: false,
    tarball: true,
    local_server: false,
    replicas: false,
    lossy_data_dir: false,
    clock_faults: ClockFaults::No(
        "its servers are installed from a release tarball and not started under libfaketime (the Go ones read the clock through the vDSO, which libfaketime cannot intercept)",
    ),
    membership: false,
    default_ops: None,
};

/// The workloads the tarball databases' clients run: the transactional
/// ones and long-fork (Jepsen's other SQL workloads have no client for
/// them yet).
pub fn runs_workload(w: WorkloadKind) -> bool {
    match w {
        WorkloadKind::Jepsen(j) => j == JepsenWorkload::LongFork,
        _ => true,
    }
}

impl<R: Recipe> Database for R {
    fn name(&self) -> &'static str {
        Recipe::name(self)
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        Recipe::about(self)
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        Recipe::url_schemes(self)
    }
    fn placement(&self) -> Placement {
        Placement::UrlOrNodes
    }
    fn node_count(&self) -> NodeCount {
        NodeCount::ANY
    }
    fn default_port(&self) -> Option<u16> {
        Some(Recipe::default_port(self))
    }
    fn log_files(&self) -> &'static [NodeLog] {
        Recipe::log_files(self)
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        Recipe::isolation_levels(self)
    }
    fn dialect(&self) -> Option<SqlDialect> {
        Some(Recipe::dialect(self))
    }
    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        Recipe::records_version_order(self)
    }
    fn supports(&self, w: WorkloadKind, _on_nodes: bool) -> bool {
        runs_workload(w)
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        check_reach_and_flags(self, s, nodes.is_some())?;
        check_tarball(self, s, nodes, self.takes_tidb_flags())?;
        self.check_own(s, nodes)
    }
    fn client_nodes(&self, newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Recipe::client_nodes(self, newsql, nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        // Refuses a Jepsen workload its clients do not run.
        match s.jepsen {
            Some(w) if w != JepsenWorkload::LongFork => Err(format!(
                "--workload {w} does not run on --db {}",
                Recipe::name(self)
            )),
            _ => Recipe::client_factory(self, s, url),
        }
    }
    /// Its client factory (behind `--url` or the nodes) and the command-plan
    /// cluster its recipe builds from the release (`--tarball`, or nothing
    /// with `--no-setup`) and the nodes.
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        let factory =
            Database::client_factory(self, s, s.url.as_deref()).map_err(OpenError::Spec)?;
        let nodes: Vec<Node> = remotes.iter().map(|r| r.node().clone()).collect();
        let tarball = tarball(s).map_err(OpenError::Spec)?;
        let spec = self.cluster(s, tarball, &nodes).map_err(OpenError::Spec)?;
        Ok(OnNodes {
            db: Arc::new(ClusterDb::new(spec, remotes)),
            factory,
        })
    }
    fn start_local(
        &self,
        _s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        no_local_server(self)
    }
}
