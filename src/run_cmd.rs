//! `harness run`'s flags and their translation into the engine's typed
//! [`RunSpec`]; the run itself is `engine::run`.
//!
//! Key decision: this is the only file that knows `harness run`'s flags
//! as clap types. Names are parsed here (`FromStr` of each type), with the
//! flag in the message; checks that need several values together are the
//! engine's (`RunSpec::validate`), so soak, reproduce and `run` share them.
//! The `--db` and `--keep` values and their help come from the engine's
//! and the catalog's own lists.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
use db_adapters::catalog::DbKind;
use engine::report::{Keep, KeepItem};
use engine::spec::{
    Concurrency, Limits, NewSqlSpec, NodeSpec, RunSpec, SshSpec, WorkloadOverrides,
};
use std::path::PathBuf;
use std::time::Duration;

mod fault_args;
#[cfg(test)]
mod flag_matrix;
pub use fault_args::FaultArgs;

/// `harness run` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Database to test.
    #[arg(long, default_value = "sqlite", value_parser = db_values(), help_heading = "Database")]
    pub db: DbKind,
    /// Isolation level the database is asked for: serializable,
    /// snapshot-isolation, repeatable-read, read-committed, read-uncommitted
    /// (each database accepts some of them; `--db sim` all but
    /// repeatable-read).
    #[arg(
        long,
        short = 'i',
        default_value = "serializable",
        help_heading = "Database"
    )]
    pub isolation: String,
    /// Model the history must satisfy (any of Elle's model names, e.g.
    /// strong-serializable, serializable, snapshot-isolation,
    /// repeatable-read, read-committed). Default from --isolation:
    /// serializable → strong-serializable on one node (alias
    /// strict-serializable), serializable on several; other levels → the
    /// model of the same name.
    #[arg(long, help_heading = "Database")]
    pub expected_consistency_model: Option<String>,
    // Help from the catalog: the databases behind a URL and their schemes.
    #[arg(long, conflicts_with = "local", help = url_help(), help_heading = "Database")]
    pub url: Option<String>,
    // Help from the catalog: the databases with a local server.
    #[arg(long, help = local_help(), help_heading = "Database")]
    pub local: bool,
    /// Where the checker's version order comes from: `inferred` (black box,
    /// the default) or `db` (PostgreSQL: record each transaction's txid and
    /// snapshot and each read row's xmin; the checker orders every key's
    /// versions by the database's own visibility. CockroachDB, TiDB: record
    /// each transaction's commit timestamp; SQLite (serializable): its
    /// commit order from a clock row; the checker replays them in that
    /// order, as Enne does).
    #[arg(long, default_value = "inferred", value_parser = ["inferred", "db"], help_heading = "Database")]
    pub version_order: String,
    /// Simulator bug mode (with --db sim), replacing --isolation:
    /// retry-reapply (TiDB 2.1.7's auto-retry: lost updates), lost-update
    /// (overwrites concurrent writes), stale-read (serializable, not strict),
    /// non-monotonic-read (reads a random recent version: breaks read
    /// committed), torn-commit (a commit's keys become visible one by one:
    /// breaks read atomic), causal-gap (snapshots miss some commits of
    /// other sessions: breaks causal, not read atomic); with
    /// --sim-replicas: local-ack (a node cut off from the majority serves
    /// and acknowledges alone), lose-unsynced (a kill loses acknowledged
    /// writes not yet synced), skewed-read (reads by the node's own clock).
    #[arg(long, help_heading = "Database")]
    pub sim_bug: Option<String>,
    /// With --db sim: N simulated replicas (nodes s1…sN) in the process; a
    /// commit needs a majority; --nemesis partition, kill, pause (and the
    /// choreographies) act on them without root.
    #[arg(long, value_name = "N", help_heading = "Database")]
    pub sim_replicas: Option<usize>,
    /// The workload and its knobs.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Worker count: N, or Nn for N per node.
    #[arg(long, default_value = "10", help_heading = "Limits")]
    pub concurrency: String,
    /// Target rate in transactions per second over all workers (default: as
    /// fast as the database answers).
    #[arg(long, short = 'r', help_heading = "Limits")]
    pub rate: Option<f64>,
    /// Length of the main phase (e.g. 30s, 2m).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub time_limit: Duration,
    /// Stop the main phase after this many transactions.
    #[arg(long, help_heading = "Limits")]
    pub ops: Option<u64>,
    /// Per-transaction timeout; a transaction without an answer by then is `info`.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub op_timeout: Duration,
    /// Wait between healing faults and the final reads.
    #[arg(long, alias = "final-recovery-time", default_value = "0s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub recovery_time: Duration,
    /// Time the checker may spend searching for cycles before giving `unknown`.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    pub check_time_limit: Duration,
    /// Store root: runs go to <store>/runs/<test-name>/<timestamp>/, with
    /// <store>/runs/latest pointing at the newest.
    #[arg(long, default_value = ".", help_heading = "Output")]
    pub store: PathBuf,
    /// Test name (default: <db>-<workload>-<isolation>).
    #[arg(long, help_heading = "Output")]
    pub test_name: Option<String>,
    /// Also keep what a run leaves out by default, comma-separated: edn
    /// (history.edn), jsonl (history.jsonl uncompressed instead of
    /// history.jsonl.gz), timeline (every transaction, not a sample), all.
    #[arg(long, value_parser = keep_values(), value_delimiter = ',', help_heading = "Output")]
    pub keep: Vec<KeepItem>,
    /// Nodes and SSH (databases on nodes: galera, mariadb, postgres).
    #[command(flatten)]
    pub nodes: NodeArgs,
    /// Faults and the database lifecycle on nodes.
    #[command(flatten)]
    pub faults: FaultArgs,
    /// CockroachDB, TiDB and YugabyteDB flags.
    #[command(flatten)]
    pub newsql: NewSqlArgs,
}

