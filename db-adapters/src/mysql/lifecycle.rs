//! MariaDB on nodes: a single server (`mariadb`) or a Galera cluster
//! (`galera`: bootstrap the first node with `--wsrep-new-cluster`, join the
//! others one at a time by rsync SST, rejoin after a kill with a plain
//! start, and recover after every node crashed — by Galera's `pc.recovery`
//! when all come back, else by `--wsrep-recover` + `safe_to_bootstrap`:
//! see `galera.rs`).
//!
//! `--db-conf KEY=VALUE` lines go at the end of `[mysqld]` (they override
//! the defaults here, e.g. `innodb_flush_log_at_trx_commit=0`, the value
//! MariaDB recommends for Galera; the default here is `2`). With
//! `--lazyfs` each node's `data/` is the lossy filesystem
//! (`nemesis::lossy`), mounted before `mariadb-install-db`, checkpointed
//! once every member serves, unmounted before the node directory is
//! removed; InnoDB then uses `innodb_flush_method=fsync` without native
//! aio, so every durable write is a `write` + `fsync` the filesystem sees,
//! and Galera's gcache and the transaction coordinator log (shared mmaps,
//! which FUSE refuses) live beside `data/` (`gcache.dir`, `log-tc`);
//! `grastate.dat` and `gvwstate.dat` stay on it.
//!
//! Each node keeps everything under `<base>/<node>/` (data, `my.cnf`,
//! socket, pid file, error log), so testbed nodes, which share one file
//! system, never collide. Processes are found by their exact command line
//! (`mariadbd --defaults-file=<that node's my.cnf>`), never by name alone:
//! other programs on the same machine may run their own mariadbd.
//!
//! Galera's membership changes (`--nemesis membership`: leave, join) are
//! in [`membership`]; clock faults (mariadbd under libfaketime) in
//! [`clock`]. A kill waits for the processes to be gone by wall clock
//! (`nemesis::process::wait_gone_sh`).

use crate::client::BoxFuture;
use crate::db::LossyConfig;
use crate::db::{
    DbError, NodeLog, NodeServers, ServerConfig, ServerSteps, Servers, join_errors, poll,
};
use nemesis::Node;
use nemesis::lossy;
use nemesis::lossyfs::ctl::{Command, Reply};
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{Remote, shell_quote};
use std::sync::Arc;
use std::time::Duration;

mod clock;
mod membership;

/// How long a kill waits for mariadbd (and a joiner's rsync) to be gone.
const KILL_WAIT_S: u64 = 30;

/// The error log, mariadbd's own stdout/stderr (where a start that fails
/// before the error log is open writes: in one run a member restarted by
/// the repair left no line in its error log) and the configuration of every
/// node (the catalog's `log_files`).
pub const LOGS: &[NodeLog] = &[
    NodeLog::every_node("error.log", "mariadb-error.log"),
    NodeLog::every_node("stdout.log", "mariadb-stdout.log"),
    NodeLog::every_node("my.cnf", "my.cnf"),
];

/// Settings of a MariaDB deployment.
#[derive(Clone, Debug)]
pub struct MariaDbConfig {
    /// Directory on each node under which `<node>/` is created.
    pub base_dir: String,
    /// Client port.
    pub port: u16,
    /// Galera cluster (else a single server on the first node).
    pub galera: bool,
    /// Login created for clients (`'<user>'@'%'`, all privileges).
    pub user: String,
    /// Its password.
    pub password: String,
    /// The database clients use.
    pub database: String,
    /// Limit for one node to start or join.
    pub start_timeout: Duration,
    /// Extra `[mysqld]` lines (`--db-conf`, e.g.
    /// `innodb_flush_log_at_trx_commit=0`); later lines win.
    pub extra_conf: Vec<String>,
    /// Each data directory on the lossy filesystem (`--lazyfs`).
    pub lossy: Option<LossyConfig>,
    /// Galera: how long a restart after every member crashed waits for
    /// `pc.recovery` to re-form the primary component before it
    /// bootstraps from the most advanced node.
    pub recovery_wait: Duration,
    /// Clock faults are asked for: each mariadbd runs under libfaketime
    /// with the control file [`Servers::clock_path`] (`lifecycle/clock.rs`).
    pub clock: bool,
    /// Serialises Galera's full-cluster restarts (see `galera.rs`).
    pub(super) restart: Arc<tokio::sync::Mutex<()>>,
}

