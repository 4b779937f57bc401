//! `--local`: a throwaway PostgreSQL cluster made with the installed server
//! binaries, started and stopped by harness.
//!
//! The cluster lives in a fresh directory under the system temp dir (the run
//! directory may sit somewhere the `postgres` user cannot traverse, e.g.
//! under `/root`); the run directory gets a `postgres` link to it while it
//! runs and a copy of the server log (`postgresql.log`) when it stops. As
//! root, `initdb` and `pg_ctl` run as the `postgres` user through `runuser`
//! (PostgreSQL refuses to run as root).
//!
//! Clock faults (`--nemesis clock`): [`LocalCluster::start`] with `clock`
//! writes `+0.000` to `faketime.rc` in the cluster directory and starts
//! `pg_ctl` (hence the postmaster and every backend) under
//! `nemesis::clock::preload_env`; restarts after a kill do the same. The
//! file goes with the directory when the cluster is removed, so nothing
//! with an offset outlives the run.
//!
//! Key decision: the cluster is always stopped — by [`LocalCluster::stop`],
//! else by `Drop` (SIGQUIT to the postmaster's pid: immediate shutdown), and
//! clusters orphaned by a harness that was SIGKILLed are stopped and removed
//! at the start of the next `--local` run (each directory records the pid of
//! the harness that made it). An exit that skips `Drop` (a second Ctrl-C)
//! runs the `exit_cleanup` entry made before the directory exists: it also
//! kills what names the directory (a start in flight, no pid file yet).

mod conf;
pub mod process;

use crate::exit_cleanup::signal;
pub use conf::{DEFAULT_SETTINGS, parse_conf, settings};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

/// Prefix of the directories made for local clusters (under the temp dir).
const DIR_PREFIX: &str = "harness-pg-";
/// File in a cluster directory holding the pid of the harness that owns it.
const OWNER_FILE: &str = "harness.pid";

/// Why a local cluster could not be made or stopped.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// No PostgreSQL server binaries on this machine.
    #[error(
        "PostgreSQL server binaries not found (looked for initdb and pg_ctl in $HARNESS_PG_BIN, /usr/lib/postgresql/*/bin and PATH); install the package `postgresql` (Debian/Ubuntu: apt-get install postgresql)"
    )]
    NotInstalled,
    /// Running as root but there is no `postgres` user to run the server as.
    #[error(
        "running as root, but there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses to run as root); install the package `postgresql` or run harness as an ordinary user"
    )]
    NoPostgresUser,
    /// A command failed.
    #[error("{what} failed: {detail}")]
    Command {
        /// The step (e.g. `initdb`).
        what: String,
        /// Exit status and output.
        detail: String,
    },
    /// File system trouble.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LocalError {
    let what = what.into();
    move |source| LocalError::Io { what, source }
}

/// A running throwaway cluster.
#[derive(Debug)]
pub struct LocalCluster {
    bin: PathBuf,
    base: PathBuf,
    port: u16,
    pid: Option<u32>,
    as_postgres: bool,
    link: Option<PathBuf>,
    run_dir: PathBuf,
    /// The `-o` options `pg_ctl start` got (a restart after a kill reuses them).
    opts: String,
    /// The libfaketime control file (clock faults asked for).
    clock: Option<PathBuf>,
    /// Stops the server and removes its directory at an exit that skips
    /// `Drop` (a second Ctrl-C, an aborting panic).
    at_exit: Option<crate::exit_cleanup::Registration>,
    /// The settings harness imposed, as the server runs them.
    settings: Vec<(String, String)>,
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
///
/// # Errors
/// [`LocalError::NotInstalled`].
pub fn find_bin_dir() -> Result<PathBuf, LocalError> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(d) = std::env::var_os("HARNESS_PG_BIN").map(PathBuf::from)
        && has(&d)
    {
        return Ok(d);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            has(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| has(d)))
        .ok_or(LocalError::NotInstalled)
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn is_postgres_process(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("postgres"))
}

