//! Release-tarball clusters (CockroachDB, TiDB, YugabyteDB): lifecycles as
//! **command plans** — ordered lists of (node, command) steps built by pure
//! functions — run by one small executor over [`Remote`], plus the pieces
//! those plans share: where a node keeps its files, copying and unpacking the
//! user's release tarball once, and pid-file daemon supervision
//! (start/kill/pause/resume by pid, never by name).
//!
//! Key decision: the plan is data, so unit tests assert the exact commands
//! each database's documentation prescribes, and the same plan runs over SSH
//! on real nodes and on testbed nodes. Every node keeps everything under
//! `<base>/<node>/` (testbed nodes share one file system).
//!
//! In the crate root rather than in `tarball/`: etcd's lifecycle supervises
//! its daemons with the same [`Daemon`]; what only the tarball databases
//! share (their one lifecycle, settings, catalog answers) is `tarball/`.

use crate::db::DbError;
use nemesis::remote::{Remote, shell_quote};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where a release comes from (`--tarball PATH|URL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tarball {
    /// A file on the control machine, copied to every node.
    Local(PathBuf),
    /// An `http://` or `https://` URL each node downloads (with curl or wget).
    Url(String),
}

impl Tarball {
    /// Parses `--tarball`: a URL when it starts with `http://`/`https://`,
    /// else a local path that must exist.
    ///
    /// # Errors
    /// Names the path when no such file exists.
    pub fn parse(s: &str) -> Result<Tarball, String> {
        if s.starts_with("http://") || s.starts_with("https://") {
            return Ok(Tarball::Url(s.to_string()));
        }
        let p = PathBuf::from(s);
        if !p.is_file() {
            return Err(format!(
                "--tarball {s:?}: no such file (give a release tarball path or an http(s) URL)"
            ));
        }
        Ok(Tarball::Local(p))
    }
}

/// What a step does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Runs a shell command; a non-zero exit fails the step.
    Run(String),
    /// Copies a local file to a path on the node.
    Upload {
        /// Local file.
        local: PathBuf,
        /// Destination on the node.
        remote: String,
    },
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Node name.
    pub node: String,
    /// Short description, used in errors (`unpack`, `start pd-server`).
    pub what: String,
    /// What to do.
    pub action: Action,
    /// Limit for one attempt.
    pub timeout: Duration,
    /// Attempts (≥ 1) and the pause between them, for steps that wait for a
    /// peer (e.g. `cockroach init` until the node listens).
    pub attempts: u32,
    /// Pause between attempts.
    pub retry_every: Duration,
}

impl Step {
    /// A command step with a 60 s limit and one attempt.
    pub fn run(node: &str, what: impl Into<String>, cmd: impl Into<String>) -> Step {
        Step {
            node: node.to_string(),
            what: what.into(),
            action: Action::Run(cmd.into()),
            timeout: Duration::from_secs(60),
            attempts: 1,
            retry_every: Duration::from_secs(1),
        }
    }

    /// Retries the step up to `attempts` times, `every` apart.
    pub fn retry(mut self, attempts: u32, every: Duration) -> Step {
        self.attempts = attempts.max(1);
        self.retry_every = every;
        self
    }

    /// Sets the limit of one attempt.
    pub fn timeout(mut self, t: Duration) -> Step {
        self.timeout = t;
        self
    }

    /// The command, if this is a command step.
    pub fn cmd(&self) -> Option<&str> {
        match &self.action {
            Action::Run(c) => Some(c),
            Action::Upload { .. } => None,
        }
    }
}

/// An ordered list of steps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The steps, run in order.
    pub steps: Vec<Step>,
}

impl Plan {
    /// Appends a step.
    pub fn push(&mut self, s: Step) {
        self.steps.push(s);
    }

    /// Appends every step of `other`.
    pub fn extend(&mut self, other: Plan) {
        self.steps.extend(other.steps);
    }

    /// The commands run on `node`, in order (uploads as `upload <local> <remote>`).
    pub fn commands_on(&self, node: &str) -> Vec<String> {
        self.steps
            .iter()
            .filter(|s| s.node == node)
            .map(|s| match &s.action {
                Action::Run(c) => c.clone(),
                Action::Upload { local, remote } => {
                    format!("upload {} {remote}", local.display())
                }
            })
            .collect()
    }
}

