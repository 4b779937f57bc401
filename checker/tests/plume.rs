//! Plume's 14 transactional anomalous patterns (TAP-a … TAP-n, with the
//! WR and SO variants of TAP-g and TAP-k), the Plume artifact's two
//! mistakes and the findings of a review of real histories, as hand-made files in the text format
//! (`tests/fixtures/plume/*.txt`), each checked through `checker::check`
//! at Biswas & Enea's / Plume's read committed (`strong-session-read-committed`, alias `RC`),
//! read atomic and causal consistency against Plume's table of which level
//! forbids each pattern (OOPSLA 2024), with the anomaly harness names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use checker::anomaly::AnomalyType as A;
use checker::model::ConsistencyModel as M;
use checker::{CheckOptions, CheckResult, Valid, Workload, check};
use std::path::Path;

fn load(file: &str) -> store::History {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plume");
    store::import::load(&dir.join(file), None)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .history
}

fn run(hist: &store::History, w: Workload, model: M) -> CheckResult {
    let opts = CheckOptions {
        models: vec![model],
        ..CheckOptions::new(w)
    };
    check(hist, &opts)
}

const RC: M = M::StrongSessionReadCommitted;
const RA: M = M::ReadAtomic;
const CC: M = M::CausalCerone;

/// (file, the weakest of RC/RA/CC that forbids it (None: all allow it),
/// the anomalies harness must report where it is forbidden).
const TABLE: &[(&str, Option<M>, &[&str])] = &[
    ("tap-a-thin-air-read.txt", Some(RC), &["garbage-read"]),
    ("tap-b-aborted-read.txt", Some(RC), &["G1a"]),
    ("tap-c-future-read.txt", Some(RC), &["future-read"]),
    (
        "tap-d-not-my-own-write.txt",
        Some(RC),
        &["not-my-own-write"],
    ),
    (
        "tap-e-not-my-last-write.txt",
        Some(RC),
        &["not-my-last-write"],
    ),
    ("tap-f-intermediate-read.txt", Some(RC), &["G1b"]),
    (
        "tap-g-cyclic-co-wr.txt",
        Some(RC),
        &["G1c", "cyclic-causal-order"],
    ),
    ("tap-g-cyclic-co-so.txt", Some(RC), &["cyclic-causal-order"]),
    (
        "tap-h-non-mono-read-co.txt",
        Some(RC),
        &["non-monotonic-read"],
    ),
    (
        "tap-i-non-mono-read-ao.txt",
        Some(RC),
        &["non-monotonic-read"],
    ),
    (
        "tap-j-non-repeatable-read.txt",
        Some(RA),
        &["non-repeatable-read"],
    ),
    (
        "tap-k-fractured-read-co-wr.txt",
        Some(RA),
        &["fractured-read"],
    ),
    (
        "tap-k-fractured-read-co-so.txt",
        Some(RA),
        &["fractured-read-process"],
    ),
    (
        "tap-l-fractured-read-ao.txt",
        Some(RA),
        &["fractured-read-process"],
    ),
    (
        "tap-m-co-conflict-ao.txt",
        Some(CC),
        &["causality-violation"],
    ),
    ("tap-n-conflict-ao.txt", Some(CC), &["causality-violation"]),
    (
        "artifact-ra-forced-edges.txt",
        Some(CC),
        &["causality-violation"],
    ),
    (
        "artifact-initial-read-after-own-session.txt",
        Some(RA),
        &["fractured-read-process"],
    ),
    ("issue23-g1b-behind-first-read.txt", Some(RC), &["G1b"]),
    ("issue23-future-read.txt", Some(RC), &["future-read"]),
    (
        "issue23-future-read-beside-others.txt",
        Some(RC),
        &["future-read"],
    ),
    (
        "not-my-own-write-after-read.txt",
        Some(RC),
        &["not-my-own-write"],
    ),
    (
        "not-my-own-write-initial.txt",
        Some(RC),
        &["not-my-own-write"],
    ),
    (
        "not-my-last-write-later-key.txt",
        Some(RC),
        &["not-my-last-write"],
    ),
];

