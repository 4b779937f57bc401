//! Clock faults on simulated nodes (`--db sim --sim-replicas N`): a bump,
//! strobe or reset sets the node's offset in the simulator
//! ([`SimulatedNetwork::set_clock_offset`]) instead of writing a
//! libfaketime control file, so it needs no root, no preload and no
//! nodes. The per-node cumulative offsets and the op values are the same
//! as for real nodes; a strobe flips the offset from a task of the
//! nemesis (same ticks as `harness clock-strobe`, ending at the base).

use super::fault::ClockFault;
use super::spec::{Spec, strobe_specs};
use crate::fault::{FaultError, Nemesis};
use crate::simulated::SimulatedNetwork;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn clock_err(node: &str, e: impl std::fmt::Display) -> FaultError {
    FaultError::Clock {
        node: node.to_string(),
        detail: e.to_string(),
    }
}

/// Seconds to the simulator's whole milliseconds.
fn ms(offset_s: f64) -> i64 {
    (offset_s * 1000.0).round() as i64
}

fn set(net: &dyn SimulatedNetwork, node: &str, spec: &Spec) -> Result<(), FaultError> {
    spec.render().map_err(|e| clock_err(node, e))?;
    net.set_clock_offset(node, ms(spec.offset_s))
        .map_err(|e| clock_err(node, format!("not a simulated node: {e}")))
}

impl Nemesis {
    /// Applies `c` to the simulated clocks of `net`; every node is tried.
    pub(super) async fn apply_sim_clock(
        &self,
        net: Arc<dyn SimulatedNetwork>,
        c: &ClockFault,
    ) -> Vec<FaultError> {
        let mut errs = Vec::new();
        let c = &c.as_bumps(|n| self.clocks().get(n));
        match c {
            ClockFault::Set(_) => {}
            ClockFault::Bump(b) => {
                for (node, delta_ms) in b {
                    let delta_s = *delta_ms as f64 / 1000.0;
                    let r = self
                        .clocks()
                        .clone()
                        .bump(node, delta_s)
                        .map_err(|e| clock_err(node, e))
                        .and_then(|spec| set(net.as_ref(), node, &spec));
                    match r.and_then(|()| {
                        self.clocks()
                            .bump(node, delta_s)
                            .map(|_| ())
                            .map_err(|e| clock_err(node, e))
                    }) {
                        Ok(()) => {}
                        Err(e) => errs.push(e),
                    }
                }
            }
            ClockFault::Reset(nodes) => {
                for node in nodes {
                    match set(net.as_ref(), node, &Spec::ZERO) {
                        Ok(()) => self.clocks().reset_node(node),
                        Err(e) => errs.push(e),
                    }
                }
            }
            ClockFault::Skew(rates) => {
                for (node, _) in rates {
                    errs.push(clock_err(node, "rate skew is not simulated"));
                }
            }
            ClockFault::Strobe {
                nodes,
                delta_ms,
                period_ms,
                duration_ms,
            } => {
                let period = Duration::from_millis(*period_ms);
                let duration = Duration::from_millis(*duration_ms);
                let delta_s = *delta_ms as f64 / 1000.0;
                let plan: Vec<(String, Vec<Spec>)> = nodes
                    .iter()
                    .map(|n| {
                        let base = self.clocks().get(n);
                        (n.clone(), strobe_specs(base, delta_s, period, duration))
                    })
                    .collect();
                let steps = plan.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
                let begin = Instant::now();
                let mut failed: Vec<String> = Vec::new();
                for i in 0..steps {
                    let due = begin + period.saturating_mul(u32::try_from(i).unwrap_or(u32::MAX));
                    tokio::time::sleep_until(due.into()).await;
                    for (node, specs) in &plan {
                        if failed.contains(node) {
                            continue;
                        }
                        if let Some(spec) = specs.get(i)
                            && let Err(e) = set(net.as_ref(), node, spec)
                        {
                            failed.push(node.clone());
                            errs.push(e);
                        }
                    }
                }
                // Every strobed node ends at its base, also after an error.
                for (node, _) in &plan {
                    let base = Spec {
                        offset_s: self.clocks().get(node),
                        rate: None,
                    };
                    let _ = set(net.as_ref(), node, &base);
                }
            }
        }
        errs
    }

