//! Which engine decided each serializable / snapshot-isolation level of a
//! rw-register check: Elle's inference (version orders that reads give
//! away, then cycle search) or the complete check ([`crate::sat`]).
//!
//! Elle's result map has no place for this, so it travels beside the
//! [`crate::CheckResult`] ([`crate::check_with_engines`]); the CLI adds it
//! as an `engines` entry only when the complete check was asked for, so
//! Elle-compatible output of every other check is unchanged.

use crate::model::ConsistencyModel;
use serde_json::{Value, json};
use store::OpIndex;

/// Name of Elle's inference engine in reports.
pub const ELLE: &str = "elle-inference";
/// Name of the complete check in reports.
pub const SAT: &str = "sat (complete)";

/// One engine's outcome for one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The level holds (for inference: no forbidden cycle was found).
    Valid,
    /// A forbidden cycle was found.
    Invalid,
    /// Undecided, and why (budget exhausted).
    Unknown(String),
    /// The engine did not run, and why.
    NotRun(String),
}

impl Outcome {
    /// `valid`, `invalid`, `unknown` or `not run`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Valid => "valid",
            Outcome::Invalid => "invalid",
            Outcome::Unknown(_) => "unknown",
            Outcome::NotRun(_) => "not run",
        }
    }

    /// `as_str`, with the reason in parentheses when there is one.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Unknown(r) | Outcome::NotRun(r) => format!("{} ({r})", self.as_str()),
            _ => self.as_str().to_string(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Outcome::Unknown(r) | Outcome::NotRun(r) => {
                json!({"outcome": self.as_str(), "reason": r})
            }
            _ => json!({"outcome": self.as_str()}),
        }
    }
}

/// How one level was decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelReport {
    /// The level (model) decided.
    pub model: ConsistencyModel,
    /// Elle's inference.
    pub inference: Outcome,
    /// The complete check.
    pub complete: Outcome,
    /// The commit order the complete check found, when it said valid.
    pub witness: Option<Vec<OpIndex>>,
}

impl LevelReport {
    /// The engine whose outcome the verdict for this level rests on:
    /// inference when it found a cycle or the complete check did not run,
    /// the complete check otherwise (also when it could not decide: its
    /// `unknown` is the level's, since inference finding no cycle proves
    /// nothing).
    pub fn decided_by(&self) -> &'static str {
        match self.complete {
            _ if self.inference == Outcome::Invalid => ELLE,
            Outcome::Valid | Outcome::Invalid | Outcome::Unknown(_) => SAT,
            Outcome::NotRun(_) => ELLE,
        }
    }

    /// Whether this level's outcome is `unknown`: the verdict of any model
    /// implying the level cannot be `valid`.
    pub fn undecided(&self) -> bool {
        matches!(self.outcome(), Outcome::Unknown(_))
    }

    /// Whether the complete check ran out of budget.
    pub fn budget_exhausted(&self) -> bool {
        matches!(&self.complete, Outcome::Unknown(r) if r.contains("budget"))
    }

    /// The level's outcome after both engines: invalid if either found a
    /// cycle, else the complete check's (`unknown` when its budget ran out
    /// or its witness did not replay — never `valid`), else inference's.
    pub fn outcome(&self) -> &Outcome {
        if self.decided_by() == SAT {
            &self.complete
        } else {
            &self.inference
        }
    }

    /// One line: `serializable: invalid, decided by sat (complete)
    /// (elle-inference: valid)`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{}: {}, decided by {} ({ELLE}: {}; {SAT}: {})",
            self.model.name(),
            self.outcome().as_str(),
            self.decided_by(),
            self.inference.describe(),
            self.complete.describe()
        );
        if self.budget_exhausted() {
            s += "; the complete check's budget was exhausted";
        }
        s
    }

    /// `{"model", "decided-by", "elle-inference": {...}, "sat (complete)":
    /// {...}}`, plus `"witness"` (op indices) when `with_witness`.
    pub fn to_json(&self, with_witness: bool) -> Value {
        let mut v = json!({
            "model": self.model.name(),
            "valid?": match self.outcome() {
                Outcome::Valid => json!(true),
                Outcome::Invalid => json!(false),
                _ => json!("unknown"),
            },
            "decided-by": self.decided_by(),
            "budget-exhausted": self.budget_exhausted(),
            ELLE: self.inference.to_json(),
            SAT: self.complete.to_json(),
        });
        if with_witness && let Some(w) = &self.witness {
            v["witness"] = json!(w.iter().map(|i| i.0).collect::<Vec<u64>>());
        }
        v
    }

    /// The witness as one line: `serializable: 3 5 9 …` (op indices of the
    /// committed transactions in a commit order consistent with every read).
    pub fn witness_line(&self) -> Option<String> {
        let w = self.witness.as_ref()?;
        let idx: Vec<String> = w.iter().map(|i| i.0.to_string()).collect();
        Some(format!("{}: {}", self.model.name(), idx.join(" ")))
    }
}

/// `engines` as a JSON array.
pub fn to_json(reports: &[LevelReport], with_witness: bool) -> Value {
    Value::Array(reports.iter().map(|r| r.to_json(with_witness)).collect())
}
