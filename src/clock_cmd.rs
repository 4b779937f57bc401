//! `harness clock-strobe …` (hidden): the clock strober, run on a node by
//! the nemesis (see `nemesis::clock::strobe`). It rewrites the node's
//! libfaketime control file every period for the duration, ends at the
//! base offset, and exits 0 when every write succeeded.

use clap::Parser;
use engine::exit;
use nemesis::clock::strobe::Strobe;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "harness clock-strobe")]
struct StrobeCli {
    /// The control file.
    #[arg(long)]
    file: PathBuf,
    /// The node's offset before and after, seconds.
    #[arg(long, allow_negative_numbers = true)]
    base: f64,
    /// The shift while strobed, seconds.
    #[arg(long, allow_negative_numbers = true)]
    delta: f64,
    /// Time between flips, milliseconds.
    #[arg(long)]
    period_ms: u64,
    /// How long it strobes, milliseconds.
    #[arg(long)]
    duration_ms: u64,
    /// The node's clock rate, kept in every spec written.
    #[arg(long)]
    rate: Option<f64>,
}

/// Runs `harness clock-strobe …` when that is the command line; `None`
/// otherwise.
pub fn intercept() -> Option<u8> {
    if std::env::args_os().nth(1).as_deref() != Some(std::ffi::OsStr::new("clock-strobe")) {
        return None;
    }
    let cli = match StrobeCli::try_parse_from(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return Some(if e.use_stderr() {
                exit::ERROR
            } else {
                exit::VALID
            });
        }
    };
    let strobe = Strobe {
        base_s: cli.base,
        delta_s: cli.delta,
        period: Duration::from_millis(cli.period_ms),
        duration: Duration::from_millis(cli.duration_ms),
        rate: cli.rate,
    };
    Some(match strobe.run(&cli.file) {
        Ok(_) => exit::VALID,
        Err(e) => {
            eprintln!("error: clock-strobe: {e}");
            exit::SETUP_FAILED
        }
    })
}
