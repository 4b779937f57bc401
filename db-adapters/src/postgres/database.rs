//! PostgreSQL's catalog entry (`--db postgres`): behind `--url`, a
//! throwaway local cluster (`--local`, or neither `--url` nor `--nodes`),
//! or a primary with streaming replicas on `--nodes`
//! ([`super::cluster`], `--replica-reads`). Its client records the
//! version order on a single server (`--version-order db`: txid and
//! snapshot visibility, `whitebox.rs`); the Jepsen workloads run behind a
//! URL (`super::jepsen`).

use super::PgFactory;
use super::cluster::{PgCluster, PgClusterConfig, ReplicaReadsFactory};
use super::local::LocalCluster;
use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::LossyConfig;
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::{JepsenWorkload, WorkloadKind};

/// PostgreSQL.
pub struct Postgres;

const NEEDS_URL: &str = "--db postgres needs --url postgres://… or --local";

impl LocalServer for LocalCluster {
    fn url(&self) -> String {
        LocalCluster::url(self)
    }
    fn stop(self: Box<Self>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { LocalCluster::stop(*self).await.map_err(|e| e.to_string()) })
    }
    fn process(&self) -> Option<std::sync::Arc<dyn nemesis::process::Process>> {
        Some(std::sync::Arc::new(LocalCluster::process(self)))
    }
    fn settings(&self) -> Vec<(String, String)> {
        LocalCluster::settings(self).to_vec()
    }
}

impl Database for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "PostgreSQL (`--url` to a server, or `--local` for a throwaway cluster, or `--nodes` for a primary + streaming replicas on nodes)"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &["postgres", "postgresql"]
    }
    fn placement(&self) -> Placement {
        Placement::UrlOrNodes
    }
    fn node_count(&self) -> NodeCount {
        NodeCount::ANY
    }
    fn default_port(&self) -> Option<u16> {
        Some(5432)
    }
    fn log_files(&self) -> &'static [NodeLog] {
        super::cluster::LOGS
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
            local_server: true,
            replicas: true,
            lossy_data_dir: true,
            clock_faults: ClockFaults::Libfaketime,
            membership: true,
            default_ops: None,
        }
    }
    fn records_version_order(&self, on_nodes: bool) -> bool {
        // Visibility is per server: not across a primary and replicas.
        !on_nodes
    }
    fn supports(&self, w: WorkloadKind, on_nodes: bool) -> bool {
        match w {
            WorkloadKind::Jepsen(j) if j != JepsenWorkload::LongFork => !on_nodes,
            _ => true,
        }
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        check_reach_and_flags(self, s, nodes.is_some())?;
        if s.local {
            // Applied to the local server (and recorded), or refused here.
            super::local::parse_conf(&s.db_conf)?;
        }
        Ok(s.isolation)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        let url = url.ok_or(NEEDS_URL)?;
        if let Some(w) = s.jepsen
            && w != JepsenWorkload::LongFork
        {
            return Ok(Arc::new(super::jepsen::JepsenPgFactory::new(
                url,
                s.isolation,
                w,
                s.newsql.select_for_update,
            )?));
        }
        let f = PgFactory::new(url, s.isolation, s.model).map_err(|e| e.to_string())?;
        Ok(Arc::new(if s.version_order_db {
            f.with_version_order_db()
        } else {
            f
        }))
    }
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        on_nodes(s, remotes).map_err(OpenError::Setup)
    }
    fn start_local(
        &self,
        s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        let (dir, clock, conf) = (s.dir.clone(), s.clock, s.db_conf.clone());
        Box::pin(async move {
            match LocalCluster::start_conf(&dir, clock, &conf).await {
                Ok(c) => Ok(Box::new(c) as Box<dyn LocalServer>),
                Err(e) => Err(format!("local PostgreSQL: {e}")),
            }
        })
    }
}

/// A primary and streaming replicas on `remotes`' nodes; with
/// `--replica-reads` read-only transactions go to a replica.
fn on_nodes(s: &DbSettings, remotes: Vec<Arc<dyn Remote>>) -> Result<OnNodes, String> {
    let mut cfg = PgClusterConfig {
        extra_conf: s.db_conf.clone(),
        clock: s.clock,
        ..PgClusterConfig::default()
    };
    if s.lazyfs {
        let exe =
            nemesis::node_binary::own_binary().map_err(|e| format!("--lazyfs: own binary: {e}"))?;
        cfg.lossy = Some(LossyConfig {
            binary: exe.to_string_lossy().into_owned(),
            cache_mib: 1024,
            strict: s.lazyfs_strict,
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
