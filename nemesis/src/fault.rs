//! Applying and healing faults on a cluster.
//!
//! Partitions are iptables DROP rules inside each receiving node, all in a
//! chain owned by harness ([`CHAIN`]) that `INPUT` jumps to first. Healing
//! removes the jump and the chain and nothing else, so it never touches
//! rules harness did not write, and it is idempotent (it runs at the start
//! of every run to clear rules left by a crashed one). Kill and pause go
//! through the database's [`Process`]; clock faults through its
//! libfaketime control files ([`crate::clock`]). On simulated nodes
//! ([`Nemesis::with_simulated_network`]) partitions and clock offsets are
//! calls into the simulator ([`crate::simulated`]), and a heal also resets
//! their clocks.
//! Membership changes (`leave`, `join`) go through the database's
//! [`Membership`], which the nemesis remembers until every removed node
//! joined again ([`crate::membership`]).

use crate::Node;
use crate::clock::fault::ClockFault;
use crate::durability::{self, DurabilityFault};
use crate::lossyfs::ctl::{Command, Reply};
use crate::membership::{self, Membership, MembershipError};
use crate::packet::{self, PacketFault};
use crate::partition::{Grudge, grudge_data};
use crate::process::{Process, ProcessError};
use crate::remote::{Remote, RemoteError};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Data, F};
use tokio::task::JoinSet;

mod durable;
mod effect;
mod network;

/// The iptables chain holding every partition rule harness writes.
pub const CHAIN: &str = "harness-nemesis";

/// One fault (its start; its stop is implied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Drop packets as the grudge says.
    Partition(Grudge),
    /// SIGKILL the database on these nodes (stop: start them).
    Kill(Vec<String>),
    /// SIGSTOP the database on these nodes (stop: SIGCONT).
    Pause(Vec<String>),
    /// File corruption or disk errors through the lossy filesystem.
    Durability(DurabilityFault),
    /// Loss, duplication or a rate limit on the target nodes' links.
    Packet(PacketFault),
    /// A clock bump, strobe or reset through libfaketime (one op, no stop).
    Clock(ClockFault),
    /// This node leaves the cluster (stop: it joins again).
    Leave(String),
}

impl Fault {
    /// The `f` of the op that starts it.
    pub fn start_f(&self) -> F {
        match self {
            Fault::Partition(_) => F::StartPartition,
            Fault::Kill(_) => F::Kill,
            Fault::Pause(_) => F::Pause,
            Fault::Durability(d) => d.start_f(),
            Fault::Packet(_) => F::Other("start-packet".into()),
            Fault::Clock(c) => c.f(),
            Fault::Leave(_) => F::Leave,
        }
    }

    /// The `f` of the op that stops it.
    pub fn stop_f(&self) -> F {
        match self {
            Fault::Partition(_) => F::StopPartition,
            Fault::Kill(_) => F::Start,
            Fault::Pause(_) => F::Resume,
            Fault::Durability(d) => d.stop_f(),
            Fault::Packet(_) => F::Other("stop-packet".into()),
            Fault::Clock(_) => F::StopClock,
            Fault::Leave(_) => F::Join,
        }
    }

    /// The value of the op that starts it (grudge or node list).
    pub fn start_value(&self) -> Data {
        match self {
            Fault::Partition(g) => grudge_data(g),
            Fault::Kill(n) | Fault::Pause(n) => nodes_data(n),
            Fault::Durability(d) => d.start_value(),
            Fault::Packet(p) => p.start_value(),
            Fault::Clock(c) => c.value(),
            Fault::Leave(n) => Data::Str(n.clone()),
        }
    }

    /// The value of the op that stops it (`nil` for a heal, else node list).
    pub fn stop_value(&self) -> Data {
        match self {
            Fault::Partition(_) | Fault::Packet(_) => Data::Nil,
            Fault::Kill(n) | Fault::Pause(n) => nodes_data(n),
            Fault::Durability(d) => nodes_data(d.nodes()),
            Fault::Clock(c) => nodes_data(&c.nodes()),
            Fault::Leave(n) => Data::Str(n.clone()),
        }
    }
}

/// Node names as a history value.
pub fn nodes_data(nodes: &[String]) -> Data {
    Data::Vec(nodes.iter().map(|n| Data::Str(n.clone())).collect())
}

