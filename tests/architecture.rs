//! ARCHITECTURE.md stays true: every test its invariant table names exists
//! (each `path.rs` in a row, and each test function named after it, found
//! in that file or, for a `mod.rs`, in its module's directory).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.rs` files at or under `path` (a file, or a `mod.rs`'s directory).
fn sources(path: &Path) -> Vec<PathBuf> {
    let dir = match path.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => path.parent().map(Path::to_path_buf),
        _ => None,
    };
    let Some(dir) = dir else {
        return vec![path.to_path_buf()];
    };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

fn defines(files: &[PathBuf], name: &str) -> bool {
    files.iter().any(|f| {
        std::fs::read_to_string(f)
            .is_ok_and(|t| t.contains(&format!("fn {name}(")) || t.contains(&format!("fn {name}<")))
    })
}

#[test]
fn every_test_the_invariant_table_names_exists() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let table = text
        .split("## Invariants")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("ARCHITECTURE.md has an invariants section");
    let (mut files, mut tests) = (0, 0);
    let mut missing = Vec::new();
    for row in table.lines().filter(|l| l.starts_with('|')) {
        let Some(guard) = row.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        let mut current: Option<PathBuf> = None;
        for token in guard.split('`').skip(1).step_by(2) {
            if token.ends_with(".rs") {
                let path = root().join(token);
                files += 1;
                if !path.is_file() {
                    missing.push(format!("{token}: no such file"));
                }
                current = Some(path);
            } else if token.contains('_')
                && token
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                tests += 1;
                let Some(file) = &current else {
                    missing.push(format!("{token}: named before any file"));
                    continue;
                };
                if !defines(&sources(file), token) {
                    missing.push(format!("{token}: not a function of {}", file.display()));
                }
            }
        }
    }
    assert!(
        files >= 10 && tests >= 10,
        "{files} files, {tests} tests read"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names:\n{}",
        missing.join("\n")
    );
}

#[test]
fn architecture_md_stays_short_and_says_how_to_add_a_checker() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "ARCHITECTURE.md has {lines} lines; keep it to 300"
    );
    for heading in [
        "## Adding a checker or a workload",
        "## Adding a database",
        "## Structure",
    ] {
        assert!(text.contains(heading), "no {heading:?}");
    }
}
