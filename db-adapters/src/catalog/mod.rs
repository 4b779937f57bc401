//! The catalog of databases harness tests: one [`DbKind`] per `--db` value,
//! and everything the rest of harness needs to know about it — its name
//! and help line, its wire family, the isolation levels its adapter
//! accepts, where it runs (embedded, a URL, nodes) and on how many nodes,
//! its default SQL port, the log files kept from its nodes, the tables its
//! client creates and the SQL dialect `elle/repro.sql` replays its cycles
//! in (this file), and how it becomes a client factory and a lifecycle
//! (`open.rs`).
//!
//! Key decision: this is the only place a database is named. The CLI's
//! `--db` values and help, the run planner, the engine's wiring,
//! `repro.sql`'s dialect and the README's table all read it; adding a
//! database is an entry here plus its client and lifecycle modules
//! (ARCHITECTURE.md "Adding a database"). The database modules never
//! import the catalog (it imports them: their ports, tables, log lists,
//! factories and lifecycles), so there is no import loop.
//! Invariant: `DbKind::ALL` lists every variant, in `--help` order, and
//! `name` ∘ `from_str` is the identity on it (tested).

use crate::db::NodeLog;
use crate::sql::{Isolation, TxnTables};
use std::fmt;
use std::str::FromStr;

pub mod jepsen;
mod open;

pub use open::{DbSettings, LocalServer, OnNodes, OpenError, sim_mode};

/// Which database to test (`--db`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DbKind {
    /// Embedded SQLite.
    Sqlite,
    /// The in-memory simulator.
    Sim,
    /// PostgreSQL.
    Postgres,
    /// MariaDB Galera.
    Galera,
    /// One MariaDB server.
    Mariadb,
    /// CockroachDB.
    Cockroach,
    /// TiDB.
    Tidb,
    /// YugabyteDB YSQL.
    Yugabyte,
}

/// The protocol family a database's client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Compiled-in SQLite (`sqlite.rs`).
    Sqlite,
    /// The simulator (`sim/`), no SQL.
    Sim,
    /// PostgreSQL wire (`pgwire.rs`).
    PgWire,
    /// MySQL wire (`mysql/client.rs`).
    MysqlWire,
}

/// Where a database runs for a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In the harness process: no URL, no nodes.
    Embedded,
    /// Behind `--url`, or `--local` (PostgreSQL), or on `--nodes`.
    UrlOrNodes,
    /// On `--nodes` only.
    Nodes,
}

/// The SQL family of the statements `repro.sql` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFamily {
    /// PostgreSQL wire and dialect (PostgreSQL, CockroachDB, YugabyteDB).
    Postgres,
    /// MySQL dialect (MariaDB, Galera, TiDB).
    Mysql,
}

/// How a database's client spells its schema and statements, as far as
/// a replay needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqlDialect {
    /// PostgreSQL or MySQL statements.
    pub family: SqlFamily,
    /// Tables `txn0..` and the key → table mapping the client creates.
    pub tables: TxnTables,
    /// Reads lock their rows when `--select-for-update` is given.
    pub for_update_flag: bool,
    /// The client creates InnoDB tables explicitly.
    pub innodb: bool,
    /// The database runs these statements itself (false: SQLite and the
    /// simulator, whose cycles are replayed on PostgreSQL).
    pub native: bool,
}

impl DbKind {
    /// Every database, in `--help` order.
    pub const ALL: [DbKind; 8] = [
        DbKind::Sqlite,
        DbKind::Sim,
        DbKind::Postgres,
        DbKind::Galera,
        DbKind::Mariadb,
        DbKind::Cockroach,
        DbKind::Tidb,
        DbKind::Yugabyte,
    ];

