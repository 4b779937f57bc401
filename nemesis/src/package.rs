//! Fault packages composed as Jepsen composes them (`gen/any`): every
//! package `--nemesis` names runs as its own task, concurrently, so faults
//! of different packages overlap (a kill while a partition is in effect).
//!
//! - Each package draws its faults and targets from its own RNG stream,
//!   derived from the run's seed and the package's name
//!   ([`Rng::stream`]): adding a package never changes another's schedule.
//! - Timing ([`Timing`]): `stagger` (default) waits uniform in
//!   `[0, 2·interval)` before each start and each stop; `fixed` waits
//!   exactly `interval`. No fault starts during `--initial-quiet-period`.
//! - `--nemesis-stable-period P`: time is cut into epochs of length P; per
//!   epoch, with probability ¼ no package runs, otherwise a random
//!   non-empty subset does (its own stream, `epochs`); a fault never
//!   outlives its epoch. Long runs alternate calm, single and mixed faults.
//! - Targets: kill, pause and packet faults draw a spec from their list
//!   ([`crate::target`]); partitions draw a shape from `--partition`'s
//!   list. Choreographies run their script ([`crate::choreo`]).
//! - Clock ops ([`crate::clock::fault`]) are single ops without a stop:
//!   offsets accumulate until a reset is drawn, and the package's last op
//!   resets every node.
//! - Membership draws one node to leave among those that are not
//!   primaries; its stop is the join ([`crate::membership`]), so one
//!   change is pending at a time.
//! - Ops: a fault's start (or stop) is an `invoke` + `info` pair of process
//!   `nemesis`; pairs are serialised by a lock, so the nemesis process never
//!   has two ops in flight, while effects overlap.
//!
//! Key decision: whatever ends the loop (the stop signal, an error), every
//! package stops what it started, then [`Nemesis::heal_all`] runs; a fault
//! error is recorded on its op and logged, never fatal to the loop.
//! [`validate`] rejects, before the run, targets and faults the database
//! or the nodes cannot honour.

use crate::choreo::{self, Step};
use crate::clock::fault::ClockFault;
use crate::durability::DurabilityFault;
use crate::fault::{Fault, FaultError, Nemesis};
use crate::packet::{Behavior, PacketFault};
use crate::partition::{PartitionKind, grudge};
use crate::rng::Rng;
use crate::schedule::{FaultKind, Recorder, start_recorded, stop_recorded, wait_or_stop};
use crate::target::{self, Target, TargetError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long to wait between a package's fault starts and stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// Uniform in `[0, 2·interval)` (Jepsen's `stagger`).
    #[default]
    Stagger,
    /// Exactly `interval`.
    Fixed,
}

impl std::str::FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stagger" => Ok(Timing::Stagger),
            "fixed" => Ok(Timing::Fixed),
            _ => Err(format!(
                "unknown schedule {s:?} (expected stagger or fixed)"
            )),
        }
    }
}

/// Everything about a composition besides the packages themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `--nemesis-interval`.
    pub interval: Duration,
    /// `--nemesis-schedule`.
    pub timing: Timing,
    /// `--initial-quiet-period`: no fault starts before it has passed.
    pub initial_quiet: Duration,
    /// `--nemesis-stable-period`: epochs of calm and chosen packages.
    pub stable_period: Option<Duration>,
    /// `--choreography-hold`: a choreography's sleeps.
    pub hold: Duration,
    /// `--partition`: the shapes partitions draw from.
    pub partitions: Vec<PartitionKind>,
    /// `--kill-targets`.
    pub kill_targets: Vec<Target>,
    /// `--pause-targets`.
    pub pause_targets: Vec<Target>,
    /// `--packet`: what a packet fault does to its links.
    pub packet: Behavior,
    /// `--packet-targets`.
    pub packet_targets: Vec<Target>,
    /// `--clock-rate`: the clock package also draws rate skews.
    pub clock_rate: Option<crate::clock::fault::RateFactor>,
    /// `--clock-mix`: how the clock package draws.
    pub clock_mix: crate::clock::fault::ClockMix,
    /// `--clock-monotonic`: whether a clock fault moves the wall clock
    /// only (the default) or `CLOCK_MONOTONIC` too (libfaketime).
    pub clock_mode: crate::clock::ClockMode,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            interval: Duration::from_secs(10),
            timing: Timing::Stagger,
            initial_quiet: Duration::ZERO,
            stable_period: None,
            hold: Duration::from_secs(30),
            partitions: vec![PartitionKind::Majority],
            kill_targets: vec![Target::One, Target::Minority, Target::Majority, Target::All],
            pause_targets: vec![Target::One, Target::Minority, Target::Majority, Target::All],
            packet: Behavior::default(),
            packet_targets: vec![Target::One, Target::Minority, Target::Majority, Target::All],
            clock_rate: None,
            clock_mix: crate::clock::fault::ClockMix::Jepsen,
            clock_mode: crate::clock::ClockMode::Wall,
        }
    }
}

