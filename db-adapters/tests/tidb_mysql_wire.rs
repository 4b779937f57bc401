//! The TiDB client's MySQL-wire path against a real throwaway MariaDB
//! (started with nemesis's MariaDB lifecycle over a local remote, in a temp
//! dir on a free port, as the `mysql` user; CI installs `mariadb-server`):
//! detection of a non-TiDB server, schema creation (7 tables), append, read,
//! `SELECT … FOR UPDATE` reads, the isolation level in effect, a deadlock
//! (1213 → `fail`) and a connection lost while `COMMIT` is in flight
//! (→ `info`, and the commit really happened: why `info` is needed).
//!
//! With `--version-order db` a transaction stays `ok` when the server has
//! no `@@tidb_last_txn_info` (MariaDB); count reads run as one statement.
//!
//! Skipped, with the reason: the TiDB-only session variables
//! (`tidb_txn_mode`, `tidb_disable_txn_auto_retry`, `tidb_retry_limit`) —
//! MariaDB has no such variables (the test shows it), so the client sends
//! them only when `SELECT tidb_version()` exists; their statements are
//! checked as text. TiDB's own error codes (9007, 8002, …) cannot be raised
//! by MariaDB and are covered by the classifier's unit test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::client::{ClientFactory, ErrorKind};
use db_adapters::db::Db;
use db_adapters::mysql::{MariaDb, MariaDbConfig};
use db_adapters::sql::{DataModel, Isolation, TxnTables};
use db_adapters::tidb::{AutoRetry, TidbFactory, TidbOptions, TxnMode};
use mysql_async::prelude::Queryable;
use nemesis::Node;
use nemesis::remote::{LocalRemote, Remote};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use store::{Key, MicroOp, ReadValue, Val};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn read(k: i64) -> MicroOp {
    MicroOp::Read(Key::int(k), ReadValue::Nil)
}
fn append(k: i64, v: i64) -> MicroOp {
    MicroOp::Append(Key::int(k), Val::int(v))
}
fn list(k: i64, vs: &[i64]) -> MicroOp {
    MicroOp::Read(
        Key::int(k),
        ReadValue::List(vs.iter().map(|v| Val::int(*v)).collect()),
    )
}

/// A port for the test's mariadbd below the ephemeral range: one the
/// kernel hands out for port 0 may be taken as a source port by another
/// test's connection before mariadbd binds it (`db_adapters::ports`).
fn free_port() -> u16 {
    db_adapters::ports::free_port().unwrap()
}

/// Kills the test's mariadbd by the pid in its pid file, also on panic.
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

async fn raw(port: u16) -> mysql_async::Conn {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("harness"))
        .pass(Some("harness"))
        .db_name(Some("harness"))
        .prefer_socket(false);
    mysql_async::Conn::new(opts).await.unwrap()
}

fn factory(port: u16, iso: Isolation, opts: TidbOptions) -> TidbFactory {
    let mut f = TidbFactory::new(iso, DataModel::ListAppend, opts).unwrap();
    f.port = port;
    f.user = "harness".into();
    f.password = "harness".into();
    f.database = "harness".into();
    f
}