/// Runs `plan` in order over `remotes`; stops at the first failed step, with
/// an error naming the node, the step and the command's error output.
///
/// # Errors
/// [`DbError::Step`] or [`DbError::Topology`] for an unknown node.
pub async fn execute(plan: &Plan, remotes: &[Arc<dyn Remote>]) -> Result<(), DbError> {
    for step in &plan.steps {
        let r = remotes
            .iter()
            .find(|r| r.node().name == step.node)
            .ok_or_else(|| DbError::Topology(format!("plan names unknown node {}", step.node)))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let res: Result<(), String> = match &step.action {
                Action::Run(cmd) => match r.exec(cmd, None, step.timeout).await {
                    Ok(o) if o.success() => Ok(()),
                    Ok(o) => {
                        let mut msg = o.stderr_str();
                        if msg.is_empty() {
                            msg = o.stdout_str();
                        }
                        Err(format!("exit status {}: {msg}", o.status))
                    }
                    Err(e) => Err(e.to_string()),
                },
                Action::Upload { local, remote } => {
                    r.upload(local, remote).await.map_err(|e| e.to_string())
                }
            };
            match res {
                Ok(()) => break,
                Err(detail) if attempt >= step.attempts => {
                    return Err(DbError::Step {
                        node: step.node.clone(),
                        step: step.what.clone(),
                        detail,
                    });
                }
                Err(detail) => {
                    tracing::debug!(
                        "node {}: {} attempt {attempt}: {detail}",
                        step.node,
                        step.what
                    );
                    tokio::time::sleep(step.retry_every).await;
                }
            }
        }
    }
    Ok(())
}

/// Node-side layout: `<base>/<node>/` holds `release.tar.gz`, the unpacked
/// release in `dist/`, data directories, pid files and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Base directory on every node.
    pub base: String,
}

/// The tarball's unpack log, kept from every node of a tarball install
/// (each database's `LOGS` lists it).
pub const UNPACK_LOG: crate::db::NodeLog =
    crate::db::NodeLog::every_node("unpack.log", "unpack.log");

impl Layout {
    /// The node's directory.
    pub fn dir(&self, node: &str) -> String {
        format!("{}/{node}", self.base.trim_end_matches('/'))
    }
    /// The unpacked release.
    pub fn dist(&self, node: &str) -> String {
        format!("{}/dist", self.dir(node))
    }
    /// The copied tarball.
    pub fn tarball(&self, node: &str) -> String {
        format!("{}/release.tar.gz", self.dir(node))
    }
    /// Output of unpacking the tarball (the list of its files).
    pub fn unpack_log(&self, node: &str) -> String {
        format!("{}/{}", self.dir(node), UNPACK_LOG.path)
    }
    /// Pid file of daemon `name`.
    pub fn pid_file(&self, node: &str, name: &str) -> String {
        format!("{}/{name}.pid", self.dir(node))
    }
    /// Standard output and error of daemon `name`.
    pub fn stdout_file(&self, node: &str, name: &str) -> String {
        format!("{}/{name}.stdout.log", self.dir(node))
    }
}

/// What every tarball database's settings share: where it lives on the
/// nodes, the release, its SQL port, and whether it runs already.
#[derive(Clone, Debug)]
pub struct Install {
    /// Node-side directories.
    pub layout: Layout,
    /// The release tarball.
    pub tarball: Tarball,
    /// The SQL port clients connect to.
    pub port: u16,
    /// The cluster runs already (`--no-setup`): nothing is installed,
    /// started or torn down.
    pub no_setup: bool,
}

impl Install {
    /// `tarball` installed under `base` on every node, serving SQL on `port`.
    pub fn new(base: &str, tarball: Tarball, port: u16) -> Install {
        Install {
            layout: Layout {
                base: base.to_string(),
            },
            tarball,
            port,
            no_setup: false,
        }
    }
}