impl MariaDbConfig {
    /// Defaults: `/var/lib/harness/mariadb`, port 3306, user/password/db `harness`.
    pub fn new(galera: bool) -> MariaDbConfig {
        MariaDbConfig {
            base_dir: "/var/lib/harness/mariadb".to_string(),
            port: 3306,
            galera,
            user: "harness".to_string(),
            password: "harness".to_string(),
            database: "harness".to_string(),
            start_timeout: Duration::from_secs(120),
            extra_conf: Vec::new(),
            lossy: None,
            recovery_wait: Duration::from_secs(30),
            clock: false,
            restart: Arc::new(tokio::sync::Mutex::new(())),
        }
    }
}

/// Galera's `innodb_lock_wait_timeout` (seconds): how long a replicated
/// write set may wait for a local transaction's locks (see `config_with`).
pub const GALERA_LOCK_WAIT_S: u32 = 3;

/// The servers of a [`MariaDb`]: its settings and one remote per node.
pub type MariaDbServers = Servers<MariaDbConfig>;

impl ServerConfig for MariaDbConfig {
    fn base_dir(&self) -> &str {
        &self.base_dir
    }
}

/// MariaDB or Galera on a set of nodes.
#[derive(Clone)]
pub struct MariaDb {
    inner: Arc<MariaDbServers>,
}

pub use super::galera::status::WsrepStatus;

impl Servers<MariaDbConfig> {
    pub(super) fn cnf(&self, node: &Node) -> String {
        format!("{}/my.cnf", self.node_dir(node))
    }
    /// A pattern matching this node's mariadbd: anchored at the start of
    /// the command line, so it never matches the shell that runs pgrep
    /// (whose command line contains the pattern and the start command).
    pub(super) fn pattern(&self, node: &Node) -> String {
        shell_quote(&format!(
            "^(/usr/sbin/)?mariadbd --defaults-file={}( |$)",
            self.cnf(node)
        ))
    }

    fn bind_address(node: &Node) -> &str {
        if node.host.parse::<std::net::IpAddr>().is_ok() {
            &node.host
        } else {
            "0.0.0.0"
        }
    }

    fn config(&self, node: &Node) -> String {
        let members: Vec<&str> = self
            .remotes
            .iter()
            .map(|r| r.node().host.as_str())
            .collect();
        self.config_with(node, &members)
    }

    /// `node`'s `my.cnf`, its Galera peers being the hosts `members`.
    fn config_with(&self, node: &Node, members: &[&str]) -> String {
        let dir = self.node_dir(node);
        let mut c = format!(
            "[mysqld]\nuser=mysql\ndatadir={dir}/data\nsocket={dir}/mysqld.sock\npid-file={dir}/mariadbd.pid\n\
             log-error={dir}/error.log\nbind-address={}\nport={}\nskip-name-resolve\nbinlog_format=ROW\n\
             default_storage_engine=InnoDB\ninnodb_autoinc_lock_mode=2\ninnodb_buffer_pool_size=64M\n\
             innodb_flush_log_at_trx_commit=2\n",
            Self::bind_address(node),
            self.cfg.port
        );
        if self.cfg.galera {
            // The gcache is a shared mmap, which FUSE (the lossy
            // filesystem) refuses: keep it beside the data directory.
            let gcache_dir = match self.cfg.lossy {
                Some(_) => format!(";gcache.dir={dir}"),
                None => String::new(),
            };
            c.push_str(&format!(
                "wsrep_on=ON\nwsrep_provider=/usr/lib/galera/libgalera_smm.so\nwsrep_cluster_name=harness\n\
                 wsrep_cluster_address=gcomm://{}\nwsrep_node_address={}\nwsrep_node_name={}\n\
                 wsrep_sst_method=rsync\nwsrep_sst_receive_address={}:4444\n\
                 wsrep_provider_options=\"gcache.size=32M;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.install_timeout=PT4S{gcache_dir}\"\n",
                members.join(","),
                node.host,
                node.name,
                node.host
            ));
            // A replicated write set can wait for the S locks a local
            // SERIALIZABLE read took (write sets do not carry them, so
            // certification never sees the conflict) while that local
            // transaction waits, in commit order, for the write set: only
            // the applier's lock wait timeout ends it, and meanwhile every
            // commit of the cluster waits, and an SST donor's FLUSH TABLES
            // WITH READ LOCK behind them. With MariaDB's 50 s a fault-free
            // run stood still 50 s at a time; 3 s keeps a lock wait under
            // the op timeout.
            c.push_str(&format!("innodb_lock_wait_timeout={GALERA_LOCK_WAIT_S}\n"));
        }
        if self.cfg.lossy.is_some() {
            // Every write through write(2) and fsync(2): the lossy
            // filesystem sees what reaches "disk" (no O_DIRECT, no aio).
            c.push_str("innodb_flush_method=fsync\ninnodb_use_native_aio=0\n");
            // The transaction coordinator log is a shared mmap too.
            c.push_str(&format!("log-tc={dir}/tc.log\n"));
        }
        for line in &self.cfg.extra_conf {
            c.push_str(line.trim());
            c.push('\n');
        }
        c.push_str(&format!("[client]\nsocket={dir}/mysqld.sock\n"));
        c
    }

