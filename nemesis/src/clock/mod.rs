//! Clock faults through libfaketime (Debian `libfaketime` 0.9.10) with a
//! per-node control file: the host clock is never touched (it is shared by
//! every namespace and every other user of the machine).
//!
//! - How a database takes part: its lifecycle starts it under
//!   [`preload_env`] (`LD_PRELOAD`, `FAKETIME_TIMESTAMP_FILE`,
//!   `FAKETIME_NO_CACHE=1`) only when a clock fault is asked for, with a
//!   control file of its own per node holding `+0.000`, and answers
//!   [`crate::process::Process::clock_file`] and
//!   [`crate::process::Process::db_clock`]. A restart after a kill keeps
//!   the preload.
//! - The `clock` package ([`fault`]): Jepsen's mix of `bump` (a per-node,
//!   cumulative offset, ±11 ms … 288 s log-uniform), `strobe` (alternate
//!   `base + delta` and `base` every period for a duration, run *on the
//!   node* by `harness clock-strobe`, [`strobe`]) and `reset` (`+0`), plus
//!   `skew` with `--clock-rate` (below). Bumps, strobes and skews are
//!   `start-clock` ops, resets `stop-clock` ops; the package's last op
//!   resets every node.
//! - Offsets: after every clock op the nemesis reads each node's database
//!   clock (PostgreSQL `clock_timestamp()`, MariaDB `NOW(6)`) bracketed by
//!   the harness clock ([`ClockReading`]); the `info` completion's value
//!   holds `clock-offsets`, `clock-offset-errors` (half the round trip)
//!   and `expected-offsets` per node — what the clock plot draws.
//! - Simulated nodes (`--db sim --sim-replicas N`, `clock/sim.rs`): the same ops
//!   set each node's offset in the simulator instead of a control file;
//!   no preload, no root.
//! - Heal ([`crate::fault::Nemesis::heal_all`], run at the end, on Ctrl-C,
//!   on error and at the start of a run): `+0` on every node's control
//!   file; a fresh start writes `+0` before the database starts.
//!
//! Modes ([`ClockMode`], `--clock-monotonic`): by default the preload is
//! harness's own [`walltime`] library, which moves only the wall clock
//! (`CLOCK_REALTIME`, `gettimeofday`, `time`), never `CLOCK_MONOTONIC` —
//! a fault a real machine can have. `--clock-monotonic fake` uses
//! libfaketime 0.9.10, which fakes `CLOCK_MONOTONIC` too, so a negative
//! bump or a reset after a positive one moves the database's monotonic
//! clock backwards — harsher than Jepsen's `settimeofday`, and labelled so
//! on the run (test.json `config.clock_mode`, the run header). Its
//! `FAKETIME_DONT_FAKE_MONOTONIC=1` is no way out: in 0.9.10 absolute
//! monotonic `clock_nanosleep` fails with `EINVAL` and monotonic condvar
//! waits return at once (measured again, 2026-12). Self-tests of the
//! fake mode: `tests/run_local_clock.rs` (PostgreSQL) and
//! `tests/mariadb_clock.rs` (MariaDB 10.11: ±1 h jumps, no crash,
//! `NOW(6)` within 16 ms of each jump).
//!
//! Late timers (measured on PostgreSQL 15, explained): under a positive
//! offset `d`, a timer that expires while the process waits inside an
//! intercepted call (0.9.10 wraps `epoll_wait`, `poll`, `select`,
//! `pthread_cond_timedwait`, …) takes effect `d` seconds late:
//! `statement_timeout = 1s` around `pg_sleep` fired after 6.0 s under
//! `+5` and 21.0 s under `+20`, while a busy query was cancelled at
//! 1.06 s; `FAKETIME_DONT_FAKE_MONOTONIC=1` and the cache settings make
//! no difference. PostgreSQL's `deadlock_timeout` is such a timer, so
//! after a forward bump a deadlock among waiting sessions is broken only
//! `d` seconds later: the sessions stall to the op timeout. An artifact of
//! the preload, not of a stepped clock: safety verdicts stand (a late
//! timeout allows no anomaly); latency and availability under clock
//! faults are not PostgreSQL's own.
//!
//! Shared memory: 0.9.10 creates `/dev/shm/faketime_{sem,shm}_<pid>` in
//! every process (no way to choose the name) and leaves them behind on
//! SIGKILL; a later process with the same pid then dies with
//! "shm_open failed". [`remove_stale_shm`] deletes those of dead pids
//! before every (re)start on this machine. There is no switch to turn the
//! shared memory off in 0.9.10: `FAKETIME_DISABLE_SHM=1` is not in the
//! library and a preloaded process still created both files (measured).
//!
//! Rate skew (`--clock-rate F`, `skew` ops): libfaketime applies a rate
//! from process start, so a skew writes `+<offset> x<rate>` and restarts
//! the database ([`crate::process::Process::shut_down`], then `start`);
//! later bumps and strobes keep the rate, and a reset writes
//! `+0.000 x1.000`, because 0.9.10 keeps the previous rate when a spec has
//! none (measured: after `+0` the clock kept drifting). The expected
//! offset recorded with each reading includes the drift since the
//! restart.

