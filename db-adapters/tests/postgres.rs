//! The PostgreSQL client against a throwaway local cluster (needs the
//! `postgresql` package; CI installs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::client::{ClientFactory, ErrorKind};
use db_adapters::postgres::PgFactory;
use db_adapters::postgres::local::LocalCluster;
use db_adapters::sql::{DataModel, Isolation};
use nemesis::Node;
use std::time::Duration;
use store::{Key, MicroOp, ReadValue, Val};

fn read(k: i64) -> MicroOp {
    MicroOp::Read(Key::int(k), ReadValue::Nil)
}

fn append(k: i64, v: i64) -> MicroOp {
    MicroOp::Append(Key::int(k), Val::int(v))
}

/// A throwaway cluster under `dir` and a serializable list-append factory
/// on it, its tables created.
async fn local_factory(dir: &std::path::Path) -> (LocalCluster, PgFactory, Node) {
    let cluster = LocalCluster::start(dir).await.expect("local cluster");
    let node = Node::local();
    let f = PgFactory::new(
        &cluster.url(),
        Isolation::Serializable,
        DataModel::ListAppend,
    )
    .unwrap();
    f.setup(&node).await.unwrap();
    (cluster, f, node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
async fn local_cluster_appends_reads_serialization_failures_and_death() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, f, node) = local_factory(dir.path()).await;
    assert!(
        dir.path().join("postgres").exists(),
        "run dir links the cluster"
    );
    let pid = cluster.pid().expect("postmaster pid");

    // Appends and reads, across all three tables.
    let mut a = f.open(&node).await.unwrap();
    a.invoke(&[append(1, 1), append(2, 1), append(3, 1)])
        .await
        .unwrap();
    let out = a
        .invoke(&[append(1, 2), read(1), read(2), read(99)])
        .await
        .unwrap();
    assert_eq!(
        out[1],
        MicroOp::Read(
            Key::int(1),
            ReadValue::List(vec![Val::int(1), Val::int(2)].into())
        )
    );
    assert_eq!(
        out[2],
        MicroOp::Read(Key::int(2), ReadValue::List(vec![Val::int(1)].into()))
    );
    assert_eq!(
        out[3],
        MicroOp::Read(Key::int(99), ReadValue::List(vec![].into()))
    );

    // Dynamic shared memory lives in the data directory (removed with the
    // cluster), not as /dev/shm/PostgreSQL.* segments that a killed
    // postmaster leaves behind (22 of them, 12 MB, after one test suite).
    let (c0, conn0) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn0);
    let dsm: String = c0
        .query_one("SHOW dynamic_shared_memory_type", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(dsm, "mmap");
    drop(c0);

    // Write skew under SERIALIZABLE: run the two halves interleaved by hand
    // through two raw sessions, then check the adapter maps 40001 to fail.
    let (c1, conn1) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn1);
    c1.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        .await
        .unwrap();
    c1.query("SELECT val FROM txn0", &[]).await.unwrap();
    c1.query("SELECT val FROM txn1", &[]).await.unwrap();
    c1.query("SELECT val FROM txn2", &[]).await.unwrap();
    // The adapter's transaction reads key 1000 and appends to key 2 (which
    // the raw session read) …
    let mut b = f.open(&node).await.unwrap();
    b.invoke(&[read(1000), append(2, 2)]).await.unwrap();
    // … so the raw session cannot also write key 1000 (read by the other).
    let t = db_adapters::sql::TxnTables::default().table_of(1000);
    let r = c1
        .execute(
            &format!("INSERT INTO txn{t} (id, val) VALUES (1000, '1')"),
            &[],
        )
        .await
        .and(c1.batch_execute("COMMIT").await.map(|_| 0));
    let e = r.expect_err("write skew must abort one side");
    assert_eq!(e.code().map(|c| c.code()), Some("40001"));
    let classified = db_adapters::sql::classify_pg(&e, db_adapters::sql::TxnPhase::Commit);
    assert_eq!(classified.kind, ErrorKind::Definite);

    // Kill the server: ops now end in definite or indefinite errors, never
    // hang, and the client does not panic. The backends go too: a backend
    // outlives a SIGKILLed postmaster and keeps serving its connection for a
    // while (seen in a full test run), so stop the postmaster (no restart of
    // crashed children), kill its children, then kill it.
    let sh = |args: &[&str]| {
        std::process::Command::new(args[0])
            .args(&args[1..])
            .status()
            .unwrap();
    };
    let pid = pid.to_string();
    sh(&["kill", "-STOP", &pid]);
    sh(&["pkill", "-9", "-P", &pid]);
    sh(&["kill", "-9", &pid]);
    let mut saw_error = false;
    for i in 0..5 {
        let r = tokio::time::timeout(Duration::from_secs(10), a.invoke(&[append(1, 100 + i)]))
            .await
            .expect("no hang after the server died");
        if r.is_err() {
            saw_error = true;
        }
    }
    assert!(saw_error, "ops against a dead server must fail");
    cluster.stop().await.unwrap();
    assert!(
        dir.path().join("postgresql.log").exists(),
        "server log kept"
    );
    assert!(!dir.path().join("postgres").exists(), "link removed");
}

#[tokio::test]
async fn unreachable_server_is_a_definite_setup_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres?connect_timeout=2");
    let f = PgFactory::new(&url, Isolation::Serializable, DataModel::ListAppend).unwrap();
    let e = f.setup(&Node::local()).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Definite);
    assert!(e.message.contains("connect"), "{}", e.message);
}

#[test]
fn bad_urls_are_rejected() {
    let e = PgFactory::new(
        "postgres://[::1",
        Isolation::Serializable,
        DataModel::ListAppend,
    )
    .unwrap_err();
    assert!(e.to_string().contains("invalid PostgreSQL URL"), "{e}");
}

/// A session the server keeps closing is reconnected no faster than the
/// backoff: each of 4 terminations costs at least 200 ms before the client
/// connects again (a not-ready node once made workers reconnect hundreds of
/// times a second and exhaust local ports).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
async fn a_session_the_server_closes_is_reconnected_with_a_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, f, node) = local_factory(dir.path()).await;
    let mut a = f.open(&node).await.unwrap();
    a.invoke(&[append(1, 1)]).await.unwrap();
    let (admin, conn) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let t = std::time::Instant::now();
    let mut oks = 0;
    for i in 0..4 {
        // Close every other session (the client's) from the server side.
        admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE pid <> pg_backend_pid() AND datname = current_database()",
                &[],
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The first attempt may still see the dying session and fail; the
        // client then reconnects, after the backoff.
        for _ in 0..3 {
            if a.invoke(&[append(1, 10 + i)]).await.is_ok() {
                oks += 1;
                break;
            }
        }
    }
    let elapsed = t.elapsed();
    assert_eq!(oks, 4, "the client reconnects after each termination");
    assert!(
        elapsed >= Duration::from_millis(4 * 200),
        "4 reconnects in {elapsed:?}: no backoff"
    );
    cluster.stop().await.unwrap();
}
