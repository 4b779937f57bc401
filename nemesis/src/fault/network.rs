//! The network side of [`Nemesis`]: packet shaping, partitions and their
//! heal (iptables in harness's own chain, or the simulator's network), the
//! heal of every fault, and the listing of harness's rules.

use super::*;

impl Nemesis {
    /// Applies packet fault `p` on every node with a shaped link.
    pub(super) async fn shape(&self, p: &PacketFault) -> Result<(), FaultError> {
        let names: Vec<String> = self.nodes().into_iter().map(|n| n.name).collect();
        let mut plan = Vec::new();
        for (node, peers) in p.links(&names) {
            let mut ips = Vec::new();
            for peer in &peers {
                ips.push(self.ip_of(peer).await?);
            }
            let target = p.targets.contains(&node);
            plan.push((node, packet::shape_command(&ips, &p.behavior, target)));
        }
        self.lock().partitioned = true;
        let mut set = JoinSet::new();
        for (node, cmd) in plan {
            spawn_iptables(&mut set, self.remote(&node)?, cmd, self.command_timeout);
        }
        collect(set).await
    }

    /// Reads the loss counters (the stop op's value: asked vs measured),
    /// then removes every packet rule and harness's qdisc on every node.
    pub(super) async fn unshape(&self, p: &PacketFault) -> Result<(), FaultError> {
        let (value, errs) =
            packet::measure_and_heal(&self.remotes, self.command_timeout, p.behavior.loss).await;
        self.lock().result = Some(value);
        join_errors(errs.into_iter().map(FaultError::from).collect())
    }

    pub(super) async fn partition(&self, g: &Grudge) -> Result<(), FaultError> {
        // What took effect: the grudge's nodes whose rules are in place
        // (none until they are), the op's recorded value.
        let applied = |nodes: &dyn Fn(&str) -> bool| -> Grudge {
            g.iter()
                .filter(|(n, drops)| !drops.is_empty() && nodes(n))
                .map(|(n, d)| (n.clone(), d.clone()))
                .collect()
        };
        self.set_result(grudge_data(&Grudge::new()));
        if let Some(net) = &self.simulated {
            self.lock().partitioned = true;
            net.partition(g).map_err(FaultError::UnknownNode)?;
            self.set_result(grudge_data(&applied(&|_| true)));
            return Ok(());
        }
        let mut plan: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for (node, drops) in g {
            self.remote(node)?;
            let mut ips = Vec::new();
            for d in drops {
                ips.push(self.ip_of(d).await?);
            }
            if !ips.is_empty() {
                plan.insert(node.clone(), ips);
            }
        }
        self.lock().partitioned = true;
        let mut set = JoinSet::new();
        for (node, ips) in plan {
            let cmd = drop_command(&ips);
            let mut one = JoinSet::new();
            spawn_iptables(&mut one, self.remote(&node)?, cmd, self.command_timeout);
            set.spawn(async move { (node, collect(one).await) });
        }
        let mut ok = BTreeSet::new();
        let mut errs = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((n, Ok(()))) => {
                    ok.insert(n);
                }
                Ok((_, Err(e))) => errs.push(e),
                Err(e) => errs.push(FaultError::Process(ProcessError {
                    node: "?".to_string(),
                    action: "partition",
                    message: format!("task failed: {e}"),
                })),
            }
        }
        self.set_result(grudge_data(&applied(&|n| ok.contains(n))));
        join_errors(errs)
    }

    /// Removes the rules of grudge `g` only (overlapping partitions of other
    /// packages stay in effect).
    pub(super) async fn unpartition(&self, g: &Grudge) -> Result<(), FaultError> {
        if let Some(net) = &self.simulated {
            net.unpartition(g);
            return Ok(());
        }
        let mut set = JoinSet::new();
        for (node, drops) in g {
            let r = self.remote(node)?;
            let mut ips = Vec::new();
            for d in drops {
                ips.push(self.ip_of(d).await?);
            }
            let t = self.command_timeout;
            set.spawn(async move {
                r.run_timeout(&undrop_command(&ips), t).await?;
                Ok(())
            });
        }
        collect(set).await
    }

    /// Removes every harness partition rule on every node (idempotent).
    ///
    /// # Errors
    /// The nodes where the heal command could not run.
    pub async fn heal_partitions(&self) -> Result<(), FaultError> {
        if let Some(net) = &self.simulated {
            net.heal_network();
            net.reset_clocks();
            self.lock().partitioned = false;
            return Ok(());
        }
        let mut set = JoinSet::new();
        for r in &self.remotes {
            let r = r.clone();
            let t = self.command_timeout;
            set.spawn(async move {
                r.run_timeout(&heal_command(), t).await?;
                Ok(())
            });
        }
        let res = collect(set).await;
        if res.is_ok() {
            self.lock().partitioned = false;
        }
        res
    }

    /// Heals everything: partitions on every node, resumes paused and starts
    /// killed nodes, sets every clock back to `+0`. Tries every step even
    /// when one fails.
    ///
    /// # Errors
    /// Every step that failed.
    pub async fn heal_all(&self) -> Result<(), FaultError> {
        let mut errs = Vec::new();
        if let Err(e) = self.heal_partitions().await {
            errs.push(e);
        }
        let (paused, killed) = {
            let a = self.lock();
            (
                a.paused.iter().cloned().collect::<Vec<_>>(),
                a.killed.iter().cloned().collect::<Vec<_>>(),
            )
        };
        if !paused.is_empty() {
            match self.stop(&Fault::Pause(paused)).await {
                Ok(()) => {}
                Err(e) => errs.push(e),
            }
        }
        // A snapshot never restored is dropped (the daemon deletes its
        // chunks at unmount).
        self.lock().snapshots.clear();
        let disk: Vec<String> = self.lock().disk_failed.iter().cloned().collect();
        if !disk.is_empty()
            && let Err(e) = self.each_ctl(&disk, &Command::Heal).await
        {
            errs.push(e);
        }
        if !killed.is_empty() {
            match self.stop(&Fault::Kill(killed)).await {
                Ok(()) => {}
                Err(e) => errs.push(e),
            }
        }
        if let Err(e) = self.reset_all_clocks().await {
            errs.push(e);
        }
        // Last: a joiner copies its data from members that serve again.
        for node in self.removed() {
            if let Err(e) = self.join(&node).await {
                errs.push(e);
            }
        }
        join_errors(errs)
    }

    /// Lines of `iptables -S` on each node that mention harness's chain
    /// (empty everywhere after a heal).
    ///
    /// # Errors
    /// A node where `iptables -S` could not run.
    pub async fn harness_rules(&self) -> Result<BTreeMap<String, Vec<String>>, FaultError> {
        let mut out = BTreeMap::new();
        for r in &self.remotes {
            let o = r
                .run_timeout("iptables -w -S", self.command_timeout)
                .await?;
            let lines: Vec<String> = o
                .stdout_str()
                .lines()
                .filter(|l| l.contains(CHAIN))
                .map(str::to_string)
                .collect();
            out.insert(r.node().name.clone(), lines);
        }
        Ok(out)
    }
}
