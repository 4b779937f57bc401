//! Builds the wall-clock preload library (`src/clock/walltime.c`, see
//! `src/clock/walltime.rs`) with the system C compiler (`$CC`, else `cc`:
//! the linker Rust itself uses on Linux), into `$OUT_DIR`; the crate
//! embeds it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "src/clock/walltime.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()))
        .join("libharness-walltime.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(src)
        .args(["-ldl", "-pthread"])
        .status();
    let failed = match status {
        Ok(s) if s.success() => return,
        Ok(s) => format!("{cc} {src}: {s}"),
        Err(e) => format!("running {cc} for {src}: {e}"),
    };
    eprintln!("{failed} (the wall-clock preload needs a C compiler)");
    std::process::exit(1);
}
