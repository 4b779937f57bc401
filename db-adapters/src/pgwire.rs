//! A PostgreSQL-wire client for distributed SQL databases that speak it
//! (CockroachDB, YugabyteDB YSQL): connects per node (`<host>:<port>`) or
//! to a fixed URL, runs each transaction as `BEGIN ISOLATION LEVEL … /
//! COMMIT` with the shared statements of [`crate::sql::TxnTables`], never
//! retries, and classifies errors with a per-database function layered on
//! [`crate::sql::classify_pg`]. In the crate root, not in `postgres/`:
//! PostgreSQL's, Patroni's, CockroachDB's and YugabyteDB's clients are all
//! this one loop.
//!
//! Key decision: setup verifies that the server really runs transactions at
//! the requested level (`SHOW transaction_isolation` inside a transaction
//! begun at that level): CockroachDB silently upgrades READ COMMITTED to
//! SERIALIZABLE when the cluster setting is off, and a test would then
//! check the wrong model.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory, ErrorKind};
use crate::sql::{
    DataModel, Isolation, TxnPhase, TxnTables, decode_read, int_key, int_val, reconnect_backoff,
};
use crate::whitebox::WhiteBox;
use nemesis::Node;
use std::str::FromStr;
use std::time::{Duration, Instant};
use store::MicroOp;
use tokio_postgres::{NoTls, Statement};

/// Classifies a driver error at a transaction phase.
pub type Classifier = fn(&tokio_postgres::Error, TxnPhase) -> ClientError;

/// Where clients connect.
#[derive(Clone, Debug)]
pub enum Target {
    /// Every worker uses this URL (an existing cluster, `--url`).
    Url(String),
    /// Worker `i` connects to its node's host on this port.
    Nodes {
        /// Port on every node (26257 CockroachDB, 5433 YSQL).
        port: u16,
        /// Login user.
        user: String,
        /// Database name.
        dbname: String,
    },
}

impl Target {
    /// Worker `i` connects as `user` to `dbname` on its node's `port`.
    pub fn on_nodes(port: u16, user: &str, dbname: &str) -> Target {
        Target::Nodes {
            port,
            user: user.to_string(),
            dbname: dbname.to_string(),
        }
    }
}

/// What distinguishes one PG-wire database's client (CockroachDB, YSQL):
/// the login on its nodes, its tables, the levels it runs and its dialect.
/// Each such database is one constant of this type; the factory is built
/// here once.
pub struct PgWireDb {
    /// Login user on every node.
    pub user: &'static str,
    /// Database name on every node.
    pub dbname: &'static str,
    /// The tables its clients create.
    pub tables: TxnTables,
    /// Checks `--isolation`, returning the level it really runs.
    pub check_isolation: fn(Isolation) -> Result<Isolation, String>,
    /// The dialect for a level and `--select-for-update`.
    pub dialect: fn(Isolation, bool) -> Dialect,
}

impl PgWireDb {
    /// Worker `i` connects to its node's host on `port`.
    pub fn node_target(&self, port: u16) -> Target {
        Target::on_nodes(port, self.user, self.dbname)
    }

    /// A client factory.
    ///
    /// # Errors
    /// An unsupported isolation level or a bad URL, as a message.
    pub fn factory(
        &self,
        target: Target,
        isolation: Isolation,
        model: DataModel,
        select_for_update: bool,
    ) -> Result<PgWireFactory, String> {
        let isolation = (self.check_isolation)(isolation)?;
        let dialect = (self.dialect)(isolation, select_for_update);
        PgWireFactory::new(target, isolation, model, self.tables, dialect)
            .map_err(|e: PgWireError| e.to_string())
    }
}

/// Errors configuring a PG-wire factory.
#[derive(Debug, thiserror::Error)]
pub enum PgWireError {
    /// The URL does not parse.
    #[error("invalid {db} URL {url:?}: {reason}")]
    BadUrl {
        /// Database name.
        db: &'static str,
        /// The URL as given.
        url: String,
        /// What tokio-postgres said.
        reason: String,
    },
}

/// What differs between PG-wire databases.
#[derive(Clone, Debug)]
pub struct Dialect {
    /// Database name for messages (`CockroachDB`, `YugabyteDB`).
    pub db: &'static str,
    /// Error classification.
    pub classify: Classifier,
    /// Statements run once at setup when the server is really this
    /// database (detected by `version_marker` in `SELECT version()`), e.g.
    /// `SET CLUSTER SETTING …`. Skipped, with a log line, on other servers.
    pub setup_statements: Vec<String>,
    /// Substring of `version()` that identifies the database.
    pub version_marker: &'static str,
    /// Optional lock clause appended to reads (` FOR UPDATE`).
    pub read_lock: Option<&'static str>,
    /// The certificates `--version-order db` records (`Off`: none exist).
    pub white_box: WhiteBox,
}

