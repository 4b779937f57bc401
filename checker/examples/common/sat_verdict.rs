//! How the SAT examples name a complete check's outcome that is not
//! `valid` (each says itself how its witness fared).

use checker::sat::SatOutcome;

/// `invalid: <anomaly types>` or `unknown: <reason>`; `None` for `valid`.
pub fn not_valid(out: &SatOutcome) -> Option<String> {
    match out {
        SatOutcome::Valid { .. } => None,
        SatOutcome::Invalid { anomalies } => Some(format!(
            "invalid: {}",
            anomalies
                .iter()
                .map(|a| a.kind.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        SatOutcome::Unknown { reason } => Some(format!("unknown: {reason}")),
    }
}
