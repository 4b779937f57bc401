//! The harness binary on a node, for the commands harness runs there (the
//! lossy filesystem's daemon `harness lossyfs mount`, clock strobes).
//!
//! Key decision: a node is checked, not assumed. When it already has a file
//! of this binary's size at the path (the testbed's nodes and local nodes
//! share this machine's files, so they always do), nothing moves; otherwise
//! the running executable is uploaded over the node's [`Remote`] — written
//! aside and renamed into place, so a daemon never starts from half a file.

use crate::remote::{DEFAULT_TIMEOUT, Remote, RemoteError, shell_quote};
use std::path::Path;

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
    let exe = std::env::current_exe().map_err(io("locating the harness binary"))?;
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
