//! SQL shared by the SQL adapters: isolation levels, the list-append and
//! rw-register encodings (Jepsen's `txnN(id, val)` tables), value parsing,
//! and the classification of PostgreSQL-wire errors into definite (`fail`)
//! and indefinite (`info`).
//!
//! Key decision: PostgreSQL, CockroachDB and YugabyteDB YSQL speak the same
//! wire protocol and SQLSTATEs, so their clients share the statements built
//! here and [`classify_pg`]; only the per-database quirks live in their
//! modules.

use crate::client::ClientError;
use std::fmt;
use store::{Atom, Key, ReadValue, Val};

/// Which transaction model the client executes: list-append or rw-register.
/// It decides how a read's result is shaped (a list or a single value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataModel {
    /// `append` and `r` micro-ops; a key holds a list of values.
    ListAppend,
    /// `w` and `r` micro-ops; a key holds one value.
    RwRegister,
}

/// An isolation level a client may be asked to run transactions at
/// (`--isolation`). Each adapter documents which ones it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isolation {
    /// `serializable`.
    Serializable,
    /// `snapshot-isolation`.
    SnapshotIsolation,
    /// `repeatable-read`.
    RepeatableRead,
    /// `read-committed`.
    ReadCommitted,
    /// `read-uncommitted`.
    ReadUncommitted,
}

impl Isolation {
    /// Every level, in decreasing strength.
    pub const ALL: [Isolation; 5] = [
        Isolation::Serializable,
        Isolation::SnapshotIsolation,
        Isolation::RepeatableRead,
        Isolation::ReadCommitted,
        Isolation::ReadUncommitted,
    ];

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Serializable => "serializable",
            Isolation::SnapshotIsolation => "snapshot-isolation",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::ReadCommitted => "read-committed",
            Isolation::ReadUncommitted => "read-uncommitted",
        }
    }

    /// Parses a CLI spelling (also `si`, `snapshot`, `rc`, `ru`, `rr` and
    /// underscores or spaces for dashes).
    ///
    /// # Errors
    /// Names the unknown level and lists the accepted ones.
    pub fn parse(s: &str) -> Result<Isolation, String> {
        let norm = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        Ok(match norm.as_str() {
            "serializable" => Isolation::Serializable,
            "snapshot-isolation" | "snapshot" | "si" => Isolation::SnapshotIsolation,
            "repeatable-read" | "rr" => Isolation::RepeatableRead,
            "read-committed" | "rc" => Isolation::ReadCommitted,
            "read-uncommitted" | "ru" => Isolation::ReadUncommitted,
            _ => {
                let names: Vec<&str> = Isolation::ALL.iter().map(|i| i.name()).collect();
                return Err(format!(
                    "unknown isolation level {s:?}; expected one of {}",
                    names.join(", ")
                ));
            }
        })
    }

    /// The SQL spelling, for `BEGIN ISOLATION LEVEL …` (snapshot isolation
    /// has none in the standard; PostgreSQL's REPEATABLE READ is SI).
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::Serializable => "SERIALIZABLE",
            Isolation::SnapshotIsolation | Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::ReadUncommitted => "READ UNCOMMITTED",
        }
    }
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Isolation, String> {
        Isolation::parse(s)
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Jepsen's append schema: `table_count` tables `txn0..txnN` of
/// `(id bigint primary key, val text)`, a key living in table
/// `hash(key) mod table_count`. A list is stored as comma-separated values;
/// a register as the text of its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnTables {
    /// Number of tables (Jepsen's PostgreSQL suite uses 3).
    pub table_count: usize,
}

impl TxnTables {
    /// Three tables, as Elle's SQL clients create (`Default` too).
    pub const DEFAULT: TxnTables = TxnTables { table_count: 3 };
}

impl Default for TxnTables {
    fn default() -> TxnTables {
        TxnTables::DEFAULT
    }
}

impl TxnTables {
    /// The table holding `key` (a fixed mixing hash, so every client and
    /// every run agree).
    pub fn table_of(&self, key: i64) -> usize {
        let mut x = key as u64;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        (x % self.table_count.max(1) as u64) as usize
    }

