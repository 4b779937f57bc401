//! A file harness may not read or a directory it may not write is said in
//! one shape, whatever the command: `error: cannot VERB PATH: Permission
//! denied (os error 13)`, the path once, exit 3.
//!
//! Root may read and write anything, so as root (CI) the commands run as
//! the user `nobody` (`setpriv`, util-linux); any other user runs them
//! directly. The binary is copied into a directory both may enter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    as_root: bool,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("perm-")
            .tempdir_in("/tmp")
            .unwrap();
        let root = dir.path().to_path_buf();
        chmod(&root, 0o755);
        let bin = root.join("harness");
        std::fs::copy(env!("CARGO_BIN_EXE_harness"), &bin).unwrap();
        chmod(&bin, 0o755);
        // SAFETY: geteuid has no preconditions.
        #[allow(unsafe_code)]
        let as_root = unsafe { libc::geteuid() } == 0;
        Sandbox {
            _dir: dir,
            root,
            bin,
            as_root,
        }
    }

    /// Runs harness in the sandbox as a user the permissions apply to;
    /// returns (exit code, stderr).
    fn harness(&self, args: &[&str]) -> (Option<i32>, String) {
        let mut cmd = if self.as_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&self.bin);
            c
        } else {
            Command::new(&self.bin)
        };
        let out = cmd
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.root)
            .output()
            .unwrap_or_else(|e| panic!("running harness (setpriv from util-linux as root): {e}"));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The one shape: a single `error:` line `cannot VERB PATH: Permission
/// denied (os error 13)` with the path said once.
fn assert_one_shape(what: &str, (code, stderr): (Option<i32>, String), verb: &str, path: &str) {
    assert_eq!(code, Some(3), "{what}: exit 3\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{what}: one error line\n{stderr}");
    let line = errors[0];
    assert!(
        line.ends_with(&format!(
            "cannot {verb} {path}: Permission denied (os error 13)"
        )),
        "{what}: `cannot {verb} {path}: Permission denied (os error 13)` at the end of\n{line}"
    );
    assert_eq!(
        line.matches(path).count(),
        1,
        "{what}: the path once\n{line}"
    );
}

#[test]
fn every_command_says_permission_denied_in_one_shape() {
    let s = Sandbox::new();
    let secret = s.root.join("secret.jsonl");
    std::fs::write(&secret, "").unwrap();
    chmod(&secret, 0o600);
    let suite = s.root.join("suite.toml");
    std::fs::write(&suite, "").unwrap();
    chmod(&suite, 0o600);
    let ro = s.root.join("ro");
    std::fs::create_dir(&ro).unwrap();
    chmod(&ro, 0o555);
    let peer =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("store/tests/data/peer-formats/lost-update.txt");
    let history = s.root.join("lost-update.txt");
    std::fs::copy(peer, &history).unwrap();
    chmod(&history, 0o644);

    assert_one_shape(
        "check an unreadable file",
        s.harness(&["check", "secret.jsonl"]),
        "read",
        "secret.jsonl",
    );
    assert_one_shape(
        "soak an unreadable suite",
        s.harness(&["soak", "suite.toml"]),
        "read",
        "suite.toml",
    );
    assert_one_shape(
        "run into a store it may not write",
        s.harness(&["run", "--db", "sim", "--ops", "10", "--store", "ro"]),
        "create",
        "ro/runs/sim-list-append-serializable",
    );
    assert_one_shape(
        "check's explanations into a directory it may not write",
        s.harness(&["check", "lost-update.txt", "--directory", "ro/out"]),
        "create",
        "ro/out",
    );
    assert_one_shape(
        "convert into a directory it may not write",
        s.harness(&["history", "convert", "lost-update.txt", "ro/x.jsonl"]),
        "write",
        "ro/x.jsonl",
    );
}