/// Workload flags of `harness run`.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadArgs {
    /// Workload (the names `workloads::WORKLOADS` lists).
    #[arg(
        id = "workload",
        long = "workload",
        short = 'w',
        value_name = "WORKLOAD",
        default_value = "list-append",
        help = format!("Workload: {}", workloads::WorkloadKind::names_help(true))
    )]
    pub name: String,
    /// Seed of every random choice (default: from the clock; recorded in test.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Active keys at a time (Elle: 10).
    #[arg(long)]
    pub key_count: Option<usize>,
    /// Writes to a key before it retires (32).
    #[arg(long)]
    pub max_writes_per_key: Option<u64>,
    /// Fewest micro-ops per transaction (1).
    #[arg(long)]
    pub min_txn_length: Option<usize>,
    /// Most micro-ops per transaction (4).
    #[arg(long)]
    pub max_txn_length: Option<usize>,
    /// Probability that a micro-op is a read (0.5).
    #[arg(long)]
    pub read_ratio: Option<f64>,
}

impl WorkloadArgs {
    /// The overrides of the workload's defaults.
    fn overrides(&self) -> WorkloadOverrides {
        WorkloadOverrides {
            key_count: self.key_count,
            max_writes_per_key: self.max_writes_per_key,
            min_txn_length: self.min_txn_length,
            max_txn_length: self.max_txn_length,
            read_ratio: self.read_ratio,
        }
    }
}

/// Node and SSH flags (`harness run`, `harness nemesis heal`).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Nodes and SSH")]
pub struct NodeArgs {
    /// Database nodes: `n1,n2,…` (each `host` or `name=host`), or `testbed`
    /// (the local testbed with 3 nodes, rebuilt if another size is up),
    /// or `testbed:N`.
    #[arg(long, conflicts_with = "nodes_file")]
    pub nodes: Option<String>,
    /// File with one node per line (`host` or `name=host`; `#` comments).
    #[arg(long)]
    pub nodes_file: Option<PathBuf>,
    /// SSH login user; commands run through `sudo -n` unless it is root.
    #[arg(long, alias = "username", default_value = "root")]
    pub ssh_user: String,
    /// SSH private key (default: ssh's own defaults and agent).
    #[arg(long, alias = "ssh-private-key")]
    pub ssh_key: Option<PathBuf>,
    /// SSH port.
    #[arg(long, default_value_t = 22)]
    pub ssh_port: u16,
    /// Check host keys against known_hosts (off: any host key is accepted).
    #[arg(long)]
    pub ssh_strict_host_key_checking: bool,
}

