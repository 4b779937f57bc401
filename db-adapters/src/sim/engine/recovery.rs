//! What the replicated cluster ([`crate::sim::cluster`]) asks of the
//! engine beyond transactions: a key's latest committed value (what a
//! commit replicates), and putting a key back to an older value when the
//! acknowledged writes after it are lost (a crash of the nodes that held
//! them), with every open transaction aborted first.

use super::super::value::Value;
use super::Engine;
use store::Key;

impl Engine {
    /// The latest committed value of `key`, as the engine keeps it.
    pub(crate) fn latest_value(&self, key: &Key) -> Value {
        self.keys
            .get(key)
            .map_or(Value::Nil, |ks| ks.latest().1.clone())
    }

    /// Aborts every open transaction (the nodes serving them crashed).
    pub(crate) fn abort_all(&mut self) {
        let open: Vec<_> = self.txns.keys().copied().collect();
        for id in open {
            self.abort(id);
        }
    }

    /// Makes `value` the latest committed value of `key`, as a new version
    /// (call [`Engine::abort_all`] first: open transactions may have seen
    /// what is being undone).
    pub(crate) fn restore(&mut self, key: &Key, value: Value) {
        self.flush_deferred();
        self.clock += 1;
        let ts = self.clock;
        let oldest = self.oldest_snapshot();
        let ks = self.keys.entry(key.clone()).or_default();
        ks.dirty = None;
        ks.lock = None;
        ks.versions.push((ts, value));
        ks.prune(oldest);
    }
}
