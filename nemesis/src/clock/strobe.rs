//! The strober: a loop on the node (`harness clock-strobe …`, run by the
//! nemesis through the node's [`crate::Remote`]) that rewrites the control
//! file every period — no command per tick over SSH.
//!
//! It writes `base + delta`, `base`, … for the duration and always ends at
//! `base`; ticks are scheduled from the loop's start (no drift), and a
//! tick that is late is written at once.

use super::spec::{ClockError, Spec, write_control_file};
use std::path::Path;
use std::time::{Duration, Instant};

/// What one strobe does.
#[derive(Clone, Debug, PartialEq)]
pub struct Strobe {
    /// The node's offset before and after, seconds.
    pub base_s: f64,
    /// The shift while strobed, seconds.
    pub delta_s: f64,
    /// Time between flips.
    pub period: Duration,
    /// How long it strobes.
    pub duration: Duration,
    /// The node's clock rate, kept in every spec written (`None`: 1).
    pub rate: Option<f64>,
}

impl Strobe {
    /// The command line that runs it on a node with the harness binary
    /// `exe`.
    pub fn command(&self, exe: &str, file: &str) -> String {
        let mut cmd = format!(
            "'{exe}' clock-strobe --file '{file}' --base {:.3} --delta {:.3} --period-ms {} --duration-ms {}",
            self.base_s,
            self.delta_s,
            self.period.as_millis(),
            self.duration.as_millis()
        );
        if let Some(r) = self.rate {
            cmd.push_str(&format!(" --rate {r:.3}"));
        }
        cmd
    }

    /// Runs the strobe against the control file `path` (blocking); returns
    /// how many specs were written.
    ///
    /// # Errors
    /// An offset out of range or a file that cannot be written (the file
    /// is then set back to `base` if possible).
    pub fn run(&self, path: &Path) -> Result<usize, ClockError> {
        let mut specs =
            super::spec::strobe_specs(self.base_s, self.delta_s, self.period, self.duration);
        for s in &mut specs {
            s.rate = self.rate;
        }
        let begin = Instant::now();
        let mut written = 0;
        for (i, spec) in specs.iter().enumerate() {
            let due = begin
                + self
                    .period
                    .saturating_mul(u32::try_from(i).unwrap_or(u32::MAX));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if let Err(e) = write_control_file(path, spec) {
                let _ = write_control_file(
                    path,
                    &Spec {
                        offset_s: self.base_s,
                        rate: self.rate,
                    },
                );
                return Err(e);
            }
            written += 1;
        }
        Ok(written)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_strobe_ends_at_its_base_and_takes_its_duration() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("faketime.rc");
        let s = Strobe {
            base_s: -2.0,
            delta_s: 0.5,
            period: Duration::from_millis(20),
            duration: Duration::from_millis(200),
            rate: None,
        };
        let t = Instant::now();
        assert_eq!(s.run(&p).unwrap(), 11);
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "-2.000\n");
        let bad = Strobe {
            delta_s: 1e9,
            ..s.clone()
        };
        assert!(bad.run(&p).is_err());
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "-2.000\n",
            "back at base"
        );
        let cmd = s.command("/usr/bin/harness", "/x/faketime.rc");
        assert!(
            cmd.contains("clock-strobe --file '/x/faketime.rc' --base -2.000 --delta 0.500 --period-ms 20 --duration-ms 200"),
            "{cmd}"
        );
        let skewed = Strobe {
            rate: Some(1.05),
            ..s.clone()
        };
        assert_eq!(skewed.run(&p).unwrap(), 11);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "-2.000 x1.050\n",
            "a strobe keeps the node's rate"
        );
        assert!(
            skewed
                .command("/h", "/f")
                .ends_with("--duration-ms 200 --rate 1.050")
        );
    }
}
