//! Applying clock ops on the nodes and measuring the result: the
//! [`Nemesis`] side of [`ClockFault`].
//!
//! A bump or reset rewrites each target node's control file atomically
//! through its [`crate::Remote`]; a strobe runs `harness clock-strobe` on
//! each target node in parallel and returns when every strobe has ended
//! (at its base). Then every node's database clock is read
//! ([`crate::process::Process::db_clock`]) and the op's completion value
//! gets `clock-offsets`, `clock-offset-errors` and `expected-offsets`
//! (node → seconds); a node that cannot be read (killed, paused) is left
//! out of the maps, never an error of the op. `clock-in-force` lists every
//! node the nemesis left off true time (offset or rate), read or not.

use super::fault::ClockFault;
use super::spec::{Spec, write_command};
use super::strobe::Strobe;
use crate::fault::{FaultError, Nemesis};
use crate::process::Process;
use std::sync::Arc;
use std::time::Duration;
use store::Data;
use tokio::task::JoinSet;

/// The key of a clock op's completion value naming every node whose
/// clock is off true time after the op (node → expected offset, seconds);
/// empty when every clock is on true time.
pub const IN_FORCE: &str = "clock-in-force";

/// The longest a database clock read may take before it is skipped.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

fn clock_err(node: &str, e: impl std::fmt::Display) -> FaultError {
    FaultError::Clock {
        node: node.to_string(),
        detail: e.to_string(),
    }
}

fn map(entries: Vec<(String, f64)>) -> Data {
    Data::Map(
        entries
            .into_iter()
            .map(|(n, v)| (Data::Str(n), Data::Float((v * 1e6).round() / 1e6)))
            .collect(),
    )
}

impl Nemesis {
    /// [`crate::node_binary::ensure_binary`] for `node`, once per run.
    async fn ensure_binary_once(
        &self,
        node: &str,
        remote: &dyn crate::remote::Remote,
        exe: &str,
    ) -> Result<(), FaultError> {
        let known = self
            .has_binary
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(node);
        if !known {
            crate::node_binary::ensure_binary(remote, exe).await?;
            self.has_binary
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(node.to_string());
        }
        Ok(())
    }

    /// Whether clock faults reach every node (the database was started
    /// under libfaketime).
    pub fn has_clock(&self) -> bool {
        self.simulated_network().is_some()
            || self
                .process()
                .is_some_and(|p| self.nodes().iter().all(|n| p.clock_file(n).is_some()))
    }

    fn clock_target(&self, node: &str) -> Result<(Arc<dyn Process>, String), FaultError> {
        let process = self.process().ok_or(FaultError::NoProcess)?;
        let n = self.remote(node)?.node().clone();
        let file = process
            .clock_file(&n)
            .ok_or_else(|| clock_err(node, "the database was not started under libfaketime"))?;
        Ok((process, file))
    }

    async fn write_spec(&self, node: &str, file: &str, spec: &Spec) -> Result<(), FaultError> {
        let cmd = write_command(file, spec).map_err(|e| clock_err(node, e))?;
        self.remote(node)?
            .run_timeout(&cmd, self.command_timeout())
            .await?;
        Ok(())
    }

    /// Applies one clock op and records its measurements as the op's
    /// result.
    ///
    /// # Errors
    /// The nodes whose control file could not be written or whose strobe
    /// failed (offsets are still measured).
    pub(crate) async fn start_clock(&self, c: &ClockFault) -> Result<(), FaultError> {
        let r = self.apply_clock(c).await;
        let value = self.measure(c).await;
        self.set_result(value);
        r
    }

