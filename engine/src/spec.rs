//! `RunSpec`: one test as a typed value — database, workload, isolation
//! and expected model, nemesis, nodes, limits, seed, store. The CLI builds
//! it from `harness run` flags; soak and reproduce build it from the same
//! flags written in a suite or scenario TOML or recorded in a run's
//! `test.json` (`run_flags`). [`RunSpec::plan`] checks that its parts fit
//! together; `crate::run::run` plans, runs, checks and reports it.
//!
//! Key decisions: names are parsed (`FromStr`) where the text is — at the
//! CLI — so nothing here sees a string that could still be a typo, and no
//! clap type crosses into the engine. Messages still name the flag the
//! user wrote (`--nodes`, `--tarball`): flags are the one way to write a
//! spec. Fields that stay text (`nodes`, `roles`, `tarball`) need other
//! fields (the node list) or IO (a file) to be checked, which `plan` does.

use crate::report::Keep;
use checker::model::ConsistencyModel;
use db_adapters::catalog::DbKind;
use db_adapters::sim::SimMode;
use db_adapters::sql::Isolation;
pub use db_adapters::tarball::NewSqlSpec;
use nemesis::schedule::FaultKind;
use std::path::PathBuf;
use std::time::Duration;
use workloads::WorkloadKind;

/// One test, as given (defaults filled in, nothing checked together yet).
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The database.
    pub db: DbKind,
    /// The isolation level the database is asked for.
    pub isolation: Isolation,
    /// The model the history must satisfy (`None`: from `isolation`).
    pub expected: Option<ConsistencyModel>,
    /// An existing server (`--url`).
    pub url: Option<String>,
    /// A throwaway local PostgreSQL cluster (`--local`).
    pub local: bool,
    /// Where the checker's version order comes from (`--version-order`).
    pub version_order: VersionOrder,
    /// A simulator bug mode replacing `isolation` (`--sim-bug`).
    pub sim_bug: Option<SimMode>,
    /// Simulated replicas of `--db sim` (`--sim-replicas`; `None`: one
    /// simulated store, no nodes).
    pub sim_replicas: Option<usize>,
    /// The workload.
    pub workload: WorkloadKind,
    /// Overrides of the workload's defaults.
    pub workload_overrides: WorkloadOverrides,
    /// Seed of every random choice (`None`: from the clock).
    pub seed: Option<u64>,
    /// Worker count.
    pub concurrency: Concurrency,
    /// Limits of the run.
    pub limits: Limits,
    /// Store root (`<store>/runs/<test>/<timestamp>/`).
    pub store: PathBuf,
    /// Test name (`None`: `<db>-<workload>-<isolation or bug>`).
    pub test_name: Option<String>,
    /// What a run keeps beyond the default files.
    pub keep: Keep,
    /// Nodes and SSH.
    pub nodes: NodeSpec,
    /// Faults and the lifecycle on nodes.
    pub faults: FaultSpec,
    /// CockroachDB, TiDB and YugabyteDB settings.
    pub newsql: NewSqlSpec,
}

/// Where the checker's version order comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VersionOrder {
    /// Black box: inferred from the history (the default).
    #[default]
    Inferred,
    /// PostgreSQL records each transaction's txid and snapshot and each
    /// read row's xmin; the checker orders versions by visibility.
    Db,
}

impl VersionOrder {
    /// The `--version-order` spelling.
    pub fn name(self) -> &'static str {
        match self {
            VersionOrder::Inferred => "inferred",
            VersionOrder::Db => "db",
        }
    }
}

impl std::str::FromStr for VersionOrder {
    type Err = String;

    /// Parses `inferred` or `db`.
    ///
    /// # Errors
    /// Names the value and the accepted ones.
    fn from_str(s: &str) -> Result<VersionOrder, String> {
        match s {
            "inferred" => Ok(VersionOrder::Inferred),
            "db" => Ok(VersionOrder::Db),
            _ => Err(format!("--version-order {s:?}: expected inferred or db")),
        }
    }
}

/// Workload settings given explicitly (`None`: the workload's default).
#[derive(Clone, Debug, Default)]
pub struct WorkloadOverrides {
    /// Active keys at a time.
    pub key_count: Option<usize>,
    /// Writes to a key before it retires.
    pub max_writes_per_key: Option<u64>,
    /// Fewest micro-ops per transaction.
    pub min_txn_length: Option<usize>,
    /// Most micro-ops per transaction.
    pub max_txn_length: Option<usize>,
    /// Probability that a micro-op is a read.
    pub read_ratio: Option<f64>,
}

/// Worker count: `count`, or `count` per node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    /// The number given.
    pub count: usize,
    /// `Nn`: per node.
    pub per_node: bool,
}

/// Time and size limits of a run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Target rate over all workers (`None`: as fast as the database answers).
    pub rate: Option<f64>,
    /// Length of the main phase.
    pub time_limit: Duration,
    /// Most transactions in the main phase.
    pub ops: Option<u64>,
    /// Per-transaction timeout.
    pub op_timeout: Duration,
    /// Wait between healing and the final reads.
    pub recovery_time: Duration,
    /// Time the checker may search for cycles.
    pub check_time_limit: Duration,
}