/// Why a composition cannot run on these nodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A target spec the database cannot honour.
    #[error("--nemesis {kind}: {source}")]
    Target {
        /// The package.
        kind: FaultKind,
        /// Why.
        source: TargetError,
    },
    /// A fault the database cannot do.
    #[error("--nemesis {kind}: {db} {reason}")]
    Unsupported {
        /// The package.
        kind: FaultKind,
        /// The database.
        db: String,
        /// Why.
        reason: String,
    },
}

/// The packages, nodes and seed of one run's nemesis.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Enabled packages, in `--nemesis` order.
    pub kinds: Vec<FaultKind>,
    /// Timing and targets.
    pub options: Options,
    /// Node names in test order.
    pub nodes: Vec<String>,
    /// The database's primaries (empty: no notion of primaries).
    pub primaries: Vec<String>,
    /// The run's nemesis seed.
    pub seed: u64,
}

/// Checks that every package can run: targets resolve to nodes of the
/// test, kill/pause only when the database gives process control
/// (`has_process`), membership only when it gives membership control
/// (`has_membership`) and has a node that may leave, choreographies on at
/// least 3 nodes. `db` names the database in errors.
///
/// # Errors
/// The first package that cannot run, naming node or reason.
pub fn validate(
    plan: &Plan,
    has_process: bool,
    has_membership: bool,
    db: &str,
) -> Result<(), PlanError> {
    let n = plan.nodes.len();
    for &kind in &plan.kinds {
        if kind.needs_membership() {
            let reason = if !has_membership {
                Some("has no membership changes (its lifecycle gives no membership control)".into())
            } else if leave_pool(plan).is_empty() {
                Some(format!("runs on {n} node(s), none of which may leave"))
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(PlanError::Unsupported {
                    kind,
                    db: db.to_string(),
                    reason,
                });
            }
        }
        if kind.needs_process() && !has_process {
            return Err(PlanError::Unsupported {
                kind,
                db: db.to_string(),
                reason: "cannot be killed or paused (no process control)".to_string(),
            });
        }
        if kind.is_choreography() && n < choreo::MIN_NODES {
            return Err(PlanError::Unsupported {
                kind,
                db: db.to_string(),
                reason: format!("runs on {n} nodes; the choreography needs at least 3"),
            });
        }
        let targets: &[Target] = match kind {
            FaultKind::Kill => &plan.options.kill_targets,
            FaultKind::Pause => &plan.options.pause_targets,
            FaultKind::Packet => &plan.options.packet_targets,
            _ => &[],
        };
        target::validate(targets, &plan.nodes, &plan.primaries, db)
            .map_err(|source| PlanError::Target { kind, source })?;
        if matches!(kind, FaultKind::Partition | FaultKind::Packet) {
            if n < 2 {
                return Err(PlanError::Unsupported {
                    kind,
                    db: db.to_string(),
                    reason: format!("runs on {n} node: nothing to partition"),
                });
            }
            if plan.options.partitions.contains(&PartitionKind::Primaries)
                && plan.primaries.is_empty()
            {
                return Err(PlanError::Target {
                    kind,
                    source: TargetError::NoPrimaries { db: db.to_string() },
                });
            }
        }
    }
    Ok(())
}

