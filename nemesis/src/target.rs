//! Which nodes a fault hits: Jepsen's node specs (`one`, `minority`,
//! `majority`, `minority-third`, `all`, `primaries`, or named nodes).
//!
//! A package draws one spec per fault, uniformly from its list, and resolves
//! it against the test's nodes with its own seeded [`Rng`]. Named nodes are
//! written `n1+n2` (a `+` list, since `,` separates specs).
//!
//! Key decision: a spec the database cannot honour (`primaries` without a
//! notion of primaries, a node that is not in the test, `minority-third` of
//! fewer than 4 nodes) is a [`TargetError`] found by [`validate`] before the
//! run starts, never a silent fallback to another spec.

use crate::rng::Rng;
use std::fmt;
use std::str::FromStr;

/// A node spec.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// One random node.
    One,
    /// `majority(n) − 1` random nodes (at least one).
    Minority,
    /// `floor(n/2) + 1` random nodes.
    Majority,
    /// `floor((n − 1)/3)` random nodes (needs at least 4 nodes).
    MinorityThird,
    /// Every node.
    All,
    /// A random non-empty subset of the database's primaries.
    Primaries,
    /// Exactly these nodes.
    Nodes(Vec<String>),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::One => f.write_str("one"),
            Target::Minority => f.write_str("minority"),
            Target::Majority => f.write_str("majority"),
            Target::MinorityThird => f.write_str("minority-third"),
            Target::All => f.write_str("all"),
            Target::Primaries => f.write_str("primaries"),
            Target::Nodes(n) => f.write_str(&n.join("+")),
        }
    }
}

impl FromStr for Target {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "one" => Target::One,
            "minority" => Target::Minority,
            "majority" => Target::Majority,
            "minority-third" => Target::MinorityThird,
            "all" => Target::All,
            "primaries" => Target::Primaries,
            "" => return Err(TargetError::Empty),
            other => {
                let names: Vec<String> = other.split('+').map(|n| n.trim().to_string()).collect();
                if names.iter().any(|n| n.is_empty()) {
                    return Err(TargetError::Empty);
                }
                Target::Nodes(names)
            }
        })
    }
}

/// A target that cannot be parsed or honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// An empty entry.
    #[error(
        "empty target (expected one, minority, majority, minority-third, all, primaries or nodes as n1+n2)"
    )]
    Empty,
    /// `primaries` for a database without primaries.
    #[error("target primaries: {db} has no primaries (every node is equal)")]
    NoPrimaries {
        /// The database's name.
        db: String,
    },
    /// A named node that is not in the test.
    #[error("target node {node:?}: not a node of this test (nodes: {nodes})")]
    UnknownNode {
        /// The name given.
        node: String,
        /// The test's nodes, comma-separated.
        nodes: String,
    },
    /// A spec that selects no node for this many nodes.
    #[error("target {spec}: selects no node of {n} (needs at least {min} nodes)")]
    TooFewNodes {
        /// The spec.
        spec: String,
        /// Node count.
        n: usize,
        /// The least node count it needs.
        min: usize,
    },
}

