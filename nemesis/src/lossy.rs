//! Durability faults on nodes: the lossy filesystem ([`crate::lossyfs`])
//! mounted on a node's data directory, and the `lose-unfsynced-writes`
//! nemesis op that follows every kill when it is mounted.
//!
//! A database lifecycle that supports it (PostgreSQL on nodes, `--lazyfs`)
//! mounts `D` at setup with [`mount_command`] before creating its files,
//! checkpoints once the cluster serves, and unmounts with
//! [`unmount_command`] before removing its directories; [`unmount_command`]
//! is idempotent and also clears a stale mount (daemon gone: `ENOTCONN`)
//! left by a crashed run. Layout on the node: `D.lossy/data` holds what is
//! durable, `D.lossy/ctl.sock` is the control socket, `D.lossy/pid` and
//! `D.lossy/lossyfs.log` the daemon's pid and log.
//!
//! Kill semantics with the filesystem mounted (as Jepsen's suites do):
//! SIGKILL, then lose every un-synced byte while the process is down, then
//! (a separate op, later) start. The loss is its own op pair in the
//! history, `lose-unfsynced-writes`, whose completion value names per node
//! the files and bytes lost ([`loss_data`]).

use crate::fault::{FaultError, Nemesis};
use crate::lossyfs::ctl::{Command, Reply};
use crate::remote::shell_quote;
use crate::schedule::Recorder;
use std::collections::BTreeMap;
use store::{Data, F, OpType};
use tokio::task::JoinSet;

/// The `f` of the loss op.
pub const LOSE_F: &str = "lose-unfsynced-writes";

/// The directory beside a data directory that holds the filesystem's state.
pub fn state_dir(data_dir: &str) -> String {
    format!("{}.lossy", data_dir.trim_end_matches('/'))
}

/// Shell command that mounts the lossy filesystem on `data_dir` (which
/// must not exist or be empty) with the durable copy in
/// `<data_dir>.lossy/data`, owned by `owner`, and returns once it is
/// mounted and its control socket answers. `binary` is the harness binary
/// on the node; `strict`: namespace operations are lossy too
/// (`lossyfs mount --strict`, see `lossyfs::journal`).
pub fn mount_command(
    binary: &str,
    data_dir: &str,
    owner: Option<&str>,
    cache_mib: u64,
    strict: bool,
) -> String {
    let d = shell_quote(data_dir.trim_end_matches('/'));
    let s = shell_quote(&state_dir(data_dir));
    let bin = shell_quote(binary);
    let chown = owner
        .map(|o| format!("chown {o}: {s}/data {d} && "))
        .unwrap_or_default();
    let strict = if strict { " --strict" } else { "" };
    format!(
        "{unmount}; install -d -m 700 {s} {s}/data {d} && {chown}\
         (setsid {bin} lossyfs mount {s}/data {d} --socket {s}/ctl.sock --cache-mib {cache_mib}{strict} \
         </dev/null >{s}/lossyfs.log 2>&1 & echo $! > {s}/pid) && \
         for i in $(seq 400); do \
           if awk -v m={d} '$2==m && $3 ~ /^fuse/ {{f=1}} END {{exit !f}}' /proc/self/mounts && [ -S {s}/ctl.sock ]; then exit 0; fi; \
           sleep 0.05; done; cat {s}/lossyfs.log >&2; exit 1",
        unmount = unmount_command(data_dir)
    )
}

/// Shell command that unmounts the filesystem on `data_dir` and ends its
/// daemon (idempotent; clears a stale mount). The durable data stays in
/// `<data_dir>.lossy/data`.
pub fn unmount_command(data_dir: &str) -> String {
    let d = shell_quote(data_dir.trim_end_matches('/'));
    let s = shell_quote(&state_dir(data_dir));
    format!(
        "while awk -v m={d} '$2==m {{f=1}} END {{exit !f}}' /proc/self/mounts; do \
           fusermount3 -uz {d} 2>/dev/null || umount -l {d} 2>/dev/null || break; done; \
         P=$(cat {s}/pid 2>/dev/null); \
         if [ -n \"$P\" ] && grep -q lossyfs /proc/$P/cmdline 2>/dev/null; then kill $P; \
           for i in $(seq 100); do [ -e /proc/$P ] || break; sleep 0.05; done; fi; \
         rm -f {s}/pid; true"
    )
}

