//! libfaketime control-file specs: what a bump, a strobe, a rate skew and
//! a reset write ([`Spec::render`]), per-node cumulative offsets
//! ([`Offsets`]), the preload environment ([`preload_env`]) and atomic
//! writes of the control file ([`write_control_file`], [`write_command`]).
//!
//! A malformed spec makes libfaketime `exit(1)` inside the database, so
//! specs are only ever built by [`Spec::render`] (numbers with `.` and 3
//! decimals, a rate always after an offset) and written to a temp file
//! then renamed, never truncated in place (an empty read keeps the old
//! spec, a partial one could kill the process). `FAKETIME` itself is never
//! set (it would turn file reading off).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest absolute offset a bump may reach (Jepsen bumps up to
/// ±288 s; this leaves room for cumulative bumps of minutes).
pub const MAX_OFFSET_S: f64 = 3600.0;

/// Where Debian installs libfaketime.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A relative libfaketime spec: offset in seconds, optional rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    /// Seconds added to the real clock.
    pub offset_s: f64,
    /// Clock rate (`None`: 1).
    pub rate: Option<f64>,
}

/// A clock change that is out of range or not a number.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClockError {
    /// The offset would leave ±[`MAX_OFFSET_S`] (or is not finite).
    #[error("clock offset {0} s is out of range (at most ±{MAX_OFFSET_S} s)")]
    Offset(f64),
    /// A rate that is not a positive finite number.
    #[error("clock rate {0} must be a positive finite number")]
    Rate(f64),
    /// The control file could not be written.
    #[error("writing {path}: {detail}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        detail: String,
    },
}

impl Spec {
    /// No offset, no rate (the heal).
    pub const ZERO: Spec = Spec {
        offset_s: 0.0,
        rate: None,
    };

    /// The control file's line (`+1.500`, `-30.000`, `+0.000 x1.050`).
    ///
    /// # Errors
    /// An offset or rate that libfaketime would misread.
    pub fn render(&self) -> Result<String, ClockError> {
        if !self.offset_s.is_finite() || self.offset_s.abs() > MAX_OFFSET_S {
            return Err(ClockError::Offset(self.offset_s));
        }
        let sign = if self.offset_s < 0.0 { '-' } else { '+' };
        let mut s = format!("{sign}{:.3}", self.offset_s.abs());
        if let Some(r) = self.rate {
            if !r.is_finite() || r <= 0.0 {
                return Err(ClockError::Rate(r));
            }
            s.push_str(&format!(" x{r:.3}"));
        }
        Ok(s)
    }
}

/// Per-node cumulative clock state (what the control file says now): an
/// offset, and a rate with the time (harness clock, seconds since the
/// epoch) its process started under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offsets {
    nodes: std::collections::BTreeMap<String, f64>,
    rates: std::collections::BTreeMap<String, (f64, f64)>,
}

impl Offsets {
    /// The node's current offset (0 when never bumped).
    pub fn get(&self, node: &str) -> f64 {
        self.nodes.get(node).copied().unwrap_or(0.0)
    }

    /// Adds `delta_s` to the node's offset and returns the spec to write.
    ///
    /// # Errors
    /// [`ClockError::Offset`] when the sum leaves the range (the state is
    /// unchanged).
    pub fn bump(&mut self, node: &str, delta_s: f64) -> Result<Spec, ClockError> {
        let next = self.get(node) + delta_s;
        let spec = Spec {
            offset_s: next,
            rate: self.rate(node),
        };
        spec.render()?;
        self.nodes.insert(node.to_string(), next);
        Ok(spec)
    }

    /// The node's rate (`None`: 1, no skew).
    pub fn rate(&self, node: &str) -> Option<f64> {
        self.rates.get(node).map(|(r, _)| *r)
    }

    /// The spec that gives `node` clock rate `rate` (its offset kept); the
    /// state is unchanged until [`Offsets::set_rate`].
    ///
    /// # Errors
    /// [`ClockError::Rate`] for a rate that is not positive and finite.
    pub fn rate_spec(&self, node: &str, rate: f64) -> Result<Spec, ClockError> {
        let spec = Spec {
            offset_s: self.get(node),
            rate: Some(rate),
        };
        spec.render()?;
        Ok(spec)
    }

    /// Records that `node`'s process (re)started at `started_s` under
    /// `rate`: from then on its clock gains `(rate − 1)` s per second.
    pub fn set_rate(&mut self, node: &str, rate: f64, started_s: f64) {
        self.rates.insert(node.to_string(), (rate, started_s));
    }

