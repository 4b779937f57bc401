//! `soak.json`: what a soak adds to a run directory it ran, so that runs of
//! many nights (and many shards, many stores) line up as trends: the suite,
//! the cell, the night, the commit of the database under test, the outcome
//! as the suite judged it. Written by `harness soak` after the run ended;
//! read by `harness serve`'s `/trends` and `/api/runs`.

use super::RecordError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file name in a run directory.
pub const SOAK_JSON: &str = "soak.json";

/// A run as one cell of one night of a suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SoakTag {
    /// The suite's name.
    pub suite: String,
    /// The cell: the run's test name (test plus matrix values).
    pub cell: String,
    /// The cell key that chose its shard (`cell`, or `cell#k` for copy k).
    pub key: String,
    /// The night (`soak --night`, default the UTC date the soak started).
    pub night: String,
    /// The commit of the database under test (`soak --db-commit`), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_commit: Option<String>,
    /// `I/N` when the soak ran one shard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The harness version that ran it.
    pub harness_version: String,
    /// The run's seed.
    pub seed: u64,
    /// The suite's outcome (`valid`, `invalid`, `crashed`, …).
    pub outcome: String,
    /// The outcomes the suite accepts for it.
    pub expected: Vec<String>,
    /// Whether the outcome was one of them.
    pub as_expected: bool,
    /// Anomaly types found.
    pub anomaly_types: Vec<String>,
    /// Acknowledged writes lost (`results.json` `lost-writes.count`), if checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_writes: Option<u64>,
    /// The soak directory whose summary lists it.
    pub soak_dir: String,
    /// `soak --triage`: how often it reproduced, when it was triaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triage: Option<String>,
}

impl SoakTag {
    /// Reads `path`; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// The file cannot be read or has the wrong shape.
    pub fn load_if_exists(path: &Path) -> Result<Option<SoakTag>, RecordError> {
        super::record::load_if_exists(path)
    }

    /// Writes `path` whole.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        super::record::save(path, self)
    }
}
