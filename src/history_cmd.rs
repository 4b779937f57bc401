//! `harness history convert|stats`.

use clap::Subcommand;
use std::path::PathBuf;

/// `harness history …`
#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Convert a history between formats (by the output file's extension).
    Convert {
        /// Input history (JSON Lines, Elle JSON or Jepsen EDN).
        input: PathBuf,
        /// Output file: `.jsonl`, `.json` or `.edn`.
        output: PathBuf,
    },
    /// Summarize a history: ops by type and f, processes, keys, time span.
    Stats {
        /// The history file.
        file: PathBuf,
    },
}

/// Runs a history subcommand, returning the exit code.
pub fn run(cmd: HistoryCommand) -> anyhow::Result<u8> {
    anyhow::bail!("history {cmd:?}: the store formats are being built (issue 2)")
}