/// Flags of `--db cockroach|tidb|yugabyte`.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "CockroachDB, TiDB and YugabyteDB")]
pub struct NewSqlArgs {
    // Help from the catalog: the tarball databases.
    #[arg(long, value_name = "PATH|URL", help = tarball_help())]
    pub tarball: Option<String>,
    /// The cluster already runs on --nodes (cockroach, tidb, yugabyte):
    /// no install, no teardown; clients connect to each node's SQL port.
    #[arg(long)]
    pub no_setup: bool,
    // Help from the catalog: the tarball databases' default ports.
    #[arg(long, value_name = "PORT", help = port_help())]
    pub db_port: Option<u16>,
    /// Directory on the nodes for releases, data and logs (default:
    /// /var/lib/harness/<db>).
    #[arg(long, value_name = "DIR")]
    pub db_dir: Option<String>,
    /// TiDB transaction mode: optimistic or pessimistic (default: the
    /// server's, pessimistic since TiDB 3.0.8).
    #[arg(long, value_name = "MODE")]
    pub txn_mode: Option<String>,
    /// TiDB automatic retry of optimistic transactions: on or off (sets
    /// tidb_disable_txn_auto_retry; off also sets tidb_retry_limit = 0).
    #[arg(long, value_name = "on|off")]
    pub auto_retry: Option<String>,
    /// TiDB tidb_retry_limit.
    #[arg(long, value_name = "N")]
    pub auto_retry_limit: Option<u32>,
    /// Reads lock the rows they read (SELECT … FOR UPDATE): cockroach, tidb,
    /// yugabyte.
    #[arg(long)]
    pub select_for_update: bool,
    /// TiDB roles per node: `pd=n1,n2,n3;tikv=n1,n2,n3;tidb=n4,n5`
    /// (default: every role on every node). Started pd → tikv → tidb.
    #[arg(long, value_name = "ROLES")]
    pub roles: Option<String>,
}

/// The databases the catalog's `keep` selects, as help lists them.
fn db_names(keep: impl Fn(DbKind) -> bool) -> String {
    db_adapters::catalog::names_where(keep)
}

/// `--url`'s help: each database behind a URL with its schemes.
fn url_help() -> String {
    let dbs: Vec<String> = DbKind::all()
        .filter(|k| !k.url_schemes().is_empty())
        .map(|k| format!("{} ({}://…)", k.name(), k.url_schemes().join("://…, ")))
        .collect();
    format!("URL of an existing server: {}", dbs.join(", "))
}

/// `--local`'s help.
fn local_help() -> String {
    format!(
        "Create a throwaway server with the installed binaries (--db {})",
        db_names(DbKind::has_local_server)
    )
}

/// `--tarball`'s help.
fn tarball_help() -> String {
    format!(
        "Release tarball to install on every node ({}): a local path (copied over SSH) or an http(s) URL (downloaded by each node). Unpacked once per node under --db-dir",
        db_names(DbKind::is_tarball)
    )
}

/// `--db-port`'s help.
fn port_help() -> String {
    let ports: Vec<String> = DbKind::all()
        .filter(|k| k.is_tarball())
        .filter_map(|k| Some(format!("{} {}", k.name(), k.default_port()?)))
        .collect();
    format!("SQL port on every node (default: {})", ports.join(", "))
}

/// `--db`'s values and their help, from the catalog.
fn db_values() -> impl clap::builder::TypedValueParser<Value = DbKind> {
    let values = DbKind::all().map(|k| {
        PossibleValue::new(k.name())
            .help(k.about())
            .aliases(k.aliases().iter().copied())
    });
    PossibleValuesParser::new(values).try_map(|s| s.parse::<DbKind>())
}

/// `--keep`'s values and their help.
fn keep_values() -> impl clap::builder::TypedValueParser<Value = KeepItem> {
    let values = KeepItem::ALL.map(|k| PossibleValue::new(k.name()).help(k.about()));
    PossibleValuesParser::new(values).try_map(|s| s.parse::<KeepItem>())
}

/// `--keep` for `analyze`, as for `run`.
pub fn keep_arg() -> impl clap::builder::TypedValueParser<Value = KeepItem> {
    keep_values()
}

/// Parses an optional name with `FromStr`, naming the flag on error.
fn parse_opt<T: std::str::FromStr>(flag: &str, v: Option<&str>) -> anyhow::Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    v.map(|s| s.parse::<T>().map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .transpose()
}

