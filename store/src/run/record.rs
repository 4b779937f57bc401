//! The typed run record: `test.json` is a [`RunMeta`], `results.json` a
//! [`RunResults`]. Every reader and writer of those two files goes through
//! these types (a test in `tests/` greps the sources for string-key reads).
//!
//! Key decisions:
//! - Versioned here: [`RunMeta::format`] (serialized as `schema_version`,
//!   the name the first release wrote) and [`RunResults::format`]. A field
//!   added later is `#[serde(default)]`, so a run written by an older
//!   release loads with the field missing (`None`, empty, 0) — the
//!   fixtures in `testdata/run-format/` are such runs.
//! - Fields this type does not know (a newer release's, a checker's own
//!   result fields such as a Jepsen workload's counters) are kept in
//!   `extra` and written back unchanged: reading and rewriting a record
//!   loses nothing.
//! - Older spellings (`test_name`, `harness_version`, `valid`,
//!   `anomaly_types`, `expected-consistency-model`, fields at the top level
//!   instead of under `config`) are answered by the accessor methods, the
//!   one place that knows them.

use super::stats::RunStats;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `test.json` format this release writes. 1: the first release
/// (an untyped literal); 2: written from [`RunMeta`].
pub const META_FORMAT: u32 = 2;

/// The `results.json` format this release writes. Files without the field
/// (0) are the checker's bare result map of the first release.
pub const RESULTS_FORMAT: u32 = 1;

/// A failure reading or writing a run record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read or written.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        cause: std::io::Error,
    },
    /// The file is not a record of this shape.
    #[error("{}: {cause}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        cause: serde_json::Error,
    },
}

/// The harness build that wrote a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HarnessBuild {
    /// Crate version.
    pub version: String,
    /// Git commit.
    pub commit: String,
}

/// One node of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeMeta {
    /// Node name.
    pub name: String,
    /// Host (or address) it was reached at.
    pub host: String,
}

/// `test.json`'s `config`: what the run was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[allow(missing_docs)] // Each field is the `harness run` flag of the same name.
pub struct RunConfig {
    pub db: Option<String>,
    pub workload: Option<String>,
    pub isolation: Option<String>,
    pub sim_bug: Option<String>,
    pub expected_consistency_model: Option<String>,
    pub concurrency: Option<u64>,
    pub rate: Option<f64>,
    pub time_limit_s: Option<f64>,
    pub ops: Option<u64>,
    pub op_timeout_s: Option<f64>,
    pub recovery_time_s: Option<f64>,
    /// The database URL with any password replaced by `***`.
    pub url: Option<String>,
    pub local: Option<bool>,
    pub key_count: Option<u64>,
    pub max_writes_per_key: Option<u64>,
    pub min_txn_length: Option<u64>,
    pub max_txn_length: Option<u64>,
    pub read_ratio: Option<f64>,
    pub final_read_batch: Option<u64>,
    pub check_time_limit_s: Option<f64>,
    /// A name list (`partition,kill`); older runs and peers wrote an array.
    #[serde(deserialize_with = "string_or_list", default)]
    pub nemesis: Option<String>,
    pub nemesis_interval_s: Option<f64>,
    pub partition: Option<String>,
    /// Fields of other releases, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `test.json`: what a run was, written when it starts and updated as it
/// ends (end time, error, summary, verdict).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMeta {
    /// The format version ([`META_FORMAT`] when written by this release).
    #[serde(rename = "schema_version", alias = "format")]
    pub format: u32,
    /// The test name (the run's parent directory).
    pub name: String,
    /// The generator seed.
    pub seed: Option<u64>,
    /// The nodes (objects; older runs and hand-written files: names).
    #[serde(deserialize_with = "nodes_of", default)]
    pub nodes: Vec<NodeMeta>,
    /// The build that ran it.
    pub harness: Option<HarnessBuild>,
    /// The process's command line.
    pub command_line: Vec<String>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// RFC 3339 start time.
    pub start_time: Option<String>,
    /// RFC 3339 end time; `None` while running or after a crash.
    pub end_time: Option<String>,
    /// The run directory when it was written.
    pub run_dir: Option<String>,
    /// What the run was asked to do.
    pub config: RunConfig,
    /// `harness run` flags that reproduce the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub run_flags: Vec<String>,
    /// Why setup failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_error: Option<String>,
    /// The error that ended the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The runner's summary (phases, op counts), as the runner wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
    /// The verdict (`true`, `false`, `unknown`), also in `results.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Every setting harness imposed on a database it started itself
    /// (`--local`: e.g. `synchronous_commit` = `off`), as the server ran.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub db_settings: BTreeMap<String, String>,
    /// Fields of other releases, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn extra_str(extra: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| extra.get(*n).and_then(Value::as_str))
        .map(str::to_string)
}

impl RunMeta {
    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read or is not a JSON object of this shape.
    pub fn load(path: &Path) -> Result<RunMeta, RecordError> {
        load(path)
    }