/// Opens PG-wire sessions and creates the schema.
#[derive(Clone)]
pub struct PgWireFactory {
    target: Target,
    base: tokio_postgres::Config,
    isolation: Isolation,
    model: DataModel,
    tables: TxnTables,
    dialect: Dialect,
    white_box: WhiteBox,
}

impl std::fmt::Debug for PgWireFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWireFactory")
            .field("db", &self.dialect.db)
            .field(
                "target",
                &match &self.target {
                    Target::Url(_) => "url".to_string(),
                    Target::Nodes { port, .. } => format!("nodes:{port}"),
                },
            )
            .field("isolation", &self.isolation)
            .finish()
    }
}

impl PgWireFactory {
    /// A factory; `isolation` must already be one the database accepts.
    ///
    /// # Errors
    /// [`PgWireError::BadUrl`].
    pub fn new(
        target: Target,
        isolation: Isolation,
        model: DataModel,
        tables: TxnTables,
        dialect: Dialect,
    ) -> Result<PgWireFactory, PgWireError> {
        let mut base = match &target {
            Target::Url(url) => {
                tokio_postgres::Config::from_str(url).map_err(|e| PgWireError::BadUrl {
                    db: dialect.db,
                    url: url.clone(),
                    reason: e.to_string(),
                })?
            }
            Target::Nodes { user, dbname, .. } => {
                let mut c = tokio_postgres::Config::new();
                c.user(user).dbname(dbname);
                c
            }
        };
        with_defaults(&mut base);
        Ok(PgWireFactory {
            target,
            base,
            isolation,
            model,
            tables,
            dialect,
            white_box: WhiteBox::Off,
        })
    }

    /// Records the dialect's white-box certificates (`--version-order db`);
    /// a dialect without any records nothing.
    pub fn with_version_order_db(mut self) -> PgWireFactory {
        self.white_box = self.dialect.white_box;
        self
    }

    /// The isolation level transactions run at.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The database's dialect.
    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    fn config_for(&self, node: &Node) -> tokio_postgres::Config {
        let mut c = self.base.clone();
        if let Target::Nodes { port, .. } = &self.target {
            c.host(&node.host).port(*port);
        }
        c
    }

    async fn connect(&self, node: &Node) -> Result<tokio_postgres::Client, ClientError> {
        let (client, conn) = self.config_for(node).connect(NoTls).await.map_err(|e| {
            ClientError::definite(
                "connect",
                format!("node {}: cannot connect: {e}", node.name),
            )
        })?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("PG-wire connection ended: {e}");
            }
        });
        Ok(client)
    }

    /// `SELECT version()` of the server behind `node` (for run metadata and
    /// dialect detection).
    ///
    /// # Errors
    /// A definite error when the server cannot be reached or queried.
    pub async fn server_version(&self, node: &Node) -> Result<String, ClientError> {
        let c = self.connect(node).await?;
        let row = c
            .query_one("SELECT version()", &[])
            .await
            .map_err(|e| ClientError::definite("version", e.to_string()))?;
        row.try_get::<_, String>(0)
            .map_err(|e| ClientError::definite("version", e.to_string()))
    }

    /// The level the server reports inside a transaction begun at the
    /// configured level (`SHOW transaction_isolation`, lower case).
    ///
    /// # Errors
    /// A definite error when the server cannot be queried.
    pub async fn effective_isolation(&self, node: &Node) -> Result<String, ClientError> {
        let c = self.connect(node).await?;
        let q = |e: tokio_postgres::Error| ClientError::definite("isolation", e.to_string());
        c.batch_execute(&format!("BEGIN ISOLATION LEVEL {}", self.isolation.sql()))
            .await
            .map_err(q)?;
        let row = c
            .query_one("SHOW transaction_isolation", &[])
            .await
            .map_err(q)?;
        let level: String = row.try_get(0).map_err(q)?;
        let _ = c.batch_execute("ROLLBACK").await;
        Ok(level.to_ascii_lowercase())
    }

    async fn session(&self, node: &Node) -> Result<PgSession, ClientError> {
        let client = self.connect(node).await?;
        PgSession::prepare(
            client,
            self.tables,
            self.model,
            self.dialect.read_lock,
            self.dialect.classify,
        )
        .await
    }
}

