//! Results are bounded whatever the history: `harness check`
//! prints a bounded summary (first 3 explanations per type) unless
//! `--all-anomalies`; its JSON/EDN and `--directory`, and a run's
//! `results.json`, `results.edn` and `elle/` keep at most 100 anomalies per
//! type, with the exact count of each type (`anomaly-counts`) and how many
//! were left out (`anomalies-omitted`).

#![allow(clippy::panic)]

mod report_support;

use report_support::harness;
use std::path::{Path, PathBuf};

/// Lost updates found in [`lost_updates`] histories.
const LOST: usize = 500;

/// `n` keys, each read empty by two transactions that both append to it:
/// `n` lost updates (list-append).
fn lost_updates(n: usize) -> String {
    let mut out = String::new();
    let mut index = 0;
    for k in 0..n {
        for (p, v) in [(0, 1), (1, 2)] {
            for ty in ["invoke", "ok"] {
                let read = if ty == "ok" { "[]" } else { "null" };
                out.push_str(&format!(
                    "{{\"index\":{index},\"type\":\"{ty}\",\"process\":{p},\"f\":\"txn\",\"value\":[[\"r\",{k},{read}],[\"append\",{k},{v}]]}}\n"
                ));
                index += 1;
            }
        }
    }
    out
}

fn history_file(dir: &Path) -> PathBuf {
    let f = dir.join("lost.jsonl");
    std::fs::write(&f, lost_updates(LOST)).unwrap_or_else(|e| panic!("{e}"));
    f
}

#[test]
fn check_prints_a_bounded_summary_with_exact_counts() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let f = history_file(dir.path());
    let f = f.to_string_lossy();
    let (code, out, err) = harness(&[
        "check",
        &f,
        "-c",
        "read-committed",
        "--anomalies",
        "lost-update",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("lost-update #2"), "{out}");
    assert!(!out.contains("lost-update #3"), "only 3 explained: {out}");
    assert!(
        out.contains(&format!(
            "{} of {LOST} lost-update anomalies not shown",
            LOST - 3
        )),
        "{out}"
    );
    assert!(out.contains("--all-anomalies"), "{out}");
    assert!(out.len() < 20_000, "bounded: {} bytes", out.len());

    let (_, all, _) = harness(&[
        "check",
        &f,
        "-c",
        "read-committed",
        "--anomalies",
        "lost-update",
        "--all-anomalies",
    ]);
    assert!(
        all.contains(&format!("lost-update #{}", LOST - 1)),
        "--all-anomalies shows every one"
    );
    assert!(
        !all.contains("not shown"),
        "{}",
        &all[..all.len().min(2000)]
    );
}

#[test]
fn check_json_edn_and_directory_keep_at_most_100_per_type() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let f = history_file(dir.path());
    let f = f.to_string_lossy();
    let out_dir = dir.path().join("expl");
    let (code, out, err) = harness(&[
        "check",
        &f,
        "--anomalies",
        "lost-update",
        "-c",
        "read-committed",
        "--format",
        "json",
        "--directory",
        &out_dir.to_string_lossy(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        j["anomalies"]["lost-update"].as_array().map(Vec::len),
        Some(100)
    );
    assert_eq!(j["anomaly-counts"]["lost-update"], LOST);
    assert_eq!(j["anomalies-omitted"]["lost-update"], LOST - 100);
    let text = std::fs::read_to_string(out_dir.join("lost-update.txt")).unwrap_or_default();
    assert!(text.contains("lost-update #99") && !text.contains("lost-update #100"));
    assert!(
        text.contains(&format!("and {} more lost-update", LOST - 100)),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );

    let (_, edn, _) = harness(&[
        "check",
        &f,
        "--anomalies",
        "lost-update",
        "-c",
        "read-committed",
        "--format",
        "edn",
    ]);
    assert!(
        edn.contains(&format!(":anomaly-counts {{:lost-update {LOST}}}")),
        "{}",
        &edn[edn.len().saturating_sub(300)..]
    );

    let (_, all, _) = harness(&[
        "check",
        &f,
        "--anomalies",
        "lost-update",
        "-c",
        "read-committed",
        "--format",
        "json",
        "--all-anomalies",
    ]);
    let j: serde_json::Value = serde_json::from_str(&all).unwrap_or_default();
    assert_eq!(
        j["anomalies"]["lost-update"].as_array().map(Vec::len),
        Some(LOST)
    );
    assert!(j.get("anomalies-omitted").is_none(), "nothing left out");
}

#[test]
fn a_runs_results_and_elle_directory_are_capped_with_exact_counts() {
    let store = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = store.path().join("sim-lost/20261126T170000.000");
    std::fs::create_dir_all(&run).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        run.join("test.json"),
        r#"{"name":"sim-lost","config":{"db":"sim","workload":"list-append","isolation":"serializable","sim_bug":"lost-update","expected_consistency_model":"snapshot-isolation"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(run.join("history.jsonl"), lost_updates(LOST)).unwrap_or_else(|e| panic!("{e}"));
    let (code, out, err) = harness(&["analyze", &run.to_string_lossy()]);
    assert_eq!(code, 1, "{out}{err}");
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap_or_default())
            .unwrap_or_else(|e| panic!("results.json: {e}"));
    let kept = r["anomalies"]["lost-update"].as_array().map_or(0, Vec::len);
    assert_eq!(kept, 100, "{}", r["anomaly-types"]);
    assert_eq!(r["anomaly-counts"]["lost-update"], LOST);
    assert_eq!(r["anomalies-omitted"]["lost-update"], LOST - 100);
    for (t, list) in r["anomalies"].as_object().into_iter().flatten() {
        assert!(list.as_array().map_or(0, Vec::len) <= 100, "{t}");
    }
    let edn = std::fs::read_to_string(run.join("results.edn")).unwrap_or_default();
    assert!(edn.contains(":anomaly-counts"), "{edn}");
    let text = std::fs::read_to_string(run.join("elle/lost-update.txt")).unwrap_or_default();
    assert!(
        text.contains(&format!(
            "and {} more lost-update anomalies ({LOST} found",
            LOST - 100
        )),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
}
