//! The catalog of databases harness tests: the [`DATABASES`] table, one
//! [`Database`] implementation per `--db` value, and [`DbKind`], the handle
//! the engine and the CLI pass around. Everything harness needs to know
//! about a database — its names and help line, where it runs and on how
//! many nodes, the isolation levels its adapter accepts, its SQL dialect or
//! none, the workloads its clients run, its capabilities, how it becomes a
//! client factory and a lifecycle — is a method of its entry
//! (`database.rs` declares them), implemented in the database's own module.
//!
//! Key decision: this table is the only list of databases, like the
//! checker's `ANALYSES`. The CLI's `--db` values and help, the run planner,
//! the engine's wiring, `repro.sql`'s dialect and the README's table all
//! read it; adding a database is its module (with a `database.rs` holding
//! its entry) plus one line here. Outside the table's own tests no code
//! names a database kind: there is no enum to match on.
//!
//! Adding a database (the whole diff):
//! * `src/<db>/mod.rs` and its client and lifecycle files, and
//!   `src/<db>/database.rs` with `pub struct <Db>;` and
//!   `impl Database for <Db>` (every method; the compiler lists the
//!   missing ones; a key-value store answers `dialect` with `None` and
//!   `supports` with the workloads its client runs); a database installed
//!   from a release tarball writes `impl tarball::Recipe for <Db>` instead
//!   (only what differs; `tarball/mod.rs` answers the rest);
//! * `pub mod <db>;` in `lib.rs`, and `&crate::<db>::<Db>,` in
//!   [`DATABASES`] (its place is its `--help` order);
//! * its row in `tests.rs`' `the_table_answers_as_written` and
//!   `workloads_per_database`, and its name in the README's `harness run`
//!   row (`tests/catalog.rs` checks both lists).
//!
//! Nothing in the engine or the CLI changes: `--db`'s values and the help
//! of `--url`, `--local`, `--tarball` and `--db-port` are generated.
//!
//! Invariant: names and aliases are unique and each parses to its entry
//! (`tests.rs`); every `impl Database` (or `impl Recipe`) is in its
//! database's own `database.rs` and in the table once (`tests/catalog.rs`); no `match`
//! in the workspace picks out databases with a wildcard arm (the root's
//! `tests/db_catalog.rs`, which also checks `--help` lists the table).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::str::FromStr;

mod database;
mod open;

pub use database::{
    Capabilities, ClockFaults, Database, NodeCount, Placement, SqlDialect, SqlFamily,
};
pub use open::{
    DbSettings, LocalServer, OnNodes, OpenError, check_reach_and_flags, no_local_server,
    not_on_nodes,
};

/// Every database, in `--help` order.
pub static DATABASES: &[&dyn Database] = &[
    &crate::sqlite::Sqlite,
    &crate::sim::Sim,
    &crate::postgres::Postgres,
    &crate::mysql::Galera,
    &crate::mysql::Mariadb,
    &crate::cockroach::Cockroach,
    &crate::tidb::Tidb,
    &crate::yugabyte::Yugabyte,
    &crate::etcd::Etcd,
    &crate::patroni::Patroni,
];

/// Which database to test (`--db`): a handle on its [`DATABASES`] entry.
/// Dereferences to the entry, so `db.placement()` asks it.
#[derive(Clone, Copy)]
pub struct DbKind(&'static dyn Database);

impl DbKind {
    /// Every database, in `--help` order.
    pub fn all() -> impl Iterator<Item = DbKind> {
        DATABASES.iter().map(|&d| DbKind(d))
    }

    /// The database named (or aliased) `name`.
    pub fn lookup(name: &str) -> Option<DbKind> {
        DbKind::all().find(|k| k.name() == name || k.aliases().contains(&name))
    }

    /// Has a throwaway local server (`--local`).
    pub fn has_local_server(self) -> bool {
        self.capabilities().local_server
    }

    /// Installed from a release tarball on `--nodes`.
    pub fn is_tarball(self) -> bool {
        self.capabilities().tarball
    }

    /// Runs range reads (`--workload predicate`).
    pub fn range_reads(self) -> bool {
        self.capabilities().range_reads
    }

    /// Has bug modes (`--sim-bug`).
    pub fn has_bug_modes(self) -> bool {
        self.capabilities().bug_modes
    }

    /// Fewest nodes it runs on (when on nodes).
    pub fn min_nodes(self) -> usize {
        self.node_count().min
    }

    /// Most nodes it uses of those given.
    pub fn max_nodes(self) -> usize {
        self.node_count().max
    }
}

impl Deref for DbKind {
    type Target = dyn Database;

    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for DbKind {
    fn eq(&self, other: &DbKind) -> bool {
        self.name() == other.name()
    }
}

impl Eq for DbKind {}

impl Hash for DbKind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for DbKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbKind({})", self.name())
    }
}

impl fmt::Display for DbKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `--db` names of the databases `keep` selects, in catalog order, as a
/// message lists them: `a, b and c`.
pub fn names_where(keep: impl Fn(DbKind) -> bool) -> String {
    let names: Vec<&str> = DbKind::all()
        .filter(|&k| keep(k))
        .map(|k| k.name())
        .collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl FromStr for DbKind {
    type Err = String;

    /// Parses a `--db` value (a name or an alias).
    ///
    /// # Errors
    /// Names the unknown database and lists the known ones.
    fn from_str(s: &str) -> Result<DbKind, String> {
        DbKind::lookup(s).ok_or_else(|| {
            let names: Vec<&str> = DbKind::all().map(|k| k.name()).collect();
            format!(
                "unknown database {s:?}; expected one of {}",
                names.join(", ")
            )
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