/// A fault that could not be applied or healed.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// A command on a node failed.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// A process action failed.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// A grudge or target names a node that is not in the test.
    #[error("unknown node {0:?} in a fault")]
    UnknownNode(String),
    /// A node's host could not be resolved to an IP address.
    #[error("node {node}: cannot resolve host {host}: {detail}")]
    Resolve {
        /// Node name.
        node: String,
        /// Its host.
        host: String,
        /// Resolver error.
        detail: String,
    },
    /// The database has no process capability (kill/pause impossible).
    #[error("the database cannot be killed or paused (no process control)")]
    NoProcess,
    /// A clock fault could not be applied or measured.
    #[error("node {node}: clock: {detail}")]
    Clock {
        /// Node name.
        node: String,
        /// Why.
        detail: String,
    },
    /// A membership change failed.
    #[error(transparent)]
    Membership(#[from] MembershipError),
    /// The database cannot change its membership.
    #[error("the database cannot change its membership (no membership control)")]
    NoMembership,
    /// iptables is missing on a node.
    #[error("node {0}: iptables is not installed (on Debian: apt-get install -y iptables)")]
    NoIptables(String),
    /// Several nodes failed; all errors, in node order.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Many(Vec<FaultError>),
}

#[derive(Default, Debug)]
struct Active {
    partitioned: bool,
    killed: BTreeSet<String>,
    paused: BTreeSet<String>,
    disk_failed: BTreeSet<String>,
    /// Node → the data file whose chunks a `snapshot-file-chunks` saved.
    snapshots: BTreeMap<String, String>,
    /// Nodes removed from the cluster that have not joined again.
    removed: BTreeSet<String>,
    result: Option<Data>,
    /// What the running fault did not do though asked (no-ops).
    note: Option<String>,
}

/// Applies faults to the nodes of one test and heals them. Faults of
/// different packages may overlap: stopping a partition removes its own
/// rules only, and [`Nemesis::heal_all`] removes everything.
pub struct Nemesis {
    remotes: Vec<Arc<dyn Remote>>,
    process: Option<Arc<dyn Process>>,
    membership: Option<Arc<dyn Membership>>,
    active: Mutex<Active>,
    clocks: Mutex<crate::clock::Offsets>,
    command_timeout: Duration,
    /// Partitions and clocks of simulated nodes (no iptables, no remotes).
    simulated: Option<Arc<dyn crate::simulated::SimulatedNetwork>>,
    /// Nodes known to have the harness binary (checked once per run, not
    /// at every strobe).
    pub(crate) has_binary: Mutex<BTreeSet<String>>,
}

fn join_errors(mut errs: Vec<FaultError>) -> Result<(), FaultError> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(FaultError::Many(errs)),
    }
}

pub use crate::partition::{drop_command, heal_command, undrop_command};

impl Nemesis {
    /// Whether kill and pause are possible (the database gave a [`Process`]).
    pub fn has_process(&self) -> bool {
        self.process.is_some()
    }

    /// A nemesis over `remotes` (one per node); `process` enables kill/pause.
    pub fn new(remotes: Vec<Arc<dyn Remote>>, process: Option<Arc<dyn Process>>) -> Nemesis {
        Nemesis {
            remotes,
            process,
            membership: None,
            active: Mutex::new(Active::default()),
            clocks: Mutex::new(crate::clock::Offsets::default()),
            command_timeout: Duration::from_secs(20),
            simulated: None,
            has_binary: Mutex::new(BTreeSet::new()),
        }
    }

    /// Sends partitions (and clock resets on heal) to `net` instead of
    /// running iptables on the remotes: the nodes are simulated.
    pub fn with_simulated_network(
        mut self,
        net: Arc<dyn crate::simulated::SimulatedNetwork>,
    ) -> Nemesis {
        self.simulated = Some(net);
        self
    }

    /// The simulated network, when the nodes are simulated (a clock fault
    /// sets offsets there instead of writing libfaketime control files).
    pub fn simulated_network(&self) -> Option<Arc<dyn crate::simulated::SimulatedNetwork>> {
        self.simulated.clone()
    }

    /// Gives the nemesis the database's membership control (`leave`/`join`).
    pub fn with_membership(mut self, membership: Option<Arc<dyn Membership>>) -> Nemesis {
        self.membership = membership;
        self
    }

    /// Whether membership changes are possible.
    pub fn has_membership(&self) -> bool {
        self.membership.is_some()
    }

    /// Nodes removed from the cluster that have not joined again.
    pub fn removed(&self) -> Vec<String> {
        self.lock().removed.iter().cloned().collect()
    }

    /// The process capability, if the database has one.
    pub fn process(&self) -> Option<Arc<dyn Process>> {
        self.process.clone()
    }

    /// The nodes, in test order.
    pub fn nodes(&self) -> Vec<Node> {
        self.remotes.iter().map(|r| r.node().clone()).collect()
    }

    pub(crate) fn remote(&self, name: &str) -> Result<Arc<dyn Remote>, FaultError> {
        self.remotes
            .iter()
            .find(|r| r.node().name == name)
            .cloned()
            .ok_or_else(|| FaultError::UnknownNode(name.to_string()))
    }

