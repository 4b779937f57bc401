//! YugabyteDB YSQL's catalog entry (`--db yugabyte`): PG wire on port 5433,
//! behind `--url` or on `--nodes` from a release tarball (or `--no-setup`);
//! its own table layout; no version order recorded (no certificate
//! statements exist for YSQL).

use super::{PG_WIRE, YugabyteConfig, check_isolation};
use crate::catalog::{
    Capabilities, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError, Placement,
    SqlDialect, check_reach_and_flags, check_tarball, install_settings, no_local_server,
    pg_wire_factory,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::newsql::NewSqlSpec;
use crate::sql::Isolation;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::WorkloadKind;

/// YugabyteDB YSQL.
pub struct Yugabyte;

impl Database for Yugabyte {
    fn name(&self) -> &'static str {
        "yugabyte"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "YugabyteDB YSQL (PG wire, port 5433): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://yugabyte@host:5433/yugabyte`. Isolation: serializable, repeatable-read, read-committed"
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
        Some(super::DEFAULT_PORT)
    }
    fn log_files(&self) -> &'static [NodeLog] {
        super::LOGS
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        &[
            Isolation::Serializable,
            Isolation::SnapshotIsolation,
            Isolation::RepeatableRead,
            Isolation::ReadCommitted,
        ]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        Some(SqlDialect {
            for_update_flag: true,
            tables: super::TABLES,
            ..SqlDialect::POSTGRES
        })
    }
    fn capabilities(&self) -> Capabilities {
        crate::newsql::CAPABILITIES
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        false
    }
    fn supports(&self, w: WorkloadKind, _on_nodes: bool) -> bool {
        crate::newsql::runs_workload(w)
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        check_reach_and_flags(self, s, nodes.is_some())?;
        check_tarball(self, s, nodes, false)?;
        check_isolation(s.isolation)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        crate::newsql::refuse_jepsen(self, s)?;
        pg_wire_factory(self, &PG_WIRE, s, url)
    }
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        crate::newsql::on_nodes(self, s, remotes, |tarball, nodes| {
            let mut c = YugabyteConfig::new(tarball);
            install_settings(s, &mut c.install);
            c.read_committed = s.isolation == Isolation::ReadCommitted;
            Ok(c.spec(nodes))
        })
    }
    fn start_local(
        &self,
        _s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        no_local_server(self)
    }
}
