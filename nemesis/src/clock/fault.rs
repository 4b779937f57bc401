//! The `clock` package's faults ([`ClockFault`]) and how they are drawn
//! ([`draw`], Jepsen's `clock-package`): a uniform mix of reset, bump and
//! strobe on a random non-empty subset of the nodes.
//!
//! - bump: per node `±1.5^(6 + 25·U)` ms (11 ms … 288 s, log-uniform,
//!   random sign), added to the node's offset;
//! - strobe: `delta = 2^(2 + 16·U)` ms (4 ms … 262 s), `period =
//!   2^(10·U)` ms (1 … 1024 ms), duration uniform up to the package
//!   interval and at most [`MAX_STROBE`];
//! - reset: `+0`.
//!
//! Values in the history: a bump `{"bump": {node: delta_s}}`, a strobe
//! `{"strobe": {node: {"delta": s, "period": s, "duration": s}}}`, a reset
//! `{"reset": [nodes]}`.

use crate::rng::Rng;
use std::time::Duration;
use store::{Data, F};

/// The longest strobe drawn (an op lasts as long as its strobe, and the
/// nemesis has one op in flight).
pub const MAX_STROBE: Duration = Duration::from_secs(10);

/// One clock op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockFault {
    /// Add `delta_ms` to each node's offset.
    Bump(Vec<(String, i64)>),
    /// Alternate `base + delta` and `base` every period, for a duration.
    Strobe {
        /// The nodes.
        nodes: Vec<String>,
        /// The shift while strobed.
        delta_ms: i64,
        /// Time between flips.
        period_ms: u64,
        /// How long it strobes.
        duration_ms: u64,
    },
    /// Offsets back to zero.
    Reset(Vec<String>),
}

impl ClockFault {
    /// `start-clock` for a bump or a strobe, `stop-clock` for a reset.
    pub fn f(&self) -> F {
        match self {
            ClockFault::Reset(_) => F::StopClock,
            _ => F::StartClock,
        }
    }

    /// The nodes it acts on.
    pub fn nodes(&self) -> Vec<String> {
        match self {
            ClockFault::Bump(b) => b.iter().map(|(n, _)| n.clone()).collect(),
            ClockFault::Strobe { nodes, .. } | ClockFault::Reset(nodes) => nodes.clone(),
        }
    }

    /// Its key in the op's value (`bump`, `strobe`, `reset`).
    pub fn name(&self) -> &'static str {
        match self {
            ClockFault::Bump(_) => "bump",
            ClockFault::Strobe { .. } => "strobe",
            ClockFault::Reset(_) => "reset",
        }
    }

    /// What it asks, as a history value (without its key).
    pub fn detail(&self) -> Data {
        let s = |ms: f64| Data::Float(ms / 1000.0);
        match self {
            ClockFault::Bump(b) => Data::Map(
                b.iter()
                    .map(|(n, d)| (Data::Str(n.clone()), s(*d as f64)))
                    .collect(),
            ),
            ClockFault::Strobe {
                nodes,
                delta_ms,
                period_ms,
                duration_ms,
            } => {
                let one = Data::Map(vec![
                    (Data::Str("delta".into()), s(*delta_ms as f64)),
                    (Data::Str("period".into()), s(*period_ms as f64)),
                    (Data::Str("duration".into()), s(*duration_ms as f64)),
                ]);
                Data::Map(
                    nodes
                        .iter()
                        .map(|n| (Data::Str(n.clone()), one.clone()))
                        .collect(),
                )
            }
            ClockFault::Reset(nodes) => crate::fault::nodes_data(nodes),
        }
    }

    /// The op's value: `{name: detail}`.
    pub fn value(&self) -> Data {
        Data::Map(vec![(Data::Str(self.name().into()), self.detail())])
    }
}

/// A uniform number in `[0, 1)`.
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A random non-empty subset of `nodes` (in test order).
fn subset(nodes: &[String], rng: &mut Rng) -> Vec<String> {
    if nodes.is_empty() {
        return Vec::new();
    }
    let n = nodes.len().min(63);
    let mask = 1 + rng.next_u64() % ((1u64 << n) - 1);
    nodes
        .iter()
        .take(n)
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, x)| x.clone())
        .collect()
}

/// A bump of `±1.5^(6 + 25·U)` ms.
pub fn bump_ms(rng: &mut Rng) -> i64 {
    let mag = 1.5f64.powf(6.0 + 25.0 * unit(rng)).round() as i64;
    if rng.below(2) == 0 { mag } else { -mag }
}

/// The next op of the clock package; strobes last at most
/// `min(interval, MAX_STROBE)`.
pub fn draw(nodes: &[String], interval: Duration, rng: &mut Rng) -> ClockFault {
    let targets = subset(nodes, rng);
    match rng.below(3) {
        0 => ClockFault::Reset(targets),
        1 => ClockFault::Bump(targets.into_iter().map(|n| (n, bump_ms(rng))).collect()),
        _ => {
            let cap = interval.min(MAX_STROBE).as_millis() as f64;
            ClockFault::Strobe {
                nodes: targets,
                delta_ms: 2f64.powf(2.0 + 16.0 * unit(rng)).round() as i64,
                period_ms: 2f64.powf(10.0 * unit(rng)).round().max(1.0) as u64,
                duration_ms: (cap * unit(rng)).round().max(1.0) as u64,
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn draws_mix_all_three_within_jepsens_ranges() {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let mut rng = Rng::stream(7, "clock");
        let (mut bumps, mut strobes, mut resets) = (0, 0, 0);
        for _ in 0..300 {
            let f = draw(&nodes, Duration::from_secs(4), &mut rng);
            assert!(!f.nodes().is_empty());
            match &f {
                ClockFault::Bump(b) => {
                    bumps += 1;
                    for (_, d) in b {
                        assert!((11..=288_000).contains(&d.abs()), "{d}");
                    }
                    assert_eq!(f.f(), F::StartClock);
                }
                ClockFault::Strobe {
                    delta_ms,
                    period_ms,
                    duration_ms,
                    ..
                } => {
                    strobes += 1;
                    assert!((4..=262_144).contains(delta_ms));
                    assert!((1..=1024).contains(period_ms));
                    assert!((1..=4000).contains(duration_ms));
                }
                ClockFault::Reset(_) => {
                    resets += 1;
                    assert_eq!(f.f(), F::StopClock);
                }
            }
        }
        assert!(
            bumps > 60 && strobes > 60 && resets > 60,
            "{bumps} {strobes} {resets}"
        );
    }

    #[test]
    fn values_name_the_op_and_give_seconds() {
        let b = ClockFault::Bump(vec![("n1".into(), -1500)]);
        assert_eq!(
            b.value(),
            Data::Map(vec![(
                Data::Str("bump".into()),
                Data::Map(vec![(Data::Str("n1".into()), Data::Float(-1.5))])
            )])
        );
        let r = ClockFault::Reset(vec!["n2".into()]);
        assert_eq!(r.name(), "reset");
        assert_eq!(r.nodes(), vec!["n2".to_string()]);
    }
}
