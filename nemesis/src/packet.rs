//! Packet faults without netem (`--nemesis packet`): loss, duplication and
//! a rate limit on the links between the target nodes and the others.
//!
//! This kernel has no netem; what it has is used instead:
//! * **loss p**: on each receiving node, in harness's own chain
//!   [`CHAIN`] (filter table, jumped to first from `INPUT`), a counting
//!   rule per peer then `-s <peer> -m statistic --mode random
//!   --probability p -j DROP`. Receiver-side, so the sender's TCP sees real
//!   loss. Bernoulli per packet (no correlation, unlike netem's 75 %).
//! * **duplicate p**: in the mangle table's [`CHAIN`] (jumped to from
//!   `POSTROUTING`), `-d <peer> -m statistic --probability p -j TEE
//!   --gateway <peer>`: a copy of the packet is sent to the peer too.
//! * **rate R kbit/s**: a `tbf` root qdisc with harness's handle
//!   [`TBF_HANDLE`] on the interface that routes to the peers, on the
//!   target nodes only. It limits all of their egress (clients' traffic
//!   too), not only the links to the other nodes.
//!
//! Delay and reorder are not built. Without netem they need a userspace
//! verdict loop: measured here, the kernel has the `NFQUEUE` target (a
//! queued ICMP packet with no listener is dropped, with `--queue-bypass`
//! it passes), so a harness daemon on each node could hold packets and
//! release them late or out of order — one more user/kernel round trip per
//! packet, the cost the lossy filesystem measured for FUSE. The faults a
//! delay provokes (client timeouts, suspected peers, leader changes) are
//! reached already with loss, rate limits and pauses, so it was judged not
//! worth a per-node packet daemon yet.
//!
//! Links, as Jepsen's `net/shape!`: a target node shapes its links to
//! every other node; any other node shapes its links to the targets; so
//! traffic between targets and others is affected both ways, and traffic
//! among non-targets not at all.
//!
//! Recording: `start-packet` with value `{targets [...], loss p,
//! duplicate p, rate-kbit r}`; `stop-packet`'s completion carries what was
//! measured before the rules were removed: per node the packets seen from
//! shaped peers and the packets dropped, and overall `asked-loss` vs
//! `measured-loss`. Healing ([`heal_command`]) removes the jumps, both
//! chains and a root qdisc with harness's handle, and nothing else; it is
//! part of every partition heal (run start, run end, Ctrl-C, errors,
//! `harness nemesis heal`), so a stale rule or qdisc never outlives a
//! crashed run past the next start.

use std::collections::BTreeMap;
use std::net::IpAddr;
use store::Data;

/// The chain (filter and mangle tables) holding every packet rule.
/// Its name contains [`crate::fault::CHAIN`], so `harness_rules` counts it.
pub const CHAIN: &str = "harness-nemesis-packet";

/// The handle of harness's `tbf` root qdisc.
pub const TBF_HANDLE: &str = "7e57:";

/// What happens to the packets of a shaped link.
#[derive(Clone, Debug, PartialEq)]
pub struct Behavior {
    /// Drop probability (0..=1).
    pub loss: Option<f64>,
    /// Duplication probability (0..=1).
    pub duplicate: Option<f64>,
    /// Egress rate limit of the target nodes, kbit/s.
    pub rate_kbit: Option<u32>,
}

impl Eq for Behavior {}

impl Default for Behavior {
    /// Jepsen's default probability for loss (20 %); nothing else.
    fn default() -> Behavior {
        Behavior {
            loss: Some(0.2),
            duplicate: None,
            rate_kbit: None,
        }
    }
}

/// A bad `--packet` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--packet {0:?}: expected a comma list of loss=P, duplicate=P (0 < P <= 1) and rate=KBIT (kbit/s), e.g. loss=0.3,duplicate=0.1"
)]
pub struct BadBehavior(pub String);

impl std::str::FromStr for Behavior {
    type Err = BadBehavior;
    fn from_str(s: &str) -> Result<Behavior, BadBehavior> {
        let bad = || BadBehavior(s.to_string());
        let mut b = Behavior {
            loss: None,
            duplicate: None,
            rate_kbit: None,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(bad)?;
            let p = || {
                v.parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p <= 1.0)
                    .ok_or_else(bad)
            };
            match k.trim() {
                "loss" => b.loss = Some(p()?),
                "duplicate" => b.duplicate = Some(p()?),
                "rate" => {
                    b.rate_kbit = Some(v.parse::<u32>().ok().filter(|r| *r > 0).ok_or_else(bad)?)
                }
                _ => return Err(bad()),
            }
        }
        if b.loss.is_none() && b.duplicate.is_none() && b.rate_kbit.is_none() {
            return Err(bad());
        }
        Ok(b)
    }
}

/// One packet fault: the target nodes and the behaviour of their links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketFault {
    /// Target nodes (names).
    pub targets: Vec<String>,
    /// What their links do.
    pub behavior: Behavior,
}

