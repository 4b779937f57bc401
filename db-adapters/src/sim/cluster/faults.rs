//! The faults of [`Cluster`]: kill (and the loss of what no node holds
//! any more), start, pause, resume, partitions and clock offsets.

use super::{Cluster, ClusterTxn, Value};
use crate::sim::engine::TxnId;

impl Cluster {
    /// Kills node `i`: its open transactions abort and its memory is lost
    /// (in `lose-unsynced`, the entries it had not synced; acknowledged
    /// entries no node holds any more are lost from the store).
    pub fn kill(&mut self, i: usize) {
        let Some(n) = self.nodes.get_mut(i) else {
            return;
        };
        n.up = false;
        n.paused = false;
        n.overlay.clear();
        n.applied = n.synced;
        let mine: Vec<TxnId> = self
            .engine_txns
            .iter()
            .filter(|(_, t)| t.node == i)
            .map(|(id, _)| *id)
            .collect();
        for id in mine {
            self.abort(ClusterTxn::Engine(id));
        }
        self.local_txns.retain(|_, t| t.node != i);
        let durable = self
            .nodes
            .iter()
            .map(|n| if n.up { n.applied } else { n.synced })
            .max()
            .unwrap_or(0);
        if durable < self.log_len {
            self.lose_after(durable);
        }
    }

    /// The log entries from `keep` on are gone from every node: the store
    /// goes back to the newest surviving value of each key they wrote.
    fn lose_after(&mut self, keep: u64) {
        self.engine.abort_all();
        self.engine_txns.clear();
        self.stats.lost_entries += self.log_len - keep;
        let mut restored = Vec::new();
        for (k, vs) in &mut self.versions {
            if vs.last().is_some_and(|v| v.idx >= keep) {
                vs.retain(|v| v.idx < keep);
                let value = vs.last().map_or(Value::Nil, |v| v.value.clone());
                restored.push((k.clone(), value));
            }
        }
        restored.sort_by(|a, b| a.0.cmp(&b.0));
        for (k, v) in restored {
            self.engine.restore(&k, v);
        }
        self.log_len = keep;
        for n in &mut self.nodes {
            n.applied = n.applied.min(keep);
            n.synced = n.synced.min(keep);
        }
    }

    /// Whether node `i` runs (not killed, or started again).
    pub fn is_up(&self, i: usize) -> bool {
        self.nodes.get(i).is_some_and(|n| n.up)
    }

    /// Starts node `i` again from what it had synced (it catches up on its
    /// next transaction with a majority).
    pub fn start(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.up = true;
        }
    }

    /// Pauses node `i`: it answers nothing until resumed.
    pub fn pause(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i)
            && n.up
        {
            n.paused = true;
        }
    }

    /// Resumes node `i`.
    pub fn resume(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.paused = false;
        }
    }

    /// Whether node `i` is paused.
    pub fn is_paused(&self, i: usize) -> bool {
        self.nodes.get(i).is_some_and(|n| n.paused)
    }

    fn grudge_links(
        &self,
        grudge: &nemesis::partition::Grudge,
    ) -> Result<Vec<(usize, usize)>, String> {
        let index = |name: &String| self.node_index(name).ok_or_else(|| name.clone());
        let mut links = Vec::new();
        for (to, froms) in grudge {
            let to = index(to)?;
            for from in froms {
                links.push((to, index(from)?));
            }
        }
        Ok(links)
    }

    /// Drops the links of `grudge` (receiver → senders it drops).
    ///
    /// # Errors
    /// The name of a node the cluster does not have (nothing changed).
    pub fn partition(&mut self, grudge: &nemesis::partition::Grudge) -> Result<(), String> {
        for link in self.grudge_links(grudge)? {
            *self.drops.entry(link).or_insert(0) += 1;
        }
        Ok(())
    }

    /// Undoes one [`Cluster::partition`] of `grudge`.
    pub fn unpartition(&mut self, grudge: &nemesis::partition::Grudge) {
        for link in self.grudge_links(grudge).unwrap_or_default() {
            if let Some(c) = self.drops.get_mut(&link) {
                *c -= 1;
                if *c == 0 {
                    self.drops.remove(&link);
                }
            }
        }
    }

    /// Removes every partition.
    pub fn heal_network(&mut self) {
        self.drops.clear();
    }

    /// Sets node `i`'s clock offset from true time.
    pub fn set_clock_offset(&mut self, i: usize, offset_us: i64) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.offset_us = offset_us;
        }
    }

    /// Node `i`'s clock offset from true time, as a client of the node
    /// would read it (`None`: no such node, or it is down or paused and
    /// does not answer).
    pub fn clock_offset_us(&self, i: usize) -> Option<i64> {
        self.nodes
            .get(i)
            .filter(|n| n.up && !n.paused)
            .map(|n| n.offset_us)
    }

    /// Puts every clock back on true time.
    pub fn reset_clocks(&mut self) {
        for n in &mut self.nodes {
            n.offset_us = 0;
        }
    }
}