    async fn apply_clock(&self, c: &ClockFault) -> Result<(), FaultError> {
        if let Some(net) = self.simulated_network() {
            let mut errs = self.apply_sim_clock(net, c).await;
            return match errs.len() {
                0 => Ok(()),
                1 => Err(errs.remove(0)),
                _ => Err(FaultError::Many(errs)),
            };
        }
        let mut errs = Vec::new();
        let c = &c.as_bumps(|n| self.clocks().get(n));
        match c {
            ClockFault::Set(_) => {}
            ClockFault::Bump(b) => {
                for (node, delta_ms) in b {
                    let delta_s = *delta_ms as f64 / 1000.0;
                    let r = async {
                        let (_, file) = self.clock_target(node)?;
                        let spec = self
                            .clocks()
                            .clone()
                            .bump(node, delta_s)
                            .map_err(|e| clock_err(node, e))?;
                        self.write_spec(node, &file, &spec).await?;
                        self.clocks()
                            .bump(node, delta_s)
                            .map_err(|e| clock_err(node, e))?;
                        Ok::<(), FaultError>(())
                    }
                    .await;
                    if let Err(e) = r {
                        errs.push(e);
                    }
                }
            }
            ClockFault::Reset(nodes) => {
                for node in nodes {
                    let r = async {
                        let (_, file) = self.clock_target(node)?;
                        let zero = self.clocks().zero(node);
                        self.write_spec(node, &file, &zero).await?;
                        self.clocks().reset_node(node);
                        Ok::<(), FaultError>(())
                    }
                    .await;
                    if let Err(e) = r {
                        errs.push(e);
                    }
                }
            }
            ClockFault::Skew(rates) => {
                for (node, milli) in rates {
                    if let Err(e) = self.skew(node, f64::from(*milli) / 1000.0).await {
                        errs.push(e);
                    }
                }
            }
            ClockFault::Strobe {
                nodes,
                delta_ms,
                period_ms,
                duration_ms,
            } => {
                let exe = crate::node_binary::own_binary()
                    .map_err(|e| clock_err("local", format!("own binary: {e}")))?;
                let exe = exe.to_string_lossy().into_owned();
                let duration = Duration::from_millis(*duration_ms);
                let mut set = JoinSet::new();
                for node in nodes {
                    let (_, file) = self.clock_target(node)?;
                    // One guard: two in one statement would deadlock.
                    let (base_s, rate) = {
                        let clocks = self.clocks();
                        (clocks.get(node), clocks.rate(node))
                    };
                    let strobe = Strobe {
                        base_s,
                        delta_s: *delta_ms as f64 / 1000.0,
                        period: Duration::from_millis(*period_ms),
                        duration,
                        rate,
                    };
                    if let Err(e) = (Spec {
                        offset_s: strobe.base_s + strobe.delta_s,
                        rate: strobe.rate,
                    })
                    .render()
                    {
                        errs.push(clock_err(node, e));
                        continue;
                    }
                    let remote = self.remote(node)?;
                    if let Err(e) = self.ensure_binary_once(node, remote.as_ref(), &exe).await {
                        errs.push(e);
                        continue;
                    }
                    let cmd = strobe.command(&exe, &file);
                    let t = duration + self.command_timeout();
                    set.spawn(async move {
                        remote
                            .run_timeout(&cmd, t)
                            .await
                            .map(|_| ())
                            .map_err(FaultError::from)
                    });
                }
                while let Some(r) = set.join_next().await {
                    match r {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => errs.push(e),
                        Err(e) => errs.push(clock_err("?", e)),
                    }
                }
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(errs.remove(0)),
            _ => Err(FaultError::Many(errs)),
        }
    }

    /// Rate skew of one node: writes `+<offset> x<rate>` and restarts its
    /// database, so that libfaketime measures the rate from the new
    /// process's start (changed under a running process it would apply to
    /// the whole uptime: a jump). A node another package killed or paused
    /// is left alone (an error of this op).
    async fn skew(&self, node: &str, rate: f64) -> Result<(), FaultError> {
        let (process, file) = self.clock_target(node)?;
        if self.is_faulted(node) {
            return Err(clock_err(
                node,
                "killed or paused by another package; a rate skew restarts the database",
            ));
        }
        let spec = self
            .clocks()
            .rate_spec(node, rate)
            .map_err(|e| clock_err(node, e))?;
        self.write_spec(node, &file, &spec).await?;
        let n = self.remote(node)?.node().clone();
        let restarted = async {
            process.shut_down(&n).await?;
            let started_s = super::now_s();
            process.start(&n).await?;
            Ok::<f64, crate::process::ProcessError>(started_s)
        }
        .await;
        match restarted {
            Ok(started_s) => {
                self.clocks().set_rate(node, rate, started_s);
                Ok(())
            }
            Err(e) => {
                // Back to the node's offset at rate 1: a process that
                // survived must not run at the rate over its uptime.
                let back = Spec {
                    offset_s: self.clocks().get(node),
                    rate: Some(1.0),
                };
                let _ = self.write_spec(node, &file, &back).await;
                let _ = process.start(&n).await;
                Err(FaultError::Process(e))
            }
        }
    }

    /// Reads every node's database clock: `{name: detail, clock-offsets,
    /// clock-offset-errors, expected-offsets}`.
    async fn measure(&self, c: &ClockFault) -> Data {
        let mut set = JoinSet::new();
        let simulated = self.simulated_network().is_some();
        if let Some(process) = self.process() {
            for node in self.nodes() {
                if !simulated && process.clock_file(&node).is_none() {
                    continue;
                }
                let p = process.clone();
                set.spawn(async move {
                    let r = tokio::time::timeout(READ_TIMEOUT, p.db_clock(&node)).await;
                    (node.name.clone(), r)
                });
            }
        }
        let mut readings = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((n, Ok(Ok(reading)))) => readings.push((n, reading.offset())),
                Ok((n, Ok(Err(e)))) => tracing::info!("clock offset of {n} not read: {e}"),
                Ok((n, Err(_))) => tracing::info!("clock offset of {n} not read in 5 s"),
                Err(e) => tracing::info!("clock offset read: {e}"),
            }
        }
        readings.sort_by(|a, b| a.0.cmp(&b.0));
        let expected: Vec<(String, f64)> = {
            let now = super::now_s();
            let clocks = self.clocks();
            readings
                .iter()
                .map(|(n, _)| (n.clone(), clocks.expected(n, now)))
                .collect()
        };
        // Every node whose clock the nemesis left off true time (offset
        // or rate), read or not: what the clock windows are made of.
        let in_force: Vec<(String, f64)> = {
            let now = super::now_s();
            let clocks = self.clocks();
            clocks
                .skewed()
                .into_iter()
                .map(|n| {
                    let e = clocks.expected(&n, now);
                    (n, e)
                })
                .collect()
        };
        Data::Map(vec![
            (Data::Str(c.name().into()), c.detail()),
            (
                Data::Str("clock-offsets".into()),
                map(readings.iter().map(|(n, (o, _))| (n.clone(), *o)).collect()),
            ),
            (
                Data::Str("clock-offset-errors".into()),
                map(readings.iter().map(|(n, (_, e))| (n.clone(), *e)).collect()),
            ),
            (Data::Str("expected-offsets".into()), map(expected)),
            (Data::Str(IN_FORCE.into()), map(in_force)),
        ])
    }

    /// Writes `+0` to every node's control file (idempotent; nothing when
    /// the database was not started under libfaketime).
    ///
    /// # Errors
    /// The nodes whose file could not be written.
    pub async fn reset_all_clocks(&self) -> Result<(), FaultError> {
        if let Some(net) = self.simulated_network() {
            self.reset_sim_clocks(net.as_ref());
            return Ok(());
        }
        let Some(process) = self.process() else {
            return Ok(());
        };
        let mut errs = Vec::new();
        for node in self.nodes() {
            let Some(file) = process.clock_file(&node) else {
                continue;
            };
            let zero = self.clocks().zero(&node.name);
            match self.write_spec(&node.name, &file, &zero).await {
                Ok(()) => self.clocks().reset_node(&node.name),
                Err(e) => errs.push(e),
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(errs.remove(0)),
            _ => Err(FaultError::Many(errs)),
        }
    }
}
