//! No flag is accepted and ignored: the flags that shape something a run
//! may not have — a fault package, a database on nodes, an SSH login, a
//! tarball install — are refused, naming the flag, where that something is
//! absent. Called by `plan::plan` once the nodes are planned, so `run`,
//! `soak` and `reproduce` refuse the same flags. The root's
//! `run_cmd::flag_matrix` test walks every flag against every database.
//!
//! Key decision: a flag counts as given when its value differs from its
//! default (the engine sees values, not the command line): writing a
//! default explicitly is harmless and stays accepted.

use crate::spec::{RunSpec, SshSpec};
use anyhow::bail;
use db_adapters::catalog::{ClockFaults, names_where};
use nemesis::clock::ClockMode;
use nemesis::package::{Options, Timing};
use nemesis::schedule::FaultKind;

/// Refuses the flags of `args` that would change nothing (`on_nodes`: the
/// database runs on `--nodes`).
///
/// # Errors
/// The first such flag, with what it needs.
pub(crate) fn refuse(args: &RunSpec, on_nodes: bool) -> anyhow::Result<()> {
    fault_shapes(args)?;
    if args.sim_replicas.is_some() && !args.db.has_bug_modes() {
        bail!(
            "--sim-replicas applies to --db {} only (simulated replicas); --db {} runs real servers",
            names_where(|k| k.has_bug_modes()),
            args.db
        );
    }
    if args.faults.replica_reads && !args.db.capabilities().replicas {
        bail!(
            "--replica-reads applies to --db {} with --nodes only; --db {} has no read replicas to send reads to",
            names_where(|k| k.capabilities().replicas),
            args.db
        );
    }
    if !on_nodes {
        let given = [
            ("--leave-db-running", args.faults.leave_db_running),
            (
                "--heal-timeout",
                args.faults.heal_timeout != crate::spec::DEFAULT_HEAL_TIMEOUT,
            ),
        ];
        if let Some((flag, _)) = given.iter().find(|g| g.1) {
            bail!(
                "{flag} applies to a database harness sets up on --nodes (--db {}); --db {} here has no cluster to leave running or wait for",
                names_where(|k| k.placement() != db_adapters::catalog::Placement::Embedded),
                args.db
            );
        }
    }
    let ssh = &args.nodes.ssh;
    let d = SshSpec::default();
    let ssh_given = [
        ("--ssh-user", ssh.user != d.user),
        ("--ssh-key", ssh.key.is_some()),
        ("--ssh-port", ssh.port != d.port),
        (
            "--ssh-strict-host-key-checking",
            ssh.strict_host_key_checking != d.strict_host_key_checking,
        ),
    ];
    if let Some((flag, _)) = ssh_given.iter().find(|g| g.1) {
        if args.nodes.is_testbed() {
            bail!(
                "{flag}: --nodes {} logs in with the testbed's own key and user; {flag} applies to nodes given by name (--nodes n1,… or --nodes-file)",
                args.nodes.nodes.as_deref().unwrap_or("testbed")
            );
        }
        if !on_nodes {
            bail!(
                "{flag} logs in to --nodes; --db {} here runs on none",
                args.db
            );
        }
    }
    let n = &args.newsql;
    if args.db.is_tarball() && !on_nodes {
        let given = [
            ("--no-setup", n.no_setup),
            ("--db-port", n.db_port.is_some()),
            ("--db-dir", n.db_dir.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|g| g.1) {
            bail!(
                "{flag} applies to --db {} on --nodes; behind --url the cluster is reached at its URL",
                args.db
            );
        }
    }
    Ok(())
}

/// The fault options of `args` given without the package they shape.
fn fault_shapes(args: &RunSpec) -> anyhow::Result<()> {
    let kinds = &args.faults.faults;
    let o = &args.faults.options;
    let d = Options::default();
    let has = |k: FaultKind| kinds.contains(&k);
    let schedule = [
        (
            "--nemesis-interval",
            o.interval != crate::spec::default_nemesis_interval(args.db),
        ),
        ("--nemesis-schedule", o.timing != Timing::Stagger),
        ("--initial-quiet-period", o.initial_quiet != d.initial_quiet),
        ("--nemesis-stable-period", o.stable_period.is_some()),
    ];
    if kinds.is_empty()
        && let Some((flag, _)) = schedule.iter().find(|g| g.1)
    {
        bail!("{flag} times the faults of --nemesis; with --nemesis none it would change nothing");
    }
    let shapes = [
        (
            "--choreography-hold",
            o.hold != d.hold,
            has(FaultKind::PartKill) || has(FaultKind::PauseKill),
            "--nemesis part-kill or pause-kill",
        ),
        (
            "--partition",
            o.partitions != d.partitions,
            has(FaultKind::Partition),
            "--nemesis partition",
        ),
        (
            "--kill-targets",
            o.kill_targets != d.kill_targets,
            has(FaultKind::Kill),
            "--nemesis kill",
        ),
        (
            "--pause-targets",
            o.pause_targets != d.pause_targets,
            has(FaultKind::Pause),
            "--nemesis pause",
        ),
        (
            "--packet",
            o.packet != d.packet,
            has(FaultKind::Packet),
            "--nemesis packet",
        ),
        (
            "--packet-targets",
            o.packet_targets != d.packet_targets,
            has(FaultKind::Packet),
            "--nemesis packet",
        ),
        (
            "--clock-monotonic",
            o.clock_mode != ClockMode::default(),
            has(FaultKind::Clock),
            "--nemesis clock",
        ),
    ];
    if let Some((flag, _, _, needs)) = shapes.iter().find(|s| s.1 && !s.2) {
        bail!("{flag} shapes {needs}: add it, or drop {flag}");
    }
    if o.clock_mode != ClockMode::default()
        && let ClockFaults::Simulated = args.db.capabilities().clock_faults
    {
        bail!(
            "--clock-monotonic: --db {} simulates its clocks (no preload, no CLOCK_MONOTONIC to fake)",
            args.db
        );
    }
    Ok(())
}