    /// Every simulated clock back on true time (idempotent).
    pub(super) fn reset_sim_clocks(&self, net: &dyn SimulatedNetwork) {
        net.reset_clocks();
        self.clocks().reset();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fault::Fault;
    use crate::partition::Grudge;
    use crate::remote::{LocalRemote, Remote};
    use crate::{Node, process::Process};
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use store::Data;

    /// A simulated network that records every offset set per node.
    #[derive(Default)]
    struct Clocks {
        set: Mutex<BTreeMap<String, Vec<i64>>>,
    }

    impl SimulatedNetwork for Clocks {
        fn partition(&self, _: &Grudge) -> Result<(), String> {
            Ok(())
        }
        fn unpartition(&self, _: &Grudge) {}
        fn heal_network(&self) {}
        fn set_clock_offset(&self, node: &str, offset_ms: i64) -> Result<(), String> {
            if node == "ghost" {
                return Err(node.to_string());
            }
            let mut s = self.set.lock().unwrap();
            s.entry(node.to_string()).or_default().push(offset_ms);
            Ok(())
        }
        fn reset_clocks(&self) {
            let mut s = self.set.lock().unwrap();
            for v in s.values_mut() {
                v.push(0);
            }
        }
    }

    impl Clocks {
        fn last(&self, node: &str) -> Option<i64> {
            self.set.lock().unwrap().get(node)?.last().copied()
        }
        fn all(&self, node: &str) -> Vec<i64> {
            self.set
                .lock()
                .unwrap()
                .get(node)
                .cloned()
                .unwrap_or_default()
        }
    }

    fn nemesis(net: Arc<Clocks>) -> Nemesis {
        let remotes: Vec<Arc<dyn Remote>> = ["n1", "n2"]
            .iter()
            .map(|n| Arc::new(LocalRemote::new(Node::new(*n, "127.0.0.1"))) as Arc<dyn Remote>)
            .collect();
        Nemesis::new(remotes, None::<Arc<dyn Process>>).with_simulated_network(net)
    }

    #[tokio::test]
    async fn sim_bumps_accumulate_strobes_end_at_base_and_resets_and_heals_zero() {
        let net = Arc::new(Clocks::default());
        let n = nemesis(net.clone());
        assert!(n.has_clock(), "simulated nodes take clock faults");
        let bump = |d: i64| Fault::Clock(ClockFault::Bump(vec![("n1".into(), d)]));
        n.start(&bump(1500)).await.unwrap();
        n.start(&bump(-250)).await.unwrap();
        assert_eq!(net.all("n1"), vec![1500, 1250], "cumulative");
        n.start(&Fault::Clock(ClockFault::Strobe {
            nodes: vec!["n1".into(), "n2".into()],
            delta_ms: 100,
            period_ms: 5,
            duration_ms: 20,
        }))
        .await
        .unwrap();
        let n1 = net.all("n1");
        assert!(n1.contains(&1350) && n1.len() > 4, "{n1:?}");
        assert_eq!(net.last("n1"), Some(1250), "n1's strobe ends at its base");
        assert_eq!(net.last("n2"), Some(0), "n2's at zero");
        // Without a readable process no offset is measured, but the op's
        // value still says what was asked.
        let v = n.take_result().unwrap();
        let Data::Map(m) = v else {
            unreachable!("a map")
        };
        assert!(m.iter().any(|(k, _)| *k == Data::Str("strobe".into())));
        n.start(&Fault::Clock(ClockFault::Reset(vec!["n1".into()])))
            .await
            .unwrap();
        assert_eq!(net.last("n1"), Some(0));
        n.start(&bump(700)).await.unwrap();
        assert_eq!(net.last("n1"), Some(700), "a reset starts from zero");
        let skew = Fault::Clock(ClockFault::Skew(vec![("n2".into(), 1050)]));
        let e = n.start(&skew).await.unwrap_err();
        assert!(e.to_string().contains("rate skew is not simulated"), "{e}");
        let ghost = Fault::Clock(ClockFault::Bump(vec![("ghost".into(), 10)]));
        let e = n.start(&ghost).await.unwrap_err();
        assert!(e.to_string().contains("not a simulated node"), "{e}");
        n.heal_all().await.unwrap();
        assert_eq!(net.last("n1"), Some(0), "the heal resets every clock");
        assert!(n.clocks().skewed().is_empty());
    }
}