fn read_postmaster_pid(data: &Path) -> Option<u32> {
    std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Stops and removes clusters left behind by harness processes that no
/// longer exist (a SIGKILLed run). Best effort.
pub fn reap_orphans() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(DIR_PREFIX) {
            continue;
        }
        let dir = e.path();
        let owner: Option<u32> = std::fs::read_to_string(dir.join(OWNER_FILE))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let Some(owner) = owner else { continue };
        if pid_alive(owner) {
            continue;
        }
        if let Some(pm) = read_postmaster_pid(&dir.join("data"))
            && pid_alive(pm)
            && is_postgres_process(pm)
        {
            tracing::warn!(
                "stopping orphaned local PostgreSQL (pid {pm}) in {}",
                dir.display()
            );
            signal(pm, "QUIT");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn free_port() -> Result<u16, LocalError> {
    crate::ports::free_port().map_err(io("finding a free port"))
}

impl LocalCluster {
    /// Creates (`initdb`) and starts a cluster on a free loopback port, with
    /// settings for speed (fsync off: tests crash processes, not machines).
    /// Links it from `run_dir/postgres`.
    ///
    /// # Errors
    /// [`LocalError`]: binaries missing, `initdb`/`pg_ctl` failed, IO.
    pub async fn start(run_dir: &Path) -> Result<LocalCluster, LocalError> {
        Self::start_with(run_dir, false).await
    }

    /// [`LocalCluster::start`]; with `clock`, the server runs under
    /// libfaketime (see the module doc).
    ///
    /// # Errors
    /// As [`LocalCluster::start`].
    pub async fn start_with(run_dir: &Path, clock: bool) -> Result<LocalCluster, LocalError> {
        Self::start_conf(run_dir, clock, &[]).await
    }

    /// [`LocalCluster::start_with`] with `--db-conf` lines `key=value`
    /// ([`parse_conf`]), given to the server after (so over) the
    /// [`DEFAULT_SETTINGS`].
    ///
    /// # Errors
    /// As [`LocalCluster::start`]; a line [`parse_conf`] refuses.
    pub async fn start_conf(
        run_dir: &Path,
        clock: bool,
        conf: &[String],
    ) -> Result<LocalCluster, LocalError> {
        let conf = parse_conf(conf).map_err(|detail| LocalError::Command {
            what: "--db-conf".into(),
            detail,
        })?;
        reap_orphans();
        let bin = find_bin_dir()?;
        let as_postgres = running_as_root();
        if as_postgres && !user_exists("postgres") {
            return Err(LocalError::NoPostgresUser);
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let base = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{stamp}", std::process::id()));
        // Registered before the directory exists: no window leaves it.
        let at_exit = {
            let (base, run_dir) = (base.clone(), run_dir.to_path_buf());
            crate::exit_cleanup::register(
                format!("local PostgreSQL in {}", base.display()),
                move || {
                    let link = run_dir.join("postgres");
                    let ours = std::fs::read_link(&link).is_ok_and(|t| t == base);
                    quit_and_remove(&base, None, ours.then_some(link.as_path()), &run_dir);
                },
            )
        };
        std::fs::create_dir_all(&base).map_err(io(format!("creating {}", base.display())))?;
        std::fs::write(base.join(OWNER_FILE), std::process::id().to_string())
            .map_err(io("writing the owner file"))?;
        let mut cluster = LocalCluster {
            bin,
            base,
            port: 0,
            pid: None,
            as_postgres,
            link: None,
            run_dir: run_dir.to_path_buf(),
            opts: String::new(),
            clock: None,
            at_exit: Some(at_exit),
            settings: settings(&conf),
        };
        if as_postgres {
            cluster
                .run(
                    "chown",
                    Path::new("chown"),
                    &["postgres:postgres", &path_str(&cluster.base)],
                    false,
                )
                .await?;
        }
        let data = path_str(&cluster.data_dir());
        let initdb = cluster.bin.join("initdb");
        cluster
            .run(
                "initdb",
                &initdb,
                &[
                    "-D",
                    &data,
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
                as_postgres,
            )
            .await?;
        if clock {
            let file = cluster.base.join("faketime.rc");
            nemesis::clock::write_control_file(&file, &nemesis::clock::Spec::ZERO).map_err(
                |e| LocalError::Command {
                    what: "writing the libfaketime control file".into(),
                    detail: e.to_string(),
                },
            )?;
            cluster.clock = Some(file);
        }
        let pg_ctl = cluster.bin.join("pg_ctl");
        let log = path_str(&cluster.base.join("postgresql.log"));
        let mut last_err = None;
        for _attempt in 0..3 {
            let port = free_port()?;
            let mut opts = format!(
                "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={}",
                path_str(&cluster.base)
            );
            for (k, v) in DEFAULT_SETTINGS.iter().chain(&[
                ("max_connections", "300"),
                ("deadlock_timeout", "100ms"),
                ("dynamic_shared_memory_type", "mmap"),
            ]) {
                opts.push_str(&format!(" -c {k}={v}"));
            }
            for (k, v) in &conf {
                opts.push_str(&format!(" -c {k}={v}"));
            }
            match cluster
                .run(
                    "pg_ctl start",
                    &pg_ctl,
                    &[
                        "-D", &data, "-l", &log, "-w", "-t", "60", "-o", &opts, "start",
                    ],
                    as_postgres,
                )
                .await
            {
                Ok(()) => {
                    cluster.port = port;
                    cluster.opts = opts.clone();
                    cluster.pid = read_postmaster_pid(&cluster.data_dir());
                    last_err = None;
                    break;
                }
                Err(e) => last_err = Some(e),
            }
        }
        if let Some(e) = last_err {
            let tail =
                std::fs::read_to_string(cluster.base.join("postgresql.log")).unwrap_or_default();
            return Err(LocalError::Command {
                what: "starting local PostgreSQL".into(),
                detail: format!("{e}; server log:\n{tail}"),
            });
        }
        let link = run_dir.join("postgres");
        if std::os::unix::fs::symlink(&cluster.base, &link).is_ok() {
            cluster.link = Some(link);
        }
        tracing::info!(
            "local PostgreSQL started: port {}, postmaster pid {:?}, dir {}",
            cluster.port,
            cluster.pid,
            cluster.base.display()
        );
        Ok(cluster)
    }

    /// The connection URL (user `postgres`, trust authentication).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The postmaster's pid, as read from `postmaster.pid` at start.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The settings harness imposed ([`settings`]).
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// Kill/start/pause/resume of this cluster's processes (the `--local`
    /// nemesis; no root needed).
    pub fn process(&self) -> process::LocalProcess {
        process::LocalProcess {
            pg_ctl: self.bin.join("pg_ctl"),
            data: self.data_dir(),
            log: self.base.join("postgresql.log"),
            opts: self.opts.clone(),
            as_postgres: self.as_postgres,
            clock: self.clock.clone(),
            url: self.url(),
        }
    }

    /// The postmaster now (a nemesis may have restarted it under a new pid).
    fn current_pid(&self) -> Option<u32> {
        process::postmaster_pid(&self.data_dir()).or(self.pid)
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.base.join("data")
    }

    /// Stops the server (`pg_ctl stop -m fast`, then SIGQUIT if still up),
    /// copies its log into the run directory and removes the cluster.
    ///
    /// # Errors
    /// IO errors copying the log; a server that will not stop is killed.
    pub async fn stop(mut self) -> Result<(), LocalError> {
        if let Some(pid) = self.current_pid()
            && pid_alive(pid)
        {
            let pg_ctl = self.bin.join("pg_ctl");
            let data = path_str(&self.data_dir());
            let stopped = self
                .run(
                    "pg_ctl stop",
                    &pg_ctl,
                    &["-D", &data, "-m", "fast", "-w", "-t", "20", "stop"],
                    self.as_postgres,
                )
                .await;
            if let Err(e) = stopped {
                tracing::warn!("{e}; sending SIGQUIT to postmaster {pid}");
                signal(pid, "QUIT");
            }
        }
        self.pid = None;
        self.cleanup();
        Ok(())
    }

    fn cleanup(&mut self) {
        let link = self.link.take();
        remove(&self.base, link.as_deref(), &self.run_dir);
        self.at_exit = None;
    }

    async fn run(
        &self,
        what: &str,
        program: &Path,
        args: &[&str],
        as_postgres: bool,
    ) -> Result<(), LocalError> {
        let env = match (&self.clock, what) {
            (Some(file), "pg_ctl start") => nemesis::clock::preload_env(file, true),
            _ => Vec::new(),
        };
        let mut cmd = command(program, as_postgres, &env);
        cmd.args(args)
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Owned by the exit cleanup while it runs: a second Ctrl-C during
        // `pg_ctl stop` kills it (and its group), it does not outlive us.
        let owned = crate::exit_cleanup::owned_output(what, &mut cmd);
        let out = tokio::time::timeout(Duration::from_secs(90), owned)
            .await
            .map_err(|_| LocalError::Command {
                what: what.to_string(),
                detail: "timed out after 90 s".into(),
            })?
            .map_err(io(format!("running {}", program.display())))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LocalError::Command {
                what: what.to_string(),
                detail: format!(
                    "{}: {}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout).trim(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            })
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let pid = self.pid.take();
        let link = self.link.take();
        quit_and_remove(&self.base, pid, link.as_deref(), &self.run_dir);
        self.at_exit = None;
    }
}

/// Immediate shutdown of the cluster in `base` (its postmaster as
/// `postmaster.pid` names it, else `fallback`): SIGCONT (a paused server
/// answers nothing), SIGQUIT, and after 2 s SIGKILL to it and its
/// children; then [`remove`].
fn quit_and_remove(base: &Path, fallback: Option<u32>, link: Option<&Path>, run_dir: &Path) {
    let data = base.join("data");
    let current = process::postmaster_pid(&data).or(fallback);
    if let Some(pid) = current
        && pid_alive(pid)
        && is_postgres_process(pid)
    {
        let children = process::children(pid);
        signal(pid, "CONT");
        for c in &children {
            signal(*c, "CONT");
        }
        // Immediate shutdown: the postmaster takes its backends down.
        signal(pid, "QUIT");
        for _ in 0..100 {
            if !pid_alive(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if pid_alive(pid) {
            signal(pid, "KILL");
        }
        for c in children {
            if pid_alive(c) && is_postgres_process(c) {
                signal(c, "KILL");
            }
        }
    }
    // A start in flight has no pid file yet: what names the directory goes.
    for p in process::naming(base) {
        signal(p, "KILL");
    }
    remove(base, link, run_dir);
}

/// Removes the `postgres` link from the run directory, copies the server
/// log into it and removes the cluster directory `base`.
fn remove(base: &Path, link: Option<&Path>, run_dir: &Path) {
    if let Some(link) = link {
        let _ = std::fs::remove_file(link);
    }
    let log = base.join("postgresql.log");
    if log.exists() {
        let _ = std::fs::copy(&log, run_dir.join("postgresql.log"));
    }
    let _ = std::fs::remove_dir_all(base);
}

/// `program` as the `postgres` user when `as_postgres` (through
/// `runuser`), under `env` (through `env`, so it reaches the server and
/// not `runuser`). Stale libfaketime shared memory is removed first.
pub(crate) fn command(program: &Path, as_postgres: bool, env: &[(String, String)]) -> Command {
    let mut words: Vec<std::ffi::OsString> = Vec::new();
    if as_postgres {
        words.extend(["runuser", "-u", "postgres", "--"].map(Into::into));
    }
    if !env.is_empty() {
        nemesis::clock::remove_stale_shm(Path::new("/dev/shm"));
        words.push("env".into());
        words.extend(env.iter().map(|(k, v)| format!("{k}={v}").into()));
    }
    words.push(program.as_os_str().to_owned());
    let mut cmd = Command::new(&words[0]);
    cmd.args(&words[1..]);
    cmd
}

fn user_exists(name: &str) -> bool {
    std::fs::read_to_string("/etc/passwd")
        .is_ok_and(|p| p.lines().any(|l| l.split(':').next() == Some(name)))
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
