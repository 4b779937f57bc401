//! Database adapters: per-database clients ([`client::Client`]) and cluster
//! lifecycles (`db::Db`).
//!
//! Key decision: error classification (definite → `fail`, indefinite → `info`)
//! lives in each adapter, next to the SQL that produces the errors; anything
//! not known to be definite is indefinite.

pub mod catalog;
pub mod client;
pub mod cluster;
pub mod cockroach;
pub mod db;
pub mod etcd;
pub mod exit_cleanup;
pub mod jepsen;
pub mod mysql;

pub mod patroni;
pub mod pgwire;
pub mod ports;
pub mod postgres;
pub mod predicate;
pub mod register;
pub mod sim;
pub mod sql;
pub mod sqlite;
pub mod tarball;
pub mod tidb;
pub mod whitebox;
pub mod yugabyte;
