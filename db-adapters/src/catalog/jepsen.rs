//! The catalog's hook for the Jepsen workloads (bank, set, …): on which
//! databases they run and which client factory serves them. Here, not in
//! `crate::jepsen`, so no database module imports the catalog.

use workloads::JepsenWorkload;

/// Whether `--workload` Jepsen workloads other than long-fork run on `db`
/// (`on_nodes`: with `--nodes`): SQLite, the simulator, PostgreSQL behind
/// `--url`/`--local`, MariaDB and Galera (always on nodes). long-fork runs
/// on every database.
pub fn runs_on(db: super::DbKind, on_nodes: bool) -> bool {
    use super::DbKind;
    matches!(
        db,
        DbKind::Sqlite | DbKind::Sim | DbKind::Mariadb | DbKind::Galera
    ) || db == DbKind::Postgres && !on_nodes
}

/// The factory of workload `w`'s clients on `db`, or `None` where the
/// database's ordinary clients serve it (long-fork).
///
/// # Errors
/// A setting the database cannot take, or a database these workloads do
/// not run on.
pub fn client_factory(
    db: super::DbKind,
    w: JepsenWorkload,
    s: &super::DbSettings,
    url: Option<&str>,
) -> Result<Option<std::sync::Arc<dyn crate::client::ClientFactory>>, String> {
    use super::DbKind;
    use std::sync::Arc;
    if w == JepsenWorkload::LongFork && db != DbKind::Sim {
        return Ok(None);
    }
    Ok(Some(match db {
        DbKind::Sqlite => {
            let busy = (s.op_timeout / 2).min(std::time::Duration::from_secs(2));
            Arc::new(crate::jepsen::sqlite::JepsenSqliteFactory::new(
                s.dir.join("sqlite.db"),
                s.isolation,
                w,
                busy,
            )?)
        }
        DbKind::Sim => {
            let mode = super::sim_mode(s.sim_bug, s.isolation)?;
            Arc::new(crate::jepsen::sim::JepsenSimFactory::new(
                crate::sim::SimFactory::new(mode, s.seed),
                w,
            ))
        }
        DbKind::Postgres => {
            let url = url.ok_or("--db postgres needs --url postgres://… or --local")?;
            Arc::new(crate::jepsen::pg::JepsenPgFactory::new(
                url,
                s.isolation,
                w,
                s.newsql.select_for_update,
            )?)
        }
        other => return Err(format!("--workload {w} does not run on --db {other}")),
    }))
}
