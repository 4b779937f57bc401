//! Baseline for BENCHMARKS.md: the same list-append transactions harness
//! runs, executed by a minimal tokio-postgres loop (no history, no
//! generator interpreter, no checker), to measure harness's overhead.
//!
//! ```text
//! cargo run --release -p db-adapters --example pg_baseline -- URL [TXNS] [CONCURRENCY] [SEED] [KEY_COUNT|-] [ISOLATION|-] [client]
//! ```
//!
//! Transactions come from the same generator and seed as `harness run`
//! (list-append, Elle's defaults), in the same order: each idle worker takes
//! the next one from a shared queue, as harness's interpreter hands the next
//! op to the first free thread (a static round-robin split would let workers
//! drift apart in the key rotation and conflict far less). Each
//! runs `BEGIN ISOLATION LEVEL …` (serializable unless ISOLATION names
//! another level, as `harness run --isolation` does), one prepared statement
//! per micro-op, `COMMIT`, and counts commits and failures.
//!
//! With `client` last, each worker runs the same transactions through
//! harness's own PostgreSQL client (`PgFactory` → `Client::invoke`: the
//! same statements, plus its checks, read decoding and error
//! classification) instead of the raw statements: the runner's share of
//! `harness run`'s overhead is then the difference to `harness run`, the
//! client's the difference to the raw loop.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::client::ClientFactory;
use db_adapters::postgres::PgFactory;
use db_adapters::sql::{DataModel, Isolation, TxnTables};
use nemesis::Node;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use store::{Atom, MicroOp};
use tokio_postgres::NoTls;
use workloads::generator::{Ctx, Next};
use workloads::{WorkloadConfig, WorkloadKind};

fn int(a: &Atom) -> i64 {
    match a {
        Atom::Int(i) => *i,
        _ => panic!("integer keys and values only"),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .expect("usage: pg_baseline URL [TXNS] [CONCURRENCY] [SEED]")
        .clone();
    let txns: usize = args.get(2).map_or(20_000, |s| s.parse().unwrap());
    let concurrency: usize = args.get(3).map_or(10, |s| s.parse().unwrap());
    let seed: u64 = args.get(4).map_or(1, |s| s.parse().unwrap());
    let mut cfg = WorkloadConfig::default();
    if let Some(k) = args.get(5).filter(|k| *k != "-") {
        cfg.key_count = k.parse().unwrap();
    }
    let isolation = args
        .get(6)
        .filter(|i| *i != "-")
        .map_or(Ok(Isolation::Serializable), |i| i.parse::<Isolation>())
        .unwrap();
    let through_client = args.get(7).map(String::as_str) == Some("client");
    let begin = format!("BEGIN ISOLATION LEVEL {}", isolation.sql());

    // Generate the transactions up front, as if every op completed at once.
    let mut generator = workloads::for_workload(WorkloadKind::ListAppend, &cfg, seed).unwrap();
    let mut all: Vec<Vec<MicroOp>> = Vec::with_capacity(txns);
    for _ in 0..txns {
        let ctx = Ctx::all_free(0, 1);
        match generator.next(&ctx) {
            Next::Op { invocation, .. } => all.push(invocation.value),
            other => panic!("generator answered {other:?}"),
        }
    }
    let all = Arc::new(all);
    let next = Arc::new(AtomicUsize::new(0));

    let tables = TxnTables::default();
    let (setup, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(conn);
    for t in 0..tables.table_count {
        setup
            .batch_execute(&format!("{};{}", tables.drop_sql(t), tables.create_sql(t)))
            .await
            .unwrap();
    }

    let url = Arc::new(url);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (url, all, next, begin) = (url.clone(), all.clone(), next.clone(), begin.clone());
        if through_client {
            tasks.push(tokio::spawn(client_loop(url, all, next, isolation)));
            continue;
        }
        tasks.push(tokio::spawn(async move {
            let (c, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
            tokio::spawn(conn);
            let mut reads = Vec::new();
            let mut appends = Vec::new();
            for t in 0..tables.table_count {
                reads.push(c.prepare(&tables.read_sql(t)).await.unwrap());
                appends.push(c.prepare(&tables.append_sql(t)).await.unwrap());
            }
            let (mut ok, mut fail) = (0u64, 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(txn) = all.get(i) else { break };
                let r: Result<(), tokio_postgres::Error> = async {
                    c.batch_execute(&begin).await?;
                    for mop in txn {
                        match mop {
                            MicroOp::Read(k, _) => {
                                let id = int(&k.0);
                                let row = c.query_opt(&reads[tables.table_of(id)], &[&id]).await?;
                                let _v: Option<String> = row.and_then(|r| r.get(0));
                            }
                            MicroOp::Append(k, v) | MicroOp::Write(k, v) => {
                                let id = int(&k.0);
                                let val = int(&v.0).to_string();
                                c.execute(&appends[tables.table_of(id)], &[&id, &val])
                                    .await?;
                            }
                            // The baseline runs list-append only.
                            MicroOp::ReadRange(_) => {}
                        }
                    }
                    c.batch_execute("COMMIT").await
                }
                .await;
                match r {
                    Ok(()) => ok += 1,
                    Err(_) => {
                        let _ = c.batch_execute("ROLLBACK").await;
                        fail += 1;
                    }
                }
            }
            (ok, fail)
        }));
    }
    let (mut ok, mut fail) = (0, 0);
    for t in tasks {
        let (o, f) = t.await.unwrap();
        ok += o;
        fail += f;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} transactions ({ok} ok, {fail} fail) in {secs:.2} s: {:.0} txn/s at concurrency {concurrency}",
        ok + fail,
        (ok + fail) as f64 / secs
    );
}

/// One worker of the `client` mode: harness's PostgreSQL client runs each
/// transaction (`Client::invoke`), as a `harness run` worker does.
async fn client_loop(
    url: Arc<String>,
    all: Arc<Vec<Vec<MicroOp>>>,
    next: Arc<AtomicUsize>,
    isolation: Isolation,
) -> (u64, u64) {
    let factory = PgFactory::new(&url, isolation, DataModel::ListAppend).unwrap();
    let mut c = factory.open(&Node::local()).await.unwrap();
    let (mut ok, mut fail) = (0u64, 0u64);
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(txn) = all.get(i) else { break };
        match c.invoke(txn).await {
            Ok(_) => ok += 1,
            Err(_) => fail += 1,
        }
    }
    (ok, fail)
}