#[test]
fn every_pattern_at_every_level() {
    let levels = [RC, RA, CC];
    for &(file, weakest, names) in TABLE {
        let hist = load(file);
        for (i, &m) in levels.iter().enumerate() {
            let r = run(&hist, Workload::RwRegister, m);
            let forbidden = weakest.is_some_and(|w| levels.iter().position(|&l| l == w) <= Some(i));
            let types: Vec<&str> = r.anomaly_types.iter().map(|a| a.name()).collect();
            if forbidden {
                assert_eq!(r.valid, Valid::False, "{file} at {m}: {types:?}");
                for n in names {
                    assert!(types.contains(n), "{file} at {m}: {n} not in {types:?}");
                }
            } else {
                assert_eq!(r.valid, Valid::True, "{file} at {m}: {types:?}");
            }
        }
    }
}

/// Every fixture file is in the table (a file added without a row fails).
#[test]
fn the_table_covers_every_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plume");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut rows: Vec<String> = TABLE.iter().map(|r| r.0.to_string()).collect();
    rows.sort();
    assert_eq!(files, rows);
    // All 14 patterns, with both variants of g and k.
    for tap in "abcdefghijklmn".chars() {
        assert!(
            rows.iter().any(|f| f.starts_with(&format!("tap-{tap}-"))),
            "TAP-{tap}"
        );
    }
    for v in [
        "tap-g-cyclic-co-so",
        "tap-g-cyclic-co-wr",
        "tap-k-fractured-read-co-so",
        "tap-k-fractured-read-co-wr",
    ] {
        assert!(rows.iter().any(|f| f.starts_with(v)), "{v}");
    }
}

/// Finding 3 of the review: a G1b behind an earlier read of the key is a G1b
/// for Elle's read-committed too (PL-2 proscribes G1b), not only for
/// `strong-session-read-committed`.
#[test]
fn intermediate_read_behind_a_first_read_is_g1b() {
    let hist = load("issue23-g1b-behind-first-read.txt");
    let r = run(&hist, Workload::RwRegister, M::ReadCommitted);
    assert_eq!(r.valid, Valid::False, "{:?}", r.anomaly_types);
    assert!(r.anomaly_types.contains(&A::G1b), "{:?}", r.anomaly_types);
    // The G1b names the second read (micro-op 1 of T2).
    let g1b = &r.anomalies[&A::G1b];
    assert_eq!(g1b.len(), 1);
    let text = checker::explain::render_text(&g1b[0], &hist);
    assert!(text.contains('1'), "{text}");
}

/// Finding 5 of the review: a register read of the transaction's own later
/// write is a `future-read` (which implies G1c) at every level, Elle's
/// read-committed included; no longer "unknown: empty transaction graph".
#[test]
fn register_future_read_is_found_at_every_level() {
    let hist = load("issue23-future-read.txt");
    for m in [
        M::ReadUncommitted,
        M::ReadCommitted,
        RC,
        RA,
        CC,
        M::Serializable,
    ] {
        let r = run(&hist, Workload::RwRegister, m);
        let expect = if m == M::ReadUncommitted {
            // future-read implies G1c, which PL-1 allows.
            Valid::Unknown
        } else {
            Valid::False
        };
        assert_eq!(r.valid, expect, "{m}: {:?}", r.anomaly_types);
        assert!(
            r.found_types.contains(&A::FutureRead),
            "{m}: {:?}",
            r.found_types
        );
    }
}

/// Finding 4 of the review: each own-write pattern breaks B&E / Plume read
/// committed; Elle's `read-committed` (PL-2) still allows it, with the
/// Plume name reported beside Elle's `internal`.
#[test]
fn own_write_patterns_break_session_read_committed_only() {
    for (file, name) in [
        ("tap-d-not-my-own-write.txt", A::NotMyOwnWrite),
        ("not-my-own-write-after-read.txt", A::NotMyOwnWrite),
        ("not-my-own-write-initial.txt", A::NotMyOwnWrite),
        ("tap-e-not-my-last-write.txt", A::NotMyLastWrite),
        ("not-my-last-write-later-key.txt", A::NotMyLastWrite),
    ] {
        let hist = load(file);
        let r = run(&hist, Workload::RwRegister, RC);
        assert_eq!(r.valid, Valid::False, "{file}");
        assert!(
            r.anomaly_types.contains(&name),
            "{file}: {:?}",
            r.anomaly_types
        );
        assert!(r.not.contains(&RC), "{file}: {:?}", r.not);
        let elle = run(&hist, Workload::RwRegister, M::ReadCommitted);
        assert_ne!(elle.valid, Valid::False, "{file}: {:?}", elle.anomaly_types);
        assert!(elle.found_types.contains(&A::Internal), "{file}");
    }
}

