//! `elle/repro.sql` from a real PostgreSQL run replays on PostgreSQL: a
//! repeatable-read run checked against serializable shows write skew
//! (G2-item); each cycle's setup and every session's statements are fed to
//! `psql -v ON_ERROR_STOP=1` against a fresh throwaway cluster (CI installs
//! the `postgresql` package; as root the cluster runs as `postgres`), then
//! each cycle is replayed with one psql per session in the numbered order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use db_adapters::postgres::local::{LocalCluster, find_bin_dir};
use run_common::*;
use std::path::Path;
use std::process::Command;

/// One cycle of repro.sql: its title, setup block and session blocks.
struct Cycle {
    title: String,
    setup: String,
    sessions: Vec<(String, String)>,
}

fn cycles(sql: &str) -> Vec<Cycle> {
    let mut out: Vec<Cycle> = Vec::new();
    // 0: header/explanation, 1: setup, 2: a session.
    let mut part = 0;
    for line in sql.lines() {
        if let Some(title) = line.strip_prefix("-- ==== ") {
            out.push(Cycle {
                title: title.to_string(),
                setup: String::new(),
                sessions: Vec::new(),
            });
            part = 0;
            continue;
        }
        let Some(c) = out.last_mut() else { continue };
        if line.starts_with("-- setup") {
            part = 1;
        } else if let Some(label) = line.strip_prefix("-- session ") {
            c.sessions.push((label.to_string(), String::new()));
            part = 2;
        } else if line.starts_with("-- … and ") {
            part = 0;
        }
        let target = match part {
            1 => &mut c.setup,
            2 => &mut c.sessions.last_mut().unwrap().1,
            _ => continue,
        };
        target.push_str(line);
        target.push('\n');
    }
    out
}

