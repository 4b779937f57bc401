//! What `soak` and `reproduce` share: `harness run` flags written as TOML
//! tables, child `harness run` processes with a watchdog, and reading a
//! finished run back. (Parsing those flags into a `RunSpec` is the CLI's:
//! `src/run_cmd.rs`.)
//!
//! Key decision: every run is a child process of the binary itself
//! (`own_binary() run …`, `nemesis::node_binary`). A crash, a panic, a leak or a hang of one run
//! then cannot take the suite with it, the parent's memory stays flat
//! however many runs a night holds, and the watchdog can stop a run (SIGINT
//! to its process group: the run heals its faults and checks what it has;
//! SIGKILL after a grace period, then `harness nemesis heal`).

use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a run ended, as a suite reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The history satisfies the expected model.
    Valid,
    /// An anomaly the expected model forbids.
    Invalid,
    /// The checker could not decide (or nothing committed).
    Unknown,
    /// Faults were asked for and none took effect (`engine::no_fault`):
    /// not a test of them, whatever the checker said short of `invalid`.
    NoFault,
    /// The harness itself failed: an error exit, a panic, a signal.
    Crashed,
    /// The watchdog stopped the run.
    TimedOut,
    /// Infrastructure: a node, SSH, a database that would not start.
    SetupFailed,
}

impl Outcome {
    /// All outcomes, in report order.
    pub const ALL: [Outcome; 7] = [
        Outcome::Valid,
        Outcome::Invalid,
        Outcome::Unknown,
        Outcome::NoFault,
        Outcome::Crashed,
        Outcome::TimedOut,
        Outcome::SetupFailed,
    ];

    /// The name in suites, summaries and JUnit.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Valid => "valid",
            Outcome::Invalid => "invalid",
            Outcome::Unknown => "unknown",
            Outcome::NoFault => "no-fault",
            Outcome::Crashed => "crashed",
            Outcome::TimedOut => "timed-out",
            Outcome::SetupFailed => "setup-failed",
        }
    }

    /// Parses a name; unknown names are an error listing the valid ones.
    pub fn parse(s: &str) -> Result<Outcome, String> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
                format!(
                    "unknown outcome {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }

    /// A checker verdict (as opposed to the run not getting that far).
    pub fn is_verdict(self) -> bool {
        matches!(
            self,
            Outcome::Valid | Outcome::Invalid | Outcome::Unknown | Outcome::NoFault
        )
    }

    /// The outcome of a `harness run` exit code (ARCHITECTURE.md exit codes).
    pub fn from_exit_code(code: i32) -> Outcome {
        match code {
            0 => Outcome::Valid,
            1 => Outcome::Invalid,
            2 => Outcome::Unknown,
            4 => Outcome::SetupFailed,
            _ => Outcome::Crashed,
        }
    }
}

/// Turns a TOML table of run settings into `harness run` flags: `key = "v"`
/// → `--key v`, numbers likewise, `key = true` → `--key`, `false` → nothing.
/// Underscores in keys become dashes. `what` names the table in errors;
/// keys in `chosen` (dashed flag names) are refused as set by `chooser`.
///
/// # Errors
/// A value that is not a string, number or boolean (lists belong in a
/// suite's `matrix`), or a key in `chosen`.
pub fn table_flags(
    table: &toml::Table,
    what: &str,
    chosen: &[&str],
    chooser: &str,
) -> anyhow::Result<Vec<String>> {
    let mut flags = Vec::new();
    for (k, v) in table {
        let name = k.replace('_', "-");
        if chosen.contains(&name.as_str()) {
            bail!("{what}: {k:?} is set by {chooser}");
        }
        let flag = format!("--{name}");
        match v {
            toml::Value::Boolean(true) => flags.push(flag),
            toml::Value::Boolean(false) => {}
            // A repeatable flag (`db-conf = ["a=1", "b=2"]`): once per item.
            toml::Value::Array(items) => {
                for item in items {
                    flags.push(flag.clone());
                    flags.push(scalar(item).with_context(|| format!("{what}: key {k:?}"))?);
                }
            }
            other => {
                flags.push(flag);
                flags.push(scalar(other).with_context(|| format!("{what}: key {k:?}"))?);
            }
        }
    }
    Ok(flags)
}

