//! A bounded digest of a `results.json` ([`ResultsDigest`]), read in one
//! streaming pass: the verdict, anomaly types with exact counts,
//! `not`/`also-not`, the reason, a short preview per type, the
//! `lost-writes` section, the `stats` (op counts, duration, fault windows),
//! the checker's total time and the `warnings` (all bounded). Long-lived
//! readers (`harness serve`) keep this instead of the whole
//! [`super::RunResults`], which for a big run holds megabytes of anomalies.
//! Field names are [`super::RunResults`]'s.

use super::Verdict;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::BTreeMap;

/// Anomalies of each type kept for the preview.
const PREVIEW_ANOMALIES: usize = 3;
/// Longest preview text per type (bytes).
const MAX_PREVIEW_BYTES: usize = 16 * 1024;
/// Lost writes kept of `lost-writes.listed` (harness writes at most 100).
const LOST_WRITES_KEPT: usize = 100;
/// Largest listed lost writes kept (bytes of JSON); harness's 100 take
/// about 60 KiB.
const MAX_LOST_WRITES_BYTES: usize = 256 * 1024;

/// `valid?` as a verdict only when it is one: `true`, `false`, `"unknown"`
/// (or EDN's `:unknown`).
fn strict_verdict(v: &Value) -> Option<Verdict> {
    match v {
        Value::Bool(true) => Some(Verdict::True),
        Value::Bool(false) => Some(Verdict::False),
        Value::String(s) if s.trim_start_matches(':') == "unknown" => Some(Verdict::Unknown),
        _ => None,
    }
}

impl ResultsDigest {
    /// Reads a `results.json` from `reader` (memory: the digest).
    ///
    /// # Errors
    /// Malformed JSON, or not an object.
    pub fn from_reader<R: std::io::Read>(reader: R) -> Result<ResultsDigest, serde_json::Error> {
        serde_json::from_reader(reader)
    }
}

/// Warnings a digest keeps.
pub const WARNINGS_KEPT: usize = 10;
/// Characters of a warning a digest keeps.
pub const WARNING_CHARS: usize = 500;

/// What the pages need of a `results.json`, read in one streaming pass.
#[derive(Clone, Debug, Default)]
pub struct ResultsDigest {
    /// `valid?`: `None` when missing or not a verdict (`true`, `false`,
    /// `"unknown"`).
    pub valid: Option<Verdict>,
    /// `anomaly-types` (or, without it, the keys of `anomalies`).
    pub anomaly_types: Vec<String>,
    /// Anomalies found per type: `anomaly-counts` when the file has it
    /// (lists may be cut), else the lists' lengths.
    pub counts: BTreeMap<String, u64>,
    /// Models ruled out.
    pub not: Vec<String>,
    /// Other models ruled out.
    pub also_not: Vec<String>,
    /// `reason`, when given.
    pub reason: Option<String>,
    /// `warnings`: the first [`WARNINGS_KEPT`], each cut to
    /// [`WARNING_CHARS`] characters.
    pub warnings: Vec<String>,
    /// The first few anomalies of each type, pretty JSON, cut short.
    pub previews: BTreeMap<String, String>,
    /// `lost-writes` as the file has it (`{count, in-crash-windows, listed,
    /// omitted}`, written by the engine's lost-writes report), its `listed`
    /// cut to the first 100.
    pub lost_writes: Option<Value>,
    /// `stats`, with at most [`super::stats::MAX_FAULT_WINDOWS`] windows
    /// and [`super::stats::MAX_FS`] + 1 `f`s.
    pub stats: Option<super::RunStats>,
    /// The checker's total time (`checker-timings`' `total`), seconds.
    pub checker_seconds: Option<f64>,
}

/// The anomalies of one type: how many, and the first few.
#[derive(Default)]
struct TypeDigest {
    count: u64,
    first: Vec<Value>,
}

impl<'de> Deserialize<'de> for TypeDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TypeVisitor)
    }
}

