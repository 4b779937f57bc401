//! `harness run`: one test, end to end — generate transactions, run them
//! against a database from concurrent clients, record the history, check
//! it, print the verdict.
//!
//! Results go to `<store>/runs/<test-name>/<timestamp>/` (`test.json`,
//! `history.jsonl` while running, compressed to `history.jsonl.gz` at the
//! end, `results.json`, `harness.log`, reports, database files) with
//! `<store>/runs/latest` pointing at the newest run.
//!
//! Exit codes: 0 valid, 1 invalid, 2 unknown, 3 harness error or bad flag,
//! 4 setup failed (the database could not be started or reached).
//!
//! `--db sim`: the simulator's behaviour is `--isolation` (serializable,
//! snapshot-isolation, repeatable-read, read-committed, read-uncommitted)
//! unless `--sim-bug` names a bug mode (e.g. `retry-reapply`, `non-monotonic-read`, `torn-commit`,
//! `causal-gap`, `lost-update`), which then replaces it.

#[path = "newsql_db.rs"]
pub mod newsql_db;

use crate::exit;
use crate::runner::{self, HistorySink, RunnerConfig, progress};
use anyhow::{Context as _, bail};
use checker::model::ConsistencyModel;
use checker::result::Valid;
use db_adapters::client::ClientFactory;
use db_adapters::postgres::PgFactory;
use db_adapters::postgres::local::LocalCluster;
use db_adapters::sql::{DataModel, Isolation};
use db_adapters::sqlite::SqliteFactory;
use nemesis::Node;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use store::{MicroOp, OpIndex, OpType, OpValue};
use workloads::{WorkloadConfig, WorkloadKind};

/// Version of the `test.json` layout.
const TEST_JSON_SCHEMA_VERSION: u32 = 1;

/// Which database to test.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbKind {
    /// Embedded SQLite (compiled in; the default).
    Sqlite,
    /// The in-memory simulator with selectable isolation and bugs.
    Sim,
    /// PostgreSQL (`--url` to a server, or `--local` for a throwaway cluster,
    /// or `--nodes` for a primary + streaming replicas on nodes).
    Postgres,
    /// MariaDB Galera on 3+ `--nodes`.
    Galera,
    /// One MariaDB server on the first of `--nodes`.
    Mariadb,
    /// CockroachDB (PG wire, port 26257): `--nodes` with `--tarball` or
    /// `--no-setup`, or `--url postgres://root@host:26257/defaultdb`.
    /// Isolation: serializable, read-committed.
    Cockroach,
    /// TiDB (MySQL wire, port 4000): `--nodes` with `--tarball` (roles from
    /// `--roles`) or `--no-setup`, or `--url mysql://root@host:4000/test`.
    /// Isolation: repeatable-read (snapshot isolation), read-committed.
    Tidb,
    /// YugabyteDB YSQL (PG wire, port 5433): `--nodes` with `--tarball` or
    /// `--no-setup`, or `--url postgres://yugabyte@host:5433/yugabyte`.
    /// Isolation: serializable, repeatable-read, read-committed.
    Yugabyte,
}

impl DbKind {
    fn name(self) -> &'static str {
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

    /// The tarball-installed distributed SQL databases.
    pub fn newsql(self) -> Option<newsql_db::Kind> {
        match self {
            DbKind::Cockroach => Some(newsql_db::Kind::Cockroach),
            DbKind::Tidb => Some(newsql_db::Kind::Tidb),
            DbKind::Yugabyte => Some(newsql_db::Kind::Yugabyte),
            _ => None,
        }
    }
}

