//! The verdict layer alone against the conformance corpus: taking the
//! anomaly types Elle reported as "found", our lattice must give Elle's
//! `valid?`, `anomaly-types`, and the same ruled-out models (`not` ∪
//! `also-not`), split into the weakest and the rest in our lattice, which
//! cuts three of Elle's edges (checker/CONFORMANCE.md, "Lattice"). This
//! isolates the model side from the analysis (which `conformance.rs` tests
//! end to end).

use checker::anomaly::AnomalyType;
use checker::model::{ConsistencyModel, DEFAULT_MODEL, weakest_models};
use checker::result::verdict;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Entries whose `not` depends on anomalies Elle found but did not report
/// (not prohibited by the requested models), with those extra types.
const UNREPORTED_FOUND: &[(&str, &[AnomalyType])] = &[(
    "elle-cli/rw-register-anomaly-g2-item.json#rw-register-model-strong-snapshot",
    &[AnomalyType::G2Item],
)];

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn sorted(xs: impl IntoIterator<Item = String>) -> Vec<String> {
    let s: BTreeSet<String> = xs.into_iter().collect();
    s.into_iter().collect()
}

#[test]
fn lattice_reproduces_elles_verdicts_from_its_anomaly_types() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance/MANIFEST.json"
    ));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let manifest: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let entries = manifest.as_array().map(Vec::as_slice).unwrap_or_default();
    assert!(!entries.is_empty(), "no manifest at {}", path.display());
    let mut failures = Vec::new();
    let mut checked = 0;
    for e in entries {
        let id = e["id"].as_str().unwrap_or_default();
        let x = &e["expected"];
        if x.is_null() {
            continue;
        }
        let parse_models = |v: &Value| -> Vec<ConsistencyModel> {
            strings(v)
                .into_iter()
                .filter_map(|m| ConsistencyModel::parse(m).ok())
                .collect()
        };
        let models = match e["options"].get("consistency_models") {
            Some(v) => parse_models(v),
            None => vec![DEFAULT_MODEL],
        };
        let extra: Vec<AnomalyType> = strings(&e["options"]["anomalies"])
            .into_iter()
            .filter_map(|a| AnomalyType::parse(a).ok())
            .collect();
        let mut found: BTreeSet<AnomalyType> = BTreeSet::new();
        for t in strings(&x["anomaly_types"]) {
            match AnomalyType::parse(t) {
                Ok(a) => {
                    found.insert(a);
                }
                Err(err) => failures.push(format!("{id}: {err}")),
            }
        }
        if let Some((_, more)) = UNREPORTED_FOUND.iter().find(|(i, _)| *i == id) {
            found.extend(more.iter().copied());
        }
        let v = verdict(&found, &models, &extra);
        checked += 1;
        let want_valid = match &x["valid"] {
            Value::Bool(b) => b.to_string(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let cmp =
            |field: &str, ours: Vec<String>, elle: Vec<String>, failures: &mut Vec<String>| {
                if ours != elle {
                    failures.push(format!("{id} {field}: ours={ours:?} elle={elle:?}"));
                }
            };
        cmp(
            "valid",
            vec![v.valid.to_string()],
            vec![want_valid],
            &mut failures,
        );
        cmp(
            "anomaly_types",
            sorted(v.reported.iter().map(|a| a.name().to_string())),
            sorted(strings(&x["anomaly_types"]).into_iter().map(String::from)),
            &mut failures,
        );
        // Elle's ruled-out models, split into the weakest and the rest in
        // our lattice (it cuts three of Elle's edges; CONFORMANCE.md).
        let elle_not: BTreeSet<ConsistencyModel> = parse_models(&x["not"]).into_iter().collect();
        let (want_not, want_also) = match x.get("also_not") {
            Some(also) => {
                let all: BTreeSet<ConsistencyModel> =
                    elle_not.iter().copied().chain(parse_models(also)).collect();
                let weakest = weakest_models(&all);
                let rest = all.difference(&weakest).copied().collect();
                (weakest, Some(rest))
            }
            None => (elle_not, None),
        };
        let names = |s: &BTreeSet<ConsistencyModel>| sorted(s.iter().map(|m| m.name().to_string()));
        cmp(
            "not",
            sorted(v.not.iter().map(|m| m.name().to_string())),
            names(&want_not),
            &mut failures,
        );
        if let Some(also) = want_also {
            cmp(
                "also_not",
                sorted(v.also_not.iter().map(|m| m.name().to_string())),
                names(&also),
                &mut failures,
            );
        }
    }
    assert!(checked >= 35, "{checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
