//! What a new user meets first: `--help` that lists every value, and plain
//! words for the files people pass to `harness check` by mistake and for
//! the other messages a newcomer met (the table in docs/capabilities.md,
//! "Mistakes and what harness says").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_harness");

fn harness(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("runs harness")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn run_help_lists_every_value_and_groups_the_flags() {
    let o = harness(&["run", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = text(&o);
    for heading in [
        "Database:",
        "Workload:",
        "Limits:",
        "Output:",
        "Nodes and SSH:",
        "Faults (nemesis) and the database on nodes:",
        "CockroachDB, TiDB and YugabyteDB:",
    ] {
        assert!(help.contains(heading), "no {heading:?} group in\n{help}");
    }
    for db in [
        "sqlite",
        "sim",
        "postgres",
        "galera",
        "mariadb",
        "cockroach",
        "tidb",
        "yugabyte",
    ] {
        assert!(help.contains(db), "--db {db} not listed");
    }
    for level in db_adapters::sql::Isolation::ALL {
        assert!(
            help.contains(level.name()),
            "--isolation {} not listed",
            level.name()
        );
    }
    for mode in db_adapters::sim::SimMode::ALL {
        assert!(
            help.contains(mode.name()),
            "--sim-bug {} not listed",
            mode.name()
        );
    }
    for w in ["list-append", "rw-register", "append", "wr"] {
        assert!(help.contains(w), "--workload {w} not listed");
    }
    for k in ["edn", "jsonl", "timeline", "all"] {
        assert!(help.contains(k), "--keep {k} not listed");
    }
    for nemesis in ["partition", "kill", "pause"] {
        assert!(help.contains(nemesis), "--nemesis {nemesis} not listed");
    }
}

#[test]
fn one_name_per_model_in_help_and_output() {
    // Elle prints PL-SS as strong-serializable; that is the name everywhere,
    // and strict-serializable appears only as the alias it is.
    for cmd in [&["run", "--help"][..], &["check", "--help"][..]] {
        let help = text(&harness(cmd));
        assert!(help.contains("strong-serializable"), "{cmd:?}\n{help}");
        assert_eq!(
            help.matches("strict-serializable").count(),
            help.matches("alias strict-serializable").count(),
            "{cmd:?}: strict-serializable other than as an alias\n{help}"
        );
    }
    let valid = repo("testdata/conformance/elle-cli/list-append-valid-multiple-processes.json");
    let out = text(&harness(&["check", &valid]));
    assert!(out.contains("against strong-serializable"), "{out}");
}

#[test]
fn files_that_are_not_histories_are_named_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir
        .path()
        .join("runs")
        .join("t")
        .join("20261123T000000.000");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("test.json"), "{}").unwrap();
    // Every run has one, and `*.log` once made this directory read as Cobra
    // logs ("harness.log: byte 0: unknown record type 0x32").
    std::fs::write(
        run_dir.join("harness.log"),
        "2026-11-23T00:00:00.000Z  INFO engine::run: harness run: sqlite\n",
    )
    .unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let readme = repo("README.md");
    let cargo = repo("Cargo.toml");
    let suite = repo("suites/ci.toml");
    let missing = dir.path().join("nope.jsonl");
    let cases: Vec<(String, String)> = vec![
        (
            readme.clone(),
            format!("{readme} is not a history file (it looks like Markdown)"),
        ),
        (
            cargo.clone(),
            format!("{cargo} is not a history file (it looks like TOML)"),
        ),
        (
            suite.clone(),
            format!("{suite} is not a history file (it looks like TOML)"),
        ),
        ("/dev/null".into(), "/dev/null is empty".into()),
        (
            empty.display().to_string(),
            format!("{} is empty", empty.display()),
        ),
        (
            run_dir.display().to_string(),
            format!(
                "{} is a run directory, not a history file: `harness analyze {}`",
                run_dir.display(),
                run_dir.display()
            ),
        ),
        (
            BIN.into(),
            format!("{BIN} is not a history file (it is binary data, not text)"),
        ),
        (
            missing.display().to_string(),
            format!("{} does not exist", missing.display()),
        ),
    ];
    for (file, want) in &cases {
        let o = harness(&["check", file]);
        assert_eq!(o.status.code(), Some(3), "{file}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with(&format!("error: {want}")), "{file}: {err}");
        assert!(
            !err.contains("dispatch") && !err.contains("expected an op"),
            "{err}"
        );
    }
    // history stats/convert say the same.
    let o = harness(&["history", "stats", &readme]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("it looks like Markdown"));
    // A broken history keeps the parser's position.
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, "{\"index\":0,\"type\":\"invoke\",\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"process\":0}\n{\"index\":1,\"type\":oops}\n").unwrap();
    let err = text(&harness(&["check", broken.to_str().unwrap()]));
    assert!(err.contains(":2:"), "line number kept: {err}");
}

#[test]
fn a_valid_check_says_what_was_checked() {
    let valid = repo("testdata/conformance/elle-cli/list-append-valid-multiple-processes.json");
    let o = harness(&["check", &valid]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("checked: "))
        .unwrap_or_else(|| panic!("no 'checked:' line in\n{out}"));
    assert!(
        line.contains("3 transactions (3 ok, 0 fail, 0 info)"),
        "{line}"
    );
    assert!(line.contains("on 1 key,"), "{line}");
    assert!(line.contains("list-append"), "{line}");
    assert!(line.contains(" s"), "{line}");
    assert!(
        line.contains("(analyses: reads, lost-update, cycles, weak)"),
        "{line}"
    );
    // The line names the analyses that ran, the complete ones included.
    let peer = repo("store/tests/data/peer-formats/initial-only.txt");
    let o = harness(&["check", &peer, "-c", "read-atomic,serializable"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("(analyses: reads, lost-update, cycles, weak, sat)"),
        "{out}"
    );
}

#[test]
fn bad_input_is_named_once_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    // A negative index says which number, not "found an integer", and the
    // path is named once.
    let neg = dir.path().join("neg.jsonl");
    std::fs::write(
        &neg,
        "{\"index\":-1,\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
    )
    .unwrap();
    let o = harness(&["check", &neg.display().to_string()]);
    assert_eq!(o.status.code(), Some(3));
    let t = text(&o);
    assert!(
        t.contains("field `index`: expected a non-negative integer, found -1"),
        "{t}"
    );
    assert_eq!(
        t.matches(&neg.display().to_string()).count(),
        1,
        "the path once: {t}"
    );
    // serve without a store says where runs are and how to name another.
    let missing = dir.path().join("runs");
    let o = harness(&[
        "serve",
        "--port",
        "0",
        "--store",
        &missing.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let t = text(&o);
    assert!(t.contains("--store DIR"), "{t}");
    assert!(t.contains("`harness run` keeps them in ./runs"), "{t}");
}