    /// What the node's clock should read minus true time at `now_s`: its
    /// offset plus what its rate gained since its process started.
    pub fn expected(&self, node: &str, now_s: f64) -> f64 {
        let drift = self
            .rates
            .get(node)
            .map_or(0.0, |(r, since)| (r - 1.0) * (now_s - since).max(0.0));
        self.get(node) + drift
    }

    /// The reset of `node`: `+0.000`, or `+0.000 x1.000` when it runs at a
    /// rate — libfaketime 0.9.10 keeps the last rate when a spec has none
    /// (measured: after `+0` the clock kept drifting), and x1 put on a
    /// running process puts it back on true time.
    pub fn zero(&self, node: &str) -> Spec {
        Spec {
            offset_s: 0.0,
            rate: self.rate(node).map(|_| 1.0),
        }
    }

    /// Forgets every offset and rate (after a reset of every node).
    pub fn reset(&mut self) {
        self.nodes.clear();
        self.rates.clear();
    }

    /// Forgets `node`'s offset and rate (after its reset: `+0` puts a
    /// running process back on true time, rate included).
    pub fn reset_node(&mut self, node: &str) {
        self.nodes.remove(node);
        self.rates.remove(node);
    }

    /// Nodes with a non-zero offset or a rate.
    pub fn skewed(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, o)| **o != 0.0)
            .map(|(n, _)| n.clone())
            .chain(self.rates.keys().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The specs a strobe writes, one per `period` over `duration`: `base +
/// delta`, `base`, … and always `base` last.
pub fn strobe_specs(base_s: f64, delta_s: f64, period: Duration, duration: Duration) -> Vec<Spec> {
    let steps = if period.is_zero() {
        0
    } else {
        (duration.as_nanos() / period.as_nanos()).min(100_000)
    };
    let mut out: Vec<Spec> = (0..steps)
        .map(|i| Spec {
            offset_s: if i % 2 == 0 { base_s + delta_s } else { base_s },
            rate: None,
        })
        .collect();
    out.push(Spec {
        offset_s: base_s,
        rate: None,
    });
    out
}

/// The environment a database is started with for clock faults: the
/// preload of this process's [`super::mode`] (the wall-clock library is
/// installed beside `control`), the mode (`HARNESS_CLOCK_MODE`, so
/// `/proc/<pid>/environ` says it), the control file, the cache
/// (`no_cache` for strobes).
pub fn preload_env(control: &Path, no_cache: bool) -> Vec<(String, String)> {
    let mode = super::mode();
    let library = match mode {
        super::ClockMode::Wall => {
            let dir = control.parent().unwrap_or(Path::new("."));
            match super::walltime::install(dir) {
                Ok(p) => p.display().to_string(),
                Err(e) => {
                    tracing::warn!(
                        "installing the wall-clock preload in {}: {e}",
                        dir.display()
                    );
                    mode.library(&control.display().to_string())
                }
            }
        }
        super::ClockMode::FakeMonotonic => LIBFAKETIME.to_string(),
    };
    let mut env = vec![
        ("LD_PRELOAD".to_string(), library),
        ("HARNESS_CLOCK_MODE".to_string(), mode.flag().to_string()),
        (
            "FAKETIME_TIMESTAMP_FILE".to_string(),
            control.display().to_string(),
        ),
    ];
    if no_cache {
        env.push(("FAKETIME_NO_CACHE".to_string(), "1".to_string()));
    } else {
        env.push(("FAKETIME_CACHE_DURATION".to_string(), "1".to_string()));
    }
    env
}

/// Writes `spec` to `path` atomically (temp file in the same directory,
/// then rename), so libfaketime never reads a partial line.
///
/// # Errors
/// [`ClockError`] for a spec out of range or a file that cannot be written.
pub fn write_control_file(path: &Path, spec: &Spec) -> Result<(), ClockError> {
    let line = spec.render()?;
    let io = |e: std::io::Error| ClockError::Io {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(format!("{line}\n").as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)
}

/// The shell command that writes `spec` to `path` on a node atomically
/// (the spec is rendered here, so only a valid line is ever written).
///
/// # Errors
/// As [`Spec::render`].
pub fn write_command(path: &str, spec: &Spec) -> Result<String, ClockError> {
    let line = spec.render()?;
    Ok(format!(
        "printf '%s\\n' '{line}' > '{path}.tmp' && mv -f '{path}.tmp' '{path}'"
    ))
}

/// A database clock reading bracketed by the harness clock: the offset is
/// `db − (sent + received)/2`, its error at most half the round trip.
pub fn offset_from(db_s: f64, sent_s: f64, received_s: f64) -> (f64, f64) {
    let mid = (sent_s + received_s) / 2.0;
    (db_s - mid, (received_s - sent_s).abs() / 2.0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn specs_render_as_libfaketime_parses_them() {
        assert_eq!(Spec::ZERO.render().unwrap(), "+0.000");
        let s = Spec {
            offset_s: -30.25,
            rate: None,
        };
        assert_eq!(s.render().unwrap(), "-30.250");
        let r = Spec {
            offset_s: 0.0,
            rate: Some(1.05),
        };
        assert_eq!(r.render().unwrap(), "+0.000 x1.050");
        assert!(
            Spec {
                offset_s: f64::NAN,
                rate: None
            }
            .render()
            .is_err()
        );
        assert!(
            Spec {
                offset_s: 0.0,
                rate: Some(0.0)
            }
            .render()
            .is_err()
        );
        assert!(
            Spec {
                offset_s: 3601.0,
                rate: None
            }
            .render()
            .is_err()
        );
    }

    #[test]
    fn bumps_are_cumulative_per_node_and_bounded() {
        let mut o = Offsets::default();
        assert_eq!(o.bump("n1", 120.0).unwrap().offset_s, 120.0);
        assert_eq!(o.bump("n1", -30.5).unwrap().render().unwrap(), "+89.500");
        assert_eq!(o.bump("n2", -1.0).unwrap().render().unwrap(), "-1.000");
        assert_eq!(o.skewed(), vec!["n1", "n2"]);
        assert!(o.bump("n1", 3600.0).is_err());
        assert_eq!(o.get("n1"), 89.5, "a refused bump changes nothing");
        o.reset();
        assert!(o.skewed().is_empty());
    }

    #[test]
    fn a_rate_skew_writes_offset_then_rate_and_survives_bumps_until_a_reset() {
        let mut o = Offsets::default();
        o.bump("n1", 2.0).unwrap();
        let s = o.rate_spec("n1", 1.05).unwrap();
        assert_eq!(s.render().unwrap(), "+2.000 x1.050");
        assert!(o.rate_spec("n1", -1.0).is_err());
        assert!(o.rate_spec("n1", f64::INFINITY).is_err());
        assert_eq!(o.rate("n1"), None, "not recorded before the restart");
        o.set_rate("n1", 1.05, 100.0);
        assert_eq!(
            o.bump("n1", -0.5).unwrap().render().unwrap(),
            "+1.500 x1.050"
        );
        // 20 s after the restart at x1.05 the clock gained 1 s.
        assert!((o.expected("n1", 120.0) - 2.5).abs() < 1e-9);
        assert_eq!(o.expected("n2", 120.0), 0.0);
        assert_eq!(o.skewed(), vec!["n1"]);
        assert_eq!(o.zero("n1").render().unwrap(), "+0.000 x1.000");
        assert_eq!(o.zero("n2").render().unwrap(), "+0.000");
        o.reset_node("n1");
        assert_eq!(o.rate("n1"), None);
        assert_eq!(o.bump("n1", 1.0).unwrap().render().unwrap(), "+1.000");
        let mut p = Offsets::default();
        p.set_rate("n2", 0.9, 0.0);
        assert_eq!(p.skewed(), vec!["n2"], "a rate alone is a skew");
    }

    #[test]
    fn a_strobe_alternates_and_ends_at_its_base() {
        let s = strobe_specs(
            2.0,
            0.2,
            Duration::from_millis(10),
            Duration::from_millis(50),
        );
        let offs: Vec<f64> = s.iter().map(|x| x.offset_s).collect();
        assert_eq!(offs, vec![2.2, 2.0, 2.2, 2.0, 2.2, 2.0]);
        assert_eq!(
            strobe_specs(0.0, 1.0, Duration::ZERO, Duration::from_secs(1)).len(),
            1
        );
    }

    #[test]
    fn the_control_file_is_replaced_whole_and_the_env_never_sets_faketime() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("faketime.rc");
        write_control_file(
            &p,
            &Spec {
                offset_s: 5.0,
                rate: None,
            },
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "+5.000\n");
        assert!(
            write_control_file(
                &p,
                &Spec {
                    offset_s: 1e9,
                    rate: None
                }
            )
            .is_err()
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "+5.000\n", "kept");
        let env = preload_env(&p, true);
        assert!(env.iter().all(|(k, _)| k != "FAKETIME"));
        assert!(
            env.iter()
                .any(|(k, v)| k == "FAKETIME_NO_CACHE" && v == "1")
        );
        let cmd = write_command("/tmp/x.rc", &Spec::ZERO).unwrap();
        assert!(cmd.contains("'+0.000'") && cmd.contains("mv -f"), "{cmd}");
    }

    #[test]
    fn offsets_are_bracketed_by_the_harness_clock() {
        let (off, err) = offset_from(105.0, 100.0, 100.2);
        assert!((off - 4.9).abs() < 1e-9 && (err - 0.1).abs() < 1e-9);
    }
}
