//! The CockroachDB, TiDB and YugabyteDB lifecycles end to end over SSH on
//! testbed nodes, as far as they go without the real binaries (which are
//! not installable here): the tarball — built by this test, with a release's
//! directory layout but *without* the database binaries — is copied to
//! every node and unpacked once, directories are made, setup then stops
//! with an error naming the missing binary; process control over the pid
//! files is idempotent on nodes where nothing runs, and start fails naming
//! the binary; node logs are collected into the run directory.
//!
//! The pid-file supervisor itself is exercised with `/bin/sleep` as a
//! generic long-running process (start, idempotent start, pause, resume,
//! kill): no database is imitated.
//!
//! Needs root and the testbed's packages (iproute2, util-linux, tini,
//! openssh-server/-client, iptables) plus tar and gzip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::cluster::{ClusterDb, Daemon, Layout, Plan, Step, Tarball, execute};
use db_adapters::cockroach::CockroachConfig;
use db_adapters::db::{Db, DbError, collect_logs};
use db_adapters::tidb::{Roles, TidbConfig};
use db_adapters::yugabyte::YugabyteConfig;
use nemesis::remote::Remote;
use nemesis::testbed::{Testbed, TestbedLock};
use std::path::Path;
use std::sync::Arc;

/// A tarball with one top-level directory holding `files` (relative paths
/// with contents), as releases are laid out.
fn make_tarball(dir: &Path, top: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let root = dir.join("src").join(top);
    for (p, content) in files {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, content).unwrap();
    }
    let out = dir.join(format!("{top}.tar.gz"));
    let st = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(dir.join("src"))
        .arg(top)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

async fn sh(r: &Arc<dyn Remote>, cmd: &str) -> String {
    let o = r.run(cmd).await.unwrap_or_else(|e| panic!("{cmd}: {e}"));
    o.stdout_str()
}