    /// Reads `path`; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// As [`RunMeta::load`], except a missing file.
    pub fn load_if_exists(path: &Path) -> Result<Option<RunMeta>, RecordError> {
        load_if_exists(path)
    }

    /// Parses `test.json` text.
    ///
    /// # Errors
    /// Not a JSON object of this shape.
    pub fn from_json(text: &[u8]) -> Result<RunMeta, serde_json::Error> {
        serde_json::from_slice(text)
    }

    /// Writes `path` whole (a temporary file renamed over it).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        save(path, self)
    }

    /// The test name, under any spelling a release wrote.
    pub fn test_name(&self) -> Option<String> {
        (!self.name.is_empty())
            .then(|| self.name.clone())
            .or_else(|| extra_str(&self.extra, &["test_name"]))
            .or_else(|| extra_str(&self.config.extra, &["name", "test_name"]))
    }

    /// The harness version, as `0.1.0 (abc1234)` (or the older flat
    /// `harness_version`).
    pub fn harness_version(&self) -> Option<String> {
        if let Some(h) = &self.harness
            && !h.version.is_empty()
        {
            return Some(if h.commit.is_empty() {
                h.version.clone()
            } else {
                format!("{} ({})", h.version, h.commit)
            });
        }
        extra_str(&self.extra, &["harness_version"])
            .or_else(|| extra_str(&self.config.extra, &["harness_version"]))
    }

    /// The start time, under any spelling.
    pub fn started(&self) -> Option<String> {
        self.start_time
            .clone()
            .or_else(|| extra_str(&self.extra, &["start-time", "started_at"]))
    }

    /// The database (`config.db`, or a top-level `db`).
    pub fn db(&self) -> Option<String> {
        self.config
            .db
            .clone()
            .or_else(|| extra_str(&self.extra, &["db"]))
    }

    /// The workload (`config.workload`, or a top-level `workload`).
    pub fn workload(&self) -> Option<String> {
        self.config
            .workload
            .clone()
            .or_else(|| extra_str(&self.extra, &["workload"]))
    }

    /// The nemesis (`config.nemesis`, or a top-level `nemesis`).
    pub fn nemesis(&self) -> Option<String> {
        self.config
            .nemesis
            .clone()
            .or_else(|| extra_str(&self.extra, &["nemesis"]))
    }

    /// The isolation level asked for.
    pub fn isolation(&self) -> Option<String> {
        self.config
            .isolation
            .clone()
            .or_else(|| extra_str(&self.extra, &["isolation"]))
    }

    /// The simulated bug, if any.
    pub fn sim_bug(&self) -> Option<String> {
        self.config
            .sim_bug
            .clone()
            .or_else(|| extra_str(&self.extra, &["sim_bug"]))
    }

    /// The consistency model the run was expected to satisfy, under any
    /// spelling a release wrote.
    pub fn expected_model(&self) -> Option<String> {
        const NAMES: &[&str] = &[
            "expected_consistency_model",
            "expected-consistency-model",
            "expected_model",
        ];
        self.config
            .expected_consistency_model
            .clone()
            .or_else(|| extra_str(&self.config.extra, NAMES))
            .or_else(|| extra_str(&self.extra, NAMES))
    }
}

/// A verdict as `results.json` spells it: `true`, `false` or `"unknown"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verdict {
    /// No anomaly the checked models forbid.
    True,
    /// An anomaly was found.
    False,
    /// Nothing could be decided (the default of a record without one).
    #[default]
    Unknown,
}

impl Verdict {
    /// `true`, `false` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::True => "true",
            Verdict::False => "false",
            Verdict::Unknown => "unknown",
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Verdict::True => s.serialize_bool(true),
            Verdict::False => s.serialize_bool(false),
            Verdict::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Bool(true) => Verdict::True,
            Value::Bool(false) => Verdict::False,
            Value::String(s) if s == "true" => Verdict::True,
            Value::String(s) if s == "false" => Verdict::False,
            _ => Verdict::Unknown,
        })
    }
}

/// How long one analysis of the checker took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckerTiming {
    /// The analysis (`checker::analysis::ANALYSES` name, or `total`).
    pub analysis: String,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// `results.json`: the checker's result map (Elle's keys) plus what
