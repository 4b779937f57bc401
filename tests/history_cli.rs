//! `harness history convert|stats`: conversions and exit codes.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod run_common;

use std::path::Path;
use std::process::{Command, Output};

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("runs harness")
}

fn conformance(rel: &str) -> String {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/conformance"))
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn stats_summarizes_a_history() {
    let o = harness(&[
        "history",
        "stats",
        &conformance("elle-cli/rw-register-partial-info.json"),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("ops: 7"), "{out}");
    assert!(out.contains("unmatched invocations: 1 (ops 6)"), "{out}");
    assert!(out.contains("keys: 1"), "{out}");
    let o = harness(&[
        "history",
        "stats",
        "--json",
        &conformance("elle/paper-example.edn"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "EDN");
    assert_eq!(v["ops"], 8);
    assert_eq!(v["by_type"]["invoke"], 4);
    assert_eq!(v["ops_without_process"], 8);
}

#[test]
fn convert_round_trips_json_edn_json() {
    let dir = tempfile::tempdir().unwrap();
    let src = conformance("elle-cli/rw-register.edn");
    let json = dir.path().join("h.jsonl");
    let edn = dir.path().join("h.edn");
    let elle = dir.path().join("h.json");
    for (a, b) in [
        (src.as_str(), json.to_str().unwrap()),
        (json.to_str().unwrap(), edn.to_str().unwrap()),
        (edn.to_str().unwrap(), elle.to_str().unwrap()),
    ] {
        let o = harness(&["history", "convert", a, b]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let orig = store::format::read_path(Path::new(&src)).unwrap().ops;
    for p in [&json, &edn, &elle] {
        assert_eq!(
            store::format::read_path(p).unwrap().ops,
            orig,
            "{}",
            p.display()
        );
    }
    // Keywords are marked in JSON so they come back as keywords.
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.contains(r#"["w",":x",2]"#), "{text}");
}

#[test]
fn malformed_input_exits_3_with_file_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "trunc.jsonl",
            b"{\"type\":\"ok\"}\n{\"type\":\"ok\",\"value\":[\n{\"type\":\"ok\"}\n",
            ":2:",
        ),
        (
            "types.jsonl",
            b"{\"type\":\"ok\",\"index\":\"zero\"}\n",
            ":1:",
        ),
        (
            "unknown.jsonl",
            b"{\"type\":\"perhaps\"}\n",
            "unknown op type",
        ),
        ("unbalanced.edn", b"{:type :ok :value [[:r 1 nil]}\n", ":1:"),
        (
            "random.bin",
            &[0xff, 0x00, 0x13, 0x37, 0x80, b'{', 0xfe, b'\n'],
            // Named in plain words (tests/newcomer.rs), not by byte position.
            "is not a history file (it is binary data, not text)",
        ),
        (
            "double.edn",
            b"{:type :invoke :process 0 :value []}\n{:type :invoke :process 0 :value []}\n",
            "op 1",
        ),
        (
            // Stats reads in one pass, but a malformed line later in the
            // file is still the error reported, as when it read it whole.
            "double-then-malformed.edn",
            b"{:type :invoke :process 0 :value []}\n{:type :invoke :process 0 :value []}\n{:type :ok :value [}\n",
            ":3:",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = harness(&["history", "stats", p.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains(p.to_str().unwrap()), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let o = harness(&["history", "stats", "/nonexistent/h.jsonl"]);
    assert_eq!(o.status.code(), Some(3));
    let o = harness(&[
        "history",
        "convert",
        &conformance("elle/paper-example.edn"),
        "/tmp/x.txt",
    ]);
    assert_eq!(o.status.code(), Some(3));
}

fn peer(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("store/tests/data/peer-formats")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn convert_reads_and_writes_peer_formats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = |n: &str| dir.path().join(n).display().to_string();
    let src = peer("lost-update.txt");
    // text → dbcop → Cobra → text: the same file again.
    for (from, to, extra) in [
        (src.as_str(), out("lu.json"), &["--to", "dbcop"][..]),
        (&out("lu.json"), out("lu-cobra"), &["--to", "cobra"][..]),
        (&out("lu-cobra"), out("lu.txt"), &[][..]),
    ] {
        let mut args = vec!["history", "convert", from, to.as_str()];
        args.extend_from_slice(extra);
        let o = harness(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let back = std::fs::read_to_string(out("lu.txt")).unwrap();
    let orig = std::fs::read_to_string(&src).unwrap();
    // Sessions are renumbered from 0 by dbcop's array positions.
    assert_eq!(back.lines().count(), orig.lines().count(), "{back}");
    assert!(back.starts_with("r(0,0,0,1)\nw(0,1,0,1)\n"), "{back}");

    // To JSON Lines: reads of the initial value become nil reads, and the
    // loss of session-only order is said.
    let o = harness(&["history", "convert", &src, &out("lu.jsonl")]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("session order only"), "{err}");
    let jsonl = std::fs::read_to_string(out("lu.jsonl")).unwrap();
    assert!(
        jsonl.contains(r#""type":"ok","process":1,"f":"txn","value":[["r",0,null],["w",0,1]]"#),
        "{jsonl}"
    );
    // … and back to text, 0 again.
    let o = harness(&["history", "convert", &out("lu.jsonl"), &out("again.txt")]);
    assert!(o.status.success());
    assert_eq!(std::fs::read_to_string(out("again.txt")).unwrap(), orig);

    // Stats names the format; a forced wrong format is an error with its place.
    let o = harness(&["history", "stats", &peer("causal.json")]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("(dbcop JSON)"));
    let o = harness(&["history", "convert", &src, &out("x.edn"), "--from", "dbcop"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("lost-update.txt:1:1:"));
    let o = harness(&["history", "convert", &src, &out("x.unknown")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--to NAME"));
}

fn bincode(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/dbcop-bincode")
        .join(name)
        .display()
        .to_string()
}

/// dbcop's `history.bincode` through `history convert` and `stats`: to text
/// and back byte for byte, by `--to` name, by `.bincode` extension, and
/// into an existing directory (dbcop's layout).
#[test]
fn convert_reads_and_writes_dbcop_bincode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = |n: &str| dir.path().join(n).display().to_string();
    let src = bincode("lost-update.bincode");
    let run = |args: &[&str]| {
        let o = harness(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let said = run(&["history", "convert", &src, &out("lu.txt")]);
    assert!(said.contains("(dbcop bincode)"), "{said}");
    assert_eq!(
        std::fs::read_to_string(out("lu.txt")).unwrap(),
        "r(0,0,0,1)\nw(0,1,0,1)\nr(0,2,0,2)\nr(0,0,1,3)\nw(0,2,1,3)\n"
    );
    let orig = std::fs::read(&src).unwrap();
    run(&["history", "convert", &out("lu.txt"), &out("a.bincode")]);
    assert_eq!(std::fs::read(out("a.bincode")).unwrap(), orig);
    run(&[
        "history",
        "convert",
        &out("lu.txt"),
        &out("b.out"),
        "--to",
        "dbcop-bincode",
    ]);
    assert_eq!(std::fs::read(out("b.out")).unwrap(), orig);
    std::fs::create_dir(out("d")).unwrap();
    run(&[
        "history",
        "convert",
        &out("lu.txt"),
        &out("d"),
        "--to",
        "bincode",
    ]);
    assert_eq!(std::fs::read(out("d/history.bincode")).unwrap(), orig);
    // JSON Lines and back: reads of 0 become nil and 0 again.
    run(&["history", "convert", &src, &out("lu.jsonl")]);
    run(&["history", "convert", &out("lu.jsonl"), &out("c.bincode")]);
    assert_eq!(std::fs::read(out("c.bincode")).unwrap(), orig);
    // Stats names the format, also for the directory.
    for f in [src.as_str(), &out("d")] {
        let o = harness(&["history", "stats", f]);
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.contains("(dbcop bincode)"), "{f}: {s}");
    }
    // A truncated file: its byte, not "binary data".
    let o = harness(&[
        "history",
        "convert",
        &bincode("truncated.bincode"),
        &out("t.txt"),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("byte 188"), "{e}");
}

/// `harness history ARGS` with `input` on its standard input.
fn history_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut cmd = run_common::harness();
    cmd.arg("history").args(args);
    run_common::with_stdin(cmd, input)
}

#[test]
fn stats_and_convert_read_standard_input() {
    // Before: `-` "does not exist" and `/dev/stdin` on a pipe was sniffed by
    // opening it again ("expected an op object").
    let edn = std::fs::read(conformance("elle-cli/rw-register-partial-info.json")).unwrap();
    for name in ["-", "/dev/stdin"] {
        let o = history_stdin(&["stats", "--json", name], &edn);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "stats {name}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["ops"], 7, "{v}");
        assert_eq!(v["unmatched_invocations"], 1, "{v}");
    }
    let o = history_stdin(&["stats", "-"], &edn);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("<stdin>"), "the stream is named: {out}");
    // gzip on stdin is sniffed from the bytes read ahead.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &edn).unwrap();
    let o = history_stdin(&["stats", "--json", "-"], &gz.finish().unwrap());
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ops"], 7);

    // convert: stdin to EDN, then the EDN back through stdin to JSON Lines.
    let dir = tempfile::tempdir().unwrap();
    let out_edn = dir.path().join("h.edn");
    let o = history_stdin(&["convert", "-", out_edn.to_str().unwrap()], &edn);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("converted 7 ops: <stdin>"), "{err}");
    let text = std::fs::read(&out_edn).unwrap();
    assert!(text.starts_with(b"{"), "EDN map per line");
    let out_jsonl = dir.path().join("h.jsonl");
    let o = history_stdin(&["convert", "-", out_jsonl.to_str().unwrap()], &text);
    assert_eq!(o.status.code(), Some(0));
    let o = harness(&["history", "stats", "--json", out_jsonl.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ops"], 7, "{v}");

    // Nothing and garbage on stdin: exit 3, named as the stream.
    let o = history_stdin(&["stats", "-"], b"");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("<stdin>: empty input"), "{err}");
    let o = history_stdin(&["stats", "-"], b"{\"process\": 0, \"type\": \"nope\"}\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("<stdin>:1"), "positioned in the stream: {err}");
}

#[test]
fn stats_and_convert_read_a_fifo_and_a_process_substitution() {
    let dir = tempfile::tempdir().unwrap();
    let src = conformance("elle-cli/rw-register.edn");
    let bin = env!("CARGO_BIN_EXE_harness");
    let out = dir.path().join("h.jsonl");
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{bin}' history convert <(cat '{src}') '{}' && '{bin}' history stats --json <(cat '{src}')",
            out.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let direct = harness(&["history", "stats", "--json", &src]);
    let w: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
    assert_eq!(v["ops"], w["ops"], "the pipe reads as the file does");
    assert_eq!(v["by_type"], w["by_type"]);
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
    // A FIFO: read once (a second open would hang with no writer left).
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let writer = {
        let (fifo, src) = (fifo.clone(), src.clone());
        std::thread::spawn(move || std::fs::write(&fifo, std::fs::read(src).unwrap()).unwrap())
    };
    let mut child = Command::new(bin)
        .args(["history", "stats", "--json"])
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("harness history stats hangs on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ops"], w["ops"]);
}

#[test]
fn knossos_edn_histories_convert_and_check() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/knossos"));
    let ok = dir.join("cas-register-ok.edn");
    let bad = dir.join("cas-register-bad.edn");
    let tmp = tempfile::tempdir().unwrap();
    // A failed cas did not happen in EDN (Knossos' reading, the default
    // for EDN) but saw another value in JSON Lines (Porcupine's): a
    // conversion would change what the history means, so it is refused,
    // naming the op, and leaves no file.
    let out = tmp.path().join("k.jsonl");
    let o = harness(&[
        "history",
        "convert",
        ok.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("a failed cas did not happen in EDN"), "{err}");
    assert!(err.contains("op "), "{err}");
    assert!(!out.exists());
    // Within the family it converts, and both files check alike.
    let edn = tmp.path().join("k.edn");
    let o = harness(&[
        "history",
        "convert",
        ok.to_str().unwrap(),
        edn.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("converted 14 ops"), "{err}");
    for f in [ok.to_str().unwrap(), edn.to_str().unwrap()] {
        let o = harness(&["check", f]);
        let s = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{f}: {s}");
        assert!(
            s.contains(
                "valid: register checked for linearizability per key (cas-register model, \
                 failed ops: dropped) — 6 op(s)"
            ),
            "{s}"
        );
    }
    let o = harness(&["check", bad.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{s}");
    assert!(
        s.contains("read 1 at position 4: impossible in state 2"),
        "{s}"
    );
}
