//! etcd: a client over the v3 JSON gateway, Jepsen's mapping of list-append,
//! rw-register and the linearizable register onto etcd `Txn`s
//! ([`client`]), a local multi-member cluster on loopback ports for
//! tests without the testbed ([`local`]), one member per node over SSH
//! ([`nodes`]), adding and removing members at run time ([`membership`]),
//! and its catalog entry ([`Etcd`]: `--db etcd`, behind `--url`,
//! `--local` or on `--nodes`).
//!
//! Key decision: the gateway (HTTP/1.1 + JSON, served by every etcd ≥ 3.4
//! on its client URL) instead of gRPC, so the adapter needs no protoc,
//! tonic or prost; the `Txn` semantics are the same requests.

pub mod client;
mod database;
pub mod http;
pub mod local;
pub mod membership;
pub mod nodes;
mod revision;

pub use client::{EtcdClient, EtcdFactory, client_addr};
pub use database::{Etcd, EtcdUrlFactory, parse_url};
pub use local::{LocalCluster, LocalClusterError, LocalMembers};
pub use nodes::{ClusterState, EtcdNodes, EtcdNodesConfig};