impl ClientFactory for PgWireFactory {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let version = self.server_version(node).await?;
            let client = self.connect(node).await?;
            if version.contains(self.dialect.version_marker) {
                for s in &self.dialect.setup_statements {
                    client.batch_execute(s).await.map_err(|e| {
                        ClientError::definite("setup", format!("node {}: `{s}`: {e}", node.name))
                    })?;
                }
            } else if !self.dialect.setup_statements.is_empty() {
                tracing::warn!(
                    "server is not {} ({version}); skipping {}-only setup statements",
                    self.dialect.db,
                    self.dialect.db
                );
            }
            // Values must be unique per key across the whole table: data left
            // by an earlier run would look like garbage reads.
            let mut sql = String::new();
            for t in 0..self.tables.table_count {
                sql.push_str(&self.tables.drop_sql(t));
                sql.push_str(";\n");
                sql.push_str(&self.tables.create_sql(t));
                sql.push_str(";\n");
            }
            client.batch_execute(&sql).await.map_err(|e| {
                ClientError::definite("setup", format!("node {}: creating tables: {e}", node.name))
            })?;
            let want = self.isolation.sql().to_ascii_lowercase();
            let got = self.effective_isolation(node).await?;
            if got != want {
                return Err(ClientError::definite(
                    "isolation-not-honoured",
                    format!(
                        "node {}: asked {} for {want} but transactions run at {got}",
                        node.name, self.dialect.db
                    ),
                ));
            }
            Ok(())
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        open_txn_client(self, node, self.isolation)
    }
}

/// What every PG-wire factory adds to its connection settings unless the
/// URL sets them: a 5 s connect timeout and the application name `harness`.
pub(crate) fn with_defaults(config: &mut tokio_postgres::Config) {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    if config.get_application_name().is_none() {
        config.application_name("harness");
    }
}

/// `ClientFactory::open` of every PG-wire factory: a session on `node`, in
/// the shared transaction client.
pub(crate) fn open_txn_client<'a, S: PgSessionSource + Clone>(
    source: &'a S,
    node: &'a Node,
    isolation: Isolation,
) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
    Box::pin(async move {
        let session = source.session(node).await?;
        Ok(Box::new(PgTxnClient::new(
            source.clone(),
            node.clone(),
            session,
            isolation,
        )) as Box<dyn Client>)
    })
}

/// What a PG-wire transaction makes of an error raised before `COMMIT` was
/// sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PreCommitErrors {
    /// Always a definite `fail` (PostgreSQL: the server aborts the
    /// transaction on any error).
    ForceDefinite,
    /// Keep the classifier's verdict (CockroachDB's 40003, YSQL's
    /// "Operation expired" are indefinite).
    KeepVerdict,
}

/// One connection with its prepared statements.
pub(crate) struct PgSession {
    client: tokio_postgres::Client,
    /// Prepared `SELECT` per table.
    reads: Vec<Statement>,
    /// Prepared append or write upsert per table.
    writes: Vec<Statement>,
}

impl PgSession {
    /// Prepares the read (with `read_lock` appended) and the model's write
    /// statement of every table on `client`; a failure is classified as
    /// before `COMMIT`.
    pub(crate) async fn prepare(
        client: tokio_postgres::Client,
        tables: TxnTables,
        model: DataModel,
        read_lock: Option<&str>,
        classify: Classifier,
    ) -> Result<PgSession, ClientError> {
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for t in 0..tables.table_count {
            let mut read = tables.read_sql(t);
            if let Some(lock) = read_lock {
                read.push_str(lock);
            }
            let write = match model {
                DataModel::ListAppend => tables.append_sql(t),
                DataModel::RwRegister => tables.write_sql(t),
            };
            let prep = |e| classify(&e, TxnPhase::BeforeCommit);
            reads.push(client.prepare(&read).await.map_err(prep)?);
            writes.push(client.prepare(&write).await.map_err(prep)?);
        }
        Ok(PgSession {
            client,
            reads,
            writes,
        })
    }
}

/// What the shared PG-wire client needs from a factory.
pub(crate) trait PgSessionSource: Send + Sync + 'static {
    /// A fresh session on `node`.
    fn session<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<PgSession, ClientError>>;
    /// The data model.
    fn model(&self) -> DataModel;
    /// The table layout.
    fn tables(&self) -> TxnTables;
    /// Error classification.
    fn classify(&self) -> Classifier;
    /// What an error before `COMMIT` becomes.
    fn pre_commit(&self) -> PreCommitErrors;
    /// Which white-box facts to record (`--version-order db`).
    fn white_box(&self) -> WhiteBox {
        WhiteBox::Off
    }
    /// The lock clause of reads (` FOR UPDATE`), also on white-box reads.
    fn read_lock(&self) -> Option<&'static str> {
        None
    }
}

