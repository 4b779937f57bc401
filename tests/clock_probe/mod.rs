//! A probe of what a clock fault moves: a tiny C program (built here with
//! the system `cc`) that prints its `CLOCK_REALTIME` and `CLOCK_MONOTONIC`
//! every 10 ms, run under exactly the preload environment of a database
//! server while the test writes the server's control file.

#![allow(dead_code)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PROBE_C: &str = r#"
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 300;
    for (int i = 0; i < n; i++) {
        struct timespec r, m;
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &m);
        printf("%lld %lld\n", (long long)r.tv_sec * 1000000000LL + r.tv_nsec,
               (long long)m.tv_sec * 1000000000LL + m.tv_nsec);
        fflush(stdout);
        usleep(10000);
    }
    return 0;
}
"#;

/// Builds the probe into `dir`; returns its path.
pub fn build(dir: &Path) -> PathBuf {
    let src = dir.join("probe.c");
    std::fs::write(&src, format!("#include <stdlib.h>\n{PROBE_C}")).unwrap();
    let exe = dir.join("clock-probe");
    let out = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "cc: {out:?}");
    exe
}

/// One sample: (wall clock, monotonic clock), ns.
pub type Sample = (i64, i64);

/// Runs the probe under `env` for `samples` × 10 ms; `at` is called with
/// the seconds elapsed after each line read (the test moves the clock
/// from it). Returns every sample.
pub fn run(
    exe: &Path,
    env: &[(String, String)],
    samples: usize,
    mut at: impl FnMut(f64),
) -> Vec<Sample> {
    let mut child = Command::new(exe)
        .arg(samples.to_string())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let begin = Instant::now();
    let mut out = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let mut it = line.split(' ').map(|x| x.parse::<i64>().unwrap());
        out.push((it.next().unwrap(), it.next().unwrap()));
        at(begin.elapsed().as_secs_f64());
    }
    child.wait().unwrap();
    out
}

/// The environment of process `pid` that concerns the preload (as the
/// server has it).
pub fn preload_env_of(pid: u32) -> Vec<(String, String)> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    env.split(|b| *b == 0)
        .filter_map(|v| {
            let v = String::from_utf8_lossy(v);
            let (k, val) = v.split_once('=')?;
            (k == "LD_PRELOAD" || k.starts_with("FAKETIME") || k == "HARNESS_CLOCK_MODE")
                .then(|| (k.to_string(), val.to_string()))
        })
        .collect()
}

/// What the samples show: (the monotonic clock never went backwards,
/// the largest and smallest wall − monotonic, s, relative to the first
/// sample, and the last sample's).
pub fn summary(samples: &[Sample]) -> (bool, f64, f64, f64) {
    let monotonic = samples.windows(2).all(|w| w[1].1 >= w[0].1);
    let base = samples[0].0 - samples[0].1;
    let rel: Vec<f64> = samples
        .iter()
        .map(|(r, m)| (r - m - base) as f64 / 1e9)
        .collect();
    let max = rel.iter().copied().fold(f64::MIN, f64::max);
    let min = rel.iter().copied().fold(f64::MAX, f64::min);
    (monotonic, max, min, *rel.last().unwrap())
}

/// Sleeps a little (the clock is written between probe lines).
pub fn pause_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}
