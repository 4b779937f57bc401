//! The `clock` package's faults ([`ClockFault`]) and how they are drawn
//! ([`draw`], Jepsen's `clock-package`): a uniform mix of reset, bump and
//! strobe on a random non-empty subset of the nodes.
//!
//! - bump: per node `±1.5^(6 + 25·U)` ms (11 ms … 288 s, log-uniform,
//!   random sign), added to the node's offset;
//! - strobe: `delta = 2^(2 + 16·U)` ms (4 ms … 262 s), `period =
//!   2^(10·U)` ms (1 … 1024 ms), duration uniform up to the package
//!   interval and at most [`MAX_STROBE`];
//! - reset: `+0`;
//! - skew (only with `--clock-rate F`, [`RateFactor`]): per node a rate
//!   uniform in `[max/F, max]`, `max = 2/(1 + 1/F)` (Jepsen's
//!   `rand-factor`: the fastest clock runs at most F times the slowest),
//!   written as `+<offset> x<rate>` and applied by restarting the node's
//!   database, since libfaketime measures a rate from process start.
//!
//! `--clock-mix` picks other draws, CockroachDB's roachtest nemeses:
//! `strobe-skews` (every op strobes every node by 200 ms every 10 ms for
//! the interval, at most [`MAX_STROBE`]) and `subcritical-skews` (every op
//! sets each node's offset to +200 ms with probability ½, else to 0:
//! below CockroachDB's 250 ms maximum offset) ([`ClockMix`]).
//!
//! Values in the history: a bump `{"bump": {node: delta_s}}`, a set
//! `{"set": {node: offset_s}}`, a strobe
//! `{"strobe": {node: {"delta": s, "period": s, "duration": s}}}`, a reset
//! `{"reset": [nodes]}`, a skew `{"skew": {node: rate}}`.

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
    /// Put each node's offset at `ms` (absolute, not added).
    Set(Vec<(String, i64)>),
    /// Offsets back to zero (and rates back to 1).
    Reset(Vec<String>),
    /// Run each node's clock at a rate, in thousandths (1050 = x1.05;
    /// restarts its database).
    Skew(Vec<(String, u32)>),
}

/// `--clock-rate F`: the clock package also draws rate skews whose fastest
/// clock runs at most `F` times the slowest (`F` in (1, 10], kept in
/// thousandths so plans compare exactly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateFactor {
    milli: u32,
}

