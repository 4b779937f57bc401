//! How many anomalies a run's result files keep: at most
//! [`MAX_ANOMALIES_PER_TYPE`] per anomaly type in `results.json`,
//! `results.edn` and `elle/`, with the exact number found of each type
//! always written next to them (`anomaly-counts`) and how many were left
//! out (`anomalies-omitted`).
//!
//! Key decision: the cap is applied inside the checker, as anomalies are
//! found (`checker::check_capped`: each type keeps its first cases and
//! counts the rest, with what the verdict needs of them), so neither the
//! check nor any writer ever holds a million anomalies; the verdict,
//! `anomaly-types`, `not` and `also-not` are those of the uncapped check
//! (`checker/tests/capped.rs`). Elle bounds its cycle
//! anomalies by construction (one cycle of each type per strongly connected
//! component, plots skipped above `:max-plot-bytes`) but lists every
//! non-cycle case (`lost-update`, `G1a`, …) in full; a history with a
//! million lost updates made a 162 MB `results.json` here before the cap.

use checker::CheckResult;
use checker::anomaly::AnomalyType;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use store::Data;

/// Anomalies of one type kept in the result files (the rest are counted).
pub const MAX_ANOMALIES_PER_TYPE: usize = 100;

/// The exact number of anomalies of each reported type, taken before
/// [`cap`] cut the lists, and the cap that was applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AnomalyCounts {
    /// Anomalies found per type (exact).
    pub found: BTreeMap<AnomalyType, usize>,
    /// How many of each type the lists keep (`None`: every one).
    pub kept_per_type: Option<usize>,
}

impl AnomalyCounts {
    /// The counts of `result` as it is (nothing cut).
    pub fn of(result: &CheckResult) -> AnomalyCounts {
        AnomalyCounts {
            found: result
                .anomalies
                .iter()
                .map(|(t, cases)| (*t, cases.len()))
                .collect(),
            kept_per_type: None,
        }
    }

    /// How many anomalies of `ty` the lists left out.
    pub fn omitted(&self, ty: AnomalyType) -> usize {
        let found = self.found.get(&ty).copied().unwrap_or(0);
        self.kept_per_type
            .map_or(0, |kept| found.saturating_sub(kept))
    }

    /// Anomalies left out over all types.
    pub fn total_omitted(&self) -> usize {
        self.found.keys().map(|t| self.omitted(*t)).sum()
    }

    /// Adds `anomaly-counts` (always, when anything was found) and
    /// `anomalies-omitted` (only the types that were cut) to a result map.
    pub fn annotate_json(&self, json: &mut Value) {
        if self.found.is_empty() {
            return;
        }
        let Some(map) = json.as_object_mut() else {
            return;
        };
        let counts: serde_json::Map<String, Value> = self
            .found
            .iter()
            .map(|(t, n)| (t.name().to_string(), json!(n)))
            .collect();
        map.insert("anomaly-counts".into(), Value::Object(counts));
        let omitted: serde_json::Map<String, Value> = self
            .found
            .keys()
            .filter(|t| self.omitted(**t) > 0)
            .map(|t| (t.name().to_string(), json!(self.omitted(*t))))
            .collect();
        if !omitted.is_empty() {
            map.insert("anomalies-omitted".into(), Value::Object(omitted));
        }
    }

    /// The same keys for `results.edn` (`:anomaly-counts {:G1c 3}`).
    pub fn annotate_data(&self, data: &mut Data) {
        if self.found.is_empty() {
            return;
        }
        let Data::Map(entries) = data else {
            return;
        };
        let by_type = |f: &dyn Fn(AnomalyType) -> Option<usize>| {
            Data::Map(
                self.found
                    .keys()
                    .filter_map(|t| {
                        f(*t).map(|n| {
                            (
                                Data::Keyword(t.name().to_string()),
                                Data::Int(i64::try_from(n).unwrap_or(i64::MAX)),
                            )
                        })
                    })
                    .collect(),
            )
        };
        entries.push((
            Data::Keyword("anomaly-counts".into()),
            by_type(&|t| self.found.get(&t).copied()),
        ));
        if self.total_omitted() > 0 {
            entries.push((
                Data::Keyword("anomalies-omitted".into()),
                by_type(&|t| Some(self.omitted(t)).filter(|n| *n > 0)),
            ));
        }
    }

    /// One line per cut type for a reader: `G2-item: 1,234,567 found, the
    /// first 100 kept`. Empty when nothing was cut.
    pub fn omitted_lines(&self) -> Vec<String> {
        self.found
            .iter()
            .filter(|(t, _)| self.omitted(**t) > 0)
            .map(|(t, n)| {
                format!(
                    "{}: {} found, the first {} kept",
                    t.name(),
                    crate::console::thousands(*n as u64),
                    self.kept_per_type.unwrap_or(*n)
                )
            })
            .collect()
    }
}

/// Cuts every anomaly list of `result` to `per_type` entries (the first
/// ones found) and returns the exact counts from before. `None` keeps all.
pub fn cap(result: &mut CheckResult, per_type: Option<usize>) -> AnomalyCounts {
    let mut counts = AnomalyCounts::of(result);
    counts.kept_per_type = per_type;
    if let Some(max) = per_type {
        for cases in result.anomalies.values_mut() {
            if cases.len() > max {
                cases.truncate(max);
                cases.shrink_to_fit();
            }
        }
    }
    counts
}