    /// `DROP TABLE IF EXISTS txnI`.
    pub fn drop_sql(&self, table: usize) -> String {
        format!("DROP TABLE IF EXISTS txn{table}")
    }

    /// `CREATE TABLE IF NOT EXISTS txnI (id BIGINT PRIMARY KEY, val TEXT)`.
    pub fn create_sql(&self, table: usize) -> String {
        format!("CREATE TABLE IF NOT EXISTS txn{table} (id BIGINT NOT NULL PRIMARY KEY, val TEXT)")
    }

    /// Read by primary key: `$1` = key.
    pub fn read_sql(&self, table: usize) -> String {
        format!("SELECT val FROM txn{table} WHERE id = $1")
    }

    /// Append `$2` (text) to key `$1`: insert, or concatenate on conflict.
    pub fn append_sql(&self, table: usize) -> String {
        format!(
            "INSERT INTO txn{table} AS t (id, val) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', $2)"
        )
    }

    /// MySQL wire (TiDB, MariaDB): `CREATE TABLE IF NOT EXISTS txnI (id
    /// BIGINT PRIMARY KEY, sk BIGINT, val TEXT)` — Jepsen's TiDB schema,
    /// `sk` being the secondary key (= id).
    pub fn mysql_create_sql(&self, table: usize) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS txn{table} (id BIGINT NOT NULL PRIMARY KEY, sk BIGINT NOT NULL, val TEXT)"
        )
    }

    /// MySQL wire: read by primary key (`?` = key), optionally `FOR UPDATE`.
    pub fn mysql_read_sql(&self, table: usize, for_update: bool) -> String {
        let lock = if for_update { " FOR UPDATE" } else { "" };
        format!("SELECT val FROM txn{table} WHERE id = ?{lock}")
    }

    /// MySQL wire: append (params: id, sk, val, val) — Jepsen's TiDB
    /// `INSERT … ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', ?)`.
    pub fn mysql_append_sql(&self, table: usize) -> String {
        format!(
            "INSERT INTO txn{table} (id, sk, val) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', ?)"
        )
    }

    /// MySQL wire: register write (params: id, sk, val, val).
    pub fn mysql_write_sql(&self, table: usize) -> String {
        format!(
            "INSERT INTO txn{table} (id, sk, val) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE val = ?"
        )
    }

    /// MySQL wire: `SET SESSION TRANSACTION ISOLATION LEVEL …`.
    pub fn mysql_isolation_sql(isolation: Isolation) -> String {
        format!(
            "SET SESSION TRANSACTION ISOLATION LEVEL {}",
            isolation.sql()
        )
    }

    /// Write `$2` (text) to key `$1`: insert, or overwrite on conflict.
    pub fn write_sql(&self, table: usize) -> String {
        format!(
            "INSERT INTO txn{table} AS t (id, val) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET val = $2"
        )
    }
}

/// The integer of a key; harness generates integer keys and the SQL schema
/// stores them as `BIGINT`.
///
/// # Errors
/// A definite error (nothing was sent) for string or keyword keys.
pub fn int_key(key: &Key) -> Result<i64, ClientError> {
    match &key.0 {
        Atom::Int(i) => Ok(*i),
        other => Err(ClientError::definite(
            "unsupported-key",
            format!("SQL adapters store integer keys only, got {other}"),
        )),
    }
}

/// The integer of a value (see [`int_key`]).
///
/// # Errors
/// A definite error for non-integer values.
pub fn int_val(val: &Val) -> Result<i64, ClientError> {
    match &val.0 {
        Atom::Int(i) => Ok(*i),
        other => Err(ClientError::definite(
            "unsupported-value",
            format!("SQL adapters store integer values only, got {other}"),
        )),
    }
}

/// Parses a stored list (`"1,2,3"`; `None` or `""` is the empty list).
///
/// # Errors
/// An indefinite error naming the element that is not an integer: the
/// database returned something no client wrote, and the transaction's fate
/// is then unknown to the client.
pub fn parse_list(text: Option<&str>) -> Result<Vec<Val>, ClientError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    if text.is_empty() {
        return Ok(Vec::new());
    }
    // Sized up front: a read of a long list would otherwise grow it four
    // or five times (a PostgreSQL client's hot path).
    let mut out = Vec::with_capacity(text.bytes().filter(|&b| b == b',').count() + 1);
    for e in text.split(',') {
        out.push(parse_int(e).map(Val::int).ok_or_else(|| {
            ClientError::indefinite(
                "unparseable-read",
                format!("list element {e:?} of {text:?} is not an integer"),
            )
        })?);
    }
    Ok(out)
}