/// Database nodes and how to reach them.
#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    /// `--nodes`: `n1,n2,…`, `testbed` or `testbed:N`.
    pub nodes: Option<String>,
    /// `--nodes-file`: one node per line.
    pub nodes_file: Option<PathBuf>,
    /// SSH login.
    pub ssh: SshSpec,
}

/// SSH settings for nodes that are not the testbed's.
#[derive(Clone, Debug)]
pub struct SshSpec {
    /// Login user; commands run through `sudo -n` unless it is root.
    pub user: String,
    /// Private key (`None`: ssh's defaults and agent).
    pub key: Option<PathBuf>,
    /// Port.
    pub port: u16,
    /// Check host keys against known_hosts.
    pub strict_host_key_checking: bool,
}

impl NodeSpec {
    /// Whether the nodes are the testbed's (`--nodes testbed[:N]`, as
    /// [`NodeSpec::source`] reads them), without reading any file.
    pub fn is_testbed(&self) -> bool {
        self.nodes_file.is_none()
            && self
                .nodes
                .as_deref()
                .is_some_and(|l| testbed_size(l).is_some())
    }
}

/// `--nodes testbed` (`Some(Ok(None))`: the default size) or `testbed:N`;
/// `None` for any other list.
pub(crate) fn testbed_size(list: &str) -> Option<anyhow::Result<Option<usize>>> {
    if list == "testbed" {
        return Some(Ok(None));
    }
    let n = list.strip_prefix("testbed:")?;
    Some(
        n.parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("--nodes {list}: expected testbed:N with a node count")),
    )
}

impl Default for SshSpec {
    fn default() -> SshSpec {
        SshSpec {
            user: "root".to_string(),
            key: None,
            port: 22,
            strict_host_key_checking: false,
        }
    }
}

/// `--heal-timeout` when not given.
pub const DEFAULT_HEAL_TIMEOUT: Duration = Duration::from_secs(120);

/// `--nemesis-interval` when not given: 10 s; 2 s on a database whose runs
/// are capped by default (the simulator: its paced 30 s run then sees a
/// dozen faults, not one or two).
pub fn default_nemesis_interval(db: DbKind) -> Duration {
    if db.capabilities().default_ops.is_some() {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(10)
    }
}

/// Faults and the database lifecycle on nodes.
#[derive(Clone, Debug)]
pub struct FaultSpec {
    /// The faults to inject (empty: none).
    pub faults: Vec<FaultKind>,
    /// Timing, targets and partition shapes of the fault packages.
    pub options: nemesis::package::Options,
    /// PostgreSQL on nodes: read-only transactions go to a replica.
    pub replica_reads: bool,
    /// Do not tear the database down after the run.
    pub leave_db_running: bool,
    /// Most time to wait for the database to serve again after healing.
    pub heal_timeout: Duration,
    /// Data directories on the lossy filesystem (`--lazyfs`): a kill loses
    /// un-fsynced writes.
    pub lazyfs: bool,
    /// `--lazyfs-strict`: un-synced creates, renames and unlinks are lost
    /// too (implies `lazyfs`).
    pub lazyfs_strict: bool,
    /// Extra server settings (`--db-conf`, PostgreSQL on nodes).
    pub db_conf: Vec<String>,
}

impl FaultSpec {
    /// `none`, or the faults comma-separated (as `--nemesis` spells them).
    pub fn name(&self) -> String {
        if self.faults.is_empty() {
            return "none".to_string();
        }
        let names: Vec<String> = self.faults.iter().map(|f| f.to_string()).collect();
        names.join(",")
    }
}

impl Concurrency {
    /// Parses `N` or `Nn` (N per node).
    ///
    /// # Errors
    /// Names the text and what was expected.
    pub fn parse(s: &str) -> Result<Concurrency, String> {
        let (num, per_node) = match s.strip_suffix('n') {
            Some(n) => (n, true),
            None => (s, false),
        };
        let count: usize = num
            .parse()
            .map_err(|_| format!("--concurrency {s:?}: expected N or Nn (N per node)"))?;
        Ok(Concurrency { count, per_node })
    }

    /// Workers for `nodes` nodes.
    ///
    /// # Errors
    /// Zero workers, or more than 10,000.
    pub fn workers(&self, nodes: usize) -> Result<usize, String> {
        let n = if self.per_node {
            self.count * nodes
        } else {
            self.count
        };
        if n == 0 || n > 10_000 {
            let text = format!("{}{}", self.count, if self.per_node { "n" } else { "" });
            return Err(format!(
                "--concurrency {text:?}: must be between 1 and 10000 workers"
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_accepts_n_and_per_node() {
        let w = |s: &str, nodes| Concurrency::parse(s).and_then(|c| c.workers(nodes)).ok();
        assert_eq!(w("10", 1), Some(10));
        assert_eq!(w("3n", 5), Some(15));
        assert_eq!(w("0", 1), None);
        assert_eq!(w("x", 1), None);
        assert!(
            Concurrency::parse("x")
                .unwrap_err()
                .contains("expected N or Nn")
        );
    }
}
