//! What `--db patroni` takes through `--db-conf KEY=VALUE` ([`PatroniConf`])
//! and the Patroni YAML each node runs with ([`node_yaml`]).
//!
//! Keys harness reads itself:
//! * `synchronous_mode`, `synchronous_mode_strict` (`true`/`false`, `on`/`off`):
//!   Patroni's replication modes, written to `bootstrap.dcs`. Strict implies
//!   `synchronous_mode`. Default: asynchronous.
//! * `ttl`, `loop_wait`, `retry_timeout` (seconds), `maximum_lag_on_failover`
//!   (bytes), `primary_start_timeout` (seconds): Patroni's DCS timings.
//!   Defaults are short (ttl 10, loop_wait 1, retry_timeout 4) so a failover
//!   fits in a test; `loop_wait + 2 * retry_timeout <= ttl` is enforced
//!   (Patroni 3.2 enforces it, Debian's 3.0.2 does not: breaking it invites
//!   double primaries that are the configuration's, not Patroni's).
//! * `kill`, `pause` = `node` | `patroni` | `postgres`: what `--nemesis kill`
//!   and `--nemesis pause` act on ([`ProcessScope`]). `node` (default) is
//!   Patroni and PostgreSQL together (a crash); `patroni` is Patroni alone
//!   while PostgreSQL keeps running (with no watchdog on the nodes this is
//!   the two-primaries case); `postgres` is the postmaster and its backends
//!   (Patroni restarts it in place).
//!
//! Every other `KEY=VALUE` is a PostgreSQL parameter, written to
//! `bootstrap.dcs.postgresql.parameters`.

use std::fmt::Write as _;

/// What a process fault acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessScope {
    /// Patroni and PostgreSQL (a node crash).
    Node,
    /// Patroni alone; PostgreSQL keeps running.
    Patroni,
    /// The postmaster and its children; Patroni keeps running.
    Postgres,
}

impl ProcessScope {
    const ALL: [ProcessScope; 3] = [
        ProcessScope::Node,
        ProcessScope::Patroni,
        ProcessScope::Postgres,
    ];

    fn parse(key: &str, v: &str) -> Result<ProcessScope, String> {
        ProcessScope::ALL
            .into_iter()
            .find(|s| s.as_str() == v)
            .ok_or_else(|| format!("--db-conf {key}={v}: expected node, patroni or postgres"))
    }

    /// The `--db-conf` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessScope::Node => "node",
            ProcessScope::Patroni => "patroni",
            ProcessScope::Postgres => "postgres",
        }
    }

    /// Whether Patroni's process is in scope.
    pub fn patroni(self) -> bool {
        matches!(self, ProcessScope::Node | ProcessScope::Patroni)
    }

    /// Whether PostgreSQL's processes are in scope.
    pub fn postgres(self) -> bool {
        matches!(self, ProcessScope::Node | ProcessScope::Postgres)
    }
}

/// Patroni's settings for one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatroniConf {
    /// `synchronous_mode`.
    pub synchronous_mode: bool,
    /// `synchronous_mode_strict` (implies `synchronous_mode`).
    pub synchronous_mode_strict: bool,
    /// Leader lease, seconds.
    pub ttl_s: u32,
    /// Sleep between HA loops, seconds.
    pub loop_wait_s: u32,
    /// DCS and PostgreSQL retry deadline, seconds.
    pub retry_timeout_s: u32,
    /// A replica further behind takes no part in a leader race, bytes.
    pub maximum_lag_on_failover_bytes: u64,
    /// How long a crashed primary may take to restart before failover, seconds.
    pub primary_start_timeout_s: u32,
    /// What `--nemesis kill` kills.
    pub kill: ProcessScope,
    /// What `--nemesis pause` stops.
    pub pause: ProcessScope,
    /// PostgreSQL parameters, in `--db-conf` order.
    pub pg_parameters: Vec<(String, String)>,
}

