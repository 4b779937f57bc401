//! The one lifecycle of the tarball databases: a [`Cluster`] — which nodes
//! get which binaries of the release, the daemons in start order (in
//! stages, each followed by its own steps: `cockroach init`, waiting for
//! PD), how to tell the cluster serves, what teardown removes — becomes
//! the command plans of a [`Spec`] here, the same way for each database.
//! Each database's `lifecycle.rs` says only what its cluster is.

use crate::cluster::{Daemon, Install, Plan, Spec, Step, install_steps, node_logs};
use crate::db::NodeLog;
use nemesis::Node;

/// A node that gets the release.
#[derive(Clone, Debug)]
pub struct Member {
    /// The node.
    pub node: Node,
    /// The binaries it needs, relative to the unpacked release (checked
    /// after unpacking).
    pub binaries: Vec<&'static str>,
    /// Steps on it right after its install (YugabyteDB's
    /// `post_install.sh`, data directories).
    pub then: Plan,
    /// What teardown removes on it (after the daemons are killed).
    pub wipe: Vec<String>,
}

/// Daemons started together, then the steps that must follow them before
/// the next stage starts.
#[derive(Clone, Debug, Default)]
pub struct Stage {
    /// `(node, daemon)`, in start order.
    pub daemons: Vec<(String, Daemon)>,
    /// Steps after they are started (each with its retries).
    pub then: Plan,
}

/// A tarball database's cluster on its nodes: what its recipe says.
#[derive(Clone, Debug)]
pub struct Cluster<'a> {
    /// Database name (`cockroach`, `tidb`, `yugabyte`).
    pub name: &'static str,
    /// Product name, for the messages of a missing binary (`CockroachDB`).
    pub product: &'static str,
    /// Where and what to install, `--no-setup`.
    pub install: &'a Install,
    /// Logs kept from every node (those of a daemon only where it runs).
    pub logs: &'static [NodeLog],
    /// The nodes that get the release, in test order.
    pub members: Vec<Member>,
    /// The daemons, in stages, in start order.
    pub stages: Vec<Stage>,
    /// Steps that succeed once the cluster serves (each with retries).
    pub ready: Plan,
    /// Nodes clients connect to.
    pub client_nodes: Vec<Node>,
    /// Primaries (TiDB's PD nodes, YugabyteDB's masters).
    pub primaries: Vec<Node>,
}

impl Cluster<'_> {
    /// The command plans: every member's install (and its own steps),
    /// then each stage's daemons started (`start <binary>`) and its
    /// steps; the logs of the daemons each node runs; teardown's wipe.
    pub fn spec(self) -> Spec {
        let layout = &self.install.layout;
        let mut setup = Plan::default();
        for m in &self.members {
            setup.extend(install_steps(
                layout,
                &m.node.name,
                &self.install.tarball,
                self.product,
                &m.binaries,
            ));
            setup.extend(m.then.clone());
        }
        let mut daemons = Vec::new();
        for stage in self.stages {
            for (node, d) in stage.daemons {
                let program = d.bin.rsplit('/').next().unwrap_or(&d.name);
                setup.push(Step::run(&node, format!("start {program}"), d.start_cmd()));
                daemons.push((node, d));
            }
            setup.extend(stage.then);
        }
        let mut logs = Vec::new();
        let mut wipe = Vec::new();
        for m in self.members {
            let name = &m.node.name;
            let runs = |daemon: &str| daemons.iter().any(|(n, d)| n == name && d.name == daemon);
            logs.extend(node_logs(name, self.logs, &layout.dir(name), runs));
            wipe.extend(m.wipe.into_iter().map(|p| (name.clone(), p)));
        }
        Spec {
            name: self.name,
            setup,
            ready: self.ready,
            daemons,
            wipe,
            logs,
            client_nodes: self.client_nodes,
            primaries: self.primaries,
            no_setup: self.install.no_setup,
        }
    }
}
