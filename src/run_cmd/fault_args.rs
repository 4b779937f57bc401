//! `harness run`'s fault and lifecycle flags ([`FaultArgs`]) and their
//! translation into the engine's [`FaultSpec`]: names parsed here, with the
//! flag in the message (as the rest of `run_cmd`).

use engine::spec::FaultSpec;
use std::time::Duration;

/// `--nemesis`'s help: every package of `nemesis::schedule::KINDS`.
fn nemesis_help() -> String {
    let names: Vec<&str> = nemesis::schedule::KINDS.iter().map(|k| k.1).collect();
    let all: Vec<&str> = nemesis::schedule::KINDS
        .iter()
        .filter(|k| k.2)
        .map(|k| k.1)
        .collect();
    format!(
        "Fault packages, run concurrently: none, all ({}), or a comma list of {}",
        all.join(", "),
        names.join(", ")
    )
}

/// Fault and lifecycle flags of `harness run`.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Faults (nemesis) and the database on nodes")]
pub struct FaultArgs {
    /// Fault packages, run concurrently (the list is `nemesis_help`'s, from
    /// the table of fault kinds).
    #[arg(long, default_value = "none", help = nemesis_help())]
    pub nemesis: String,
    /// Time between fault starts and stops: the mean of the stagger
    /// (uniform in [0, 2·interval)), or the exact wait with
    /// `--nemesis-schedule fixed`. Default 10s; 2s on the simulator, whose
    /// runs are short.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub nemesis_interval: Option<Duration>,
    /// `stagger` (random waits, each package on its own seeded stream) or
    /// `fixed` (every wait is exactly --nemesis-interval).
    #[arg(long, default_value = "stagger")]
    pub nemesis_schedule: String,
    /// No fault starts before this much of the main phase has passed.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub initial_quiet_period: Duration,
    /// Cut the main phase into epochs this long: each is calm (p = 1/4) or
    /// runs a random non-empty subset of the packages (off: all, always).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub nemesis_stable_period: Option<Duration>,
    /// The sleeps of the part-kill and pause-kill choreographies.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub choreography_hold: Duration,
    /// Partition shapes, each partition drawing one: one, majority,
    /// majorities-ring, minority-third, bridge, random-halves, primaries.
    #[arg(long, default_value = "majority")]
    pub partition: String,
    /// Kill targets, each kill drawing one: one, minority, majority,
    /// minority-third, all, primaries, or named nodes as n1+n2.
    #[arg(long, default_value = "one,minority,majority,all")]
    pub kill_targets: String,
    /// Pause targets (as --kill-targets).
    #[arg(long, default_value = "one,minority,majority,all")]
    pub pause_targets: String,
    /// What `--nemesis packet` does to the links of its targets: a comma
    /// list of loss=P, duplicate=P (probabilities) and rate=KBIT (kbit/s).
    #[arg(long, default_value = "loss=0.2")]
    pub packet: String,
    /// Packet-fault targets (as --kill-targets).
    #[arg(long, default_value = "one,minority,majority,all")]
    pub packet_targets: String,
    /// `--nemesis clock` also skews clock rates (libfaketime `x<rate>`,
    /// set by restarting the node's database; reset on heal): per node a
    /// rate such that the fastest clock runs at most F times the slowest.
    #[arg(long, value_name = "F")]
    pub clock_rate: Option<String>,
    /// How `--nemesis clock` draws: `jepsen` (bumps, strobes and resets
    /// mixed), or CockroachDB roachtest's `strobe-skews` (every node
    /// strobed by 200 ms every 10 ms) or `subcritical-skews` (each node at
    /// +200 ms or 0, below CockroachDB's 250 ms maximum offset).
    #[arg(long, default_value = "jepsen")]
    pub clock_mix: String,
    /// What a clock fault moves: `real` (the default: the wall clock only,
    /// CLOCK_MONOTONIC untouched, as on a real machine whose clock is
    /// stepped) or `fake` (libfaketime: CLOCK_MONOTONIC moves too, and
    /// backwards after a reset — harsher than any real machine; labelled
    /// on the run).
    #[arg(long, default_value = "real", value_name = "real|fake")]
    pub clock_monotonic: String,
    /// PostgreSQL on nodes: send read-only transactions to a replica.
    #[arg(long)]
    pub replica_reads: bool,
    /// Do not tear the database down after the run.
    #[arg(long)]
    pub leave_db_running: bool,
    /// PostgreSQL, MariaDB or Galera on nodes: put each data directory on a lossy filesystem
    /// that keeps written data until fsync; a `kill` then loses every
    /// un-fsynced write (recorded as `lose-unfsynced-writes`).
    #[arg(long)]
    pub lazyfs: bool,
    /// With `--lazyfs`: strict mode — creates, renames and unlinks not yet
    /// made durable by a directory fsync (or the new file's fsync) are lost
    /// too.
    #[arg(long, requires = "lazyfs")]
    pub lazyfs_strict: bool,
    /// PostgreSQL, MariaDB or Galera on nodes: an extra server setting,
    /// e.g. `synchronous_commit=off` (postgresql.conf) or
    /// `innodb_flush_log_at_trx_commit=0` (my.cnf); Patroni: a Patroni
    /// setting (`synchronous_mode_strict=true`, `kill=patroni`, `ttl=10`) or
    /// a PostgreSQL parameter (repeatable).
    #[arg(long = "db-conf", value_name = "KEY=VALUE")]
    pub db_conf: Vec<String>,
    /// Most time to wait for the database to serve again after the faults
    /// are healed, before the final reads.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub heal_timeout: Duration,
}

