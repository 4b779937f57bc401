//! Shared by the report, serve and browser tests: fixture run directories
//! and a `harness serve` child process killed on drop.

#![allow(clippy::panic)]
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The explanation text the fixture's G1c anomaly carries.
pub const EXPLANATION: &str = "Let:\n  T1 = {:index 1, :type :ok, :value [[:append 1 1] [:r 2 [1]]]}\n  T2 = {:index 3, :type :ok, :value [[:append 2 1] [:r 1 [1]]]}\n\nThen:\n  - T1 < T2, because T2 read key 1 after T1 appended 1 (wr).\n  - However, T2 < T1, because T1 read key 2 after T2 appended 1 (wr): a contradiction!";

/// A `harness serve` child; killed (by pid) when dropped.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    /// The server's process id (to read its /proc/PID/status).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `harness serve --port 0 --store <store>` and waits for its address.
pub fn serve(store: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["serve", "--port", "0", "--store"])
        .arg(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning harness serve: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut line = String::new();
    let _ = BufReader::new(stdout).read_line(&mut line);
    let mut server = Server {
        child,
        addr: String::new(),
    };
    server.addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("serve printed no address: {line:?}"))
        .to_string();
    server
}

/// Sends a raw HTTP/1.1 request line for `target` (sent byte for byte, no
/// normalisation) and returns (status, body).
pub fn raw_get(addr: &str, method: &str, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .unwrap_or_else(|e| panic!("write: {e}"));
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map_or((text.as_str(), ""), |(h, b)| (h, b));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

/// The body of a `Transfer-Encoding: chunked` response (streamed ones).
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

fn write(path: &Path, contents: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A run with a G1c anomaly: test.json, results.json (Elle keys), the
/// explanation in elle/G1c.txt, a cycle SVG, a node log. Returns its directory.
pub fn invalid_run(store: &Path, test: &str, ts: &str) -> PathBuf {
    let dir = store.join(test).join(ts);
    write(
        &dir.join("test.json"),
        &format!(
            r#"{{"schema_version":1,"test_name":"{test}","start_time":"2026-11-22T04:00:00Z",
               "config":{{"db":"postgres","workload":"list-append","nemesis":["partition"],"isolation":"serializable"}},
               "seed":42,"nodes":["n1","n2","n3"]}}"#
        ),
    );
    let results = serde_json::json!({
        "valid?": false,
        "anomaly-types": ["G1c"],
        "anomalies": {"G1c": [{"type": "G1c", "cycle": [1, 3]}]},
        "not": ["read-committed"],
        "also-not": ["serializable", "snapshot-isolation"],
    });
    write(&dir.join("results.json"), &results.to_string());
    write(&dir.join("elle/G1c.txt"), EXPLANATION);
    write(
        &dir.join("elle/G1c/0.svg"),
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><circle cx="50" cy="50" r="20" fill="#ccf"/><text x="40" y="55">T1</text></svg>"##,
    );
    write(
        &dir.join("elle/G1c/0.dot"),
        "digraph { T1 -> T2 [label=\"wr\"]; T2 -> T1 [label=\"wr\"]; }",
    );
    write(
        &dir.join("nodes/n1/postgres.log"),
        "LOG:  database system is ready\n",
    );
    dir
}

/// A valid run.
pub fn valid_run(store: &Path, test: &str, ts: &str) -> PathBuf {
    let dir = store.join(test).join(ts);
    write(
        &dir.join("test.json"),
        &format!(
            r#"{{"name":"{test}","config":{{"db":"sqlite","workload":"rw-register","nemesis":[],"isolation":"serializable"}},"start_time":"2026-11-21T10:00:00Z"}}"#
        ),
    );
    write(
        &dir.join("results.json"),
        r#"{"valid?":true,"anomaly-types":[],"anomalies":{},"not":[],"also-not":[]}"#,
    );
    dir
}

/// A run whose test.json is not JSON.
pub fn malformed_run(store: &Path, test: &str, ts: &str) -> PathBuf {
    let dir = store.join(test).join(ts);
    write(&dir.join("test.json"), "{\"name\": \"broken\", oops");
    dir
}