/// Copies (or downloads) the tarball to `node` and unpacks it once into
/// `dist/` (a marker file records a finished unpack; a later setup reuses
/// it), then checks that every binary in `binaries` (paths relative to
/// `dist/`) is there and executable, failing with a message naming the
/// missing binary and the database.
pub fn install_steps(
    layout: &Layout,
    node: &str,
    tarball: &Tarball,
    db: &str,
    binaries: &[&str],
) -> Plan {
    let dir = layout.dir(node);
    let dist = layout.dist(node);
    let tgz = layout.tarball(node);
    let mut p = Plan::default();
    p.push(Step::run(
        node,
        "make directories",
        format!("mkdir -p {}", shell_quote(&dir)),
    ));
    let marker = format!("{dist}/.harness-unpacked");
    match tarball {
        Tarball::Local(local) => p.push(Step {
            action: Action::Upload {
                local: local.clone(),
                remote: tgz.clone(),
            },
            timeout: Duration::from_secs(600),
            ..Step::run(node, "copy tarball", "")
        }),
        Tarball::Url(url) => p.push(
            Step::run(
                node,
                "download tarball",
                format!(
                    "test -f {m} || curl -fsSL -o {t} {u} || wget -q -O {t} {u}",
                    m = shell_quote(&marker),
                    t = shell_quote(&tgz),
                    u = shell_quote(url)
                ),
            )
            .timeout(Duration::from_secs(600)),
        ),
    }
    // Releases of all three databases have one top-level directory
    // (cockroach-vX.linux-amd64/, tidb-vX-linux-amd64/, yugabyte-X/).
    p.push(
        Step::run(
            node,
            "unpack tarball",
            format!(
                "test -f {m} || {{ rm -rf {d} && mkdir -p {d} && \
                 {{ tar -xzvf {t} -C {d} --strip-components=1 >{l} 2>&1 || {{ tail -5 {l} >&2; exit 1; }}; }} && touch {m}; }}",
                m = shell_quote(&marker),
                d = shell_quote(&dist),
                t = shell_quote(&tgz),
                l = shell_quote(&layout.unpack_log(node)),
            ),
        )
        .timeout(Duration::from_secs(600)),
    );
    for b in binaries {
        let path = format!("{dist}/{b}");
        p.push(Step::run(
            node,
            format!("check {b}"),
            format!(
                "test -x {p} || {{ echo {msg} >&2; exit 127; }}",
                p = shell_quote(&path),
                msg = shell_quote(&format!(
                    "{db} binary `{b}` not found at {path}: the tarball does not contain it; pass --tarball with a {db} release for this platform"
                ))
            ),
        ));
    }
    p
}

/// A daemon supervised through a pid file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Daemon {
    /// Short name (`cockroach`, `pd`, `yb-master`): names the pid and stdout files.
    pub name: String,
    /// Absolute path of the binary.
    pub bin: String,
    /// Its arguments, each one word (quoted when rendered).
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: String,
    /// Pid file.
    pub pid_file: String,
    /// Where standard output and error go.
    pub stdout: String,
}

impl Daemon {
    /// `bin args…` as one shell-quoted command line.
    pub fn command_line(&self) -> String {
        let mut s = shell_quote(&self.bin);
        for a in &self.args {
            s.push(' ');
            s.push_str(&shell_quote(a));
        }
        s
    }

    /// Starts the daemon unless its pid file names a live process running
    /// this binary; records its pid. Fails naming the binary when it is
    /// missing.
    pub fn start_cmd(&self) -> String {
        format!(
            "cd {cwd} || exit 1; {alive} && exit 0; \
             test -x {bin} || {{ echo {missing} >&2; exit 127; }}; \
             setsid {cmdline} </dev/null >>{out} 2>&1 & echo $! > {pid}",
            cwd = shell_quote(&self.cwd),
            alive = self.alive_test(),
            bin = shell_quote(&self.bin),
            missing = shell_quote(&format!(
                "cannot start {}: binary {} not found",
                self.name, self.bin
            )),
            cmdline = self.command_line(),
            out = shell_quote(&self.stdout),
            pid = shell_quote(&self.pid_file),
        )
    }

