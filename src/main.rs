//! `harness`: a Jepsen-style test harness in one native binary.
//!
//! This crate is the wiring: the CLI, the runner, reports. Everything that can
//! be a library lives in the member crates (see ARCHITECTURE.md).
//!
//! The process starts in [`start`] (`#![no_main]`): Rust's runtime start
//! read `/proc/self/maps` before every command.
#![cfg_attr(not(test), no_main)]

/// mimalloc: loading and checking a big history allocates millions of small
/// vectors, which it serves faster than the system allocator (measured in
/// BENCHMARKS.md, weak isolation vs AWDIT); blocks over a MiB are the
/// kernel's mappings, grown by `mremap` ([`allocator`]).
#[global_allocator]
static ALLOC: allocator::Allocator = allocator::Allocator;

/// mimalloc v3 returns freed memory to the OS only after `purge_delay`
/// (default 1000 ms), so memory a check frees (the parser's batches, an
/// analysis' scratch) would stay resident while the next phase allocates
/// fresh pages; 0 ms would make small checks fault freed pages straight back
/// in. 10 ms (v2's default) keeps both the peak and small checks low
/// (BENCHMARKS.md, "mimalloc's 10 ms purge delay"). mimalloc is built to
/// read no environment (`MI_NO_GETENV`, .cargo/config.toml), so a
/// `MIMALLOC_PURGE_DELAY` (milliseconds) the user sets is applied here.
#[allow(unsafe_code)]
fn purge_freed_memory_soon() {
    /// mimalloc's `mi_option_purge_delay` (`mimalloc.h`, v3: index 15).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    let ms = purge_delay_ms(std::env::var("MIMALLOC_PURGE_DELAY").ok().as_deref());
    // SAFETY: a plain setter of mimalloc's (linked statically as the
    // global allocator above), callable at any time from any thread; the
    // index is that of the bundled v3 header.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
}

/// Transparent huge pages off for this process (`check`, `history`): with
/// them the kernel zeroes 2 MiB at the first touch of each — a quarter of a
/// 1M-transaction check's CPU time was `clear_page_erms`, and a small
/// check's RSS is a third higher (BENCHMARKS.md, "Allocator"). mimalloc is
/// built without its own requests for them (the `no_thp` feature: its
/// first region, mapped before `main`, took three huge pages, a third of a
/// 2-line check's CPU time); this prctl covers systems whose THP setting is
/// `always`, for every page fault after it. It is inherited by children, so
/// the commands that start databases (`run`, `soak`, …) leave it alone.
/// A `MIMALLOC_ALLOW_THP` the user sets decides instead, for every command,
/// as mimalloc read it before it was built to read no environment: off
/// (`0`, `false`, `no`, `off`) calls the prctl, anything else keeps huge
/// pages (mimalloc no longer asks for them; an `always` system gives them).
fn wants_transparent_huge_pages_off(file_command: bool) -> bool {
    thp_off(
        std::env::var_os("MIMALLOC_ALLOW_THP").as_deref(),
        file_command,
    )
}

/// [`wants_transparent_huge_pages_off`] given the variable's value.
fn thp_off(allow_thp: Option<&std::ffi::OsStr>, file_command: bool) -> bool {
    match allow_thp {
        None => file_command,
        Some(v) => {
            let v = v.to_string_lossy().trim().to_ascii_lowercase();
            matches!(v.as_str(), "0" | "false" | "no" | "off")
        }
    }
}

/// `MIMALLOC_PURGE_DELAY`'s milliseconds, else harness's 10 ms.
fn purge_delay_ms(var: Option<&str>) -> std::ffi::c_long {
    var.and_then(|v| v.trim().parse().ok()).unwrap_or(10)
}

/// See [`wants_transparent_huge_pages_off`].
#[allow(unsafe_code)]
fn no_transparent_huge_pages() {
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag of this process's
    // memory map; it reads no memory of ours. Failure (an old kernel) leaves
    // huge pages on, which is only slower.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

mod allocator;
mod analyze_cmd;
mod check_args_fast;
mod check_cmd;
mod clock_cmd;
mod history_cmd;
mod history_input;
mod lossyfs_cmd;
mod nemesis_cmd;
mod reproduce_cmd;
mod run_cmd;
mod serve;
mod soak_cmd;
mod start;
mod testbed_cmd;

use clap::{Parser, Subcommand};
use engine::exit;

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

/// The file commands alone (`check`, `history`): what `harness check` parses
/// its arguments with. clap builds the whole command tree before it parses
/// — every subcommand's arguments, `run`'s hundred included — which was the
/// largest part of a small check's fixed cost (BENCHMARKS.md, "Fixed cost
/// of one `harness check`"); this tree holds two. The variants and their
/// docs are [`Command`]'s, so help and errors read the same.
#[derive(Parser, Debug)]
#[command(name = "harness", version = VERSION)]
struct FileCli {
    #[command(subcommand)]
    command: FileCommand,
}

#[derive(Subcommand, Debug)]
enum FileCommand {
    /// Check a history file for isolation anomalies (Elle-grade).
    Check(check_cmd::CheckArgs),
    /// Inspect and convert history files.
    #[command(subcommand)]
    History(history_cmd::HistoryCommand),
}

impl From<FileCommand> for Command {
    fn from(c: FileCommand) -> Command {
        match c {
            FileCommand::Check(a) => Command::Check(a),
            FileCommand::History(h) => Command::History(h),
        }
    }
}

/// Parses the command line: a plain `harness check FILE [-c …]` without
/// clap ([`check_args_fast`]), else with [`FileCli`] when the first
/// argument names a file command, else with the whole [`Cli`].
fn parse() -> Result<Command, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(check) = check_args_fast::parse(&args) {
        return Ok(Command::Check(check));
    }
    match args.first().and_then(|a| a.to_str()) {
        Some("check" | "history") => FileCli::try_parse().map(|c| c.command.into()),
        _ => Cli::try_parse().map(|c| c.command),
    }
}