/// `e` as an integer, as `e.trim().parse::<i64>()` reads it: plain digits
/// with an optional `-` are read in place (every element of a list read
/// goes through here), anything else by `parse`.
fn parse_int(e: &str) -> Option<i64> {
    let t = e.trim();
    let (neg, digits) = match t.as_bytes().split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t.as_bytes()),
    };
    // 18 digits cannot overflow; longer ones and signs are `parse`'s.
    if digits.is_empty() || digits.len() > 18 {
        return t.parse().ok();
    }
    let mut v: i64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return t.parse().ok();
        }
        v = v * 10 + i64::from(d);
    }
    Some(if neg { -v } else { v })
}

/// Parses a stored register value (`None` is the initial nil).
///
/// # Errors
/// An indefinite error when the text is not an integer.
pub fn parse_register(text: Option<&str>) -> Result<Option<Val>, ClientError> {
    match text {
        None => Ok(None),
        Some(t) => t
            .trim()
            .parse::<i64>()
            .map(|i| Some(Val::int(i)))
            .map_err(|_| {
                ClientError::indefinite(
                    "unparseable-read",
                    format!("register value {t:?} is not an integer"),
                )
            }),
    }
}

/// Decodes the stored text of one key (`None`: no row or SQL NULL) into the
/// read value of `model`: a list for list-append, a scalar or nil for
/// registers. Shared by every SQL client.
///
/// # Errors
/// The indefinite `unparseable-read` errors of [`parse_list`] and
/// [`parse_register`].
pub fn decode_read(model: DataModel, text: Option<&str>) -> Result<ReadValue, ClientError> {
    Ok(match model {
        DataModel::ListAppend => ReadValue::List(parse_list(text)?.into()),
        DataModel::RwRegister => match parse_register(text)? {
            Some(v) => ReadValue::Scalar(v),
            None => ReadValue::Nil,
        },
    })
}

/// How long a SQL client waits after a failed connect, or after dropping a
/// broken connection, before connecting again: a dead or not-ready server
/// must not turn into a flood of `fail` ops and short-lived sockets.
pub(crate) const RECONNECT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// Sleeps out the rest of [`RECONNECT_BACKOFF`] since `last_failure`.
pub(crate) async fn reconnect_backoff(last_failure: Option<std::time::Instant>) {
    if let Some(t) = last_failure {
        let since = t.elapsed();
        if since < RECONNECT_BACKOFF {
            tokio::time::sleep(RECONNECT_BACKOFF - since).await;
        }
    }
}

/// Where in a transaction an error happened: it decides whether a lost
/// connection proves the transaction aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnPhase {
    /// Before `COMMIT` was sent: the server aborts the transaction on any
    /// error or disconnect, so every error here is definite.
    BeforeCommit,
    /// While `COMMIT` was in flight: an error response the server sends
    /// before committing is definite; a lost connection is not.
    Commit,
}

/// SQLSTATE classes after which a `COMMIT` may or may not have happened:
/// connection exceptions (08), operator intervention (57: shutdown,
/// termination), system errors (58), internal errors (XX).
const INDEFINITE_AT_COMMIT_CLASSES: [&str; 4] = ["08", "57", "58", "XX"];