    /// A shell test that is true when the pid file names a live process
    /// whose command line contains the binary's path (guards against pid
    /// reuse). Sets `p` to the pid.
    fn alive_test(&self) -> String {
        format!(
            "{{ p=$(cat {pid} 2>/dev/null) && test -n \"$p\" && grep -qF {bin} /proc/$p/cmdline 2>/dev/null; }}",
            pid = shell_quote(&self.pid_file),
            bin = shell_quote(&self.bin),
        )
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to the recorded pid if
    /// it is alive. For `KILL`: [`Daemon::kill_cmd`] with 10 s. Succeeds
    /// when nothing runs.
    pub fn signal_cmd(&self, signal: &str) -> String {
        if signal == "KILL" {
            self.kill_cmd(10)
        } else {
            format!(
                "if {alive}; then kill -{signal} $p; fi",
                alive = self.alive_test()
            )
        }
    }

    /// SIGKILL of the recorded pid if it is alive, waiting up to `limit_s`
    /// seconds until it is gone (or a zombie), then removing the pid file.
    /// Exit status 1, with the process's state on stderr, when it outlives
    /// the limit.
    pub fn kill_cmd(&self, limit_s: u64) -> String {
        format!(
            "if {alive}; then kill -KILL $p; {wait} || exit 1; fi; rm -f {pid}",
            alive = self.alive_test(),
            wait = nemesis::process::wait_gone_sh("$p", limit_s),
            pid = shell_quote(&self.pid_file),
        )
    }

    /// Exit status 0 when the daemon runs.
    pub fn running_cmd(&self) -> String {
        self.alive_test()
    }
}

/// Joins `hosts` with `:port`, comma separated.
pub fn host_ports<'a>(hosts: impl IntoIterator<Item = &'a str>, port: u16) -> String {
    hosts
        .into_iter()
        .map(|h| format!("{h}:{port}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Everything a tarball cluster's lifecycle needs, computed by the
/// database's pure plan builders.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// Database name (`cockroach`, `tidb`, `yugabyte`).
    pub name: &'static str,
    /// Install, start and initialise, in order.
    pub setup: Plan,
    /// Steps that succeed once the cluster serves (each with retries).
    pub ready: Plan,
    /// Every supervised daemon with its node, in start order.
    pub daemons: Vec<(String, Daemon)>,
    /// Data removed by teardown (after the daemons are killed), per node.
    pub wipe: Vec<(String, String)>,
    /// Log files per node.
    pub logs: Vec<(String, crate::db::LogFile)>,
    /// Nodes clients connect to.
    pub client_nodes: Vec<nemesis::Node>,
    /// Primaries (e.g. TiDB's PD nodes, YugabyteDB's masters).
    pub primaries: Vec<nemesis::Node>,
    /// `--no-setup`: the cluster runs already; setup only checks the nodes
    /// are reachable, teardown does nothing, and process faults are
    /// unavailable (harness has no pid files for daemons it did not start).
    pub no_setup: bool,
}

impl Spec {
    /// Kills every daemon (reverse start order) and removes the data.
    pub fn teardown_plan(&self) -> Plan {
        let mut p = Plan::default();
        for (node, d) in self.daemons.iter().rev() {
            p.push(
                Step::run(node, format!("kill {}", d.name), d.signal_cmd("KILL"))
                    .timeout(Duration::from_secs(30)),
            );
        }
        for (node, path) in &self.wipe {
            p.push(Step::run(
                node,
                "remove data",
                format!("rm -rf {}", shell_quote(path)),
            ));
        }
        p
    }

    /// The daemons of `node`, in start order.
    pub fn daemons_on(&self, node: &str) -> Vec<&Daemon> {
        self.daemons
            .iter()
            .filter(|(n, _)| n == node)
            .map(|(_, d)| d)
            .collect()
    }
}

/// A tarball cluster on nodes: implements [`crate::db::Db`] and
/// [`nemesis::process::Process`] by running the [`Spec`]'s plans.
#[derive(Clone)]
pub struct ClusterDb {
    spec: Arc<Spec>,
    remotes: Vec<Arc<dyn Remote>>,
}

impl ClusterDb {
    /// A cluster of `spec` on the nodes behind `remotes`.
    pub fn new(spec: Spec, remotes: Vec<Arc<dyn Remote>>) -> ClusterDb {
        ClusterDb {
            spec: Arc::new(spec),
            remotes,
        }
    }

    /// The spec (plans) this cluster runs.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    async fn setup_inner(&self) -> Result<(), DbError> {
        crate::db::connect_all(&self.remotes).await?;
        if self.spec.no_setup {
            return Ok(());
        }
        execute(&self.spec.teardown_plan(), &self.remotes).await?;
        execute(&self.spec.setup, &self.remotes).await?;
        execute(&self.spec.ready, &self.remotes).await
    }

    async fn on_node(
        &self,
        node: &nemesis::Node,
        action: &'static str,
    ) -> Result<(), nemesis::process::ProcessError> {
        let perr = |message: String| nemesis::process::ProcessError {
            node: node.name.clone(),
            action,
            message,
        };
        if self.spec.no_setup {
            return Err(perr(format!(
                "{} was not started by harness (--no-setup): no process control",
                self.spec.name
            )));
        }
        let mut daemons = self.spec.daemons_on(&node.name);
        if action == "kill" || action == "pause" {
            daemons.reverse();
        }
        let mut plan = Plan::default();
        for d in daemons {
            let cmd = match action {
                "kill" => d.signal_cmd("KILL"),
                "start" => d.start_cmd(),
                "pause" => d.signal_cmd("STOP"),
                _ => d.signal_cmd("CONT"),
            };
            plan.push(
                Step::run(&node.name, format!("{action} {}", d.name), cmd)
                    .timeout(Duration::from_secs(30)),
            );
        }
        execute(&plan, &self.remotes)
            .await
            .map_err(|e| perr(e.to_string()))
    }
}

impl nemesis::process::Process for ClusterDb {
    fn kill<'a>(
        &'a self,
        node: &'a nemesis::Node,
    ) -> nemesis::BoxFuture<'a, Result<(), nemesis::process::ProcessError>> {
        Box::pin(self.on_node(node, "kill"))
    }
    fn start<'a>(
        &'a self,
        node: &'a nemesis::Node,
    ) -> nemesis::BoxFuture<'a, Result<(), nemesis::process::ProcessError>> {
        Box::pin(self.on_node(node, "start"))
    }
    fn pause<'a>(
        &'a self,
        node: &'a nemesis::Node,
    ) -> nemesis::BoxFuture<'a, Result<(), nemesis::process::ProcessError>> {
        Box::pin(self.on_node(node, "pause"))
    }
    fn resume<'a>(
        &'a self,
        node: &'a nemesis::Node,
    ) -> nemesis::BoxFuture<'a, Result<(), nemesis::process::ProcessError>> {
        Box::pin(self.on_node(node, "resume"))
    }
}

