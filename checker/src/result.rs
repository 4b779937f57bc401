//! The result of a check: a three-valued verdict, the anomalies found (with
//! their evidence), and the models they rule out — serialised with Elle's keys
//! (`valid?`, `anomaly-types`, `anomalies`, `not`, `also-not`) as JSON or EDN.
//!
//! Key decision: `Valid` is three-valued and combines invalid > unknown >
//! valid; an exhausted budget is `unknown`, never valid, and so is an empty
//! dependency graph unless complete checks decided every model asked for
//! (`crate::check` drops it then).

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, data_to_json, map};
use crate::model::{
    ConsistencyModel, boundary, prohibited_anomaly_types, remove_redundant_cycle_exists,
    reportable_anomaly_types,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use store::Data;

/// A verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Valid {
    /// No prohibited anomaly was found.
    True,
    /// A prohibited anomaly was found.
    False,
    /// Nothing prohibited was found, but the check could not decide (empty
    /// dependency graph, exhausted cycle search).
    Unknown,
}

impl Valid {
    /// Combines two verdicts: invalid > unknown > valid.
    pub fn combine(self, other: Valid) -> Valid {
        match (self, other) {
            (Valid::False, _) | (_, Valid::False) => Valid::False,
            (Valid::Unknown, _) | (_, Valid::Unknown) => Valid::Unknown,
            _ => Valid::True,
        }
    }

    /// The process exit code for this verdict (0 valid, 1 invalid, 2 unknown).
    pub fn exit_code(self) -> u8 {
        match self {
            Valid::True => 0,
            Valid::False => 1,
            Valid::Unknown => 2,
        }
    }

    /// `true`, `false` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Valid::True => "true",
            Valid::False => "false",
            Valid::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Valid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Valid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Valid::True => s.serialize_bool(true),
            Valid::False => s.serialize_bool(false),
            Valid::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Valid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Valid::True),
            Value::Bool(false) => Ok(Valid::False),
            Value::String(s) if s == "unknown" || s == ":unknown" => Ok(Valid::Unknown),
            other => Err(serde::de::Error::custom(format!(
                "expected true, false or \"unknown\", found {other}"
            ))),
        }
    }
}

/// What a check found.
#[derive(Debug)]
pub struct CheckResult {
    /// The verdict.
    pub valid: Valid,
    /// The reported anomaly types (prohibited by the requested models or
    /// anomalies, plus the unknown-making ones), sorted by name as Elle does.
    pub anomaly_types: Vec<AnomalyType>,
    /// The reported anomalies with their evidence.
    pub anomalies: BTreeMap<AnomalyType, Vec<Anomaly>>,
    /// The weakest models the found anomalies rule out (sorted by name).
    pub not: Vec<ConsistencyModel>,
    /// The other models the found anomalies rule out (sorted by name).
    pub also_not: Vec<ConsistencyModel>,
    /// Every anomaly type found, reported or not (they all count for `not`),
    /// but a `<model>-cycle-exists` type that could not change the result
    /// (not prohibited, its models already ruled out by a cycle found) may
    /// be missing: its pass is skipped in large components.
    pub found_types: Vec<AnomalyType>,
    /// Non-fatal remarks from the analysis (e.g. ops it had to skip).
    pub warnings: Vec<String>,
}

impl CheckResult {
    /// Elle's result map: keyword keys and names (`{:valid? false,
    /// :anomaly-types [:G1c], …}`). A valid result with nothing to report
    /// is just `{:valid? true}`, as Elle prints it.
    pub fn to_data(&self) -> Data {
        let names = |v: Vec<&str>| {
            Data::Vec(
                v.into_iter()
                    .map(|n| Data::Keyword(n.to_string()))
                    .collect(),
            )
        };
        let mut m = vec![(
            "valid?",
            match self.valid {
                Valid::True => Data::Bool(true),
                Valid::False => Data::Bool(false),
                Valid::Unknown => Data::Keyword("unknown".into()),
            },
        )];
        if !(self.valid == Valid::True && self.anomaly_types.is_empty()) {
            m.push((
                "anomaly-types",
                names(self.anomaly_types.iter().map(|a| a.name()).collect()),
            ));
            let mut anomalies: Vec<(&str, Data)> = self
                .anomalies
                .iter()
                .map(|(t, cases)| {
                    (
                        t.name(),
                        Data::Vec(cases.iter().map(Anomaly::to_data).collect()),
                    )
                })
                .collect();
            anomalies.sort_by(|a, b| a.0.cmp(b.0));
            m.push(("anomalies", map(anomalies)));
            m.push(("not", names(self.not.iter().map(|c| c.name()).collect())));
            m.push((
                "also-not",
                names(self.also_not.iter().map(|c| c.name()).collect()),
            ));
        }
        if !self.warnings.is_empty() {
            m.push((
                "warnings",
                Data::Vec(self.warnings.iter().map(|w| Data::Str(w.clone())).collect()),
            ));
        }
        map(m)
    }

