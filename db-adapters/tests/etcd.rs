//! etcd against a local 3-member cluster (the `etcd` binary, loopback
//! ports): list-append and rw-register histories recorded by concurrent
//! clients check strict-serializable; the register workload's cas is
//! definite on mismatch and loses no increment under contention; a killed
//! member leaves a cluster that still serves and checks valid; etcd's own
//! gRPC answers (a refused `Txn`, a failed compare, the member list, a
//! killed member's refused connection) reach the error classification.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{CheckOptions, ConsistencyModel, Valid, Workload, check};
use db_adapters::client::{ClientFactory, ErrorKind};
use db_adapters::etcd::client::classify;
use db_adapters::etcd::grpc::{EtcdConn, GrpcError};
use db_adapters::etcd::proto::{Compare, RequestOp, TxnRequest};
use db_adapters::etcd::{EtcdFactory, LocalCluster};
use db_adapters::sql::DataModel;
use nemesis::Node;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};
use workloads::txn::TxnGen;
use workloads::{WorkloadConfig, WorkloadKind};

const ETCD: &str = "/usr/bin/etcd";

struct Recorder {
    ops: Mutex<Vec<Op>>,
    start: Instant,
}

impl Recorder {
    fn push(&self, op_type: OpType, process: u64, mops: Vec<MicroOp>) {
        let mut ops = self.ops.lock().unwrap();
        let mut op = Op::txn(ops.len() as u64, op_type, process, mops);
        op.time_ns = Some(self.start.elapsed().as_nanos() as i64);
        ops.push(op);
    }
}

/// `workers` clients spread over `nodes`, `per_worker` transactions each;
/// returns the history and the (ok, fail, info) counts.
async fn record(
    nodes: &[Node],
    kind: WorkloadKind,
    model: DataModel,
    workers: u64,
    per_worker: usize,
    mid_run: Option<Box<dyn FnOnce() + Send>>,
) -> (History, [usize; 3]) {
    let factory = Arc::new(EtcdFactory::new(model));
    factory.setup(&nodes[0]).await.unwrap();
    let rec = Arc::new(Recorder {
        ops: Mutex::new(Vec::new()),
        start: Instant::now(),
    });
    let counts = Arc::new(Mutex::new([0usize; 3]));
    let cfg = WorkloadConfig {
        key_count: 5,
        max_writes_per_key: 64,
        ..WorkloadConfig::default()
    };
    // One generator for all workers: appended values are unique per key.
    let generator = Arc::new(Mutex::new(TxnGen::new(kind, &cfg, 100).unwrap()));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let node = nodes[(w as usize) % nodes.len()].clone();
        let (factory, rec, counts) = (factory.clone(), rec.clone(), counts.clone());
        let generator = generator.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = factory.open(&node).await.unwrap();
            for _ in 0..per_worker {
                let txn = generator.lock().unwrap().next_txn();
                rec.push(OpType::Invoke, w, txn.clone());
                let (t, mops, slot) = match client.invoke(&txn).await {
                    Ok(out) => (OpType::Ok, out, 0),
                    Err(e) if e.kind == ErrorKind::Definite => (OpType::Fail, txn, 1),
                    Err(_) => (OpType::Info, txn, 2),
                };
                rec.push(t, w, mops);
                counts.lock().unwrap()[slot] += 1;
            }
        }));
    }
    if let Some(f) = mid_run {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        f();
    }
    for t in tasks {
        t.await.unwrap();
    }
    let ops = std::mem::take(&mut *rec.ops.lock().unwrap());
    let c = *counts.lock().unwrap();
    (History::new(ops).unwrap(), c)
}

