//! The catalog is the one list of databases: the README's `harness run`
//! row names every `--db` value in the catalog's order, and nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::catalog::DbKind;

#[test]
fn readme_lists_every_database_of_the_catalog_in_order() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md beside the workspace");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `harness run` |"))
        .expect("the `harness run` row of the command table");
    let dbs = row
        .split_once("`--db ")
        .and_then(|(_, r)| r.split_once("; `--workload"))
        .map(|(dbs, _)| format!("`{dbs}"))
        .expect("`--db …; --workload` in the row");
    // Code spans, the first without its `--db `; flags (`--local`) are not names.
    let named: Vec<&str> = dbs
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.starts_with("--"))
        .collect();
    let catalog: Vec<&str> = DbKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(named, catalog, "README row: {row}");
}

/// The catalog imports the database modules (ports, tables, log lists,
/// factories, lifecycles); none of them imports the catalog, so there is
/// no import loop.
#[test]
fn no_database_module_imports_the_catalog() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut offenders = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p != src.join("catalog") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&p)
                    .unwrap()
                    .contains("crate::catalog")
            {
                offenders.push(p.display().to_string());
            }
        }
    }
    assert!(offenders.is_empty(), "import the catalog: {offenders:?}");
}