/// Checks that clock faults can reach the database: `has_clock` when it
/// was started under libfaketime on every node ([`Nemesis::has_clock`]).
///
/// # Errors
/// [`PlanError::Unsupported`] for `--nemesis clock` without it.
pub fn validate_clock(plan: &Plan, has_clock: bool, db: &str) -> Result<(), PlanError> {
    if plan.kinds.contains(&FaultKind::Clock) && !has_clock {
        return Err(PlanError::Unsupported {
            kind: FaultKind::Clock,
            db: db.to_string(),
            reason: "was not started under libfaketime (no clock control files)".to_string(),
        });
    }
    Ok(())
}

/// The next fault of package `kind` (`None` for a choreography).
pub fn next_fault(kind: FaultKind, plan: &Plan, rng: &mut Rng) -> Option<Fault> {
    let pick = |list: &[Target], rng: &mut Rng| -> Vec<String> {
        match list.get(rng.below(list.len())) {
            Some(t) => target::resolve(t, &plan.nodes, &plan.primaries, rng),
            None => Vec::new(),
        }
    };
    Some(match kind {
        FaultKind::Partition => {
            let shapes = &plan.options.partitions;
            let shape = shapes
                .get(rng.below(shapes.len()))
                .copied()
                .unwrap_or(PartitionKind::Majority);
            Fault::Partition(grudge(shape, &plan.nodes, &plan.primaries, rng))
        }
        FaultKind::Kill => Fault::Kill(pick(&plan.options.kill_targets, rng)),
        FaultKind::Pause => Fault::Pause(pick(&plan.options.pause_targets, rng)),
        FaultKind::Bitflip | FaultKind::TruncateFile => {
            let nodes = target::resolve(&Target::Minority, &plan.nodes, &plan.primaries, rng);
            let truncate = kind == FaultKind::TruncateFile;
            Fault::Durability(DurabilityFault::corrupt(nodes, truncate, rng))
        }
        FaultKind::RestoreFile => {
            let nodes = target::resolve(&Target::Minority, &plan.nodes, &plan.primaries, rng);
            Fault::Durability(DurabilityFault::rollback(nodes, rng))
        }
        FaultKind::DiskError => {
            let nodes = target::resolve(&Target::Minority, &plan.nodes, &plan.primaries, rng);
            Fault::Durability(DurabilityFault::disk(nodes, rng))
        }
        FaultKind::Packet => Fault::Packet(PacketFault {
            targets: pick(&plan.options.packet_targets, rng),
            behavior: plan.options.packet.clone(),
        }),
        FaultKind::Clock => Fault::Clock(crate::clock::fault::draw_mix(
            plan.options.clock_mix,
            &plan.nodes,
            plan.options.interval,
            plan.options.clock_rate,
            rng,
        )),
        FaultKind::Membership => {
            let pool = leave_pool(plan);
            Fault::Leave(pool.get(rng.below(pool.len()))?.clone())
        }
        FaultKind::PartKill | FaultKind::PauseKill => return None,
    })
}

/// The nodes a membership change may remove: every node but the primaries.
fn leave_pool(plan: &Plan) -> Vec<String> {
    plan.nodes
        .iter()
        .filter(|n| !plan.primaries.contains(n))
        .cloned()
        .collect()
}

/// Whether package number `index` of `count` runs in stable-period epoch
/// `epoch` (pure: the same seed gives the same epochs).
pub fn enabled_in_epoch(seed: u64, epoch: u64, index: usize, count: usize) -> bool {
    let mut r = Rng::stream(seed, &format!("epochs/{epoch}"));
    if r.below(4) == 0 || count == 0 {
        return false;
    }
    let subsets = (1u64 << count.min(63)) - 1;
    let mask = 1 + r.next_u64() % subsets;
    mask & (1 << index) != 0
}

struct Ctx {
    nemesis: Arc<Nemesis>,
    recorder: Arc<dyn Recorder>,
    plan: Plan,
    /// Serialises op pairs: the nemesis process has one op in flight.
    ops: tokio::sync::Mutex<()>,
    begin: Instant,
}

