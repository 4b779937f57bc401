//! Progress: op counters shared with the interpreter, shown as a bar when
//! stderr is a terminal and as periodic log lines otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counts of client ops by outcome.
#[derive(Debug, Default)]
pub struct Counters {
    /// Invocations sent.
    pub invoked: AtomicU64,
    /// `ok` completions.
    pub ok: AtomicU64,
    /// `fail` completions.
    pub fail: AtomicU64,
    /// `info` completions.
    pub info: AtomicU64,
}

/// A point-in-time copy of [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Snapshot {
    /// Invocations sent.
    pub invoked: u64,
    /// `ok` completions.
    pub ok: u64,
    /// `fail` completions.
    pub fail: u64,
    /// `info` completions.
    pub info: u64,
}

impl Counters {
    /// Reads all counters.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            invoked: self.invoked.load(Ordering::Relaxed),
            ok: self.ok.load(Ordering::Relaxed),
            fail: self.fail.load(Ordering::Relaxed),
            info: self.info.load(Ordering::Relaxed),
        }
    }
}

/// Interval between log lines when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Shows progress until the returned handle is stopped.
pub struct Progress {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Progress {
    /// Starts showing `counters`; `limit` is the time limit, for the bar.
    pub fn start(counters: Arc<Counters>, limit: Option<Duration>) -> Progress {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = ProgressBar::with_draw_target(
                    limit.map(|l| l.as_secs().max(1)),
                    ProgressDrawTarget::stderr_with_hz(4),
                );
                let style = ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len}s {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style);
                bar
            });
            let mut last_log = Instant::now();
            let mut logged = counters.snapshot();
            let mut last = counters.snapshot();
            let mut last_t = Instant::now();
            let mut rate = 0.0;
            let mut rate_measured = false;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                    _ = stopped.changed() => break,
                }
                let s = counters.snapshot();
                let dt = last_t.elapsed().as_secs_f64();
                let mut measured = rate_measured;
                if dt >= 1.0 {
                    let done = (s.ok + s.fail + s.info) - (last.ok + last.fail + last.info);
                    rate = done as f64 / dt;
                    last = s;
                    last_t = Instant::now();
                    measured = true;
                    rate_measured = true;
                }
                let msg = format!(
                    "{}  ok {}  fail {}  info {}",
                    rate_text(
                        measured.then_some(rate),
                        s.ok + s.fail + s.info,
                        started.elapsed().as_secs_f64()
                    ),
                    s.ok,
                    s.fail,
                    s.info
                );
                match &bar {
                    Some(bar) => {
                        bar.set_position(started.elapsed().as_secs());
                        bar.set_message(msg);
                    }
                    None if last_log.elapsed() >= LOG_EVERY => {
                        // A log line's rate covers the whole interval since
                        // the previous line, not its last second: a stall in
                        // that second must not read as "0 ops/s" all along.
                        let done =
                            (s.ok + s.fail + s.info) - (logged.ok + logged.fail + logged.info);
                        let rate = done as f64 / last_log.elapsed().as_secs_f64();
                        last_log = Instant::now();
                        logged = s;
                        let line = format!(
                            "progress: {:.0}s elapsed{}, {rate:.0} ops/s  ok {}  fail {}  info {}",
                            started.elapsed().as_secs_f64(),
                            limit
                                .map(|l| format!(" of {}s", l.as_secs()))
                                .unwrap_or_default(),
                            s.ok,
                            s.fail,
                            s.info
                        );
                        eprintln!("{line}");
                        tracing::info!("{line}");
                    }
                    None => {}
                }
            }
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        });
        Progress { stop, task }
    }

    /// Stops and clears the display.
    pub async fn finish(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The bar's rate: the last whole second's when one has passed, else the
/// average since the start (so the first second does not read `0 ops/s`),
/// and `… ops/s` before anything completed in the first quarter second.
fn rate_text(last_second: Option<f64>, done: u64, elapsed_s: f64) -> String {
    match last_second {
        Some(r) => format!("{r:.0} ops/s"),
        None if done > 0 && elapsed_s > 0.0 => format!("{:.0} ops/s", done as f64 / elapsed_s),
        None => "… ops/s".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::rate_text;

    #[test]
    fn the_first_second_shows_the_rate_so_far_not_zero() {
        assert_eq!(rate_text(None, 500, 0.5), "1000 ops/s");
        assert_eq!(rate_text(None, 0, 0.25), "… ops/s");
        assert_eq!(
            rate_text(Some(0.0), 500, 3.0),
            "0 ops/s",
            "a real stall shows"
        );
        assert_eq!(rate_text(Some(812.4), 5000, 3.0), "812 ops/s");
    }
}
