//! A test of faults that did not happen is not `valid`.
//!
//! When a nemesis was asked for and no fault took effect — no nemesis op
//! that starts a fault completed without an error (a fault that failed, or one whose
//! ops never came because the main phase ended before the first was due)
//! — the run did not test what it was asked to. [`reason`] says why, from
//! the stored history and the nemesis test.json names, so `run` and a
//! re-check of the stored run agree; [`settle`] records it in
//! `results.json`: a `warnings` entry, `no-fault` (the reason) and, when
//! the checker said `valid`, the verdict `unknown` (exit 2) with that
//! reason. An `invalid` stays invalid: the anomalies found are real.

use checker::result::Valid;
use store::{F, History, OpType};

/// The `results.json` key holding the reason (its presence is what a
/// soak's `no-fault` outcome class reads).
pub const KEY: &str = "no-fault";

/// Whether `f` ends a fault (a heal, a restart, a clock reset) rather than
/// starting one.
fn heals(f: &F) -> bool {
    match f {
        F::StopPartition | F::Start | F::Resume | F::StopClock | F::StopLoss | F::Join => true,
        F::Other(s) => s.starts_with("stop-") || s.starts_with("restore-"),
        _ => false,
    }
}

/// Why the run is not a test of the faults asked for (`nemesis` as
/// test.json names it: `none` or empty for none); `None` when a fault took
/// effect or none was asked for.
pub fn reason(nemesis: Option<&str>, history: &History) -> Option<String> {
    let asked = nemesis.is_some_and(|n| !n.is_empty() && n != "none");
    if !asked {
        return None;
    }
    let mut attempted = 0u64;
    for pos in 0..history.len() {
        if !history.is_nemesis(pos) || history.op_type(pos) == OpType::Invoke {
            continue;
        }
        let Some(f) = history.f(pos) else { continue };
        if heals(f) {
            continue;
        }
        attempted += 1;
        // Took effect: completed without an error (nemesis completions
        // are `info`, Jepsen's way; a failed one carries its error) on a
        // target it reached (a kill of a process already down is a no-op),
        // or with an error on some targets but in effect on others.
        let failed = history.op_type(pos) == OpType::Fail;
        let whole = history.error(pos).is_none() && store::run::faults::took_effect(history, pos);
        if !failed && (whole || store::run::faults::names_effect(history, pos)) {
            return None;
        }
    }
    Some(if attempted == 0 {
        format!(
            "no fault took effect: the main phase ended before the first fault ({}) was due",
            nemesis.unwrap_or_default()
        )
    } else {
        format!("no fault took effect: all {attempted} fault ops failed")
    })
}

/// Records `reason` in `results`: a warning, [`KEY`], and `unknown` for a
/// `valid` verdict. Returns the verdict it leaves.
pub fn settle(results: &mut store::run::RunResults, valid: Valid, reason: &str) -> Valid {
    let warning = format!("{reason}; the run is not a test of the faults asked for");
    let warnings = results
        .extra
        .entry("warnings")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if let Some(list) = warnings.as_array_mut() {
        if !list.iter().any(|w| w.as_str() == Some(warning.as_str())) {
            list.push(warning.into());
        }
    } else {
        *warnings = serde_json::json!([warning]);
    }
    results.extra.insert(KEY.into(), reason.into());
    if valid != Valid::True {
        return valid;
    }
    results.valid = store::run::Verdict::Unknown;
    results.reason = Some(reason.to_string());
    Valid::Unknown
}

/// [`reason`] and [`settle`] over a stored run: reads its history and
/// `results.json`, rewrites `results.json` when a reason applies. Returns
/// the reason and the verdict it leaves (`valid` unchanged when none).
///
/// # Errors
/// The history or `results.json` could not be read or written.
pub fn settle_run(
    run_dir: &store::run::RunDir,
    nemesis: Option<&str>,
    valid: Valid,
) -> anyhow::Result<(Option<String>, Valid)> {
    use anyhow::Context as _;
    if !nemesis.is_some_and(|n| !n.is_empty() && n != "none") {
        return Ok((None, valid));
    }
    let path = run_dir.history_path();
    let (history, _) = store::format::load_history(&path)
        .with_context(|| format!("cannot read back {}", path.display()))?;
    let Some(why) = reason(nemesis, &history) else {
        return Ok((None, valid));
    };
    let mut results = store::run::RunResults::load(&run_dir.results_path())
        .with_context(|| format!("cannot read {}", run_dir.results_path().display()))?;
    let valid = settle(&mut results, valid, &why);
    results.save(&run_dir.results_path())?;
    Ok((Some(why), valid))
}