impl Ctx {
    async fn start(&self, f: &Fault) {
        let _g = self.ops.lock().await;
        if let Err(e) = start_recorded(&self.nemesis, self.recorder.as_ref(), f).await {
            tracing::warn!("nemesis: starting {:?}: {e}", f.start_f().as_str());
        }
    }

    async fn stop(&self, f: &Fault) {
        let _g = self.ops.lock().await;
        if let Err(e) = stop_recorded(&self.nemesis, self.recorder.as_ref(), f).await {
            tracing::warn!("nemesis: stopping {:?}: {e}", f.stop_f().as_str());
        }
    }

    fn gap(&self, rng: &mut Rng) -> Duration {
        match self.plan.options.timing {
            Timing::Stagger => rng.stagger(self.plan.options.interval),
            Timing::Fixed => self.plan.options.interval,
        }
    }

    /// With a stable period: whether package `index` may run now, and the
    /// end of the current epoch.
    fn epoch(&self, index: usize) -> (bool, Option<Instant>) {
        let Some(p) = self.plan.options.stable_period.filter(|p| !p.is_zero()) else {
            return (true, None);
        };
        let since = self
            .begin
            .elapsed()
            .saturating_sub(self.plan.options.initial_quiet);
        let e = u64::try_from(since.as_nanos() / p.as_nanos()).unwrap_or(u64::MAX);
        let end = self.begin
            + self.plan.options.initial_quiet
            + p.saturating_mul(u32::try_from(e.saturating_add(1)).unwrap_or(u32::MAX));
        let on = enabled_in_epoch(self.plan.seed, e, index, self.plan.kinds.len());
        (on, Some(end))
    }
}

/// Waits `d`, but not past `until`; returns whether `stop` fired.
async fn wait(d: Duration, until: Option<Instant>, stop: &mut watch::Receiver<bool>) -> bool {
    let d = match until {
        Some(u) => d.min(u.saturating_duration_since(Instant::now())),
        None => d,
    };
    wait_or_stop(d, stop).await
}

async fn package_loop(ctx: Arc<Ctx>, index: usize, mut stop: watch::Receiver<bool>) {
    let kind = ctx.plan.kinds[index];
    let mut rng = Rng::stream(ctx.plan.seed, kind.as_str());
    if wait_or_stop(ctx.plan.options.initial_quiet, &mut stop).await {
        return;
    }
    loop {
        let (on, end) = ctx.epoch(index);
        if !on {
            let rest = end.map_or(Duration::ZERO, |e| {
                e.saturating_duration_since(Instant::now())
            });
            if wait_or_stop(rest, &mut stop).await {
                return;
            }
            continue;
        }
        let gap = ctx.gap(&mut rng);
        if wait(gap, end, &mut stop).await {
            return;
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            continue;
        }
        if kind.is_choreography() {
            if run_script(&ctx, kind, &mut stop).await {
                return;
            }
            continue;
        }
        let Some(fault) = next_fault(kind, &ctx.plan, &mut rng) else {
            return;
        };
        if let Fault::Clock(_) = fault {
            // One op, no stop: offsets accumulate until a reset is drawn.
            ctx.start(&fault).await;
            continue;
        }
        ctx.start(&fault).await;
        let hold = ctx.gap(&mut rng);
        let stopped = wait(hold, end, &mut stop).await;
        ctx.stop(&fault).await;
        if stopped {
            return;
        }
    }
}

/// Runs one cycle of a choreography; returns whether `stop` fired (what
/// the script had started is stopped, newest first, either way).
async fn run_script(ctx: &Ctx, kind: FaultKind, stop: &mut watch::Receiver<bool>) -> bool {
    let mut active: Vec<Fault> = Vec::new();
    let mut stopped = false;
    for step in choreo::script(kind, &ctx.plan.nodes) {
        match step {
            Step::Start(f) => {
                ctx.start(&f).await;
                active.push(f);
            }
            Step::Stop(f) => {
                ctx.stop(&f).await;
                active.retain(|a| *a != f);
            }
            Step::Hold => {
                if wait_or_stop(ctx.plan.options.hold, stop).await {
                    stopped = true;
                    break;
                }
            }
        }
    }
    while let Some(f) = active.pop() {
        ctx.stop(&f).await;
    }
    stopped
}