/// Jepsen's results carry beside it (`stats`, checker timings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResults {
    /// The verdict.
    #[serde(rename = "valid?", alias = "valid")]
    pub valid: Verdict,
    /// Why the verdict is what it is, when a policy decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The anomaly types found.
    #[serde(
        rename = "anomaly-types",
        alias = "anomaly_types",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub anomaly_types: Vec<String>,
    /// Type → the anomalies kept (at most `caps::MAX_ANOMALIES_PER_TYPE`),
    /// as the checker renders them.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub anomalies: Map<String, Value>,
    /// Type → how many were found, when some were left out.
    #[serde(rename = "anomaly-counts", skip_serializing_if = "BTreeMap::is_empty")]
    pub anomaly_counts: BTreeMap<String, u64>,
    /// Type → how many were left out.
    #[serde(
        rename = "anomalies-omitted",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub anomalies_omitted: BTreeMap<String, u64>,
    /// Models ruled out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not: Vec<String>,
    /// Models ruled out because a weaker one was.
    #[serde(rename = "also-not", skip_serializing_if = "Vec::is_empty")]
    pub also_not: Vec<String>,
    /// Which engine decided each level (complete checks), as the checker
    /// renders it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engines: Option<Value>,
    /// The format version ([`RESULTS_FORMAT`]; 0 for the first release).
    pub format: u32,
    /// Op counts, throughput, latencies and fault windows of the history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<RunStats>,
    /// How long each analysis took, in the order they ran, then `total`.
    #[serde(rename = "checker-timings", skip_serializing_if = "Vec::is_empty")]
    pub checker_timings: Vec<CheckerTiming>,
    /// Other result fields (a workload checker's own), kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunResults {
    /// The record of a checker result map (`CheckResult::to_json` or a
    /// workload checker's), stamped with this release's format.
    ///
    /// # Errors
    /// `value` is not a JSON object.
    pub fn from_value(value: Value) -> Result<RunResults, serde_json::Error> {
        let mut r: RunResults = serde_json::from_value(value)?;
        r.format = RESULTS_FORMAT;
        Ok(r)
    }

    /// [`RunResults::from_value`] that loses nothing: a map whose fields do
    /// not fit the typed ones is kept whole in `extra`, with its verdict
    /// (`valid?`: `true`, `false`, else unknown), and the error returned
    /// beside it for the caller to warn about.
    pub fn from_value_lossless(value: Value) -> (RunResults, Option<serde_json::Error>) {
        match RunResults::from_value(value.clone()) {
            Ok(r) => (r, None),
            Err(e) => {
                let mut extra = match value {
                    Value::Object(m) => m,
                    other => Map::from_iter([("result".to_string(), other)]),
                };
                let valid = match extra.remove("valid?") {
                    Some(Value::Bool(true)) => Verdict::True,
                    Some(Value::Bool(false)) => Verdict::False,
                    _ => Verdict::Unknown,
                };
                let r = RunResults {
                    valid,
                    extra,
                    format: RESULTS_FORMAT,
                    ..RunResults::default()
                };
                (r, Some(e))
            }
        }
    }

    /// The record as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read or is not a JSON object of this shape.
    pub fn load(path: &Path) -> Result<RunResults, RecordError> {
        load(path)
    }

    /// Reads `path`; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// As [`RunResults::load`], except a missing file.
    pub fn load_if_exists(path: &Path) -> Result<Option<RunResults>, RecordError> {
        load_if_exists(path)
    }

    /// Parses `results.json` text.
    ///
    /// # Errors
    /// Not a JSON object of this shape.
    pub fn from_json(text: &[u8]) -> Result<RunResults, serde_json::Error> {
        serde_json::from_slice(text)
    }

    /// Writes `path` whole (a temporary file renamed over it).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        save(path, self)
    }

    /// The anomaly types: `anomaly-types`, else the keys of `anomalies`.
    pub fn types(&self) -> Vec<String> {
        if self.anomaly_types.is_empty() {
            self.anomalies.keys().cloned().collect()
        } else {
            self.anomaly_types.clone()
        }
    }

    /// How many anomalies of `ty` were found (counted past the cap).
    pub fn found(&self, ty: &str) -> u64 {
        let kept = self
            .anomalies
            .get(ty)
            .and_then(Value::as_array)
            .map_or(0, |a| a.len() as u64);
        self.anomaly_counts
            .get(ty)
            .copied()
            .unwrap_or(kept)
            .max(kept)
    }
}

pub(super) fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, RecordError> {
    let bytes = std::fs::read(path).map_err(|cause| RecordError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
    serde_json::from_slice(&bytes).map_err(|cause| RecordError::Parse {
        path: path.to_path_buf(),
        cause,
    })
}

pub(super) fn load_if_exists<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, RecordError> {
    match load(path) {
        Ok(v) => Ok(Some(v)),
        Err(RecordError::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

pub(super) fn save<T: Serialize>(path: &Path, value: &T) -> Result<(), RecordError> {
    let io = |cause| RecordError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let text = serde_json::to_string_pretty(value).map_err(|cause| RecordError::Parse {
        path: path.to_path_buf(),
        cause,
    })?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(super::TMP_SUFFIX);
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text + "\n").map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A string, or a list of strings joined with commas (`["partition"]` as
/// older runs wrote the nemesis); anything else reads as absent.
fn string_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::Deserialize;
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => None,
    })
}

/// Nodes as objects `{name, host}` or as bare names; other items are skipped.
fn nodes_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<NodeMeta>, D::Error> {
    use serde::Deserialize;
    let serde_json::Value::Array(items) = serde_json::Value::deserialize(d)? else {
        return Ok(Vec::new());
    };
    Ok(items
        .into_iter()
        .filter_map(|v| match v {
            serde_json::Value::String(name) => Some(NodeMeta {
                name,
                host: String::new(),
            }),
            v => serde_json::from_value(v).ok(),
        })
        .collect())
}
