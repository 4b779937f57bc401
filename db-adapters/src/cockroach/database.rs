//! CockroachDB's catalog entry (`--db cockroach`): PG wire on port 26257,
//! behind `--url` or on `--nodes` from a release tarball (or `--no-setup`);
//! its client records commit and version timestamps (`--version-order db`,
//! `whitebox.rs`). What the tarball databases share is `crate::tarball`.

use super::{CockroachConfig, PG_WIRE, check_isolation};
use crate::catalog::{DbSettings, SqlDialect};
use crate::client::ClientFactory;
use crate::cluster::{Spec, Tarball};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::{NewSqlSpec, Recipe, install_settings, pg_wire_factory};
use nemesis::Node;
use std::sync::Arc;

/// CockroachDB.
pub struct Cockroach;

impl Recipe for Cockroach {
    fn name(&self) -> &'static str {
        "cockroach"
    }
    fn about(&self) -> &'static str {
        "CockroachDB (PG wire, port 26257): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://root@host:26257/defaultdb`. Isolation: serializable, read-committed"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &["postgres", "postgresql"]
    }
    fn default_port(&self) -> u16 {
        super::DEFAULT_PORT
    }
    fn log_files(&self) -> &'static [NodeLog] {
        super::LOGS
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        &[Isolation::Serializable, Isolation::ReadCommitted]
    }
    fn dialect(&self) -> SqlDialect {
        SqlDialect {
            for_update_flag: true,
            ..SqlDialect::POSTGRES
        }
    }
    fn records_version_order(&self) -> bool {
        true
    }
    fn takes_tidb_flags(&self) -> bool {
        false
    }
    fn check_own(&self, s: &DbSettings, _nodes: Option<&[Node]>) -> Result<Isolation, String> {
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
        pg_wire_factory(self, &PG_WIRE, s, url)
    }
    fn cluster(&self, s: &DbSettings, tarball: Tarball, nodes: &[Node]) -> Result<Spec, String> {
        let mut c = CockroachConfig::new(tarball);
        install_settings(s, &mut c.install);
        Ok(c.spec(nodes))
    }
}