impl PacketFault {
    /// The fault's start value: `{targets, loss, duplicate, rate-kbit}`.
    pub fn start_value(&self) -> Data {
        let s = |x: &str| Data::Str(x.to_string());
        let mut m = vec![(
            s("targets"),
            Data::Vec(self.targets.iter().map(|t| s(t)).collect()),
        )];
        if let Some(l) = self.behavior.loss {
            m.push((s("loss"), Data::Float(l)));
        }
        if let Some(d) = self.behavior.duplicate {
            m.push((s("duplicate"), Data::Float(d)));
        }
        if let Some(r) = self.behavior.rate_kbit {
            m.push((s("rate-kbit"), Data::Int(i64::from(r))));
        }
        Data::Map(m)
    }

    /// Per node, the peers whose links it shapes (targets: every other
    /// node; the others: the targets). Nodes with no peer are left out.
    pub fn links(&self, nodes: &[String]) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        for n in nodes {
            let peers: Vec<String> = if self.targets.contains(n) {
                nodes.iter().filter(|p| *p != n).cloned().collect()
            } else {
                self.targets.clone()
            };
            if !peers.is_empty() {
                out.insert(n.clone(), peers);
            }
        }
        out
    }
}

/// Shell command, on one node, that shapes its links to `peers`
/// (`target`: the node is a target, so the rate limit applies here).
pub fn shape_command(peers: &[IpAddr], b: &Behavior, target: bool) -> String {
    let mut c = format!(
        "command -v iptables >/dev/null || exit 127; \
         iptables -w -N {CHAIN} 2>/dev/null; \
         iptables -w -C INPUT -j {CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {CHAIN}"
    );
    for ip in peers {
        if let Some(p) = b.loss {
            c.push_str(&format!(
                "; iptables -w -A {CHAIN} -s {ip} -m comment --comment seen; \
                 iptables -w -A {CHAIN} -s {ip} -m statistic --mode random --probability {p} -j DROP"
            ));
        }
    }
    if let Some(p) = b.duplicate {
        c.push_str(&format!(
            "; iptables -w -t mangle -N {CHAIN} 2>/dev/null; \
             iptables -w -t mangle -C POSTROUTING -j {CHAIN} 2>/dev/null || iptables -w -t mangle -I POSTROUTING 1 -j {CHAIN}"
        ));
        for ip in peers {
            c.push_str(&format!(
                "; iptables -w -t mangle -A {CHAIN} -d {ip} -m statistic --mode random --probability {p} -j TEE --gateway {ip}"
            ));
        }
    }
    if let (Some(r), true, Some(ip)) = (b.rate_kbit, target, peers.first()) {
        // The interface that routes to the peers; burst: 10 ms at the rate,
        // at least one MTU-sized packet.
        let burst = (r / 100 / 8).max(2);
        c.push_str(&format!(
            "; D=$(ip route get {ip} | grep -o 'dev [^ ]*' | head -1 | cut -d' ' -f2); \
             tc qdisc replace dev \"$D\" root handle {TBF_HANDLE} tbf rate {r}kbit burst {burst}kb latency 500ms"
        ));
    }
    c
}

/// Shell command that prints harness's loss counters on a node: lines
/// `pkts ... source` of [`CHAIN`] (`iptables -L -v -n -x`).
pub fn counters_command() -> String {
    format!("iptables -w -L {CHAIN} -v -n -x 2>/dev/null; true")
}

/// From [`counters_command`]'s output: packets seen from shaped peers and
/// packets dropped (the counting rule precedes each DROP rule).
pub fn parse_counters(text: &str) -> (u64, u64) {
    let (mut seen, mut dropped) = (0u64, 0u64);
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(pkts) = words.next().and_then(|w| w.parse::<u64>().ok()) else {
            continue;
        };
        if line.contains("statistic") && line.contains("DROP") {
            dropped += pkts;
        } else if line.contains("/* seen */") {
            seen += pkts;
        }
    }
    (seen, dropped)
}

/// The shell command that removes every packet fault harness made on a
/// node (idempotent): the jumps, both chains, and a root qdisc with
/// harness's handle on any interface.
pub fn heal_command() -> String {
    format!(
        "if command -v iptables >/dev/null; then \
           while iptables -w -D INPUT -j {CHAIN} 2>/dev/null; do :; done; \
           iptables -w -F {CHAIN} 2>/dev/null; iptables -w -X {CHAIN} 2>/dev/null; \
           while iptables -w -t mangle -D POSTROUTING -j {CHAIN} 2>/dev/null; do :; done; \
           iptables -w -t mangle -F {CHAIN} 2>/dev/null; iptables -w -t mangle -X {CHAIN} 2>/dev/null; \
         fi; \
         if command -v tc >/dev/null; then for D in $(ls /sys/class/net); do \
           tc qdisc show dev \"$D\" 2>/dev/null | grep -q '^qdisc tbf {TBF_HANDLE} root' && tc qdisc del dev \"$D\" root; \
         done; fi; true"
    )
}