    /// [`CheckResult::to_data`] as JSON (keywords become strings).
    pub fn to_json(&self) -> Value {
        data_to_json(&self.to_data())
    }

    /// [`CheckResult::to_json`] as pretty-printed text.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_else(|e| {
            // Serialising a `Value` cannot fail; keep the signature total anyway.
            format!("{{\"error\": {:?}}}", e.to_string())
        })
    }

    /// [`CheckResult::to_data`] as EDN, through the store's EDN writer.
    pub fn to_edn(&self) -> String {
        let mut out = store::format::data_to_edn(&self.to_data());
        out.push('\n');
        out
    }
}

/// The verdict over a set of found anomaly types, decided exactly as Elle's
/// `result-map` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `false` if a prohibited type was found; else `unknown` if some
    /// reportable type (only `empty-transaction-graph`/`cycle-search-timeout`
    /// can remain) was found; else `true`.
    pub valid: Valid,
    /// Found types that are prohibited or unknown-making, minus redundant
    /// `*-cycle-exists` types. Empty when `valid` is `true`.
    pub reported: BTreeSet<AnomalyType>,
    /// `not`, from *all* found types (requested or not), sorted by name.
    pub not: Vec<ConsistencyModel>,
    /// `also-not`, likewise.
    pub also_not: Vec<ConsistencyModel>,
}

/// Decides a verdict from the anomaly types found, the models that should
/// hold and the extra anomalies that must not occur.
///
/// As in Elle: a found anomaly counts towards `valid?` iff it is prohibited
/// (implies an extra anomaly, or is prohibited by a model); `anomaly-types`
/// lists the prohibited and unknown-making types found, without
/// `*-cycle-exists` types that other reported anomalies already explain;
/// `not`/`also-not` come from every type found, and are left empty (like
/// the rest) when nothing is reportable.
pub fn verdict(
    found: &BTreeSet<AnomalyType>,
    models: &[ConsistencyModel],
    extra: &[AnomalyType],
) -> Verdict {
    verdict_ruling_out(found, found, models, extra)
}

/// As [`verdict`], with `not`/`also-not` (and whether something prohibited
/// was found) from `ruling_out` rather than from `found`: the types whose
/// evidence holds whatever version order a model allows, plus, for a level
/// a complete check refuted under its own constraints, that level's
/// `<model>-cycle-exists` (`crate::check` builds it). `reported` still
/// comes from `found`.
pub fn verdict_ruling_out(
    found: &BTreeSet<AnomalyType>,
    ruling_out: &BTreeSet<AnomalyType>,
    models: &[ConsistencyModel],
    extra: &[AnomalyType],
) -> Verdict {
    let prohibited = prohibited_anomaly_types(models, extra);
    let reportable_types = reportable_anomaly_types(models, extra);
    let bad = found
        .iter()
        .chain(ruling_out)
        .any(|a| prohibited.contains(a));
    let reportable: BTreeSet<AnomalyType> = found
        .iter()
        .copied()
        .filter(|a| reportable_types.contains(a))
        .collect();
    let reported = remove_redundant_cycle_exists(&reportable);
    if reported.is_empty() {
        return Verdict {
            valid: Valid::True,
            reported,
            not: vec![],
            also_not: vec![],
        };
    }
    let b = boundary(ruling_out.iter().copied());
    Verdict {
        valid: if bad { Valid::False } else { Valid::Unknown },
        reported,
        not: b.not_sorted(),
        also_not: b.also_not_sorted(),
    }
}

impl CheckResult {
    /// Builds the result from everything the analysis found (anomaly types
    /// with no cases are ignored) and what was asked for.
    pub fn from_found(
        found: BTreeMap<AnomalyType, Vec<Anomaly>>,
        models: &[ConsistencyModel],
        extra: &[AnomalyType],
        warnings: Vec<String>,
    ) -> CheckResult {
        CheckResult::from_found_refuted(found, &BTreeMap::new(), &[], models, extra, warnings)
    }

