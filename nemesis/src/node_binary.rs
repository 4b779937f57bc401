//! The harness binary on a node, for the commands harness runs there (the
//! lossy filesystem's daemon `harness lossyfs mount`, clock strobes).
//!
//! Key decision: a node is checked, not assumed. When it already has a file
//! of this binary's size at the path (the testbed's nodes and local nodes
//! share this machine's files, so they always do), nothing moves; otherwise
//! the running executable is uploaded over the node's [`Remote`] — written
//! aside and renamed into place, so a daemon never starts from half a file.
//!
//! [`own_binary`] is the path of the running executable that is safe to
//! start again: when the file was replaced while harness runs (a rebuild
//! during a nightly soak), `current_exe()` names `<path> (deleted)`, which
//! cannot be started; the running image (`/proc/self/exe`) is then copied
//! once to `<tmp>/harness-self-<pid>` and that copy is used. Measured
//! before: a rebuild during a 5-minute run made every later clock strobe
//! fail with status 127.

use crate::remote::{DEFAULT_TIMEOUT, Remote, RemoteError, shell_quote};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The path of this harness executable that can be started (see the
/// module doc); resolved once per process.
///
/// # Errors
/// The executable cannot be located, or its replaced image not copied.
pub fn own_binary() -> std::io::Result<PathBuf> {
    static OWN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    OWN.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        startable(
            &exe,
            Path::new("/proc/self/exe"),
            &std::env::temp_dir().join(format!("harness-self-{}", std::process::id())),
        )
        .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(std::io::Error::other)
}

/// `exe` when it exists; when it is `<path> (deleted)`, `image` copied to
/// `copy` (made executable).
fn startable(exe: &Path, image: &Path, copy: &Path) -> std::io::Result<PathBuf> {
    if exe.is_file() {
        return Ok(exe.to_path_buf());
    }
    if !exe.to_string_lossy().ends_with(" (deleted)") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("the harness binary {} is gone", exe.display()),
        ));
    }
    std::fs::copy(image, copy)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(copy, std::fs::Permissions::from_mode(0o755))?;
    Ok(copy.to_path_buf())
}

/// Makes sure `path` on `remote`'s node is this harness binary (see the
/// module doc).
///
/// # Errors
/// Reading the own executable, or as [`Remote::upload`].
pub async fn ensure_binary(remote: &dyn Remote, path: &str) -> Result<(), RemoteError> {
    let io = |context: &str| {
        let node = remote.node().name.clone();
        let context = context.to_string();
        move |source| RemoteError::Io {
            node,
            context,
            source,
        }
    };
    let exe = own_binary().map_err(io("locating the harness binary"))?;
    let size = std::fs::metadata(&exe)
        .map_err(io("reading the harness binary's size"))?
        .len();
    ensure_file(remote, &exe, size, path).await
}

/// [`ensure_binary`] for any local file `local` of `size` bytes.
async fn ensure_file(
    remote: &dyn Remote,
    local: &Path,
    size: u64,
    path: &str,
) -> Result<(), RemoteError> {
    let q = shell_quote(path);
    let probe = format!("[ \"$(stat -c %s {q} 2>/dev/null)\" = {size} ] && [ -x {q} ]");
    if remote.exec(&probe, None, DEFAULT_TIMEOUT).await?.success() {
        return Ok(());
    }
    let part = format!("{path}.part");
    let dir = Path::new(path)
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "/".to_string());
    remote
        .run(&format!("mkdir -p {}", shell_quote(&dir)))
        .await?;
    remote.upload(local, &part).await?;
    remote
        .run(&format!(
            "chmod 755 {p} && mv -f {p} {q}",
            p = shell_quote(&part)
        ))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Node;
    use crate::remote::LocalRemote;

    #[test]
    fn a_replaced_binary_is_started_from_a_copy_of_the_running_image() {
        let d = tempfile::tempdir().unwrap();
        let image = d.path().join("image");
        std::fs::write(&image, b"running image").unwrap();
        let present = d.path().join("harness");
        std::fs::write(&present, b"new build").unwrap();
        let copy = d.path().join("copy");
        // Present: used as it is.
        assert_eq!(startable(&present, &image, &copy).unwrap(), present);
        // Replaced: the running image, copied and executable.
        let gone = d.path().join("old (deleted)");
        assert_eq!(startable(&gone, &image, &copy).unwrap(), copy);
        assert_eq!(std::fs::read(&copy).unwrap(), b"running image");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        // Gone without the marker: an error naming it.
        let e = startable(&d.path().join("nothing"), &image, &copy).unwrap_err();
        assert!(e.to_string().contains("nothing"), "{e}");
        // The real one resolves to a file.
        assert!(own_binary().unwrap().is_file());
    }

    #[tokio::test]
    async fn ensure_file_uploads_once_and_keeps_an_identical_copy() {
        let r = LocalRemote::new(Node::new("n1", "127.0.0.1"));
        let dir = std::env::temp_dir().join(format!("harness-ensure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("src");
        let script = b"#!/bin/sh\necho hi\n";
        std::fs::write(&src, script).unwrap();
        let dest = dir.join("a/b/harness");
        let ds = dest.display().to_string();
        // Absent on the node: uploaded, executable.
        ensure_file(&r, &src, script.len() as u64, &ds)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), script);
        let out = r.run(&shell_quote(&ds)).await.unwrap();
        assert_eq!(out.stdout_str().trim(), "hi");
        // Present with the same size: left alone (a marker survives).
        std::fs::write(&dest, b"#!/bin/sh\necho ho\n").unwrap();
        ensure_file(&r, &src, script.len() as u64, &ds)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"#!/bin/sh\necho ho\n");
        // A different size: replaced.
        std::fs::write(&dest, b"old").unwrap();
        ensure_file(&r, &src, script.len() as u64, &ds)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), script);
        assert!(!dir.join("a/b/harness.part").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