impl Default for PatroniConf {
    fn default() -> PatroniConf {
        PatroniConf {
            synchronous_mode: false,
            synchronous_mode_strict: false,
            ttl_s: 10,
            loop_wait_s: 1,
            retry_timeout_s: 4,
            maximum_lag_on_failover_bytes: 1_048_576,
            primary_start_timeout_s: 300,
            kill: ProcessScope::Node,
            pause: ProcessScope::Node,
            pg_parameters: Vec::new(),
        }
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(format!("--db-conf {key}={v}: expected true or false")),
    }
}

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("--db-conf {key}={v}: expected a non-negative integer"))
}

/// Characters a PostgreSQL parameter name may hold (it is written unquoted
/// as a YAML key).
fn is_param_name(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl PatroniConf {
    /// Reads `--db-conf` entries (`KEY=VALUE`, spaces around `=` allowed).
    ///
    /// # Errors
    /// An entry without `=`, a bad value, timings that break
    /// `loop_wait + 2 * retry_timeout <= ttl`.
    pub fn parse(entries: &[String]) -> Result<PatroniConf, String> {
        let mut c = PatroniConf::default();
        let mut sync_set = None;
        for e in entries {
            let Some((k, v)) = e.split_once('=') else {
                return Err(format!("--db-conf {e:?}: expected KEY=VALUE"));
            };
            let (k, v) = (k.trim(), v.trim().trim_matches('\''));
            match k {
                "synchronous_mode" => sync_set = Some(parse_bool(k, v)?),
                "synchronous_mode_strict" => c.synchronous_mode_strict = parse_bool(k, v)?,
                "ttl" => c.ttl_s = parse_num(k, v)?,
                "loop_wait" => c.loop_wait_s = parse_num(k, v)?,
                "retry_timeout" => c.retry_timeout_s = parse_num(k, v)?,
                "maximum_lag_on_failover" => c.maximum_lag_on_failover_bytes = parse_num(k, v)?,
                "primary_start_timeout" => c.primary_start_timeout_s = parse_num(k, v)?,
                "kill" => c.kill = ProcessScope::parse(k, v)?,
                "pause" => c.pause = ProcessScope::parse(k, v)?,
                _ if is_param_name(k) => {
                    if v.contains(['\n', '"', '\\']) {
                        return Err(format!(
                            "--db-conf {k}: the value holds a quote, backslash or newline"
                        ));
                    }
                    c.pg_parameters.push((k.to_string(), v.to_string()));
                }
                _ => return Err(format!("--db-conf {k:?}: not a parameter name")),
            }
        }
        if c.synchronous_mode_strict && sync_set == Some(false) {
            return Err(
                "--db-conf synchronous_mode_strict=true needs synchronous_mode (leave it out or set it true)"
                    .to_string(),
            );
        }
        c.synchronous_mode = sync_set.unwrap_or(false) || c.synchronous_mode_strict;
        if c.loop_wait_s == 0 || c.retry_timeout_s == 0 {
            return Err("--db-conf loop_wait and retry_timeout must be at least 1".to_string());
        }
        if u64::from(c.loop_wait_s) + 2 * u64::from(c.retry_timeout_s) > u64::from(c.ttl_s) {
            return Err(format!(
                "--db-conf: loop_wait + 2 * retry_timeout must not exceed ttl (got {} + 2 * {} > {}); Patroni demotes and elects wrongly otherwise",
                c.loop_wait_s, c.retry_timeout_s, c.ttl_s
            ));
        }
        Ok(c)
    }

    /// The replication mode in words (`async`, `sync`, `strict`).
    pub fn mode(&self) -> &'static str {
        match (self.synchronous_mode, self.synchronous_mode_strict) {
            (_, true) => "strict",
            (true, false) => "sync",
            (false, false) => "async",
        }
    }
}