fn psql(port: u16, file: &Path) -> std::process::Output {
    let psql = find_bin_dir().unwrap().join("psql");
    Command::new(psql)
        .args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
        ])
        .arg("-p")
        .arg(port.to_string())
        .arg("-d")
        .arg("postgres")
        .arg("-f")
        .arg(file)
        .output()
        .expect("spawn psql")
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn postgres_repeatable_read_repro_sql_replays_in_psql() {
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db postgres --local --isolation repeatable-read --workload append --expected-consistency-model serializable --concurrency 10 --key-count 3 --time-limit 10s --seed 21 --test-name pg-repro",
    );
    let dir = run_dir(store.path(), "pg-repro");
    let types = anomaly_types(&results(&dir));
    assert_eq!(out.status.code(), Some(1), "{types:?}");
    let sql = std::fs::read_to_string(dir.join("elle/repro.sql")).expect("elle/repro.sql");
    assert!(
        sql.starts_with("-- run: pg-repro"),
        "{}",
        &sql[..200.min(sql.len())]
    );
    assert!(sql.contains("-- database: postgres (PostgreSQL dialect"));
    assert!(sql.contains("-- isolation: repeatable-read (REPEATABLE READ)"));
    let cycles = cycles(&sql);
    assert!(!cycles.is_empty(), "no cycle in repro.sql:\n{sql}");
    assert!(
        cycles.iter().any(|c| c.title.starts_with("G2-item")),
        "{:?}",
        cycles.iter().map(|c| &c.title).collect::<Vec<_>>()
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let cluster = rt
        .block_on(LocalCluster::start(scratch.path()))
        .expect("local PostgreSQL");
    let port = cluster.port();
    let mut replayed = 0;
    for c in cycles.iter().take(5) {
        assert!(
            c.setup.contains("CREATE TABLE IF NOT EXISTS txn"),
            "{}",
            c.setup
        );
        assert!(
            c.sessions.len() >= 2 || c.title.contains("process"),
            "{}",
            c.title
        );
        for (label, stmts) in &c.sessions {
            assert!(
                stmts.contains("BEGIN ISOLATION LEVEL REPEATABLE READ;"),
                "{stmts}"
            );
            assert!(stmts.contains("COMMIT;"), "{stmts}");
            // The setup, then this session alone: every statement must be
            // valid SQL that PostgreSQL runs without error.
            let file = scratch.path().join(format!("replay-{replayed}.sql"));
            std::fs::write(&file, format!("{}{stmts}", c.setup)).unwrap();
            let o = psql(port, &file);
            assert!(
                o.status.success(),
                "psql rejected {} session {label}:\n{}{stmts}\n--- stderr\n{}",
                c.title,
                c.setup,
                String::from_utf8_lossy(&o.stderr)
            );
            replayed += 1;
        }
    }
    assert!(replayed >= 2, "{replayed} sessions replayed");

    // All sessions of a cycle at once, one psql each, in step order: every
    // statement runs (nothing blocks, every COMMIT succeeds) and the reads
    // return what the run observed — the write skew happens again. At
    // SERIALIZABLE the same steps must make PostgreSQL abort a transaction.
    let (mut total, mut same, mut checked_ser) = (0, 0, 0);
    for c in cycles.iter().take(20) {
        let (errors, reads) = replay(port, c);
        assert!(errors.is_empty(), "{}: {errors:?}", c.title);
        total += reads.len();
        let matched = reads.iter().filter(|(o, r)| o == r).count();
        same += matched;
        for (o, r) in reads.iter().filter(|(o, r)| o != r) {
            eprintln!("{}: observed {o}, replayed {r}", c.title);
        }
        if matched == reads.len() && checked_ser < 5 {
            let ser = Cycle {
                title: c.title.clone(),
                setup: c.setup.clone(),
                sessions: c
                    .sessions
                    .iter()
                    .map(|(l, t)| (l.clone(), t.replace("REPEATABLE READ", "SERIALIZABLE")))
                    .collect(),
            };
            let (errors, _) = replay(port, &ser);
            assert!(
                errors
                    .iter()
                    .any(|e| e.contains("could not serialize access")),
                "{} replayed at SERIALIZABLE without a serialization failure: {errors:?}",
                c.title
            );
            checked_ser += 1;
        }
    }
    eprintln!("{same}/{total} replayed reads as observed");
    assert!(
        total > 0 && same * 20 >= total * 19,
        "{same}/{total} reads as observed"
    );
    assert!(checked_ser > 0, "no cycle replayed exactly");
    rt.block_on(cluster.stop()).unwrap();
}

/// One psql session driven statement by statement: each statement is
/// followed by `\echo` of a marker, and its output (stdout and stderr
/// merged) is read up to the marker.
struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    n: usize,
}

