//! SQLite's catalog entry (`--db sqlite`, the default): embedded, no URL,
//! no nodes; its clients record the commit order (`--version-order db` at
//! serializable) and run the Jepsen workloads (`super::jepsen`).

use super::SqliteFactory;
use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags, no_local_server, not_on_nodes,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use std::time::Duration;
use workloads::WorkloadKind;

/// Embedded SQLite.
pub struct Sqlite;

/// Below the op timeout, so a busy wait ends as a definite fail.
fn busy_timeout(s: &DbSettings) -> Duration {
    (s.op_timeout / 2).min(Duration::from_secs(2))
}

fn factory(s: &DbSettings) -> Result<SqliteFactory, String> {
    let f = SqliteFactory::new(
        s.dir.join("sqlite.db"),
        s.isolation,
        s.model,
        busy_timeout(s),
    )
    .map_err(|e| e.to_string())?;
    if s.version_order_db {
        f.with_version_order_db().map_err(|e| e.to_string())
    } else {
        Ok(f)
    }
}

impl Database for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "Embedded SQLite (compiled in; the default)"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }
    fn placement(&self) -> Placement {
        Placement::Embedded
    }
    fn node_count(&self) -> NodeCount {
        NodeCount::ANY
    }
    fn default_port(&self) -> Option<u16> {
        None
    }
    fn log_files(&self) -> &'static [NodeLog] {
        &[]
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        &[Isolation::Serializable, Isolation::SnapshotIsolation]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        // Its own single-table statements; cycles replay on PostgreSQL.
        Some(SqlDialect {
            native: false,
            ..SqlDialect::POSTGRES
        })
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            range_reads: true,
            bug_modes: false,
            tarball: false,
            local_server: false,
            replicas: false,
            lossy_data_dir: false,
            clock_faults: ClockFaults::No(
                "SQLite runs inside the harness process: there is no server of its own to start under libfaketime",
            ),
            default_ops: Some(super::DEFAULT_OPS),
            membership: false,
        }
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        true
    }
    fn supports(&self, _w: WorkloadKind, _on_nodes: bool) -> bool {
        true
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        check_reach_and_flags(self, s, nodes.is_some())?;
        factory(s).map(|_| s.isolation)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        _url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        Ok(match s.jepsen {
            Some(w) if w != workloads::JepsenWorkload::LongFork => {
                Arc::new(super::jepsen::JepsenSqliteFactory::new(
                    s.dir.join("sqlite.db"),
                    s.isolation,
                    w,
                    busy_timeout(s),
                )?)
            }
            _ => Arc::new(factory(s)?),
        })
    }
    fn lifecycle(
        &self,
        _s: &DbSettings,
        _remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        Err(not_on_nodes(self))
    }
    fn start_local(
        &self,
        _s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        no_local_server(self)
    }
}