/// On every node: reads the loss counters, then heals (see
/// [`heal_command`]); returns the stop op's value ([`measured_data`]) and
/// the errors of the nodes where a command failed.
pub(crate) async fn measure_and_heal(
    remotes: &[std::sync::Arc<dyn crate::remote::Remote>],
    timeout: std::time::Duration,
    asked: Option<f64>,
) -> (Data, Vec<crate::remote::RemoteError>) {
    let mut per_node = BTreeMap::new();
    let mut errs = Vec::new();
    for r in remotes {
        match r.run_timeout(&counters_command(), timeout).await {
            Ok(o) => {
                let c = parse_counters(&o.stdout_str());
                if c.0 > 0 {
                    per_node.insert(r.node().name.clone(), c);
                }
            }
            Err(e) => errs.push(e),
        }
        if let Err(e) = r.run_timeout(&heal_command(), timeout).await {
            errs.push(e);
        }
    }
    (measured_data(asked, &per_node), errs)
}

/// The measured loss as the stop op's value: per node `{seen, dropped}`,
/// and `asked-loss` / `measured-loss` over all nodes.
pub fn measured_data(asked: Option<f64>, per_node: &BTreeMap<String, (u64, u64)>) -> Data {
    let s = |x: &str| Data::Str(x.to_string());
    let (seen, dropped) = per_node
        .values()
        .fold((0u64, 0u64), |(a, b), (x, y)| (a + x, b + y));
    let mut m: Vec<(Data, Data)> = per_node
        .iter()
        .map(|(n, (x, y))| {
            (
                s(n),
                Data::Map(vec![
                    (s("seen"), Data::Int(*x as i64)),
                    (s("dropped"), Data::Int(*y as i64)),
                ]),
            )
        })
        .collect();
    if let Some(a) = asked {
        m.push((s("asked-loss"), Data::Float(a)));
        if seen > 0 {
            m.push((
                s("measured-loss"),
                Data::Float(dropped as f64 / seen as f64),
            ));
        }
    }
    Data::Map(m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn behaviors_parse_and_bad_ones_are_rejected() {
        let b: Behavior = "loss=0.3,duplicate=0.1,rate=512".parse().unwrap();
        assert_eq!(b.loss, Some(0.3));
        assert_eq!(b.duplicate, Some(0.1));
        assert_eq!(b.rate_kbit, Some(512));
        for bad in ["", "loss=0", "loss=1.5", "delay=50", "rate=0", "loss"] {
            assert!(bad.parse::<Behavior>().is_err(), "{bad}");
        }
    }

    #[test]
    fn targets_shape_every_link_the_others_only_theirs() {
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let f = PacketFault {
            targets: vec!["n1".into()],
            behavior: Behavior::default(),
        };
        let l = f.links(&nodes);
        assert_eq!(l["n1"], vec!["n2", "n3"]);
        assert_eq!(l["n2"], vec!["n1"]);
        assert_eq!(l["n3"], vec!["n1"]);
        let all = PacketFault {
            targets: nodes.clone(),
            behavior: Behavior::default(),
        };
        assert_eq!(all.links(&nodes)["n2"], vec!["n1", "n3"]);
    }

    #[test]
    fn commands_use_harness_chains_and_the_heal_removes_only_them() {
        let ip: IpAddr = "10.99.0.2".parse().unwrap();
        let b: Behavior = "loss=0.3,duplicate=0.2,rate=800".parse().unwrap();
        let c = shape_command(&[ip], &b, true);
        assert!(c.contains(&format!(
            "-A {CHAIN} -s 10.99.0.2 -m statistic --mode random --probability 0.3 -j DROP"
        )));
        assert!(c.contains("-j TEE --gateway 10.99.0.2"));
        assert!(c.contains(&format!("root handle {TBF_HANDLE} tbf rate 800kbit")));
        assert!(!shape_command(&[ip], &b, false).contains("tbf"));
        let h = heal_command();
        assert!(
            h.contains(&format!("-X {CHAIN}"))
                && h.contains(&format!("qdisc tbf {TBF_HANDLE} root"))
        );
        assert!(CHAIN.contains(crate::fault::CHAIN));
    }

    #[test]
    fn counters_give_seen_and_dropped() {
        let text = "Chain harness-nemesis-packet (1 references)\n\
            pkts bytes target prot opt in out source destination\n\
            1000 84000 all -- * * 10.99.0.2 0.0.0.0/0 /* seen */\n\
            301 25284 DROP all -- * * 10.99.0.2 0.0.0.0/0 statistic mode random probability 0.30000000009\n";
        assert_eq!(parse_counters(text), (1000, 301));
        let mut per = BTreeMap::new();
        per.insert("n2".to_string(), (1000, 301));
        let Data::Map(m) = measured_data(Some(0.3), &per) else {
            unreachable!()
        };
        assert_eq!(m.last().unwrap().1, Data::Float(0.301));
    }
}
