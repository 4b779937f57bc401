//! No file of the repository points outside it: no path into the directory
//! beside the clone that held the project's design notes and papers, no
//! absolute path of a developer's machine (its work directory, a home
//! directory), and no "issue N" of a tracker a reader of the repository
//! cannot see.
//!
//! What a reader needs from such a note is written in the repository in its
//! own words (module docs, `docs/`), or the public upstream source is cited
//! (a paper, a project's URL). Scanned: every `*.md`, `*.rs` and `*.toml`
//! file and everything under `.ci/`, except build output (`target/`), hidden
//! directories other than `.ci`, and `testdata/` (third-party corpora kept as
//! published, which CI refreshes). The one allowed line is `.ci/run`'s copy
//! of the conformance corpus CI provides beside the clone ([`ALLOWED_LINES`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// `(file, line text)` pairs allowed to hold an outside path: CI provides the
/// newest conformance corpus beside the clone, and `.ci/run` copies it in.
/// (Spelled in pieces so this file does not match itself.)
const ALLOWED_LINES: &[(&str, &str)] =
    &[(".ci/run", concat!("corpus=../", "sha", "red/conformance"))];

/// Path fragments that lead outside the repository (built at run time so
/// this file does not match itself): the notes beside the clone, and the
/// absolute paths of machines (`$WORK/…` says "the directory beside the
/// clone" in commands instead).
fn outside_paths() -> Vec<String> {
    let dir = ["sha", "red"].concat();
    vec![
        format!("../{dir}"),
        format!("{dir}/specs"),
        format!("{dir}/papers"),
        format!("/{}/", "work"),
        format!("/{}/", "home"),
        format!("/{}/", "Users"),
    ]
}

/// A reference to a tracker issue: the word, singular or plural, any case,
/// then a number with or without `#`; also broken across a line (the word at
/// a line's end, the number on
/// the next, after a comment marker). Returns the byte offset of each.
fn issue_refs(text: &str) -> Vec<usize> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    for (i, _) in lower.match_indices("issue") {
        // A word of its own: not "tissue", not "issuer".
        if i > 0 && lower.as_bytes()[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut rest = &lower[i + 5..];
        rest = rest.strip_prefix('s').unwrap_or(rest);
        // Whitespace, and comment markers after a line break.
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace());
        let broke_line =
            rest.len() != trimmed.len() && rest[..rest.len() - trimmed.len()].contains('\n');
        let mut after = trimmed;
        if broke_line {
            after = after.trim_start_matches(['/', '!', '#', '*', ' ']);
        }
        if rest.len() == trimmed.len() {
            continue; // "issue" glued to what follows: "issue#", "issued"
        }
        let after = after.strip_prefix('#').unwrap_or(after);
        if after.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            out.push(i);
        }
    }
    out
}

/// Each offending line of `text` as `(line number, line)`, minus the lines
/// `allowed` names.
fn bad_lines(text: &str, allowed: &[&str]) -> Vec<(usize, String)> {
    let line_of = |off: usize| text[..off].matches('\n').count();
    let mut hits: Vec<usize> = Vec::new();
    for frag in outside_paths() {
        hits.extend(text.match_indices(frag.as_str()).map(|(i, _)| line_of(i)));
    }
    hits.extend(issue_refs(text).into_iter().map(line_of));
    hits.sort_unstable();
    hits.dedup();
    let lines: Vec<&str> = text.lines().collect();
    hits.into_iter()
        .map(|n| (n + 1, lines.get(n).copied().unwrap_or("").to_string()))
        .filter(|(_, l)| !allowed.iter().any(|a| l.trim() == *a))
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files scanned (see the module doc), relative to `root`.
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), false)];
    while let Some((d, in_ci)) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            let ty = e.file_type().unwrap();
            let top = d == root;
            if ty.is_dir() {
                let skip = name == "target"
                    || (top && name == "testdata")
                    || (name.starts_with('.') && name != ".ci");
                if !skip {
                    stack.push((e.path(), in_ci || (top && name == ".ci")));
                }
            } else if ty.is_file()
                && (in_ci || [".md", ".rs", ".toml"].iter().any(|x| name.ends_with(x)))
            {
                out.push(e.path().strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_reference_points_outside_the_repository() {
    let root = root();
    let files = scanned_files(&root);
    assert!(
        files.iter().any(|f| f == Path::new(".ci/run")),
        "the walk must reach .ci/run"
    );
    assert!(files.iter().any(|f| f == Path::new("ARCHITECTURE.md")));
    let mut bad = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(root.join(f)) else {
            continue;
        };
        let rel = f.to_string_lossy().replace('\\', "/");
        let allowed: Vec<&str> = ALLOWED_LINES
            .iter()
            .filter(|(p, _)| *p == rel)
            .map(|(_, l)| *l)
            .collect();
        for (n, line) in bad_lines(&text, &allowed) {
            bad.push(format!("{rel}:{n}: {}", line.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "references outside the repository (say what the reader needs in the repository, \
         or cite the public source):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_allowed_line_is_still_there() {
    for (file, line) in ALLOWED_LINES {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert!(
            text.lines().any(|l| l.trim() == *line),
            "{file} no longer has {line:?}: drop it from ALLOWED_LINES"
        );
    }
}

#[test]
fn outside_paths_and_issue_numbers_are_found() {
    let dir = ["sha", "red"].concat();
    let w = ["iss", "ue"].concat();
    let cap = ["Iss", "ue"].concat();
    let text = format!(
        "ok line\n//! see ../{dir}/specs/elle.md\nplain {dir}/papers here\n\
         fixed in {w} 12\n{cap} #7 again\n{w}s 15 and 16\n/// (BENCHMARKS.md, {w}\n/// 15).\n\
         a t{w} 3 and an {w}d 4 and {w} numbers and G2-item #1\n"
    );
    let lines: Vec<usize> = bad_lines(&text, &[]).into_iter().map(|(n, _)| n).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6, 7]);
}

#[test]
fn an_allowed_line_is_skipped_only_whole() {
    let dir = ["sha", "red"].concat();
    let allowed = format!("corpus=../{dir}/conformance");
    let text = format!("{allowed}\necho {allowed}\n");
    let lines: Vec<usize> = bad_lines(&text, &[allowed.as_str()])
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(lines, vec![2]);
}
