//! The shell a database lifecycle on nodes uses to run its server under
//! libfaketime: the node-side twins of [`super::preload_env`] and
//! [`super::remove_stale_shm`], for servers started through a
//! [`crate::Remote`] rather than as children of this process.
//!
//! A lifecycle that takes clock faults on nodes: writes [`Spec::ZERO`] to
//! its control file (a path of its own under the node's directory) with
//! [`super::write_command`] when it prepares the node, checks
//! [`installed_check_sh`], and starts the server with
//! [`start_prefix_sh`] before the command. A restart after a kill keeps
//! the file as it is: the node's clock stays where the nemesis put it.

use super::spec::{LIBFAKETIME, Spec, write_command};
use crate::remote::shell_quote;

/// Shell that deletes libfaketime's `faketime_shm_<pid>` and
/// `sem.faketime_sem_<pid>` entries in the node's `/dev/shm` whose pid is
/// gone (left by SIGKILL; a new process with that pid would exit with
/// "shm_open failed"). Always succeeds; ends with `; `.
pub fn remove_stale_shm_sh() -> &'static str {
    "for hl_f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do \
       [ -e \"$hl_f\" ] || continue; hl_p=${hl_f##*_}; \
       [ -d /proc/$hl_p ] || rm -f \"$hl_f\"; done; "
}

/// The words before a program that run it under libfaketime with control
/// file `file` (no cache: strobes rewrite the file every few
/// milliseconds); they fit after `runuser -u <user> --`. Ends with a space.
pub fn preload_words_sh(file: &str) -> String {
    let mode = super::mode();
    format!(
        "env LD_PRELOAD={} HARNESS_CLOCK_MODE={} FAKETIME_TIMESTAMP_FILE={} FAKETIME_NO_CACHE=1 ",
        shell_quote(&mode.library(file)),
        mode.flag(),
        shell_quote(file)
    )
}

/// [`remove_stale_shm_sh`], then [`preload_words_sh`]: what goes before a
/// server's command line run as the login user. Ends with a space.
pub fn start_prefix_sh(file: &str) -> String {
    format!("{}{}", remove_stale_shm_sh(), preload_words_sh(file))
}

/// Shell whose status is 0 when the preload of this process's mode is
/// there: always for the wall-clock library ([`reset_command`] writes it
/// beside the control file), else libfaketime installed on the node.
pub fn installed_check_sh() -> String {
    match super::mode() {
        super::ClockMode::Wall => "true".to_string(),
        super::ClockMode::FakeMonotonic => format!("test -r {}", shell_quote(LIBFAKETIME)),
    }
}

/// Shell that puts `file` at `+0.000` (a fresh start: no offset, no rate)
/// and, in the wall-clock mode, writes the preload library beside it.
///
/// # Errors
/// As [`write_command`] (never for [`Spec::ZERO`]).
pub fn reset_command(file: &str) -> Result<String, super::ClockError> {
    let write = write_command(file, &Spec::ZERO)?;
    Ok(match super::mode() {
        // A fresh start: the wall-clock library beside the control file.
        super::ClockMode::Wall => format!("{}{write}", super::walltime::install_sh(file)),
        super::ClockMode::FakeMonotonic => write,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(script: &str) -> std::process::Output {
        Command::new("sh").arg("-c").arg(script).output().unwrap()
    }

    #[test]
    #[ignore = "needs libfaketime (Debian libfaketime): run by .ci/run"]
    fn the_prefix_starts_a_program_under_the_control_file() {
        assert!(super::super::libfaketime_installed(), "libfaketime");
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("faketime.rc").display().to_string();
        let out = sh(&format!(
            "{} && printf '%s\\n' +7200 > {file} && {}date +%s; date +%s",
            reset_command(&file).unwrap(),
            start_prefix_sh(&file)
        ));
        let s = String::from_utf8_lossy(&out.stdout);
        let v: Vec<i64> = s.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(v.len(), 2, "{out:?}");
        let offset = v[0] - v[1];
        assert!((7190..=7210).contains(&offset), "offset {offset}: {out:?}");
    }

    #[test]
    fn stale_shm_cleanup_is_valid_shell_that_always_succeeds() {
        let out = sh(&format!("{}echo ok", remove_stale_shm_sh()));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{out:?}");
    }
}
