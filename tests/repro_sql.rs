//! `elle/repro.sql` from a real PostgreSQL run replays on PostgreSQL: a
//! repeatable-read run checked against serializable shows write skew
//! (G2-item); each cycle's setup and every session's statements are fed to
//! `psql -v ON_ERROR_STOP=1` against a fresh throwaway cluster (CI installs
//! the `postgresql` package; as root the cluster runs as `postgres`).

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
fn postgres_repeatable_read_repro_sql_replays_in_psql() {
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--isolation",
            "repeatable-read",
            "--workload",
            "append",
            "--expected-consistency-model",
            "serializable",
            "--concurrency",
            "10",
            "--key-count",
            "3",
            "--time-limit",
            "10s",
            "--seed",
            "21",
            "--test-name",
            "pg-repro",
        ],
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
    rt.block_on(cluster.stop()).unwrap();
}