/// A list-append run with a G1c cycle (T0 and T1 each read the other's
/// append) and a partition window, as `harness run` would leave it before
/// checking: test.json and history.jsonl only.
pub fn g1c_run(store: &Path, test: &str, ts: &str) -> PathBuf {
    let dir = store.join(test).join(ts);
    write(
        &dir.join("test.json"),
        &format!(
            r#"{{"schema_version":1,"name":"{test}","start_time":"2026-11-22T05:00:00.000Z",
               "config":{{"db":"sim","workload":"list-append","isolation":"read-committed","nemesis":"partition",
                          "expected_consistency_model":"serializable"}}}}"#
        ),
    );
    let lines = [
        r#"{"index":0,"time":0,"type":"invoke","process":"nemesis","f":"start-partition","value":{"n1":["n2","n3"]}}"#,
        r#"{"index":1,"time":500000,"type":"info","process":"nemesis","f":"start-partition","value":{"n1":["n2","n3"]}}"#,
        r#"{"index":2,"time":1000000,"type":"invoke","process":0,"f":"txn","value":[["append",1,1],["r",2,null]]}"#,
        r#"{"index":3,"time":2000000,"type":"invoke","process":1,"f":"txn","value":[["append",2,1],["r",1,null]]}"#,
        r#"{"index":4,"time":5000000,"type":"ok","process":0,"f":"txn","value":[["append",1,1],["r",2,[1]]]}"#,
        r#"{"index":5,"time":7000000,"type":"ok","process":1,"f":"txn","value":[["append",2,1],["r",1,[1]]]}"#,
        r#"{"index":6,"time":8000000,"type":"invoke","process":0,"f":"txn","value":[["r",1,null],["r",2,null]]}"#,
        r#"{"index":7,"time":9000000,"type":"invoke","process":"nemesis","f":"stop-partition","value":null}"#,
        r#"{"index":8,"time":9500000,"type":"info","process":"nemesis","f":"stop-partition","value":null}"#,
        r#"{"index":9,"time":12000000,"type":"ok","process":0,"f":"txn","value":[["r",1,[1]],["r",2,[1]]]}"#,
        r#"{"index":10,"time":13000000,"type":"invoke","process":1,"f":"txn","value":[["append",3,1]]}"#,
        r#"{"index":11,"time":14000000,"type":"fail","process":1,"f":"txn","value":[["append",3,1]]}"#,
    ];
    write(&dir.join("history.jsonl"), &(lines.join("\n") + "\n"));
    dir
}

/// A run of `txns` single-append transactions on 10 processes (2 ops each)
/// with periodic partitions, plus a hand-written valid results.json.
pub fn big_run(store: &Path, test: &str, ts: &str, txns: u64) -> PathBuf {
    let dir = store.join(test).join(ts);
    write(
        &dir.join("test.json"),
        &format!(
            r#"{{"name":"{test}","config":{{"db":"sim","workload":"list-append","nemesis":"partition","isolation":"serializable"}}}}"#
        ),
    );
    let mut out = String::with_capacity(txns as usize * 200);
    let mut index = 0u64;
    let mut t = 0u64;
    let line = |out: &mut String, s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    for n in 0..txns {
        let p = n % 10;
        if n % 10_000 == 2_000 || n % 10_000 == 6_000 {
            let f = if n % 10_000 == 2_000 {
                "start-partition"
            } else {
                "stop-partition"
            };
            for ty in ["invoke", "info"] {
                line(
                    &mut out,
                    format!(
                        r#"{{"index":{index},"time":{t},"type":"{ty}","process":"nemesis","f":"{f}","value":null}}"#
                    ),
                );
                index += 1;
                t += 1000;
            }
        }
        let k = n % 100;
        line(
            &mut out,
            format!(
                r#"{{"index":{index},"time":{t},"type":"invoke","process":{p},"f":"txn","value":[["append",{k},{n}]]}}"#
            ),
        );
        index += 1;
        let ty = if n % 50 == 49 { "fail" } else { "ok" };
        let lat = 300_000 + (n % 17) * 40_000;
        line(
            &mut out,
            format!(
                r#"{{"index":{index},"time":{},"type":"{ty}","process":{p},"f":"txn","value":[["append",{k},{n}]]}}"#,
                t + lat
            ),
        );
        index += 1;
        t += 100_000;
    }
    write(&dir.join("history.jsonl"), &out);
    write(
        &dir.join("results.json"),
        r#"{"valid?":true,"anomaly-types":[],"anomalies":{},"not":[],"also-not":[]}"#,
    );
    dir
}

/// Runs the harness binary with `args`; returns (exit code, stdout, stderr).
pub fn harness(args: &[&str]) -> (i32, String, String) {
    harness_env(args, &[])
}

/// [`harness`] with extra environment variables.
pub fn harness_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("running harness {args:?}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
