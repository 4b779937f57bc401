//! Planning a run: a [`RunSpec`] checked as a whole and resolved into a
//! `Plan` — the nodes, the expected model (from the isolation level unless
//! given), the workload configuration, the worker count, the seed and the
//! test name — before anything is created.
//!
//! Key decision: every cross-check of a spec lives here (and in
//! `cluster::plan_nodes` and the database entry's `Database::check_settings`, which
//! it calls), so `run`, `soak` and `reproduce` refuse the same specs with
//! the same messages.

use crate::spec::{RunSpec, VersionOrder};
use anyhow::bail;
use checker::model::ConsistencyModel;
use db_adapters::catalog::{DbKind, DbSettings};
use db_adapters::sql::{DataModel, Isolation};
use nemesis::Node;
use std::path::Path;
use std::time::SystemTime;
use workloads::{WorkloadConfig, WorkloadKind};

/// The validated configuration of a run.
pub(crate) struct Plan {
    pub(crate) db: DbKind,
    pub(crate) workload: WorkloadKind,
    pub(crate) isolation: Isolation,
    pub(crate) expected: ConsistencyModel,
    pub(crate) wcfg: WorkloadConfig,
    pub(crate) concurrency: usize,
    pub(crate) nodes: Vec<Node>,
    /// The database runs on `nodes` (not embedded, not behind a URL).
    pub(crate) on_nodes: bool,
    pub(crate) seed: u64,
    pub(crate) test_name: String,
}

impl RunSpec {
    /// Checks the spec as a run would before starting anything (no IO
    /// beyond reading a `--nodes-file`).
    ///
    /// # Errors
    /// The first problem, naming the flag.
    pub fn validate(&self) -> anyhow::Result<()> {
        plan(self).map(|_| ())
    }
}

pub(crate) fn plan(args: &RunSpec) -> anyhow::Result<Plan> {
    let workload = args.workload;
    let isolation = args.isolation;
    // Databases on nodes (galera, mariadb, postgres with --nodes).
    let on_nodes = crate::cluster::plan_nodes(args)?;
    crate::unused_flags::refuse(args, on_nodes.is_some())?;
    let nodes = match (&on_nodes, args.sim_replicas) {
        (Some(n), _) => n.clone(),
        (None, Some(r)) => sim_nodes(args, r)?,
        (None, None) => vec![Node::local()],
    };
    // Simulated replicas are one database to its clients: a single
    // serializable store, strict serializable as one server is.
    let logical_nodes = if on_nodes.is_some() { nodes.len() } else { 1 };
    let expected = match args.expected {
        Some(m) => m,
        None => default_model(isolation, logical_nodes),
    };
    let wcfg = workload_config(&args.workload_overrides)?;
    let concurrency = args
        .concurrency
        .workers(nodes.len())
        .map_err(anyhow::Error::msg)?;
    let limits = &args.limits;
    if let Some(r) = limits.rate
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--rate must be a positive number of transactions per second, got {r}");
    }
    if limits.op_timeout.is_zero() {
        bail!("--op-timeout must be greater than zero");
    }
    if limits.time_limit.is_zero() {
        bail!("--time-limit must be greater than zero");
    }
    if args.version_order == VersionOrder::Db && !args.db.records_version_order(args.nodes.is_set())
    {
        bail!(
            "--version-order db: only {} record their version order (postgres on a single server: --url or --local)",
            db_adapters::catalog::names_where(|k| k.records_version_order(false))
        );
    }
    if !workload.runs() {
        bail!(
            "--workload: {}",
            workloads::WorkloadError::NotRunnable(workload.name())
        );
    }
    if !args.db.supports(workload, args.nodes.is_set()) {
        match workload {
            WorkloadKind::Predicate => bail!(
                "--workload predicate: the simulator does not model range reads; use a SQL database"
            ),
            WorkloadKind::Jepsen(w) => bail!(
                "--workload {w}: runs on sqlite, sim, postgres behind --url or --local, and mariadb and galera on --nodes (long-fork: every database)"
            ),
            w => bail!("--workload {}: not run by --db {}", w.name(), args.db),
        }
    }
    if args.sim_bug.is_some() && !args.db.has_bug_modes() {
        bail!("--sim-bug applies to --db sim only");
    }
    let all_nodes = args.nodes.planned_nodes()?;
    // Reject before anything is created (exit 3).
    let isolation = args
        .db
        .check_settings(
            &db_settings(args, isolation, 0, Path::new("unused")),
            all_nodes.as_deref(),
        )
        .map_err(anyhow::Error::msg)?;
    // A level the entry does not list is refused here even where its
    // client would refuse it only once connected.
    if args.sim_bug.is_none() && !args.db.isolation_levels().contains(&args.isolation) {
        let levels: Vec<&str> = args
            .db
            .isolation_levels()
            .iter()
            .map(|l| l.name())
            .collect();
        bail!(
            "--isolation {}: --db {} runs {}",
            args.isolation.name(),
            args.db,
            levels.join(", ")
        );
    }
    // TiDB's and YSQL's REPEATABLE READ is snapshot isolation (write skew
    // allowed): check it as such unless told otherwise.
    let expected = if args.db.is_tarball()
        && args.expected.is_none()
        && isolation == Isolation::RepeatableRead
    {
        ConsistencyModel::SnapshotIsolation
    } else {
        expected
    };
    // A bug mode is checked against what the buggy database claimed.
    let expected = match args.sim_bug {
        Some(bug) if args.expected.is_none() => ConsistencyModel::parse(bug.claimed_model())
            .map_err(|e| anyhow::anyhow!("--sim-bug: claimed model: {e}"))?,
        _ => expected,
    };
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
                .map_or_else(|| isolation.name().to_string(), |b| b.to_string());
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
        on_nodes: on_nodes.is_some(),
        nodes,
        seed,
        test_name,
    })
}

