//! `SimFactory` clients under tokio: concurrent workers interleave, errors
//! are classified, and a recorded history is what the mode promises.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::client::{ClientFactory, ErrorKind};
use db_adapters::sim::{EngineOptions, SimFactory, SimMode};
use nemesis::Node;
use std::sync::{Arc, Mutex};
use store::{MicroOp, Op, OpType};
use workloads::{TxnGen, WorkloadConfig, WorkloadKind};

/// Runs `txns` transactions from 8 concurrent workers and returns the history.
async fn run(factory: SimFactory, txns: usize) -> Vec<Op> {
    let node = Node::local();
    factory.setup(&node).await.unwrap();
    let mut g = TxnGen::new(WorkloadKind::ListAppend, &WorkloadConfig::default(), 7).unwrap();
    let work: Vec<Vec<MicroOp>> = (0..txns).map(|_| g.next_txn()).collect();
    let work = Arc::new(Mutex::new(work.into_iter()));
    let log: Arc<Mutex<Vec<Op>>> = Arc::new(Mutex::new(Vec::new()));
    let workers = 8u64;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let factory = factory.clone();
        let work = Arc::clone(&work);
        let log = Arc::clone(&log);
        tasks.push(tokio::spawn(async move {
            let node = Node::local();
            let mut process = w;
            let mut client = factory.open(&node).await.unwrap();
            loop {
                let Some(txn) = work.lock().unwrap().next() else {
                    break;
                };
                {
                    let mut l = log.lock().unwrap();
                    let i = l.len() as u64;
                    l.push(Op::txn(i, OpType::Invoke, process, txn.clone()));
                }
                let result = client.invoke(&txn).await;
                let mut l = log.lock().unwrap();
                let i = l.len() as u64;
                match result {
                    Ok(done) => l.push(Op::txn(i, OpType::Ok, process, done)),
                    Err(e) if e.kind == ErrorKind::Definite => {
                        l.push(Op::txn(i, OpType::Fail, process, txn))
                    }
                    Err(_) => {
                        l.push(Op::txn(i, OpType::Info, process, txn));
                        process += workers;
                    }
                }
            }
            client.close().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(log).unwrap().into_inner().unwrap()
}

fn check(ops: Vec<Op>, model: &str) -> (checker::Valid, Vec<String>) {
    let h = store::History::new(ops).unwrap();
    let mut opts = checker::CheckOptions::new(checker::Workload::ListAppend);
    opts.models = vec![checker::ConsistencyModel::parse(model).unwrap()];
    let r = checker::check(&h, &opts);
    (
        r.valid,
        r.anomaly_types
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_clients_interleave_and_stay_serializable() {
    let factory = SimFactory::new(SimMode::Serializable, 1);
    let ops = run(factory.clone(), 2000).await;
    let fails = ops.iter().filter(|o| o.op_type == OpType::Fail).count();
    let oks = ops.iter().filter(|o| o.op_type == OpType::Ok).count();
    assert!(oks > 500, "{oks} ok");
    // Random aborts (5%) plus validation conflicts from interleaving.
    assert!(fails > 100, "{fails} fail");
    let (valid, names) = check(ops, "strict-serializable");
    assert_eq!(valid, checker::Valid::True, "{names:?}");
    let stats = factory.with_engine(|e| e.stats().clone()).unwrap();
    assert_eq!(stats.committed as usize, oks);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_clients_lose_updates() {
    let ops = run(SimFactory::new(SimMode::ReadCommitted, 2), 2000).await;
    let (valid, names) = check(ops, "serializable");
    assert_eq!(valid, checker::Valid::False);
    assert!(names.iter().any(|n| n == "G-single-item"), "{names:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn crashes_are_indefinite_errors() {
    let factory = SimFactory::with_options(
        EngineOptions {
            mode: SimMode::Serializable,
            seed: 3,
            abort_probability: 0.0,
        },
        1.0,
        3,
    )
    .unwrap();
    let ops = run(factory, 50).await;
    assert!(
        ops.iter()
            .filter(|o| o.op_type != OpType::Invoke)
            .all(|o| o.op_type == OpType::Info)
    );
    assert!(
        SimFactory::with_options(EngineOptions::new(SimMode::Serializable, 0), 2.0, 0).is_err()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_invocation_releases_its_locks() {
    let factory = SimFactory::with_options(
        EngineOptions {
            mode: SimMode::ReadCommitted,
            seed: 4,
            abort_probability: 0.0,
        },
        0.0,
        4,
    )
    .unwrap();
    let node = Node::local();
    let mut c = factory.open(&node).await.unwrap();
    let txn = vec![
        MicroOp::Append(store::Key::int(1), store::Val::int(1)),
        MicroOp::Append(store::Key::int(1), store::Val::int(2)),
    ];
    {
        // Poll once: the first append runs (taking the lock), then it yields.
        let mut fut = c.invoke(&txn);
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(fut.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(factory.with_engine(|e| e.open_count()).unwrap(), 0);
    let mut c2 = factory.open(&node).await.unwrap();
    let done = c2
        .invoke(&[MicroOp::Append(store::Key::int(1), store::Val::int(3))])
        .await;
    assert!(done.is_ok(), "{done:?}");
}
