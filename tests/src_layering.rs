//! `src/` is the CLI and command glue: its modules may use one another
//! (`soak_cmd` uses `run_cmd`'s flag parser) but never in a loop, and none
//! of them holds the engine (runner, cluster wiring, reports), which lives
//! in the `engine` crate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module (top-level file or directory under `src/`) → modules it names as
/// `crate::<module>`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap();
            let first = rel.iter().next().unwrap().to_string_lossy().to_string();
            let module = first.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            let uses = out.entry(module.clone()).or_default();
            for (i, _) in text.match_indices("crate::") {
                let name: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    uses.insert(name);
                }
            }
        }
    }
    out
}

/// A cycle through `from`, if any (depth-first, explicit stack).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack: Vec<(String, Vec<String>)> = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((m, path)) = stack.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            if next == from {
                let mut c = path.clone();
                c.push(next.clone());
                return Some(c);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn src_modules_do_not_import_each_other_in_a_loop() {
    let graph = imports();
    assert!(graph.contains_key("run_cmd") && graph.contains_key("soak_cmd"));
    assert!(graph["soak_cmd"].contains("run_cmd"), "{graph:?}");
    for m in graph.keys() {
        assert_eq!(cycle(&graph, m), None, "import loop in src/");
    }
    for engine_part in ["runner", "report", "nemesis_task", "suite"] {
        assert!(
            !graph.contains_key(engine_part),
            "src/{engine_part} belongs in engine/"
        );
    }
}
