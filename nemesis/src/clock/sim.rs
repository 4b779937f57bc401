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
        match c {
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
