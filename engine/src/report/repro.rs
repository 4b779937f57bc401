//! `elle/repro.sql`: every reported dependency cycle as SQL a database
//! engineer can replay by hand — a setup block recreating the state the
//! cycle's transactions started from, then the transactions, one session
//! per process, as the exact statements harness's clients send (literal
//! values substituted), with numbered steps that make the interleaving
//! explicit and each read followed by what the database returned.
//!
//! Key decisions:
//! * [`render`] is a pure function of the check result, the history, the SQL
//!   dialect and the isolation level; [`write`] only reads `test.json` and
//!   writes the file.
//! * The step order is one in which every observed dependency among the
//!   cycle's transactions can hold (the cycle's steps first, then the other
//!   list-append wr/rw/ww dependencies between them, so replayed sessions
//!   neither wait on each other's row locks nor read differently):
//!   within a transaction its statements keep their order; a write a
//!   transaction read (`wr`) or overwrote (`ww`) commits before that
//!   transaction's snapshot (its first statement under snapshot-taking
//!   levels, the statement itself under read committed); a read that missed
//!   a later write (`rw`) runs before that write commits; process and
//!   real-time edges put a commit before the next BEGIN. Ties, and
//!   constraints that cannot hold together (a G1c, a stale read across
//!   real time: the anomaly itself), fall back to history order (invocation
//!   index for BEGIN and statements, completion index for COMMIT), and every
//!   constraint left out is named in a comment.
//! * The setup of a list key is the longest prefix the cycle's transactions
//!   read that holds none of their own appends, when those prefixes agree;
//!   of a register, the one value they read that none of them wrote.

use anyhow::Context;
use checker::CheckResult;
use checker::explain::{Anomaly, Evidence, Site, Step, fmt_read, fmt_vals};
use checker::rels::Rel;
use db_adapters::catalog::{DbKind, SqlDialect, SqlFamily};
use db_adapters::sql::{Isolation, TxnTables, int_key, int_val};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use store::{History, Key, MicroOp, OpIndex, OpType, Process, ReadValue, Val};

/// Cycles written per anomaly type at most.
const MAX_CYCLES_PER_TYPE: usize = 20;

/// How to spell the statements: the database's SQL dialect (its catalog
/// entry's `Database::dialect`), the name the run recorded, and whether
/// reads lock their rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The family, tables and per-database details of the client's SQL.
    pub sql: SqlDialect,
    /// The database name from `test.json` (`None`: unknown).
    pub db: Option<String>,
    /// Reads lock their rows (`SELECT … FOR UPDATE`, `--select-for-update`).
    pub read_for_update: bool,
    /// A remark for the header (e.g. why the PostgreSQL dialect is used).
    pub note: Option<String>,
}

impl Dialect {
    /// The dialect harness's client for `db` (the `--db` name a run
    /// recorded) uses, as its catalog entry (`Database::dialect`) says;
    /// unknown or missing names, and databases without their own SQL, get
    /// the PostgreSQL dialect with a note.
    pub fn for_db(db: Option<&str>, select_for_update: bool) -> Dialect {
        let pg = |note: String| Dialect {
            sql: SqlDialect::POSTGRES,
            db: db.map(str::to_string),
            read_for_update: false,
            note: Some(note),
        };
        let Some(name) = db else {
            return pg(
                "the database is unknown (no test.json with config.db): statements are in the PostgreSQL dialect (3 tables)"
                    .to_string(),
            );
        };
        let Some(kind) = DbKind::lookup(name) else {
            return pg(format!(
                "database {name:?} is not one harness knows; statements are in the PostgreSQL dialect (3 tables)"
            ));
        };
        let Some(d) = kind.dialect().filter(|d| d.native) else {
            return pg(format!(
                "{name} does not run these statements; they are given in the PostgreSQL dialect (3 tables) to replay the cycle on PostgreSQL"
            ));
        };
        Dialect {
            sql: d,
            db: Some(name.to_string()),
            read_for_update: d.for_update_flag && select_for_update,
            note: None,
        }
    }

    fn family_name(&self) -> &'static str {
        match self.sql.family {
            SqlFamily::Postgres => "PostgreSQL",
            SqlFamily::Mysql => "MySQL",
        }
    }

    fn client_name(&self) -> &'static str {
        match self.sql.family {
            SqlFamily::Postgres => "psql",
            SqlFamily::Mysql => "mariadb (or mysql)",
        }
    }

    fn create(&self, t: usize) -> String {
        match self.sql.family {
            SqlFamily::Postgres => self.sql.tables.create_sql(t),
            SqlFamily::Mysql if self.sql.innodb => {
                format!("{} ENGINE=InnoDB", self.sql.tables.mysql_create_sql(t))
            }
            SqlFamily::Mysql => self.sql.tables.mysql_create_sql(t),
        }
    }

    /// The statements that start a transaction (and, for MySQL, the
    /// session's isolation level that our client sets on connecting).
    fn begin(&self, isolation: Option<Isolation>) -> String {
        match (self.sql.family, isolation) {
            (SqlFamily::Postgres, Some(i)) => format!("BEGIN ISOLATION LEVEL {};", i.sql()),
            (SqlFamily::Postgres, None) => "BEGIN;".to_string(),
            (SqlFamily::Mysql, _) => "START TRANSACTION;".to_string(),
        }
    }

    fn read(&self, key: i64) -> String {
        let t = self.sql.tables.table_of(key);
        let sql = match self.sql.family {
            SqlFamily::Postgres => {
                let mut s = self.sql.tables.read_sql(t);
                if self.read_for_update {
                    s.push_str(" FOR UPDATE");
                }
                bind_pg(&s, &[key.to_string()])
            }
            SqlFamily::Mysql => bind_mysql(
                &self.sql.tables.mysql_read_sql(t, self.read_for_update),
                &[key.to_string()],
            ),
        };
        format!("{sql};")
    }

    fn write(&self, key: i64, val: i64, append: bool) -> String {
        let t = self.sql.tables.table_of(key);
        let (k, v) = (key.to_string(), sql_text(&val.to_string()));
        let sql = match (self.sql.family, append) {
            (SqlFamily::Postgres, true) => bind_pg(&self.sql.tables.append_sql(t), &[k, v]),
            (SqlFamily::Postgres, false) => bind_pg(&self.sql.tables.write_sql(t), &[k, v]),
            (SqlFamily::Mysql, true) => bind_mysql(
                &self.sql.tables.mysql_append_sql(t),
                &[k.clone(), k, v.clone(), v],
            ),
            (SqlFamily::Mysql, false) => bind_mysql(
                &self.sql.tables.mysql_write_sql(t),
                &[k.clone(), k, v.clone(), v],
            ),
        };
        format!("{sql};")
    }

    fn insert_row(&self, key: i64, text: &str) -> String {
        let t = self.sql.tables.table_of(key);
        match self.sql.family {
            SqlFamily::Postgres => {
                format!(
                    "INSERT INTO txn{t} (id, val) VALUES ({key}, {});",
                    sql_text(text)
                )
            }
            SqlFamily::Mysql => format!(
                "INSERT INTO txn{t} (id, sk, val) VALUES ({key}, {key}, {});",
                sql_text(text)
            ),
        }
    }
}

