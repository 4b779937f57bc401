//! The structure figures ARCHITECTURE.md states, measured: lines of Rust
//! per crate (`src/` of each), import loops across crates (none: Cargo
//! refuses them) and inside each crate (groups of files that reach one
//! another through `crate::` and `super::` paths and child modules named
//! from their parent), and the files over 600 lines (each with its reason
//! in `tests/file_sizes.rs`).
//!
//! `cargo test --test structure -- --nocapture` prints them; the test
//! fails when ARCHITECTURE.md's "Structure" lines drift from them (lines
//! by more than a fifth, any loop or long-file count at all).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: &[(&str, &str)] = &[
    ("harness (src)", "src"),
    ("store", "store/src"),
    ("checker", "checker/src"),
    ("workloads", "workloads/src"),
    ("db-adapters", "db-adapters/src"),
    ("nemesis", "nemesis/src"),
    ("engine", "engine/src"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
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
    out.sort();
    out
}

/// The module path of a file under `src` (`weak/observe.rs` → `weak::observe`,
/// `weak/mod.rs` → `weak`, `lib.rs` → the root, ``).
fn module_of(src: &Path, f: &Path) -> String {
    let rel = f.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The paths that start at `rest` (`a::b::c`, or each of `{a::b, c}`), as
/// segment lists.
fn paths(rest: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut prefix: Vec<String> = Vec::new();
    let mut seg = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphanumeric() || c == '_' {
            seg.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            prefix.push(std::mem::take(&mut seg));
        } else if c == '{' && seg.is_empty() {
            // A group: each member after the prefix (one level is enough
            // to find the modules named).
            let mut depth = 0usize;
            let mut member = String::new();
            for c in chars.by_ref() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let mut p = prefix.clone();
                        p.extend(member.split("::").map(|s| s.trim().to_string()));
                        out.push(p);
                        member.clear();
                        continue;
                    }
                    _ => {}
                }
                member.push(c);
            }
            let mut p = prefix.clone();
            p.extend(member.split("::").map(|s| s.trim().to_string()));
            out.push(p);
            return out;
        } else {
            break;
        }
    }
    if !seg.is_empty() {
        prefix.push(seg);
    }
    out.push(prefix);
    out
}

/// File module → the file modules it names: `crate::` paths, `super::`
/// paths and its own child modules used by name.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rs_files(src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let resolve = |segs: &[String]| -> Option<String> {
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap();
        let mut uses = BTreeSet::new();
        let parent: Vec<String> = me
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        // A file `x.rs` is module `…::x`; its `super` is the module above.
        let up = &parent[..parent.len().saturating_sub(1)];
        for (i, _) in text.match_indices("crate::") {
            if text[..i].ends_with('$')
                || text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            for p in paths(&text[i + 7..]) {
                uses.extend(resolve(&p));
            }
        }
        for (i, _) in text.match_indices("super::") {
            // `super::*` is a file's own test module importing the file.
            if text[..i].ends_with("::") || text[i + 7..].starts_with('*') {
                continue;
            }
            for p in paths(&text[i + 7..]) {
                let mut full = up.to_vec();
                full.extend(p);
                uses.extend(resolve(&full));
            }
        }
        for child in modules
            .iter()
            .filter(|m| m.rsplit_once("::").map_or(me.is_empty(), |(p, _)| *p == me) && **m != me)
        {
            let name = child.rsplit("::").next().unwrap_or(child);
            let used = text.match_indices(&format!("{name}::")).any(|(i, _)| {
                !text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
            });
            if used {
                uses.insert(child.clone());
            }
        }
        uses.remove(&me);
        g.insert(me, uses);
    }
    g
}

/// The groups of file modules that reach one another (strongly connected
/// components of more than one file).
fn loops(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for n in g.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for m in g.keys() {
        if groups.iter().any(|grp| grp.contains(m)) || !reaches[m].contains(m) {
            continue;
        }
        let grp: BTreeSet<String> = reaches[m]
            .iter()
            .filter(|n| reaches[*n].contains(m))
            .cloned()
            .collect();
        if grp.len() > 1 {
            groups.push(grp);
        }
    }
    groups
}

struct Figures {
    lines: Vec<(&'static str, usize)>,
    loops: Vec<(&'static str, Vec<BTreeSet<String>>)>,
    long_files: usize,
}

fn measure() -> Figures {
    let mut lines = Vec::new();
    let mut all_loops = Vec::new();
    let mut long_files = 0;
    for &(name, dir) in CRATES {
        let src = root().join(dir);
        let mut n = 0;
        for f in rs_files(&src) {
            let count = std::fs::read_to_string(&f).unwrap().lines().count();
            n += count;
        }
        lines.push((name, n));
        all_loops.push((name, loops(&graph(&src))));
    }
    // Every .rs file of the workspace outside target/, as file_sizes counts.
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if p.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if name.ends_with(".rs")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.lines().count() > 600)
            {
                long_files += 1;
            }
        }
    }
    Figures {
        lines,
        loops: all_loops,
        long_files,
    }
}

/// The number after `label: ` in ARCHITECTURE.md's structure section
/// (digits with thousands commas).
fn stated(section: &str, label: &str) -> usize {
    let flat = section
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let key = format!("{label}: ").to_lowercase();
    let at = flat
        .find(&key)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md's structure section has no {key:?}"));
    let digits: String = flat[at + key.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {key:?}"))
}

#[test]
fn architecture_states_the_measured_structure() {
    let f = measure();
    let total: usize = f.lines.iter().map(|(_, n)| n).sum();
    let inside: usize = f.loops.iter().map(|(_, l)| l.len()).sum();
    println!("lines of Rust under each crate's src/ (total {total}):");
    for (name, n) in &f.lines {
        println!("  {name}: {n}");
    }
    println!("import loops across crates: 0 (Cargo refuses them)");
    println!("import loops inside crates (groups of files that reach one another): {inside}");
    for (name, groups) in &f.loops {
        for g in groups {
            println!(
                "  {name}: {} files: {}",
                g.len(),
                g.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    println!(
        "files over 600 lines: {} (each with its reason in tests/file_sizes.rs)",
        f.long_files
    );
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("## Structure")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("ARCHITECTURE.md has a Structure section");
    for (name, n) in &f.lines {
        let said = stated(section, name);
        assert!(
            said * 5 >= n * 4 && said * 5 <= n * 6,
            "ARCHITECTURE.md says {name} has {said} lines; measured {n}"
        );
    }
    assert_eq!(stated(section, "import loops inside crates"), inside);
    assert_eq!(stated(section, "files over 600 lines"), f.long_files);
}
