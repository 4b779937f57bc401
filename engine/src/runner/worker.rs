//! Workers: one slot per thread, pinned to a node, owning one client.
//!
//! A worker never decides what to do: it runs the job the interpreter gives
//! it, with the per-op timeout, and reports the completion. A job for a new
//! process (after an `info`) gets a fresh connection.
//!
//! Key decision: a worker is not a task of its own but a future ([`run_job`])
//! that owns its [`Slot`] while the job runs and hands it back with the
//! report; the interpreter polls every running job itself. Handing an op to a
//! worker task and its completion back through channels woke a parked
//! runtime thread twice per transaction (a futex wake and a context switch
//! each), which was most of the runner's cost against a fast database.

use db_adapters::client::{Client, ClientFactory, ErrorKind};
use nemesis::Node;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{MicroOp, OpType};

/// One invocation for a worker.
pub struct Job {
    /// The process the invocation was logged under.
    pub process: u64,
    /// The function (`txn`, or a Jepsen workload's `read`, `transfer`, …).
    pub f: store::F,
    /// The micro-ops (reads unfilled).
    pub mops: Vec<MicroOp>,
}

/// A worker's report of a finished job.
pub struct Done {
    /// The worker's thread slot.
    pub thread: usize,
    /// `Ok`, `Fail` or `Info`.
    pub op_type: OpType,
    /// The completed micro-ops (`ok`), or the invocation's (`fail`/`info`).
    pub value: Vec<MicroOp>,
    /// The error code and message, for `fail`/`info`.
    pub error: Option<(String, String)>,
    /// When the completion happened.
    pub at: Instant,
    /// White-box fields the client reported for an `ok` transaction
    /// (`Client::take_extra`), recorded as the completion's extra fields.
    pub extra: Vec<(String, store::Data)>,
}

/// What a worker needs to run.
pub struct WorkerSpec {
    /// Thread slot.
    pub thread: usize,
    /// The node it talks to.
    pub node: Node,
    /// Opens its clients.
    pub factory: Arc<dyn ClientFactory>,
    /// Per-op timeout (also bounds opening a connection).
    pub op_timeout: Duration,
}

/// One thread's worker between jobs: its client and the process it serves.
pub struct Slot {
    spec: WorkerSpec,
    client: Option<Box<dyn Client>>,
    client_process: Option<u64>,
    backoff: OpenBackoff,
}

impl Slot {
    /// A worker with no connection yet (it opens one at its first job).
    pub fn new(spec: WorkerSpec) -> Slot {
        Slot {
            spec,
            client: None,
            client_process: None,
            backoff: OpenBackoff::default(),
        }
    }

    /// Closes the worker's client, if it has one.
    pub async fn close(mut self) {
        if let Some(c) = self.client.take() {
            c.close().await;
        }
    }
}

/// Runs `job` on `slot`; returns the slot with the report.
///
/// # Cancel safety
/// Dropping the future drops the job's client mid-transaction (as a
/// timeout does); the op must then be recorded `info` by the caller.
pub async fn run_job(mut slot: Slot, job: Job) -> (Slot, Done) {
    if slot.client_process != Some(job.process)
        && let Some(old) = slot.client.take()
    {
        tokio::spawn(old.close());
    }
    slot.client_process = Some(job.process);
    let report = execute(&slot.spec, &mut slot.client, &job, &mut slot.backoff).await;
    (slot, report)
}

/// Error code of a transaction that failed because no connection opened.
const NO_CLIENT: &str = "no-client";

/// Pause after the worker failed to open a client: 100 ms, doubling to 1 s,
/// reset when one opens. Only for opening: once a client exists, its own
/// reconnect backoff (db-adapters `sql::reconnect_backoff`) paces retries, so
/// errors a client returns never pause the worker a second time.
#[derive(Default)]
struct OpenBackoff {
    failures: u32,
}

impl OpenBackoff {
    fn next(&mut self) -> Duration {
        let pause = Duration::from_millis(100) * 2u32.pow(self.failures.min(4));
        self.failures = self.failures.saturating_add(1);
        pause.min(Duration::from_secs(1))
    }
}

async fn execute(
    spec: &WorkerSpec,
    client: &mut Option<Box<dyn Client>>,
    job: &Job,
    backoff: &mut OpenBackoff,
) -> Done {
    let thread = spec.thread;
    let finish = |op_type, value, error| Done {
        thread,
        op_type,
        value,
        error,
        at: Instant::now(),
        extra: Vec::new(),
    };
    if client.is_none() {
        let message =
            match tokio::time::timeout(spec.op_timeout, spec.factory.open(&spec.node)).await {
                Ok(Ok(c)) => {
                    *client = Some(c);
                    *backoff = OpenBackoff::default();
                    None
                }
                Ok(Err(e)) => Some(e.message),
                Err(_) => Some("timed out opening a connection".to_string()),
            };
        if let Some(message) = message {
            // A node that refuses connections refuses at once: without the
            // pause each worker would fail transactions as fast as it can
            // invoke them while the node is down.
            tokio::time::sleep(backoff.next()).await;
            // No request of this transaction was sent: definitely not applied.
            return finish(
                OpType::Fail,
                job.mops.clone(),
                Some((NO_CLIENT.into(), message)),
            );
        }
    }
    let Some(c) = client.as_mut() else {
        return finish(
            OpType::Fail,
            job.mops.clone(),
            Some((NO_CLIENT.into(), "no client".into())),
        );
    };
    let outcome = tokio::time::timeout(spec.op_timeout, c.invoke_op(&job.f, &job.mops)).await;
    match outcome {
        Ok(Ok(value)) => {
            if value.len() == job.mops.len()
                && value.iter().zip(&job.mops).all(|(a, b)| a.same_shape(b))
            {
                let mut d = finish(OpType::Ok, value, None);
                d.extra = c.take_extra();
                d
            } else {
                // A client bug; the transaction may have committed.
                *client = None;
                finish(
                    OpType::Info,
                    job.mops.clone(),
                    Some((
                        "invalid-completion".into(),
                        "the client returned micro-ops that do not match the invocation".into(),
                    )),
                )
            }
        }
        Ok(Err(e)) => {
            let t = match e.kind {
                ErrorKind::Definite => OpType::Fail,
                ErrorKind::Indefinite => OpType::Info,
            };
            finish(t, job.mops.clone(), Some((e.code, e.message)))
        }
        Err(_) => {
            // The dropped future may have left the session mid-transaction.
            *client = None;
            finish(
                OpType::Info,
                job.mops.clone(),
                Some((
                    "timeout".into(),
                    format!("no completion within {:?}", spec.op_timeout),
                )),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OpenBackoff;
    use std::time::Duration;

    #[test]
    fn open_backoff_doubles_to_one_second() {
        let mut b = OpenBackoff::default();
        let ms: Vec<u128> = (0..7).map(|_| b.next().as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(OpenBackoff::default().next(), Duration::from_millis(100));
    }
}
