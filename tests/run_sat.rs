//! The complete register check (checker::sat) through `harness run --db sim
//! --workload wr`: snapshot isolation checked as serializable shows write
//! skew in every run of 1,000+ transactions, serializable stays valid, the
//! run says which engine decided, and the same histories checked with
//! Elle's inference alone miss most of it (side by side, BENCHMARKS.md).
//! `harness check --witness` gives a commit order that replays every read.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use checker::model::ConsistencyModel;
use checker::{CheckOptions, Valid, Workload};
use run_common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use store::{MicroOp, OpType, ReadValue};

const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// One sim register run of 1,500 transactions; returns (exit code, stdout,
/// run directory). `store` must outlive the directory's use.
fn sim_wr(store: &Path, name: &str, isolation: &str, seed: u64) -> (Option<i32>, String, PathBuf) {
    let seed = seed.to_string();
    let out = run(
        store,
        &[
            "--db",
            "sim",
            "--test-name",
            name,
            "--concurrency",
            "10",
            "--workload",
            "wr",
            "--isolation",
            isolation,
            "--expected-consistency-model",
            "serializable",
            "--ops",
            "2500",
            "--seed",
            &seed,
        ],
    );
    let dir = run_dir(store, name);
    assert_complete(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        dir,
    )
}

fn load(dir: &Path) -> store::History {
    store::format::load_history(&dir.join("history.jsonl.gz"))
        .expect("history reads back")
        .0
}

/// Whether checking `history` as serializable finds a G2-family cycle.
fn finds_g2(history: &store::History, complete: bool) -> bool {
    let mut opts = CheckOptions::new(Workload::RwRegister);
    opts.models = vec![ConsistencyModel::Serializable];
    opts.complete = complete;
    let r = checker::check(history, &opts);
    let g2 = r.anomaly_types.iter().any(|t| t.name().starts_with("G2"));
    assert_eq!(g2, r.valid == Valid::False, "{:?}", r.anomaly_types);
    g2
}

#[test]
fn snapshot_isolation_write_skew_is_found_in_every_run_and_elle_alone_misses_it() {
    let (mut elle, mut sat) = (0, 0);
    for seed in SEEDS {
        let store = tempfile::tempdir().unwrap();
        let name = format!("si-wr-{seed}");
        let (code, stdout, dir) = sim_wr(store.path(), &name, "snapshot-isolation", seed);
        let (invoked, ok, _, _) = counts(&dir);
        assert!(invoked >= 1000, "{invoked} transactions");
        assert!(ok >= 1000, "{ok} committed");
        assert_eq!(code, Some(1), "seed {seed}: write skew found\n{stdout}");
        let types = anomaly_types(&results(&dir));
        assert!(
            types.iter().any(|t| t.starts_with("G2")),
            "seed {seed}: {types:?}"
        );
        // results.json says who decided, and the summary says it too.
        let engines = &results(&dir)["engines"];
        assert_eq!(engines[0]["model"], "serializable", "{engines}");
        assert_eq!(engines[0]["valid?"], false, "{engines}");
        assert!(
            stdout.contains("decided by: serializable: invalid, decided by "),
            "{stdout}"
        );

        let history = load(&dir);
        let by_elle = finds_g2(&history, false);
        let by_sat = finds_g2(&history, true);
        assert!(by_sat, "seed {seed}: the complete check finds it");
        if !by_elle {
            assert_eq!(engines[0]["decided-by"], "sat (complete)", "{engines}");
            assert_eq!(engines[0]["elle-inference"]["outcome"], "valid");
            assert_eq!(engines[0]["sat (complete)"]["outcome"], "invalid");
        }
        elle += usize::from(by_elle);
        sat += usize::from(by_sat);
    }
    eprintln!(
        "sim snapshot-isolation, wr, 2,500 txns, {} seeds: G2 found by elle-inference in {elle}, \
         by the complete check in {sat}",
        SEEDS.len()
    );
    assert_eq!(sat, SEEDS.len());
    assert!(
        elle < sat,
        "Elle's inference alone finds G2 in {elle} of {sat} runs"
    );
}

#[test]
fn serializable_register_runs_are_valid_and_the_witness_replays_every_read() {
    for seed in [1, 2] {
        let store = tempfile::tempdir().unwrap();
        let name = format!("ser-wr-{seed}");
        let (code, stdout, dir) = sim_wr(store.path(), &name, "serializable", seed);
        assert_eq!(code, Some(0), "seed {seed}\n{stdout}");
        assert!(
            stdout.contains("decided by: serializable: valid, decided by sat (complete)"),
            "{stdout}"
        );
        let engines = &results(&dir)["engines"];
        assert_eq!(engines[0]["valid?"], true, "{engines}");

        let history_path = dir.join("history.jsonl.gz");
        let witness_path = store.path().join("witness.txt");
        let out = harness()
            .arg("check")
            .arg(&history_path)
            .args(["-c", "serializable", "--witness"])
            .arg(&witness_path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let text = std::fs::read_to_string(&witness_path).unwrap();
        let order = text
            .strip_prefix("serializable: ")
            .unwrap_or_else(|| panic!("{text}"));
        let order: Vec<u64> = order
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(order.len() >= 1000, "{} transactions", order.len());
        replay(&load(&dir), &order);

        // The same on stdout, and inside check's JSON.
        let out = harness()
            .arg("check")
            .arg(&history_path)
            .args(["-c", "serializable", "--format", "json", "--witness"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["valid?"], true);
        assert_eq!(j["engines"][0]["decided-by"], "sat (complete)", "{j}");
        let w: Vec<u64> = j["engines"][0]["witness"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(w, order);
    }
}

/// Executes the committed transactions serially in `order` (op indices)
/// and asserts that every `ok` read sees exactly the last write before it,
/// and that every committed transaction is in the order.
fn replay(history: &store::History, order: &[u64]) {
    let ops = history.to_ops();
    let by_index: HashMap<u64, &store::Op> = ops
        .iter()
        .filter(|o| o.is_client() && o.op_type != OpType::Invoke)
        .map(|o| (o.index.0, o))
        .collect();
    let mut state: HashMap<&store::Key, &store::Val> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for i in order {
        let op = by_index
            .get(i)
            .unwrap_or_else(|| panic!("witness names {i}, not a completed transaction"));
        assert!(seen.insert(*i), "{i} twice");
        assert_ne!(op.op_type, OpType::Fail, "{i} failed");
        for m in op.value.txn().into_iter().flatten() {
            match m {
                MicroOp::Write(k, v) => {
                    state.insert(k, v);
                }
                MicroOp::Read(k, r) if op.op_type == OpType::Ok => match r {
                    ReadValue::Nil => assert!(!state.contains_key(k), "op {i} read nil of {k:?}"),
                    ReadValue::Scalar(v) => {
                        assert_eq!(state.get(k), Some(&v), "op {i} read of {k:?}")
                    }
                    other => panic!("op {i}: {other:?}"),
                },
                MicroOp::Read(..) => {}
                MicroOp::Append(..) | MicroOp::ReadRange(_) => {
                    panic!("op {i}: {m:?} in a register history")
                }
            }
        }
    }
    let committed = by_index
        .values()
        .filter(|o| o.op_type == OpType::Ok && o.value.txn().is_some_and(|m| !m.is_empty()))
        .count();
    let in_order = order
        .iter()
        .filter(|i| by_index[i].op_type == OpType::Ok)
        .count();
    assert!(in_order >= committed, "{in_order} of {committed}");
}
