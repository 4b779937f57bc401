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