/// `--partition one,majority`: the shapes partitions draw from.
fn parse_partitions(s: &str) -> anyhow::Result<Vec<nemesis::partition::PartitionKind>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let k = part
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("--partition: {e}"))?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// `--nemesis-interval` when not given (`RunArgs::to_spec` replaces it by
/// the database's own default, `engine::spec::default_nemesis_interval`).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

impl FaultArgs {
    /// The engine's fault settings.
    ///
    /// # Errors
    /// An unknown fault or partition name.
    pub fn to_spec(&self) -> anyhow::Result<FaultSpec> {
        Ok(FaultSpec {
            faults: nemesis::schedule::parse_faults(&self.nemesis)?,
            options: nemesis::package::Options {
                interval: self.nemesis_interval.unwrap_or(DEFAULT_INTERVAL),
                timing: self
                    .nemesis_schedule
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--nemesis-schedule: {e}"))?,
                initial_quiet: self.initial_quiet_period,
                stable_period: self.nemesis_stable_period,
                hold: self.choreography_hold,
                partitions: parse_partitions(&self.partition)?,
                kill_targets: nemesis::target::parse_targets(&self.kill_targets)
                    .map_err(|e| anyhow::anyhow!("--kill-targets: {e}"))?,
                pause_targets: nemesis::target::parse_targets(&self.pause_targets)
                    .map_err(|e| anyhow::anyhow!("--pause-targets: {e}"))?,
                packet: self.packet.parse()?,
                packet_targets: nemesis::target::parse_targets(&self.packet_targets)
                    .map_err(|e| anyhow::anyhow!("--packet-targets: {e}"))?,
                clock_rate: self
                    .clock_rate
                    .as_deref()
                    .map(nemesis::clock::fault::RateFactor::parse)
                    .transpose()
                    .map_err(|e| anyhow::anyhow!(e))?,
                clock_mix: self.clock_mix.parse().map_err(|e| anyhow::anyhow!("{e}"))?,
                clock_mode: self
                    .clock_monotonic
                    .parse()
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            },
            replica_reads: self.replica_reads,
            leave_db_running: self.leave_db_running,
            heal_timeout: self.heal_timeout,
            lazyfs: self.lazyfs,
            lazyfs_strict: self.lazyfs_strict,
            db_conf: self.db_conf.clone(),
        })
    }
}
