//! The faults of simulated replicas, as the nemesis asks for them: kill,
//! start, pause and resume of a node ([`Process`]), partitions and clock
//! offsets ([`SimulatedNetwork`]), and the read of a node's clock
//! ([`Process::db_clock`]). Each is a method call on the shared
//! [`super::cluster::Cluster`]; nothing runs outside the process.

use super::replicated::{Shared, lock};
use nemesis::partition::Grudge;
use nemesis::process::{Process, ProcessError};
use nemesis::simulated::SimulatedNetwork;
use nemesis::{BoxFuture, Node};
use std::sync::{Arc, Mutex};

/// Kill/pause and the network of one simulated cluster.
#[derive(Clone)]
pub struct SimFaults {
    shared: Arc<Mutex<Shared>>,
}

impl SimFaults {
    pub(crate) fn new(shared: Arc<Mutex<Shared>>) -> SimFaults {
        SimFaults { shared }
    }

    fn on_node(
        &self,
        node: &Node,
        action: &'static str,
        f: impl FnOnce(&mut super::cluster::Cluster, usize),
    ) -> Result<(), ProcessError> {
        let err = |message: String| ProcessError {
            node: node.name.clone(),
            action,
            message,
        };
        let mut s = lock(&self.shared).map_err(|e| err(e.message))?;
        let i = s
            .cluster
            .node_index(&node.name)
            .ok_or_else(|| err("no such simulated node".to_string()))?;
        f(&mut s.cluster, i);
        Ok(())
    }

    fn with<T>(&self, f: impl FnOnce(&mut super::cluster::Cluster) -> T) -> Option<T> {
        lock(&self.shared).ok().map(|mut s| f(&mut s.cluster))
    }
}

impl Process for SimFaults {
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        let r = self.on_node(node, "kill", |c, i| c.kill(i));
        Box::pin(async move { r })
    }

    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        let r = self.on_node(node, "start", |c, i| c.start(i));
        Box::pin(async move { r })
    }

    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        let r = self.on_node(node, "pause", |c, i| c.pause(i));
        Box::pin(async move { r })
    }

    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        let r = self.on_node(node, "resume", |c, i| c.resume(i));
        Box::pin(async move { r })
    }

    fn is_running<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<bool>, ProcessError>> {
        let r = lock(&self.shared)
            .map_err(|e| ProcessError {
                node: node.name.clone(),
                action: "status",
                message: e.message,
            })
            .map(|s| s.cluster.node_index(&node.name).map(|i| s.cluster.is_up(i)));
        Box::pin(async move { r })
    }

    /// The node's clock as `skewed-read` reads it (true time plus the
    /// node's offset), bracketed by the harness clock; a killed or paused
    /// node cannot be asked, as a real database could not.
    fn db_clock<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<nemesis::clock::ClockReading, ProcessError>> {
        let err = |message: String| ProcessError {
            node: node.name.clone(),
            action: "clock",
            message,
        };
        let sent_s = nemesis::clock::now_s();
        let r = lock(&self.shared)
            .map_err(|e| err(e.message))
            .and_then(|s| {
                let i = s
                    .cluster
                    .node_index(&node.name)
                    .ok_or_else(|| err("no such simulated node".to_string()))?;
                s.cluster
                    .clock_offset_us(i)
                    .ok_or_else(|| err("the node is down or paused".to_string()))
            })
            .map(|offset_us| nemesis::clock::ClockReading {
                sent_s,
                db_s: nemesis::clock::now_s() + offset_us as f64 / 1e6,
                received_s: nemesis::clock::now_s(),
            });
        Box::pin(async move { r })
    }
}

impl SimulatedNetwork for SimFaults {
    fn partition(&self, grudge: &Grudge) -> Result<(), String> {
        self.with(|c| c.partition(grudge))
            .unwrap_or_else(|| Err("simulator lock poisoned".to_string()))
    }

    fn unpartition(&self, grudge: &Grudge) {
        self.with(|c| c.unpartition(grudge));
    }

    fn heal_network(&self) {
        self.with(|c| c.heal_network());
    }

    fn set_clock_offset(&self, node: &str, offset_ms: i64) -> Result<(), String> {
        self.with(|c| match c.node_index(node) {
            Some(i) => {
                c.set_clock_offset(i, offset_ms.saturating_mul(1000));
                Ok(())
            }
            None => Err(node.to_string()),
        })
        .unwrap_or_else(|| Err("simulator lock poisoned".to_string()))
    }

    fn reset_clocks(&self) {
        self.with(|c| c.reset_clocks());
    }
}
