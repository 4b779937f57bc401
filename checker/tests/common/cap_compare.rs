//! The one comparison of a capped check with the uncapped one, for the
//! tests that hold it on many histories (`capped.rs`, `conformance.rs`).

use checker::{CheckOptions, check_capped, check_with_engines};
use store::History;

/// Checks `history` with and without a cap of `cap` cases per type:
/// `Ok(n)` when the capped verdict, types, `not`, `also-not`, found types
/// and warnings are the uncapped ones, each kept list is the uncapped
/// list's first cases, every case left out is counted (and only reported
/// types are), `n` being the number of lists cut; `Err` names the first
/// difference.
pub fn compare_capped(history: &History, opts: &CheckOptions, cap: usize) -> Result<usize, String> {
    let all = check_with_engines(history, opts).result;
    let capped = check_capped(history, opts, Some(cap));
    let r = &capped.result;
    let fields = [
        ("valid", format!("{}", r.valid), format!("{}", all.valid)),
        (
            "types",
            format!("{:?}", r.anomaly_types),
            format!("{:?}", all.anomaly_types),
        ),
        ("not", format!("{:?}", r.not), format!("{:?}", all.not)),
        (
            "also-not",
            format!("{:?}", r.also_not),
            format!("{:?}", all.also_not),
        ),
        (
            "found types",
            format!("{:?}", r.found_types),
            format!("{:?}", all.found_types),
        ),
        (
            "warnings",
            format!("{:?}", r.warnings),
            format!("{:?}", all.warnings),
        ),
        (
            "listed types",
            format!("{:?}", r.anomalies.keys().collect::<Vec<_>>()),
            format!("{:?}", all.anomalies.keys().collect::<Vec<_>>()),
        ),
    ];
    for (what, got, want) in fields {
        if got != want {
            return Err(format!("cap {cap}: {what} {got} (uncapped {want})"));
        }
    }
    if let Some(t) = capped
        .omitted
        .keys()
        .find(|t| !all.anomalies.contains_key(t))
    {
        return Err(format!("cap {cap}: {} counted but not reported", t.name()));
    }
    let mut cut = 0;
    for (t, cases) in &all.anomalies {
        let kept = r.anomalies.get(t).map(Vec::as_slice).unwrap_or_default();
        let omitted = capped.omitted.get(t).copied().unwrap_or(0);
        if kept != &cases[..cases.len().min(cap)] || kept.len() + omitted != cases.len() {
            return Err(format!(
                "cap {cap} {}: kept {} + omitted {omitted} of {}",
                t.name(),
                kept.len(),
                cases.len()
            ));
        }
        cut += usize::from(omitted > 0);
    }
    Ok(cut)
}