    /// As [`CheckResult::from_found`], where a complete check refuted the
    /// levels `refuted` under their own constraints. A cycle whose order
    /// that check chose (a step with a [`crate::explain::Derived`]) rules
    /// out only such a level and the models implying it: a weaker model
    /// may allow the other order. So `not`/`also-not` come from the types
    /// with at least one case that chose nothing, plus each refuted
    /// level's `<model>-cycle-exists`. `left` holds what a cap left out of
    /// `found` (`analysis::Found`): those cases count as found too.
    pub fn from_found_refuted(
        mut found: BTreeMap<AnomalyType, Vec<Anomaly>>,
        left: &BTreeMap<AnomalyType, crate::analysis::Left>,
        refuted: &[ConsistencyModel],
        models: &[ConsistencyModel],
        extra: &[AnomalyType],
        warnings: Vec<String>,
    ) -> CheckResult {
        found.retain(|_, cases| !cases.is_empty());
        let left_out = left.iter().filter(|(_, l)| l.count > 0);
        let found_types: BTreeSet<AnomalyType> = found
            .keys()
            .copied()
            .chain(left_out.clone().map(|(t, _)| *t))
            .collect();
        let mut ruling_out: BTreeSet<AnomalyType> = found
            .iter()
            .filter(|(_, cases)| cases.iter().any(|a| !chose_an_order(a)))
            .map(|(t, _)| *t)
            .chain(left_out.filter(|(_, l)| l.chose_no_order).map(|(t, _)| *t))
            .collect();
        ruling_out.extend(refuted.iter().filter_map(|m| m.cycle_exists_anomaly()));
        let v = verdict_ruling_out(&found_types, &ruling_out, models, extra);
        found.retain(|t, _| v.reported.contains(t));
        let mut anomaly_types: Vec<AnomalyType> = v.reported.iter().copied().collect();
        anomaly_types.sort_by_key(|a| a.name());
        CheckResult {
            valid: v.valid,
            anomaly_types,
            anomalies: found,
            not: v.not,
            also_not: v.also_not,
            found_types: found_types.into_iter().collect(),
            warnings,
        }
    }
}