impl PgSessionSource for PgWireFactory {
    fn session<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<PgSession, ClientError>> {
        Box::pin(PgWireFactory::session(self, node))
    }
    fn model(&self) -> DataModel {
        self.model
    }
    fn tables(&self) -> TxnTables {
        self.tables
    }
    fn classify(&self) -> Classifier {
        self.dialect.classify
    }
    fn pre_commit(&self) -> PreCommitErrors {
        PreCommitErrors::KeepVerdict
    }
    fn white_box(&self) -> WhiteBox {
        self.white_box
    }
    fn read_lock(&self) -> Option<&'static str> {
        self.dialect.read_lock
    }
}

/// The one PG-wire transaction client (PostgreSQL, CockroachDB, YSQL): a
/// session per worker, reconnected lazily with a backoff after it broke,
/// `BEGIN ISOLATION LEVEL … / statements / COMMIT`, never retried.
pub(crate) struct PgTxnClient<S> {
    source: S,
    node: Node,
    session: Option<PgSession>,
    /// When a connect failed or a broken session was found: the next
    /// connect waits out the backoff from then (see the MySQL client).
    last_failure: Option<Instant>,
    begin: String,
    /// The last `ok` transaction's white-box fields (see `postgres::whitebox`).
    extra: Vec<(String, store::Data)>,
}

impl<S: PgSessionSource> PgTxnClient<S> {
    /// A client over an open session; transactions begin at `isolation`.
    pub(crate) fn new(source: S, node: Node, session: PgSession, isolation: Isolation) -> Self {
        PgTxnClient {
            source,
            node,
            session: Some(session),
            last_failure: None,
            begin: format!("BEGIN ISOLATION LEVEL {}", isolation.sql()),
            extra: Vec::new(),
        }
    }

    async fn ensure_session(&mut self) -> Result<(), ClientError> {
        if self.session.as_ref().is_some_and(|s| !s.client.is_closed()) {
            return Ok(());
        }
        if self.session.take().is_some() {
            // It broke: reconnect no faster than the backoff allows.
            self.last_failure = Some(Instant::now());
        }
        reconnect_backoff(self.last_failure).await;
        match self.source.session(&self.node).await {
            Ok(s) => {
                self.session = Some(s);
                self.last_failure = None;
                Ok(())
            }
            Err(e) => {
                self.last_failure = Some(Instant::now());
                Err(ClientError::definite("no-client", e.message))
            }
        }
    }

