//! The models a transactional check decides, through the built binary:
//! `-c causal` is transactional causal consistency (causal-cerone), not
//! Elle's single-object `causal`, which proscribes no anomaly of a
//! transaction history; and a check against models that proscribe nothing
//! is never `valid`.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_harness");

fn peer(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("store/tests/data/peer-formats")
        .join(name)
        .display()
        .to_string()
}

fn harness(args: &[&str]) -> Output {
    match Command::new(BIN).args(args).output() {
        Ok(o) => o,
        Err(e) => panic!("running harness {args:?}: {e}"),
    }
}

fn json(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    match serde_json::from_str(&out) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {out}"),
    }
}

/// T1 writes x; T2 reads it and writes y; T3 reads y but x's initial value.
#[test]
fn causal_is_checked_as_transactional_causal_consistency() {
    let f = peer("causal.txt");
    let asked = harness(&["check", &f, "-c", "causal", "--format", "json"]);
    let cerone = harness(&["check", &f, "-c", "causal-cerone", "--format", "json"]);
    assert_eq!(asked.status.code(), Some(1), "{}", json(&asked));
    assert_eq!(cerone.status.code(), Some(1));
    let (a, c) = (json(&asked), json(&cerone));
    for field in ["valid?", "anomaly-types", "not", "also-not"] {
        assert_eq!(a[field], c[field], "{field}: {a} vs {c}");
    }
    assert!(
        a["not"].to_string().contains("causal-cerone")
            || a["also-not"].to_string().contains("causal-cerone"),
        "{a}"
    );
    let text = harness(&["check", &f, "-c", "causal"]);
    let out = String::from_utf8_lossy(&text.stdout);
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(out.contains("against causal-cerone"), "{out}");
    assert!(
        format!("{out}{err}").contains("`causal` was checked as causal-cerone"),
        "{out}{err}"
    );
}

/// A read of a value nobody wrote fails `-c causal` as it fails every
/// transactional model (it was `unknown`, "allowed by the requested
/// models", when `causal` was Elle's single-object model).
#[test]
fn a_garbage_read_fails_causal() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("garbage.txt");
    std::fs::write(&f, "w(1,1,0,0)\nr(1,2,1,1)\n").unwrap();
    let o = harness(&[
        "check",
        f.to_str().unwrap(),
        "-c",
        "causal",
        "--format",
        "json",
    ]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(1), "{v}");
    assert!(
        v["anomaly-types"].to_string().contains("garbage-read"),
        "{v}"
    );
    assert!(v["not"].to_string().contains("read-uncommitted"), "{v}");
}

/// Single-object models proscribe nothing here: nothing is checked, so the
/// verdict is `unknown` with a warning, never `valid`; naming an anomaly
/// makes it a check again.
#[test]
fn models_that_proscribe_nothing_never_say_valid() {
    let valid = peer("initial-only.txt");
    assert_eq!(harness(&["check", &valid]).status.code(), Some(0));
    for model in ["sequential", "linearizable", "PRAM", "monotonic-reads"] {
        let o = harness(&["check", &valid, "-c", model]);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.status.code(), Some(2), "-c {model}: {all}");
        assert!(all.contains("nothing was checked"), "-c {model}: {all}");
    }
    let skew = peer("write-skew.txt");
    let o = harness(&["check", &skew, "-c", "sequential", "--anomalies", "G2-item"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // A model that proscribes something beside one that does not: checked.
    let o = harness(&["check", &valid, "-c", "sequential,read-committed"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
