//! `harness lossyfs …` (hidden): the lossy filesystem's daemon and its
//! control client, run on each node by the nemesis (see `nemesis::lossyfs`).
//!
//! - `harness lossyfs mount BACKING MOUNTPOINT --socket PATH [--cache-mib N]
//!   [--strict]` mounts and serves in the foreground until unmounted
//!   (`--strict`: namespace operations are lossy too).
//! - `harness lossyfs ctl SOCKET lose|checkpoint|report|heal|fail …|corrupt …`
//!   sends one command, prints the reply and exits 0 when it succeeded.

use clap::{Parser, Subcommand};
use engine::exit;
use nemesis::lossyfs::{self, ctl};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "harness lossyfs")]
struct LossyCli {
    #[command(subcommand)]
    command: LossyCommand,
}

#[derive(Subcommand, Debug)]
enum LossyCommand {
    /// Mount BACKING's lossy view on MOUNTPOINT (foreground).
    Mount {
        /// The directory holding durable data.
        backing: PathBuf,
        /// Where to mount.
        mountpoint: PathBuf,
        /// The control socket to create.
        #[arg(long)]
        socket: PathBuf,
        /// Cache limit (un-synced data held at once), MiB.
        #[arg(long, default_value_t = 1024)]
        cache_mib: u64,
        /// FUSE worker threads.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Strict mode: create/rename/unlink/mkdir/rmdir are lost too
        /// unless a directory fsync (or, for a create, the file's fsync)
        /// made them durable.
        #[arg(long)]
        strict: bool,
    },
    /// Send one command to a mounted filesystem and print its reply.
    Ctl {
        /// The control socket.
        socket: PathBuf,
        /// The command words (`lose`, `fail eio-fsync base`, …).
        #[arg(required = true, num_args = 1..)]
        words: Vec<String>,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 60)]
        timeout_s: u64,
    },
}

/// Runs `harness lossyfs …` when that is the command line; `None` otherwise.
pub fn intercept() -> Option<u8> {
    if std::env::args_os().nth(1).as_deref() != Some(std::ffi::OsStr::new("lossyfs")) {
        return None;
    }
    let cli = match LossyCli::try_parse_from(std::env::args_os().skip(1)) {
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
    Some(match cli.command {
        LossyCommand::Mount {
            backing,
            mountpoint,
            socket,
            cache_mib,
            threads,
            strict,
        } => {
            let _ = tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .try_init();
            let opts = lossyfs::Options {
                backing,
                mountpoint,
                socket,
                cache_bytes: cache_mib.saturating_mul(1 << 20),
                threads,
                strict,
            };
            match lossyfs::run(&opts) {
                Ok(()) => exit::VALID,
                Err(e) => {
                    eprintln!("error: lossyfs mount: {e}");
                    exit::SETUP_FAILED
                }
            }
        }
        LossyCommand::Ctl {
            socket,
            words,
            timeout_s,
        } => {
            let cmd = match words.join(" ").parse::<ctl::Command>() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Some(exit::ERROR);
                }
            };
            match ctl::send(&socket, &cmd, Duration::from_secs(timeout_s)) {
                Ok(r) => {
                    print!("{}", r.render());
                    if r.ok { exit::VALID } else { exit::INVALID }
                }
                Err(e) => {
                    eprintln!("error: lossyfs ctl {}: {e}", socket.display());
                    exit::SETUP_FAILED
                }
            }
        }
    })
}
