//! The settings harness imposed on a database it started (test.json
//! `db_settings`) that permit losing acknowledged writes at a crash: named
//! beside the lost-writes report, so a loss the run's own configuration
//! allows is not taken for a database bug.

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The settings among `settings` (a database's, as the run recorded them:
/// test.json `db_settings`) that permit an acknowledged write to be lost
/// at a crash, each with what it permits.
pub fn permitting(settings: &BTreeMap<String, String>) -> Vec<String> {
    const PERMIT: [(&str, &str, &str); 4] = [
        (
            "synchronous_commit",
            "off",
            "an acknowledged commit may be lost at a crash (acknowledged before its WAL is flushed)",
        ),
        (
            "fsync",
            "off",
            "committed data may be lost at a crash of the machine (a killed process alone keeps it)",
        ),
        (
            "innodb_flush_log_at_trx_commit",
            "0",
            "an acknowledged commit may be lost at a crash of mysqld",
        ),
        (
            "innodb_flush_log_at_trx_commit",
            "2",
            "an acknowledged commit may be lost at a crash of the machine",
        ),
    ];
    PERMIT
        .iter()
        .filter(|(k, v, _)| settings.get(*k).is_some_and(|s| s.eq_ignore_ascii_case(v)))
        .map(|(k, v, why)| format!("{k}={v}: {why}"))
        .collect()
}

/// Records `settings` in a stored run's `results.json` (`db-settings`)
/// and says which of them permit the acknowledged writes it lost:
/// `lost-writes` `permitted-by` and a warning. Returns those sentences
/// (empty: nothing lost, or no such setting).
///
/// # Errors
/// `results.json` could not be read or written.
pub fn annotate_run(
    run_dir: &store::run::RunDir,
    settings: &BTreeMap<String, String>,
) -> Result<Vec<String>, store::run::RecordError> {
    if settings.is_empty() {
        return Ok(Vec::new());
    }
    let path = run_dir.results_path();
    let mut results = store::run::RunResults::load(&path)?;
    // The settings beside the verdict they bear on (also in test.json).
    results.extra.insert("db-settings".into(), json!(settings));
    let permit = permitting(settings);
    let lost = results
        .extra
        .get_mut("lost-writes")
        .filter(|l| l["count"].as_u64().unwrap_or(0) > 0);
    let said = match lost {
        Some(lost) if !permit.is_empty() => {
            lost["permitted-by"] = json!(permit);
            let warning = format!(
                "the lost acknowledged writes follow from a setting harness imposed, not (necessarily) from a database bug: {}",
                permit.join("; ")
            );
            match results
                .extra
                .get_mut("warnings")
                .and_then(Value::as_array_mut)
            {
                Some(list) => list.push(warning.into()),
                None => {
                    results.extra.insert("warnings".into(), json!([warning]));
                }
            }
            permit
        }
        _ => Vec::new(),
    };
    results.save(&path)?;
    Ok(said)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_permit_a_loss_are_named() {
        let set = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let local = set(&[
            ("fsync", "off"),
            ("synchronous_commit", "off"),
            ("full_page_writes", "off"),
        ]);
        let p = permitting(&local);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with(
                "synchronous_commit=off: an acknowledged commit may be lost at a crash"
            )
        );
        let durable = set(&[("fsync", "on"), ("synchronous_commit", "on")]);
        assert!(permitting(&durable).is_empty());
        assert_eq!(
            permitting(&set(&[("innodb_flush_log_at_trx_commit", "0")])).len(),
            1
        );
    }
}