    async fn ip_of(&self, name: &str) -> Result<IpAddr, FaultError> {
        let r = self.remote(name)?;
        let node = r.node();
        if let Ok(ip) = node.host.parse::<IpAddr>() {
            return Ok(ip);
        }
        let resolve_err = |detail: String| FaultError::Resolve {
            node: node.name.clone(),
            host: node.host.clone(),
            detail,
        };
        let addrs = tokio::net::lookup_host((node.host.as_str(), 0))
            .await
            .map_err(|e| resolve_err(e.to_string()))?;
        let addrs: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
        addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| resolve_err("no address".to_string()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Active> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every node's current clock offset (what its control file says).
    pub(crate) fn clocks(&self) -> std::sync::MutexGuard<'_, crate::clock::Offsets> {
        self.clocks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `node` is down or paused by another package (a rate skew,
    /// which restarts the database, leaves such a node alone).
    pub(crate) fn is_faulted(&self, node: &str) -> bool {
        let a = self.lock();
        a.killed.contains(node) || a.paused.contains(node)
    }

    /// Sets what the running fault did (taken by [`Nemesis::take_result`]).
    pub(crate) fn set_result(&self, value: Data) {
        self.lock().result = Some(value);
    }

    /// The command timeout for one node.
    pub(crate) fn command_timeout(&self) -> Duration {
        self.command_timeout
    }

    /// Starts `fault` on every node it concerns, in parallel; returns once it
    /// is in effect everywhere.
    ///
    /// # Errors
    /// The errors of every node that failed (the fault is still recorded as
    /// active, so a heal undoes what did apply).
    pub async fn start(&self, fault: &Fault) -> Result<(), FaultError> {
        match fault {
            Fault::Partition(g) => self.partition(g).await,
            Fault::Kill(nodes) => {
                // Pending before it is done: a heal starts a half-killed node.
                self.lock().killed.extend(nodes.iter().cloned());
                self.process_effect(nodes, Action::Kill).await
            }
            Fault::Pause(nodes) => {
                // Pending before it is done: a heal resumes a half-paused node.
                self.lock().paused.extend(nodes.iter().cloned());
                self.process_effect(nodes, Action::Pause).await
            }
            Fault::Durability(d) => self.start_durability(d).await,
            Fault::Packet(p) => self.shape(p).await,
            Fault::Clock(c) => self.start_clock(c).await,
            Fault::Leave(node) => self.leave(node).await,
        }
    }

    /// Stops `fault`: heals partitions, starts killed nodes, resumes paused ones.
    ///
    /// # Errors
    /// As [`Nemesis::start`].
    pub async fn stop(&self, fault: &Fault) -> Result<(), FaultError> {
        match fault {
            Fault::Partition(g) => self.unpartition(g).await,
            Fault::Packet(p) => self.unshape(p).await,
            Fault::Kill(nodes) => self.process_effect(nodes, Action::Start).await,
            Fault::Pause(nodes) => self.process_effect(nodes, Action::Resume).await,
            Fault::Durability(d @ DurabilityFault::Corrupt { .. }) => {
                let nodes = d.nodes();
                let r = self.each_process(nodes, Action::Start).await;
                if r.is_ok() {
                    let mut a = self.lock();
                    for n in nodes {
                        a.killed.remove(n);
                    }
                }
                r
            }
            Fault::Clock(_) => Ok(()),
            Fault::Durability(d @ DurabilityFault::Rollback { .. }) => self.restore(d).await,
            Fault::Durability(DurabilityFault::Disk { nodes, .. }) => {
                let r = self.each_ctl(nodes, &Command::Heal).await.map(|_| ());
                if r.is_ok() {
                    let mut a = self.lock();
                    for n in nodes {
                        a.disk_failed.remove(n);
                    }
                }
                r
            }
            Fault::Leave(node) => {
                let r = self.join(node).await;
                let result = match &r {
                    Ok(d) => d.clone(),
                    Err(e) => membership::result_data(vec![("error", Data::Str(e.to_string()))]),
                };
                self.lock().result = Some(membership::completion(node, result));
                r.map(|_| ())
            }
        }
    }

    async fn each_process(&self, nodes: &[String], action: Action) -> Result<(), FaultError> {
        let process = self.process.clone().ok_or(FaultError::NoProcess)?;
        let removed = self.lock().removed.clone();
        let mut set = JoinSet::new();
        for n in nodes {
            // A removed node is membership's until it joins: starting it
            // would bring it back without its data.
            if matches!(action, Action::Start) && removed.contains(n) {
                continue;
            }
            let node = self.remote(n)?.node().clone();
            let p = process.clone();
            set.spawn(async move {
                match action {
                    Action::Kill => p.kill(&node).await,
                    Action::Start => p.start(&node).await,
                    Action::Pause => p.pause(&node).await,
                    Action::Resume => p.resume(&node).await,
                }
                .map_err(FaultError::from)
            });
        }
        collect(set).await
    }
}

impl Nemesis {
    /// What the last started fault did, when it reports more than its
    /// start value (a corruption's damage); taken once.
    pub fn take_result(&self) -> Option<Data> {
        self.lock().result.take()
    }

    /// Sends `cmd` to the lossy filesystem of each node; node → reply.
    async fn each_ctl(
        &self,
        nodes: &[String],
        cmd: &Command,
    ) -> Result<BTreeMap<String, Reply>, FaultError> {
        let process = self.process.clone().ok_or(FaultError::NoProcess)?;
        let mut set = JoinSet::new();
        for n in nodes {
            let node = self.remote(n)?.node().clone();
            let (p, cmd) = (process.clone(), cmd.clone());
            set.spawn(async move {
                let cmd = match cmd {
                    Command::Corrupt { path, how, seed } if path.is_empty() => Command::Corrupt {
                        path: p.data_files().to_string(),
                        how,
                        seed,
                    },
                    Command::Fail(f) => Command::Fail(crate::lossyfs::ctl::DiskFault {
                        prefix: p.data_files().to_string(),
                        ..f
                    }),
                    c => c,
                };
                (node.name.clone(), p.lossy_ctl(&node, &cmd).await)
            });
        }
        let mut out = BTreeMap::new();
        let mut errs = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((n, Ok(reply))) => {
                    out.insert(n, reply);
                }
                Ok((_, Err(e))) => errs.push(FaultError::Process(e)),
                Err(e) => errs.push(FaultError::Process(ProcessError {
                    node: "?".into(),
                    action: "lossyfs",
                    message: e.to_string(),
                })),
            }
        }
        join_errors(errs).map(|()| out)
    }
}

impl Nemesis {
    /// Removes `node` unless the database's live view says the removal
    /// would break what it must keep; either way the completion value
    /// (`[node result]`) says what happened.
    async fn leave(&self, node: &str) -> Result<(), FaultError> {
        let m = self.membership.clone().ok_or(FaultError::NoMembership)?;
        self.remote(node)?;
        let refused = match m.members().await {
            Ok(view) => membership::removal_refused(&m.rules(), &view, node)
                .map(|why| (why, membership::names_data(&view))),
            // Jepsen's unknown view: do nothing rather than guess.
            Err(e) => Some((format!("no view of the members: {e}"), Data::Nil)),
        };
        if let Some((why, view)) = refused {
            tracing::info!("nemesis: leave {node} skipped: {why}");
            self.lock().result = Some(membership::completion(
                node,
                membership::result_data(vec![("skipped", Data::Str(why)), ("members", view)]),
            ));
            return Ok(());
        }
        // Pending before it is done: a heal joins a half-removed node too.
        self.lock().removed.insert(node.to_string());
        let r = m.remove(node).await;
        let result = match &r {
            Ok(d) => d.clone(),
            Err(e) => membership::result_data(vec![("error", Data::Str(e.to_string()))]),
        };
        self.lock().result = Some(membership::completion(node, result));
        r.map(|_| ()).map_err(FaultError::from)
    }

