//! Clock faults a real machine can have: harness's own preload library
//! (`walltime.c`, built by `nemesis/build.rs` and embedded here) moves only
//! the wall clock — `CLOCK_REALTIME` (and `_COARSE`, `TAI`),
//! `gettimeofday`, `time`, `timespec_get` — by the control file's offset
//! (and rate), never `CLOCK_MONOTONIC`, as Jepsen's `settimeofday` does.
//! Waits until an absolute wall-clock deadline (realtime condvars,
//! `clock_nanosleep(TIMER_ABSTIME)`, `sem_timedwait`, timed locks) are
//! moved back by the offset, so they last as long as under a stepped
//! kernel clock.
//!
//! Why not libfaketime: Debian's 0.9.10 fakes `CLOCK_MONOTONIC` too (a
//! reset after a forward bump moves it backwards, which Linux never does),
//! and its `FAKETIME_DONT_FAKE_MONOTONIC=1` is broken (measured here:
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` fails with `EINVAL`,
//! a timed wait on a monotonic condvar returns at once). libfaketime stays
//! as the opt-in harsher mode, [`ClockMode::FakeMonotonic`]
//! (`--clock-monotonic fake`).
//!
//! The library is installed next to each node's control file (same
//! directory, readable by the server's user), so a restart finds it and
//! nodes need nothing installed: [`install`] here, [`install_sh`] on a
//! node. The control file keeps libfaketime's syntax and variable
//! (`FAKETIME_TIMESTAMP_FILE`), so the nemesis writes the same specs in
//! either mode.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

/// The library, as built for this machine.
pub const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libharness-walltime.so"));

/// Its file name beside a control file.
pub const FILE_NAME: &str = "libharness-walltime.so";

/// How a clock fault reaches a database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockMode {
    /// The wall clock only (harness's preload): faithful. The default.
    #[default]
    Wall,
    /// libfaketime 0.9.10: `CLOCK_MONOTONIC` moves with the wall clock,
    /// backwards after a reset — harsher than any real machine (opt-in).
    FakeMonotonic,
}

impl ClockMode {
    /// Every mode with its `--clock-monotonic` name.
    pub const ALL: [(ClockMode, &'static str); 2] = [
        (ClockMode::Wall, "real"),
        (ClockMode::FakeMonotonic, "fake"),
    ];

    /// Its `--clock-monotonic` name.
    pub fn flag(self) -> &'static str {
        match self {
            ClockMode::Wall => "real",
            ClockMode::FakeMonotonic => "fake",
        }
    }

    /// What the run record and the run header say.
    pub fn label(self) -> &'static str {
        match self {
            ClockMode::Wall => "wall clock only (CLOCK_MONOTONIC untouched; harness's preload)",
            ClockMode::FakeMonotonic => {
                "libfaketime, CLOCK_MONOTONIC faked too (harsher than a real machine: --clock-monotonic fake)"
            }
        }
    }

    /// The preload library of this mode beside `control` (a path on the
    /// node).
    pub fn library(self, control: &str) -> String {
        match self {
            ClockMode::Wall => format!("{}/{FILE_NAME}", dir_of(control)),
            ClockMode::FakeMonotonic => super::LIBFAKETIME.to_string(),
        }
    }
}

impl std::str::FromStr for ClockMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClockMode::ALL
            .iter()
            .find(|(_, n)| *n == s.trim())
            .map(|(m, _)| *m)
            .ok_or_else(|| {
                format!(
                    "--clock-monotonic {s:?}: expected real (the default: clock faults move the wall clock only) or fake (libfaketime: CLOCK_MONOTONIC moves too, harsher than a real machine)"
                )
            })
    }
}

static MODE: AtomicU8 = AtomicU8::new(0);

/// Sets the clock mode of this process's runs (one run per process: set
/// by the engine before any database starts).
pub fn set_mode(mode: ClockMode) {
    MODE.store(
        match mode {
            ClockMode::Wall => 0,
            ClockMode::FakeMonotonic => 1,
        },
        Ordering::SeqCst,
    );
}

/// The clock mode of this process ([`set_mode`]; [`ClockMode::Wall`]
/// unless set).
pub fn mode() -> ClockMode {
    match MODE.load(Ordering::SeqCst) {
        1 => ClockMode::FakeMonotonic,
        _ => ClockMode::Wall,
    }
}

fn dir_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

/// Writes the library into `dir` (atomically; kept when it is already
/// there, byte for byte) and returns its path. Mode 0755, so the server's
/// own user can map it.
///
/// # Errors
/// The write's.
pub fn install(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(FILE_NAME);
    if std::fs::read(&path).is_ok_and(|b| b == LIBRARY) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
    std::fs::write(&tmp, LIBRARY)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Shell that writes the library beside `control` on a node (base64 in
/// the command: nothing to copy or install beforehand). Ends with `&& `.
pub fn install_sh(control: &str) -> String {
    let dir = dir_of(control);
    let path = format!("{dir}/{FILE_NAME}");
    let tmp = format!("{path}.tmp");
    format!(
        "printf '%s' {} | base64 -d > {} && chmod 755 {} && mv -f {} {} && ",
        base64(LIBRARY),
        crate::remote::shell_quote(&tmp),
        crate::remote::shell_quote(&tmp),
        crate::remote::shell_quote(&tmp),
        crate::remote::shell_quote(&path),
    )
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_default_to_the_wall_clock() {
        assert_eq!(ClockMode::default(), ClockMode::Wall);
        assert_eq!("fake".parse::<ClockMode>(), Ok(ClockMode::FakeMonotonic));
        assert_eq!("real".parse::<ClockMode>(), Ok(ClockMode::Wall));
        assert!("x".parse::<ClockMode>().unwrap_err().contains("harsher"));
        assert_eq!(
            ClockMode::Wall.library("/a/b/faketime.rc"),
            "/a/b/libharness-walltime.so"
        );
    }

    #[test]
    fn the_library_is_embedded_and_the_shell_install_writes_it_byte_for_byte() {
        assert!(LIBRARY.starts_with(b"\x7fELF"), "an ELF shared object");
        let d = tempfile::tempdir().unwrap();
        let control = d.path().join("faketime.rc").display().to_string();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{}true", install_sh(&control)))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(std::fs::read(d.path().join(FILE_NAME)).unwrap(), LIBRARY);
        let e = tempfile::tempdir().unwrap();
        let p = install(e.path()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), LIBRARY);
        assert_eq!(install(e.path()).unwrap(), p, "kept when there");
    }

    /// `date` under the preload reads the control file's offset, forward
    /// and back, and true time after a reset (the monotonic clock of a
    /// preloaded process: `tests/clock_walltime.rs`).
    #[test]
    fn date_under_the_preload_reads_the_offset_and_true_time_after_a_reset() {
        let d = tempfile::tempdir().unwrap();
        let lib = install(d.path()).unwrap();
        let rc = d.path().join("faketime.rc");
        let date = |spec: &str| -> i64 {
            std::fs::write(&rc, spec).unwrap();
            let out = std::process::Command::new("date")
                .arg("+%s")
                .env("LD_PRELOAD", &lib)
                .env("FAKETIME_TIMESTAMP_FILE", &rc)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<i64>()
                .unwrap()
        };
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
        };
        let bumped = date("+7200.000") - now();
        assert!((7195..=7205).contains(&bumped), "{bumped}");
        let back = date("-300.000") - now();
        assert!((-305..=-295).contains(&back), "{back}");
        let reset = date("+0.000") - now();
        assert!(reset.abs() <= 2, "{reset}");
    }
}
