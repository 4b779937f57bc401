//! Patroni-managed PostgreSQL high availability on `--nodes`
//! (`--db patroni`): an etcd DCS and a Patroni member per node
//! ([`lifecycle`], [`dcs`]), settings through `--db-conf` ([`settings`]:
//! asynchronous by default, `synchronous_mode`, `synchronous_mode_strict`,
//! Patroni's timings, and what `kill`/`pause` faults act on), and clients
//! that follow the primary ([`client`]).
//!
//! What a run should expect: in asynchronous mode a failover may lose
//! acknowledged commits (Patroni documents it), and with no watchdog on the
//! nodes a Patroni-only stop on the primary gives two primaries whose
//! losing side is rewound away; `synchronous_mode_strict` promises no
//! acknowledged commit is lost. The tests in `tests/run_patroni.rs` show both.

pub mod client;
mod database;
pub mod dcs;
pub mod lifecycle;
mod roles;
pub mod settings;
mod signals;

pub use client::PatroniFactory;
pub use database::Patroni;
pub use lifecycle::{PatroniCluster, PatroniConfig, PatroniDb};
pub use settings::{PatroniConf, ProcessScope};