    /// Adds `node` back if this nemesis removed it (else does nothing).
    async fn join(&self, node: &str) -> Result<Data, FaultError> {
        if !self.lock().removed.contains(node) {
            return Ok(membership::result_data(vec![(
                "skipped",
                Data::Str("not removed".to_string()),
            )]));
        }
        let m = self.membership.clone().ok_or(FaultError::NoMembership)?;
        let d = m.add(node).await?;
        self.lock().removed.remove(node);
        Ok(d)
    }
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Kill,
    Start,
    Pause,
    Resume,
}

/// Runs an iptables command on `r` in `set`; exit 127 means no iptables.
fn spawn_iptables(
    set: &mut JoinSet<Result<(), FaultError>>,
    r: Arc<dyn Remote>,
    cmd: String,
    t: Duration,
) {
    set.spawn(async move {
        let out = r.exec(&cmd, None, t).await?;
        match out.status {
            0 => Ok(()),
            127 => Err(FaultError::NoIptables(r.node().name.clone())),
            s => Err(FaultError::Remote(RemoteError::Failed {
                node: r.node().name.clone(),
                cmd,
                status: s,
                stderr: out.stderr_str(),
            })),
        }
    });
}

async fn collect(mut set: JoinSet<Result<(), FaultError>>) -> Result<(), FaultError> {
    let mut errs = Vec::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errs.push(e),
            Err(join) => errs.push(FaultError::Process(ProcessError {
                node: "?".to_string(),
                action: "fault",
                message: format!("task failed: {join}"),
            })),
        }
    }
    join_errors(errs)
}
