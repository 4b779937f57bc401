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

/// A waiter: absolute `CLOCK_REALTIME` waits (clock_nanosleep
/// `TIMER_ABSTIME`, a condvar's timed wait in its caller's loop,
/// `sem_timedwait`), each printing `wait HOW STEP` when it starts (the test
/// then steps the clock by STEP s) and `done HOW STEP WALL DEADLINE
/// ELAPSED RC` when it ends (ns; ELAPSED by `CLOCK_MONOTONIC`); then a
/// timerfd armed `TFD_TIMER_ABSTIME` 1 s ahead of the faked wall clock.
const WAITER_C: &str = r#"
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
static int64_t now(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}
static struct timespec ts(int64_t ns) {
    struct timespec t = {ns / 1000000000LL, ns % 1000000000LL};
    return t;
}
/* Waits until wall time `deadline` with `how`; 0 when it ended by timing out. */
static int wait_until(const char *how, int64_t deadline) {
    struct timespec d = ts(deadline);
    if (!strcmp(how, "nanosleep")) {
        return clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &d, NULL);
    }
    if (!strcmp(how, "cond")) {
        static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
        int r = 0;
        pthread_mutex_lock(&m);
        /* The caller's loop: nobody signals; wait until the deadline. */
        while (r != ETIMEDOUT) r = pthread_cond_timedwait(&c, &m, &d);
        pthread_mutex_unlock(&m);
        return 0;
    }
    if (!strcmp(how, "sem")) {
        sem_t s;
        sem_init(&s, 0, 0);
        int r = sem_timedwait(&s, &d);
        return r == -1 && errno == ETIMEDOUT ? 0 : 1;
    }
    if (!strcmp(how, "timerfd")) {
        int fd = timerfd_create(CLOCK_REALTIME, 0);
        struct itimerspec v = {{0, 0}, d};
        timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL);
        uint64_t n;
        return read(fd, &n, sizeof n) == sizeof n ? 0 : 1;
    }
    return 2;
}
int main(void) {
    const char *hows[] = {"nanosleep", "cond", "sem"};
    for (int i = 0; i < 7; i++) {
        /* Forward: +60 s during a 60 s wait; backward: -1 s during a 1 s
         * wait; last, a timerfd armed under the offset reached, no step. */
        const char *how = i < 6 ? hows[i / 2] : "timerfd";
        int step = i == 6 ? 0 : (i % 2 == 0 ? 60 : -1);
        int64_t len = step > 0 ? 60 : 1;
        int64_t m0 = now(CLOCK_MONOTONIC);
        int64_t deadline = now(CLOCK_REALTIME) + len * 1000000000LL;
        printf("wait %s %d\n", how, step);
        fflush(stdout);
        int r = wait_until(how, deadline);
        printf("done %s %d %lld %lld %lld %d\n", how, step, (long long)now(CLOCK_REALTIME),
               (long long)deadline, (long long)(now(CLOCK_MONOTONIC) - m0), r);
        fflush(stdout);
    }
    return 0;
}
"#;

/// Builds the waiter into `dir`; returns its path.
pub fn build_waiter(dir: &Path) -> PathBuf {
    let src = dir.join("waiter.c");
    std::fs::write(&src, WAITER_C).unwrap();
    let exe = dir.join("clock-waiter");
    let out = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "cc: {out:?}");
    exe
}

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