    /// The `--db` spelling.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Sqlite => "sqlite",
            DbKind::Sim => "sim",
            DbKind::Postgres => "postgres",
            DbKind::Galera => "galera",
            DbKind::Mariadb => "mariadb",
            DbKind::Cockroach => "cockroach",
            DbKind::Tidb => "tidb",
            DbKind::Yugabyte => "yugabyte",
        }
    }

    /// The help line of its `--db` value.
    pub fn about(self) -> &'static str {
        match self {
            DbKind::Sqlite => "Embedded SQLite (compiled in; the default)",
            DbKind::Sim => "The in-memory simulator with selectable isolation and bugs",
            DbKind::Postgres => {
                "PostgreSQL (`--url` to a server, or `--local` for a throwaway cluster, or `--nodes` for a primary + streaming replicas on nodes)"
            }
            DbKind::Galera => "MariaDB Galera on 3+ `--nodes`",
            DbKind::Mariadb => "One MariaDB server on the first of `--nodes`",
            DbKind::Cockroach => {
                "CockroachDB (PG wire, port 26257): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://root@host:26257/defaultdb`. Isolation: serializable, read-committed"
            }
            DbKind::Tidb => {
                "TiDB (MySQL wire, port 4000): `--nodes` with `--tarball` (roles from `--roles`) or `--no-setup`, or `--url mysql://root@host:4000/test`. Isolation: repeatable-read (snapshot isolation), read-committed"
            }
            DbKind::Yugabyte => {
                "YugabyteDB YSQL (PG wire, port 5433): `--nodes` with `--tarball` or `--no-setup`, or `--url postgres://yugabyte@host:5433/yugabyte`. Isolation: serializable, repeatable-read, read-committed"
            }
        }
    }

    /// The protocol family of its client.
    pub fn family(self) -> Family {
        match self {
            DbKind::Sqlite => Family::Sqlite,
            DbKind::Sim => Family::Sim,
            DbKind::Postgres | DbKind::Cockroach | DbKind::Yugabyte => Family::PgWire,
            DbKind::Galera | DbKind::Mariadb | DbKind::Tidb => Family::MysqlWire,
        }
    }

    /// Where it runs.
    pub fn placement(self) -> Placement {
        match self {
            DbKind::Sqlite | DbKind::Sim => Placement::Embedded,
            DbKind::Galera | DbKind::Mariadb => Placement::Nodes,
            DbKind::Postgres | DbKind::Cockroach | DbKind::Tidb | DbKind::Yugabyte => {
                Placement::UrlOrNodes
            }
        }
    }

    /// The `--isolation` values its adapter accepts (some map to another
    /// level the database really runs; the adapter says which).
    pub fn isolation_levels(self) -> &'static [Isolation] {
        use Isolation::*;
        match self {
            DbKind::Sim | DbKind::Postgres => &Isolation::ALL,
            DbKind::Sqlite => &[Serializable, SnapshotIsolation],
            DbKind::Galera | DbKind::Mariadb => {
                &[Serializable, RepeatableRead, ReadCommitted, ReadUncommitted]
            }
            DbKind::Cockroach => &[Serializable, ReadCommitted],
            DbKind::Tidb => &[SnapshotIsolation, RepeatableRead, ReadCommitted],
            DbKind::Yugabyte => &[
                Serializable,
                SnapshotIsolation,
                RepeatableRead,
                ReadCommitted,
            ],
        }
    }

    /// The SQL port it listens on by default (`None`: no server).
    pub fn default_port(self) -> Option<u16> {
        match self {
            DbKind::Sqlite | DbKind::Sim => None,
            DbKind::Postgres => Some(5432),
            DbKind::Galera | DbKind::Mariadb => Some(3306),
            DbKind::Cockroach => Some(crate::cockroach::DEFAULT_PORT),
            DbKind::Tidb => Some(crate::tidb::DEFAULT_PORT),
            DbKind::Yugabyte => Some(crate::yugabyte::DEFAULT_PORT),
        }
    }

    /// Fewest nodes it runs on (when on nodes).
    pub fn min_nodes(self) -> usize {
        match self {
            DbKind::Galera => 3,
            _ => 1,
        }
    }

    /// Most nodes it uses of those given (the rest are ignored).
    pub fn max_nodes(self) -> usize {
        match self {
            DbKind::Mariadb => 1,
            _ => usize::MAX,
        }
    }

    /// The log files kept from each of its nodes (empty: no nodes).
    pub fn log_files(self) -> &'static [NodeLog] {
        match self {
            DbKind::Sqlite | DbKind::Sim => &[],
            DbKind::Postgres => crate::pg_cluster::LOGS,
            DbKind::Galera | DbKind::Mariadb => crate::mysql::lifecycle::LOGS,
            DbKind::Cockroach => crate::cockroach::LOGS,
            DbKind::Tidb => crate::tidb::LOGS,
            DbKind::Yugabyte => crate::yugabyte::LOGS,
        }
    }

    /// Has a throwaway local server (`--local`; PostgreSQL also without
    /// `--url` and `--nodes`).
    pub fn has_local_server(self) -> bool {
        self == DbKind::Postgres
    }

    /// Its client can record the database's version order
    /// (`--version-order db`): PostgreSQL's visibility on a single server
    /// (not `on_nodes`), CockroachDB's and TiDB's commit timestamps,
    /// SQLite's commit order (at serializable, `check_settings`).
    pub fn records_version_order(self, on_nodes: bool) -> bool {
        match self {
            DbKind::Postgres => !on_nodes,
            DbKind::Cockroach | DbKind::Tidb | DbKind::Sqlite => true,
            _ => false,
        }
    }

    /// Runs range reads (`--workload predicate`).
    pub fn range_reads(self) -> bool {
        self != DbKind::Sim
    }

    /// Has bug modes (`--sim-bug`).
    pub fn has_bug_modes(self) -> bool {
        self == DbKind::Sim
    }

    /// Installed from a release tarball on `--nodes` (`--tarball`,
    /// `--no-setup`, `--db-port`, `--db-dir`, `--select-for-update`).
    pub fn is_tarball(self) -> bool {
        matches!(self, DbKind::Cockroach | DbKind::Tidb | DbKind::Yugabyte)
    }

    /// Its client's tables and statements, for `repro.sql`.
    pub fn dialect(self) -> SqlDialect {
        let pg = SqlDialect {
            family: SqlFamily::Postgres,
            tables: TxnTables::default(),
            for_update_flag: false,
            innodb: false,
            native: true,
        };
        match self {
            DbKind::Postgres => pg,
            DbKind::Sqlite | DbKind::Sim => SqlDialect {
                native: false,
                ..pg
            },
            DbKind::Cockroach => SqlDialect {
                for_update_flag: true,
                ..pg
            },
            DbKind::Yugabyte => SqlDialect {
                for_update_flag: true,
                tables: crate::yugabyte::TABLES,
                ..pg
            },
            DbKind::Galera | DbKind::Mariadb => SqlDialect {
                family: SqlFamily::Mysql,
                innodb: true,
                ..pg
            },
            DbKind::Tidb => SqlDialect {
                family: SqlFamily::Mysql,
                tables: crate::tidb::TABLES,
                for_update_flag: true,
                ..pg
            },
        }
    }
}

