//! Grudges: which node drops packets from which nodes, and the partition
//! kinds that build them (Jepsen's `nemesis.clj`/`combined.clj` grudges).
//!
//! A grudge maps a node name to the set of node names whose packets it
//! drops. Builders get the node names (in the test's order) and a seeded
//! [`Rng`]; the same seed gives the same grudge.

use crate::fault::CHAIN;
use crate::rng::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use store::Data;

/// Node → nodes it drops packets from.
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// The shapes of partitions (`--partition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartitionKind {
    /// One random node isolated from all others.
    One,
    /// A clean majority/minority split of shuffled nodes.
    Majority,
    /// Each node sees a majority, no two nodes the same majority.
    MajoritiesRing,
    /// Fewer than a third of the nodes (at least one) cut off from the rest.
    MinorityThird,
    /// Two halves plus one node that sees both.
    Bridge,
    /// Shuffled nodes cut into two halves.
    RandomHalves,
    /// Each primary isolated alone (needs the database's primaries).
    Primaries,
}

impl PartitionKind {
    /// Every kind, in CLI order.
    pub const ALL: [PartitionKind; 7] = [
        PartitionKind::One,
        PartitionKind::Majority,
        PartitionKind::MajoritiesRing,
        PartitionKind::MinorityThird,
        PartitionKind::Bridge,
        PartitionKind::RandomHalves,
        PartitionKind::Primaries,
    ];

    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionKind::One => "one",
            PartitionKind::Majority => "majority",
            PartitionKind::MajoritiesRing => "majorities-ring",
            PartitionKind::MinorityThird => "minority-third",
            PartitionKind::Bridge => "bridge",
            PartitionKind::RandomHalves => "random-halves",
            PartitionKind::Primaries => "primaries",
        }
    }
}

impl fmt::Display for PartitionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown partition kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown partition kind {0:?} (expected one of: one, majority, majorities-ring, minority-third, bridge, random-halves, primaries)"
)]
pub struct UnknownPartitionKind(pub String);

impl FromStr for PartitionKind {
    type Err = UnknownPartitionKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PartitionKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownPartitionKind(s.to_string()))
    }
}

/// Every node of each component drops every node of every other component.
pub fn complete_grudge(components: &[Vec<String>]) -> Grudge {
    let mut g = Grudge::new();
    for (i, comp) in components.iter().enumerate() {
        let others: BTreeSet<String> = components
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, c)| c.iter().cloned())
            .collect();
        if others.is_empty() {
            continue;
        }
        for n in comp {
            g.entry(n.clone())
                .or_default()
                .extend(others.iter().cloned());
        }
    }
    g
}

/// Splits into two halves, the smaller first.
fn bisect(nodes: &[String]) -> (Vec<String>, Vec<String>) {
    let half = nodes.len() / 2;
    (nodes[..half].to_vec(), nodes[half..].to_vec())
}

/// Builds a grudge of `kind` over `nodes`; `primaries` is used by
/// [`PartitionKind::Primaries`] (an empty grudge when there are none).
pub fn grudge(
    kind: PartitionKind,
    nodes: &[String],
    primaries: &[String],
    rng: &mut Rng,
) -> Grudge {
    let mut shuffled = nodes.to_vec();
    rng.shuffle(&mut shuffled);
    if nodes.len() < 2 {
        return Grudge::new();
    }
    match kind {
        PartitionKind::One => {
            let (one, rest) = shuffled.split_at(1);
            complete_grudge(&[one.to_vec(), rest.to_vec()])
        }
        PartitionKind::Majority | PartitionKind::RandomHalves => {
            let (a, b) = bisect(&shuffled);
            complete_grudge(&[a, b])
        }
        PartitionKind::MinorityThird => {
            // Largest integer strictly below n/3, at least one.
            let k = (nodes.len().saturating_sub(1) / 3).max(1);
            let (a, b) = shuffled.split_at(k);
            complete_grudge(&[a.to_vec(), b.to_vec()])
        }
        PartitionKind::Bridge => {
            let (a, b) = bisect(&shuffled);
            // b is never empty here: the first of b is the bridge.
            let b_rest = b.get(1..).unwrap_or_default();
            let mut g = Grudge::new();
            for x in &a {
                g.insert(x.clone(), b_rest.iter().cloned().collect());
            }
            for y in b_rest {
                g.insert(y.clone(), a.iter().cloned().collect());
            }
            g.retain(|_, v| !v.is_empty());
            g
        }
        PartitionKind::MajoritiesRing => majorities_ring(&shuffled),
        PartitionKind::Primaries => {
            let prim: Vec<String> = shuffled
                .iter()
                .filter(|n| primaries.contains(n))
                .cloned()
                .collect();
            if prim.is_empty() {
                return Grudge::new();
            }
            let mut comps: Vec<Vec<String>> = prim.iter().map(|p| vec![p.clone()]).collect();
            let rest: Vec<String> = shuffled
                .iter()
                .filter(|n| !prim.contains(n))
                .cloned()
                .collect();
            if !rest.is_empty() {
                comps.push(rest);
            }
            complete_grudge(&comps)
        }
    }
}