struct TypeVisitor;

impl<'de> Visitor<'de> for TypeVisitor {
    type Value = TypeDigest;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of anomalies")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TypeDigest, A::Error> {
        let mut t = TypeDigest::default();
        loop {
            if t.first.len() < PREVIEW_ANOMALIES {
                match seq.next_element::<Value>()? {
                    Some(v) => t.first.push(v),
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            t.count += 1;
        }
        Ok(t)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TypeDigest, A::Error> {
        // Not Elle's shape (a list); one case, shown as it is.
        let mut o = serde_json::Map::new();
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            o.insert(k, v);
        }
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::Object(o)],
        })
    }

    fn visit_bool<E>(self, v: bool) -> Result<TypeDigest, E> {
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::Bool(v)],
        })
    }

    fn visit_i64<E>(self, v: i64) -> Result<TypeDigest, E> {
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::from(v)],
        })
    }

    fn visit_u64<E>(self, v: u64) -> Result<TypeDigest, E> {
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::from(v)],
        })
    }

    fn visit_f64<E>(self, v: f64) -> Result<TypeDigest, E> {
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::from(v)],
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<TypeDigest, E> {
        Ok(TypeDigest {
            count: 1,
            first: vec![Value::from(v)],
        })
    }

    fn visit_unit<E>(self) -> Result<TypeDigest, E> {
        Ok(TypeDigest::default())
    }
}

/// `anomalies`: type name → its digest, in file order.
struct AnomaliesDigest(Vec<(String, TypeDigest)>);

