//! `harness check` of a keyed linearizability history through the built
//! binary: by default the first key that is not linearizable stops the
//! others; `--all-anomalies` searches every key.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_harness");

fn check(extra: &[&str]) -> (i32, String) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/porcupine/kv/c10-bad.txt");
    let o = match Command::new(BIN)
        .arg("check")
        .args(extra)
        .arg(&file)
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!("running {BIN}: {e}"),
    };
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn first_failing_key_stops_the_rest_unless_all_anomalies() {
    let (code, out) = check(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "1 key(s) not linearizable, 9 not searched to the end after the first failure"
        ),
        "{out}"
    );
    let (code, out) = check(&["--all-anomalies"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("8 key(s) not linearizable"), "{out}");
    assert!(!out.contains("not searched"), "{out}");
}