/// The C entry point (`#![no_main]`): [`start::init`], then [`run`].
#[cfg(not(test))]
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    start::init();
    start::run(run)
}

/// `main`'s body: the command's exit status.
#[cfg_attr(test, allow(dead_code))]
fn run() -> u8 {
    if let Some(code) = lossyfs_cmd::intercept() {
        return code;
    }
    if let Some(code) = clock_cmd::intercept() {
        return code;
    }
    purge_freed_memory_soon();
    let command = match parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with success; usage errors are exit 3.
            let code = if e.use_stderr() {
                exit::ERROR
            } else {
                exit::VALID
            };
            let _ = e.print();
            return code;
        }
    };
    let file_command = matches!(command, Command::Check(_) | Command::History(_));
    if file_command {
        quiet_on_closed_stdout();
    }
    if wants_transparent_huge_pages_off(file_command) {
        no_transparent_huge_pages();
    }
    let result = match command {
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
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::ERROR
        }
    };
    if file_command {
        end_now(code);
    }
    code
}

/// Ends a file command (`check`, `history`) once stdout is flushed, without
/// the C library's exit handlers: they only tear down what the process is
/// about to lose anyway — mimalloc's forced collection of every heap page
/// (and the `madvise` calls returning them) and the loader's finalisers.
/// Nothing these commands write is buffered elsewhere: files are written and
/// closed before they return, stderr is unbuffered.
#[allow(unsafe_code)]
fn end_now(code: u8) -> ! {
    use std::io::Write as _;
    // A stdout that cannot be flushed (its reader went away) changes
    // nothing: the verdict is the exit code.
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` ends the process; no Rust destructor is pending that
    // another thread could observe (these commands join their threads).
    unsafe { libc::_exit(i32::from(code)) }
}

/// `harness check … | head`: end quietly, as other Unix filters do, when the
/// reader of stdout goes away, instead of panicking in `println!` on EPIPE.
/// Only for the commands that just read files and print: the others keep
/// Rust's ignored SIGPIPE so a closed socket or pipe to a child is an error
/// they handle.
#[allow(unsafe_code)]
fn quiet_on_closed_stdout() {
    // SAFETY: restoring the default disposition of one signal, before any
    // thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `harness check|history …` parsed by the small tree reads exactly as
    /// by the whole one: the same help, subcommand by subcommand.
    #[test]
    fn the_file_commands_tree_matches_the_whole_one() {
        let mut whole = Cli::command();
        let mut small = FileCli::command();
        whole.build();
        small.build();
        let mut names = Vec::new();
        // clap's own `help` lists the tree's commands; `harness help` is
        // parsed by the whole tree.
        for sub in small.get_subcommands().filter(|s| s.get_name() != "help") {
            names.push(sub.get_name().to_string());
            let mut a = sub.clone();
            let mut b = whole
                .find_subcommand(sub.get_name())
                .cloned()
                .unwrap_or_else(|| panic!("{} is not a harness command", sub.get_name()));
            assert_eq!(
                a.render_long_help().to_string(),
                b.render_long_help().to_string(),
                "{}",
                sub.get_name()
            );
            for inner in sub.get_subcommands() {
                let mut x = inner.clone();
                let mut y = b
                    .find_subcommand(inner.get_name())
                    .cloned()
                    .unwrap_or_else(|| panic!("history {}", inner.get_name()));
                assert_eq!(
                    x.render_long_help().to_string(),
                    y.render_long_help().to_string()
                );
            }
        }
        assert_eq!(names, ["check", "history"]);
    }

    /// mimalloc reads no environment: the two variables harness honours
    /// itself read as mimalloc read them.
    #[test]
    fn mimalloc_variables_read_as_mimalloc_read_them() {
        use std::ffi::OsStr;
        assert!(thp_off(None, true));
        assert!(!thp_off(None, false));
        for off in ["0", "false", "NO", " off "] {
            assert!(thp_off(Some(OsStr::new(off)), false), "{off}");
            assert!(thp_off(Some(OsStr::new(off)), true), "{off}");
        }
        for on in ["1", "true", "yes", ""] {
            assert!(!thp_off(Some(OsStr::new(on)), true), "{on:?}");
        }
        assert_eq!(purge_delay_ms(None), 10);
        assert_eq!(purge_delay_ms(Some("250")), 250);
        assert_eq!(purge_delay_ms(Some(" 0 ")), 0);
        assert_eq!(purge_delay_ms(Some("soon")), 10);
    }

    #[test]
    fn file_commands_parse_into_the_same_command() {
        let args = ["harness", "check", "h.txt", "-c", "serializable"];
        let a: Command = FileCli::try_parse_from(args)
            .map(|c| c.command.into())
            .unwrap_or_else(|e| panic!("{e}"));
        let b = Cli::try_parse_from(args)
            .map(|c| c.command)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let bad = ["harness", "check", "h.txt", "--no-such-flag"];
        let e1 = FileCli::try_parse_from(bad)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        let e2 = Cli::try_parse_from(bad)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(e1, e2);
    }
}
