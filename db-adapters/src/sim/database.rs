//! The simulator's catalog entry (`--db sim`): embedded, no SQL (no
//! dialect, no range reads), bug modes (`--sim-bug`), every isolation
//! level it models, and a default transaction limit ([`super::DEFAULT_OPS`]).
//! With `--sim-replicas N` its factory is a [`super::ReplicatedFactory`]
//! (simulated nodes `s1`…`sN` with in-process faults); the replication bug
//! modes need it.

use super::{ReplicatedFactory, SimFactory, SimMode};
use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags, no_local_server, not_on_nodes,
};
use crate::client::{BoxFuture, ClientFactory};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use workloads::WorkloadKind;

/// The in-memory simulator.
pub struct Sim;

/// The simulator's mode: the bug mode, or the behaviour of `isolation`.
///
/// # Errors
/// A level the simulator does not model, naming `--isolation`.
pub fn sim_mode(bug: Option<SimMode>, isolation: Isolation) -> Result<SimMode, String> {
    match bug {
        Some(b) => Ok(b),
        None => {
            SimMode::parse(isolation.name()).map_err(|e| format!("--isolation (for --db sim): {e}"))
        }
    }
}

impl Database for Sim {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "The in-memory simulator with selectable isolation and bugs"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }
    fn placement(&self) -> Placement {
        Placement::Embedded
    }
    fn node_count(&self) -> NodeCount {
        NodeCount::ANY
    }
    fn default_port(&self) -> Option<u16> {
        None
    }
    fn log_files(&self) -> &'static [NodeLog] {
        &[]
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        // Its modes: no repeatable-read (`SimMode` has none to run).
        &[
            Isolation::Serializable,
            Isolation::SnapshotIsolation,
            Isolation::ReadCommitted,
            Isolation::ReadUncommitted,
        ]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        None
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            range_reads: false,
            bug_modes: true,
            tarball: false,
            local_server: false,
            replicas: false,
            lossy_data_dir: false,
            clock_faults: ClockFaults::Simulated,
            membership: false,
            default_ops: Some(super::DEFAULT_OPS),
        }
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        false
    }
    fn supports(&self, w: WorkloadKind, _on_nodes: bool) -> bool {
        w != WorkloadKind::Predicate
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        check_reach_and_flags(self, s, nodes.is_some())?;
        let mode = sim_mode(s.sim_bug, s.isolation)?;
        if mode.is_replicated_bug() && s.sim_replicas == 0 {
            return Err(format!(
                "--sim-bug {mode} is a bug of replication: give --sim-replicas N (3 is typical)"
            ));
        }
        if s.sim_replicas > 0 && s.jepsen.is_some() {
            return Err(
                "--sim-replicas runs the transactional workloads (list-append, rw-register, register) only"
                    .to_string(),
            );
        }
        Ok(s.isolation)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        _url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        let mode = sim_mode(s.sim_bug, s.isolation)?;
        if s.sim_replicas > 0 {
            return ReplicatedFactory::new(mode, s.sim_replicas, s.seed)
                .map(|f| Arc::new(f) as Arc<dyn ClientFactory>)
                .map_err(|e| format!("--sim-replicas: {e}"));
        }
        let sim = SimFactory::new(mode, s.seed);
        Ok(match s.jepsen {
            // Every Jepsen workload, long-fork included, has its own client.
            Some(w) => Arc::new(super::jepsen::JepsenSimFactory::new(sim, w)),
            None => Arc::new(sim),
        })
    }
    fn lifecycle(
        &self,
        _s: &DbSettings,
        _remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        Err(not_on_nodes(self))
    }
    fn start_local(
        &self,
        _s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        no_local_server(self)
    }
}