    async fn check_installed(&self, r: &Arc<dyn Remote>) -> Result<(), DbError> {
        let node = r.node().name.clone();
        let mut checks = vec![
            (
                "test -x /usr/sbin/mariadbd || command -v mariadbd",
                "mariadbd",
                "mariadb-server",
            ),
            (
                "command -v mariadb-install-db",
                "mariadb-install-db",
                "mariadb-server",
            ),
            ("command -v mariadb", "mariadb client", "mariadb-client"),
        ];
        if self.cfg.galera {
            checks.push((
                "test -e /usr/lib/galera/libgalera_smm.so",
                "the Galera provider",
                "galera-4",
            ));
            checks.push(("command -v rsync", "rsync (for rsync SST)", "rsync"));
        }
        for (cmd, what, pkg) in checks {
            let out = r.exec(cmd, None, Duration::from_secs(10)).await?;
            if !out.success() {
                return Err(DbError::Missing {
                    node,
                    what: what.to_string(),
                    packages: pkg.to_string(),
                });
            }
        }
        Ok(())
    }

    pub(super) async fn start_node(&self, node: &Node, new_cluster: bool) -> Result<(), DbError> {
        let r = self.remote(node)?;
        let extra = if new_cluster {
            " --wsrep-new-cluster"
        } else {
            ""
        };
        let dir = self.node_dir(node);
        let cmd = format!(
            "cd /tmp; if pgrep -f {pat} >/dev/null; then exit 0; fi; \
             rm -f {dir}/mysqld.sock {dir}/mariadbd.pid; \
             {faked}setsid /usr/sbin/mariadbd --defaults-file={cnf}{extra} </dev/null >>{dir}/stdout.log 2>&1 &",
            pat = self.pattern(node),
            cnf = self.cnf(node),
            faked = self.clock_prefix(node),
        );
        r.run(&cmd).await?;
        Ok(())
    }

