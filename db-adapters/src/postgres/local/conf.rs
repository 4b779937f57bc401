//! The settings of a `--local` PostgreSQL server: harness's own (speed
//! over durability) and `--db-conf`'s over them, as the server gets them
//! (`-c key=value`) and as the run records them (test.json `db_settings`).

/// What harness sets on a `--local` server unless `--db-conf` says
/// otherwise: speed over durability (tests crash processes, not machines),
/// so a kill may lose acknowledged commits (`synchronous_commit=off`).
pub const DEFAULT_SETTINGS: [(&str, &str); 3] = [
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
];

/// `--db-conf` lines for a `--local` server: `key=value`, the key a
/// PostgreSQL setting name, the value without spaces or quotes (it goes on
/// the server's command line as `-c key=value`); several in one line
/// separated by commas.
///
/// # Errors
/// The first line that is not so, named.
pub fn parse_conf(lines: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for line in lines {
        for item in line.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| {
                format!("--db-conf {item:?}: expected key=value (e.g. synchronous_commit=on)")
            })?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(format!(
                    "--db-conf {item:?}: {k:?} is not a PostgreSQL setting name"
                ));
            }
            if v.is_empty()
                || !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-+:/".contains(c))
            {
                return Err(format!(
                    "--db-conf {item:?}: with --local a value is letters, digits and _.-+:/ only"
                ));
            }
            out.push((k.to_string(), v.to_string()));
        }
    }
    Ok(out)
}

/// The settings a server started with `conf` runs: [`DEFAULT_SETTINGS`]
/// with `conf` over them, then `conf`'s others.
pub fn settings(conf: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = DEFAULT_SETTINGS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in conf {
        match out.iter_mut().find(|(ok, _)| ok == k) {
            Some(e) => e.1.clone_from(v),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}