impl Session {
    fn open(port: u16) -> Session {
        let psql = find_bin_dir().unwrap().join("psql");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec {} -X -q -t -A -h 127.0.0.1 -U postgres -p {port} -d postgres 2>&1",
                psql.display()
            ))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn psql");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Session {
            child,
            stdin,
            lines,
            n: 0,
        }
    }

    /// Runs `stmt`; its output lines, or `None` if it did not finish in 10 s.
    fn run(&mut self, stmt: &str) -> Option<Vec<String>> {
        use std::io::Write;
        self.n += 1;
        let marker = format!("@@done-{}@@", self.n);
        writeln!(self.stdin, "{stmt}\n\\echo {marker}").unwrap();
        self.stdin.flush().unwrap();
        let mut out = Vec::new();
        loop {
            match self.lines.recv_timeout(std::time::Duration::from_secs(10)) {
                Ok(l) if l == marker => return Some(out),
                Ok(l) => out.push(l),
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `1,2,3` → `[1 2 3]`; no row → `[]`.
fn as_list(out: &[String]) -> String {
    let text = out.first().map(String::as_str).unwrap_or("");
    format!(
        "[{}]",
        text.split(',')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Replays `c` with one psql per session in step order; returns errors and
/// (observed, replayed) per read.
fn replay(port: u16, c: &Cycle) -> (Vec<String>, Vec<(String, String)>) {
    let setup = Session::open(port).run(&c.setup).expect("setup finishes");
    assert!(
        setup.iter().all(|l| !l.contains("ERROR")),
        "setup: {setup:?}"
    );
    let mut steps: Vec<(usize, usize, String, Option<String>)> = Vec::new();
    for (si, (_, text)) in c.sessions.iter().enumerate() {
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("/* ") else {
                continue;
            };
            let (n, stmt) = rest.split_once(" */ ").unwrap();
            let (stmt, observed) = match stmt.split_once("  -- observed: ") {
                Some((s, o)) => (s, Some(o.to_string())),
                None => (stmt.split("  --").next().unwrap(), None),
            };
            steps.push((n.parse().unwrap(), si, stmt.to_string(), observed));
        }
    }
    steps.sort_by_key(|s| s.0);
    let numbers: Vec<usize> = steps.iter().map(|s| s.0).collect();
    assert_eq!(
        numbers,
        (1..=steps.len()).collect::<Vec<_>>(),
        "{}",
        c.title
    );
    let mut sessions: Vec<Session> = c.sessions.iter().map(|_| Session::open(port)).collect();
    let (mut errors, mut reads) = (Vec::new(), Vec::new());
    for (n, si, stmt, observed) in &steps {
        let Some(out) = sessions[*si].run(stmt) else {
            errors.push(format!("step {n} blocked: {stmt}"));
            break;
        };
        if let Some(e) = out.iter().find(|l| l.contains("ERROR")) {
            errors.push(format!("step {n}: {e}"));
        } else if let Some(o) = observed {
            reads.push((o.clone(), as_list(&out)));
        }
    }
    (errors, reads)
}

/// The MySQL dialect on a real MariaDB: a repeatable-read run on a testbed
/// node, left running; each cycle's setup and every session block (one
/// after another, each its own `mariadb` session) must be accepted.
#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn mariadb_repro_sql_is_accepted_by_mariadb() {
    let _lock = nemesis::testbed::TestbedLock::acquire().unwrap();
    struct Down;
    impl Drop for Down {
        fn drop(&mut self) {
            // The server the run left running goes with MariaDB's own
            // teardown (it finds the process by its config file), then the
            // testbed.
            if let Ok(tb) = nemesis::testbed::Testbed::current()
                && let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            {
                rt.block_on(async {
                    use db_adapters::db::Db as _;
                    let remotes = tb.dyn_remotes();
                    let _ = db_adapters::db::connect_all(&remotes).await;
                    let db = db_adapters::mysql::MariaDb::new(
                        db_adapters::mysql::MariaDbConfig::new(false),
                        remotes,
                    );
                    let _ = db.teardown().await;
                });
            }
            let _ = harness().args(["testbed", "down"]).output();
        }
    }
    let _down = Down;
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db mariadb --nodes testbed --isolation repeatable-read --expected-consistency-model serializable --time-limit 10s --concurrency 10 --key-count 3 --seed 11 --leave-db-running --test-name mariadb-repro",
    );
    assert_eq!(out.status.code(), Some(1), "repeatable read shows cycles");
    let dir = run_dir(store.path(), "mariadb-repro");
    let sql = std::fs::read_to_string(dir.join("elle/repro.sql")).unwrap();
    assert!(sql.contains("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"));
    let cs = cycles(&sql);
    assert!(!cs.is_empty());
    let mut blocks = 0;
    for c in cs.iter().take(10) {
        let session_blocks = c.sessions.iter().map(|(_, s)| s.as_str());
        for block in std::iter::once(c.setup.as_str()).chain(session_blocks) {
            let out = Command::new("mariadb")
                .args([
                    "-h",
                    "10.99.0.1",
                    "-uharness",
                    "-pharness",
                    "harness",
                    "-e",
                    block,
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {}\n{block}",
                c.title,
                String::from_utf8_lossy(&out.stderr)
            );
            blocks += 1;
        }
    }
    eprintln!("{blocks} blocks accepted by MariaDB");
    assert!(blocks >= 3);
}
