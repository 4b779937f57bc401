//! Clients that follow Patroni's primary ([`PatroniFactory`]): every
//! connection lists all nodes, libpq-style, with
//! `target_session_attrs=read-write` (tokio-postgres tries the hosts in
//! order and keeps the first whose `transaction_read_only` is off), so a
//! client finds the primary wherever it is and, once its connection broke,
//! finds the new one at its next transaction (the shared PG-wire client
//! reconnects lazily).
//!
//! Key decision: the host order is rotated per connection. During a split
//! brain (a Patroni-only stop: no watchdog on the nodes) two servers answer
//! read-write; a fixed order would hide the second behind the first, and
//! the writes that the test exists to catch would never reach it. Nor is
//! a REST check put in front of transactions: what clients see in such a
//! window is the point of the test.
//!
//! Errors are PostgreSQL's ([`crate::sql::classify_pg`]): any error before
//! `COMMIT` is a definite `fail`, a connection lost during `COMMIT`
//! (failover, demotion) an indefinite `info`.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::pgwire::{Classifier, PgSession, PgSessionSource, PreCommitErrors};
use crate::sql::{DataModel, Isolation, TxnTables, classify_pg};
use nemesis::Node;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_postgres::config::TargetSessionAttrs;

/// Connections to the read-write server among `hosts`.
#[derive(Clone)]
pub struct PatroniFactory {
    hosts: Vec<(String, u16)>,
    isolation: Isolation,
    model: DataModel,
    tables: TxnTables,
    connect_timeout: Duration,
    next: Arc<AtomicUsize>,
}

impl PatroniFactory {
    /// Clients of the servers at `hosts` (`host`, `port`), transactions at
    /// `isolation` on the `model`'s tables.
    pub fn new(hosts: Vec<(String, u16)>, isolation: Isolation, model: DataModel) -> Self {
        PatroniFactory {
            hosts,
            isolation,
            model,
            tables: TxnTables::default(),
            connect_timeout: Duration::from_secs(2),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The host order of the next connection: the list rotated by one more
    /// each time.
    pub fn next_order(&self) -> Vec<(String, u16)> {
        let n = self.hosts.len().max(1);
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut order = self.hosts.clone();
        let k = start.min(order.len());
        order.rotate_left(k);
        order
    }

    /// The connection settings of the next connection.
    pub fn next_config(&self) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        for (h, p) in self.next_order() {
            c.host(&h);
            c.port(p);
        }
        c.user("postgres")
            .dbname("postgres")
            .target_session_attrs(TargetSessionAttrs::ReadWrite)
            .connect_timeout(self.connect_timeout)
            .application_name("harness");
        c
    }

    async fn session(&self) -> Result<PgSession, ClientError> {
        crate::postgres::open_session(
            &self.next_config(),
            "no read-write server",
            self.tables,
            self.model,
        )
        .await
    }
}

impl PgSessionSource for PatroniFactory {
    fn session<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<PgSession, ClientError>> {
        Box::pin(PatroniFactory::session(self))
    }
    fn model(&self) -> DataModel {
        self.model
    }
    fn tables(&self) -> TxnTables {
        self.tables
    }
    fn classify(&self) -> Classifier {
        classify_pg
    }
    fn pre_commit(&self) -> PreCommitErrors {
        PreCommitErrors::ForceDefinite
    }
}

impl ClientFactory for PatroniFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let client =
                crate::postgres::connect(&self.next_config(), "no read-write server").await?;
            crate::postgres::recreate_tables(&client, self.tables).await
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        crate::pgwire::open_txn_client(self, node, self.isolation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_connection_starts_at_the_next_host_and_asks_for_read_write() {
        let hosts: Vec<(String, u16)> = (1..=3).map(|i| (format!("10.99.0.{i}"), 5432)).collect();
        let f = PatroniFactory::new(hosts, Isolation::Serializable, DataModel::ListAppend);
        let firsts: Vec<String> = (0..4).map(|_| f.next_order()[0].0.clone()).collect();
        assert_eq!(firsts, ["10.99.0.1", "10.99.0.2", "10.99.0.3", "10.99.0.1"]);
        let c = f.next_config();
        assert_eq!(c.get_hosts().len(), 3);
        assert_eq!(c.get_ports(), [5432, 5432, 5432]);
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(2)));
    }

    #[test]
    fn no_hosts_gives_an_empty_order_not_a_panic() {
        let f = PatroniFactory::new(Vec::new(), Isolation::Serializable, DataModel::ListAppend);
        assert!(f.next_order().is_empty());
    }
}
