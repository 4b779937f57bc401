//! The `postgresql.conf` every PostgreSQL node gets beyond where it
//! listens: what setup writes and what the run record says harness
//! imposed ([`crate::db::Db::settings`]).

use super::PgClusterConfig;
use crate::db::Servers;

impl Servers<PgClusterConfig> {
    /// The `postgresql.conf` lines every node gets beyond where it listens:
    /// harness's own, then `--db-conf`'s (later lines win). What
    /// [`crate::db::Db::settings`] records.
    pub(super) fn imposed_conf(&self) -> Vec<String> {
        let (sync_method, dsm) = match self.cfg.lossy {
            Some(_) => ("fsync", "posix"),
            None => ("syncfs", "mmap"),
        };
        let mut lines: Vec<String> = [
            "wal_level = replica".to_string(),
            "max_wal_senders = 10".to_string(),
            "hot_standby = on".to_string(),
            format!("recovery_init_sync_method = {sync_method}"),
            "max_connections = 200".to_string(),
            format!("dynamic_shared_memory_type = {dsm}"),
        ]
        .into();
        lines.extend(self.cfg.extra_conf.iter().cloned());
        lines
    }
}