impl RateFactor {
    /// Parses `F` (e.g. `1.1`).
    ///
    /// # Errors
    /// Not a number in (1, 10].
    pub fn parse(s: &str) -> Result<RateFactor, String> {
        let f: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("--clock-rate {s:?}: not a number"))?;
        let milli = (f * 1000.0).round();
        if !(1001.0..=10_000.0).contains(&milli) {
            return Err(format!(
                "--clock-rate {s}: give a factor above 1 and at most 10 (e.g. 1.1)"
            ));
        }
        Ok(RateFactor {
            milli: milli as u32,
        })
    }

    /// The factor.
    pub fn value(self) -> f64 {
        f64::from(self.milli) / 1000.0
    }

    /// The range rates are drawn from: `max = 2/(1 + 1/F)`, `min = max/F`.
    pub fn range(self) -> (f64, f64) {
        let f = self.value();
        let max = 2.0 / (1.0 + 1.0 / f);
        (max / f, max)
    }
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
            ClockFault::Bump(b) | ClockFault::Set(b) => b.iter().map(|(n, _)| n.clone()).collect(),
            ClockFault::Strobe { nodes, .. } | ClockFault::Reset(nodes) => nodes.clone(),
            ClockFault::Skew(s) => s.iter().map(|(n, _)| n.clone()).collect(),
        }
    }

    /// Its key in the op's value (`bump`, `strobe`, `reset`).
    pub fn name(&self) -> &'static str {
        match self {
            ClockFault::Bump(_) => "bump",
            ClockFault::Set(_) => "set",
            ClockFault::Strobe { .. } => "strobe",
            ClockFault::Reset(_) => "reset",
            ClockFault::Skew(_) => "skew",
        }
    }

    /// What it asks, as a history value (without its key).
    pub fn detail(&self) -> Data {
        let s = |ms: f64| Data::Float(ms / 1000.0);
        match self {
            ClockFault::Bump(b) | ClockFault::Set(b) => Data::Map(
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
            ClockFault::Skew(s) => Data::Map(
                s.iter()
                    .map(|(n, r)| (Data::Str(n.clone()), Data::Float(f64::from(*r) / 1e3)))
                    .collect(),
            ),
        }
    }

    /// A set as the bumps that reach it from the offsets `current_s`
    /// gives (seconds); any other op as it is.
    pub fn as_bumps(&self, current_s: impl Fn(&str) -> f64) -> ClockFault {
        match self {
            ClockFault::Set(s) => ClockFault::Bump(
                s.iter()
                    .map(|(n, ms)| (n.clone(), ms - (current_s(n) * 1000.0).round() as i64))
                    .collect(),
            ),
            other => other.clone(),
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

/// `--clock-mix`: how the clock package draws its ops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockMix {
    /// Jepsen's: a uniform mix of reset, bump and strobe (and skew with
    /// `--clock-rate`).
    #[default]
    Jepsen,
    /// roachtest's `strobe-skews`: strobe every node, 200 ms, every 10 ms.
    StrobeSkews,
    /// roachtest's `subcritical-skews`: each node at +200 ms (p = ½) or 0.
    SubcriticalSkews,
}

impl ClockMix {
    /// Every mix with its `--clock-mix` name.
    pub const ALL: [(ClockMix, &'static str); 3] = [
        (ClockMix::Jepsen, "jepsen"),
        (ClockMix::StrobeSkews, "strobe-skews"),
        (ClockMix::SubcriticalSkews, "subcritical-skews"),
    ];
}

impl std::str::FromStr for ClockMix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClockMix::ALL
            .iter()
            .find(|(_, n)| *n == s.trim())
            .map(|(m, _)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = ClockMix::ALL.iter().map(|(_, n)| *n).collect();
                format!("--clock-mix {s:?}: expected one of {}", names.join(", "))
            })
    }
}

/// The next op of the clock package under `mix` (roachtest's mixes
/// ignore `rate`).
pub fn draw_mix(
    mix: ClockMix,
    nodes: &[String],
    interval: Duration,
    rate: Option<RateFactor>,
    rng: &mut Rng,
) -> ClockFault {
    match mix {
        ClockMix::Jepsen => draw(nodes, interval, rate, rng),
        ClockMix::StrobeSkews => ClockFault::Strobe {
            nodes: nodes.to_vec(),
            delta_ms: 200,
            period_ms: 10,
            duration_ms: interval.min(MAX_STROBE).as_millis().max(1) as u64,
        },
        ClockMix::SubcriticalSkews => ClockFault::Set(
            nodes
                .iter()
                .map(|n| (n.clone(), if rng.below(2) == 0 { 200 } else { 0 }))
                .collect(),
        ),
    }
}