/// Nodes in ring order; each sees a majority window around itself.
fn majorities_ring(ring: &[String]) -> Grudge {
    let n = ring.len();
    let m = n / 2 + 1;
    let mut g = Grudge::new();
    for (i, node) in ring.iter().enumerate() {
        let visible: BTreeSet<usize> = if n == 3 {
            // Symmetric windows of a 3-ring see everything: use one-directional ones.
            (0..m).map(|d| (i + d) % n).collect()
        } else {
            let r = m / 2;
            (0..=2 * r).map(|d| (i + n + d - r) % n).collect()
        };
        let drops: BTreeSet<String> = (0..n)
            .filter(|j| !visible.contains(j))
            .map(|j| ring[j].clone())
            .collect();
        if !drops.is_empty() {
            g.insert(node.clone(), drops);
        }
    }
    g
}

/// The grudge as a history value: `{"n1": ["n2", "n3"], …}`.
pub fn grudge_data(g: &Grudge) -> Data {
    Data::Map(
        g.iter()
            .map(|(k, v)| {
                (
                    Data::Str(k.clone()),
                    Data::Vec(v.iter().map(|x| Data::Str(x.clone())).collect()),
                )
            })
            .collect(),
    )
}

/// The shell command that removes harness's partition rules and packet
/// faults ([`crate::packet::heal_command`]) (idempotent).
pub fn heal_command() -> String {
    format!(
        "{}; command -v iptables >/dev/null || exit 0; \
         while iptables -w -D INPUT -j {CHAIN} 2>/dev/null; do :; done; \
         iptables -w -F {CHAIN} 2>/dev/null; iptables -w -X {CHAIN} 2>/dev/null; true",
        crate::packet::heal_command()
    )
}

/// The shell command that makes `ips` dropped on arrival (idempotent setup of
/// the chain and its jump).
pub fn drop_command(ips: &[IpAddr]) -> String {
    let list: Vec<String> = ips.iter().map(|i| i.to_string()).collect();
    format!(
        "command -v iptables >/dev/null || exit 127; \
         iptables -w -N {CHAIN} 2>/dev/null; \
         iptables -w -C INPUT -j {CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {CHAIN}; \
         iptables -w -A {CHAIN} -s {} -j DROP",
        list.join(",")
    )
}

/// The shell command that removes one instance of each of `ips`' DROP rules
/// from harness's chain (the inverse of [`drop_command`]; other grudges'
/// rules stay).
pub fn undrop_command(ips: &[IpAddr]) -> String {
    let mut cmd = String::from("command -v iptables >/dev/null || exit 0");
    for ip in ips {
        cmd.push_str(&format!(
            "; iptables -w -D {CHAIN} -s {ip} -j DROP 2>/dev/null"
        ));
    }
    cmd.push_str("; true");
    cmd
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn sees(g: &Grudge, a: &str, b: &str) -> bool {
        !g.get(a).is_some_and(|d| d.contains(b))
    }

    #[test]
    fn kinds_parse_and_reject_typos() {
        for k in PartitionKind::ALL {
            assert_eq!(k.as_str().parse::<PartitionKind>(), Ok(k));
        }
        assert!("majority-ring".parse::<PartitionKind>().is_err());
    }

    #[test]
    fn one_isolates_exactly_one_node_symmetrically() {
        let g = grudge(PartitionKind::One, &names(5), &[], &mut Rng::new(1));
        let isolated: Vec<&String> = g
            .iter()
            .filter(|(_, d)| d.len() == 4)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(isolated.len(), 1);
        for n in names(5) {
            if &n != isolated[0] {
                assert_eq!(g[&n], BTreeSet::from([isolated[0].clone()]));
            }
        }
    }

    #[test]
    fn majority_splits_into_minority_and_majority() {
        let g = grudge(PartitionKind::Majority, &names(5), &[], &mut Rng::new(3));
        let minority = g.values().filter(|d| d.len() == 3).count(); // 2 minority nodes drop 3
        let majority = g.values().filter(|d| d.len() == 2).count();
        assert_eq!((minority, majority), (2, 3));
    }

    #[test]
    fn majorities_ring_gives_distinct_majorities() {
        for n in [3, 4, 5, 7] {
            let nodes = names(n);
            let g = grudge(PartitionKind::MajoritiesRing, &nodes, &[], &mut Rng::new(9));
            let mut views = BTreeSet::new();
            for a in &nodes {
                let view: BTreeSet<&String> = nodes.iter().filter(|b| sees(&g, a, b)).collect();
                assert!(view.len() > n / 2, "n={n}: {a} sees {view:?}");
                assert!(views.insert(view), "n={n}: two nodes share a majority");
            }
        }
    }

    #[test]
    fn bridge_node_sees_both_sides() {
        let g = grudge(PartitionKind::Bridge, &names(5), &[], &mut Rng::new(4));
        let bridge: Vec<String> = names(5)
            .into_iter()
            .filter(|n| !g.contains_key(n))
            .collect();
        assert_eq!(bridge.len(), 1);
        assert!(g.values().all(|d| !d.contains(&bridge[0])));
    }

    #[test]
    fn minority_third_and_primaries() {
        let g = grudge(
            PartitionKind::MinorityThird,
            &names(7),
            &[],
            &mut Rng::new(5),
        );
        assert_eq!(g.values().filter(|d| d.len() == 5).count(), 2);
        let g = grudge(
            PartitionKind::Primaries,
            &names(3),
            &["n2".into()],
            &mut Rng::new(5),
        );
        assert_eq!(
            g["n2"],
            BTreeSet::from(["n1".to_string(), "n3".to_string()])
        );
        assert!(grudge(PartitionKind::Primaries, &names(3), &[], &mut Rng::new(5)).is_empty());
    }
}
