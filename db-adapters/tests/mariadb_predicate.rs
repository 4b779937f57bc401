//! The predicate workload (range reads + inserts) on a real throwaway
//! MariaDB at REPEATABLE READ: InnoDB's consistent reads miss
//! rows concurrent transactions insert, so the checker finds predicate
//! anti-dependency cycles (phantoms) and rules out serializable, naming
//! the range and the missing row. MariaDB is started as in
//! `tidb_mysql_wire.rs` (its lifecycle over a local remote, a temp dir, a
//! free port); the clients run concurrently on tokio tasks and the history
//! is recorded the way the runner records it (invocation before the
//! request, completion after).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{CheckOptions, ConsistencyModel, Valid, Workload};
use db_adapters::client::{ClientFactory, ErrorKind};
use db_adapters::db::Db;
use db_adapters::mysql::{MariaDb, MariaDbConfig, MysqlFactory};
use db_adapters::sql::{DataModel, Isolation};
use nemesis::Node;
use nemesis::remote::{LocalRemote, Remote};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use store::{Data, History, Op, OpType};
use workloads::WorkloadConfig;
use workloads::predicate::PredicateGen;

struct KillOnDrop(PathBuf);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
        }
    }
}

/// A port for the test's mariadbd below the ephemeral range: one the
/// kernel hands out for port 0 may be taken as a source port by another
/// test's connection before mariadbd binds it (`db_adapters::ports`).
fn free_port() -> u16 {
    db_adapters::ports::free_port().unwrap()
}

struct Shared {
    generator: PredicateGen,
    ops: Vec<Op>,
    invoked: usize,
}

fn record(s: &Mutex<Shared>, ty: OpType, process: u64, mops: Vec<store::MicroOp>) {
    let mut s = s.lock().unwrap();
    let i = s.ops.len() as u64;
    s.ops.push(Op::txn(i, ty, process, mops));
}

const TXNS: usize = 1500;
const WORKERS: u64 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs a MariaDB server install; .ci/run runs it"]
async fn repeatable_read_range_reads_show_phantoms() {
    let base = tempfile::tempdir().unwrap();
    std::process::Command::new("chmod")
        .args(["755", base.path().to_str().unwrap()])
        .status()
        .unwrap();
    let node = Node::new("mariadb-pred", "127.0.0.1");
    let mut cfg = MariaDbConfig::new(false);
    cfg.base_dir = base.path().to_str().unwrap().to_string();
    cfg.port = free_port();
    let _guard = KillOnDrop(base.path().join("mariadb-pred/mariadbd.pid"));
    let remote: Arc<dyn Remote> = Arc::new(LocalRemote::new(node.clone()));
    let db = MariaDb::new(cfg.clone(), vec![remote]);
    db.setup().await.expect("throwaway mariadbd");

    let mut f = MysqlFactory::new(Isolation::RepeatableRead, DataModel::ListAppend).unwrap();
    f.port = cfg.port;
    f.setup(&node).await.unwrap();
    let f = Arc::new(f);
    let wcfg = WorkloadConfig {
        key_count: 5,
        max_writes_per_key: 1,
        ..WorkloadConfig::default()
    };
    let shared = Arc::new(Mutex::new(Shared {
        generator: PredicateGen::new(&wcfg, 21).unwrap(),
        ops: Vec::new(),
        invoked: 0,
    }));
    let mut tasks = Vec::new();
    for p in 0..WORKERS {
        let (f, node, shared) = (f.clone(), node.clone(), shared.clone());
        tasks.push(tokio::spawn(async move {
            let mut client = f.open(&node).await.unwrap();
            loop {
                let txn = {
                    let mut s = shared.lock().unwrap();
                    if s.invoked >= TXNS {
                        break;
                    }
                    s.invoked += 1;
                    let txn = s.generator.next_txn();
                    let i = s.ops.len() as u64;
                    s.ops.push(Op::txn(i, OpType::Invoke, p, txn.clone()));
                    txn
                };
                match client.invoke(&txn).await {
                    Ok(done) => record(&shared, OpType::Ok, p, done),
                    Err(e) => {
                        let ty = match e.kind {
                            ErrorKind::Definite => OpType::Fail,
                            ErrorKind::Indefinite => OpType::Info,
                        };
                        {
                            let mut s = shared.lock().unwrap();
                            let i = s.ops.len() as u64;
                            let mut op = Op::txn(i, ty, p, txn);
                            op.error = Some(Box::new(Data::Str(e.code.clone())));
                            s.ops.push(op);
                        }
                        if ty == OpType::Info {
                            break; // never reuse a process whose outcome is unknown
                        }
                    }
                }
            }
            client.close().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Final reads, one process after the others. A server gone by now
    // says why from its own log. Seen twice in CI: the second time
    // mariadbd 10.11.19 had died of SIGSEGV in its own cleanup of a temporary
    // table it failed to create (`Create_tmp_table::cleanup_on_failure` →
    // `ha_maria::drop_table`) for the range read's `UNION ALL … ORDER BY id`;
    // why the creation failed, its log does not say (not reproduced in 8
    // local runs). Since then the range read has no ORDER BY and needs no
    // such table (`db_adapters::predicate`).
    let mut client = match f.open(&node).await {
        Ok(c) => c,
        Err(e) => {
            let log = std::fs::read_to_string(base.path().join("mariadb-pred/error.log"))
                .unwrap_or_else(|e| format!("(no error.log: {e})"));
            let alive = std::fs::read_to_string(base.path().join("mariadb-pred/mariadbd.pid"))
                .map(|pid| std::path::Path::new(&format!("/proc/{}", pid.trim())).exists());
            panic!(
                "the final reads cannot connect: {e:?}; mariadbd alive: {alive:?}\nerror.log:\n{log}"
            );
        }
    };
    let finals = shared.lock().unwrap().generator.final_reads();
    for inv in finals {
        record(&shared, OpType::Invoke, WORKERS, inv.value.clone());
        let done = client.invoke(&inv.value).await.unwrap();
        record(&shared, OpType::Ok, WORKERS, done);
    }
    client.close().await;
    db.teardown().await.unwrap();

    let ops = std::mem::take(&mut shared.lock().unwrap().ops);
    let h = History::new(ops).unwrap();
    let ok = (0..h.len()).filter(|&p| h.op_type(p) == OpType::Ok).count();
    assert!(ok > TXNS / 2, "{ok} committed");
    let mut o = CheckOptions::new(Workload::ListAppend);
    o.models = vec![ConsistencyModel::Serializable];
    let r = checker::check(&h, &o);
    assert_eq!(r.valid, Valid::False, "{r:?}");
    let predicate: Vec<_> = r
        .found_types
        .iter()
        .filter(|t| matches!(t.name(), "G2" | "G-single" | "G-nonadjacent"))
        .collect();
    assert!(!predicate.is_empty(), "no phantom: {:?}", r.found_types);
    let a = &r.anomalies[predicate[0]][0];
    let text = checker::explain::render_text(a, &h);
    assert!(text.contains("(missing row)"), "{text}");
    eprintln!("MariaDB repeatable read: {:?}\n{text}", r.found_types);
}