    async fn run(&mut self, txn: &[MicroOp]) -> Result<Vec<MicroOp>, ClientError> {
        let model = self.source.model();
        for mop in txn {
            int_key(mop.key())?;
            match mop {
                MicroOp::Append(_, v) | MicroOp::Write(_, v) => {
                    int_val(v)?;
                    if matches!(mop, MicroOp::Append(..)) != (model == DataModel::ListAppend) {
                        return Err(ClientError::definite(
                            "wrong-workload",
                            format!("micro-op {} does not belong to this workload", mop.f_name()),
                        ));
                    }
                }
                MicroOp::Read(..) => {}
                MicroOp::ReadRange(r) => {
                    crate::predicate::bounds(r)?;
                }
            }
        }
        let cas = crate::register::cas_parts(txn)?;
        self.ensure_session().await?;
        let classify = self.source.classify();
        let tables = self.source.tables();
        let pre_commit = self.source.pre_commit();
        let white_box = self.source.white_box();
        let read_lock = self.source.read_lock();
        self.extra.clear();
        let Some(s) = self.session.as_ref() else {
            return Err(ClientError::definite("no-client", "no session"));
        };
        s.client
            .batch_execute(&self.begin)
            .await
            .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
        let body = async {
            if let Some((id, old, new)) = cas {
                let sql = crate::register::pg_cas_sql(tables.table_of(id));
                let n = s
                    .client
                    .execute(sql.as_str(), &[&new.to_string(), &id, &old.to_string()])
                    .await
                    .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
                if n == 0 {
                    return Err(crate::register::cas_mismatch(id, old));
                }
                return Ok((txn.to_vec(), Vec::new()));
            }
            let mut out = Vec::with_capacity(txn.len());
            let mut xmins: Vec<Option<String>> = Vec::with_capacity(txn.len());
            for mop in txn {
                if let MicroOp::ReadRange(r) = mop {
                    let (lo, hi) = crate::predicate::bounds(r)?;
                    if r.is_count() {
                        let sql = crate::predicate::pg_count_sql(&tables);
                        let n: i64 = s
                            .client
                            .query_one(sql.as_str(), &[&lo, &hi])
                            .await
                            .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?
                            .try_get(0)
                            .map_err(|e| ClientError::definite("decode", format!("count: {e}")))?;
                        out.push(MicroOp::ReadRange(Box::new(
                            crate::predicate::complete_count(r, n)?,
                        )));
                        xmins.push(None);
                        continue;
                    }
                    let sql = crate::predicate::pg_range_sql(&tables);
                    let rows = s
                        .client
                        .query(sql.as_str(), &[&lo, &hi])
                        .await
                        .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
                    let rows = rows
                        .iter()
                        .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, Option<String>>(1)?)))
                        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                        .map_err(|e| ClientError::definite("decode", format!("range row: {e}")))?;
                    out.push(MicroOp::ReadRange(Box::new(crate::predicate::complete(
                        r, rows,
                    )?)));
                    xmins.push(None);
                    continue;
                }
                let id = int_key(mop.key())?;
                let t = tables.table_of(id);
                match mop {
                    MicroOp::Read(k, _) => {
                        let row = if let Some(mut sql) = white_box.read_sql(t) {
                            sql.push_str(read_lock.unwrap_or_default());
                            s.client.query_opt(sql.as_str(), &[&id]).await
                        } else {
                            s.client.query_opt(&s.reads[t], &[&id]).await
                        }
                        .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
                        let text: Option<String> = match &row {
                            Some(r) => r.try_get(0).map_err(|e| {
                                ClientError::definite("decode", format!("reading val: {e}"))
                            })?,
                            None => None,
                        };
                        xmins.push(match (&row, white_box) {
                            (Some(r), w) if w != WhiteBox::Off => {
                                r.try_get::<_, Option<String>>(1).ok().flatten()
                            }
                            _ => None,
                        });
                        let read = decode_read(model, text.as_deref())?;
                        out.push(MicroOp::Read(k.clone(), read));
                    }
                    MicroOp::Append(_, v) | MicroOp::Write(_, v) => {
                        let val = int_val(v)?.to_string();
                        s.client
                            .execute(&s.writes[t], &[&id, &val])
                            .await
                            .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
                        out.push(mop.clone());
                        xmins.push(None);
                    }
                    MicroOp::ReadRange(_) => {}
                }
            }
            let extra = if let Some(sql) = white_box.txn_sql() {
                let row = s
                    .client
                    .query_one(sql, &[])
                    .await
                    .map_err(|e| classify(&e, TxnPhase::BeforeCommit))?;
                let cols = (0..row.len())
                    .map(|i| row.try_get::<_, String>(i))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ClientError::definite("decode", format!("certificate: {e}")))?;
                white_box.extra(&cols, xmins)?
            } else {
                Vec::new()
            };
            Ok::<_, ClientError>((out, extra))
        };
        match body.await {
            Ok((out, extra)) => {
                s.client
                    .batch_execute("COMMIT")
                    .await
                    .map_err(|e| classify(&e, TxnPhase::Commit))?;
                self.extra = extra;
                Ok(out)
            }
            Err(e) => {
                // COMMIT was never sent: roll back so the session is usable
                // again; the dialect decides whether the error stays as
                // classified or is a definite failure.
                let _ = s.client.batch_execute("ROLLBACK").await;
                Err(match pre_commit {
                    PreCommitErrors::ForceDefinite => definite(e),
                    PreCommitErrors::KeepVerdict => e,
                })
            }
        }
    }
}

impl<S: PgSessionSource> Client for PgTxnClient<S> {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(self.run(txn))
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        // Dropping the client ends the connection task.
        Box::pin(async move { drop(self) })
    }

    fn take_extra(&mut self) -> Vec<(String, store::Data)> {
        std::mem::take(&mut self.extra)
    }
}

/// Whether `err`'s text (server message or driver text) contains `needle`,
/// case-insensitively.
pub fn message_contains(err: &tokio_postgres::Error, needle: &str) -> bool {
    let text = match err.as_db_error() {
        Some(db) => db.message().to_string(),
        None => err.to_string(),
    };
    text.to_ascii_lowercase()
        .contains(&needle.to_ascii_lowercase())
}

/// Marks `e` indefinite (keeping its code and message).
pub fn indefinite(e: ClientError) -> ClientError {
    ClientError {
        kind: ErrorKind::Indefinite,
        ..e
    }
}

/// Marks `e` definite (keeping its code and message).
pub fn definite(e: ClientError) -> ClientError {
    ClientError {
        kind: ErrorKind::Definite,
        ..e
    }
}