fn strict(h: &History, w: Workload) -> Valid {
    let mut opts = CheckOptions::new(w);
    opts.models = vec![ConsistencyModel::parse("strict-serializable").unwrap()];
    let r = check(h, &opts);
    assert!(r.anomaly_types.is_empty() || r.valid != Valid::True);
    eprintln!(
        "anomalies: {:?}",
        r.anomaly_types.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    r.valid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the etcd binary (/usr/bin/etcd, Debian etcd-server): run by .ci/run"]
async fn append_and_rw_register_are_strict_serializable_on_three_members() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(ETCD, dir.path(), 3).await.unwrap();
    let nodes = cluster.nodes();
    let (h, c) = record(
        &nodes,
        WorkloadKind::ListAppend,
        DataModel::ListAppend,
        6,
        150,
        None,
    )
    .await;
    assert!(c[0] > 300, "too few ok transactions: {c:?}");
    assert_eq!(strict(&h, Workload::ListAppend), Valid::True, "{c:?}");
    let (h, c) = record(
        &nodes,
        WorkloadKind::RwRegister,
        DataModel::RwRegister,
        6,
        150,
        None,
    )
    .await;
    assert!(c[0] > 300, "too few ok transactions: {c:?}");
    assert_eq!(strict(&h, Workload::RwRegister), Valid::True, "{c:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the etcd binary (/usr/bin/etcd, Debian etcd-server): run by .ci/run"]
async fn killing_a_member_mid_run_keeps_append_strict_serializable() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Arc::new(Mutex::new(
        LocalCluster::start(ETCD, dir.path(), 3).await.unwrap(),
    ));
    let nodes = cluster.lock().unwrap().nodes();
    let pid_before = cluster.lock().unwrap().pid(1);
    assert!(pid_before.is_some());
    let killer = cluster.clone();
    let kill: Box<dyn FnOnce() + Send> = Box::new(move || killer.lock().unwrap().kill(1));
    let (h, c) = record(
        &nodes,
        WorkloadKind::ListAppend,
        DataModel::ListAppend,
        6,
        120,
        Some(kill),
    )
    .await;
    assert_eq!(cluster.lock().unwrap().pid(1), None, "member e1 was killed");
    // Clients of the killed member fail definitely (connect refused) or
    // indefinitely (in flight); the others keep committing.
    assert!(c[0] > 200, "{c:?}");
    assert!(
        c[1] + c[2] > 0,
        "the killed member's clients saw errors: {c:?}"
    );
    assert_eq!(strict(&h, Workload::ListAppend), Valid::True, "{c:?}");
    // It rejoins from its data directory.
    cluster.lock().unwrap().restart(1).unwrap();
    let c2 = Arc::try_unwrap(cluster).ok().unwrap().into_inner().unwrap();
    c2.wait_healthy(std::time::Duration::from_secs(30))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the etcd binary (/usr/bin/etcd, Debian etcd-server): run by .ci/run"]
async fn cas_is_definite_on_mismatch_and_loses_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(ETCD, dir.path(), 3).await.unwrap();
    let nodes = cluster.nodes();
    let factory = Arc::new(EtcdFactory::new(DataModel::RwRegister));
    factory.setup(&nodes[0]).await.unwrap();
    let mut c = factory.open(&nodes[0]).await.unwrap();
    let cas = |old: i64, new: i64| {
        vec![
            MicroOp::Read(Key::int(1), ReadValue::Scalar(Val::int(old))),
            MicroOp::Write(Key::int(1), Val::int(new)),
        ]
    };
    // cas on an absent key: mismatch, definite.
    let e = c.invoke(&cas(0, 1)).await.unwrap_err();
    assert_eq!(
        (e.kind, e.code.as_str()),
        (ErrorKind::Definite, "cas-mismatch")
    );
    c.invoke(&[MicroOp::Write(Key::int(1), Val::int(0))])
        .await
        .unwrap();
    c.invoke(&cas(0, 1)).await.unwrap();
    let e = c.invoke(&cas(0, 2)).await.unwrap_err();
    assert_eq!(e.code, "cas-mismatch");
    // Concurrent increments by read + cas from 6 clients on 3 members:
    // the final value is exactly the number of successful cas.
    let mut tasks = Vec::new();
    for w in 0..6 {
        let (factory, node) = (factory.clone(), nodes[w % 3].clone());
        tasks.push(tokio::spawn(async move {
            let mut c = factory.open(&node).await.unwrap();
            let mut ok = 0i64;
            for _ in 0..40 {
                let r = c
                    .invoke(&[MicroOp::Read(Key::int(1), ReadValue::Nil)])
                    .await
                    .unwrap();
                let MicroOp::Read(_, ReadValue::Scalar(Val(store::Atom::Int(v)))) = r[0] else {
                    panic!("{r:?}");
                };
                match c.invoke(&cas(v, v + 1)).await {
                    Ok(_) => ok += 1,
                    Err(e) => assert_eq!(e.code, "cas-mismatch", "{e:?}"),
                }
            }
            ok
        }));
    }
    let mut oks = 0;
    for t in tasks {
        oks += t.await.unwrap();
    }
    let r = c
        .invoke(&[MicroOp::Read(Key::int(1), ReadValue::Nil)])
        .await
        .unwrap();
    assert_eq!(
        r[0],
        MicroOp::Read(Key::int(1), ReadValue::Scalar(Val::int(1 + oks)))
    );
    assert!(oks > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the etcd binary (/usr/bin/etcd, Debian etcd-server): run by .ci/run"]
async fn grpc_answers_of_a_real_member_are_classified() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = LocalCluster::start(ETCD, dir.path(), 1).await.unwrap();
    let addr = cluster.nodes()[0].host.clone();
    let mut conn = EtcdConn::new(&addr, std::time::Duration::from_secs(5));
    let key = b"grpc-test/k".to_vec();
    // Two puts of one key: refused before proposing, so definite.
    let dup = TxnRequest {
        success: vec![
            RequestOp::put(key.clone(), b"1".to_vec()),
            RequestOp::put(key.clone(), b"2".to_vec()),
        ],
        ..TxnRequest::default()
    };
    let e = conn.txn(dup).await.unwrap_err();
    assert_eq!(e.code(), Some(tonic::Code::InvalidArgument), "{e}");
    assert!(e.to_string().contains("duplicate key"), "{e}");
    assert_eq!(classify(&e, false).kind, ErrorKind::Definite);
    // Create-if-absent (mod_revision 0) succeeds once, then its compare fails.
    let create = TxnRequest {
        compare: vec![Compare::mod_revision_is(key.clone(), 0)],
        success: vec![RequestOp::put(key.clone(), b"1".to_vec())],
        failure: vec![],
    };
    let first = conn.txn(create.clone()).await.unwrap();
    assert!(first.succeeded);
    assert!(first.header.unwrap().revision > 1);
    assert!(!conn.txn(create).await.unwrap().succeeded);
    let members = conn.member_list().await.unwrap().members;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].name, "e0");
    // A killed member refuses the connection: nothing was sent. The first
    // call may still meet the old connection's end (not a connect error,
    // but never a success); a later one must be refused.
    cluster.kill(0);
    let mut refused = false;
    for _ in 0..5 {
        match conn.txn(TxnRequest::default()).await {
            Err(e @ GrpcError::Connect { .. }) => {
                assert_eq!(classify(&e, false).kind, ErrorKind::Definite);
                refused = true;
                break;
            }
            Err(e) => assert_eq!(classify(&e, false).kind, ErrorKind::Indefinite),
            Ok(r) => panic!("a killed member answered: {r:?}"),
        }
    }
    assert!(refused, "never reported as refused");
}
