//! TiDB's catalog entry (`--db tidb`): MySQL wire on port 4000, behind
//! `--url` or on `--nodes` from a release tarball (roles from `--roles`,
//! clients on the `tidb` role's nodes) or `--no-setup`; Jepsen's 7-table
//! schema; its client records start and commit TSOs (`--version-order
//! db`, `whitebox.rs`). What the tarball databases share is
//! `crate::tarball`.

use super::{Role, Roles, TidbConfig, TidbFactory, check_isolation};
use crate::catalog::{DbSettings, SqlDialect, SqlFamily};
use crate::client::ClientFactory;
use crate::cluster::{Spec, Tarball};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::{NewSqlSpec, Recipe, install_settings};
use nemesis::Node;
use std::sync::Arc;

/// TiDB.
pub struct Tidb;

impl Recipe for Tidb {
    fn name(&self) -> &'static str {
        "tidb"
    }
    fn about(&self) -> &'static str {
        "TiDB (MySQL wire, port 4000): `--nodes` with `--tarball` (roles from `--roles`) or `--no-setup`, or `--url mysql://root@host:4000/test`. Isolation: repeatable-read (snapshot isolation), read-committed"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &["mysql"]
    }
    fn default_port(&self) -> u16 {
        super::DEFAULT_PORT
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
    fn dialect(&self) -> SqlDialect {
        SqlDialect {
            family: SqlFamily::Mysql,
            tables: super::TABLES,
            for_update_flag: true,
            ..SqlDialect::POSTGRES
        }
    }
    fn records_version_order(&self) -> bool {
        true
    }
    fn takes_tidb_flags(&self) -> bool {
        true
    }
    fn check_own(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
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
        let a = &s.newsql;
        let mut f = TidbFactory::new(s.isolation, s.model, a.tidb_options())?;
        f.port = a.db_port.unwrap_or(super::DEFAULT_PORT);
        f.url = url.map(str::to_string);
        f.version_order_db = s.version_order_db;
        Ok(Arc::new(f))
    }
    fn cluster(&self, s: &DbSettings, tarball: Tarball, nodes: &[Node]) -> Result<Spec, String> {
        let roles = match &s.newsql.roles {
            Some(r) => Roles::parse(r, nodes)?,
            None => Roles::spread(nodes),
        };
        let mut c = TidbConfig::new(tarball, roles);
        install_settings(s, &mut c.install);
        Ok(c.spec(nodes))
    }
}
