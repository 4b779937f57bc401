//! `harness run --db cockroach|tidb|yugabyte`: flag checking (exit 3), a
//! full run of the CockroachDB and YugabyteDB clients through `--url`
//! against a real throwaway PostgreSQL (the dialect they share), the TiDB
//! client refusing a server that is not TiDB (exit 4), and a tarball
//! install on testbed nodes stopping at the missing binary (exit 4). The
//! real databases are not installable here (see the adapters' docs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use db_adapters::catalog::{DbKind, names_where};
use run_common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn bad_flag_combinations_exit_3_naming_the_problem() {
    let store = tempfile::tempdir().unwrap();
    // Messages listing databases are generated from the catalog: the
    // expected text is built from it too, so a new entry changes both.
    let tarball = format!("apply to --db {} only", names_where(DbKind::is_tarball));
    let local = format!(
        "--local applies to --db {} only",
        names_where(DbKind::has_local_server)
    );
    let version_order = format!(
        "only {} record their version order",
        names_where(|k| k.records_version_order(false))
    );
    let cases: &[(&[&str], &str)] = &[
        (
            &["--db", "cockroach"],
            "--db cockroach needs --nodes with --tarball",
        ),
        (
            &["--db", "yugabyte", "--nodes", "a,b,c"],
            "needs --tarball PATH|URL",
        ),
        (
            &[
                "--db",
                "tidb",
                "--nodes",
                "a,b,c",
                "--no-setup",
                "--isolation",
                "serializable",
            ],
            "TiDB runs repeatable-read",
        ),
        (
            &[
                "--db",
                "tidb",
                "--nodes",
                "a,b,c",
                "--no-setup",
                "--txn-mode",
                "eventual",
            ],
            "--txn-mode \"eventual\"",
        ),
        (
            &[
                "--db",
                "tidb",
                "--nodes",
                "a,b,c",
                "--no-setup",
                "--roles",
                "pd=a;tikv=b;tidb=zz",
            ],
            "unknown node \"zz\"",
        ),
        (
            &[
                "--db",
                "cockroach",
                "--nodes",
                "a,b,c",
                "--no-setup",
                "--auto-retry",
                "off",
            ],
            "apply to --db tidb only",
        ),
        (
            &[
                "--db",
                "cockroach",
                "--nodes",
                "a",
                "--tarball",
                "/nonexistent/cockroach.tgz",
            ],
            "/nonexistent/cockroach.tgz",
        ),
        (
            &[
                "--db",
                "cockroach",
                "--nodes",
                "a",
                "--tarball",
                "x",
                "--no-setup",
            ],
            "exclude each other",
        ),
        (
            &[
                "--db",
                "yugabyte",
                "--url",
                "postgres://h/db",
                "--isolation",
                "read-uncommitted",
            ],
            "YugabyteDB YSQL runs",
        ),
        (&["--db", "sqlite", "--tarball", "x"], &tarball),
        (&["--db", "cockroach", "--local"], &local),
        (
            &[
                "--db",
                "yugabyte",
                "--url",
                "postgres://h/db",
                "--version-order",
                "db",
            ],
            &version_order,
        ),
        (
            &[
                "--db",
                "sqlite",
                "--isolation",
                "snapshot-isolation",
                "--version-order",
                "db",
            ],
            "--db sqlite needs --isolation serializable",
        ),
    ];
    for (args, want) in cases {
        let o = run(store.path(), args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(want),
            "{args:?}: want {want:?} in {}",
            stderr(&o)
        );
    }
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn cockroach_and_yugabyte_clients_run_against_postgresql_by_url() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pgdir = tempfile::tempdir().unwrap();
    let cluster = rt
        .block_on(db_adapters::postgres::local::LocalCluster::start(
            pgdir.path(),
        ))
        .unwrap();
    let url = cluster.url();
    let store = tempfile::tempdir().unwrap();
    for (db, iso, name) in [
        ("cockroach", "serializable", "crdb-on-pg"),
        ("yugabyte", "repeatable-read", "yb-on-pg"),
    ] {
        let o = run(
            store.path(),
            &[
                "--db",
                db,
                "--url",
                &url,
                "--isolation",
                iso,
                "--ops",
                "400",
                "--time-limit",
                "60s",
                "--concurrency",
                "4",
                "--seed",
                "5",
                "--test-name",
                name,
            ],
        );
        let dir = run_dir(store.path(), name);
        assert_complete(&dir);
        assert_eq!(o.status.code(), Some(0), "{db}: {}", stderr(&o));
        let (invoke, ok, _fail, info) = counts(&dir);
        assert!(invoke >= 400 && ok > 200, "{db}: invoke {invoke}, ok {ok}");
        assert_eq!(info, 0, "{db}: no indefinite outcomes on a healthy server");
    }
    rt.block_on(cluster.stop()).unwrap();
}

#[test]
fn tidb_unreachable_server_is_a_setup_failure() {
    // Nothing listens here: setup fails (exit 4), naming tidb. (Refusing a
    // reachable non-TiDB server is shown against MariaDB in db-adapters.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = tempfile::tempdir().unwrap();
    let url = format!("mysql://root@127.0.0.1:{port}/test");
    let o = run(
        store.path(),
        &[
            "--db",
            "tidb",
            "--url",
            &url,
            "--isolation",
            "repeatable-read",
            "--ops",
            "10",
            "--test-name",
            "tidb-none",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("tidb"), "{}", stderr(&o));
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn tarball_install_on_testbed_stops_at_the_missing_binary() {
    let _lock = nemesis::testbed::TestbedLock::acquire().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("src/yugabyte-0.0.0.0/bin");
    std::fs::create_dir_all(&top).unwrap();
    std::fs::write(top.join("README"), "no servers in this test release").unwrap();
    let tgz = tmp.path().join("yb.tar.gz");
    assert!(
        std::process::Command::new("tar")
            .arg("-czf")
            .arg(&tgz)
            .arg("-C")
            .arg(tmp.path().join("src"))
            .arg("yugabyte-0.0.0.0")
            .status()
            .unwrap()
            .success()
    );
    let base = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let o = run(
        store.path(),
        &[
            "--db",
            "yugabyte",
            "--nodes",
            "testbed:3",
            "--tarball",
            tgz.to_str().unwrap(),
            "--db-dir",
            base.path().to_str().unwrap(),
            "--test-name",
            "yb-no-binary",
        ],
    );
    let _ = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["testbed", "down"])
        .output();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("binary `bin/yb-master` not found") && e.contains("YugabyteDB"),
        "{e}"
    );
    // The unpack log of the first node was collected into the run directory.
    let dir = run_dir(store.path(), "yb-no-binary");
    let unpack = std::fs::read_to_string(dir.join("nodes/n1/unpack.log")).unwrap();
    assert!(unpack.contains("yugabyte-0.0.0.0/bin/README"), "{unpack}");
}
