//! `--db sim --sim-replicas N` for the runner: clients bound to the
//! simulated nodes of one [`Cluster`] behind a mutex, and the faults on it
//! ([`super::process::SimFaults`]) the nemesis drives.
//!
//! A client asks its own node; a paused node does not answer, so the
//! client waits (yielding every millisecond) until it is resumed or the
//! runner's op timeout gives up on it (`info`). True time for the cluster
//! (`skewed-read`) is microseconds since the factory was made.

use super::cluster::{Cluster, ClusterTxn};
use super::engine::EngineOptions;
use super::process::SimFaults;
use super::{SimError, SimMode};
use crate::client::{BoxFuture, Client, ClientError, ClientFactory, InProcessFaults};
use nemesis::Node;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use store::MicroOp;
use workloads::rng::derive_seed;

/// Shared by the factory, its clients and the fault hooks.
pub(crate) struct Shared {
    pub(crate) cluster: Cluster,
    sessions: u64,
}

/// The node names of `n` simulated replicas: `s1` … `sN`.
pub fn replica_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("s{i}")).collect()
}

/// Opens clients of one simulated replicated database.
#[derive(Clone)]
pub struct ReplicatedFactory {
    shared: Arc<Mutex<Shared>>,
    start: Instant,
}

impl ReplicatedFactory {
    /// `replicas` nodes ([`replica_names`]) in `mode`, seeded by `seed`, with
    /// the default random abort probability (0.05).
    ///
    /// # Errors
    /// [`SimError::InvalidConfig`] for no replicas.
    pub fn new(mode: SimMode, replicas: usize, seed: u64) -> Result<ReplicatedFactory, SimError> {
        let opts = EngineOptions::new(mode, derive_seed(seed, 1));
        let cluster = Cluster::new(replica_names(replicas), opts)?;
        Ok(ReplicatedFactory {
            shared: Arc::new(Mutex::new(Shared {
                cluster,
                sessions: 0,
            })),
            start: Instant::now(),
        })
    }

    /// Runs `f` on the cluster (for tests and statistics).
    ///
    /// # Errors
    /// An indefinite error if a client panicked while holding the cluster.
    pub fn with_cluster<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> Result<T, ClientError> {
        Ok(f(&mut lock(&self.shared)?.cluster))
    }

    /// The kill/pause and network hooks of this cluster.
    pub fn faults(&self) -> SimFaults {
        SimFaults::new(self.shared.clone())
    }
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> Result<MutexGuard<'_, Shared>, ClientError> {
    shared
        .lock()
        .map_err(|_| ClientError::indefinite("sim-poisoned", "simulator cluster lock poisoned"))
}

fn client_error(e: &SimError) -> ClientError {
    if e.is_definite() {
        ClientError::definite(e.code(), e.to_string())
    } else {
        ClientError::indefinite(e.code(), e.to_string())
    }
}

impl ClientFactory for ReplicatedFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async { Ok(()) })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        let shared = Arc::clone(&self.shared);
        let start = self.start;
        Box::pin(async move {
            let (session, index) = {
                let mut s = lock(&shared)?;
                s.sessions += 1;
                let index = s.cluster.node_index(&node.name).ok_or_else(|| {
                    ClientError::definite(
                        "unknown-node",
                        format!("no simulated node {:?}", node.name),
                    )
                })?;
                (s.sessions, index)
            };
            Ok(Box::new(ReplicaClient {
                shared,
                session,
                node: index,
                start,
            }) as Box<dyn Client>)
        })
    }

    fn in_process_faults(&self) -> Option<InProcessFaults> {
        let f = Arc::new(self.faults());
        Some(InProcessFaults {
            process: f.clone(),
            network: f,
        })
    }
}

/// One session to one simulated node.
pub struct ReplicaClient {
    shared: Arc<Mutex<Shared>>,
    session: u64,
    node: usize,
    start: Instant,
}

/// Aborts the transaction if the invoke future is dropped midway (an op
/// timeout while the node is paused).
struct OpenTxn {
    shared: Arc<Mutex<Shared>>,
    txn: Option<ClusterTxn>,
}

impl Drop for OpenTxn {
    fn drop(&mut self) {
        if let Some(t) = self.txn.take()
            && let Ok(mut s) = self.shared.lock()
        {
            s.cluster.abort(t);
        }
    }
}

impl ReplicaClient {
    fn now_us(&self) -> i64 {
        i64::try_from(self.start.elapsed().as_micros()).unwrap_or(i64::MAX)
    }

    /// Runs `step` until the node answers (it is not paused).
    async fn answered<T>(
        &self,
        mut step: impl FnMut(&mut Cluster, i64) -> Result<T, SimError>,
    ) -> Result<Result<T, SimError>, ClientError> {
        loop {
            let r = {
                let mut s = lock(&self.shared)?;
                step(&mut s.cluster, self.now_us())
            };
            match r {
                Err(SimError::Paused { .. }) => tokio::time::sleep(Duration::from_millis(1)).await,
                r => return Ok(r),
            }
        }
    }
}

impl Client for ReplicaClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(async move {
            let read_only = txn.iter().all(|m| matches!(m, MicroOp::Read(..)));
            let (node, session) = (self.node, self.session);
            let id = self
                .answered(|c, now| c.begin(node, session, read_only, now))
                .await?
                .map_err(|e| client_error(&e))?;
            let mut guard = OpenTxn {
                shared: Arc::clone(&self.shared),
                txn: Some(id),
            };
            let cas_old = workloads::cas_register::as_cas(txn).map(|(_, old, _)| old.clone());
            let mut done = Vec::with_capacity(txn.len());
            for mop in txn {
                let r = self.answered(|c, _| c.execute(node, id, mop)).await?;
                match r {
                    Ok(MicroOp::Read(k, seen))
                        if cas_old
                            .as_ref()
                            .is_some_and(|old| seen != store::ReadValue::Scalar(old.clone())) =>
                    {
                        return Err(ClientError::definite(
                            "cas-mismatch",
                            format!("cas on key {k:?}: the value was {seen:?}"),
                        ));
                    }
                    Ok(m) => done.push(m),
                    Err(e) => {
                        guard.txn = None;
                        return Err(client_error(&e));
                    }
                }
                tokio::task::yield_now().await;
            }
            let r = self.answered(|c, now| c.commit(node, id, now)).await?;
            guard.txn = None;
            r.map(|()| done).map_err(|e| client_error(&e))
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