/// Whether `a` is a cycle with a step whose order a complete check chose.
pub(crate) fn chose_an_order(a: &Anomaly) -> bool {
    match &a.evidence {
        crate::explain::Evidence::Cycle { steps, .. } => {
            steps.iter().any(|s| s.derived().is_some())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(valid: Valid, types: &[AnomalyType]) -> CheckResult {
        CheckResult {
            valid,
            anomaly_types: types.to_vec(),
            anomalies: BTreeMap::new(),
            not: vec![ConsistencyModel::ReadCommitted],
            also_not: vec![ConsistencyModel::StrictSerializable],
            found_types: types.to_vec(),
            warnings: vec![],
        }
    }

    #[test]
    fn combine_is_invalid_over_unknown_over_valid() {
        use Valid::*;
        for (a, b, c) in [
            (True, True, True),
            (True, Unknown, Unknown),
            (Unknown, True, Unknown),
            (Unknown, False, False),
            (False, True, False),
            (True, False, False),
            (Unknown, Unknown, Unknown),
        ] {
            assert_eq!(a.combine(b), c, "{a} {b}");
        }
        assert_eq!(
            (True.exit_code(), False.exit_code(), Unknown.exit_code()),
            (0, 1, 2)
        );
    }

    #[test]
    fn valid_serde() -> Result<(), serde_json::Error> {
        assert_eq!(serde_json::to_string(&Valid::Unknown)?, "\"unknown\"");
        assert_eq!(serde_json::to_string(&Valid::False)?, "false");
        assert_eq!(serde_json::from_str::<Valid>("true")?, Valid::True);
        assert_eq!(
            serde_json::from_str::<Valid>("\"unknown\"")?,
            Valid::Unknown
        );
        assert!(serde_json::from_str::<Valid>("\"maybe\"").is_err());
        Ok(())
    }

    #[test]
    fn json_keys_are_elles() {
        let r = result(Valid::False, &[AnomalyType::G1c]);
        let j = r.to_json();
        assert_eq!(j["valid?"], Value::Bool(false));
        assert_eq!(j["anomaly-types"], serde_json::json!(["G1c"]));
        assert_eq!(j["not"], serde_json::json!(["read-committed"]));
        assert_eq!(j["also-not"], serde_json::json!(["strong-serializable"]));
        assert!(j["anomalies"].is_object());
        let ok = CheckResult {
            not: vec![],
            also_not: vec![],
            ..result(Valid::True, &[])
        };
        assert_eq!(ok.to_json(), serde_json::json!({"valid?": true}));
    }

    fn v(found: &[AnomalyType], models: &[ConsistencyModel], extra: &[AnomalyType]) -> Verdict {
        verdict(&found.iter().copied().collect(), models, extra)
    }

    fn names(ms: &[ConsistencyModel]) -> Vec<&'static str> {
        ms.iter().map(|m| m.name()).collect()
    }

    #[test]
    fn verdicts_follow_elle() {
        use AnomalyType as A;
        use ConsistencyModel as M;
        let ss = [M::StrictSerializable];
        // Nothing found: valid, nothing else.
        let r = v(&[], &ss, &[A::G0]);
        assert_eq!(r.valid, Valid::True);
        assert!(r.reported.is_empty() && r.not.is_empty());
        // Only an empty graph: unknown, never valid.
        let r = v(&[A::EmptyTransactionGraph], &ss, &[]);
        assert_eq!(r.valid, Valid::Unknown);
        assert!(r.not.is_empty());
        // A timeout: unknown; with a prohibited anomaly: invalid.
        assert_eq!(v(&[A::CycleSearchTimeout], &ss, &[]).valid, Valid::Unknown);
        let r = v(&[A::CycleSearchTimeout, A::G1c], &ss, &[]);
        assert_eq!(r.valid, Valid::False);
        assert!(r.reported.contains(&A::CycleSearchTimeout));
        // Unrequested anomalies are not reported, don't fail, but count for `not`.
        let r = v(
            &[A::G2Item, A::StrongSnapshotIsolationCycleExists],
            &[M::StrongSnapshotIsolation],
            &[A::G0],
        );
        assert_eq!(r.valid, Valid::False);
        assert_eq!(
            r.reported.iter().copied().collect::<Vec<_>>(),
            vec![A::StrongSnapshotIsolationCycleExists]
        );
        assert_eq!(
            names(&r.not),
            ["repeatable-read", "strong-snapshot-isolation"]
        );
        // Read committed allows G2-item: valid, and (as Elle prints it) no `not`.
        let r = v(&[A::G2Item], &[M::ReadCommitted], &[]);
        assert_eq!(r.valid, Valid::True);
        assert!(r.not.is_empty());
        // An extra anomaly pulls in what implies it, with no models at all.
        assert_eq!(v(&[A::G0], &[], &[A::G1]).valid, Valid::False);
        assert_eq!(v(&[A::G2Item], &[], &[A::G1]).valid, Valid::True);
        // Garbage reads fail read-uncommitted.
        let r = v(&[A::GarbageRead], &[M::ReadUncommitted], &[]);
        assert_eq!(r.valid, Valid::False);
        assert_eq!(names(&r.not), ["read-uncommitted"]);
        // A redundant cycle-exists is dropped from the report.
        let r = v(&[A::G1c, A::Pl2CycleExists], &ss, &[]);
        assert_eq!(r.reported.iter().copied().collect::<Vec<_>>(), vec![A::G1c]);
    }

    #[test]
    fn edn_uses_keywords_for_names() {
        let r = result(Valid::Unknown, &[AnomalyType::EmptyTransactionGraph]);
        let e = r.to_edn();
        assert!(e.starts_with("{:"), "{e}");
        assert!(e.contains(":valid? :unknown"), "{e}");
        assert!(
            e.contains(":anomaly-types [:empty-transaction-graph]"),
            "{e}"
        );
        assert!(e.contains(":not [:read-committed]"), "{e}");
        assert!(e.contains(":also-not [:strong-serializable]"), "{e}");
        let step = crate::explain::Step::data(
            crate::rels::Rel::Ww,
            store::OpIndex(1),
            store::OpIndex(2),
            true,
            Some(crate::explain::Site {
                key: store::Key(store::Atom::Str("x\"y".into())),
                a_mop: 0,
                b_mop: 1,
            }),
            None,
            Some(store::Val::int(1)),
        );
        let s = store::format::data_to_edn(&step.to_data());
        assert!(s.contains(":type :ww"), "{s}");
        assert!(s.contains(":key \"x\\\"y\""), "{s}");
        assert!(s.contains(":value nil, :value' 1"), "{s}");
    }
}