impl<'de> Deserialize<'de> for AnomaliesDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnomaliesDigest;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of anomaly types to anomalies")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnomaliesDigest, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    out.push((k, map.next_value::<TypeDigest>()?));
                }
                Ok(AnomaliesDigest(out))
            }

            fn visit_unit<E>(self) -> Result<AnomaliesDigest, E> {
                Ok(AnomaliesDigest(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ResultsDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResultsDigest;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object (Elle's result map)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultsDigest, A::Error> {
                let mut d = ResultsDigest::default();
                let mut anomalies = Vec::new();
                let mut given_counts = BTreeMap::new();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "valid?" | "valid" if d.valid.is_none() => {
                            d.valid = strict_verdict(&map.next_value::<Value>()?);
                        }
                        "anomaly-types" | "anomaly_types" => {
                            d.anomaly_types = names(Some(&map.next_value::<Value>()?));
                        }
                        "anomalies" => anomalies = map.next_value::<AnomaliesDigest>()?.0,
                        "anomaly-counts" => {
                            if let Value::Object(o) = map.next_value::<Value>()? {
                                given_counts = o
                                    .into_iter()
                                    .filter_map(|(k, v)| v.as_u64().map(|n| (k, n)))
                                    .collect();
                            }
                        }
                        "not" => d.not = names(Some(&map.next_value::<Value>()?)),
                        "also-not" => d.also_not = names(Some(&map.next_value::<Value>()?)),
                        "reason" => {
                            d.reason = map.next_value::<Value>()?.as_str().map(str::to_string);
                        }
                        "warnings" => {
                            d.warnings = names(Some(&map.next_value::<Value>()?))
                                .into_iter()
                                .take(WARNINGS_KEPT)
                                .map(|w| w.chars().take(WARNING_CHARS).collect())
                                .collect();
                        }
                        "lost-writes" => {
                            d.lost_writes = Some(bounded_lost_writes(map.next_value()?));
                        }
                        "stats" => {
                            let mut st = map.next_value::<Option<super::RunStats>>()?;
                            if let Some(st) = st.as_mut() {
                                bound_stats(st);
                            }
                            d.stats = st;
                        }
                        "checker-timings" => {
                            let t = map.next_value::<Vec<super::CheckerTiming>>()?;
                            d.checker_seconds =
                                t.iter().find(|t| t.analysis == "total").map(|t| t.seconds);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                if d.anomaly_types.is_empty() {
                    d.anomaly_types = anomalies.iter().map(|(k, _)| k.clone()).collect();
                }
                for (ty, t) in anomalies {
                    let count = given_counts
                        .get(&ty)
                        .copied()
                        .unwrap_or(t.count)
                        .max(t.count);
                    d.previews.insert(ty.clone(), preview(&t.first, count));
                    d.counts.insert(ty, count);
                }
                for (ty, n) in given_counts {
                    d.counts.entry(ty).or_insert(n);
                }
                Ok(d)
            }
        }
        d.deserialize_map(V)
    }
}

/// `lost-writes` with at most [`LOST_WRITES_KEPT`] listed writes, and none
/// listed when those still take more than [`MAX_LOST_WRITES_BYTES`] (a
/// file harness did not write: its count is kept).
fn bounded_lost_writes(mut v: Value) -> Value {
    if let Some(Value::Array(a)) = v.get_mut("listed") {
        a.truncate(LOST_WRITES_KEPT);
        if serde_json::to_string(a).map_or(0, |t| t.len()) > MAX_LOST_WRITES_BYTES {
            a.clear();
        }
    }
    v
}

/// Cuts `stats` to what harness writes at most.
fn bound_stats(st: &mut super::RunStats) {
    use super::stats::{MAX_FAULT_WINDOWS, MAX_FS};
    let extra = st.fault_windows.len().saturating_sub(MAX_FAULT_WINDOWS);
    st.fault_windows.truncate(MAX_FAULT_WINDOWS);
    st.fault_windows_omitted += extra as u64;
    while st.counts.len() > MAX_FS + 1 {
        st.counts.pop_last();
    }
    while st.nemesis_counts.len() > MAX_FS + 1 {
        st.nemesis_counts.pop_last();
    }
    while st.latency_ms.len() > MAX_FS + 1 {
        st.latency_ms.pop_last();
    }
}

/// The first anomalies as pretty JSON, at most [`MAX_PREVIEW_BYTES`].
fn preview(first: &[Value], count: u64) -> String {
    let mut s = serde_json::to_string_pretty(first).unwrap_or_default();
    if s.len() > MAX_PREVIEW_BYTES {
        let mut cut = MAX_PREVIEW_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n…");
    }
    if count > first.len() as u64 {
        s.push_str(&format!(
            "\n(the first {} of {count}; results.json has the rest)",
            first.len()
        ));
    }
    s
}

/// A short display string for a loose JSON value.
fn show(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(", "),
        Value::Object(o) => {
            for k in ["name", "kind", "type"] {
                if let Some(Value::String(s)) = o.get(k) {
                    return s.clone();
                }
            }
            v.to_string()
        }
    }
}

