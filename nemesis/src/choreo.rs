//! Scripted choreographies (NATS's `part-kill` and `pause-kill`): "one node
//! loses power while the others are unlucky".
//!
//! With the nodes sorted and `m` the largest integer strictly below `n/2`:
//! `part1` = the first `m` nodes, the crasher = node `m`, `part2` = the
//! rest. `part-kill`: isolate `part1` → hold → kill the crasher → heal →
//! isolate `part2` (so `part1` + crasher form a majority lacking recent
//! writes) → start the crasher → hold → heal. `pause-kill`: the same with
//! SIGSTOP of `part1`/`part2`. Unlike NATS, each cycle ends with everything
//! resumed (NATS keeps `part2` paused until its final phase), so the next
//! cycle starts from a whole cluster.
//!
//! A script is data ([`script`]), run by `package`'s loop one step at a
//! time; whatever a stopped script leaves active is stopped in reverse.

use crate::fault::Fault;
use crate::partition::complete_grudge;
use crate::schedule::FaultKind;

/// One step of a choreography.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Start this fault.
    Start(Fault),
    /// Stop this (earlier started) fault.
    Stop(Fault),
    /// Wait the hold time (`--choreography-hold`).
    Hold,
}

/// The least node count of a choreography.
pub const MIN_NODES: usize = 3;

/// The steps of choreography `kind` over `nodes` (empty for a fault kind
/// that is not a choreography, or fewer than [`MIN_NODES`] nodes).
pub fn script(kind: FaultKind, nodes: &[String]) -> Vec<Step> {
    let n = nodes.len();
    if n < MIN_NODES || !kind.is_choreography() {
        return Vec::new();
    }
    let mut sorted = nodes.to_vec();
    sorted.sort();
    let m = (n - 1) / 2;
    let part1: Vec<String> = sorted[..m].to_vec();
    let crasher = vec![sorted[m].clone()];
    let part2: Vec<String> = sorted[m + 1..].to_vec();
    let with = |a: &[String], b: &[String]| -> Vec<String> {
        let mut v: Vec<String> = a.iter().chain(b).cloned().collect();
        v.sort();
        v
    };
    let kill = Fault::Kill(crasher.clone());
    match kind {
        FaultKind::PartKill => {
            let p1 = Fault::Partition(complete_grudge(&[part1.clone(), with(&part2, &crasher)]));
            let p2 = Fault::Partition(complete_grudge(&[part2.clone(), with(&part1, &crasher)]));
            vec![
                Step::Start(p1.clone()),
                Step::Hold,
                Step::Start(kill.clone()),
                Step::Stop(p1),
                Step::Start(p2.clone()),
                Step::Stop(kill),
                Step::Hold,
                Step::Stop(p2),
            ]
        }
        FaultKind::PauseKill => {
            let s1 = Fault::Pause(part1);
            let s2 = Fault::Pause(part2);
            vec![
                Step::Start(s1.clone()),
                Step::Hold,
                Step::Start(kill.clone()),
                Step::Start(s2.clone()),
                Step::Stop(s1),
                Step::Stop(kill),
                Step::Hold,
                Step::Stop(s2),
            ]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    /// Every started fault is stopped by the end of the script.
    fn balanced(steps: &[Step]) -> bool {
        let mut active: Vec<&Fault> = Vec::new();
        for s in steps {
            match s {
                Step::Start(f) => active.push(f),
                Step::Stop(f) => match active.iter().position(|a| *a == f) {
                    Some(i) => {
                        active.remove(i);
                    }
                    None => return false,
                },
                Step::Hold => {}
            }
        }
        active.is_empty()
    }

    #[test]
    fn part_kill_on_five_nodes_kills_the_middle_node_and_flips_the_minority() {
        let s = script(FaultKind::PartKill, &nodes(5));
        assert!(balanced(&s));
        assert_eq!(s[2], Step::Start(Fault::Kill(vec!["n3".to_string()])));
        let Step::Start(Fault::Partition(g1)) = &s[0] else {
            panic!("first step partitions: {s:?}")
        };
        // part1 = n1, n2 drop everyone else.
        assert_eq!(g1["n1"].len(), 3);
        assert!(g1["n4"].contains("n1") && !g1["n4"].contains("n3"));
        let Step::Start(Fault::Partition(g2)) = &s[4] else {
            panic!("fifth step partitions: {s:?}")
        };
        assert!(g2["n4"].contains("n3") && g2["n3"].contains("n5"));
        assert!(!g2["n1"].contains("n3"));
    }

    #[test]
    fn pause_kill_on_three_nodes_and_too_few_nodes() {
        let s = script(FaultKind::PauseKill, &nodes(3));
        assert!(balanced(&s));
        assert_eq!(s[0], Step::Start(Fault::Pause(vec!["n1".to_string()])));
        assert_eq!(s[3], Step::Start(Fault::Pause(vec!["n3".to_string()])));
        assert!(script(FaultKind::PauseKill, &nodes(2)).is_empty());
        assert!(script(FaultKind::Kill, &nodes(5)).is_empty());
    }
}