/// Classifies an error from a PostgreSQL-wire server.
///
/// * `40001` (serialization failure) and `40P01` (deadlock) → definite;
/// * before `COMMIT` was sent → definite (the server rolls back);
/// * at `COMMIT`: an error response → definite unless its SQLSTATE class is
///   one of 08/57/58/XX; no response (connection closed, I/O error) →
///   indefinite.
pub fn classify_pg(err: &tokio_postgres::Error, phase: TxnPhase) -> ClientError {
    let message = err.to_string();
    let detail = match err.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => message,
    };
    if let Some(code) = err.code() {
        let code = code.code();
        if code == "40001" || code == "40P01" {
            return ClientError::definite(code, detail);
        }
        return match phase {
            TxnPhase::BeforeCommit => ClientError::definite(code, detail),
            TxnPhase::Commit => {
                if INDEFINITE_AT_COMMIT_CLASSES
                    .iter()
                    .any(|c| code.starts_with(c))
                {
                    ClientError::indefinite(code, detail)
                } else {
                    ClientError::definite(code, detail)
                }
            }
        };
    }
    match phase {
        TxnPhase::BeforeCommit => ClientError::definite("connection-lost-before-commit", detail),
        TxnPhase::Commit => ClientError::indefinite("connection-lost-during-commit", detail),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn list_elements_read_as_str_parse_reads_them() {
        let cases = [
            "0",
            "7",
            "-7",
            " 12 ",
            "+5",
            "-",
            "",
            "1x",
            "x1",
            "--1",
            "00012",
            "999999999999999999",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "12345678901234567890",
            "1 2",
            "\t3",
        ];
        for c in cases {
            assert_eq!(parse_int(c), c.trim().parse::<i64>().ok(), "{c:?}");
        }
    }

    #[test]
    fn isolation_names_round_trip_and_typos_are_rejected() {
        for i in Isolation::ALL {
            assert_eq!(Isolation::parse(i.name()), Ok(i));
        }
        assert_eq!(Isolation::parse("SI"), Ok(Isolation::SnapshotIsolation));
        assert_eq!(
            Isolation::parse("read_committed"),
            Ok(Isolation::ReadCommitted)
        );
        let e = Isolation::parse("serialisable").unwrap_err();
        assert!(
            e.contains("serialisable") && e.contains("read-committed"),
            "{e}"
        );
    }

    #[test]
    fn keys_spread_over_all_tables_deterministically() {
        let t = TxnTables { table_count: 3 };
        let mut seen = [0usize; 3];
        for k in 0..300 {
            seen[t.table_of(k)] += 1;
            assert_eq!(t.table_of(k), t.table_of(k));
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        assert_eq!(t.table_of(-5), t.table_of(-5));
    }

    #[test]
    fn lists_and_registers_parse() {
        assert_eq!(parse_list(None), Ok(vec![]));
        assert_eq!(parse_list(Some("")), Ok(vec![]));
        assert_eq!(
            parse_list(Some("1,22,-3")),
            Ok(vec![Val::int(1), Val::int(22), Val::int(-3)])
        );
        let e = parse_list(Some("1,x")).unwrap_err();
        assert_eq!(e.kind, crate::client::ErrorKind::Indefinite);
        assert_eq!(parse_register(Some("7")), Ok(Some(Val::int(7))));
        assert_eq!(parse_register(None), Ok(None));
    }

    #[test]
    fn statements_name_their_table() {
        let t = TxnTables::default();
        assert!(t.append_sql(2).contains("txn2") && t.append_sql(2).contains("CONCAT"));
        assert!(t.write_sql(1).contains("SET val = $2"));
        assert!(t.read_sql(0).starts_with("SELECT val FROM txn0"));
    }

    #[test]
    fn mysql_statements_follow_jepsens_tidb_suite() {
        let t = TxnTables { table_count: 7 };
        assert_eq!(
            t.mysql_append_sql(6),
            "INSERT INTO txn6 (id, sk, val) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', ?)"
        );
        assert_eq!(
            t.mysql_read_sql(0, true),
            "SELECT val FROM txn0 WHERE id = ? FOR UPDATE"
        );
        assert_eq!(
            t.mysql_read_sql(0, false),
            "SELECT val FROM txn0 WHERE id = ?"
        );
        assert_eq!(
            TxnTables::mysql_isolation_sql(Isolation::RepeatableRead),
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        );
    }

    #[test]
    fn non_integer_keys_are_definite_errors() {
        let e = int_key(&Key(Atom::Str("x".into()))).unwrap_err();
        assert_eq!(e.kind, crate::client::ErrorKind::Definite);
        assert_eq!(int_key(&Key::int(4)), Ok(4));
    }
}