/// A TOML scalar as a flag value.
pub fn scalar(v: &toml::Value) -> anyhow::Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => bail!(
            "expected a string, number or boolean, got a {}",
            other.type_str()
        ),
    })
}

/// An integer setting from 1 to `max` (`default` when absent).
///
/// # Errors
/// Anything else, naming `what`.
pub fn count_setting(
    v: Option<&toml::Value>,
    what: &str,
    max: i64,
    default: i64,
) -> anyhow::Result<i64> {
    match v {
        None => Ok(default),
        Some(v) => v
            .as_integer()
            .filter(|c| (1..=max).contains(c))
            .with_context(|| format!("{what}: expected an integer from 1 to {max}")),
    }
}

/// Creates the store root if needed and returns it absolute (child runs
/// get it as `--store` whatever their working directory).
///
/// # Errors
/// It cannot be created or resolved.
pub fn prepare_store(store: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(store).with_context(|| format!("cannot create {}", store.display()))?;
    store
        .canonicalize()
        .with_context(|| format!("resolving {}", store.display()))
}

/// The value of `--name` in `flags` (`--name v` or `--name=v`).
pub fn flag_value<'a>(flags: &'a [String], name: &str) -> Option<&'a str> {
    let eq = format!("{name}=");
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == name {
            return it.next().map(String::as_str);
        }
        if let Some(v) = f.strip_prefix(&eq) {
            return Some(v);
        }
    }
    None
}

/// The flags that name nodes and SSH settings (for `harness nemesis heal`).
pub fn node_flags(flags: &[String]) -> Vec<String> {
    // With their Jepsen aliases (`--username`, `--ssh-private-key`).
    const NODE: [&str; 7] = [
        "--nodes",
        "--nodes-file",
        "--ssh-user",
        "--username",
        "--ssh-key",
        "--ssh-private-key",
        "--ssh-port",
    ];
    let mut out = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if NODE.contains(&f.as_str()) {
            out.push(f.clone());
            if let Some(v) = it.next() {
                out.push(v.clone());
            }
        } else if NODE.iter().any(|n| f.starts_with(&format!("{n}="))) {
            out.push(f.clone());
        }
    }
    out
}

/// Set by the SIGINT/SIGTERM handler of [`install_interrupt_flag`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of ending the process, so a
/// suite can stop its current run cleanly and still write its summary.
pub fn install_interrupt_flag() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
}

/// Whether SIGINT/SIGTERM arrived since [`install_interrupt_flag`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A finished child run.
#[derive(Debug)]
pub struct ChildEnd {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The watchdog stopped it.
    pub timed_out: bool,
    /// It was stopped because the suite was interrupted.
    pub interrupted: bool,
    /// Peak resident memory of the child, KiB.
    pub max_rss_kb: i64,
    /// Wall time.
    pub elapsed: Duration,
}

/// How to run one child.
pub struct ChildSpec<'a> {
    /// `harness run` flags (the store and seed included).
    pub flags: &'a [String],
    /// Working directory.
    pub cwd: Option<&'a Path>,
    /// Where stdout and stderr go (`None`: inherited).
    pub log: Option<&'a Path>,
    /// Wall-time limit (`None`: none).
    pub watchdog: Option<Duration>,
    /// Between SIGINT and SIGKILL.
    pub grace: Duration,
    /// Own process group (suites); else the terminal's Ctrl-C reaches it.
    pub own_group: bool,
}

