//! The [`Database`] trait: every question the engine and the CLI ask about
//! a database, answered by one implementation in the database's own module
//! (`postgres/database.rs`, `tidb/database.rs`, …) and listed once in
//! [`super::DATABASES`].
//!
//! Key decisions:
//! * Every method is required and the answer types have no `Default`:
//!   a database that does not answer a question (or a field of
//!   [`Capabilities`]) does not compile. There is no enum of databases, so
//!   there is no `match` with a wildcard arm that could quietly treat a new
//!   database as an old one.
//! * SQL is a capability, not an assumption: [`Database::dialect`] is
//!   `None` for a database without SQL statements (the simulator; a
//!   key-value store), and [`Database::supports`] says which workloads its
//!   clients run.
//! * The methods that open a database ([`Database::client_factory`],
//!   [`Database::lifecycle`], [`Database::start_local`]) return an error
//!   naming the database where it has no such way; the shared checks they
//!   build on are in `open.rs`.

use super::open::{DbSettings, LocalServer, OnNodes, OpenError};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::sql::{Isolation, TxnTables};
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::WorkloadKind;

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

/// How many of `--nodes` a database runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCount {
    /// Fewest nodes it runs on (when on nodes).
    pub min: usize,
    /// Most nodes it uses of those given (the rest are ignored).
    pub max: usize,
}

impl NodeCount {
    /// One node or more, all used.
    pub const ANY: NodeCount = NodeCount {
        min: 1,
        max: usize::MAX,
    };
}

/// What a database can do beyond running transactions. A struct literal
/// without `Default`: a new field is a question every database answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Runs range reads (`--workload predicate`).
    pub range_reads: bool,
    /// Has bug modes (`--sim-bug`).
    pub bug_modes: bool,
    /// Installed from a release tarball on `--nodes` (`--tarball`,
    /// `--no-setup`, `--db-port`, `--db-dir`, `--select-for-update`).
    pub tarball: bool,
    /// Has a throwaway local server (`--local`; also without `--url` and
    /// `--nodes`): [`Database::start_local`] starts it.
    pub local_server: bool,
    /// On nodes, one primary serves writes and the others are read
    /// replicas (`--replica-reads`).
    pub replicas: bool,
    /// On nodes, its data directories can live on the lossy filesystem
    /// (`--lazyfs`) and it takes extra server settings (`--db-conf`).
    pub lossy_data_dir: bool,
    /// On nodes, a node can leave the cluster and join it again
    /// (`--nemesis membership`): its lifecycle's `Db::membership`.
    pub membership: bool,
    /// Whether clock faults (`--nemesis clock`) can reach it.
    pub clock_faults: ClockFaults,
    /// The main phase's transaction limit when `--ops` is not given, for
    /// the default 30 s `--time-limit` (the engine grows it in proportion
    /// to a longer one; `None`: only `--time-limit` bounds it).
    pub default_ops: Option<u64>,
}

/// Whether a database's clock can be faulted: its server started by
/// harness under libfaketime (`nemesis::clock`), or not, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockFaults {
    /// harness starts its server (`--local` or `--nodes`) under
    /// libfaketime when `--nemesis clock` is asked for.
    Libfaketime,
    /// Simulated: with `--sim-replicas` each simulated node has a clock
    /// offset the nemesis sets in process (no preload, no root).
    Simulated,
    /// Not possible: the reason, as `--nemesis clock` reports it.
    No(&'static str),
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
/// a replay (`elle/repro.sql`) needs it.
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
    /// The database runs these statements itself (false: SQLite, whose
    /// cycles are replayed on PostgreSQL).
    pub native: bool,
}

impl SqlDialect {
    /// PostgreSQL's statements on the default three tables.
    pub const POSTGRES: SqlDialect = SqlDialect {
        family: SqlFamily::Postgres,
        tables: TxnTables::DEFAULT,
        for_update_flag: false,
        innodb: false,
        native: true,
    };

    /// MariaDB's statements (InnoDB tables) on the default three tables.
    pub const MYSQL: SqlDialect = SqlDialect {
        family: SqlFamily::Mysql,
        innodb: true,
        ..SqlDialect::POSTGRES
    };
}

/// One database harness tests: its entry in [`super::DATABASES`]. Every
/// method is a question the engine or the CLI asks; all are required.
pub trait Database: Send + Sync + 'static {
    /// The `--db` spelling (also what `test.json` records as `config.db`).
    fn name(&self) -> &'static str;

    /// Other `--db` spellings that select it.
    fn aliases(&self) -> &'static [&'static str];

    /// The help line of its `--db` value.
    fn about(&self) -> &'static str;

    /// The `--url` schemes its client connects with (empty: no `--url`).
    fn url_schemes(&self) -> &'static [&'static str];

    /// Where it runs.
    fn placement(&self) -> Placement;

    /// How many of `--nodes` it runs on.
    fn node_count(&self) -> NodeCount;

    /// The client port it listens on by default (`None`: no server).
    fn default_port(&self) -> Option<u16>;

    /// The log files kept from each of its nodes (empty: no nodes).
    fn log_files(&self) -> &'static [NodeLog];

    /// The `--isolation` values its adapter accepts (some map to another
    /// level the database really runs; `check_settings` says which).
    fn isolation_levels(&self) -> &'static [Isolation];

    /// Its client's SQL, for `elle/repro.sql` (`None`: no SQL).
    fn dialect(&self) -> Option<SqlDialect>;

    /// What it can do beyond transactions.
    fn capabilities(&self) -> Capabilities;

    /// Its client can record the database's version order
    /// (`--version-order db`); `on_nodes`: with `--nodes`.
    fn records_version_order(&self, on_nodes: bool) -> bool;

    /// Its clients run workload `w` (`on_nodes`: with `--nodes`).
    fn supports(&self, w: WorkloadKind, on_nodes: bool) -> bool;

    /// Checks the settings before anything starts (exit 3 on error) and
    /// returns the level the database will run (`nodes`: `--nodes`).
    ///
    /// # Errors
    /// A flag that does not apply, a bad value, a level the database does
    /// not run, a missing way to reach it.
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String>;

    /// The nodes workers connect to among the database's `nodes`.
    ///
    /// # Errors
    /// A bad setting naming nodes (TiDB's `--roles`).
    fn client_nodes(&self, newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String>;

    /// The client factory of the database not on nodes: embedded, or
    /// behind `url` (`--url`, or a local server's).
    ///
    /// # Errors
    /// A bad URL or setting; a database that runs on nodes only.
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String>;

    /// The lifecycle on `remotes`' nodes (connected already) and its
    /// clients' factory.
    ///
    /// # Errors
    /// A setting that does not fit (`Spec`), or a topology the database
    /// cannot serve from (`Setup`); a database that does not run on nodes.
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError>;

    /// Starts a throwaway server in the run directory `s.dir`
    /// (`Capabilities::local_server`), under libfaketime when `s.clock`.
    ///
    /// # Errors
    /// The server could not start; a database without a local server.
    fn start_local(
        &self,
        s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>>;
}