/// A TCP relay to the server that, once armed, forwards the client's
/// `COMMIT` to the server, swallows the server's reply and closes the
/// client's connection: the commit happens, the client never learns it.
async fn commit_reply_dropper(server_port: u16, armed: Arc<AtomicBool>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let armed = armed.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", server_port)).await
                else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let swallow = Arc::new(AtomicBool::new(false));
                let sw_flag = swallow.clone();
                // client → server, packet by packet (3-byte length, 1-byte sequence).
                let up = tokio::spawn(async move {
                    loop {
                        let mut hdr = [0u8; 4];
                        if cr.read_exact(&mut hdr).await.is_err() {
                            return;
                        }
                        let len = usize::from(hdr[0])
                            | usize::from(hdr[1]) << 8
                            | usize::from(hdr[2]) << 16;
                        let mut payload = vec![0u8; len];
                        if cr.read_exact(&mut payload).await.is_err() {
                            return;
                        }
                        if armed.load(Ordering::SeqCst) && payload == b"\x03COMMIT" {
                            sw_flag.store(true, Ordering::SeqCst);
                        }
                        if sw.write_all(&hdr).await.is_err()
                            || sw.write_all(&payload).await.is_err()
                        {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if swallow.load(Ordering::SeqCst) {
                        // The COMMIT's reply: drop it and the connection.
                        break;
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                up.abort();
                let _ = cw.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs a MariaDB server install; .ci/run runs it"]
async fn tidb_client_on_real_mariadb() {
    let base = tempfile::tempdir().unwrap();
    std::process::Command::new("chmod")
        .args(["755", base.path().to_str().unwrap()])
        .status()
        .unwrap();
    let node = Node::new("tidb-on-mariadb", "127.0.0.1");
    let mut cfg = MariaDbConfig::new(false);
    cfg.base_dir = base.path().to_str().unwrap().to_string();
    cfg.port = free_port();
    let port = cfg.port;
    let _guard = KillOnDrop(base.path().join("tidb-on-mariadb/mariadbd.pid"));
    let remote: Arc<dyn Remote> = Arc::new(LocalRemote::new(node.clone()));
    let db = MariaDb::new(cfg, vec![remote]);
    db.setup().await.expect("throwaway mariadbd");

    // 1. A non-TiDB server is refused unless the test allows it.
    let strict = factory(port, Isolation::RepeatableRead, TidbOptions::default());
    let e = strict.setup(&node).await.unwrap_err();
    assert_eq!(e.code, "not-tidb");
    assert!(e.message.contains("tidb_version()"), "{}", e.message);

    // 2. Schema, append, read; TiDB's 7 tables.
    let opts = TidbOptions {
        txn_mode: Some(TxnMode::Optimistic),
        auto_retry: AutoRetry::Off,
        retry_limit: None,
        select_for_update: false,
    };
    // What a TiDB session would get (not sendable to MariaDB, see below).
    assert_eq!(
        opts.session_sql(),
        vec![
            "SET SESSION tidb_txn_mode = 'optimistic'",
            "SET SESSION tidb_disable_txn_auto_retry = ON",
            "SET SESSION tidb_retry_limit = 0",
        ]
    );
    let f = factory(port, Isolation::SnapshotIsolation, opts).allow_non_tidb_server();
    assert_eq!(
        f.server_version(&node).await.unwrap(),
        None,
        "MariaDB is not TiDB"
    );
    // MariaDB has no tidb_* variables: the client must not send them.
    assert!(f.session_variable(&node, "tidb_txn_mode").await.is_err());
    f.setup(&node).await.unwrap();
    let mut admin = raw(port).await;
    let n: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'harness' AND TABLE_NAME LIKE 'txn%'")
        .await
        .unwrap();
    assert_eq!(n, Some(7));
    let mut c = f.open(&node).await.unwrap();
    c.invoke(&[append(1, 1), append(2, 1), append(3, 1)])
        .await
        .unwrap();
    let out = c
        .invoke(&[append(1, 2), read(1), read(2), read(42)])
        .await
        .unwrap();
    assert_eq!(out[1..], [list(1, &[1, 2]), list(2, &[1]), list(42, &[])]);

    // 3. Isolation in effect (SET SESSION TRANSACTION ISOLATION LEVEL is shared with TiDB).
    assert_eq!(
        f.effective_isolation(&node).await.unwrap(),
        "REPEATABLE-READ"
    );
    let rc = factory(
        port,
        Isolation::ReadCommitted,
        TidbOptions {
            txn_mode: Some(TxnMode::Pessimistic),
            ..TidbOptions::default()
        },
    )
    .allow_non_tidb_server();
    assert_eq!(
        rc.effective_isolation(&node).await.unwrap(),
        "READ-COMMITTED"
    );

    // 4. FOR UPDATE reads take row locks: a read blocks behind another
    // session's lock on the row, and completes once it is released.
    let tables = TxnTables { table_count: 7 };
    let locking = factory(
        port,
        Isolation::RepeatableRead,
        TidbOptions {
            select_for_update: true,
            ..TidbOptions::default()
        },
    )
    .allow_non_tidb_server();
    let mut holder = raw(port).await;
    holder.query_drop("START TRANSACTION").await.unwrap();
    holder
        .query_drop(format!(
            "SELECT val FROM txn{} WHERE id = 1 FOR UPDATE",
            tables.table_of(1)
        ))
        .await
        .unwrap();
    let mut lc = locking.open(&node).await.unwrap();
    let blocked = tokio::spawn(async move {
        let r = lc.invoke(&[read(1)]).await;
        (lc, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !blocked.is_finished(),
        "a FOR UPDATE read must wait for the row lock"
    );
    holder.query_drop("COMMIT").await.unwrap();
    let (lc, r) = blocked.await.unwrap();
    assert_eq!(r.unwrap(), vec![list(1, &[1, 2])]);
    lc.close().await;

    // 5. Deadlock: a heavy raw transaction locks B, the adapter's [append A,
    // append B] locks A and waits for B, the raw one then wants A. InnoDB
    // rolls back the lighter transaction — the adapter's — with 1213.
    let (a, b) = (10, 20);
    c.invoke(&[append(a, 1), append(b, 1)]).await.unwrap();
    admin
        .query_drop("CREATE TABLE IF NOT EXISTS ballast (id INT PRIMARY KEY)")
        .await
        .unwrap();
    let mut heavy = raw(port).await;
    heavy.query_drop("START TRANSACTION").await.unwrap();
    heavy
        .query_drop("INSERT INTO ballast SELECT seq FROM seq_1_to_200")
        .await
        .unwrap();
    heavy
        .query_drop(format!(
            "UPDATE txn{} SET val = CONCAT(val, ',', 9) WHERE id = {b}",
            tables.table_of(b)
        ))
        .await
        .unwrap();
    let victim = tokio::spawn(async move {
        let r = c.invoke(&[append(a, 2), append(b, 2)]).await;
        (c, r)
    });
    // Wait until the adapter's connection is executing its append of B
    // (blocked on the heavy transaction's row lock).
    let mut waited = false;
    for _ in 0..200 {
        let w: Option<i64> = admin
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Execute' AND INFO LIKE 'INSERT INTO txn%' AND TIME_MS > 200",
            )
            .await
            .unwrap();
        if w == Some(1) {
            waited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        waited && !victim.is_finished(),
        "the adapter's transaction never waited for B"
    );
    heavy
        .query_drop(format!(
            "UPDATE txn{} SET val = CONCAT(val, ',', 9) WHERE id = {a}",
            tables.table_of(a)
        ))
        .await
        .expect("the heavy transaction survives the deadlock");
    heavy.query_drop("COMMIT").await.unwrap();
    let (mut c, r) = victim.await.unwrap();
    let e = r.expect_err("the adapter's transaction is the deadlock victim");
    assert_eq!(
        (e.kind, e.code.as_str()),
        (ErrorKind::Definite, "deadlock"),
        "{e:?}"
    );
    let out = c.invoke(&[read(a), read(b)]).await.unwrap();
    assert_eq!(
        out,
        vec![list(a, &[1, 9]), list(b, &[1, 9])],
        "nothing of the victim remains"
    );
    c.close().await;

    // 6. Lost during COMMIT: the relay forwards COMMIT and drops the reply
    // and the connection. The client must say `info` — and indeed the
    // append was committed.
    let armed = Arc::new(AtomicBool::new(false));
    let relay = commit_reply_dropper(port, armed.clone()).await;
    let mut via =
        factory(relay, Isolation::RepeatableRead, TidbOptions::default()).allow_non_tidb_server();
    via.connect_timeout = Duration::from_secs(5);
    let mut vc = via.open(&node).await.unwrap();
    vc.invoke(&[read(30)]).await.unwrap();
    armed.store(true, Ordering::SeqCst);
    let e = tokio::time::timeout(Duration::from_secs(20), vc.invoke(&[append(30, 1)]))
        .await
        .expect("no hang")
        .expect_err("the COMMIT reply never arrives");
    assert_eq!(e.kind, ErrorKind::Indefinite, "{e:?}");
    let v: Option<Option<String>> = admin
        .query_first(format!(
            "SELECT val FROM txn{} WHERE id = 30",
            tables.table_of(30)
        ))
        .await
        .unwrap();
    assert_eq!(
        v,
        Some(Some("1".to_string())),
        "the commit happened although the client could not know"
    );

    // --version-order db: after COMMIT the client asks for
    // @@tidb_last_txn_info. MariaDB has no such variable, so this shows
    // only that the statement's failure leaves the transaction ok with no
    // certificate (TiDB's reply is parsed by `tidb::whitebox::extra`,
    // unit-tested on literal output). A count read is one statement.
    let mut wb =
        factory(port, Isolation::RepeatableRead, TidbOptions::default()).allow_non_tidb_server();
    wb.version_order_db = true;
    let mut wc = wb.open(&node).await.unwrap();
    let count = MicroOp::ReadRange(Box::new(store::RangeRead::count(40, 41)));
    let out = wc.invoke(&[append(40, 1), count]).await.unwrap();
    let MicroOp::ReadRange(r) = &out[1] else {
        panic!("{out:?}")
    };
    assert_eq!(r.kind, store::RangeKind::Count(Some(1)));
    assert!(wc.take_extra().is_empty());

    let _ = admin.disconnect().await;
    let _ = heavy.disconnect().await;
    let _ = holder.disconnect().await;
    db.teardown().await.unwrap();
}

#[test]
fn tidb_settings_and_levels() {
    assert!(
        TidbFactory::new(
            Isolation::Serializable,
            DataModel::ListAppend,
            TidbOptions::default()
        )
        .unwrap_err()
        .contains("TiDB runs repeatable-read")
    );
    let e = TidbFactory::new(
        Isolation::ReadCommitted,
        DataModel::ListAppend,
        TidbOptions {
            txn_mode: Some(TxnMode::Optimistic),
            ..TidbOptions::default()
        },
    )
    .unwrap_err();
    assert!(e.contains("pessimistic"), "{e}");
    let on = TidbOptions {
        auto_retry: AutoRetry::On,
        retry_limit: Some(7),
        ..TidbOptions::default()
    };
    assert_eq!(
        on.session_sql(),
        vec![
            "SET SESSION tidb_disable_txn_auto_retry = OFF",
            "SET SESSION tidb_retry_limit = 7"
        ]
    );
    assert!(TidbOptions::default().session_sql().is_empty());
    assert_eq!(TxnMode::parse("Pessimistic"), Ok(TxnMode::Pessimistic));
    assert!(AutoRetry::parse("maybe").unwrap_err().contains("maybe"));
}