/// Shell command that sends `cmd` to the filesystem on `data_dir`.
pub fn ctl_command(binary: &str, data_dir: &str, cmd: &Command) -> String {
    format!(
        "{} lossyfs ctl {}/ctl.sock {}",
        shell_quote(binary),
        shell_quote(&state_dir(data_dir)),
        cmd.to_string()
            .split(' ')
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// A reply as a history value: `{files n, bytes b, lost {path bytes},
/// message}` (`cache-overflows` when the cache overflowed).
pub fn loss_data(r: &Reply) -> Data {
    let s = |x: &str| Data::Str(x.to_string());
    let lost: Vec<(Data, Data)> = r
        .files
        .iter()
        .filter(|f| f.dirty_bytes > 0 || f.cached_size != f.synced_size)
        .map(|f| (Data::Str(f.path.clone()), Data::Int(f.dirty_bytes as i64)))
        .collect();
    let mut m = vec![
        (s("files"), Data::Int(r.files.len() as i64)),
        (s("bytes"), Data::Int(r.dirty_bytes() as i64)),
        (s("lost"), Data::Map(lost)),
    ];
    if r.stats.overflows > 0 {
        m.push((s("cache-overflows"), Data::Int(r.stats.overflows as i64)));
    }
    if !r.message.is_empty() {
        // The filesystem's own summary (in strict mode: how many namespace
        // operations were undone).
        m.push((s("message"), Data::Str(r.message.clone())));
    }
    Data::Map(m)
}

/// After a kill of `nodes`: when the database has the lossy filesystem
/// mounted, loses un-synced writes on those nodes, recorded as a
/// `lose-unfsynced-writes` op pair (completion value: node → [`loss_data`]).
/// Does nothing (records nothing) otherwise.
///
/// # Errors
/// The nodes where the loss failed (also recorded as the op's error).
pub async fn lose_recorded(
    nemesis: &Nemesis,
    recorder: &dyn Recorder,
    nodes: &[String],
) -> Result<(), FaultError> {
    let Some(process) = nemesis.process() else {
        return Ok(());
    };
    if !process.lossy() {
        return Ok(());
    }
    let f = F::Other(LOSE_F.into());
    recorder.record(
        OpType::Invoke,
        f.clone(),
        crate::fault::nodes_data(nodes),
        None,
    );
    let mut set = JoinSet::new();
    for n in nodes {
        let node = nemesis
            .nodes()
            .into_iter()
            .find(|x| &x.name == n)
            .ok_or_else(|| FaultError::UnknownNode(n.clone()))?;
        let p = process.clone();
        set.spawn(async move { (node.name.clone(), p.lose_unsynced(&node).await) });
    }
    let mut done = BTreeMap::new();
    let mut errs = Vec::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok((n, Ok(Some(reply)))) => {
                done.insert(n, loss_data(&reply));
            }
            Ok((_, Ok(None))) => {}
            Ok((_, Err(e))) => errs.push(FaultError::Process(e)),
            Err(e) => errs.push(FaultError::Process(crate::process::ProcessError {
                node: "?".into(),
                action: "lose-unfsynced-writes",
                message: e.to_string(),
            })),
        }
    }
    let value = Data::Map(done.into_iter().map(|(n, d)| (Data::Str(n), d)).collect());
    let err = match errs.len() {
        0 => None,
        _ => Some(
            errs.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    recorder.record(OpType::Info, f, value, err);
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(FaultError::Many(errs)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::lossyfs::cache::FileReport;

    #[test]
    fn commands_name_the_state_dir_and_quote_paths() {
        let m = mount_command(
            "/usr/bin/harness",
            "/var/lib/x/n1/data/",
            Some("postgres"),
            512,
            false,
        );
        assert!(m.contains("lossyfs mount /var/lib/x/n1/data.lossy/data /var/lib/x/n1/data "));
        assert!(m.contains("--cache-mib 512 "), "{m}");
        assert!(!m.contains("--strict"), "{m}");
        let strict = mount_command("/usr/bin/harness", "/d", None, 64, true);
        assert!(strict.contains("--cache-mib 64 --strict "), "{strict}");
        assert!(m.contains("chown postgres: /var/lib/x/n1/data.lossy/data"));
        assert!(m.starts_with(&unmount_command("/var/lib/x/n1/data")));
        let c = ctl_command("/h", "/d d", &"fail eio-read base/1".parse().unwrap());
        assert_eq!(
            c,
            "/h lossyfs ctl '/d d.lossy'/ctl.sock fail eio-read base/1"
        );
    }

    #[test]
    fn loss_data_lists_files_that_lost_something() {
        let r = Reply {
            ok: true,
            files: vec![
                FileReport {
                    path: "pg_wal/1".into(),
                    cached_size: 8192,
                    synced_size: 4096,
                    dirty_bytes: 4096,
                },
                FileReport {
                    path: "same".into(),
                    cached_size: 1,
                    synced_size: 1,
                    dirty_bytes: 0,
                },
            ],
            ..Reply::default()
        };
        let d = loss_data(&r);
        let Data::Map(m) = d else { panic!() };
        assert_eq!(m[1].1, Data::Int(4096));
        assert_eq!(
            m[2].1,
            Data::Map(vec![(Data::Str("pg_wal/1".into()), Data::Int(4096))])
        );
    }
}
