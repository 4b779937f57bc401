//! `harness soak --triage K`: a run that did not end as expected is re-run
//! K times with its own seed and K times with fresh seeds, right away; the
//! reproduction rate ("k of K") goes into `summary.json` (the run's
//! `triage`), its `soak.json` and the console. Reproduced means the same
//! outcome and, for an anomaly, one of the same anomaly types. The re-runs
//! are runs of the test `<test name>.triage` in the same store.

use engine::report::soak::Record;
use engine::suite::{self, ChildSpec, Outcome, run_child, run_dirs};
use serde_json::{Value, json};
use std::path::Path;

/// Runs the triage of `rec` (flags without store, seed and test name).
///
/// # Errors
/// A child could not be started.
pub fn triage(
    rec: &Record,
    k: u32,
    store: &Path,
    logs: &Path,
    grace: std::time::Duration,
) -> anyhow::Result<Value> {
    let name = format!("{}.triage", rec.planned.test_name);
    let mut same = 0;
    let mut fresh = 0;
    let mut runs = Vec::new();
    for i in 0..2 * k {
        if suite::interrupted() {
            break;
        }
        let own_seed = i < k;
        let seed = if own_seed {
            rec.seed
        } else {
            suite::seed_for(None, u64::from(i))
        };
        let mut flags = rec.planned.flags.clone();
        flags.extend([
            "--store".to_string(),
            store.display().to_string(),
            "--test-name".to_string(),
            name.clone(),
            "--seed".to_string(),
            seed.to_string(),
        ]);
        let log = logs.join(format!("{:03}-{}-{i}.log", rec.planned.id, name));
        let before = run_dirs(store, &name);
        let end = run_child(&ChildSpec {
            flags: &flags,
            cwd: None,
            log: Some(&log),
            watchdog: Some(rec.planned.watchdog),
            grace,
            own_group: true,
        })?;
        if end.timed_out || end.signal.is_some() {
            suite::heal_nodes(&flags);
        }
        let dir = suite::new_run_dir(&before, &run_dirs(store, &name));
        let facts = dir.as_deref().map(suite::run_facts).unwrap_or_default();
        let outcome = if end.timed_out {
            Outcome::TimedOut
        } else {
            end.code.map_or(Outcome::Crashed, Outcome::from_exit_code)
        };
        let again = outcome == rec.outcome
            && (rec.facts.anomaly_types.is_empty()
                || facts
                    .anomaly_types
                    .iter()
                    .any(|t| rec.facts.anomaly_types.contains(t)));
        if again {
            if own_seed {
                same += 1;
            } else {
                fresh += 1;
            }
        }
        runs.push(json!({
            "seed": seed,
            "own_seed": own_seed,
            "outcome": outcome.name(),
            "anomaly_types": facts.anomaly_types,
            "reproduced": again,
            "run_dir": dir.map(|d| d.display().to_string()),
        }));
    }
    Ok(json!({
        "tries": k,
        "own_seed": same,
        "fresh_seeds": fresh,
        "summary": format!("reproduced {same}/{k} with its seed, {fresh}/{k} with fresh seeds"),
        "runs": runs,
    }))
}

/// The console lines for the triaged runs of a summary.
pub fn lines(summary: &Value) -> String {
    let mut out = String::new();
    for r in summary["runs"].as_array().into_iter().flatten() {
        if let Some(s) = r["triage"]["summary"].as_str() {
            out.push_str(&format!(
                "triage #{} {}: {s}\n",
                r["id"],
                r["test_name"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}
