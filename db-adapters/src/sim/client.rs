//! `--db sim` for the runner: clients sharing one engine behind a mutex,
//! yielding to tokio between micro-ops so concurrent workers interleave.

use super::engine::{Engine, EngineOptions, TxnId};
use super::{SimError, SimMode};
use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use nemesis::Node;
use rand::RngExt;
use std::sync::{Arc, Mutex};
use store::MicroOp;
use workloads::rng::{SeededRng, derive_seed, seeded};

struct Shared {
    engine: Engine,
    /// Decides which commits end indeterminate (`info`).
    rng: SeededRng,
    crash_probability: f64,
    /// Sessions opened so far (each client is one).
    sessions: u64,
}

/// Opens clients of one shared simulated database.
#[derive(Clone)]
pub struct SimFactory {
    shared: Arc<Mutex<Shared>>,
}

impl SimFactory {
    /// A fresh database in `mode`, seeded by `seed`, with the default random
    /// abort probability (0.05) and no crashes.
    pub fn new(mode: SimMode, seed: u64) -> SimFactory {
        SimFactory::from_engine(Engine::with_mode(mode, derive_seed(seed, 1)), 0.0, seed)
    }

    /// A database with explicit engine options and a probability that a
    /// commit ends indeterminate (the client reports an indefinite error;
    /// the engine commits or aborts at random).
    ///
    /// # Errors
    /// [`SimError::InvalidConfig`] for a probability outside `[0, 1]`.
    pub fn with_options(
        opts: EngineOptions,
        crash_probability: f64,
        seed: u64,
    ) -> Result<SimFactory, SimError> {
        super::engine::check_probability("crash-probability", crash_probability)?;
        Ok(SimFactory::from_engine(
            Engine::new(opts)?,
            crash_probability,
            seed,
        ))
    }

    fn from_engine(engine: Engine, crash_probability: f64, seed: u64) -> SimFactory {
        SimFactory {
            shared: Arc::new(Mutex::new(Shared {
                engine,
                rng: seeded(derive_seed(seed, 4)),
                crash_probability,
                sessions: 0,
            })),
        }
    }

    /// Runs `f` on the engine (for tests and statistics).
    ///
    /// # Errors
    /// An indefinite error if another client panicked while holding the engine.
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut Engine) -> T) -> Result<T, ClientError> {
        let mut shared = lock(&self.shared)?;
        Ok(f(&mut shared.engine))
    }
}

fn lock(shared: &Mutex<Shared>) -> Result<std::sync::MutexGuard<'_, Shared>, ClientError> {
    shared
        .lock()
        .map_err(|_| ClientError::indefinite("sim-poisoned", "simulator engine lock poisoned"))
}

fn client_error(e: &SimError) -> ClientError {
    if e.is_definite() {
        ClientError::definite(e.code(), e.to_string())
    } else {
        ClientError::indefinite(e.code(), e.to_string())
    }
}

impl ClientFactory for SimFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async { Ok(()) })
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let session = {
                let mut s = lock(&shared)?;
                s.sessions += 1;
                s.sessions
            };
            Ok(Box::new(SimClient { shared, session }) as Box<dyn Client>)
        })
    }
}

/// One session to the simulated database.
pub struct SimClient {
    shared: Arc<Mutex<Shared>>,
    session: u64,
}

/// Aborts the transaction if the invoke future is dropped midway, so its
/// locks do not outlive it.
struct OpenTxn {
    shared: Arc<Mutex<Shared>>,
    txn: TxnId,
    finished: bool,
}

impl Drop for OpenTxn {
    fn drop(&mut self) {
        if !self.finished
            && let Ok(mut s) = self.shared.lock()
        {
            s.engine.abort(self.txn);
        }
    }
}

impl Client for SimClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(async move {
            let id = lock(&self.shared)?.engine.begin_session(self.session);
            let mut guard = OpenTxn {
                shared: Arc::clone(&self.shared),
                txn: id,
                finished: false,
            };
            let mut done = Vec::with_capacity(txn.len());
            // The register workload's cas (`[r k old] [w k new]`): the read
            // must see `old`, else the cas fails definitely, nothing written.
            let cas_old = workloads::cas_register::as_cas(txn).map(|(_, old, _)| old.clone());
            for mop in txn {
                let result = lock(&self.shared)?.engine.execute(id, mop);
                match result {
                    Ok(store::MicroOp::Read(k, seen))
                        if cas_old
                            .as_ref()
                            .is_some_and(|old| seen != store::ReadValue::Scalar(old.clone())) =>
                    {
                        lock(&self.shared)?.engine.abort(id);
                        guard.finished = true;
                        return Err(ClientError::definite(
                            "cas-mismatch",
                            format!("cas on key {k:?}: the value was {seen:?}"),
                        ));
                    }
                    Ok(m) => done.push(m),
                    Err(e) => {
                        guard.finished = true;
                        return Err(client_error(&e));
                    }
                }
                tokio::task::yield_now().await;
            }
            let outcome = {
                let mut shared = lock(&self.shared)?;
                let p = shared.crash_probability;
                if p > 0.0 && shared.rng.random_bool(p) {
                    shared.engine.commit_indeterminate(id);
                    None
                } else {
                    Some(shared.engine.commit(id))
                }
            };
            guard.finished = true;
            match outcome {
                None => Err(ClientError::indefinite(
                    "crashed",
                    "simulated crash during commit: outcome unknown",
                )),
                Some(Ok(())) => Ok(done),
                Some(Err(e)) => Err(client_error(&e)),
            }
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