/// `harness run` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Database to test.
    #[arg(long, value_enum, default_value = "sqlite", help_heading = "Database")]
    pub db: DbKind,
    /// Isolation level the database is asked for: serializable,
    /// snapshot-isolation, repeatable-read, read-committed, read-uncommitted
    /// (each database accepts some of them; `--db sim` all five).
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
    /// URL of an existing server: postgres (postgres://user@host:port/db),
    /// cockroach and yugabyte (postgres://…), tidb (mysql://user@host:4000/db).
    #[arg(long, conflicts_with = "local", help_heading = "Database")]
    pub url: Option<String>,
    /// Create a throwaway PostgreSQL cluster with the installed binaries.
    #[arg(long, help_heading = "Database")]
    pub local: bool,
    /// Where the checker's version order comes from: `inferred` (black box,
    /// the default) or `db` (PostgreSQL: record each transaction's txid and
    /// snapshot and each read row's xmin; the checker orders every key's
    /// versions by the database's own visibility).
    #[arg(long, default_value = "inferred", value_parser = ["inferred", "db"], help_heading = "Database")]
    pub version_order: String,
    /// Simulator bug mode (with --db sim), replacing --isolation:
    /// retry-reapply (TiDB 2.1.7's auto-retry: lost updates), lost-update
    /// (overwrites concurrent writes), stale-read (serializable, not strict),
    /// non-monotonic-read (reads a random recent version: breaks read
    /// committed), torn-commit (a commit's keys become visible one by one:
    /// breaks read atomic), causal-gap (snapshots miss some commits of
    /// other sessions: breaks causal, not read atomic).
    #[arg(long, help_heading = "Database")]
    pub sim_bug: Option<String>,
    /// Workload: list-append (alias append) or rw-register (alias wr).
    #[arg(
        long,
        short = 'w',
        default_value = "list-append",
        help_heading = "Workload"
    )]
    pub workload: String,
    /// Seed of every random choice (default: from the clock; recorded in test.json).
    #[arg(long, help_heading = "Workload")]
    pub seed: Option<u64>,
    /// Active keys at a time (Elle: 10).
    #[arg(long, help_heading = "Workload")]
    pub key_count: Option<usize>,
    /// Writes to a key before it retires (32).
    #[arg(long, help_heading = "Workload")]
    pub max_writes_per_key: Option<u64>,
    /// Fewest micro-ops per transaction (1).
    #[arg(long, help_heading = "Workload")]
    pub min_txn_length: Option<usize>,
    /// Most micro-ops per transaction (4).
    #[arg(long, help_heading = "Workload")]
    pub max_txn_length: Option<usize>,
    /// Probability that a micro-op is a read (0.5).
    #[arg(long, help_heading = "Workload")]
    pub read_ratio: Option<f64>,
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
    #[arg(long, value_enum, value_delimiter = ',', help_heading = "Output")]
    pub keep: Vec<crate::report::KeepItem>,
    /// Nodes and SSH (databases on nodes: galera, mariadb, postgres).
    #[command(flatten)]
    pub nodes: crate::nemesis_task::NodeArgs,
    /// Faults and the database lifecycle on nodes.
    #[command(flatten)]
    pub faults: crate::nemesis_task::FaultArgs,
    /// CockroachDB, TiDB and YugabyteDB flags.
    #[command(flatten)]
    pub newsql: newsql_db::NewSqlArgs,
}

/// The validated configuration of a run.
struct Plan {
    db: DbKind,
    workload: WorkloadKind,
    isolation: Isolation,
    expected: ConsistencyModel,
    wcfg: WorkloadConfig,
    concurrency: usize,
    nodes: Vec<Node>,
    seed: u64,
    test_name: String,
}

/// Checks `args` as `harness run` would before starting anything (no IO
/// beyond reading a `--nodes-file`).
///
/// # Errors
/// The first problem with the flags.
pub fn validate(args: &RunArgs) -> anyhow::Result<()> {
    plan(args).map(|_| ())
}