/// Runs `harness run <flags>` as a child and waits for it, enforcing the
/// watchdog and forwarding an interrupt.
///
/// # Errors
/// The child could not be started.
pub fn run_child(spec: &ChildSpec<'_>) -> anyhow::Result<ChildEnd> {
    use std::os::unix::process::CommandExt as _;
    let exe = nemesis::node_binary::own_binary().context("locating the harness binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("run").args(spec.flags);
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }
    if let Some(log) = spec.log {
        let f = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let f2 = f.try_clone()?;
        cmd.stdout(f).stderr(f2);
    }
    if spec.own_group {
        cmd.process_group(0);
    }
    let started = Instant::now();
    let child = cmd.spawn().context("starting harness run")?;
    let pid = child.id() as libc::pid_t;
    // Reaped below with wait4 (for its rusage); `child` is never waited on.
    drop(child);
    let target = if spec.own_group { -pid } else { pid };
    let mut end = ChildEnd {
        code: None,
        signal: None,
        timed_out: false,
        interrupted: false,
        max_rss_kb: 0,
        elapsed: Duration::ZERO,
    };
    let mut sigint_at: Option<Instant> = None;
    let mut killed = false;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: plain syscall with valid pointers to locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            end.max_rss_kb = usage.ru_maxrss;
            if libc::WIFEXITED(status) {
                end.code = Some(libc::WEXITSTATUS(status));
            } else if libc::WIFSIGNALED(status) {
                end.signal = Some(libc::WTERMSIG(status));
            }
            break;
        }
        if r < 0 {
            bail!(
                "waiting for harness run (pid {pid}): {}",
                std::io::Error::last_os_error()
            );
        }
        let over = spec.watchdog.is_some_and(|w| started.elapsed() >= w);
        if sigint_at.is_none() && (over || (spec.own_group && interrupted())) {
            end.timed_out = over;
            end.interrupted = !over;
            // SAFETY: signalling our own child (group).
            unsafe { libc::kill(target, libc::SIGINT) };
            sigint_at = Some(Instant::now());
        }
        if !killed && sigint_at.is_some_and(|t| t.elapsed() >= spec.grace) {
            // SAFETY: as above.
            unsafe { libc::kill(target, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    end.elapsed = started.elapsed();
    Ok(end)
}

/// Heals partitions left on the nodes named in `flags`, when it names
/// any (after a run was killed before it could heal itself).
pub fn heal_nodes(flags: &[String]) {
    let nodes = node_flags(flags);
    if nodes.is_empty() {
        return;
    }
    let Ok(exe) = nemesis::node_binary::own_binary() else {
        return;
    };
    match Command::new(exe)
        .args(["nemesis", "heal"])
        .args(&nodes)
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => eprintln!(
            "warning: harness nemesis heal {}: {}",
            nodes.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => eprintln!("warning: harness nemesis heal: {e}"),
    }
}

/// The run directories under `<store>/runs/<name>/`.
pub fn run_dirs(store: &Path, name: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("runs").join(name))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir() && !p.is_symlink())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The run directory a child created: the one in `after` not in `before`.
pub fn new_run_dir(before: &[PathBuf], after: &[PathBuf]) -> Option<PathBuf> {
    after.iter().rev().find(|d| !before.contains(d)).cloned()
}

/// What a finished run directory says.
#[derive(Debug, Default)]
pub struct RunFacts {
    /// `results.json` `valid?`.
    pub valid: Option<String>,
    /// Anomaly types found.
    pub anomaly_types: Vec<String>,
    /// `test.json` `setup_error` or `error`.
    pub error: Option<String>,
    /// `results.json` `no-fault`: why no fault asked for took effect.
    pub no_fault: Option<String>,
}

impl RunFacts {
    /// The outcome of a run that exited with `code`: `no-fault` for an
    /// `unknown` whose results say no fault took effect.
    pub fn outcome(&self, code: i32) -> Outcome {
        match Outcome::from_exit_code(code) {
            Outcome::Unknown if self.no_fault.is_some() => Outcome::NoFault,
            o => o,
        }
    }
}

/// Reads `test.json` and `results.json` of `dir` (missing files give
/// empty facts: a crashed run may have neither).
pub fn run_facts(dir: &Path) -> RunFacts {
    let run = store::RunDir::open(dir).ok();
    let mut facts = RunFacts::default();
    let Some(run) = run else {
        return facts;
    };
    if let Ok(t) = store::run::RunMeta::load(&run.test_json_path()) {
        facts.error = t.setup_error.or(t.error);
    }
    if let Ok(r) = store::run::RunResults::load(&run.results_path()) {
        facts.valid = Some(r.valid.as_str().to_string());
        facts.anomaly_types = r.anomaly_types;
        facts.no_fault = r
            .extra
            .get(crate::no_fault::KEY)
            .and_then(|v| v.as_str())
            .map(str::to_string);
    }
    facts
}

/// The strings of a JSON array (empty for anything else).
pub fn json_strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The first explanation of anomaly type `ty` in a run's `elle/<ty>.txt`.
pub fn first_explanation(dir: &Path, ty: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("elle").join(format!("{ty}.txt"))).ok()?;
    // Explanations follow each other, each starting with a "Let:" line.
    let end = text
        .match_indices("\nLet:")
        .map(|(i, _)| i)
        .find(|&i| i > 0 && !text[..i].trim().is_empty())
        .unwrap_or(text.len());
    Some(text[..end].trim_end().to_string())
}