    pub(super) async fn kill_node(&self, node: &Node, signal: &str) -> Result<(), DbError> {
        let r = self.remote(node)?;
        let dir = self.node_dir(node);
        // Also the rsync daemon a joiner runs for SST: it would hold port 4444.
        let cmd = format!(
            "P=$(pgrep -f {pat}); R=$(pgrep -f {rs}); kill -{signal} $P $R 2>/dev/null; {wait}",
            pat = self.pattern(node),
            rs = shell_quote(&format!("^rsync .*{dir}/")),
            wait = nemesis::process::wait_gone_sh("$P $R", KILL_WAIT_S),
        );
        let out = r
            .exec(&cmd, None, Duration::from_secs(KILL_WAIT_S + 20))
            .await?;
        if out.success() {
            Ok(())
        } else {
            Err(DbError::Step {
                node: node.name.clone(),
                step: "kill".to_string(),
                detail: format!(
                    "mariadbd still running after SIG{signal}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            })
        }
    }

    async fn signal(&self, node: &Node, signal: &str) -> Result<(), DbError> {
        let r = self.remote(node)?;
        // pkill exits 1 when nothing matched: pausing a dead process is a no-op.
        let cmd = format!("pkill -{signal} -f {}; true", self.pattern(node));
        r.run(&cmd).await?;
        Ok(())
    }

    pub(super) async fn sql_root(&self, node: &Node, sql: &str) -> Result<String, DbError> {
        let r = self.remote(node)?;
        let cmd = format!(
            "mariadb --defaults-file={} -uroot --connect-timeout=2 -Nse {}",
            self.cnf(node),
            shell_quote(sql)
        );
        Ok(r.run_timeout(&cmd, Duration::from_secs(20))
            .await?
            .stdout_str())
    }

    /// Galera status of `node` (error when the server does not answer or
    /// a variable is missing: see [`super::galera::status`]).
    pub(super) async fn wsrep_status(&self, node: &Node) -> Result<WsrepStatus, DbError> {
        let out = self
            .sql_root(node, super::galera::status::STATUS_SQL)
            .await?;
        super::galera::status::parse_status(&out).map_err(|detail| DbError::Step {
            node: node.name.clone(),
            step: "wsrep status".to_string(),
            detail,
        })
    }

    async fn serving(&self, node: &Node) -> Result<bool, String> {
        if self.cfg.galera {
            match self.wsrep_status(node).await {
                Ok(s) if s.serving() => Ok(true),
                // The state is the detail a timeout reports.
                Ok(s) => Err(s.to_string()),
                Err(e) => Err(e.to_string()),
            }
        } else {
            self.sql_root(node, "select 1")
                .await
                .map(|o| o == "1")
                .map_err(|e| e.to_string())
        }
    }

    pub(super) async fn wait_serving(&self, node: &Node, limit: Duration) -> Result<(), DbError> {
        poll(limit, Duration::from_millis(200), || self.serving(node))
            .await
            .map_err(|detail| DbError::NotReady {
                node: node.name.clone(),
                db: if self.cfg.galera { "galera" } else { "mariadb" }.to_string(),
                waited_ms: limit.as_millis(),
                detail,
            })
    }

    async fn prepare_node(&self, node: &Node) -> Result<(), DbError> {
        let r = self.remote(node)?;
        let dir = self.node_dir(node);
        r.run(&format!(
            "install -d -m 755 {base} && rm -rf {dir} && install -d -o mysql -g mysql -m 750 {dir} {dir}/data",
            base = shell_quote(&self.cfg.base_dir)
        ))
        .await?;
        if let Some(l) = &self.cfg.lossy {
            nemesis::node_binary::ensure_binary(r.as_ref(), &l.binary).await?;
            let data = format!("{dir}/data");
            r.run_timeout(
                &lossy::mount_command(&l.binary, &data, Some("mysql"), l.cache_mib, l.strict),
                Duration::from_secs(60),
            )
            .await?;
        }
        r.upload_bytes(self.config(node).into_bytes(), &self.cnf(node))
            .await?;
        r.run(&format!("chmod 644 {}", self.cnf(node))).await?;
        self.prepare_clock(node).await
    }

    async fn install_db(&self, node: &Node) -> Result<(), DbError> {
        let r = self.remote(node)?;
        let dir = self.node_dir(node);
        r.run_timeout(
            &format!(
                "cd /tmp && mariadb-install-db --defaults-file={} --user=mysql --skip-test-db \
                 --auth-root-authentication-method=socket >{dir}/install.log 2>&1 || ({{ grep -i -m 20 -e error -e warning {dir}/install.log; tail -5 {dir}/install.log; }} >&2; exit 1)",
                self.cnf(node)
            ),
            Duration::from_secs(120),
        )
        .await?;
        Ok(())
    }

    async fn create_login(&self, node: &Node) -> Result<(), DbError> {
        let c = &self.cfg;
        let sql = format!(
            "CREATE USER IF NOT EXISTS '{u}'@'%' IDENTIFIED BY '{p}'; GRANT ALL ON *.* TO '{u}'@'%'; \
             CREATE DATABASE IF NOT EXISTS {d};",
            u = c.user,
            p = c.password,
            d = c.database
        );
        self.sql_root(node, &sql).await?;
        Ok(())
    }
}

impl ServerSteps for Servers<MariaDbConfig> {
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let nodes = self.nodes();
            let Some(first) = nodes.first().cloned() else {
                return Err(DbError::Topology(
                    "mariadb needs at least one node".to_string(),
                ));
            };
            if self.cfg.galera && nodes.len() < 3 {
                return Err(DbError::Topology(format!(
                    "galera needs at least 3 nodes, got {}",
                    nodes.len()
                )));
            }
            let members: Vec<Node> = if self.cfg.galera {
                nodes.clone()
            } else {
                vec![first.clone()]
            };
            let mut errs = Vec::new();
            for r in &self.remotes {
                if members.iter().any(|m| m.name == r.node().name)
                    && let Err(e) = self.check_installed(r).await
                {
                    errs.push(e);
                }
            }
            join_errors(errs)?;
            self.teardown_all().await?;
            for n in &members {
                self.prepare_node(n).await?;
            }
            self.install_db(&first).await?;
            self.start_node(&first, self.cfg.galera).await?;
            self.wait_serving(&first, self.cfg.start_timeout).await?;
            self.create_login(&first).await?;
            // Joiners one at a time: concurrent rsync SSTs from one donor are slow
            // and were never verified.
            for n in members.iter().skip(1) {
                self.start_node(n, false).await?;
                self.wait_serving(n, self.cfg.start_timeout).await?;
            }
            // What mariadb-install-db and the SSTs wrote is durable: a
            // first kill must not lose the cluster itself.
            for n in &members {
                self.lossy_checkpoint(n).await?;
            }
            Ok(())
        })
    }