/// Parses a comma list of specs (`one,majority,n1+n2`).
///
/// # Errors
/// [`TargetError::Empty`] for an empty entry.
pub fn parse_targets(s: &str) -> Result<Vec<Target>, TargetError> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let t: Target = part.parse()?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// Checks that every spec selects at least one node of `nodes` (the
/// database's `primaries` for [`Target::Primaries`]); `db` names the
/// database in the error.
///
/// # Errors
/// The first spec that cannot be honoured, naming node and reason.
pub fn validate(
    targets: &[Target],
    nodes: &[String],
    primaries: &[String],
    db: &str,
) -> Result<(), TargetError> {
    let n = nodes.len();
    for t in targets {
        match t {
            Target::Primaries if primaries.is_empty() => {
                return Err(TargetError::NoPrimaries { db: db.to_string() });
            }
            Target::Nodes(names) => {
                if let Some(bad) = names.iter().find(|x| !nodes.contains(x)) {
                    return Err(TargetError::UnknownNode {
                        node: bad.clone(),
                        nodes: nodes.join(","),
                    });
                }
            }
            Target::MinorityThird if n < 4 => {
                return Err(TargetError::TooFewNodes {
                    spec: t.to_string(),
                    n,
                    min: 4,
                });
            }
            _ if n == 0 => {
                return Err(TargetError::TooFewNodes {
                    spec: t.to_string(),
                    n,
                    min: 1,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// `floor(n/2) + 1`.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// The nodes `target` selects (sorted), drawn with `rng`. Specs that
/// [`validate`] rejects select nothing here.
pub fn resolve(
    target: &Target,
    nodes: &[String],
    primaries: &[String],
    rng: &mut Rng,
) -> Vec<String> {
    let n = nodes.len();
    let mut pool: Vec<String> = match target {
        Target::Primaries => nodes
            .iter()
            .filter(|x| primaries.contains(x))
            .cloned()
            .collect(),
        Target::Nodes(names) => {
            let mut v: Vec<String> = names
                .iter()
                .filter(|x| nodes.contains(x))
                .cloned()
                .collect();
            v.sort();
            v.dedup();
            return v;
        }
        _ => nodes.to_vec(),
    };
    rng.shuffle(&mut pool);
    let count = match target {
        Target::One => 1,
        Target::Minority => majority(n).saturating_sub(1).max(1),
        Target::Majority => majority(n),
        Target::MinorityThird => n.saturating_sub(1) / 3,
        Target::All => n,
        Target::Primaries => 1 + rng.below(pool.len()),
        Target::Nodes(_) => 0,
    };
    let mut out: Vec<String> = pool.into_iter().take(count).collect();
    out.sort();
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn specs_select_jepsen_counts() {
        let ns = nodes(5);
        let mut rng = Rng::new(3);
        let count = |t: Target, rng: &mut Rng| resolve(&t, &ns, &[], rng).len();
        assert_eq!(count(Target::One, &mut rng), 1);
        assert_eq!(count(Target::Minority, &mut rng), 2);
        assert_eq!(count(Target::Majority, &mut rng), 3);
        assert_eq!(count(Target::MinorityThird, &mut rng), 1);
        assert_eq!(count(Target::All, &mut rng), 5);
        let named = resolve(&"n4+n2".parse().unwrap(), &ns, &[], &mut rng);
        assert_eq!(named, vec!["n2", "n4"]);
        let prim = vec!["n3".to_string()];
        assert_eq!(resolve(&Target::Primaries, &ns, &prim, &mut rng), prim);
        let three = nodes(3);
        assert_eq!(resolve(&Target::Minority, &three, &[], &mut rng).len(), 1);
        assert_eq!(resolve(&Target::Majority, &three, &[], &mut rng).len(), 2);
    }

    #[test]
    fn targets_the_database_cannot_honour_are_errors_naming_the_reason() {
        let ns = nodes(3);
        let ts = parse_targets("one,primaries").unwrap();
        let e = validate(&ts, &ns, &[], "sqlite").unwrap_err();
        assert!(e.to_string().contains("sqlite has no primaries"), "{e}");
        let e = validate(&parse_targets("n1+n9").unwrap(), &ns, &[], "x").unwrap_err();
        assert!(
            e.to_string().contains("\"n9\"") && e.to_string().contains("n1,n2,n3"),
            "{e}"
        );
        let e = validate(&[Target::MinorityThird], &ns, &[], "x").unwrap_err();
        assert!(e.to_string().contains("at least 4"), "{e}");
        assert!(validate(&[Target::MinorityThird], &nodes(4), &[], "x").is_ok());
        assert!(
            validate(
                &parse_targets("one,majority,all,n2").unwrap(),
                &ns,
                &[],
                "x"
            )
            .is_ok()
        );
        assert_eq!(parse_targets("one,,all"), Err(TargetError::Empty));
        assert_eq!(parse_targets("n1+").unwrap_err(), TargetError::Empty);
    }
}