/// What a stored run's record must say beyond the checker's verdict, in
/// one place for `run` and `analyze`: [`settle_run`] (no fault took
/// effect) and the settings that permit a loss
/// (`report::lost_writes::annotate_run`). Returns the verdict left and the
/// lines to print (warnings included).
pub fn settle_record(
    run_dir: &store::run::RunDir,
    meta: &store::run::RunMeta,
    valid: Valid,
) -> (Valid, Vec<String>) {
    let mut lines = Vec::new();
    let mut verdict = valid;
    match settle_run(run_dir, meta.config.nemesis.as_deref(), valid) {
        Ok((Some(why), settled)) => {
            lines.push(format!(
                "warning: {why}; the run is not a test of the faults asked for{}",
                if settled == valid {
                    String::new()
                } else {
                    format!("; verdict {} (exit 2), not valid", settled.as_str())
                }
            ));
            verdict = settled;
        }
        Ok((None, _)) => {}
        Err(e) => lines.push(format!(
            "warning: could not tell whether a fault took effect: {e:#}"
        )),
    }
    match crate::report::permit::annotate_run(run_dir, &meta.db_settings) {
        Ok(permit) => {
            lines.extend(permit.into_iter().map(|p| {
                format!("the lost writes are permitted by a setting harness imposed: {p}")
            }))
        }
        Err(e) => lines.push(format!("warning: results.json: {e:#}")),
    }
    (verdict, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(jsonl: &str) -> History {
        let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
        History::new(read.ops).unwrap()
    }

    const TXN: &str = concat!(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
    );

    #[test]
    fn no_nemesis_asked_needs_no_fault() {
        let h = history(TXN);
        assert_eq!(reason(None, &h), None);
        assert_eq!(reason(Some("none"), &h), None);
    }

    #[test]
    fn a_nemesis_asked_without_any_fault_op_is_said() {
        let h = history(TXN);
        let why = reason(Some("partition,kill"), &h).unwrap();
        assert!(why.contains("before the first fault"), "{why}");
    }

    #[test]
    fn a_reset_alone_or_a_failed_fault_is_no_fault() {
        let reset = format!(
            "{TXN}{}{}",
            "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"stop-clock\",\"value\":null}\n",
            "{\"type\":\"ok\",\"process\":\"nemesis\",\"f\":\"stop-clock\",\"value\":null}\n",
        );
        assert!(reason(Some("clock"), &history(&reset)).is_some());
        // The completion lists the nodes the fault took effect on
        // (`store::run::faults`): none here.
        let failed = format!(
            "{TXN}{}{}",
            "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"pause\",\"value\":[\"n1\"]}\n",
            "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"pause\",\"value\":[],\"error\":\"n1: not running\"}\n",
        );
        let why = reason(Some("pause"), &history(&failed)).unwrap();
        assert!(why.contains("all 1 fault ops failed"), "{why}");
        // A kill of a process already down is a no-op said as such.
        let noop = format!(
            "{TXN}{}{}",
            "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"kill\",\"value\":[\"n1\"]}\n",
            "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"kill\",\"value\":[],\"error\":\"kill: no-op: not running\"}\n",
        );
        assert!(reason(Some("kill"), &history(&noop)).is_some());
        // A pause that reached n1 and failed on n2 took effect on n1.
        let partial = format!(
            "{TXN}{}{}",
            "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"pause\",\"value\":[\"n1\",\"n2\"]}\n",
            "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"pause\",\"value\":[\"n1\"],\"error\":\"n2: not running\"}\n",
        );
        assert_eq!(reason(Some("pause"), &history(&partial)), None);
    }

    #[test]
    fn one_fault_that_took_effect_is_enough() {
        let h = history(&format!(
            "{TXN}{}{}",
            "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"kill\",\"value\":[\"n1\"]}\n",
            "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"kill\",\"value\":[\"n1\"]}\n",
        ));
        assert_eq!(reason(Some("kill"), &h), None);
    }

    #[test]
    fn valid_becomes_unknown_and_invalid_stays_with_a_warning_each() {
        let mut r = store::run::RunResults::default();
        assert_eq!(
            settle(&mut r, Valid::True, "no fault took effect: x"),
            Valid::Unknown
        );
        assert_eq!(r.valid, store::run::Verdict::Unknown);
        assert_eq!(r.reason.as_deref(), Some("no fault took effect: x"));
        assert_eq!(r.extra[KEY], "no fault took effect: x");
        assert_eq!(r.extra["warnings"].as_array().map(Vec::len), Some(1));
        // Settled twice (a re-check): one warning.
        settle(&mut r, Valid::Unknown, "no fault took effect: x");
        assert_eq!(r.extra["warnings"].as_array().map(Vec::len), Some(1));
        let mut bad = store::run::RunResults {
            valid: store::run::Verdict::False,
            ..Default::default()
        };
        assert_eq!(
            settle(&mut bad, Valid::False, "no fault took effect: y"),
            Valid::False
        );
        assert_eq!(bad.valid, store::run::Verdict::False);
        assert!(bad.reason.is_none());
        assert_eq!(bad.extra[KEY], "no fault took effect: y");
    }
}