fn plan(args: &RunArgs) -> anyhow::Result<Plan> {
    let workload =
        WorkloadKind::parse(&args.workload).map_err(|e| anyhow::anyhow!("--workload: {e}"))?;
    let isolation =
        Isolation::parse(&args.isolation).map_err(|e| anyhow::anyhow!("--isolation: {e}"))?;
    // Databases on nodes (galera, mariadb, postgres with --nodes).
    let nodes = crate::nemesis_task::plan_nodes(args)?.unwrap_or_else(|| vec![Node::local()]);
    let expected = match &args.expected_consistency_model {
        Some(m) => ConsistencyModel::parse(m)
            .map_err(|e| anyhow::anyhow!("--expected-consistency-model: {e}"))?,
        None => default_model(isolation, nodes.len()),
    };
    let mut wcfg = WorkloadConfig::default();
    if let Some(v) = args.key_count {
        wcfg.key_count = v;
    }
    if let Some(v) = args.max_writes_per_key {
        wcfg.max_writes_per_key = v;
    }
    if let Some(v) = args.min_txn_length {
        wcfg.min_txn_length = v;
    }
    if let Some(v) = args.max_txn_length {
        wcfg.max_txn_length = v;
    }
    if let Some(v) = args.read_ratio {
        wcfg.read_ratio = v;
    }
    wcfg.validate()?;
    let concurrency = parse_concurrency(&args.concurrency, nodes.len())?;
    if let Some(r) = args.rate
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--rate must be a positive number of transactions per second, got {r}");
    }
    if args.op_timeout.is_zero() {
        bail!("--op-timeout must be greater than zero");
    }
    if args.time_limit.is_zero() {
        bail!("--time-limit must be greater than zero");
    }
    if args.version_order == "db" && (args.db != DbKind::Postgres || args.nodes.is_set()) {
        bail!(
            "--version-order db: only single-server PostgreSQL (--url or --local) records its version order"
        );
    }
    if workload == WorkloadKind::Predicate && args.db == DbKind::Sim {
        bail!("--workload predicate: the simulator does not model range reads; use a SQL database");
    }
    match args.db {
        DbKind::Postgres => {
            if args.url.is_none() && !args.local && !args.nodes.is_set() {
                bail!("--db postgres needs --url postgres://… or --local");
            }
        }
        DbKind::Cockroach | DbKind::Tidb | DbKind::Yugabyte => {
            if args.local {
                bail!("--local applies to --db postgres only");
            }
        }
        _ => {
            if args.url.is_some() || args.local {
                bail!(
                    "--url applies to --db postgres, cockroach, tidb and yugabyte; --local to postgres only"
                );
            }
        }
    }
    let all_nodes = args.nodes.planned_nodes()?;
    let isolation = newsql_db::validate(
        args.db.newsql(),
        &args.newsql,
        args.url.as_deref(),
        all_nodes.as_deref(),
        isolation,
    )?;
    // TiDB's and YSQL's REPEATABLE READ is snapshot isolation (write skew
    // allowed): check it as such unless told otherwise.
    let expected = if args.db.newsql().is_some()
        && args.expected_consistency_model.is_none()
        && isolation == Isolation::RepeatableRead
    {
        ConsistencyModel::SnapshotIsolation
    } else {
        expected
    };
    if args.sim_bug.is_some() && args.db != DbKind::Sim {
        bail!("--sim-bug applies to --db sim only");
    }
    // A bug mode is checked against what the buggy database claimed.
    let expected = match &args.sim_bug {
        Some(_) if args.expected_consistency_model.is_none() => {
            let claimed = sim_mode(args, isolation)?.claimed_model();
            ConsistencyModel::parse(claimed)
                .map_err(|e| anyhow::anyhow!("--sim-bug: claimed model: {e}"))?
        }
        _ => expected,
    };
    if args.db == DbKind::Sqlite {
        // Reject before anything is created (exit 3).
        SqliteFactory::new(
            "unused",
            isolation,
            DataModel::ListAppend,
            Duration::from_secs(1),
        )?;
    }
    if args.db == DbKind::Sim {
        sim_mode(args, isolation)?;
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    let test_name = match &args.test_name {
        Some(n) => {
            if n.is_empty()
                || n == "latest"
                || n.starts_with('.')
                || !n
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
            {
                bail!(
                    "--test-name {n:?}: use letters, digits, '-', '_', '.', '+' (not starting with '.', not \"latest\")"
                );
            }
            n.clone()
        }
        None => {
            let level = args
                .sim_bug
                .clone()
                .unwrap_or_else(|| isolation.name().to_string());
            format!("{}-{}-{}", args.db.name(), workload.name(), level)
        }
    };
    Ok(Plan {
        db: args.db,
        workload,
        isolation,
        expected,
        wcfg,
        concurrency,
        nodes,
        seed,
        test_name,
    })
}

/// A seed from the clock (nanoseconds since the epoch), when none is given.
pub fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// ARCHITECTURE.md "Expected model": what `--isolation` claims.
fn default_model(isolation: Isolation, node_count: usize) -> ConsistencyModel {
    match isolation {
        Isolation::Serializable if node_count == 1 => ConsistencyModel::StrictSerializable,
        Isolation::Serializable => ConsistencyModel::Serializable,
        Isolation::SnapshotIsolation => ConsistencyModel::SnapshotIsolation,
        Isolation::RepeatableRead => ConsistencyModel::RepeatableRead,
        Isolation::ReadCommitted => ConsistencyModel::ReadCommitted,
        Isolation::ReadUncommitted => ConsistencyModel::ReadUncommitted,
    }
}

fn parse_concurrency(s: &str, nodes: usize) -> anyhow::Result<usize> {
    let (num, per_node) = match s.strip_suffix('n') {
        Some(n) => (n, true),
        None => (s, false),
    };
    let n: usize = num
        .parse()
        .map_err(|_| anyhow::anyhow!("--concurrency {s:?}: expected N or Nn (N per node)"))?;
    let n = if per_node { n * nodes } else { n };
    if n == 0 || n > 10_000 {
        bail!("--concurrency {s:?}: must be between 1 and 10000 workers");
    }
    Ok(n)
}

fn sim_mode(args: &RunArgs, isolation: Isolation) -> anyhow::Result<db_adapters::sim::SimMode> {
    let name = args
        .sim_bug
        .clone()
        .unwrap_or_else(|| isolation.name().to_string());
    db_adapters::sim::SimMode::parse(&name).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}",
            if args.sim_bug.is_some() {
                "--sim-bug"
            } else {
                "--isolation (for --db sim)"
            }
        )
    })
}

fn data_model(w: WorkloadKind) -> DataModel {
    match w {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => DataModel::ListAppend,
        WorkloadKind::RwRegister => DataModel::RwRegister,
    }
}

fn checker_workload(w: WorkloadKind) -> checker::analysis::Workload {
    match w {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => {
            checker::analysis::Workload::ListAppend
        }
        WorkloadKind::RwRegister => checker::analysis::Workload::RwRegister,
    }
}

impl HistorySink for store::run::HistoryLog {
    fn append(&mut self, op: store::Op) -> anyhow::Result<OpIndex> {
        Ok(store::run::HistoryLog::append(self, op)?)
    }
}

