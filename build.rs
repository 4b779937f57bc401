//! Records the git commit the binary was built from (`harness --version`).
//!
//! Reruns when git's HEAD or index changes, found through git itself (in a
//! worktree `.git` is a file, and a watched path that does not exist would
//! rerun this script, and rebuild the crate, on every cargo invocation). Its
//! `git status` takes no optional locks, so it never rewrites the index it
//! watches: a second cargo invocation (CI runs two test streams at once)
//! finds the build fresh instead of relinking binaries other tests run.
use std::process::Command;

fn git(args: &[&str]) -> Option<std::process::Output> {
    Command::new("git")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|o| !o.stdout.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=HARNESS_GIT_COMMIT={commit}{suffix}");
    // The binary is linked at a fixed address (not position-independent):
    // the dynamic loader then has none of the ~38k relative relocations a
    // PIE carries to apply and no relocated read-only data to copy, which
    // was over a third of a small check's instructions (BENCHMARKS.md,
    // "Fixed cost"). The libraries it loads keep their random addresses.
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-bin=harness=-no-pie");
    }
    for file in ["HEAD", "index"] {
        let path = git(&["rev-parse", "--path-format=absolute", "--git-path", file])
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|p| std::path::Path::new(p).exists())
            .unwrap_or_else(|| format!(".git/{file}"));
        println!("cargo:rerun-if-changed={path}");
    }
}
