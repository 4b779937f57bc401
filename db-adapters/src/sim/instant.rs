//! `instant`: a client that answers every transaction at once, for measuring
//! the runner itself (`engine/examples/runner_bench.rs`, runner tests).
//!
//! Key decision: no state at all: every write succeeds and every read sees
//! the empty list, so what a run against it costs is the harness's own work
//! (generator, interpreter, history log), with no lock or engine in between.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use nemesis::Node;
use store::{MicroOp, ReadValue};

/// The completion of `txn`: writes as invoked, reads of the empty list.
pub fn answer(txn: &[MicroOp]) -> Vec<MicroOp> {
    txn.iter()
        .map(|m| match m {
            MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::List(Vec::new().into())),
            other => other.clone(),
        })
        .collect()
}

/// Opens [`InstantClient`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct InstantFactory;

/// Answers with [`answer`], ready on its first poll.
#[derive(Clone, Copy, Debug, Default)]
pub struct InstantClient;

impl Client for InstantClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        let done = answer(txn);
        Box::pin(async move { Ok(done) })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

impl ClientFactory for InstantFactory {
    fn setup<'a>(&'a self, _: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async { Ok(()) })
    }

    fn open<'a>(&'a self, _: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async { Ok(Box::new(InstantClient) as Box<dyn Client>) })
    }
}