    fn release_node<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), DbError>> {
        Box::pin(async move {
            // Always: a stale mount left by a crashed `--lazyfs` run would
            // keep the directory from being removed.
            let data = format!("{}/data", self.node_dir(node));
            self.remote(node)?
                .run_timeout(&lossy::unmount_command(&data), Duration::from_secs(60))
                .await?;
            Ok(())
        })
    }

    fn kill_servers<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), DbError>> {
        Box::pin(self.kill_node(node, "KILL"))
    }

    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let members: Vec<Node> = if self.cfg.galera {
                self.nodes()
            } else {
                self.nodes().into_iter().take(1).collect()
            };
            for n in &members {
                self.start_node(n, false).await?;
            }
            if self.cfg.galera {
                return self.galera_await_ready(&members, limit).await;
            }
            let mut errs = Vec::new();
            for n in &members {
                if let Err(e) = self.wait_serving(n, limit).await {
                    errs.push(e);
                }
            }
            join_errors(errs)
        })
    }
}

impl Servers<MariaDbConfig> {
    /// Sends `cmd` to the lossy filesystem under `node`'s data directory
    /// (`None` without `--lazyfs`).
    async fn lossy_command(&self, node: &Node, cmd: &Command) -> Result<Option<Reply>, DbError> {
        let Some(l) = &self.cfg.lossy else {
            return Ok(None);
        };
        let data = format!("{}/data", self.node_dir(node));
        let out = self
            .remote(node)?
            .run_timeout(
                &lossy::ctl_command(&l.binary, &data, cmd),
                Duration::from_secs(60),
            )
            .await?;
        Reply::parse(&out.stdout_str())
            .map(Some)
            .map_err(|e| DbError::Step {
                node: node.name.clone(),
                step: "lossyfs".to_string(),
                detail: e,
            })
    }

    /// Makes everything written so far under `node`'s data directory
    /// durable (no-op without `--lazyfs`).
    pub(super) async fn lossy_checkpoint(&self, node: &Node) -> Result<(), DbError> {
        match self.lossy_command(node, &Command::Checkpoint).await? {
            Some(r) if !r.ok => Err(DbError::Step {
                node: node.name.clone(),
                step: "lossyfs checkpoint".to_string(),
                detail: r.message,
            }),
            _ => Ok(()),
        }
    }
}

impl MariaDb {
    /// MariaDB with `cfg` on the nodes of `remotes` (Galera: all of them;
    /// single: the first).
    pub fn new(cfg: MariaDbConfig, remotes: Vec<Arc<dyn Remote>>) -> MariaDb {
        MariaDb {
            inner: Arc::new(Servers::new(cfg, remotes)),
        }
    }

    /// Galera status of `node`.
    ///
    /// # Errors
    /// The server does not answer.
    pub async fn wsrep_status(&self, node: &Node) -> Result<WsrepStatus, DbError> {
        self.inner.wsrep_status(node).await
    }

    /// The settings.
    pub fn config(&self) -> &MariaDbConfig {
        &self.inner.cfg
    }
}

fn perr(node: &Node, action: &'static str, e: DbError) -> ProcessError {
    ProcessError {
        node: node.name.clone(),
        action,
        message: e.to_string(),
    }
}

impl Process for Servers<MariaDbConfig> {
    fn clock_file(&self, node: &Node) -> Option<String> {
        self.cfg.clock.then(|| self.clock_path(node))
    }

    fn db_clock<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<nemesis::clock::ClockReading, ProcessError>> {
        Box::pin(async move {
            self.read_clock(node).await.map_err(|message| ProcessError {
                node: node.name.clone(),
                action: "clock",
                message,
            })
        })
    }