async fn check_stops_at_missing_binary(
    db: &ClusterDb,
    layout: &Layout,
    remotes: &[Arc<dyn Remote>],
    binary: &str,
    dbname: &str,
) {
    let err = db
        .setup()
        .await
        .expect_err("setup cannot succeed without the binary");
    let msg = err.to_string();
    assert!(
        matches!(err, DbError::Step { .. })
            && msg.contains(&format!("binary `{binary}` not found"))
            && msg.contains(dbname),
        "{msg}"
    );
    assert!(
        msg.starts_with("node n1: check "),
        "first node fails first: {msg}"
    );
    let r1 = &remotes[0];
    let dir = layout.dir("n1");
    // Copied, unpacked (one top-level dir stripped), marked.
    assert_eq!(
        sh(
            r1,
            &format!("test -s {dir}/release.tar.gz && cat {dir}/dist/README")
        )
        .await,
        format!("{dbname} test release without binaries")
    );
    sh(r1, &format!("test -f {dir}/dist/.harness-unpacked")).await;
    // Unpacked once: a second setup keeps what is in dist/.
    sh(r1, &format!("touch {dir}/dist/kept")).await;
    let again = db.setup().await.expect_err("still no binary");
    assert!(again.to_string().contains(binary), "{again}");
    sh(r1, &format!("test -f {dir}/dist/kept")).await;
    // The first node failed before the others were touched.
    let r2 = &remotes[1];
    assert_eq!(
        sh(
            r2,
            &format!("test -e {} && echo yes || echo no", layout.dir("n2"))
        )
        .await,
        "no"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
async fn tarball_lifecycles_over_ssh_without_the_binaries() {
    let _lock = TestbedLock::acquire().unwrap();
    let tb = Testbed::up(3).await.unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    let nodes = tb.nodes.clone();
    let tmp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let base_s = base.path().to_str().unwrap().to_string();

    // --- CockroachDB ---
    let crdb_tgz = make_tarball(
        tmp.path(),
        "cockroach-v0.0.0-test.linux-amd64",
        &[
            ("README", "CockroachDB test release without binaries"),
            ("lib/README", "no libraries"),
        ],
    );
    let mut cfg = CockroachConfig::new(Tarball::Local(crdb_tgz));
    cfg.install.layout = Layout {
        base: format!("{base_s}/cockroach"),
    };
    let crdb = ClusterDb::new(cfg.spec(&nodes), remotes.clone());
    check_stops_at_missing_binary(
        &crdb,
        &cfg.install.layout,
        &remotes,
        "cockroach",
        "CockroachDB",
    )
    .await;
    // Process control: nothing runs, so kill/pause/resume succeed; start
    // names the missing binary.
    let p = crdb.process().unwrap();
    p.kill(&nodes[0]).await.unwrap();
    p.pause(&nodes[0]).await.unwrap();
    p.resume(&nodes[0]).await.unwrap();
    let e = p.start(&nodes[0]).await.unwrap_err();
    assert!(
        e.message.contains("binary") && e.message.contains("/dist/cockroach"),
        "{e}"
    );
    // Logs: the unpack log arrives; the database's own logs are reported missing.
    let run = tempfile::tempdir().unwrap();
    let problems = collect_logs(&crdb, run.path()).await;
    let unpack = std::fs::read_to_string(run.path().join("nodes/n1/unpack.log")).unwrap();
    assert!(
        unpack.contains("cockroach-v0.0.0-test.linux-amd64/README"),
        "{unpack}"
    );
    assert!(
        problems.iter().any(|p| p.contains("cockroach.log")),
        "{problems:?}"
    );
    crdb.teardown().await.unwrap();

    // --- TiDB ---
    let tidb_tgz = make_tarball(
        tmp.path(),
        "tidb-v0.0.0-test-linux-amd64",
        &[
            ("README", "TiDB test release without binaries"),
            ("bin/README", "no servers"),
        ],
    );
    let mut tcfg = TidbConfig::new(Tarball::Local(tidb_tgz), Roles::spread(&nodes));
    tcfg.install.layout = Layout {
        base: format!("{base_s}/tidb"),
    };
    let tidb = ClusterDb::new(tcfg.spec(&nodes), remotes.clone());
    check_stops_at_missing_binary(
        &tidb,
        &tcfg.install.layout,
        &remotes,
        "bin/pd-server",
        "TiDB",
    )
    .await;
    let p = tidb.process().unwrap();
    p.kill(&nodes[0]).await.unwrap();
    let e = p.start(&nodes[0]).await.unwrap_err();
    assert!(e.message.contains("pd-server"), "{e}");
    tidb.teardown().await.unwrap();

    // --- YugabyteDB ---
    let yb_tgz = make_tarball(
        tmp.path(),
        "yugabyte-0.0.0.0",
        &[
            ("README", "YugabyteDB test release without binaries"),
            ("bin/README", "no servers"),
        ],
    );
    let mut ycfg = YugabyteConfig::new(Tarball::Local(yb_tgz));
    ycfg.install.layout = Layout {
        base: format!("{base_s}/yugabyte"),
    };
    let yb = ClusterDb::new(ycfg.spec(&nodes), remotes.clone());
    check_stops_at_missing_binary(
        &yb,
        &ycfg.install.layout,
        &remotes,
        "bin/yb-master",
        "YugabyteDB",
    )
    .await;
    let e = yb.process().unwrap().start(&nodes[0]).await.unwrap_err();
    assert!(e.message.contains("yb-master"), "{e}");
    yb.teardown().await.unwrap();

    // --- The pid-file supervisor, with a generic process ---
    let dir = format!("{base_s}/supervisor/n2");
    let d = Daemon {
        name: "sleeper".into(),
        bin: "/bin/sleep".into(),
        args: vec!["1000".into()],
        cwd: dir.clone(),
        pid_file: format!("{dir}/sleeper.pid"),
        stdout: format!("{dir}/sleeper.stdout.log"),
    };
    let r2 = &remotes[1];
    sh(r2, &format!("mkdir -p {dir}")).await;
    let mut plan = Plan::default();
    plan.push(Step::run("n2", "start", d.start_cmd()));
    execute(&plan, &remotes).await.unwrap();
    let pid = sh(r2, &format!("cat {dir}/sleeper.pid")).await;
    assert_eq!(
        sh(r2, &format!("cat /proc/{pid}/cmdline | tr '\\0' ' '")).await,
        "/bin/sleep 1000"
    );
    execute(&plan, &remotes).await.unwrap();
    assert_eq!(
        sh(r2, &format!("cat {dir}/sleeper.pid")).await,
        pid,
        "start is idempotent"
    );
    let state = |sig: &str| {
        let cmd = d.signal_cmd(sig);
        let r2 = r2.clone();
        let pid = pid.clone();
        async move {
            r2.run(&cmd).await.unwrap();
            sh(&r2, &format!("grep '^State:' /proc/{pid}/status | cut -c8")).await
        }
    };
    assert_eq!(state("STOP").await, "T");
    assert_eq!(state("CONT").await, "S");
    r2.run(&d.signal_cmd("KILL")).await.unwrap();
    assert_eq!(
        sh(
            r2,
            &format!("test -e /proc/{pid} && echo alive || echo gone")
        )
        .await,
        "gone"
    );
    assert_eq!(
        sh(
            r2,
            &format!("test -e {dir}/sleeper.pid && echo yes || echo no")
        )
        .await,
        "no"
    );
    r2.run(&d.signal_cmd("KILL"))
        .await
        .expect("killing nothing succeeds");
    for r in &remotes {
        r.close().await;
    }
    drop(base);
    Testbed::down().await.unwrap();
}