/// The flags of `harness run` as given (`argv` after `run`) made
/// reproducible: without `--store` (a re-run chooses its own) and with the
/// seed the run used, so the same flags re-issue the same invocations.
pub fn reproducible_flags(argv: &[String], seed: u64) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len() + 2);
    let mut skip_value = false;
    for a in argv {
        if skip_value {
            skip_value = false;
            continue;
        }
        if a == "--store" || a == "--seed" {
            skip_value = true;
            continue;
        }
        if a.starts_with("--store=") || a.starts_with("--seed=") {
            continue;
        }
        out.push(a.clone());
    }
    out.push("--seed".to_string());
    out.push(seed.to_string());
    out
}

/// Runs `harness run`, returning the exit code. `argv` is what followed
/// `run` on the command line (recorded in test.json for `reproduce`).
pub fn run(args: RunArgs, argv: Vec<String>) -> anyhow::Result<u8> {
    let plan = plan(&args)?;
    let run_dir = store::run::RunDir::create(&args.store, &plan.test_name)
        .with_context(|| format!("creating a run directory under {}", args.store.display()))?;
    init_tracing(&run_dir.log_path());
    let started_at = SystemTime::now();
    let mut meta = test_json(&args, &plan, &run_dir, started_at);
    meta["run_flags"] = json!(reproducible_flags(&argv, plan.seed));
    write_json(&run_dir.test_json_path(), &meta)?;
    let header = header(&args, &plan);
    println!("{header}\nrun directory: {}", run_dir.path().display());
    tracing::info!("{header}");
    tracing::info!("run directory {}", run_dir.path().display());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = rt.block_on(execute(&args, &plan, &run_dir));
    let ended_at = SystemTime::now();
    meta["end_time"] = json!(humantime::format_rfc3339_millis(ended_at).to_string());
    let code = match outcome {
        Ok(Outcome::SetupFailed(msg)) => {
            meta["setup_error"] = json!(msg);
            write_json(&run_dir.test_json_path(), &meta)?;
            eprintln!("error: setup failed: {msg}");
            eprintln!("run directory: {}", run_dir.path().display());
            return Ok(exit::SETUP_FAILED);
        }
        Ok(Outcome::Ran(summary)) => summary,
        Err(e) => {
            meta["error"] = json!(format!("{e:#}"));
            write_json(&run_dir.test_json_path(), &meta)?;
            eprintln!("run directory: {}", run_dir.path().display());
            return Err(e);
        }
    };
    meta["summary"] = serde_json::to_value(&code).unwrap_or_default();
    write_json(&run_dir.test_json_path(), &meta)?;
    println!("{}", phase_lines(&code));
    let keep = crate::report::Keep::from_items(&args.keep);
    let verdict = check_and_report(&args, &plan, &run_dir, keep)?;
    if !keep.jsonl {
        match run_dir.compress_history() {
            Ok((raw, packed)) => println!(
                "history: {} ({} MB, compressed from {} MB; --keep jsonl keeps it plain)",
                run_dir.history_gz_path().display(),
                mb(packed),
                mb(raw)
            ),
            Err(e) => eprintln!("warning: history left uncompressed: {e}"),
        }
    }
    meta["verdict"] = json!(verdict.as_str());
    write_json(&run_dir.test_json_path(), &meta)?;
    Ok(match verdict {
        Valid::True => exit::VALID,
        Valid::False => exit::INVALID,
        Valid::Unknown => exit::UNKNOWN,
    })
}

enum Outcome {
    SetupFailed(String),
    Ran(runner::RunSummary),
}

