//! Patroni's catalog entry (`--db patroni`): PostgreSQL 15 under Patroni
//! with an etcd DCS, on exactly 3 `--nodes` (the testbed). No `--url` and
//! no local server: a Patroni cluster is its nodes. `--db-conf KEY=VALUE`
//! carries Patroni's settings and PostgreSQL parameters
//! ([`super::settings`]); `--lazyfs` and `--replica-reads` do not apply.
//! Clients follow the primary ([`super::PatroniFactory`]); transactions run
//! at the PostgreSQL level `--isolation` names.

use super::lifecycle::{LOGS, PatroniCluster, PatroniConfig, PatroniDb};
use super::{PatroniConf, PatroniFactory};
use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags, no_local_server,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::WorkloadKind;

/// Patroni + PostgreSQL + etcd.
pub struct Patroni;

/// Nodes a Patroni cluster runs on: one etcd and one Patroni member each.
const NODES: usize = 3;

impl Database for Patroni {
    fn name(&self) -> &'static str {
        "patroni"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "PostgreSQL HA under Patroni with an etcd DCS on 3 `--nodes` (`--db-conf synchronous_mode=true`, `synchronous_mode_strict=true`, `kill=node|patroni|postgres`, `pause=…`, Patroni timings, PostgreSQL parameters)"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }
    fn placement(&self) -> Placement {
        Placement::Nodes
    }
    fn node_count(&self) -> NodeCount {
        NodeCount {
            min: NODES,
            max: NODES,
        }
    }
    fn default_port(&self) -> Option<u16> {
        Some(5432)
    }
    fn log_files(&self) -> &'static [NodeLog] {
        LOGS
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        &Isolation::ALL
    }
    fn dialect(&self) -> Option<SqlDialect> {
        Some(SqlDialect::POSTGRES)
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            range_reads: true,
            bug_modes: false,
            tarball: false,
            local_server: false,
            replicas: false,
            lossy_data_dir: false,
            membership: false,
            clock_faults: ClockFaults::No(
                "Patroni starts PostgreSQL itself: not under libfaketime yet",
            ),
            default_ops: None,
        }
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        // Visibility is per server, and the primary moves.
        false
    }
    fn supports(&self, w: WorkloadKind, _on_nodes: bool) -> bool {
        matches!(
            w,
            WorkloadKind::ListAppend
                | WorkloadKind::RwRegister
                | WorkloadKind::Predicate
                | WorkloadKind::Register
        )
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        // `--db-conf` is Patroni's here (read below); the shared check
        // would refuse it for a database without a lossy data directory.
        let mut shared = s.clone();
        shared.db_conf.clear();
        check_reach_and_flags(self, &shared, nodes.is_some())?;
        if nodes.is_none() {
            return Err("--db patroni runs on --nodes (3 nodes, e.g. --nodes testbed)".to_string());
        }
        if s.replica_reads {
            return Err("--replica-reads does not apply to --db patroni".to_string());
        }
        PatroniConf::parse(&s.db_conf)?;
        Ok(s.isolation)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        _s: &DbSettings,
        _url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        Err("--db patroni runs on --nodes only".to_string())
    }
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        let conf = PatroniConf::parse(&s.db_conf).map_err(OpenError::Spec)?;
        if remotes.len() < NODES {
            return Err(OpenError::Setup(format!(
                "--db patroni needs {NODES} nodes, got {}",
                remotes.len()
            )));
        }
        let cfg = PatroniConfig {
            conf,
            ..PatroniConfig::default()
        };
        let hosts = remotes
            .iter()
            .map(|r| (r.node().host.clone(), cfg.port))
            .collect();
        let factory = PatroniFactory::new(hosts, s.isolation, s.model);
        Ok(OnNodes {
            db: Arc::new(PatroniDb(Arc::new(PatroniCluster::new(cfg, remotes)))),
            factory: Arc::new(factory),
        })
    }
    fn start_local(
        &self,
        _s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        no_local_server(self)
    }
}
