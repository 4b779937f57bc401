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

/// `N key(s) not linearizable` and, when some keys were cut short,
/// `M not searched to the end`, from the summary line.
fn counts(out: &str) -> (usize, usize) {
    let line = out
        .lines()
        .find(|l| l.contains("key(s) not linearizable"))
        .unwrap_or_else(|| panic!("no summary line in {out}"));
    let number_before = |marker: &str| -> Option<usize> {
        let head = &line[..line.find(marker)?];
        head.split(|c: char| !c.is_ascii_digit())
            .rfind(|w| !w.is_empty())?
            .parse()
            .ok()
    };
    (
        number_before(" key(s) not linearizable").unwrap_or(0),
        number_before(" not searched to the end").unwrap_or(0),
    )
}

#[test]
fn first_failing_key_stops_the_rest_unless_all_anomalies() {
    // Keys are searched on as many threads as there are cores, so how many
    // fail before the stop is seen depends on the machine: the exact
    // one-thread behaviour is `checker/tests/linear.rs`. Here: the summary
    // accounts for all 10 keys, and only --all-anomalies finds all 8.
    let (code, out) = check(&[]);
    assert_eq!(code, 1, "{out}");
    let (failed, cut) = counts(&out);
    assert!(failed >= 1, "{out}");
    assert!(failed == 8 || failed + cut == 10, "{out}");
    let (code, out) = check(&["--all-anomalies"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(counts(&out), (8, 0), "{out}");
    assert!(!out.contains("not searched"), "{out}");
}
