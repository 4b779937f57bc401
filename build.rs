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
    // Linked statically (`cargo build-static`, `+crt-static`), rustc would
    // make a static PIE, which relocates itself at start: 0.52M
    // instructions, more than the dynamic loader it replaces. `-static`
    // after `-no-pie` makes it a plain static executable (BENCHMARKS.md,
    // "h18-static").
    let crt_static = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|f| f.split(',').any(|f| f == "crt-static"));
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-bin=harness=-no-pie");
        if crt_static {
            println!("cargo:rustc-link-arg-bin=harness=-static");
        }
    }
    // A static build links the unwinder statically already (std's own
    // `gcc_eh` under `crt-static`).
    if !crt_static {
        static_unwinder();
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

/// GCC's unwinder linked in (`libgcc_eh.a`) instead of loading
/// `libgcc_s.so.1`, on Linux with glibc when the C compiler has it: the
/// loader then maps, relocates and binds one library fewer before `main`,
/// 35k instructions and 11 page faults of every start (BENCHMARKS.md,
/// "h10-startup"). Named before Rust's own `-lgcc_s`, it resolves the
/// `_Unwind_*` symbols first and `--as-needed` drops the shared one. Its
/// licence (GCC's runtime library exception) allows linking it into any
/// program. Elsewhere, or without it, the shared library stays.
fn static_unwinder() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    println!("cargo:rerun-if-env-changed=CC");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let Some(path) = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| std::path::PathBuf::from(s.trim()))
    else {
        return;
    };
    // Without the file the compiler prints the bare name back.
    let Some(dir) = path.parent().filter(|d| path.is_file() && d.is_absolute()) else {
        return;
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=gcc_eh");
}