/// The next op of the clock package; strobes last at most
/// `min(interval, MAX_STROBE)`; skews only with a `rate` factor (without
/// one the draws are those of a run without `--clock-rate`).
pub fn draw(
    nodes: &[String],
    interval: Duration,
    rate: Option<RateFactor>,
    rng: &mut Rng,
) -> ClockFault {
    let targets = subset(nodes, rng);
    match rng.below(if rate.is_some() { 4 } else { 3 }) {
        0 => ClockFault::Reset(targets),
        3 => {
            let (lo, hi) = rate.map_or((1.0, 1.0), RateFactor::range);
            ClockFault::Skew(
                targets
                    .into_iter()
                    .map(|n| {
                        let r = lo + (hi - lo) * unit(rng);
                        (n, (r * 1e3).round().max(1.0) as u32)
                    })
                    .collect(),
            )
        }
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
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn draws_mix_all_three_within_jepsens_ranges() {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let mut rng = Rng::stream(7, "clock");
        let (mut bumps, mut strobes, mut resets, mut skews) = (0, 0, 0, 0);
        for _ in 0..300 {
            let f = draw(&nodes, Duration::from_secs(4), None, &mut rng);
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
                ClockFault::Skew(_) => skews += 1,
                ClockFault::Set(_) => panic!("no set in Jepsen's mix: {f:?}"),
            }
        }
        assert_eq!(skews, 0, "no skew without --clock-rate");
        assert!(
            bumps > 60 && strobes > 60 && resets > 60,
            "{bumps} {strobes} {resets}"
        );
    }

    #[test]
    fn skews_only_with_a_factor_and_within_jepsens_rand_factor_range() {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let f = RateFactor::parse("1.1").unwrap();
        let (lo, hi) = f.range();
        assert!((hi / lo - 1.1).abs() < 1e-9 && hi > 1.0 && lo < 1.0);
        let mut rng = Rng::stream(7, "clock");
        let mut skews = 0;
        for _ in 0..200 {
            if let ClockFault::Skew(s) = draw(&nodes, Duration::from_secs(4), Some(f), &mut rng) {
                skews += 1;
                for (_, r) in &s {
                    let r = f64::from(*r) / 1e3;
                    assert!(r >= lo - 1e-3 && r <= hi + 1e-3, "{r}");
                }
            }
        }
        assert!(skews > 20, "{skews}");
        // Without a factor the stream is that of a run without skews.
        let (mut a, mut b) = (Rng::stream(9, "clock"), Rng::stream(9, "clock"));
        for _ in 0..50 {
            let x = draw(&nodes, Duration::from_secs(4), None, &mut a);
            let y = draw(&nodes, Duration::from_secs(4), None, &mut b);
            assert_eq!(x, y);
        }
        for bad in ["1", "0.9", "x", "11"] {
            assert!(RateFactor::parse(bad).is_err(), "{bad}");
        }
        let v = ClockFault::Skew(vec![("n1".into(), 1050)]).value();
        assert_eq!(
            v,
            Data::Map(vec![(
                Data::Str("skew".into()),
                Data::Map(vec![(Data::Str("n1".into()), Data::Float(1.05))])
            )])
        );
    }

    #[test]
    fn roachtest_mixes_strobe_everyone_or_set_subcritical_offsets() {
        let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
        let mut rng = Rng::stream(3, "clock");
        let s = draw_mix(
            ClockMix::StrobeSkews,
            &nodes,
            Duration::from_secs(30),
            None,
            &mut rng,
        );
        assert_eq!(
            s,
            ClockFault::Strobe {
                nodes: nodes.clone(),
                delta_ms: 200,
                period_ms: 10,
                duration_ms: 10_000
            }
        );
        let (mut at200, mut at0) = (0, 0);
        for _ in 0..100 {
            let f = draw_mix(
                ClockMix::SubcriticalSkews,
                &nodes,
                Duration::from_secs(5),
                None,
                &mut rng,
            );
            let ClockFault::Set(v) = &f else {
                panic!("{f:?}")
            };
            assert_eq!(f.nodes(), nodes);
            for (_, ms) in v {
                match ms {
                    200 => at200 += 1,
                    0 => at0 += 1,
                    _ => panic!("{ms}"),
                }
            }
        }
        assert!(at200 > 100 && at0 > 100, "{at200} {at0}");
        // A set becomes the bumps from the current offsets.
        let set = ClockFault::Set(vec![("n1".into(), 200), ("n2".into(), 0)]);
        let cur = |n: &str| if n == "n1" { 0.05 } else { 1.5 };
        assert_eq!(
            set.as_bumps(cur),
            ClockFault::Bump(vec![("n1".into(), 150), ("n2".into(), -1500)])
        );
        assert_eq!(set.name(), "set");
        assert_eq!(set.f(), F::StartClock);
        assert_eq!("subcritical-skews".parse(), Ok(ClockMix::SubcriticalSkews));
        assert!(
            "x".parse::<ClockMix>()
                .unwrap_err()
                .contains("strobe-skews")
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