async fn execute(
    args: &RunArgs,
    plan: &Plan,
    run_dir: &store::run::RunDir,
) -> anyhow::Result<Outcome> {
    let model = data_model(plan.workload);
    let mut cluster: Option<LocalCluster> = None;
    let mut on_nodes: Option<crate::nemesis_task::Cluster> = None;
    let mut sqlite: Option<SqliteFactory> = None;
    let factory: Arc<dyn ClientFactory> = match plan.db {
        DbKind::Sqlite => Arc::new(
            sqlite
                .insert(SqliteFactory::new(
                    run_dir.path().join("sqlite.db"),
                    plan.isolation,
                    model,
                    // Below the op timeout, so a busy wait ends as a definite fail.
                    (args.op_timeout / 2).min(Duration::from_secs(2)),
                )?)
                .clone(),
        ),
        DbKind::Sim => Arc::new(db_adapters::sim::SimFactory::new(
            sim_mode(args, plan.isolation)?,
            plan.seed,
        )),
        DbKind::Galera | DbKind::Mariadb => {
            match crate::nemesis_task::open_cluster(args, plan.isolation, model, run_dir.path())
                .await
            {
                Ok(c) => on_nodes.insert(c).factory.clone(),
                Err(e) => return Ok(Outcome::SetupFailed(format!("{e:#}"))),
            }
        }
        DbKind::Cockroach | DbKind::Tidb | DbKind::Yugabyte => {
            match open_newsql(args, plan, model, run_dir).await? {
                Ok((factory, cluster)) => {
                    if let Some(c) = cluster {
                        on_nodes = Some(c);
                    }
                    factory
                }
                Err(msg) => return Ok(Outcome::SetupFailed(msg)),
            }
        }
        DbKind::Postgres if args.nodes.is_set() => {
            match crate::nemesis_task::open_cluster(args, plan.isolation, model, run_dir.path())
                .await
            {
                Ok(c) => on_nodes.insert(c).factory.clone(),
                Err(e) => return Ok(Outcome::SetupFailed(format!("{e:#}"))),
            }
        }
        DbKind::Postgres => {
            let url = match (&args.url, args.local) {
                (Some(u), _) => u.clone(),
                (None, _) => match LocalCluster::start(run_dir.path()).await {
                    Ok(c) => {
                        let url = c.url();
                        cluster = Some(c);
                        url
                    }
                    Err(e) => return Ok(Outcome::SetupFailed(format!("local PostgreSQL: {e}"))),
                },
            };
            let f = PgFactory::new(&url, plan.isolation, model)?;
            Arc::new(if args.version_order == "db" {
                f.with_version_order_db()
            } else {
                f
            })
        }
    };
    let outcome = run_with(args, plan, run_dir, factory, on_nodes.as_ref()).await;
    if let Some(f) = sqlite
        && let Err(e) = tokio::task::spawn_blocking(move || f.checkpoint())
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.message))
    {
        tracing::warn!("sqlite checkpoint: {e}");
    }
    if let Some(c) = on_nodes {
        c.finish(run_dir.path()).await;
    }
    if let Some(c) = cluster
        && let Err(e) = c.stop().await
    {
        tracing::warn!("stopping local PostgreSQL: {e}");
    }
    outcome
}

/// `--db cockroach|tidb|yugabyte`: the client factory, and on `--nodes` the
/// cluster (installed from `--tarball`, or running already with `--no-setup`
/// or `--url`). The inner error is a setup failure (exit 4).
async fn open_newsql(
    args: &RunArgs,
    plan: &Plan,
    model: DataModel,
    run_dir: &store::run::RunDir,
) -> anyhow::Result<Result<(Arc<dyn ClientFactory>, Option<crate::nemesis_task::Cluster>), String>>
{
    let Some(kind) = plan.db.newsql() else {
        bail!("not a tarball database: {}", plan.db.name());
    };
    let factory = newsql_db::factory(
        kind,
        &args.newsql,
        args.url.as_deref(),
        plan.isolation,
        model,
    )?;
    if !args.nodes.is_set() {
        return Ok(Ok((factory, None)));
    }
    let remotes = match args.nodes.connect().await {
        Ok(r) => r,
        Err(e) => return Ok(Err(format!("{e:#}"))),
    };
    let mut flags = args.newsql.clone();
    // --url with --nodes: the cluster runs already; the nodes serve faults.
    flags.no_setup |= args.url.is_some();
    let db = newsql_db::cluster_db(kind, &flags, plan.isolation, remotes.clone())?;
    match crate::nemesis_task::Cluster::start(
        Arc::new(db),
        remotes,
        factory.clone(),
        &args.faults,
        run_dir.path(),
    )
    .await
    {
        Ok(c) => Ok(Ok((factory, Some(c)))),
        Err(e) => Ok(Err(format!("{e:#}"))),
    }
}

async fn run_with(
    args: &RunArgs,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    factory: Arc<dyn ClientFactory>,
    on_nodes: Option<&crate::nemesis_task::Cluster>,
) -> anyhow::Result<Outcome> {
    for node in &plan.nodes {
        let setup = tokio::time::timeout(Duration::from_secs(30), factory.setup(node)).await;
        match setup {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Ok(Outcome::SetupFailed(format!(
                    "{} on node {} ({}): {}",
                    plan.db.name(),
                    node.name,
                    node.host,
                    e.message
                )));
            }
            Err(_) => {
                return Ok(Outcome::SetupFailed(format!(
                    "{} on node {}: schema setup timed out after 30 s",
                    plan.db.name(),
                    node.name
                )));
            }
        }
    }
    let mut main = workloads::for_workload(plan.workload, &plan.wcfg, plan.seed)?;
    if let Some(r) = args.rate {
        main = Box::new(workloads::generator::rate(r, plan.seed ^ 0x5eed, main)?);
    }
    let log = store::run::HistoryLog::create(&run_dir.history_log_path())
        .with_context(|| format!("creating {}", run_dir.history_log_path().display()))?;
    // Shared with the nemesis task, which records its ops in the same log.
    let mut log = crate::nemesis_task::SharedLog::new(log);
    let mut nemesis = crate::nemesis_task::nemesis_for(on_nodes, &args.faults, plan.seed, &log)?;
    let (trigger, stop) = runner::stop_signal();
    let faults = on_nodes.map(|c| c.nemesis.clone());
    let signals = tokio::spawn(watch_signals(trigger, args.op_timeout, faults));
    let counters = Arc::new(progress::Counters::default());
    let limit = Some(args.time_limit);
    let progress = progress::Progress::start(counters.clone(), limit);
    let cfg = RunnerConfig {
        concurrency: plan.concurrency,
        nodes: plan.nodes.clone(),
        time_limit: limit,
        ops_limit: args.ops,
        op_timeout: args.op_timeout,
        recovery_time: args.recovery_time,
        final_read_batch: plan.wcfg.final_read_batch,
        final_reads: true,
    };
    tracing::info!(
        "running {} against {} at {} with {} workers, seed {}",
        plan.workload,
        plan.db.name(),
        plan.isolation,
        plan.concurrency,
        plan.seed
    );
    let result = runner::run(&cfg, main, factory, &mut log, &mut *nemesis, stop, counters).await;
    progress.finish().await;
    signals.abort();
    let finished = log.finish();
    let summary = result?;
    finished.context("closing the history log")?;
    tracing::info!("{}", phase_lines(&summary).replace('\n', "; "));
    Ok(Outcome::Ran(summary))
}