/// The `--db` names of the databases `keep` selects, in catalog order, as a
/// message lists them: `a, b and c`.
pub fn names_where(keep: impl Fn(DbKind) -> bool) -> String {
    let names: Vec<&str> = DbKind::ALL
        .into_iter()
        .filter(|&k| keep(k))
        .map(DbKind::name)
        .collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl fmt::Display for DbKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DbKind {
    type Err = String;

    /// Parses a `--db` value.
    ///
    /// # Errors
    /// Names the unknown database and lists the known ones.
    fn from_str(s: &str) -> Result<DbKind, String> {
        DbKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = DbKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown database {s:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for k in DbKind::ALL {
            assert_eq!(k.name().parse::<DbKind>().unwrap(), k);
        }
        let e = "oracle".parse::<DbKind>().unwrap_err();
        assert!(e.contains("\"oracle\"") && e.contains("yugabyte"), "{e}");
    }

    #[test]
    fn families_ports_and_dialects_agree() {
        for k in DbKind::ALL {
            let d = k.dialect();
            match k.family() {
                Family::PgWire => assert_eq!(d.family, SqlFamily::Postgres),
                Family::MysqlWire => assert_eq!(d.family, SqlFamily::Mysql),
                Family::Sqlite | Family::Sim => assert!(!d.native),
            }
            assert_eq!(
                k.default_port().is_none(),
                k.placement() == Placement::Embedded,
                "{k}"
            );
            assert!(!k.isolation_levels().is_empty());
        }
        assert_eq!(DbKind::Tidb.dialect().tables.table_count, 7);
        for k in DbKind::ALL {
            assert_eq!(
                k.log_files().is_empty(),
                k.placement() == Placement::Embedded,
                "{k}"
            );
        }
        assert_eq!(DbKind::Cockroach.default_port(), Some(26257));
    }
}
