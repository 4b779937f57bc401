//! No Rust source file in the workspace grows past [`MAX_LINES`] lines
//! unless [`ALLOWED`] names it with a reason.
//!
//! Long files are allowed when splitting would cut one algorithm (or one
//! vocabulary) in two; the allowlist says why for each, so a reviewer can
//! judge the reason when a file joins it. A file that shrinks back under the
//! limit should leave the list: the test fails on stale entries too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// The longest a `.rs` file may be without an allowlist entry.
const MAX_LINES: usize = 600;

/// Files over [`MAX_LINES`] and why each is one piece (path relative to
/// the workspace root, `/`-separated).
const ALLOWED: &[(&str, &str)] = &[
    (
        "nemesis/src/lossyfs/fs.rs",
        "one fuser::Filesystem impl: every FUSE operation is a method of the same trait impl over one cache",
    ),
    (
        "engine/src/report/repro.rs",
        "dialects, dependency-respecting schedule and rendering are one algorithm over one Txn type",
    ),
    (
        "checker/tests/sat.rs",
        "differential tests of the complete check share one generator and brute-force oracle",
    ),
    (
        "checker/src/model.rs",
        "the model lattice, its anomaly sets and their tests are one vocabulary",
    ),
    (
        "store/src/history.rs",
        "the history model's types, validation and accessors are one vocabulary",
    ),
    (
        "store/src/format/mod.rs",
        "the streaming OpReader state machine shared by JSON and EDN, its errors and data encoding",
    ),
    (
        "engine/src/runner/mod.rs",
        "the interpreter, its slots and phases are one loop over one set of jobs",
    ),
    (
        "store/src/format/json.rs",
        "the fast op path and the generic data path must agree token by token",
    ),
    (
        "checker/src/analysis/predicate.rs",
        "predicate observations, edges and cycle search are one analysis over one index",
    ),
    (
        "db-adapters/src/cluster.rs",
        "the command-plan executor, its plan vocabulary and Install",
    ),
    (
        "store/src/run.rs",
        "the run directory and its durable log share one crash-safety contract (with its tests)",
    ),
    (
        "db-adapters/src/pgwire.rs",
        "the PG-wire transaction loop, its factory, PgWireDb and in-transaction certificate reads",
    ),
    (
        "tests/check_cli.rs",
        "end-to-end cases of one command sharing one set of helpers",
    ),
    (
        "checker/tests/weak.rs",
        "the papers' hand-written patterns for the weak levels, one table of cases",
    ),
    (
        "checker/tests/model_laws.rs",
        "properties of one lattice and its counterexamples",
    ),
    (
        "db-adapters/src/mysql/lifecycle.rs",
        "MariaDB and Galera share every step but the cluster options",
    ),
    (
        "engine/src/run.rs",
        "one run end to end, its signal watch and its tests",
    ),
    (
        "store/src/import/mod.rs",
        "the peer formats' shared model and its readers' tests",
    ),
    (
        "checker/src/rw_register.rs",
        "the version-order providers, their merge per key and the edges they imply",
    ),
    (
        "nemesis/src/remote.rs",
        "the Remote trait with its SSH and local implementations (548 lines before tests)",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, skipping build output (`target`) and
/// hidden directories (`.git`, `.cargo`).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            let ty = e.file_type().unwrap();
            if ty.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(e.path());
                }
            } else if ty.is_file() && name.ends_with(".rs") {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Lines as `wc -l` counts them (a last line without `\n` counts too).
fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// `(path, lines)` of every file over the limit that the allowlist does not
/// name, and every allowlist entry whose file is missing or short.
fn violations(root: &Path, allowed: &[(&str, &str)]) -> (Vec<(String, usize)>, Vec<String>) {
    let mut long = Vec::new();
    let mut seen_long = Vec::new();
    for p in rust_files(root) {
        let rel = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let lines = line_count(&std::fs::read_to_string(&p).unwrap());
        if lines > MAX_LINES {
            seen_long.push(rel.clone());
            if !allowed.iter().any(|(a, _)| *a == rel) {
                long.push((rel, lines));
            }
        }
    }
    let stale = allowed
        .iter()
        .filter(|(a, _)| !seen_long.iter().any(|s| s == a))
        .map(|(a, _)| a.to_string())
        .collect();
    (long, stale)
}

#[test]
fn no_file_grows_past_the_limit_without_a_reason() {
    let (long, stale) = violations(&root(), ALLOWED);
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines without an entry in ALLOWED (tests/file_sizes.rs): \
         split them, or add each with the reason it is one piece: {long:?}"
    );
    assert!(
        stale.is_empty(),
        "ALLOWED names files that are missing or no longer over {MAX_LINES} lines: remove {stale:?}"
    );
}

#[test]
fn every_allowlist_entry_has_a_reason_and_appears_once() {
    for (i, (path, reason)) in ALLOWED.iter().enumerate() {
        assert!(
            path.ends_with(".rs") && !path.starts_with('/'),
            "{path}: a relative .rs path"
        );
        assert!(
            reason.split_whitespace().count() >= 3,
            "{path}: give a reason, not a word"
        );
        assert!(
            !ALLOWED[..i].iter().any(|(p, _)| p == path),
            "{path} is listed twice"
        );
    }
}

/// The walk finds a long file that is not allowed, counts its lines, and
/// skips `target/` and hidden directories.
#[test]
fn a_long_file_outside_the_allowlist_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let long: String = "// x\n".repeat(MAX_LINES + 1);
    let short: String = "// x\n".repeat(MAX_LINES);
    std::fs::create_dir_all(dir.path().join("crate/src")).unwrap();
    std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("crate/src/long.rs"), &long).unwrap();
    std::fs::write(dir.path().join("crate/src/short.rs"), &short).unwrap();
    std::fs::write(dir.path().join("crate/src/listed.rs"), &long).unwrap();
    std::fs::write(dir.path().join("target/debug/build.rs"), &long).unwrap();
    std::fs::write(dir.path().join(".git/hook.rs"), &long).unwrap();

    let allowed = [
        ("crate/src/listed.rs", "one piece for a reason"),
        ("crate/src/gone.rs", "was long once"),
    ];
    let (long_files, stale) = violations(dir.path(), &allowed);
    assert_eq!(
        long_files,
        vec![("crate/src/long.rs".to_string(), MAX_LINES + 1)]
    );
    assert_eq!(stale, vec!["crate/src/gone.rs".to_string()]);
}