impl RunArgs {
    /// The typed spec of these flags (names parsed; cross-checks are
    /// [`RunSpec::validate`]'s).
    ///
    /// # Errors
    /// An unknown name, naming the flag.
    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
        let workload = self
            .workload
            .name
            .parse()
            .map_err(|e| anyhow::anyhow!("--workload: {e}"))?;
        let isolation = self
            .isolation
            .parse()
            .map_err(|e| anyhow::anyhow!("--isolation: {e}"))?;
        Ok(RunSpec {
            db: self.db,
            isolation,
            expected: parse_opt(
                "--expected-consistency-model",
                self.expected_consistency_model.as_deref(),
            )?,
            url: self.url.clone(),
            local: self.local,
            version_order: self.version_order.parse().map_err(anyhow::Error::msg)?,
            sim_bug: parse_opt("--sim-bug", self.sim_bug.as_deref())?,
            sim_replicas: self.sim_replicas,
            workload,
            workload_overrides: self.workload.overrides(),
            seed: self.workload.seed,
            concurrency: Concurrency::parse(&self.concurrency).map_err(anyhow::Error::msg)?,
            limits: Limits {
                rate: self.rate,
                time_limit: self.time_limit,
                ops: self.ops,
                op_timeout: self.op_timeout,
                recovery_time: self.recovery_time,
                check_time_limit: self.check_time_limit,
            },
            store: self.store.clone(),
            test_name: self.test_name.clone(),
            keep: Keep::from_items(&self.keep),
            nodes: self.nodes.to_spec(),
            faults: {
                let mut f = self.faults.to_spec()?;
                if self.faults.nemesis_interval.is_none() {
                    f.options.interval = engine::spec::default_nemesis_interval(self.db);
                }
                f
            },
            newsql: self.newsql.to_spec()?,
        })
    }
}

impl NodeArgs {
    /// The engine's node settings.
    pub fn to_spec(&self) -> NodeSpec {
        NodeSpec {
            nodes: self.nodes.clone(),
            nodes_file: self.nodes_file.clone(),
            ssh: SshSpec {
                user: self.ssh_user.clone(),
                key: self.ssh_key.clone(),
                port: self.ssh_port,
                strict_host_key_checking: self.ssh_strict_host_key_checking,
            },
        }
    }
}

impl NewSqlArgs {
    /// The engine's tarball-database settings.
    ///
    /// # Errors
    /// A bad `--txn-mode` or `--auto-retry`.
    pub fn to_spec(&self) -> anyhow::Result<NewSqlSpec> {
        Ok(NewSqlSpec {
            tarball: self.tarball.clone(),
            no_setup: self.no_setup,
            db_port: self.db_port,
            db_dir: self.db_dir.clone(),
            txn_mode: self
                .txn_mode
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(anyhow::Error::msg)?,
            auto_retry: self
                .auto_retry
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(anyhow::Error::msg)?,
            auto_retry_limit: self.auto_retry_limit,
            select_for_update: self.select_for_update,
            roles: self.roles.clone(),
        })
    }
}

/// Runs `harness run`, returning the exit code. `argv` is what followed
/// `run` on the command line (recorded in test.json for `reproduce`).
///
/// # Errors
/// Bad flags, or the run failed (not: the database failed to start, which
/// is exit 4).
pub fn run(args: RunArgs, argv: Vec<String>) -> anyhow::Result<u8> {
    let spec = args.to_spec()?;
    let build = engine::run::Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("HARNESS_GIT_COMMIT"),
    };
    engine::run::run(spec, argv, build)
}

/// `harness run`'s flags, for validating a flag list before anything runs.
#[derive(clap::Parser, Debug)]
#[command(name = "harness run", no_binary_name = true)]
struct RunOnly {
    #[command(flatten)]
    args: RunArgs,
}

/// Parses `flags` as `harness run` would.
///
/// # Errors
/// clap's message (unknown flag, bad value), on one line.
pub fn parse_run_flags(flags: &[String]) -> anyhow::Result<RunSpec> {
    use clap::Parser as _;
    let args = RunOnly::try_parse_from(flags)
        .map(|r| r.args)
        .map_err(|e| {
            let msg = e.render().to_string();
            let first = msg
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid flags")
                .trim_start_matches("error: ")
                .to_string();
            anyhow::anyhow!("{first} (flags: {})", flags.join(" "))
        })?;
    args.to_spec()
}

/// Parses `flags` and checks them as `harness run` would before starting
/// anything ([`RunSpec::validate`]).
///
/// # Errors
/// The first problem with the flags.
pub fn checked_run_flags(flags: &[String]) -> anyhow::Result<RunSpec> {
    let args = parse_run_flags(flags)?;
    args.validate()?;
    Ok(args)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn flag_lists_parse_as_run_does() {
        let f: Vec<String> = [
            "--db",
            "galera",
            "--nodes=testbed",
            "--ssh-user",
            "root",
            "--seed",
            "1",
        ]
        .map(String::from)
        .to_vec();
        assert!(parse_run_flags(&f).is_ok());
        let bad: Vec<String> = ["--db", "sim", "--colour", "red"]
            .map(String::from)
            .to_vec();
        let e = parse_run_flags(&bad).unwrap_err().to_string();
        assert!(e.contains("--colour"), "{e}");
    }
}