/// Runs every package of `plan` concurrently until `stop` turns true (or
/// its sender is dropped); then every package stops its active fault and
/// everything is healed.
///
/// # Errors
/// The final heal's error (faults may remain: the caller must heal again
/// or report it).
pub async fn run(
    nemesis: Arc<Nemesis>,
    plan: Plan,
    recorder: Arc<dyn Recorder>,
    stop: watch::Receiver<bool>,
) -> Result<(), FaultError> {
    let ctx = Arc::new(Ctx {
        nemesis: nemesis.clone(),
        recorder,
        plan,
        ops: tokio::sync::Mutex::new(()),
        begin: Instant::now(),
    });
    let mut set = tokio::task::JoinSet::new();
    for index in 0..ctx.plan.kinds.len() {
        let (ctx, stop) = (ctx.clone(), stop.clone());
        set.spawn(async move {
            package_loop(ctx.clone(), index, stop).await;
            if ctx.plan.kinds[index] == FaultKind::Clock {
                // The clock package's final op: every node back to +0.
                let all = ClockFault::Reset(ctx.plan.nodes.clone());
                ctx.start(&Fault::Clock(all)).await;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        if let Err(e) = r {
            tracing::warn!("nemesis package task: {e}");
        }
    }
    nemesis.heal_all().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn plan(kinds: Vec<FaultKind>, seed: u64) -> Plan {
        Plan {
            kinds,
            options: Options {
                partitions: vec![PartitionKind::One, PartitionKind::Majority],
                ..Options::default()
            },
            nodes: (1..=5).map(|i| format!("n{i}")).collect(),
            primaries: vec![],
            seed,
        }
    }

    fn faults(kind: FaultKind, p: &Plan) -> Vec<Fault> {
        let mut rng = Rng::stream(p.seed, kind.as_str());
        (0..30)
            .filter_map(|_| next_fault(kind, p, &mut rng))
            .collect()
    }

    #[test]
    fn adding_a_package_does_not_change_another_packages_schedule() {
        let alone = plan(vec![FaultKind::Kill], 42);
        let composed = plan(
            vec![FaultKind::Partition, FaultKind::Kill, FaultKind::Pause],
            42,
        );
        assert_eq!(
            faults(FaultKind::Kill, &alone),
            faults(FaultKind::Kill, &composed)
        );
        assert_ne!(
            faults(FaultKind::Kill, &alone),
            faults(FaultKind::Kill, &plan(vec![FaultKind::Kill], 43))
        );
        let parts = faults(FaultKind::Partition, &composed);
        // Both shapes are drawn: a lone node (4 edges in) and a 2/3 split.
        let sizes: BTreeSet<usize> = parts
            .iter()
            .map(|f| match f {
                Fault::Partition(g) => g.len(),
                _ => 0,
            })
            .collect();
        assert!(sizes.contains(&5), "{sizes:?}");
        for f in faults(FaultKind::Kill, &composed) {
            let Fault::Kill(t) = f else { continue };
            assert!([1, 2, 3, 5].contains(&t.len()), "{t:?}");
        }
    }

    #[test]
    fn stable_period_epochs_are_seeded_and_about_a_quarter_calm() {
        let calm = (0..400)
            .filter(|e| (0..3).all(|i| !enabled_in_epoch(5, *e, i, 3)))
            .count();
        assert!((60..140).contains(&calm), "{calm} calm epochs of 400");
        let same: Vec<bool> = (0..20).map(|e| enabled_in_epoch(5, e, 1, 3)).collect();
        let again: Vec<bool> = (0..20).map(|e| enabled_in_epoch(5, e, 1, 3)).collect();
        assert_eq!(same, again);
        assert!(!enabled_in_epoch(5, 0, 0, 0));
    }
}