/// This process's resident memory, KiB (Linux `/proc/self/status`).
pub fn self_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A fresh seed: `base` mixed with `i` when a suite fixes its base seed,
/// else the clock mixed with `i`.
pub fn seed_for(base: Option<u64>, i: u64) -> u64 {
    workloads::rng::derive_seed(base.unwrap_or_else(crate::plan::clock_seed), i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_become_flags() {
        let t: toml::Table = toml::from_str(
            "db = \"sim\"\nlocal = true\nreplica_reads = false\nkey-count = 3\nread-ratio = 0.25",
        )
        .unwrap();
        let f = table_flags(&t, "test", &[], "").unwrap();
        assert_eq!(
            f,
            [
                "--db",
                "sim",
                "--key-count",
                "3",
                "--local",
                "--read-ratio",
                "0.25"
            ]
        );
        // A list repeats the flag (`--db-conf` is repeatable) …
        let list: toml::Table = toml::from_str("db-conf = [\"a=1\", \"b=2\"]").unwrap();
        assert_eq!(
            table_flags(&list, "test", &[], "").unwrap(),
            ["--db-conf", "a=1", "--db-conf", "b=2"]
        );
        // … of scalars only.
        let bad: toml::Table = toml::from_str("isolation = [[\"a\"]]").unwrap();
        let e = table_flags(&bad, "test 'x'", &[], "").unwrap_err();
        assert!(format!("{e:#}").contains("key \"isolation\""), "{e:#}");
        let seeded: toml::Table = toml::from_str("test_name = \"x\"").unwrap();
        let e = table_flags(&seeded, "t", &["test-name"], "soak").unwrap_err();
        assert!(
            format!("{e:#}").contains("\"test_name\" is set by soak"),
            "{e:#}"
        );
    }

    #[test]
    fn outcomes_round_trip_and_map_exit_codes() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::parse(o.name()), Ok(o));
        }
        assert!(Outcome::parse("passed").unwrap_err().contains("timed-out"));
        assert_eq!(Outcome::from_exit_code(0), Outcome::Valid);
        assert_eq!(Outcome::from_exit_code(4), Outcome::SetupFailed);
        assert_eq!(Outcome::from_exit_code(3), Outcome::Crashed);
        assert_eq!(Outcome::from_exit_code(101), Outcome::Crashed);
    }

    #[test]
    fn run_facts_name_a_no_fault_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = store::run::RunResults::default();
        let plain = run_facts(dir.path());
        assert_eq!(plain.outcome(2), Outcome::Unknown);
        crate::no_fault::settle(
            &mut r,
            checker::result::Valid::True,
            "no fault took effect: x",
        );
        r.save(&dir.path().join("results.json")).unwrap();
        let facts = run_facts(dir.path());
        assert_eq!(facts.no_fault.as_deref(), Some("no fault took effect: x"));
        assert_eq!(facts.outcome(2), Outcome::NoFault);
        // Anomalies found stay invalid; a crash stays a crash.
        assert_eq!(facts.outcome(1), Outcome::Invalid);
        assert_eq!(facts.outcome(3), Outcome::Crashed);
        assert_eq!(Outcome::parse("no-fault"), Ok(Outcome::NoFault));
    }

    #[test]
    fn flags_are_found_and_node_flags_kept() {
        let f: Vec<String> = [
            "--db",
            "galera",
            "--nodes=testbed",
            "--ssh-user",
            "root",
            "--seed",
            "1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(flag_value(&f, "--db"), Some("galera"));
        assert_eq!(flag_value(&f, "--nodes"), Some("testbed"));
        assert_eq!(node_flags(&f), ["--nodes=testbed", "--ssh-user", "root"]);
        let jepsen: Vec<String> = ["--username", "admin", "--db", "galera", "--nodes", "n1"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            node_flags(&jepsen),
            ["--username", "admin", "--nodes", "n1"]
        );
    }

    #[test]
    fn seeds_differ_per_run_and_repeat_with_a_base() {
        assert_ne!(seed_for(Some(1), 0), seed_for(Some(1), 1));
        assert_eq!(seed_for(Some(7), 3), seed_for(Some(7), 3));
    }
}
