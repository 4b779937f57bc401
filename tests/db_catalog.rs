//! A database is one entry of `db_adapters::catalog::DATABASES`: the CLI's
//! `--db` values and the database lists in `harness run --help` are the
//! table's, and no `match` anywhere in the workspace picks out database
//! kinds with a wildcard arm (which would quietly treat a new database as
//! an old one).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::catalog::{DbKind, names_where};
use std::path::{Path, PathBuf};
use std::process::Command;

fn help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The `--db` values `harness run --help` lists, in its order.
fn help_db_values(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.trim_start().starts_with("--db <DB>"))
        .skip_while(|l| l.trim() != "Possible values:")
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .map(|l| {
            let v = l.trim_start().trim_start_matches("- ");
            v.split(':').next().unwrap().trim().to_string()
        })
        .collect()
}

#[test]
fn help_lists_the_databases_of_the_table() {
    let help = help();
    let table: Vec<String> = DbKind::all().map(|k| k.name().to_string()).collect();
    assert_eq!(help_db_values(&help), table, "{help}");
    for k in DbKind::all() {
        assert!(help.contains(k.about()), "{k}'s help line");
    }
    // The lists inside flag help are the table's too.
    let url_dbs: Vec<&str> = DbKind::all()
        .filter(|k| !k.url_schemes().is_empty())
        .map(|k| k.name())
        .collect();
    let url = help
        .lines()
        .find(|l| l.contains("URL of an existing server:"))
        .unwrap();
    for name in &url_dbs {
        assert!(url.contains(&format!("{name} (")), "{url}");
    }
    assert!(help.contains(&format!(
        "install on every node ({})",
        names_where(DbKind::is_tarball)
    )));
    assert!(help.contains(&format!(
        "installed binaries (--db {})",
        names_where(DbKind::has_local_server)
    )));
}

#[test]
fn every_database_parses_and_others_are_refused() {
    for k in DbKind::all() {
        for name in std::iter::once(k.name()).chain(k.aliases().iter().copied()) {
            assert_eq!(name.parse::<DbKind>().unwrap(), k);
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--db", "oracle", "--help"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oracle"), "{err}");
}

/// `(line, text)` of each `match` in `src` that names database kinds in an
/// arm's pattern (`DbKind::…`, or a database's name as a string literal)
/// and has a wildcard `_ =>` arm.
fn wildcard_db_matches(src: &str) -> Vec<(usize, String)> {
    let names: Vec<String> = DbKind::all().map(|k| format!("\"{}\"", k.name())).collect();
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    for (at, _) in src.match_indices("match ") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let Some(open) = src[at..].find('{').map(|o| at + o) else {
            continue;
        };
        let mut depth = 0usize;
        let mut end = src.len();
        for (i, c) in src[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = &src[open + 1..end];
        // Each arm's pattern: the text before a `=>` back to the last
        // `,`, `{`, `}` or line break.
        let patterns: Vec<&str> = body
            .match_indices("=>")
            .map(|(i, _)| {
                let start = body[..i].rfind([',', '{', '}', '\n']).map_or(0, |s| s + 1);
                body[start..i].trim()
            })
            .collect();
        let over_dbs = patterns
            .iter()
            .any(|p| p.contains("DbKind::") || names.iter().any(|n| p.contains(n.as_str())));
        let wildcard = patterns.iter().any(|p| *p == "_" || p.starts_with("_ if"));
        if over_dbs && wildcard {
            let line = src[..at].lines().count() + 1;
            out.push((line, src[at..open].trim().to_string()));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_wildcard_arm_over_database_kinds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests",
        "engine/src",
        "db-adapters/src",
        "db-adapters/tests",
        "store/src",
        "checker/src",
        "workloads/src",
        "nemesis/src",
    ] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    let this = root.join("tests/db_catalog.rs");
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| **f != this) {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, m) in wildcard_db_matches(&text) {
            offenders.push(format!("{}:{line}: {m}", f.display()));
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The scanner finds the shapes the catalog used to have (a wildcard arm
/// that made any other tarball database TiDB; a `--db` name matched as a
/// string) and leaves exhaustive matches and matches over other enums alone.
#[test]
fn the_scanner_finds_wildcard_arms_over_databases() {
    let old = r#"
        match self {
            DbKind::Cockroach => cockroach::check_isolation(s.isolation),
            DbKind::Yugabyte => yugabyte::check_isolation(s.isolation),
            _ => tidb::check_isolation(s.isolation, a.txn_mode),
        }
        let d = match name { "tidb" => 7, _ => 3 };
        match family { SqlFamily::Postgres => 1, _ => 2 }
        match self { DbKind::Sqlite => 1, DbKind::Sim => 2 }
    "#;
    let found = wildcard_db_matches(old);
    assert_eq!(
        found.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
        vec![3, 8],
        "{found:?}"
    );
}
