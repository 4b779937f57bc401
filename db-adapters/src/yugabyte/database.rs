//! YugabyteDB YSQL's catalog entry (`--db yugabyte`): PG wire on port 5433,
//! behind `--url` or on `--nodes` from a release tarball (or `--no-setup`);
//! its own table layout; no version order recorded (no certificate
//! statements exist for YSQL). What the tarball databases share is
//! `crate::tarball`.

use super::{PG_WIRE, YugabyteConfig, check_isolation};
use crate::catalog::{DbSettings, SqlDialect};
use crate::client::ClientFactory;
use crate::cluster::{Spec, Tarball};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::{NewSqlSpec, Recipe, install_settings, pg_wire_factory};
use nemesis::Node;
use std::sync::Arc;

/// YugabyteDB YSQL.
pub struct Yugabyte;

impl Recipe for Yugabyte {
    fn name(&self) -> &'static str {
        "yugabyte"
    }
    fn about(&self) -> &'static str {
        "YugabyteDB YSQL (PG wire, port 5433): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://yugabyte@host:5433/yugabyte`. Isolation: serializable, repeatable-read, read-committed"
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
        &[
            Isolation::Serializable,
            Isolation::SnapshotIsolation,
            Isolation::RepeatableRead,
            Isolation::ReadCommitted,
        ]
    }
    fn dialect(&self) -> SqlDialect {
        SqlDialect {
            for_update_flag: true,
            tables: super::TABLES,
            ..SqlDialect::POSTGRES
        }
    }
    fn records_version_order(&self) -> bool {
        false
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
        let mut c = YugabyteConfig::new(tarball);
        install_settings(s, &mut c.install);
        c.read_committed = s.isolation == Isolation::ReadCommitted;
        Ok(c.spec(nodes))
    }
}
