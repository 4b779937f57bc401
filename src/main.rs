//! `harness`: a Jepsen-style test harness in one native binary.
//!
//! This crate is the wiring: the CLI, the runner, reports. Everything that can
//! be a library lives in the member crates (see ARCHITECTURE.md).

/// mimalloc: loading and checking a big history allocates millions of small
/// vectors; on the 1M-event text file of BENCHMARKS.md (weak isolation vs
/// AWDIT) the best of three wall times fell 4 % (read committed), 13 %
/// (read atomic) and 9 % (causal) against the system allocator.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc v3 returns freed memory to the OS only after `purge_delay`
/// (default 1000 ms): memory a check frees (the parser's batches, an
/// analysis' scratch) stayed resident while the next phase allocated fresh
/// pages, so the 1M-transaction check peaked at 1.01 GB. 0 ms took that to
/// 0.88 GB but made small checks fault freed pages straight back in (27 % of
/// a 100k check in the kernel's `clear_page`); 10 ms (v2's default) keeps
/// both: 100k 0.20 → 0.17 s wall, 1M 0.87–0.94 GB (BENCHMARKS.md, issue
/// 15). A `MIMALLOC_PURGE_DELAY` the user sets wins.
#[allow(unsafe_code)]
fn purge_freed_memory_soon() {
    /// mimalloc's `mi_option_purge_delay` (`mimalloc.h`, v3: index 15).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a plain setter of mimalloc's (linked statically as the
        // global allocator above), callable at any time from any thread; the
        // index is that of the bundled v3 header.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
}

mod analyze_cmd;
mod check_cmd;
mod history_cmd;
mod history_input;
mod linear_cmd;
mod nemesis_cmd;
mod reproduce_cmd;
mod run_cmd;
mod serve;
mod soak_cmd;
mod testbed_cmd;

use clap::{Parser, Subcommand};
use engine::exit;
use std::process::ExitCode;

/// The version line: crate version and the git commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HARNESS_GIT_COMMIT"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version = VERSION,
    about = "Drive real databases, inject faults, record histories and prove isolation anomalies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process; boxing the large `run` arguments buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Check a history file for isolation anomalies (Elle-grade).
    Check(check_cmd::CheckArgs),
    /// Inspect and convert history files.
    #[command(subcommand)]
    History(history_cmd::HistoryCommand),
    /// Re-check a stored run and regenerate its results and reports.
    Analyze(analyze_cmd::AnalyzeArgs),
    /// Run a test: generate transactions, run them against a database,
    /// record and check the history, print the verdict.
    Run(run_cmd::RunArgs),
    /// Fault injection by hand (heal after a crashed run).
    #[command(subcommand)]
    Nemesis(nemesis_cmd::NemesisCommand),
    /// Browse stored runs in a web browser (read-only).
    Serve(serve::ServeArgs),
    /// The local testbed: N nodes as network namespaces with sshd.
    #[command(subcommand)]
    Testbed(testbed_cmd::TestbedCommand),
    /// Run a suite of tests unattended (nightly): an outcome per run,
    /// summary.json, JUnit XML and a table.
    Soak(soak_cmd::SoakArgs),
    /// Re-run a stored run with its exact flags and seed, or run a scenario
    /// of a reported anomaly; says whether it reproduced.
    Reproduce(reproduce_cmd::ReproduceArgs),
}

fn main() -> ExitCode {
    purge_freed_memory_soon();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with success; usage errors are exit 3.
            let code = if e.use_stderr() {
                exit::ERROR
            } else {
                exit::VALID
            };
            let _ = e.print();
            return exit::code(code);
        }
    };
    if matches!(cli.command, Command::Check(_) | Command::History(_)) {
        quiet_on_closed_stdout();
    }
    let result = match cli.command {
        Command::Check(args) => check_cmd::run(args),
        Command::History(cmd) => history_cmd::run(cmd),
        Command::Analyze(args) => analyze_cmd::run(args),
        Command::Run(args) => run_cmd::run(args, std::env::args().skip(2).collect()),
        Command::Nemesis(cmd) => nemesis_cmd::run(cmd),
        Command::Serve(args) => serve::run(args),
        Command::Testbed(cmd) => testbed_cmd::run(cmd),
        Command::Soak(args) => soak_cmd::run(args),
        Command::Reproduce(args) => reproduce_cmd::run(args),
    };
    match result {
        Ok(code) => exit::code(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::code(exit::ERROR)
        }
    }
}

/// `harness check … | head`: end quietly, as other Unix filters do, when the
/// reader of stdout goes away, instead of panicking in `println!` on EPIPE.
/// Only for the commands that just read files and print: the others keep
/// Rust's ignored SIGPIPE so a closed socket or pipe to a child is an error
/// they handle.
fn quiet_on_closed_stdout() {
    // SAFETY: restoring the default disposition of one signal, before any
    // thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