    /// SIGTERM (a clean shutdown: InnoDB flushes, Galera leaves the
    /// cluster), then a kill if it is not gone in time.
    fn shut_down<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            if self.kill_node(node, "TERM").await.is_err() {
                self.kill_node(node, "KILL")
                    .await
                    .map_err(|e| perr(node, "shut down", e))?;
            }
            Ok(())
        })
    }

    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.kill_node(node, "KILL")
                .await
                .map_err(|e| perr(node, "kill", e))
        })
    }

    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            if self.cfg.galera {
                self.galera_start(node).await
            } else {
                self.start_node(node, false).await
            }
            .map_err(|e| perr(node, "start", e))
        })
    }

    fn lossy(&self) -> bool {
        self.cfg.lossy.is_some()
    }

    fn lossy_ctl<'a>(
        &'a self,
        node: &'a Node,
        cmd: &'a Command,
    ) -> BoxFuture<'a, Result<Reply, ProcessError>> {
        Box::pin(async move {
            let reply = self
                .lossy_command(node, cmd)
                .await
                .map_err(|e| perr(node, "lossyfs", e))?;
            match reply {
                None => Err(perr(
                    node,
                    "lossyfs",
                    DbError::Topology("not on the lossy filesystem (run with --lazyfs)".into()),
                )),
                Some(r) if r.ok => Ok(r),
                Some(r) => Err(perr(node, "lossyfs", DbError::Topology(r.message))),
            }
        })
    }

    fn lose_unsynced<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<Reply>, ProcessError>> {
        Box::pin(async move {
            self.lossy_command(node, &Command::Lose)
                .await
                .map_err(|e| perr(node, "lose-unfsynced-writes", e))
        })
    }

    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal(node, "STOP")
                .await
                .map_err(|e| perr(node, "pause", e))
        })
    }

    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal(node, "CONT")
                .await
                .map_err(|e| perr(node, "resume", e))
        })
    }
}

impl NodeServers for MariaDb {
    type Config = MariaDbConfig;
    fn steps(&self) -> &Arc<MariaDbServers> {
        &self.inner
    }
    fn server_name(&self) -> &'static str {
        if self.inner.cfg.galera {
            "galera"
        } else {
            "mariadb"
        }
    }
    fn logs(&self) -> &'static [NodeLog] {
        LOGS
    }
    fn membership(&self) -> Option<Arc<dyn nemesis::membership::Membership>> {
        if self.inner.cfg.galera {
            Some(self.inner.clone())
        } else {
            None
        }
    }
    fn primary_nodes(&self) -> Vec<Node> {
        if self.inner.cfg.galera {
            Vec::new()
        } else {
            self.inner.nodes().into_iter().take(1).collect()
        }
    }
    fn serving_nodes(&self) -> Vec<Node> {
        if self.inner.cfg.galera {
            self.inner.nodes()
        } else {
            self.inner.nodes().into_iter().take(1).collect()
        }
    }
    fn imposed_settings(&self) -> Vec<(String, String)> {
        let inner = &self.inner;
        let Some(first) = inner.remotes.first() else {
            return Vec::new();
        };
        let config = inner.config(first.node());
        // What differs per node or only says where things are.
        const PER_NODE: [&str; 12] = [
            "datadir",
            "socket",
            "pid-file",
            "log-error",
            "bind-address",
            "port",
            "user",
            "log-tc",
            "wsrep_cluster_address",
            "wsrep_node_address",
            "wsrep_node_name",
            "wsrep_sst_receive_address",
        ];
        let (server, _client) = config.split_once("[client]").unwrap_or((&config, ""));
        crate::db::conf_lines(server)
            .into_iter()
            .filter(|(k, _)| !PER_NODE.contains(&k.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::WsrepStatus;

    fn status(status: &str, state: &str) -> WsrepStatus {
        WsrepStatus::new(2, status, state, true)
    }

    #[test]
    fn a_donor_is_in_the_primary_component_though_not_serving() {
        // The state CI saw on the only primary member when the repair
        // restarted it (and the cluster lost its primary component).
        let donor = status("Primary", "Donor/Desynced");
        assert!(donor.in_primary() && !donor.serving());
        let synced = status("Primary", "Synced");
        assert!(synced.in_primary() && synced.serving());
        let cut_off = status("non-Primary", "Initialized");
        assert!(!cut_off.in_primary() && !cut_off.serving());
    }
}
