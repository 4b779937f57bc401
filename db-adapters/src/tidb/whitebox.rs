//! TiDB's white-box certificates (`--version-order db`): `@@tidb_current_ts`
//! is the start TSO; the commit TSO is in `@@tidb_last_txn_info` (JSON),
//! which the MySQL-wire client reads after `COMMIT` and records as
//! `commit-ts` and `start-ts` ([`extra`]).

use store::Data;

/// TiDB: the transaction's start TSO.
pub const START_TS_SQL: &str = "SELECT @@tidb_current_ts";

/// TiDB: the last transaction's info (JSON with `start_ts`, `commit_ts`),
/// read after `COMMIT`.
pub const LAST_TXN_SQL: &str = "SELECT @@tidb_last_txn_info";

/// TiDB: the extra fields from `@@tidb_last_txn_info` (read after
/// `COMMIT`): `commit-ts` (the commit TSO) and `start-ts`.
///
/// # Errors
/// The text and the missing or malformed field.
pub fn extra(json: &str) -> Result<Vec<(String, Data)>, String> {
    let (start, commit) = last_txn(json)?;
    let int = |x: u64| {
        i64::try_from(x)
            .map(Data::Int)
            .map_err(|_| format!("TSO {x} out of range"))
    };
    Ok(vec![
        ("commit-ts".to_string(), int(commit)?),
        ("start-ts".to_string(), int(start)?),
    ])
}

/// TiDB: `(start_ts, commit_ts)` from `@@tidb_last_txn_info`, e.g.
/// `{"txn_scope":"global","start_ts":4301,"commit_ts":4302}`.
///
/// # Errors
/// The text and the missing or malformed field.
pub fn last_txn(json: &str) -> Result<(u64, u64), String> {
    let field = |name: &str| -> Result<u64, String> {
        let key = format!("\"{name}\":");
        let at = json
            .find(&key)
            .ok_or_else(|| format!("tidb_last_txn_info {json:?}: no {name}"))?;
        let rest = json[at + key.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .map_err(|_| format!("tidb_last_txn_info {json:?}: {name} is not an integer"))
    };
    Ok((field("start_ts")?, field("commit_ts")?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tidb_txn_info_gives_start_and_commit() {
        let j = r#"{"txn_scope":"global","start_ts":434520817946345473,"commit_ts":434520817946345474}"#;
        assert_eq!(
            last_txn(j).unwrap(),
            (434520817946345473, 434520817946345474)
        );
        assert!(
            last_txn(r#"{"start_ts":1}"#)
                .unwrap_err()
                .contains("commit_ts")
        );
    }

    #[test]
    fn tidb_extra_names_commit_and_start() {
        let e = extra(r#"{"txn_scope":"global","start_ts":4301,"commit_ts":4302}"#).unwrap();
        assert_eq!(e[0], ("commit-ts".to_string(), Data::Int(4302)));
        assert_eq!(e[1], ("start-ts".to_string(), Data::Int(4301)));
        assert!(extra("{}").is_err());
    }

    #[test]
    fn statements() {
        assert!(START_TS_SQL.contains("tidb_current_ts"));
        assert!(LAST_TXN_SQL.contains("tidb_last_txn_info"));
    }
}