/// First SIGINT/SIGTERM: stop issuing and finish normally (in-flight ops
/// wait up to the op timeout). Second: heal every fault (bounded by 30 s)
/// and exit (the history on disk is complete up to that point).
async fn watch_signals(
    trigger: runner::StopTrigger,
    op_timeout: Duration,
    faults: Option<Arc<nemesis::fault::Nemesis>>,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return;
    };
    let Ok(mut int) = signal(SignalKind::interrupt()) else {
        return;
    };
    let mut count = 0;
    loop {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        count += 1;
        if count == 1 {
            eprintln!(
                "\nstopping: no new transactions; waiting up to {op_timeout:?} for those in flight, then checking (signal again to exit now)"
            );
            tracing::warn!("stop requested by signal");
            trigger.stop();
        } else {
            if let Some(n) = &faults {
                eprintln!("healing faults before exiting (at most 30 s)");
                match tokio::time::timeout(Duration::from_secs(30), n.heal_all()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("warning: healing faults: {e}"),
                    Err(_) => eprintln!(
                        "warning: healing did not finish in 30 s; run `harness nemesis heal`"
                    ),
                }
            }
            eprintln!("exiting now; history.jsonl holds everything recorded so far");
            std::process::exit(130);
        }
    }
}

/// ARCHITECTURE.md: a run in which no transaction committed is `unknown`,
/// never `valid`. Settles that on `result` itself (so `results.edn` and the
/// reports agree with `results.json`) and returns the `results.json` value,
/// with a `reason` when it applied.
pub fn settle_no_commit(
    history: &store::History,
    result: &mut checker::CheckResult,
) -> serde_json::Value {
    let committed = history.ops().iter().any(|o| {
        o.is_client()
            && o.op_type == OpType::Ok
            && matches!(&o.value, OpValue::Txn(m) if !m.is_empty())
    });
    let settle = !committed && result.valid == Valid::True;
    if settle {
        result.valid = Valid::Unknown;
    }
    let mut json = result.to_json();
    if settle {
        json["valid?"] = json!("unknown");
        json["reason"] = json!("no transaction committed");
    }
    json
}