/// The most simulated replicas `--sim-replicas` takes.
const MAX_SIM_REPLICAS: usize = 9;

/// The nodes of `--sim-replicas r`: `s1`…`sr`, simulated in the process.
fn sim_nodes(args: &RunSpec, r: usize) -> anyhow::Result<Vec<Node>> {
    if !args.db.has_bug_modes() {
        bail!("--sim-replicas applies to --db sim only");
    }
    if !(1..=MAX_SIM_REPLICAS).contains(&r) {
        bail!("--sim-replicas {r}: give 1 to {MAX_SIM_REPLICAS} replicas");
    }
    Ok(db_adapters::sim::replica_names(r)
        .into_iter()
        .map(|n| Node::new(n.clone(), n))
        .collect())
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

/// The workload's defaults with `o`'s overrides, checked.
fn workload_config(o: &crate::spec::WorkloadOverrides) -> anyhow::Result<WorkloadConfig> {
    let mut wcfg = WorkloadConfig::default();
    if let Some(v) = o.key_count {
        wcfg.key_count = v;
    }
    if let Some(v) = o.max_writes_per_key {
        wcfg.max_writes_per_key = v;
    }
    if let Some(v) = o.min_txn_length {
        wcfg.min_txn_length = v;
    }
    if let Some(v) = o.max_txn_length {
        wcfg.max_txn_length = v;
    }
    if let Some(v) = o.read_ratio {
        wcfg.read_ratio = v;
    }
    wcfg.validate()?;
    Ok(wcfg)
}

/// What the catalog needs to open the database of `args` at `isolation`
/// (the level `Database::check_settings` returned) in the run directory `dir`.
pub(crate) fn db_settings(
    args: &RunSpec,
    isolation: Isolation,
    seed: u64,
    dir: &Path,
) -> DbSettings {
    DbSettings {
        isolation,
        model: data_model(args.workload),
        url: args.url.clone(),
        local: args.local,
        newsql: args.newsql.clone(),
        replica_reads: args.faults.replica_reads,
        lazyfs: args.faults.lazyfs,
        lazyfs_strict: args.faults.lazyfs_strict,
        db_conf: args.faults.db_conf.clone(),
        version_order_db: args.version_order == VersionOrder::Db,
        dir: dir.to_path_buf(),
        op_timeout: args.limits.op_timeout,
        sim_bug: args.sim_bug,
        sim_replicas: args.sim_replicas.unwrap_or(0),
        seed,
        clock: args
            .faults
            .faults
            .contains(&nemesis::schedule::FaultKind::Clock),
        jepsen: match args.workload {
            WorkloadKind::Jepsen(w) => Some(w),
            _ => None,
        },
    }
}

pub(crate) fn data_model(w: WorkloadKind) -> DataModel {
    match w {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => DataModel::ListAppend,
        WorkloadKind::RwRegister
        | WorkloadKind::Register
        | WorkloadKind::Kv
        | WorkloadKind::Knossos(_)
        | WorkloadKind::Jepsen(_) => DataModel::RwRegister,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
