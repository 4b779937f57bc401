//! Exit codes shared by every subcommand (ARCHITECTURE.md, "Cross-cutting concerns").

use std::process::ExitCode;

/// Valid / success; for `reproduce`: reproduced.
pub const VALID: u8 = 0;
/// Invalid: an anomaly the expected model forbids; for `reproduce`: not reproduced.
pub const INVALID: u8 = 1;
/// Unknown: the checker could not decide.
pub const UNKNOWN: u8 = 2;
/// Bad input, bad flag, harness failure.
pub const ERROR: u8 = 3;
/// Infrastructure: a node, SSH, or a database that would not start.
pub const SETUP_FAILED: u8 = 4;
/// Interrupted: a second SIGINT/SIGTERM ended a run before its verdict
/// (128 + SIGINT, what a shell reports for Ctrl-C).
pub const INTERRUPTED: u8 = 130;

/// Converts one of the constants above into a process exit code.
pub fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
