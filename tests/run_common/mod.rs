//! Helpers shared by the `harness run` integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod interrupt;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The harness binary.
pub fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

/// Runs `cmd` with `input` on its standard input; a writer thread, so a
/// large input cannot deadlock against the output.
pub fn with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    o
}

/// Runs `harness run` with `args` and `--store <store>`.
pub fn run(store: &Path, args: &[&str]) -> Output {
    let mut cmd = harness();
    cmd.arg("run").arg("--store").arg(store).args(args);
    let out = cmd.output().expect("spawn harness");
    show_run(store, args, &out);
    out
}

/// Prints what `harness run` with `args` said, and the node logs under
/// `store` when it did not end with a verdict (exit code above 2).
pub fn show_run(store: &Path, args: &[&str], out: &Output) {
    eprintln!(
        "harness run {args:?} → {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !matches!(out.status.code(), Some(0..=2)) {
        dump_node_logs(&store.join("runs"));
    }
}

/// [`run`] with the flags written as one line (split at white space).
pub fn run_line(store: &Path, flags: &str) -> Output {
    let args: Vec<&str> = flags.split_whitespace().collect();
    run(store, &args)
}

/// Prints the tail of every node log collected under `dir` (recursively):
/// what a failed CI run needs to tell a database fault from a harness bug.
pub fn dump_node_logs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            dump_node_logs(&p);
        } else if p.extension().is_some_and(|x| x == "log")
            && p.parent()
                .and_then(Path::parent)
                .is_some_and(|d| d.ends_with("nodes"))
        {
            // Bytes, not a string: a log with one stray non-UTF-8 byte
            // printed nothing at all in one CI run.
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
            let lines = collapse_repeats(&text);
            let from = lines.len().saturating_sub(120);
            let tail = &lines[from..];
            let starts = starts_above(&lines, from);
            if !starts.is_empty() {
                eprintln!(
                    "--- {} (server starts above the tail)\n{}",
                    p.display(),
                    starts.join("\n")
                );
            }
            eprintln!(
                "--- {} (last {} lines, repeats folded)\n{}",
                p.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

/// The last five server starts (MariaDB's "Starting MariaDB … as process
/// N", PostgreSQL's "starting PostgreSQL") among `lines` before `from`, each
/// with how far above it lies: a restart above the tail looked like no
/// restart at all in one CI dump (a Galera member the repair restarted).
fn starts_above(lines: &[String], from: usize) -> Vec<String> {
    const MARKERS: [&str; 2] = ["Starting MariaDB", "starting PostgreSQL"];
    let starts: Vec<String> = lines[..from.min(lines.len())]
        .iter()
        .enumerate()
        .filter(|(_, l)| MARKERS.iter().any(|m| l.contains(m)))
        .map(|(i, l)| format!("    ({} lines above the tail) {l}", from - i))
        .collect();
    starts[starts.len().saturating_sub(5)..].to_vec()
}

#[test]
fn server_starts_above_the_tail_are_named() {
    let lines: Vec<String> = [
        "01:06:20 0 [Note] Starting MariaDB 10.11.19 as process 90",
        "01:06:21 0 [Note] InnoDB: ready",
        "01:07:40 0 [Note] Starting MariaDB 10.11.19 as process 850",
        "01:07:45 0 [Note] InnoDB: To recover: 5 pages",
        "01:07:45 0 [Note] Starting MariaDB 10.11.19 as process 900",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        starts_above(&lines, 3),
        [
            "    (3 lines above the tail) 01:06:20 0 [Note] Starting MariaDB 10.11.19 as process 90",
            "    (1 lines above the tail) 01:07:40 0 [Note] Starting MariaDB 10.11.19 as process 850",
        ]
    );
    assert!(starts_above(&lines, 0).is_empty());
}

/// The lines of `text`, a line whose body (the line without its leading
/// time stamp) repeats one of the last few kept lines folded into a count:
/// members retrying once a second for minutes otherwise fill the whole
/// tail and hide what came before.
fn collapse_repeats(text: &str) -> Vec<String> {
    const WINDOW: usize = 4;
    let body = |l: &str| {
        l.trim_start_matches(|c: char| c.is_ascii_digit() || " :.-T".contains(c))
            .to_string()
    };
    let mut out: Vec<String> = Vec::new();
    let mut recent: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut folded = 0usize;
    let note = |n: usize| format!("    ({n} more lines repeating the ones above)");
    for line in text.lines() {
        let b = body(line);
        if recent.contains(&b) {
            folded += 1;
            continue;
        }
        if folded > 0 {
            out.push(note(folded));
            folded = 0;
        }
        out.push(line.to_string());
        recent.push_back(b);
        if recent.len() > WINDOW {
            recent.pop_front();
        }
    }
    if folded > 0 {
        out.push(note(folded));
    }
    out
}

#[test]
fn repeated_log_lines_fold_into_one_with_a_count() {
    let log = "2026-12-06 22:14:26 0 [Note] start\n\
               2026-12-06 22:14:27 0 [Note] Member 0.0 (n1) requested\n\
               2026-12-06 22:14:27 0 [Note] Member 2.0 (n3) requested\n\
               2026-12-06 22:14:28 0 [Note] Member 0.0 (n1) requested\n\
               2026-12-06 22:14:28 0 [Note] Member 2.0 (n3) requested\n\
               2026-12-06 22:14:29 0 [Note] Member 0.0 (n1) requested\n\
               2026-12-06 22:14:30 0 [Note] done\n";
    assert_eq!(
        collapse_repeats(log),
        vec![
            "2026-12-06 22:14:26 0 [Note] start",
            "2026-12-06 22:14:27 0 [Note] Member 0.0 (n1) requested",
            "2026-12-06 22:14:27 0 [Note] Member 2.0 (n3) requested",
            "    (3 more lines repeating the ones above)",
            "2026-12-06 22:14:30 0 [Note] done",
        ]
    );
}

/// The single run directory of test `name` under `store`.
pub fn run_dir(store: &Path, name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("runs").join(name))
        .unwrap_or_else(|e| panic!("{}/{name}: {e}", store.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 1, "exactly one run of {name}: {dirs:?}");
    dirs.remove(0)
}

/// `results.json` of a run.
pub fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("results.json parses")
}

/// The `anomaly-types` of a result.
pub fn anomaly_types(results: &serde_json::Value) -> Vec<String> {
    results["anomaly-types"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The history of a run as text: `history.jsonl.gz` decompressed once
/// the run finished, `history.jsonl` while it runs (or with `--keep jsonl`).
pub fn history_text(dir: &Path) -> String {
    use std::io::Read;
    let run = store::RunDir::open(dir).unwrap();
    let mut text = String::new();
    store::format::Input::open(&run.history_path())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Asserts the files every finished run has: the history compressed, the
/// plain log gone.
pub fn assert_complete(dir: &Path) {
    for f in [
        "test.json",
        "history.jsonl.gz",
        "results.json",
        "harness.log",
    ] {
        assert!(dir.join(f).is_file(), "{} missing in {}", f, dir.display());
    }
    assert!(
        !dir.join("history.jsonl").exists(),
        "history.jsonl left beside history.jsonl.gz"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["schema_version"], 2,
        "test.json is written from store::run::RunMeta"
    );
    assert!(meta["seed"].is_u64());
    assert!(meta["end_time"].is_string(), "end time recorded");
    assert!(meta["config"]["concurrency"].is_u64());
    assert!(meta["harness"]["commit"].is_string());
}

/// Client op counts in a history file: (invoke, ok, fail, info).
pub fn counts(dir: &Path) -> (usize, usize, usize, usize) {
    let text = history_text(dir);
    let mut c = (0, 0, 0, 0);
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v["type"].as_str() {
            Some("invoke") => c.0 += 1,
            Some("ok") => c.1 += 1,
            Some("fail") => c.2 += 1,
            Some("info") => c.3 += 1,
            _ => {}
        }
    }
    c
}

/// Keeps a failed test's temporary store instead of deleting it: moved to
/// `kept/<what>-<pid>-<secs>` under Cargo's temporary directory for
/// integration tests (`target/tmp`), or left where it is when it cannot
/// move there. Returns the kept directory, for the failure message: a
/// run that missed can be checked again afterwards (once, a scenario that
/// did not reproduce in CI took its history with it).
pub fn keep_store(store: tempfile::TempDir, what: &str) -> PathBuf {
    let at = store.keep();
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("kept")
        .join(format!("{what}-{}-{secs}", std::process::id()));
    let moved = std::fs::create_dir_all(kept.parent().unwrap_or(Path::new(".")))
        .and_then(|()| std::fs::rename(&at, &kept));
    match moved {
        Ok(()) => kept,
        Err(_) => at,
    }
}

/// The run directories under a store (`runs/<name>/<time>`), sorted.
pub fn stored_runs(store: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for name in std::fs::read_dir(store.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for run in std::fs::read_dir(name.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if run.path().is_dir() {
                dirs.push(run.path());
            }
        }
    }
    dirs.sort();
    dirs
}

/// Sends `sig` (e.g. `INT`, `KILL`) to `pid`.
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Waits up to `secs` for `f` to hold.
pub fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// Brings the testbed down when dropped (also when a test panics).
pub struct Down;

impl Drop for Down {
    fn drop(&mut self) {
        let _ = harness().args(["testbed", "down"]).output();
    }
}

/// `harness testbed up --nodes 3`, asserting it worked.
pub fn testbed_up() {
    let out = harness()
        .args(["testbed", "up", "--nodes", "3"])
        .output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
}

/// The lossy filesystem's mounts whose mount point is under `base` (a
/// run's nodes: `/var/lib/harness/`), as `/proc/mounts` lines. Only those:
/// the tests running beside (`.ci/run`'s other stream) mount their own
/// lossyfs under temporary directories for seconds at a time, which a
/// whole-machine check could meet.
pub fn lossyfs_mounts_under(base: &str) -> Vec<String> {
    lossyfs_mounts_in(
        &std::fs::read_to_string("/proc/mounts").unwrap_or_default(),
        base,
    )
}

fn lossyfs_mounts_in(mounts: &str, base: &str) -> Vec<String> {
    mounts
        .lines()
        .filter(|l| {
            let mut f = l.split(' ');
            f.next() == Some("lossyfs") && f.next().is_some_and(|m| m.starts_with(base))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_runs_lossy_mounts_are_told_from_the_neighbours() {
    let mounts = "lossyfs /tmp/.tmpUYy6cK/mnt fuse rw,nosuid 0 0\n\
                  lossyfs /var/lib/harness/mariadb/n1/data fuse rw,nosuid 0 0\n\
                  /dev/vda /var/lib/harness ext4 rw 0 0\n";
    let left = lossyfs_mounts_in(mounts, "/var/lib/harness/");
    assert_eq!(left.len(), 1);
    assert!(left[0].contains("mariadb/n1/data"), "{left:?}");
    assert!(lossyfs_mounts_in("lossyfs /tmp/x/mnt fuse rw 0 0\n", "/var/lib/harness/").is_empty());
}

/// The client ops of a run's history, in invocation order: each op's
/// invocation and completion records (an op still open at the end is left
/// out). One pass, pairing by process.
pub fn client_ops(dir: &Path) -> Vec<(serde_json::Value, serde_json::Value)> {
    let mut ops: Vec<(serde_json::Value, Option<serde_json::Value>)> = Vec::new();
    let mut open = std::collections::HashMap::new();
    for l in history_text(dir).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        let Some(p) = v["process"].as_i64() else {
            continue;
        };
        if v["type"] == "invoke" {
            open.insert(p, ops.len());
            ops.push((v, None));
        } else if let Some(i) = open.remove(&p) {
            ops[i].1 = Some(v);
        }
    }
    ops.into_iter()
        .filter_map(|(inv, done)| Some((inv, done?)))
        .collect()
}

/// What a failing test prints so that a run which went with its machine
/// can still be read: `harness analyze`'s explanation of each anomaly (up
/// to `max` bytes), then the invocation and completion records of every
/// client op it names (`:index N`) and of every one that ended `info`
/// (with times and errors; at most 200).
pub fn evidence(dir: &Path, max: usize) -> String {
    let out = harness().arg("analyze").arg(dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut s: String = text.chars().take(max).collect();
    if s.len() < text.len() {
        s.push_str("\n… (explanation cut)\n");
    }
    let named: std::collections::BTreeSet<u64> = s
        .split(":index ")
        .skip(1)
        .filter_map(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect();
    s.push_str("\nhistory records (invocation → completion):\n");
    let shown = client_ops(dir).into_iter().filter(|(_, done)| {
        done["type"] == "info" || done["index"].as_u64().is_some_and(|x| named.contains(&x))
    });
    for (inv, done) in shown.take(200) {
        s.push_str(&format!("  {inv}\n  → {done}\n"));
    }
    s
}

/// Client ops slower than `secs`: (start second since the first
/// invocation, count), by start second.
pub fn slow_ops(dir: &Path, secs: f64) -> std::collections::BTreeMap<i64, usize> {
    let ops = client_ops(dir);
    let time = |v: &serde_json::Value| v["time"].as_i64().unwrap_or(0);
    let t0 = ops.first().map_or(0, |(inv, _)| time(inv));
    let mut out = std::collections::BTreeMap::new();
    for (inv, done) in &ops {
        let (start, end) = (time(inv), time(done));
        if (end - start) as f64 / 1e9 > secs {
            *out.entry((start - t0) / 1_000_000_000).or_default() += 1;
        }
    }
    out
}

/// What PostgreSQL's SERIALIZABLE guarantees every time here: it is not
/// always serializable — now and then it lets a G2-item cycle through
/// (findings/postgres-serializable-g2-item: 3 of 50 runs of 20k
/// transactions on 15.18 with no fault, the shape Jepsen reported for
/// 18.4) — but it is snapshot isolation. So a run of it exits 0 with
/// nothing found, or exits 1 with only G2-item and a history valid as
/// snapshot isolation. `Err` says what else it did.
pub fn postgres_serializable_outcome(dir: &Path, code: Option<i32>) -> Result<(), String> {
    let types = anomaly_types(&results(dir));
    match code {
        Some(0) if types.is_empty() => Ok(()),
        Some(1)
            if !types.is_empty()
                && types
                    .iter()
                    .all(|t| t == "G2-item" || t == "G2-item-realtime") =>
        {
            let si = harness()
                .args(["check", "-c", "snapshot-isolation"])
                .arg(dir.join("history.jsonl.gz"))
                .output()
                .unwrap();
            match si.status.code() {
                Some(0) => Ok(()),
                c => Err(format!(
                    "{types:?}, and not snapshot isolation (exit {c:?}): {}",
                    String::from_utf8_lossy(&si.stdout)
                )),
            }
        }
        c => Err(format!("exit {c:?}: {types:?}")),
    }
}
