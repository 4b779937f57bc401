//! The flags that shape fault packages, for the shrinker: a candidate that
//! drops a package drops the flags that shaped it (a run refuses them).

use super::set;

/// The flags that shape fault packages, with the packages they shape
/// (empty: any package).
const SHAPES: &[(&str, &[&str])] = &[
    ("--nemesis-interval", &[]),
    ("--nemesis-schedule", &[]),
    ("--initial-quiet-period", &[]),
    ("--nemesis-stable-period", &[]),
    ("--choreography-hold", &["part-kill", "pause-kill"]),
    ("--partition", &["partition"]),
    ("--kill-targets", &["kill"]),
    ("--pause-targets", &["pause"]),
    ("--packet", &["packet"]),
    ("--packet-targets", &["packet"]),
    ("--clock-rate", &["clock"]),
    ("--clock-mix", &["clock"]),
    ("--clock-monotonic", &["clock"]),
];

/// `flags` without the flags shaping packages not in `kept` (a run
/// refuses them: they would change nothing).
pub(super) fn unshaped(flags: &[String], kept: &[String]) -> Vec<String> {
    let mut out = flags.to_vec();
    for (flag, packages) in SHAPES {
        let shaped = if packages.is_empty() {
            !kept.is_empty()
        } else {
            kept.iter().any(|k| packages.contains(&k.as_str()))
        };
        if !shaped {
            out = set(&out, flag, None);
        }
    }
    out
}
