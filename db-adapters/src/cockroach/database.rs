//! CockroachDB's catalog entry (`--db cockroach`): PG wire on port 26257,
//! behind `--url` or on `--nodes` from a release tarball (or `--no-setup`);
//! its client records commit and version timestamps (`--version-order db`,
//! `whitebox.rs`).

use super::{CockroachConfig, PG_WIRE, check_isolation};
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

/// CockroachDB.
pub struct Cockroach;

impl Database for Cockroach {
    fn name(&self) -> &'static str {
        "cockroach"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "CockroachDB (PG wire, port 26257): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://root@host:26257/defaultdb`. Isolation: serializable, read-committed"
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
        &[Isolation::Serializable, Isolation::ReadCommitted]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        Some(SqlDialect {
            for_update_flag: true,
            ..SqlDialect::POSTGRES
        })
    }
    fn capabilities(&self) -> Capabilities {
        crate::newsql::CAPABILITIES
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        true
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
            let mut c = CockroachConfig::new(tarball);
            install_settings(s, &mut c.install);
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