/// The same own-write patterns on list-append: the read after an own
/// append must end with the last own append.
#[test]
fn own_write_patterns_on_list_append() {
    for (t, name) in [
        ("ok 0 [a x 1]\nok 1 [a x 2] [r x [1]]", A::NotMyOwnWrite),
        ("ok 1 [a x 2] [r x []]", A::NotMyOwnWrite),
        ("ok 0 [a x 1] [a x 2] [r x [1]]", A::NotMyLastWrite),
    ] {
        let hist = common::h(t);
        let r = run(&hist, Workload::ListAppend, RC);
        assert_eq!(r.valid, Valid::False, "{t}: {:?}", r.anomaly_types);
        assert!(
            r.anomaly_types.contains(&name),
            "{t}: {:?}",
            r.anomaly_types
        );
    }
    // Reading one's own appends last is fine.
    let ok = common::h("ok 0 [a x 1]\nok 1 [a x 2] [r x [1 2]] [a x 3] [r x [1 2 3]]");
    let r = run(&ok, Workload::ListAppend, RC);
    assert_eq!(r.valid, Valid::True, "{:?}", r.anomaly_types);
}

/// Elle's pipeline alone (no weak level asked for or implied: cursor
/// stability implies no read committed of ours) keeps Elle's names: the
/// own-write cases are `internal` only.
#[test]
fn elle_names_without_a_weak_level() {
    let hist = load("tap-d-not-my-own-write.txt");
    let r = run(&hist, Workload::RwRegister, M::CursorStability);
    assert!(r.found_types.contains(&A::Internal));
    assert!(!r.found_types.contains(&A::NotMyOwnWrite));
}

/// What users of AWDIT / Plume type.
#[test]
fn session_read_committed_names() {
    for n in [
        "strong-session-read-committed",
        "session-read-committed",
        "RC",
        "rc",
    ] {
        assert_eq!(M::parse(n).unwrap(), RC, "{n}");
    }
    assert_eq!(M::parse("read-committed").unwrap(), M::ReadCommitted);
}

/// An indeterminate transaction takes part (as committed) iff a committed
/// transaction read its write; its own reads are not judged.
#[test]
fn indeterminate_transactions_commit_when_read() {
    // T1 (info) wrote x; T2, after it in session 0, reads the initial x.
    let unread = "info 0 [w x 1]\nok 0 [r x nil]";
    let read = "info 0 [w x 1]\nok 0 [r x nil]\nok 1 [r x 1]";
    let r = run(&common::h(unread), Workload::RwRegister, RA);
    assert_ne!(r.valid, Valid::False, "{:?}", r.anomaly_types);
    // Someone read T1's write: it committed, and T2 missed its session's
    // write (read your writes).
    let r = run(&common::h(read), Workload::RwRegister, RA);
    assert_eq!(r.valid, Valid::False, "{:?}", r.anomaly_types);
    assert!(
        r.anomaly_types.contains(&A::FracturedReadProcess),
        "{:?}",
        r.anomaly_types
    );
    // An indeterminate transaction's reads say nothing, even a value
    // nobody wrote or an own-write mismatch.
    let odd = "info 0 [r x 7] [w y 1] [r y 5]\nok 1 [r y 1]";
    for m in [RC, RA, CC] {
        let r = run(&common::h(odd), Workload::RwRegister, m);
        assert_ne!(r.valid, Valid::False, "{m}: {:?}", r.anomaly_types);
    }
}
