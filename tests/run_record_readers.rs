//! Every reader of `test.json`/`results.json` goes through the typed
//! record in `store::run`: no source outside it reads them by string key.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("tests") && !p.ends_with("target") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests.rs") {
            // `tests.rs` is a `#[cfg(test)] mod tests;`: unit tests, which
            // may build fixtures by hand.
            out.push(p);
        }
    }
}

#[test]
fn no_string_key_reads_of_run_records_outside_store_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["src", "engine/src", "store/src"] {
        sources(&root.join(d), &mut files);
    }
    assert!(files.len() > 20, "found the sources");
    let forbidden = [
        "[\"valid?\"]",
        "get(\"valid?\")",
        "join(\"test.json\")",
        "join(\"results.json\")",
        "[\"schema_version\"]",
        "[\"run_flags\"]",
    ];
    let mut found = Vec::new();
    for f in files {
        if f.starts_with(root.join("store/src/run")) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        // Unit tests may build fixtures by hand.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            if forbidden.iter().any(|k| line.contains(k)) {
                found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "string-key run record access:\n{}",
        found.join("\n")
    );
}
