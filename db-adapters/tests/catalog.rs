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
    let catalog: Vec<&str> = DbKind::all().map(|k| k.name()).collect();
    assert_eq!(named, catalog, "README row: {row}");
}

/// Every `impl Database for` (or `impl Recipe for`, a tarball
/// database's) is in a database's own module (`<module>/database.rs`), and the `DATABASES` table names each entry
/// once: a database is its module plus one line of the table.
#[test]
fn every_entry_lives_in_its_own_module_and_is_in_the_table_once() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let rel = p
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let lines: Vec<&str> = text.lines().map(str::trim).collect();
                for (i, l) in lines.iter().enumerate() {
                    // The MariaDB entries share one impl, written by a
                    // macro: its invocations name the types.
                    // A tarball database's entry is its `impl Recipe`
                    // (every recipe is an entry: `tarball/mod.rs`).
                    if let Some(rest) = l
                        .strip_prefix("impl Database for ")
                        .or_else(|| l.strip_prefix("impl Recipe for "))
                    {
                        entries.push((rel.clone(), rest.trim_end_matches(" {").to_string()));
                    } else if l.ends_with("_entry!(") {
                        let ty = lines.get(i + 1).copied().unwrap_or_default();
                        entries.push((rel.clone(), ty.trim_end_matches(',').to_string()));
                    }
                }
            }
        }
    }
    for (file, ty) in &entries {
        assert!(
            file.ends_with("/database.rs") && !file.starts_with("catalog/"),
            "{ty}'s entry is in {file}, not in its own module's database.rs"
        );
    }
    let table = std::fs::read_to_string(src.join("catalog/mod.rs")).unwrap();
    let block = table
        .split_once("pub static DATABASES")
        .and_then(|(_, r)| r.split_once("];"))
        .map(|(b, _)| b.to_string())
        .expect("the DATABASES table");
    let rows: Vec<&str> = block
        .lines()
        .filter(|l| l.trim().starts_with('&'))
        .collect();
    // The macro's types are the ones its invocations name.
    let macro_types = entries.iter().filter(|(_, t)| !t.contains('$')).count();
    assert_eq!(rows.len(), DbKind::all().count());
    assert_eq!(
        rows.len(),
        macro_types,
        "entries: {entries:?}; table: {rows:?}"
    );
    for (_, ty) in entries.iter().filter(|(_, t)| !t.contains('$')) {
        let n = rows
            .iter()
            .filter(|r| r.trim().ends_with(&format!("::{ty},")))
            .count();
        assert_eq!(n, 1, "{ty} is in the table {n} times: {rows:?}");
    }
}
