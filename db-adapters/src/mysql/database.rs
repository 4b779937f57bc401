//! The catalog entries of MariaDB (`--db mariadb`, one server on the first
//! of `--nodes`) and MariaDB Galera (`--db galera`, 3+ nodes): the same
//! client and lifecycle ([`super::MariaDb`]), on nodes only; every Jepsen
//! workload runs on them (`super::jepsen`).

use super::{MariaDb, MariaDbConfig, MysqlFactory};
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
use workloads::{JepsenWorkload, WorkloadKind};

/// MariaDB Galera.
pub struct Galera;

/// One MariaDB server.
pub struct Mariadb;

const LEVELS: [Isolation; 4] = [
    Isolation::Serializable,
    Isolation::RepeatableRead,
    Isolation::ReadCommitted,
    Isolation::ReadUncommitted,
];

const CAPABILITIES: Capabilities = Capabilities {
    range_reads: true,
    bug_modes: false,
    tarball: false,
    local_server: false,
    replicas: false,
    lossy_data_dir: true,
    clock_faults: ClockFaults::Libfaketime,
    membership: false,
    default_ops: None,
};

/// Each `--db-conf` entry is one `KEY=VALUE` option line of `[mysqld]`.
fn check_db_conf(lines: &[String]) -> Result<(), String> {
    for l in lines {
        let key = l.split('=').next().unwrap_or("").trim();
        let ok = l.contains('=')
            && !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !l.contains(['\n', '\r']);
        if !ok {
            return Err(format!(
                "--db-conf {l:?}: expected one KEY=VALUE option line, e.g. innodb_flush_log_at_trx_commit=0"
            ));
        }
    }
    Ok(())
}

/// The lifecycle (Galera or one server) and its clients' factory.
fn on_nodes(
    galera: bool,
    s: &DbSettings,
    remotes: Vec<Arc<dyn Remote>>,
) -> Result<OnNodes, OpenError> {
    let mut cfg = MariaDbConfig {
        extra_conf: s.db_conf.clone(),
        clock: s.clock,
        ..MariaDbConfig::new(galera)
    };
    if s.lazyfs {
        let exe = nemesis::node_binary::own_binary()
            .map_err(|e| OpenError::Setup(format!("--lazyfs: own binary: {e}")))?;
        cfg.lossy = Some(crate::db::LossyConfig {
            binary: exe.to_string_lossy().into_owned(),
            cache_mib: 1024,
            strict: s.lazyfs_strict,
        });
    }
    let db = MariaDb::new(cfg, remotes);
    let f = MysqlFactory::new(s.isolation, s.model).map_err(OpenError::Setup)?;
    let factory: Arc<dyn ClientFactory> = match s.jepsen {
        Some(w) if w != JepsenWorkload::LongFork => {
            Arc::new(super::jepsen::JepsenMysqlFactory::new(f, w, false))
        }
        _ => Arc::new(f),
    };
    Ok(OnNodes {
        db: Arc::new(db),
        factory,
    })
}

/// The answers Galera and MariaDB share; `$galera` picks the lifecycle.
macro_rules! mariadb_entry {
    ($ty:ty, $name:literal, $about:literal, $nodes:expr, $galera:literal) => {
        impl Database for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn aliases(&self) -> &'static [&'static str] {
                &[]
            }
            fn about(&self) -> &'static str {
                $about
            }
            fn url_schemes(&self) -> &'static [&'static str] {
                &[]
            }
            fn placement(&self) -> Placement {
                Placement::Nodes
            }
            fn node_count(&self) -> NodeCount {
                $nodes
            }
            fn default_port(&self) -> Option<u16> {
                Some(3306)
            }
            fn log_files(&self) -> &'static [NodeLog] {
                super::lifecycle::LOGS
            }
            fn isolation_levels(&self) -> &'static [Isolation] {
                &LEVELS
            }
            fn dialect(&self) -> Option<SqlDialect> {
                Some(SqlDialect::MYSQL)
            }
            fn capabilities(&self) -> Capabilities {
                Capabilities {
                    membership: $galera,
                    ..CAPABILITIES
                }
            }
            fn records_version_order(&self, _on_nodes: bool) -> bool {
                false
            }
            fn supports(&self, _w: WorkloadKind, _on_nodes: bool) -> bool {
                true
            }
            fn check_settings(
                &self,
                s: &DbSettings,
                nodes: Option<&[Node]>,
            ) -> Result<Isolation, String> {
                check_reach_and_flags(self, s, nodes.is_some())?;
                check_db_conf(&s.db_conf)?;
                Ok(s.isolation)
            }
            fn client_nodes(
                &self,
                _newsql: &NewSqlSpec,
                mut nodes: Vec<Node>,
            ) -> Result<Vec<Node>, String> {
                nodes.truncate(self.node_count().max);
                Ok(nodes)
            }
            fn client_factory(
                &self,
                _s: &DbSettings,
                _url: Option<&str>,
            ) -> Result<Arc<dyn ClientFactory>, String> {
                Err(format!("--db {} runs on --nodes only", self.name()))
            }
            fn lifecycle(
                &self,
                s: &DbSettings,
                remotes: Vec<Arc<dyn Remote>>,
            ) -> Result<OnNodes, OpenError> {
                on_nodes($galera, s, remotes)
            }
            fn start_local(
                &self,
                _s: &DbSettings,
            ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
                no_local_server(self)
            }
        }
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn db_conf_takes_option_lines_only() {
        assert!(super::check_db_conf(&["innodb_flush_log_at_trx_commit=0".into()]).is_ok());
        for bad in ["no_equals", "=1", "a=1\n[client]", "x y=1"] {
            let e = super::check_db_conf(&[bad.into()]).unwrap_err();
            assert!(e.contains("KEY=VALUE"), "{bad}: {e}");
        }
    }
}

mariadb_entry!(
    Galera,
    "galera",
    "MariaDB Galera on 3+ `--nodes`",
    NodeCount {
        min: 3,
        max: usize::MAX
    },
    true
);
mariadb_entry!(
    Mariadb,
    "mariadb",
    "One MariaDB server on the first of `--nodes`",
    NodeCount { min: 1, max: 1 },
    false
);