impl crate::db::Db for ClusterDb {
    fn name(&self) -> &'static str {
        self.spec.name
    }

    fn nodes(&self) -> Vec<nemesis::Node> {
        self.remotes.iter().map(|r| r.node().clone()).collect()
    }

    fn remote(&self, node: &str) -> Option<Arc<dyn Remote>> {
        crate::db::remote_named(&self.remotes, node)
    }

    fn setup(&self) -> crate::client::BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.setup_inner())
    }

    fn teardown(&self) -> crate::client::BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            if self.spec.no_setup {
                return Ok(());
            }
            execute(&self.spec.teardown_plan(), &self.remotes).await
        })
    }

    fn log_files(&self, node: &nemesis::Node) -> Vec<crate::db::LogFile> {
        self.spec
            .logs
            .iter()
            .filter(|(n, _)| *n == node.name)
            .map(|(_, l)| l.clone())
            .collect()
    }

    fn primaries(&self) -> Vec<nemesis::Node> {
        self.spec.primaries.clone()
    }

    fn settings(&self) -> Vec<(String, String)> {
        // A tarball database is configured by its daemons' flags: each
        // command line as it is started (the first node's; the others
        // differ in names and addresses).
        let first = self.remotes.first().map(|r| r.node().name.clone());
        self.spec
            .daemons
            .iter()
            .filter(|(node, _)| Some(node) == first.as_ref())
            .map(|(_, d)| (d.name.clone(), format!("{} {}", d.bin, d.args.join(" "))))
            .collect()
    }

    fn client_nodes(&self) -> Vec<nemesis::Node> {
        self.spec.client_nodes.clone()
    }

    fn process(&self) -> Option<Arc<dyn nemesis::process::Process>> {
        if self.spec.no_setup {
            None
        } else {
            Some(Arc::new(self.clone()))
        }
    }

    fn membership(&self) -> Option<Arc<dyn nemesis::membership::Membership>> {
        // Not yet: their command plans have no member add/remove.
        None
    }

    fn await_ready(&self, limit: Duration) -> crate::client::BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let start = std::time::Instant::now();
            match tokio::time::timeout(limit, execute(&self.spec.ready, &self.remotes)).await {
                Ok(r) => r,
                Err(_) => Err(DbError::NotReady {
                    node: self
                        .remotes
                        .first()
                        .map(|r| r.node().name.clone())
                        .unwrap_or_default(),
                    db: self.spec.name.to_string(),
                    waited_ms: start.elapsed().as_millis(),
                    detail: "readiness checks did not pass".to_string(),
                }),
            }
        })
    }
}

