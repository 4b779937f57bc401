//! The linearizability search is bounded by the machine's memory: a
//! non-linearizable 20,000-op register history under a 4 GB address-space
//! cap (`ulimit -v`) is `unknown` with the reason and the longest
//! linearizable prefix — never an allocation failure (it once aborted with
//! "memory allocation of 98304 bytes failed" under an 8 GB cap).
//!
//! The search stores a configuration as the part of its linearized set
//! after the run of ops linearized in call order: these histories have a
//! write called first and returning last (`long`), so that most
//! configurations cost their whole set, as every one did before; without
//! it the same rounds are decided within the limits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::process::Command;

/// Rounds of 10 concurrent writes of distinct values (every order of a
/// round is legal: 2^10 subsets per round to search), then a read of a
/// value never written: not linearizable, which the search can only prove
/// by exhausting every order. `long`: one more write, concurrent with all.
fn history(ops: usize, long: bool) -> String {
    let mut out = String::new();
    if long {
        out.push_str("{\"type\":\"invoke\",\"process\":99,\"f\":\"write\",\"value\":-7}\n");
    }
    let mut v = 0;
    while v < ops - 1 {
        let round: Vec<usize> = (v..(v + 10).min(ops - 1)).collect();
        for (p, value) in round.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"{{"type":"invoke","process":{p},"f":"write","value":{value}}}"#
            );
        }
        for (p, value) in round.iter().enumerate() {
            let _ = writeln!(
                out,
                r#"{{"type":"ok","process":{p},"f":"write","value":{value}}}"#
            );
        }
        v += round.len();
    }
    out.push_str("{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"value\":null}\n");
    out.push_str("{\"type\":\"ok\",\"process\":0,\"f\":\"read\",\"value\":-1}\n");
    if long {
        out.push_str("{\"type\":\"ok\",\"process\":99,\"f\":\"write\",\"value\":-7}\n");
    }
    out
}

#[test]
fn a_20k_op_history_under_a_4_gb_cap_is_unknown_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("register-20k.jsonl");
    std::fs::write(&path, history(20_000, true)).unwrap();
    let started = std::time::Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg(
            "ulimit -v 4194304 && exec \"$0\" check --workload register \
             --cycle-search-timeout 20m --format json \"$1\"",
        )
        .arg(env!("CARGO_BIN_EXE_harness"))
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "exit {:?} after {:.1} s\n{stderr}",
        o.status.code(),
        started.elapsed().as_secs_f64()
    );
    assert!(!stderr.contains("memory allocation"), "{stderr}");
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["valid?"], "unknown", "{v}");
    assert_eq!(v["op-count"], 20_001, "{v}");
    let key = v["results"]
        .as_object()
        .and_then(|m| m.values().next())
        .unwrap_or_else(|| panic!("no undecided key in {v}"));
    assert_eq!(key["reason"], "memory limit", "{key}");
    let prefix = key["longest-prefix"].as_array().unwrap();
    assert!(prefix.len() >= 19_000, "prefix of {} ops", prefix.len());
}

/// The same search with `--memory` set small decides nothing within it,
/// and says so on the verdict line.
#[test]
fn memory_flag_bounds_the_search_and_the_verdict_says_why() {
    let (code, stdout) = check_2k_in_64m(true);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout
            .contains("1 key(s) undecided: memory limit of 64 MiB (longest linearizable prefix: "),
        "{stdout}"
    );
}

/// Without the long write the same 2,000-op rounds fit in 64 MiB in their
/// compact form: the search proves the history not linearizable.
#[test]
fn compact_configurations_decide_what_the_whole_sets_could_not() {
    let (code, stdout) = check_2k_in_64m(false);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("read -1 at position 3998: impossible"),
        "{stdout}"
    );
    assert!(stdout.contains("1 key(s) not linearizable"), "{stdout}");
}

/// `harness check --memory 64M` of 2,000-op rounds (`long_write`: with the
/// write that is called first and returns last): exit code and stdout.
fn check_2k_in_64m(long_write: bool) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("register-2k.jsonl");
    std::fs::write(&path, history(2_000, long_write)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["check", "--workload", "register", "--memory", "64M"])
        .arg(&path)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}