/// A SQL string literal.
fn sql_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Substitutes `$1`, `$2`, … (highest first, so `$1` never eats `$10`).
fn bind_pg(sql: &str, params: &[String]) -> String {
    let mut out = sql.to_string();
    for (i, p) in params.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), p);
    }
    out
}

/// Substitutes each `?` in turn.
fn bind_mysql(sql: &str, params: &[String]) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut it = params.iter();
    for c in sql.chars() {
        match (c, c == '?') {
            (_, true) => match it.next() {
                Some(p) => out.push_str(p),
                None => out.push('?'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// One transaction of a cycle, as found in the history.
struct Txn {
    /// `T<n>` in the explanation.
    name: String,
    /// The op index the cycle names.
    op: OpIndex,
    process: Option<u64>,
    invoke: u64,
    /// Completion index and type (`None`: never completed).
    completion: Option<(u64, OpType)>,
    /// The micro-ops with the recorded results when the op completed `ok`.
    mops: Vec<MicroOp>,
    /// Whether read results are known (an `ok` completion).
    observed: bool,
}

fn find_txn(history: &History, op: OpIndex, name: String) -> Option<Txn> {
    let pos = history.position_of(op)?;
    let (inv, comp) = if history.op_type(pos) == OpType::Invoke {
        (pos, history.partner(pos))
    } else {
        (history.partner(pos).unwrap_or(pos), Some(pos))
    };
    let observed = comp.is_some_and(|c| history.op_type(c) == OpType::Ok);
    let mops = match comp {
        Some(c) if observed => history.txn(c),
        _ => history
            .txn(inv)
            .or_else(|| comp.and_then(|c| history.txn(c))),
    }?
    .into_owned();
    let process = match history.process(pos) {
        Some(Process::Client(p)) => Some(p.0),
        _ => None,
    };
    Some(Txn {
        name,
        op,
        process,
        invoke: history.index(inv).0,
        completion: comp.map(|c| (history.index(c).0, history.op_type(c))),
        mops,
        observed,
    })
}

/// A statement of the schedule: BEGIN, micro-op `i`, or COMMIT of a txn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Begin,
    Mop(usize),
    Commit,
}

/// History position a statement falls back to: anchor index, phase
/// (BEGIN, statement, COMMIT), statement number.
type Tie = (u64, u8, usize);

/// The statement schedule of a cycle: events, their order, and the
/// constraints that could not hold.
struct Schedule {
    /// `(txn, event)` in step order.
    order: Vec<(usize, Ev)>,
    /// Explanations of constraints left out.
    dropped: Vec<String>,
}

fn schedule(txns: &[Txn], steps: &[Step], snapshot_reads: bool) -> Schedule {
    // Nodes: per txn BEGIN, each mop, COMMIT.
    let mut nodes: Vec<(usize, Ev)> = Vec::new();
    let mut first: Vec<usize> = Vec::new();
    for (t, x) in txns.iter().enumerate() {
        first.push(nodes.len());
        nodes.push((t, Ev::Begin));
        nodes.extend((0..x.mops.len()).map(|i| (t, Ev::Mop(i))));
        nodes.push((t, Ev::Commit));
    }
    let node = |t: usize, e: Ev| -> usize {
        let n = txns[t].mops.len();
        match e {
            Ev::Begin => first[t],
            Ev::Mop(i) => first[t] + 1 + i.min(n.saturating_sub(1)),
            Ev::Commit => first[t] + 1 + n,
        }
    };
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for w in nodes.windows(2).enumerate() {
        if w.1[0].0 == w.1[1].0 {
            succ[w.0].push(w.0 + 1);
        }
    }
    let reaches = |succ: &Vec<Vec<usize>>, from: usize, to: usize| -> bool {
        let mut seen = vec![false; succ.len()];
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            if !std::mem::replace(&mut seen[n], true) {
                stack.extend(succ[n].iter().copied());
            }
        }
        false
    };
    let pos = |o: OpIndex| txns.iter().position(|t| t.op == o);
    let mut dropped = Vec::new();
    // Data dependencies first, then process / real-time order.
    let mut constraints: Vec<(usize, usize, String)> = Vec::new();
    let mut order_constraints = Vec::new();
    for s in steps {
        let (from, to) = s.ends();
        let (Some(a), Some(b)) = (pos(from), pos(to)) else {
            continue;
        };
        let (na, nb) = (&txns[a].name, &txns[b].name);
        let key = s
            .site()
            .map_or(String::new(), |x| format!(" of key {}", x.key));
        let b_snapshot = if snapshot_reads {
            Ev::Mop(0)
        } else {
            Ev::Mop(s.site().map_or(0, |x| x.b_mop))
        };
        match s.rel() {
            Rel::Wr | Rel::Ww => constraints.push((
                node(a, Ev::Commit),
                node(b, b_snapshot),
                format!(
                    "{na} committing before {nb} {} ({}{key})",
                    if snapshot_reads {
                        "takes its snapshot"
                    } else {
                        "reaches that statement"
                    },
                    s.rel().name()
                ),
            )),
            Rel::Rw => constraints.push((
                node(
                    a,
                    Ev::Mop(
                        s.site()
                            .map_or(txns[a].mops.len().saturating_sub(1), |x| x.a_mop),
                    ),
                ),
                node(b, Ev::Commit),
                format!("{na}'s read{key} running before {nb} commits (rw)"),
            )),
            Rel::Process | Rel::Realtime => order_constraints.push((
                node(a, Ev::Commit),
                node(b, Ev::Begin),
                format!("{na} committing before {nb} begins ({})", s.rel().name()),
            )),
        }
    }
    for (u, v, why) in constraints.into_iter().chain(order_constraints) {
        if reaches(&succ, v, u) {
            dropped.push(why);
        } else if !succ[u].contains(&v) {
            succ[u].push(v);
        }
    }
    // Kahn's algorithm, ties broken by history order.
    let tie = |n: usize| -> Tie {
        let (t, e) = nodes[n];
        let x = &txns[t];
        match e {
            Ev::Begin => (x.invoke, 0, 0),
            Ev::Mop(i) => (x.invoke, 1, i),
            Ev::Commit => (x.completion.map_or(u64::MAX, |c| c.0), 2, 0),
        }
    };
    let mut indeg = vec![0usize; nodes.len()];
    for s in &succ {
        for &v in s {
            indeg[v] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<(Tie, usize)>> = (0..nodes.len())
        .filter(|&n| indeg[n] == 0)
        .map(|n| Reverse((tie(n), n)))
        .collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(Reverse((_, n))) = ready.pop() {
        order.push(nodes[n]);
        for &v in &succ[n] {
            indeg[v] -= 1;
            if indeg[v] == 0 {
                ready.push(Reverse((tie(v), v)));
            }
        }
    }
    Schedule { order, dropped }
}

/// The longest committed read of each list key in the history (the order
/// its appends were applied in), found in one pass for all cycles.
type LongestReads<'h> = HashMap<&'h Key, &'h [Val]>;

fn longest_reads(history: &History) -> LongestReads<'_> {
    let mut longest: LongestReads<'_> = HashMap::new();
    for pos in 0..history.len() {
        if history.op_type(pos) != OpType::Ok {
            continue;
        }
        for m in history.stored_txn(pos).unwrap_or_default() {
            if let MicroOp::Read(k, ReadValue::List(l)) = m
                && longest.get(k).is_none_or(|x| x.len() < l.len())
            {
                longest.insert(k, l);
            }
        }
    }
    longest
}

/// The list-append dependencies among the cycle's transactions beyond the
/// cycle's own steps, so the replay keeps them too: a read that saw another's
/// append (wr), a read that missed a committed one (rw), and two appends to
/// one key in the order of the longest read of that key in the history (ww:
/// the row lock makes the later writer wait for the earlier commit).
fn observed_deps(txns: &[Txn], longest: &LongestReads<'_>) -> Vec<Step> {
    let mut appends: BTreeMap<&Key, Vec<(usize, usize, &Val)>> = BTreeMap::new();
    for (t, x) in txns.iter().enumerate() {
        if x.completion.is_some_and(|c| c.1 == OpType::Ok) {
            for (i, m) in x.mops.iter().enumerate() {
                if let MicroOp::Append(k, v) = m {
                    appends.entry(k).or_default().push((t, i, v));
                }
            }
        }
    }
    let step = |rel: Rel, a: usize, b: usize, k: &Key, am: usize, bm: usize| {
        let site = Site {
            key: k.clone(),
            a_mop: am,
            b_mop: bm,
        };
        Step::data(rel, txns[a].op, txns[b].op, true, Some(site), None, None)
    };
    let mut out = Vec::new();
    for (k, ws) in &appends {
        for &(a, am, v) in ws {
            for (b, x) in txns.iter().enumerate() {
                if b == a || !x.observed {
                    continue;
                }
                for (bm, m) in x.mops.iter().enumerate() {
                    if let MicroOp::Read(rk, ReadValue::List(l)) = m
                        && rk == *k
                    {
                        if l.contains(v) {
                            out.push(step(Rel::Wr, a, b, k, am, bm));
                        } else {
                            out.push(step(Rel::Rw, b, a, k, bm, am));
                        }
                    }
                }
            }
            let Some(order) = longest.get(k) else {
                continue;
            };
            let Some(pa) = order.iter().position(|x| x == v) else {
                continue;
            };
            for &(b, bm, w) in ws {
                if b != a && order.iter().position(|x| x == w).is_some_and(|pb| pa < pb) {
                    out.push(step(Rel::Ww, a, b, k, am, bm));
                }
            }
        }
    }
    out
}

/// The state a key starts from: rows to insert, and a comment.
fn initial_state(key: &Key, txns: &[Txn]) -> (Option<String>, String) {
    let list_key = txns.iter().flat_map(|t| &t.mops).any(
        |m| matches!(m, MicroOp::Append(k, _) | MicroOp::Read(k, ReadValue::List(_)) if k == key),
    );
    if list_key {
        let ours: BTreeSet<&Val> = txns
            .iter()
            .flat_map(|t| &t.mops)
            .filter_map(|m| match m {
                MicroOp::Append(k, v) if k == key => Some(v),
                _ => None,
            })
            .collect();
        let prefixes: Vec<Vec<Val>> = txns
            .iter()
            .filter(|t| t.observed)
            .flat_map(|t| &t.mops)
            .filter_map(|m| match m {
                MicroOp::Read(k, ReadValue::List(l)) if k == key => Some(
                    l.iter()
                        .take_while(|v| !ours.contains(v))
                        .cloned()
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        let Some(longest) = prefixes.iter().max_by_key(|p| p.len()) else {
            return (
                None,
                format!("key {key}: not read by these transactions; starts empty"),
            );
        };
        if prefixes.iter().any(|p| !longest.starts_with(p)) {
            let all: Vec<String> = prefixes.iter().map(|p| fmt_vals(p)).collect();
            return (
                None,
                format!(
                    "key {key}: the reads disagree on what came before ({}); starts empty",
                    all.join(", ")
                ),
            );
        }
        if longest.is_empty() {
            return (None, format!("key {key}: read as empty; starts empty"));
        }
        let text: Vec<String> = longest.iter().map(|v| v.to_string()).collect();
        return (
            Some(text.join(",")),
            format!(
                "key {key}: {}, the longest prefix read that holds none of these transactions' appends",
                fmt_vals(longest)
            ),
        );
    }
    let ours: BTreeSet<&Val> = txns
        .iter()
        .flat_map(|t| &t.mops)
        .filter_map(|m| match m {
            MicroOp::Write(k, v) if k == key => Some(v),
            _ => None,
        })
        .collect();
    let seen: BTreeSet<Option<&Val>> = txns
        .iter()
        .filter(|t| t.observed)
        .flat_map(|t| &t.mops)
        .filter_map(|m| match m {
            MicroOp::Read(k, ReadValue::Scalar(v)) if k == key && !ours.contains(v) => {
                Some(Some(v))
            }
            MicroOp::Read(k, ReadValue::Nil) if k == key => Some(None),
            _ => None,
        })
        .collect();
    match seen.len() {
        0 => (
            None,
            format!(
                "key {key}: no read of a value written outside these transactions; starts as nil (no row)"
            ),
        ),
        1 => match seen.into_iter().next().flatten() {
            Some(v) => (
                Some(v.to_string()),
                format!(
                    "key {key}: {v}, the value these transactions read that none of them wrote"
                ),
            ),
            None => (None, format!("key {key}: read as nil; no row")),
        },
        _ => {
            let vs: Vec<String> = seen
                .iter()
                .map(|v| v.map_or("nil".to_string(), |v| v.to_string()))
                .collect();
            (
                None,
                format!(
                    "key {key}: read as several values none of these transactions wrote ({}); starts as nil (no row)",
                    vs.join(", ")
                ),
            )
        }
    }
}

/// Whether transactions at `isolation` read from a snapshot taken at their
/// first statement (so a write they see must commit before it).
fn snapshot_reads(isolation: Option<Isolation>) -> bool {
    matches!(
        isolation,
        Some(Isolation::Serializable | Isolation::SnapshotIsolation | Isolation::RepeatableRead)
    )
}

fn session_label(t: &Txn) -> String {
    match t.process {
        Some(p) => format!("P{p}"),
        None => format!("{}-no-process", t.name),
    }
}

/// Renders one cycle; `None` when it cannot be written as SQL (non-integer
/// keys or values, ops missing from the history), with the reason.
fn render_cycle(
    cycle: &[OpIndex],
    steps: &[Step],
    history: &History,
    longest: &LongestReads<'_>,
    dialect: &Dialect,
    isolation: Option<Isolation>,
    out: &mut String,
) -> Result<(), String> {
    let n = cycle.len().saturating_sub(1);
    let mut txns = Vec::new();
    for (i, o) in cycle[..n].iter().enumerate() {
        let t = find_txn(history, *o, format!("T{}", i + 1))
            .ok_or_else(|| format!("op {o} is not a transaction of this history"))?;
        txns.push(t);
    }
    // Only what the SQL clients can store (their own check and message).
    for t in &txns {
        for m in &t.mops {
            int_key(m.key()).map_err(|e| e.message)?;
            if let MicroOp::Append(_, v) | MicroOp::Write(_, v) = m {
                int_val(v).map_err(|e| e.message)?;
            }
        }
    }
    // Setup.
    let keys: BTreeSet<Key> = txns
        .iter()
        .flat_map(|t| t.mops.iter().map(|m| m.key().clone()))
        .collect();
    let tables: BTreeSet<usize> = keys
        .iter()
        .filter_map(|k| int_key(k).ok())
        .map(|k| dialect.sql.tables.table_of(k))
        .collect();
    out.push_str("-- setup (in any session, before step 1):\n");
    for t in &tables {
        let _ = writeln!(out, "{};", dialect.create(*t));
    }
    for k in &keys {
        let Ok(id) = int_key(k) else { continue };
        let (row, why) = initial_state(k, &txns);
        let _ = writeln!(out, "-- {why}");
        let _ = writeln!(
            out,
            "DELETE FROM txn{} WHERE id = {id};",
            dialect.sql.tables.table_of(id)
        );
        if let Some(text) = row {
            let _ = writeln!(out, "{}", dialect.insert_row(id, &text));
        }
    }
    // Schedule.
    let mut deps = steps.to_vec();
    deps.extend(observed_deps(&txns, longest));
    let sched = schedule(&txns, &deps, snapshot_reads(isolation));
    let mut step_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let ev_code = |e: Ev| match e {
        Ev::Begin => 0,
        Ev::Mop(i) => i + 1,
        Ev::Commit => usize::MAX,
    };
    for (i, (t, e)) in sched.order.iter().enumerate() {
        step_of.insert((*t, ev_code(*e)), i + 1);
    }
    // Summary of the interleaving: runs of consecutive steps per session.
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    for (i, (t, _)) in sched.order.iter().enumerate() {
        let label = session_label(&txns[*t]);
        match runs.last_mut() {
            Some((_, end, l)) if *l == label => *end = i + 1,
            _ => runs.push((i + 1, i + 1, label)),
        }
    }
    let summary: Vec<String> = runs
        .iter()
        .map(|(a, b, l)| {
            if a == b {
                format!("{a} {l}")
            } else {
                format!("{a}-{b} {l}")
            }
        })
        .collect();
    let _ = writeln!(out, "-- step order: {}", summary.join(", "));
    for d in &sched.dropped {
        let _ = writeln!(
            out,
            "-- note: no statement order also has {d}; that is the anomaly. The steps follow history order there."
        );
    }
    // Sessions, ordered by their first step.
    let mut sessions: Vec<(String, Vec<usize>)> = Vec::new();
    for (t, e) in &sched.order {
        if *e != Ev::Begin {
            continue;
        }
        let label = session_label(&txns[*t]);
        match sessions.iter_mut().find(|(l, _)| *l == label) {
            Some((_, ts)) => ts.push(*t),
            None => sessions.push((label, vec![*t])),
        }
    }
    for (label, ts) in &sessions {
        let _ = writeln!(out, "\n-- session {label}");
        if dialect.sql.family == SqlFamily::Mysql {
            match isolation {
                Some(i) => {
                    let _ = writeln!(
                        out,
                        "-- on connecting (harness sets it once per connection):\n{};",
                        TxnTables::mysql_isolation_sql(i)
                    );
                }
                None => out.push_str("-- isolation unknown: the server's default applies\n"),
            }
        }
        for &t in ts {
            let x = &txns[t];
            let completion = match x.completion {
                Some((i, ty)) => format!("completed :{} at index {i}", ty.as_str()),
                None => "never completed".to_string(),
            };
            let _ = writeln!(
                out,
                "-- {} = op {}: invoked at index {}, {completion}",
                x.name, x.op, x.invoke
            );
            let step = |code: usize| step_of.get(&(t, code)).copied().unwrap_or(0);
            let _ = writeln!(out, "/* {} */ {}", step(0), dialect.begin(isolation));
            for (i, m) in x.mops.iter().enumerate() {
                let s = step(i + 1);
                let id = int_key(m.key()).unwrap_or_default();
                match m {
                    MicroOp::ReadRange(r) => {
                        let what = if r.is_count() { "count(*)" } else { "id, val" };
                        let _ = writeln!(
                            out,
                            "/* {s} */ SELECT {what} FROM txn WHERE id BETWEEN {} AND {};  -- observed: {}",
                            r.lo,
                            r.hi,
                            checker::explain::fmt_mop(m)
                        );
                    }
                    MicroOp::Read(_, r) => {
                        let observed = if x.observed {
                            fmt_read(r)
                        } else {
                            "unknown (the transaction did not complete ok)".to_string()
                        };
                        let _ = writeln!(
                            out,
                            "/* {s} */ {}  -- observed: {observed}",
                            dialect.read(id)
                        );
                    }
                    MicroOp::Append(_, v) | MicroOp::Write(_, v) => {
                        let val = int_val(v).unwrap_or_default();
                        let _ = writeln!(
                            out,
                            "/* {s} */ {}",
                            dialect.write(id, val, matches!(m, MicroOp::Append(..)))
                        );
                    }
                }
            }
            let commit_note = match x.completion {
                Some((_, OpType::Ok)) => String::new(),
                Some((_, OpType::Info)) | None => {
                    "  -- outcome unknown in the history (:info)".to_string()
                }
                Some((_, ty)) => format!("  -- the history records :{}", ty.as_str()),
            };
            let _ = writeln!(out, "/* {} */ COMMIT;{commit_note}", step(usize::MAX));
        }
    }
    Ok(())
}

/// `repro.sql` for `result`, or `None` when it has no cycle anomaly.
pub fn render(
    result: &CheckResult,
    history: &History,
    dialect: &Dialect,
    isolation: Option<Isolation>,
) -> Option<String> {
    let cyclic: Vec<(&str, Vec<&Anomaly>)> = result
        .anomalies
        .iter()
        .map(|(ty, list)| {
            (
                ty.name(),
                list.iter()
                    .filter(|a| matches!(a.evidence, Evidence::Cycle { .. }))
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, l)| !l.is_empty())
        .collect();
    if cyclic.is_empty() {
        return None;
    }
    let mut out = String::new();
    out.push_str(
        "-- repro.sql: the transactions of every dependency cycle harness reported, as SQL to replay by hand.\n",
    );
    let _ = writeln!(
        out,
        "-- database: {} ({} dialect, tables txn0..txn{})",
        dialect.db.as_deref().unwrap_or("unknown"),
        dialect.family_name(),
        dialect.sql.tables.table_count.saturating_sub(1)
    );
    if let Some(note) = &dialect.note {
        let _ = writeln!(out, "-- note: {note}");
    }
    match isolation {
        Some(i) => {
            let _ = writeln!(out, "-- isolation: {} ({})", i.name(), i.sql());
        }
        None => out.push_str("-- isolation: unknown (no test.json with config.isolation)\n"),
    }
    let _ = writeln!(
        out,
        "-- How to use, one cycle at a time, against a scratch database:
--   1. run the cycle's setup block (it creates missing tables txnN and resets the rows of the cycle's keys);
--   2. open one {} session per \"-- session P<process>\" block;
--   3. run the statements in the numbered order /* 1 */, /* 2 */, … switching sessions as the numbers say.
-- Each read is followed by what the database returned in the recorded history (-- observed: …).
-- The numbering is one statement order in which the observed dependencies can hold, following the
-- history (invocation index for BEGIN and statements, completion index for COMMIT) where they allow.
-- Transactions outside the cycle are not replayed: where they wrote in between, a replayed read can
-- differ from the observed one (the setup gives each key the state the cycle's reads imply).",
        dialect.client_name()
    );
    let longest = longest_reads(history);
    for (name, list) in cyclic {
        for (i, a) in list.iter().take(MAX_CYCLES_PER_TYPE).enumerate() {
            let Evidence::Cycle { cycle, steps } = &a.evidence else {
                continue;
            };
            let _ = writeln!(out, "\n-- ==== {name} #{} ====", i + 1);
            for line in checker::explain::render_text(a, history).lines() {
                let _ = writeln!(out, "{}", format!("-- {line}").trim_end());
            }
            out.push('\n');
            let mut body = String::new();
            match render_cycle(
                cycle, steps, history, &longest, dialect, isolation, &mut body,
            ) {
                Ok(()) => out.push_str(&body),
                Err(why) => {
                    let _ = writeln!(out, "-- cannot be written as SQL: {why}");
                }
            }
        }
        if list.len() > MAX_CYCLES_PER_TYPE {
            let _ = writeln!(
                out,
                "\n-- … and {} more {name} cycles (all are in results.json)",
                list.len() - MAX_CYCLES_PER_TYPE
            );
        }
    }
    Some(out)
}

/// Writes `elle_dir/repro.sql` when `result` has a cycle anomaly, with the
/// database and isolation from `run_dir/test.json` (loosely: missing or
/// unreadable means unknown, PostgreSQL dialect).
///
/// # Errors
/// When the file cannot be written.
pub fn write(
    elle_dir: &Path,
    run_dir: &Path,
    result: &CheckResult,
    history: &History,
) -> anyhow::Result<()> {
    let test = store::RunDir::open(run_dir)
        .ok()
        .and_then(|run| store::run::RunMeta::load(&run.test_json_path()).ok())
        .unwrap_or_default();
    let select_for_update = test.run_flags.iter().any(|x| x == "--select-for-update");
    let db = test.db();
    let dialect = Dialect::for_db(db.as_deref(), select_for_update);
    let isolation = test.isolation().and_then(|s| Isolation::parse(&s).ok());
    let Some(text) = render(result, history, &dialect, isolation) else {
        return Ok(());
    };
    let text = format!("-- run: {}\n{text}", super::run_title(run_dir));
    std::fs::create_dir_all(elle_dir)
        .with_context(|| format!("cannot create {}", elle_dir.display()))?;
    let path = elle_dir.join("repro.sql");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::{CheckOptions, ConsistencyModel, Workload};
    use store::Op;

    fn r(k: i64, v: &[i64]) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            ReadValue::List(v.iter().map(|&x| Val::int(x)).collect()),
        )
    }
    fn r0(k: i64) -> MicroOp {
        MicroOp::Read(Key::int(k), ReadValue::Nil)
    }
    fn ap(k: i64, v: i64) -> MicroOp {
        MicroOp::Append(Key::int(k), Val::int(v))
    }

    /// T1 (P1) reads x=1 as [10] and appends 21 to y=2; T2 (P2) reads y as
    /// [20] and appends 11 to x, concurrently: write skew (G2-item). P0
    /// set both up first and reads both at the end.
    fn write_skew() -> History {
        use OpType::{Invoke, Ok};
        let ops = vec![
            Op::txn(0, Invoke, 0, vec![ap(1, 10), ap(2, 20)]),
            Op::txn(1, Ok, 0, vec![ap(1, 10), ap(2, 20)]),
            Op::txn(2, Invoke, 1, vec![r0(1), ap(2, 21)]),
            Op::txn(3, Invoke, 2, vec![r0(2), ap(1, 11)]),
            Op::txn(4, Ok, 1, vec![r(1, &[10]), ap(2, 21)]),
            Op::txn(5, Ok, 2, vec![r(2, &[20]), ap(1, 11)]),
            Op::txn(6, Invoke, 0, vec![r0(1), r0(2)]),
            Op::txn(7, Ok, 0, vec![r(1, &[10, 11]), r(2, &[20, 21])]),
        ];
        History::new(ops).expect("valid history")
    }

    fn checked() -> (CheckResult, History) {
        let h = write_skew();
        let mut opts = CheckOptions::new(Workload::ListAppend);
        opts.models = vec![ConsistencyModel::Serializable];
        let res = checker::check(&h, &opts);
        assert!(
            res.anomalies.keys().any(|t| t.name() == "G2-item"),
            "{:?}",
            res.anomaly_types
        );
        (res, h)
    }

    fn pos(text: &str, needle: &str) -> usize {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from:\n{text}"))
    }

    #[test]
    fn g2_item_in_postgres_dialect() {
        let (res, h) = checked();
        let d = Dialect::for_db(Some("postgres"), false);
        let sql = render(&res, &h, &d, Some(Isolation::RepeatableRead)).expect("a cycle");
        let t = TxnTables::default();
        let (t1, t2) = (t.table_of(1), t.table_of(2));
        assert!(
            sql.contains("-- database: postgres (PostgreSQL dialect"),
            "{sql}"
        );
        assert!(sql.contains("-- ==== G2-item #1 ===="), "{sql}");
        // Setup: the prefix read before the cycle's own appends.
        pos(
            &sql,
            &format!("INSERT INTO txn{t1} (id, val) VALUES (1, '10');"),
        );
        pos(
            &sql,
            &format!("INSERT INTO txn{t2} (id, val) VALUES (2, '20');"),
        );
        pos(&sql, &format!("DELETE FROM txn{t1} WHERE id = 1;"));
        // Both sessions, BEGIN with the level, statements with literals, observed values.
        let p1 = pos(&sql, "-- session P1");
        let p2 = pos(&sql, "-- session P2");
        assert!(p1 < p2);
        assert_eq!(
            sql.matches("BEGIN ISOLATION LEVEL REPEATABLE READ;")
                .count(),
            2
        );
        let s1 = &sql[p1..p2];
        let s2 = &sql[p2..];
        assert!(
            s1.contains("/* 1 */ BEGIN ISOLATION LEVEL REPEATABLE READ;"),
            "{s1}"
        );
        assert!(
            s1.contains(&format!(
                "/* 2 */ SELECT val FROM txn{t1} WHERE id = 1;  -- observed: [10]"
            )),
            "{s1}"
        );
        assert!(
            s1.contains(&format!(
                "/* 3 */ INSERT INTO txn{t2} AS t (id, val) VALUES (2, '21') ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', '21');"
            )),
            "{s1}"
        );
        assert!(s1.contains("/* 7 */ COMMIT;"), "{s1}");
        assert!(s2.contains("/* 4 */ BEGIN"), "{s2}");
        assert!(
            s2.contains(&format!(
                "/* 5 */ SELECT val FROM txn{t2} WHERE id = 2;  -- observed: [20]"
            )),
            "{s2}"
        );
        assert!(s2.contains("/* 6 */ INSERT INTO txn"), "{s2}");
        assert!(s2.contains("/* 8 */ COMMIT;"), "{s2}");
        assert!(
            sql.contains("-- step order: 1-3 P1, 4-6 P2, 7 P1, 8 P2"),
            "{sql}"
        );
        assert!(!sql.contains("no statement order"), "{sql}");
        // The explanation is there, one line per step.
        assert!(sql.contains("-- Then:"), "{sql}");
        assert!(sql.contains("a contradiction!"), "{sql}");
    }

    #[test]
    fn predicate_g2_renders_range_and_count_reads() {
        use OpType::{Invoke, Ok};
        let count = |n: Option<u64>| {
            MicroOp::ReadRange(Box::new(store::RangeRead {
                kind: store::RangeKind::Count(n),
                ..store::RangeRead::count(1, 4)
            }))
        };
        let rows = |rows| {
            MicroOp::ReadRange(Box::new(store::RangeRead {
                rows,
                ..store::RangeRead::new(1, 4)
            }))
        };
        let ops = vec![
            Op::txn(0, Invoke, 0, vec![count(None), ap(1, 1)]),
            Op::txn(1, Invoke, 1, vec![rows(None), ap(2, 1)]),
            Op::txn(2, Ok, 0, vec![count(Some(0)), ap(1, 1)]),
            Op::txn(3, Ok, 1, vec![rows(Some(vec![])), ap(2, 1)]),
            Op::txn(4, Invoke, 2, vec![r0(1), r0(2)]),
            Op::txn(5, Ok, 2, vec![r(1, &[1]), r(2, &[1])]),
        ];
        let h = History::new(ops).expect("valid history");
        let mut opts = CheckOptions::new(Workload::ListAppend);
        opts.models = vec![ConsistencyModel::Serializable];
        let res = checker::check(&h, &opts);
        let d = Dialect::for_db(Some("postgres"), false);
        let sql = render(&res, &h, &d, Some(Isolation::RepeatableRead)).expect("a cycle");
        pos(
            &sql,
            "SELECT count(*) FROM txn WHERE id BETWEEN 1 AND 4;  -- observed: [:rc [1 4] 0]",
        );
        pos(
            &sql,
            "SELECT id, val FROM txn WHERE id BETWEEN 1 AND 4;  -- observed: [:rr [1 4] []]",
        );
    }

    #[test]
    fn g2_item_in_mysql_dialect() {
        let (res, h) = checked();
        let d = Dialect::for_db(Some("mariadb"), false);
        let sql = render(&res, &h, &d, Some(Isolation::RepeatableRead)).expect("a cycle");
        let t = TxnTables::default();
        let (t1, t2) = (t.table_of(1), t.table_of(2));
        assert!(sql.contains("(MySQL dialect"), "{sql}");
        assert!(sql.contains("ENGINE=InnoDB;"), "{sql}");
        assert_eq!(
            sql.matches("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;")
                .count(),
            2,
            "{sql}"
        );
        pos(&sql, "/* 1 */ START TRANSACTION;");
        pos(
            &sql,
            &format!("/* 2 */ SELECT val FROM txn{t1} WHERE id = 1;  -- observed: [10]"),
        );
        pos(
            &sql,
            &format!(
                "/* 6 */ INSERT INTO txn{t1} (id, sk, val) VALUES (1, 1, '11') ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', '11');"
            ),
        );
        pos(
            &sql,
            &format!("INSERT INTO txn{t2} (id, sk, val) VALUES (2, 2, '20');"),
        );
        // TiDB: 7 tables, FOR UPDATE reads when asked.
        let d = Dialect::for_db(Some("tidb"), true);
        let sql = render(&res, &h, &d, Some(Isolation::RepeatableRead)).expect("a cycle");
        let t7 = TxnTables { table_count: 7 };
        pos(
            &sql,
            &format!(
                "SELECT val FROM txn{} WHERE id = 1 FOR UPDATE;",
                t7.table_of(1)
            ),
        );
        assert!(!sql.contains("ENGINE=InnoDB"));
    }

    #[test]
    fn unknown_database_says_so_and_no_cycle_means_no_file() {
        let (res, h) = checked();
        let sql = render(&res, &h, &Dialect::for_db(None, false), None).expect("a cycle");
        assert!(sql.contains("-- note: the database is unknown"), "{sql}");
        assert!(sql.contains("-- isolation: unknown"), "{sql}");
        assert!(sql.contains("/* 1 */ BEGIN;"), "{sql}");
        let sim = render(&res, &h, &Dialect::for_db(Some("sim"), false), None).expect("a cycle");
        assert!(sim.contains("sim does not run these statements"), "{sim}");
        // A serial history has no cycle.
        use OpType::{Invoke, Ok};
        let h = History::new(vec![
            Op::txn(0, Invoke, 0, vec![ap(1, 1)]),
            Op::txn(1, Ok, 0, vec![ap(1, 1)]),
            Op::txn(2, Invoke, 0, vec![r0(1)]),
            Op::txn(3, Ok, 0, vec![r(1, &[1])]),
        ])
        .expect("valid");
        let res = checker::check(&h, &CheckOptions::new(Workload::ListAppend));
        assert!(render(&res, &h, &Dialect::for_db(Some("postgres"), false), None).is_none());
    }

    #[test]
    fn g1c_names_the_order_it_cannot_keep() {
        // T1 appends x then reads y with T2's append; T2 appends y and reads
        // x with T1's append: each read the other (wr both ways).
        use OpType::{Invoke, Ok};
        let h = History::new(vec![
            Op::txn(0, Invoke, 1, vec![ap(1, 1), r0(2)]),
            Op::txn(1, Invoke, 2, vec![ap(2, 1), r0(1)]),
            Op::txn(2, Ok, 1, vec![ap(1, 1), r(2, &[1])]),
            Op::txn(3, Ok, 2, vec![ap(2, 1), r(1, &[1])]),
        ])
        .expect("valid");
        // Cursor stability forbids G1c and runs no weak check, so the G1c
        // cycle is the one rendered (the weak check would add its own
        // session-order cycle over the same transactions).
        let mut opts = CheckOptions::new(Workload::ListAppend);
        opts.models = vec![checker::model::ConsistencyModel::CursorStability];
        let res = checker::check(&h, &opts);
        assert!(
            res.anomalies.keys().any(|t| t.name() == "G1c"),
            "{:?}",
            res.anomaly_types
        );
        let sql = render(
            &res,
            &h,
            &Dialect::for_db(Some("postgres"), false),
            Some(Isolation::ReadCommitted),
        )
        .expect("a cycle");
        assert!(
            sql.contains("-- note: no statement order also has"),
            "{sql}"
        );
        assert!(
            sql.contains("/* 1 */ BEGIN ISOLATION LEVEL READ COMMITTED;"),
            "{sql}"
        );
        // Every step number appears exactly once.
        for s in 1..=8 {
            assert_eq!(
                sql.matches(&format!("/* {s} */ ")).count(),
                1,
                "step {s}\n{sql}"
            );
        }
    }

    #[test]
    fn rw_register_cycles_use_register_writes() {
        // Each transaction wrote one register and read the other's write.
        use OpType::{Invoke, Ok};
        let w = |k: i64, v: i64| MicroOp::Write(Key::int(k), Val::int(v));
        let rs = |k: i64, v: i64| MicroOp::Read(Key::int(k), ReadValue::Scalar(Val::int(v)));
        let h = History::new(vec![
            Op::txn(0, Invoke, 1, vec![w(1, 5), r0(2)]),
            Op::txn(1, Invoke, 2, vec![w(2, 6), r0(1)]),
            Op::txn(2, Ok, 1, vec![w(1, 5), rs(2, 6)]),
            Op::txn(3, Ok, 2, vec![w(2, 6), rs(1, 5)]),
        ])
        .expect("valid");
        let res = checker::check(&h, &CheckOptions::new(Workload::RwRegister));
        let sql = render(
            &res,
            &h,
            &Dialect::for_db(Some("cockroach"), true),
            Some(Isolation::Serializable),
        )
        .expect("a cycle");
        let t = TxnTables::default();
        pos(
            &sql,
            &format!(
                "INSERT INTO txn{} AS t (id, val) VALUES (1, '5') ON CONFLICT (id) DO UPDATE SET val = '5';",
                t.table_of(1)
            ),
        );
        pos(
            &sql,
            &format!(
                "SELECT val FROM txn{} WHERE id = 2 FOR UPDATE;  -- observed: 6",
                t.table_of(2)
            ),
        );
        pos(
            &sql,
            "key 1: no read of a value written outside these transactions",
        );
        let my = render(&res, &h, &Dialect::for_db(Some("galera"), false), None).expect("a cycle");
        pos(
            &my,
            &format!(
                "INSERT INTO txn{} (id, sk, val) VALUES (2, 2, '6') ON DUPLICATE KEY UPDATE val = '6';",
                t.table_of(2)
            ),
        );
        pos(&my, "-- isolation unknown: the server's default applies");
    }

    #[test]
    fn binding_substitutes_literals() {
        assert_eq!(
            bind_pg("a $1 b $2 c $2", &["1".into(), "'x'".into()]),
            "a 1 b 'x' c 'x'"
        );
        assert_eq!(bind_mysql("(?, ?)", &["1".into(), "2".into()]), "(1, 2)");
        assert_eq!(sql_text("it's"), "'it''s'");
    }
}
