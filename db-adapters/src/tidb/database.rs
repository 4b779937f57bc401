//! TiDB's catalog entry (`--db tidb`): MySQL wire on port 4000, behind
//! `--url` or on `--nodes` from a release tarball (roles from `--roles`,
//! clients on the `tidb` role's nodes) or `--no-setup`; Jepsen's 7-table
//! schema; its client records start and commit TSOs (`--version-order
//! db`, `whitebox.rs`).

use super::{Role, Roles, TidbConfig, TidbFactory, check_isolation};
use crate::catalog::{
    Capabilities, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError, Placement,
    SqlDialect, SqlFamily, check_reach_and_flags, check_tarball, install_settings, no_local_server,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::newsql::NewSqlSpec;
use crate::sql::Isolation;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::WorkloadKind;

/// TiDB.
pub struct Tidb;

impl Database for Tidb {
    fn name(&self) -> &'static str {
        "tidb"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "TiDB (MySQL wire, port 4000): `--nodes` with `--tarball` (roles from `--roles`) or `--no-setup`, or `--url mysql://root@host:4000/test`. Isolation: repeatable-read (snapshot isolation), read-committed"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &["mysql"]
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
            Isolation::SnapshotIsolation,
            Isolation::RepeatableRead,
            Isolation::ReadCommitted,
        ]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        Some(SqlDialect {
            family: SqlFamily::Mysql,
            tables: super::TABLES,
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
        check_tarball(self, s, nodes, true)?;
        match (&s.newsql.roles, nodes) {
            (Some(r), Some(n)) => {
                Roles::parse(r, n)?;
            }
            (Some(_), None) => return Err("--roles needs --nodes".to_string()),
            (None, _) => {}
        }
        check_isolation(s.isolation, s.newsql.txn_mode)
    }
    fn client_nodes(&self, newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        match &newsql.roles {
            Some(r) => Ok(Roles::parse(r, &nodes)?.nodes(Role::Tidb).to_vec()),
            None => Ok(nodes),
        }
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        crate::newsql::refuse_jepsen(self, s)?;
        let a = &s.newsql;
        let mut f = TidbFactory::new(s.isolation, s.model, a.tidb_options())?;
        f.port = a.db_port.unwrap_or(super::DEFAULT_PORT);
        f.url = url.map(str::to_string);
        f.version_order_db = s.version_order_db;
        Ok(Arc::new(f))
    }
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        crate::newsql::on_nodes(self, s, remotes, |tarball, nodes| {
            let roles = match &s.newsql.roles {
                Some(r) => Roles::parse(r, nodes)?,
                None => Roles::spread(nodes),
            };
            let mut c = TidbConfig::new(tarball, roles);
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