fn check_and_report(
    args: &RunArgs,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    keep: crate::report::Keep,
) -> anyhow::Result<Valid> {
    println!("checking the history against {} …", plan.expected.name());
    let (history, warnings) = store::format::load_history(&run_dir.history_path())
        .with_context(|| format!("reading back {}", run_dir.history_path().display()))?;
    for w in &warnings {
        tracing::warn!("history: {w}");
    }
    let counts = count_types(&history);
    let committed = counts.committed;
    let deadline = std::time::Instant::now() + args.check_time_limit;
    let opts = checker::CheckOptions {
        workload: checker_workload(plan.workload),
        models: vec![plan.expected],
        anomalies: Vec::new(),
        wfr_keys: false,
        sequential_keys: false,
        linearizable_keys: false,
        budget: checker::budget::Budget::until(Box::new(move || {
            std::time::Instant::now() >= deadline
        })),
        complete: true,
    };
    let checked_at = std::time::Instant::now();
    let checker::Checked {
        mut result,
        engines,
        ..
    } = checker::check_with_engines(&history, &opts);
    let check_s = checked_at.elapsed().as_secs_f64();
    tracing::info!("checked {} ops in {check_s:.2} s", history.len());
    let mut json = settle_no_commit(&history, &mut result);
    if !engines.is_empty() {
        // Which engine decided (only when the complete register check was
        // asked for, so other runs' results.json keep Elle's map exactly).
        json["engines"] = checker::engines::to_json(&engines, false);
    }
    let valid = result.valid;
    write_json(&run_dir.results_path(), &json)?;
    // Reports never change the verdict: a failure is a warning.
    if let Err(e) = crate::report::write_reports(run_dir.path(), &history, Some(&result), keep) {
        tracing::warn!("reports: {e:#}");
        eprintln!("warning: {e:#}");
    }
    let Counts {
        invoked,
        ok: ok_all,
        fail,
        info,
        writes: writes_ok,
        ..
    } = counts;
    let pending = invoked.saturating_sub(ok_all + fail + info);
    println!(
        "checked {} transactions against {} in {check_s:.1} s: {} ok ({} writes committed), \
         {} fail (did not take effect), {} info (outcome unknown){}",
        thousands(invoked as u64),
        plan.expected.name(),
        thousands(ok_all as u64),
        thousands(writes_ok as u64),
        thousands(fail as u64),
        thousands(info as u64),
        if pending > 0 {
            format!(", {} never completed", thousands(pending as u64))
        } else {
            String::new()
        }
    );
    for r in &engines {
        println!("decided by: {}", r.line());
    }
    match valid {
        Valid::True => println!(
            "valid: no anomaly forbidden by {} was found",
            plan.expected.name()
        ),
        Valid::False => {
            let names: Vec<&str> = result.anomaly_types.iter().map(|a| a.name()).collect();
            println!(
                "INVALID: {} (expected {}; not {})",
                names.join(", "),
                plan.expected.name(),
                result
                    .not
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (t, cases) in &result.anomalies {
                if let Some(first) = cases.first() {
                    println!("\n{} ({} found), e.g.:", t.name(), cases.len());
                    println!("{}", checker::explain::render_text(first, &history));
                }
            }
        }
        Valid::Unknown => {
            if committed == 0 {
                println!("unknown: no transaction committed, so nothing could be checked");
            } else {
                let names: Vec<&str> = result.anomaly_types.iter().map(|a| a.name()).collect();
                println!(
                    "unknown: the checker could not decide ({})",
                    names.join(", ")
                );
            }
        }
    }
    println!("run directory: {}", run_dir.path().display());
    Ok(valid)
}

/// The first line a run prints: what is tested, how, and its seed.
fn header(args: &RunArgs, plan: &Plan) -> String {
    let level = args.sim_bug.as_deref().map_or_else(
        || format!("isolation {}", plan.isolation.name()),
        |b| format!("bug mode {b}"),
    );
    let limit = match args.ops {
        Some(n) => format!(
            "{} or {n} transactions",
            humantime::format_duration(args.time_limit)
        ),
        None => humantime::format_duration(args.time_limit).to_string(),
    };
    format!(
        "harness run: {} · {} · {level} · checked as {} · nemesis {} · {} workers · {limit} · seed {}",
        plan.db.name(),
        plan.workload.name(),
        plan.expected.name(),
        args.faults.nemesis,
        plan.concurrency,
        plan.seed
    )
}

/// What the main phase and the final reads did, one line each.
fn phase_lines(s: &runner::RunSummary) -> String {
    let main_done = s.main_counts.ok + s.main_counts.fail + s.main_counts.info;
    let ended = match s.main_phase_end {
        runner::PhaseEnd::Exhausted => "the workload had no more transactions",
        runner::PhaseEnd::TimeLimit => "the time limit",
        runner::PhaseEnd::OpsLimit => "the transaction limit (--ops)",
        runner::PhaseEnd::Stopped => "a stop request (signal)",
    };
    let final_reads = s.counts.invoked.saturating_sub(s.main_counts.invoked);
    format!(
        "main phase: {} transactions completed in {:.1} s ({:.0} txn/s), ended by {ended}\n\
         final reads: {} read-only transactions after the main phase{}",
        thousands(main_done),
        s.main_phase_s,
        main_done as f64 / s.main_phase_s.max(1e-9),
        thousands(final_reads),
        if s.final_reads_done {
            ""
        } else {
            " (did not finish)"
        }
    )
}

/// `n` with a comma every three digits.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as megabytes with one decimal.
fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

fn count_types(history: &store::History) -> Counts {
    let mut c = Counts::default();
    for op in history.ops().iter().filter(|o| o.is_client()) {
        match op.op_type {
            OpType::Invoke => c.invoked += 1,
            OpType::Fail => c.fail += 1,
            OpType::Info => c.info += 1,
            OpType::Ok => {
                c.ok += 1;
                if let OpValue::Txn(m) = &op.value {
                    c.committed += usize::from(!m.is_empty());
                    c.writes += m.iter().filter(|m| !matches!(m, MicroOp::Read(..))).count();
                }
            }
        }
    }
    c
}

/// Client transactions of a history by outcome, counted in one pass.
#[derive(Default)]
struct Counts {
    invoked: usize,
    ok: usize,
    fail: usize,
    info: usize,
    /// `ok` transactions with at least one micro-op.
    committed: usize,
    /// Write and append micro-ops of `ok` transactions.
    writes: usize,
}

fn test_json(
    args: &RunArgs,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    started: SystemTime,
) -> serde_json::Value {
    json!({
        "schema_version": TEST_JSON_SCHEMA_VERSION,
        "name": plan.test_name,
        "seed": plan.seed,
        "nodes": plan.nodes.iter().map(|n| json!({"name": n.name, "host": n.host})).collect::<Vec<_>>(),
        "harness": {
            "version": env!("CARGO_PKG_VERSION"),
            "commit": env!("HARNESS_GIT_COMMIT"),
        },
        "command_line": std::env::args().collect::<Vec<_>>(),
        "cwd": std::env::current_dir().ok().map(|d| d.display().to_string()),
        "start_time": humantime::format_rfc3339_millis(started).to_string(),
        "end_time": null,
        "run_dir": run_dir.path().display().to_string(),
        "config": {
            "db": plan.db.name(),
            "workload": plan.workload.name(),
            "isolation": plan.isolation.name(),
            "sim_bug": args.sim_bug,
            "expected_consistency_model": plan.expected.name(),
            "concurrency": plan.concurrency,
            "rate": args.rate,
            "time_limit_s": args.time_limit.as_secs_f64(),
            "ops": args.ops,
            "op_timeout_s": args.op_timeout.as_secs_f64(),
            "recovery_time_s": args.recovery_time.as_secs_f64(),
            "url": args.url.as_deref().map(redact_url),
            "local": args.local,
            "key_count": plan.wcfg.key_count,
            "max_writes_per_key": plan.wcfg.max_writes_per_key,
            "min_txn_length": plan.wcfg.min_txn_length,
            "max_txn_length": plan.wcfg.max_txn_length,
            "read_ratio": plan.wcfg.read_ratio,
            "final_read_batch": plan.wcfg.final_read_batch,
            "check_time_limit_s": args.check_time_limit.as_secs_f64(),
            "nemesis": args.faults.nemesis,
            "nemesis_interval_s": args.faults.nemesis_interval.as_secs_f64(),
            "partition": args.faults.partition,
        },
    })
}

/// Drops a password from `scheme://user:password@host`.
fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((cred, host)) = rest.split_once('@')
        && let Some((user, _)) = cred.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

fn write_json(path: &Path, v: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(v)?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Logs to `harness.log` (info and up, or `RUST_LOG`) and to stderr (warn and up).
fn init_tracing(log_path: &Path) {
    use tracing_subscriber::filter::{EnvFilter, LevelFilter};
    use tracing_subscriber::prelude::*;
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: cannot open {}: {e}", log_path.display());
            return;
        }
    };
    let file_filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .with_filter(file_filter),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // No colour codes in a redirected stderr (soak logs, CI).
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter(LevelFilter::WARN),
        )
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(jsonl: &str) -> store::History {
        let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
        store::History::new(read.ops).unwrap()
    }

    #[test]
    fn a_history_without_commits_is_unknown_in_every_result_file() {
        let failed = history(concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"fail\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        ));
        let committed = history(concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}\n",
        ));
        let opts = checker::CheckOptions::new(checker::analysis::Workload::ListAppend);
        // With a commit, the checker's verdict stands.
        let mut result = checker::check(&committed, &opts);
        assert_eq!(result.valid, Valid::True);
        let json = settle_no_commit(&committed, &mut result);
        assert_eq!(json["valid?"], true);
        assert!(json.get("reason").is_none());
        // The same verdict over a history without commits becomes unknown,
        // in the result itself (results.edn, reports) and in results.json.
        let json = settle_no_commit(&failed, &mut result);
        assert_eq!(result.valid, Valid::Unknown);
        assert_eq!(json["valid?"], "unknown");
        assert_eq!(json["reason"], "no transaction committed");
        assert!(
            result.to_edn().contains(":valid? :unknown"),
            "{}",
            result.to_edn()
        );
        // The checker alone already says unknown there (no dependency graph).
        assert_eq!(checker::check(&failed, &opts).valid, Valid::Unknown);
    }

    #[test]
    fn concurrency_accepts_n_and_per_node() {
        assert_eq!(parse_concurrency("10", 1).ok(), Some(10));
        assert_eq!(parse_concurrency("3n", 5).ok(), Some(15));
        assert!(parse_concurrency("0", 1).is_err());
        assert!(parse_concurrency("x", 1).is_err());
    }

    #[test]
    fn expected_model_follows_isolation() {
        assert_eq!(
            default_model(Isolation::Serializable, 1),
            ConsistencyModel::StrictSerializable
        );
        assert_eq!(
            default_model(Isolation::Serializable, 3),
            ConsistencyModel::Serializable
        );
        assert_eq!(
            default_model(Isolation::ReadCommitted, 1),
            ConsistencyModel::ReadCommitted
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
    }
}
