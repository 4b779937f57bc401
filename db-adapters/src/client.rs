//! The `Client` trait: one database session per worker, and the definite /
//! indefinite classification of its errors. In the crate root: every
//! database's client implements it.

use nemesis::Node;
use std::future::Future;
use std::pin::Pin;
use store::MicroOp;

/// A boxed, sendable future (the traits here are used as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether an error proves the transaction did not take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Definitely not applied (e.g. serialization failure before commit) → `fail`.
    Definite,
    /// May have been applied (timeout, connection lost during commit, unknown) → `info`.
    Indefinite,
}

/// A classified client error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ClientError {
    /// Definite or indefinite.
    pub kind: ErrorKind,
    /// A short machine-readable tag recorded in the history's `error` field
    /// (e.g. `serialization-failure`, `40001`, `timeout`).
    pub code: String,
    /// Human-readable detail.
    pub message: String,
}

impl ClientError {
    /// A definite failure.
    pub fn definite(code: impl Into<String>, message: impl Into<String>) -> ClientError {
        ClientError {
            kind: ErrorKind::Definite,
            code: code.into(),
            message: message.into(),
        }
    }

    /// An indefinite failure.
    pub fn indefinite(code: impl Into<String>, message: impl Into<String>) -> ClientError {
        ClientError {
            kind: ErrorKind::Indefinite,
            code: code.into(),
            message: message.into(),
        }
    }
}

/// One session to a database, owned by one worker.
pub trait Client: Send {
    /// Runs one transaction; on success returns the micro-ops with reads
    /// filled in. Never retries.
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped future may leave the transaction in any
    /// state; the runner records it as `info` and opens a fresh client.
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>>;

    /// Runs one operation of function `f`: `txn`, and the register
    /// workload's `read`/`write`/`cas`, are [`Client::invoke`];
    /// the Jepsen workloads' functions (`read`, `transfer`, `add`, …, on
    /// micro-ops encoded as `jepsen/mod.rs` describes) are run by the
    /// clients that know them. Never retries.
    ///
    /// # Errors
    /// A definite `unsupported-f` error for a function this client does
    /// not run (nothing was sent), else as [`Client::invoke`].
    ///
    /// # Cancel safety
    /// Not cancel safe, as [`Client::invoke`].
    fn invoke_op<'a>(
        &'a mut self,
        f: &'a store::F,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        // The register workload's read/write/cas arrive as the micro-ops
        // every rw-register client runs (a cas is `[r k old] [w k new]`).
        if *f == store::F::Txn || workloads::cas_register::is_register_f(f) {
            self.invoke(txn)
        } else {
            let name = f.as_str().to_string();
            Box::pin(async move {
                Err(ClientError::definite(
                    "unsupported-f",
                    format!("this client runs only txn operations, not {name}"),
                ))
            })
        }
    }

    /// Closes the session (best effort).
    fn close(self: Box<Self>) -> BoxFuture<'static, ()>;

    /// White-box facts about the last transaction that completed `ok`
    /// (extra fields of its completion, e.g. PostgreSQL's `txid` and
    /// `snapshot` under `--version-order db`); empty by default.
    fn take_extra(&mut self) -> Vec<(String, store::Data)> {
        Vec::new()
    }
}

/// Opens clients of one database, and creates its schema.
pub trait ClientFactory: Send + Sync {
    /// Creates tables etc. once per test, before workers start.
    ///
    /// # Errors
    /// A classified error; the runner aborts the test with exit code 4.
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>>;

    /// Opens a session to `node`.
    ///
    /// # Errors
    /// A classified error (the node is unreachable, refused, …).
    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>>;

    /// Called once after the run, when no client is open (SQLite folds its
    /// write-ahead log back into the database file). Default: nothing.
    ///
    /// # Errors
    /// A classified error; the run only warns about it.
    fn finish(&self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async { Ok(()) })
    }

    /// The faults of a database whose nodes live in this process (the
    /// simulator's replicas): `None` (the default) for a real database,
    /// whose faults go through its nodes or its local server.
    fn in_process_faults(&self) -> Option<InProcessFaults> {
        None
    }
}

/// Kill/pause and the network of nodes simulated in this process
/// ([`ClientFactory::in_process_faults`]).
pub struct InProcessFaults {
    /// Kill, start, pause and resume of a node.
    pub process: std::sync::Arc<dyn nemesis::process::Process>,
    /// Partitions and clocks.
    pub network: std::sync::Arc<dyn nemesis::simulated::SimulatedNetwork>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::F;

    /// Echoes its micro-ops.
    struct Echo;

    impl Client for Echo {
        fn invoke<'a>(
            &'a mut self,
            txn: &'a [MicroOp],
        ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
            Box::pin(async move { Ok(txn.to_vec()) })
        }

        fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    fn op(f: &F) -> Result<Vec<MicroOp>, ClientError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| ClientError::definite("rt", e.to_string()))?;
        let mops = vec![MicroOp::Read(store::Key::int(1), store::ReadValue::Nil)];
        rt.block_on(Echo.invoke_op(f, &mops))
    }

    #[test]
    fn ordinary_clients_run_txn_and_the_register_functions() {
        for f in ["txn", "read", "write", "cas"] {
            assert!(op(&F::parse(f)).is_ok(), "{f}");
        }
    }

    #[test]
    fn ordinary_clients_refuse_other_functions_before_sending() {
        for f in ["transfer", "add", "frobnicate"] {
            let e = op(&F::parse(f)).err();
            assert_eq!(e.map(|e| e.code), Some("unsupported-f".to_string()), "{f}");
        }
    }
}
