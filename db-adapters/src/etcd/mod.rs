//! etcd: a client over etcd's v3 gRPC API, Jepsen's mapping of list-append,
//! rw-register and the linearizable register onto etcd `Txn`s
//! ([`client`]), a local multi-member cluster on loopback ports for
//! tests without the testbed ([`local`]), one member per node over SSH
//! ([`nodes`]), adding and removing members at run time ([`membership`]),
//! and its catalog entry ([`Etcd`]: `--db etcd`, behind `--url`,
//! `--local` or on `--nodes`).
//!
//! Key decision: gRPC (what etcd's own clients speak; one HTTP/2
//! connection per session, [`grpc`]) with the message subset written by
//! hand as `prost` structs ([`proto`]), so building needs no `protoc`.
//! The JSON gateway (`/v3/kv/txn`) the adapter used before is gone: it
//! opened a connection per request and carried base64 JSON.

pub mod client;
mod database;
pub mod grpc;
pub mod local;
pub mod membership;
pub mod nodes;
pub mod proto;
mod revision;

pub use client::{EtcdClient, EtcdFactory, client_addr};
pub use database::{Etcd, EtcdUrlFactory, parse_url};
pub use local::{LocalCluster, LocalClusterError, LocalMembers};
pub use nodes::{ClusterState, EtcdNodes, EtcdNodesConfig};