/// The entries of `logs` on `node` (database directory `dir`, running the
/// daemons `runs` says), as a [`Spec`]'s log list holds them.
pub fn node_logs(
    node: &str,
    logs: &[crate::db::NodeLog],
    dir: &str,
    runs: impl Fn(&str) -> bool,
) -> Vec<(String, crate::db::LogFile)> {
    crate::db::node_logs(logs, dir, runs)
        .into_iter()
        .map(|l| (node.to_string(), l))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tarball_parse_distinguishes_urls_and_rejects_missing_files() {
        assert_eq!(
            Tarball::parse("https://x/y.tgz"),
            Ok(Tarball::Url("https://x/y.tgz".into()))
        );
        let e = Tarball::parse("/nonexistent/crdb.tgz").unwrap_err();
        assert!(
            e.contains("/nonexistent/crdb.tgz") && e.contains("no such file"),
            "{e}"
        );
    }

    #[test]
    fn install_steps_unpack_once_and_name_the_binary() {
        let l = Layout {
            base: "/var/lib/harness/x/".into(),
        };
        let p = install_steps(
            &l,
            "n1",
            &Tarball::Url("https://h/r.tgz".into()),
            "CockroachDB",
            &["cockroach"],
        );
        let cmds = p.commands_on("n1");
        assert_eq!(cmds[0], "mkdir -p /var/lib/harness/x/n1");
        assert!(
            cmds[1]
                .starts_with("test -f /var/lib/harness/x/n1/dist/.harness-unpacked || curl -fsSL")
        );
        assert!(cmds[2].contains("tar -xzvf /var/lib/harness/x/n1/release.tar.gz -C /var/lib/harness/x/n1/dist --strip-components=1 >/var/lib/harness/x/n1/unpack.log"), "{}", cmds[2]);
        assert!(cmds[3].contains("test -x /var/lib/harness/x/n1/dist/cockroach"));
        assert!(cmds[3].contains("binary `cockroach` not found"));
    }

    #[test]
    fn daemon_commands_use_the_pid_file_and_quote_arguments() {
        let d = Daemon {
            name: "pd".into(),
            bin: "/b/bin/pd-server".into(),
            args: vec!["--name=pd-n1".into(), "a b".into()],
            cwd: "/b".into(),
            pid_file: "/b/pd.pid".into(),
            stdout: "/b/pd.stdout.log".into(),
        };
        assert_eq!(d.command_line(), "/b/bin/pd-server --name=pd-n1 'a b'");
        let s = d.start_cmd();
        assert!(s.contains("setsid /b/bin/pd-server --name=pd-n1 'a b' </dev/null >>/b/pd.stdout.log 2>&1 & echo $! > /b/pd.pid"), "{s}");
        assert!(d.signal_cmd("STOP").ends_with("then kill -STOP $p; fi"));
        assert!(d.signal_cmd("KILL").contains("rm -f /b/pd.pid"));
        assert_eq!(host_ports(["a", "b"], 7100), "a:7100,b:7100");
    }
}