/// The PostgreSQL parameters every member bootstraps with: harness's own,
/// `--db-conf`'s over them.
pub fn pg_parameters(c: &PatroniConf) -> Vec<(String, String)> {
    let mut params: Vec<(String, String)> = [
        ("wal_level", "replica"),
        ("hot_standby", "on"),
        ("max_wal_senders", "10"),
        ("max_replication_slots", "10"),
        ("wal_log_hints", "on"),
        ("max_connections", "200"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in &c.pg_parameters {
        params.retain(|(pk, _)| pk != k);
        params.push((k.clone(), v.clone()));
    }
    params
}

/// What [`crate::db::Db::settings`] records of a Patroni cluster: the DCS
/// settings that decide what a failover may lose (and the DCS members'
/// `--pre-vote`), then the parameters.
pub fn settings(c: &PatroniConf) -> Vec<(String, String)> {
    let mut s: Vec<(String, String)> = [
        ("synchronous_mode", c.synchronous_mode.to_string()),
        (
            "synchronous_mode_strict",
            c.synchronous_mode_strict.to_string(),
        ),
        ("ttl", c.ttl_s.to_string()),
        ("loop_wait", c.loop_wait_s.to_string()),
        ("retry_timeout", c.retry_timeout_s.to_string()),
        (
            "maximum_lag_on_failover",
            c.maximum_lag_on_failover_bytes.to_string(),
        ),
        (
            "primary_start_timeout",
            c.primary_start_timeout_s.to_string(),
        ),
        // The DCS's members (`dcs.rs`): imposed by harness, always on.
        ("dcs_pre_vote", super::dcs::PRE_VOTE.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    s.extend(pg_parameters(c));
    s
}

/// Where one member runs and keeps its files.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// Node name (Patroni's `name`).
    pub name: &'a str,
    /// The address peers and clients reach it at.
    pub host: &'a str,
    /// The member's directory (`data/`, socket, logs).
    pub dir: &'a str,
    /// PostgreSQL's port.
    pub port: u16,
    /// Patroni's REST port.
    pub rest_port: u16,
    /// PostgreSQL's binaries.
    pub bin_dir: &'a str,
}

/// The address a server listens on: the host when it is an IP, else all.
pub fn listen_addr(host: &str) -> &str {
    if host.parse::<std::net::IpAddr>().is_ok() {
        host
    } else {
        "0.0.0.0"
    }
}

/// The Patroni YAML of `m`, its DCS being the etcd members `etcd_hosts`
/// (`host:port`). Authentication is `trust` from anywhere: the nodes are a
/// private test network, and passwords would only add a way to fail.
pub fn node_yaml(c: &PatroniConf, m: &Member<'_>, etcd_hosts: &[String]) -> String {
    let listen = listen_addr(m.host);
    let mut y = String::new();
    let _ = writeln!(y, "scope: harness\nnamespace: /service/\nname: {}", m.name);
    let _ = writeln!(
        y,
        "restapi:\n  listen: {listen}:{rp}\n  connect_address: {h}:{rp}",
        h = m.host,
        rp = m.rest_port
    );
    let _ = writeln!(y, "etcd3:\n  hosts: {}", etcd_hosts.join(","));
    let _ = writeln!(
        y,
        "bootstrap:\n  dcs:\n    ttl: {}\n    loop_wait: {}\n    retry_timeout: {}\n    maximum_lag_on_failover: {}\n    primary_start_timeout: {}\n    synchronous_mode: {}\n    synchronous_mode_strict: {}\n    postgresql:\n      use_pg_rewind: true\n      parameters:",
        c.ttl_s,
        c.loop_wait_s,
        c.retry_timeout_s,
        c.maximum_lag_on_failover_bytes,
        c.primary_start_timeout_s,
        c.synchronous_mode,
        c.synchronous_mode_strict
    );
    for (k, v) in &pg_parameters(c) {
        let _ = writeln!(y, "        {k}: \"{v}\"");
    }
    y.push_str(
        "  initdb:\n    - encoding: UTF8\n    - locale: C.UTF-8\n  pg_hba:\n    - local all all trust\n    - host replication all 0.0.0.0/0 trust\n    - host all all 0.0.0.0/0 trust\n",
    );
    let d = m.dir;
    let _ = writeln!(
        y,
        "postgresql:\n  listen: {listen}:{p}\n  connect_address: {h}:{p}\n  data_dir: {d}/data\n  bin_dir: {b}\n  pgpass: {d}/pgpass",
        h = m.host,
        p = m.port,
        b = m.bin_dir
    );
    y.push_str(
        "  authentication:\n    replication: {username: replicator, password: rep-pass}\n    superuser: {username: postgres, password: pg-pass}\n    rewind: {username: rewind_user, password: rewind-pass}\n",
    );
    // Node-local parameters: the socket outside the data directory
    // (pg_basebackup would copy its lock), the log next to Patroni's, a
    // fast restart after SIGKILL, and mmap shared memory (what harness's
    // PostgreSQL on nodes uses).
    let _ = writeln!(
        y,
        "  parameters:\n    unix_socket_directories: \"{d}\"\n    logging_collector: \"on\"\n    log_directory: \"{d}\"\n    log_filename: \"postgresql.log\"\n    recovery_init_sync_method: \"syncfs\"\n    dynamic_shared_memory_type: \"mmap\""
    );
    y.push_str("watchdog:\n  mode: \"off\"\n");
    y
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn conf(entries: &[&str]) -> Result<PatroniConf, String> {
        PatroniConf::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_are_async_with_short_timings_and_node_faults() {
        let c = conf(&[]).unwrap();
        assert_eq!(c.mode(), "async");
        assert_eq!((c.ttl_s, c.loop_wait_s, c.retry_timeout_s), (10, 1, 4));
        assert_eq!((c.kill, c.pause), (ProcessScope::Node, ProcessScope::Node));
    }

    #[test]
    fn modes_scopes_and_parameters_are_read() {
        let c = conf(&[
            "synchronous_mode_strict=on",
            "kill=patroni",
            "pause = postgres",
            "work_mem = '8MB'",
        ])
        .unwrap();
        assert_eq!(c.mode(), "strict");
        assert!(c.synchronous_mode);
        assert_eq!(c.kill, ProcessScope::Patroni);
        assert!(c.kill.patroni() && !c.kill.postgres());
        assert_eq!(c.pause, ProcessScope::Postgres);
        assert_eq!(
            c.pg_parameters,
            [("work_mem".to_string(), "8MB".to_string())]
        );
        assert_eq!(conf(&["synchronous_mode=true"]).unwrap().mode(), "sync");
    }

    #[test]
    fn bad_entries_are_errors_naming_the_key() {
        for (e, needle) in [
            ("kill=everything", "kill=everything"),
            ("ttl=ten", "ttl=ten"),
            ("no-equals", "KEY=VALUE"),
            ("bad key=1", "not a parameter name"),
            ("x=a\"b", "quote"),
            ("ttl=8", "must not exceed ttl"),
            ("loop_wait=0", "at least 1"),
        ] {
            let err = conf(&[e]).unwrap_err();
            assert!(err.contains(needle), "{e}: {err}");
        }
        let err = conf(&["synchronous_mode=false", "synchronous_mode_strict=true"]).unwrap_err();
        assert!(err.contains("needs synchronous_mode"), "{err}");
    }

    #[test]
    fn yaml_names_the_member_its_dcs_and_the_mode() {
        let c = conf(&["synchronous_mode_strict=true", "max_connections=50"]).unwrap();
        let m = Member {
            name: "n2",
            host: "10.99.0.2",
            dir: "/var/lib/harness/patroni/n2",
            port: 5432,
            rest_port: 8008,
            bin_dir: "/usr/lib/postgresql/15/bin",
        };
        let hosts = vec!["10.99.0.1:2379".to_string(), "10.99.0.2:2379".to_string()];
        let y = node_yaml(&c, &m, &hosts);
        for needle in [
            "name: n2\n",
            "listen: 10.99.0.2:8008",
            "hosts: 10.99.0.1:2379,10.99.0.2:2379",
            "synchronous_mode: true",
            "synchronous_mode_strict: true",
            "ttl: 10\n",
            "data_dir: /var/lib/harness/patroni/n2/data",
            "unix_socket_directories: \"/var/lib/harness/patroni/n2\"",
            "max_connections: \"50\"",
            "use_pg_rewind: true",
        ] {
            assert!(y.contains(needle), "{needle} in\n{y}");
        }
        assert_eq!(y.matches("max_connections").count(), 1, "{y}");
        let named = Member { host: "db2", ..m };
        assert!(node_yaml(&c, &named, &hosts).contains("listen: 0.0.0.0:5432"));
    }
}