fn names(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().map(show).collect(),
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_kept_bounded() {
        let long = "w".repeat(2 * WARNING_CHARS);
        let many: Vec<String> = (0..3 * WARNINGS_KEPT).map(|_| long.clone()).collect();
        let text = serde_json::json!({"valid?": "unknown", "warnings": many}).to_string();
        let d = ResultsDigest::from_reader(text.as_bytes()).unwrap();
        assert_eq!(d.warnings.len(), WARNINGS_KEPT);
        assert!(
            d.warnings
                .iter()
                .all(|w| w.chars().count() == WARNING_CHARS)
        );
        let one = r#"{"valid?": "unknown", "warnings": ["no fault took effect: x"]}"#;
        let d = ResultsDigest::from_reader(one.as_bytes()).unwrap();
        assert_eq!(d.warnings, ["no fault took effect: x"]);
    }

    fn digest(json: &str) -> ResultsDigest {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
    }

    #[test]
    fn a_digest_counts_every_anomaly_but_keeps_a_few() {
        let cases: Vec<Value> = (0..1000)
            .map(|i| serde_json::json!({"type": "lost-update", "key": i}))
            .collect();
        let json = serde_json::json!({
            "valid?": false,
            "anomaly-types": ["lost-update"],
            "anomalies": {"lost-update": cases},
            "not": ["read-committed"],
            "also-not": ["serializable"],
            "history": [1, 2, 3],
        })
        .to_string();
        let d = digest(&json);
        assert_eq!(d.valid, Some(Verdict::False));
        assert_eq!(d.anomaly_types, ["lost-update"]);
        assert_eq!(d.counts.get("lost-update"), Some(&1000));
        assert_eq!(d.not, ["read-committed"]);
        assert_eq!(d.also_not, ["serializable"]);
        let p = &d.previews["lost-update"];
        assert!(p.contains("\"key\": 2") && !p.contains("\"key\": 3"), "{p}");
        assert!(p.contains("the first 3 of 1000"), "{p}");
    }

    #[test]
    fn a_digest_keeps_the_lost_writes_bounded() {
        let listed: Vec<Value> = (0..150)
            .map(|i| serde_json::json!({"key": "1", "value": i.to_string()}))
            .collect();
        let json = serde_json::json!({
            "valid?": false,
            "lost-writes": {"count": 150, "in-crash-windows": 150, "listed": listed},
        })
        .to_string();
        let d = digest(&json);
        let lw = d.lost_writes.unwrap();
        assert_eq!(lw["count"], 150);
        assert_eq!(lw["listed"].as_array().unwrap().len(), 100);
        assert!(digest(r#"{"valid?":true}"#).lost_writes.is_none());
        // Listed writes too big to keep: the count stays, the list goes.
        let huge = "x".repeat(300 * 1024);
        let json = serde_json::json!({
            "lost-writes": {"count": 1, "listed": [{"key": "1", "explanation": huge}]},
        })
        .to_string();
        let lw = digest(&json).lost_writes.unwrap();
        assert_eq!(lw["count"], 1);
        assert_eq!(lw["listed"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn a_digest_prefers_the_written_counts_of_cut_lists() {
        let d = digest(
            r#"{"valid?":false,"anomalies":{"G1c":[{"cycle":[1,2]}]},"anomaly-counts":{"G1c":5000},"anomalies-omitted":{"G1c":4999}}"#,
        );
        assert_eq!(d.anomaly_types, ["G1c"], "types from the anomalies map");
        assert_eq!(d.counts.get("G1c"), Some(&5000));
        assert!(d.previews["G1c"].contains("of 5000"));
    }

    #[test]
    fn a_digest_keeps_stats_warnings_and_the_checker_time() {
        let windows: Vec<Value> = (0..1500)
            .map(|i| serde_json::json!({"fault": "kill", "start-s": i, "end-s": i + 1, "targets": ["n1"]}))
            .collect();
        let json = serde_json::json!({
            "valid?": true,
            "stats": {"counts": {"txn": {"invoke": 10, "ok": 8, "fail": 1, "info": 1}},
                      "throughput": {"duration-s": 12.5}, "fault-windows": windows},
            "checker-timings": [{"analysis": "cycles", "seconds": 0.5}, {"analysis": "total", "seconds": 0.75}],
            "warnings": ["no fault took effect"],
        })
        .to_string();
        let d = digest(&json);
        let st = d.stats.unwrap();
        assert_eq!(st.counts["txn"].ok, 8);
        assert_eq!(st.throughput.duration_s, 12.5);
        assert_eq!(st.fault_windows.len(), 1000);
        assert_eq!(st.fault_windows_omitted, 500);
        assert_eq!(st.fault_windows[0].targets, ["n1"]);
        assert_eq!(d.checker_seconds, Some(0.75));
        assert_eq!(d.warnings, ["no fault took effect"]);
    }

    #[test]
    fn a_digest_refuses_what_is_not_an_object() {
        assert!(serde_json::from_str::<ResultsDigest>("[1,2]").is_err());
        assert!(serde_json::from_str::<ResultsDigest>("{\"valid?\": tru").is_err());
    }
}