mod apply;
pub mod fault;
pub mod node;
mod sim;
pub mod spec;
pub mod strobe;
pub mod walltime;

pub use apply::IN_FORCE;
pub use walltime::{ClockMode, mode, set_mode};

pub use spec::{
    ClockError, LIBFAKETIME, MAX_OFFSET_S, Offsets, Spec, offset_from, preload_env, strobe_specs,
    write_command, write_control_file,
};

use std::path::Path;

/// One read of a database's clock, bracketed by the harness clock (all
/// seconds since the Unix epoch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    /// The harness clock just before the query was sent.
    pub sent_s: f64,
    /// The database's clock.
    pub db_s: f64,
    /// The harness clock just after the answer arrived.
    pub received_s: f64,
}

impl ClockReading {
    /// The offset `db − (sent + received)/2` and its error bound (half the
    /// round trip).
    pub fn offset(&self) -> (f64, f64) {
        offset_from(self.db_s, self.sent_s, self.received_s)
    }
}

/// The harness clock now, seconds since the Unix epoch.
pub fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Whether the preload of this process's [`mode`] is there: always for
/// the wall-clock library (embedded), else libfaketime where
/// [`LIBFAKETIME`] points.
pub fn libfaketime_installed() -> bool {
    mode() == ClockMode::Wall || Path::new(LIBFAKETIME).is_file()
}

/// Deletes libfaketime's `faketime_sem_<pid>` / `faketime_shm_<pid>`
/// entries in `shm_dir` whose pid is not alive on this machine (left by
/// SIGKILLed processes; a new process with that pid would exit). Returns
/// how many were removed. Best effort; only for processes in this pid
/// namespace.
pub fn remove_stale_shm(shm_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(shm_dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let rest = name
            .strip_prefix("sem.faketime_sem_")
            .or_else(|| name.strip_prefix("faketime_shm_"));
        let Some(pid) = rest.and_then(|r| r.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stale_shm_of_dead_pids_is_removed_and_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let live = std::process::id();
        let dead = 999_999_999u32;
        for n in [
            format!("sem.faketime_sem_{dead}"),
            format!("faketime_shm_{dead}"),
            format!("faketime_shm_{live}"),
            "PostgreSQL.123".to_string(),
        ] {
            std::fs::write(d.path().join(n), b"").unwrap();
        }
        assert_eq!(remove_stale_shm(d.path()), 2);
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec!["PostgreSQL.123".to_string(), format!("faketime_shm_{live}")]
        );
    }

    #[test]
    fn a_reading_is_centred_on_the_round_trip() {
        let r = ClockReading {
            sent_s: 10.0,
            db_s: 15.0,
            received_s: 10.5,
        };
        let (o, e) = r.offset();
        assert!((o - 4.75).abs() < 1e-9 && (e - 0.25).abs() < 1e-9);
    }
}
