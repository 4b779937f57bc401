//! The control protocol of the lossy filesystem: one command line per
//! connection on a Unix socket, answered once the command has taken effect
//! (unlike LazyFS's FIFO, which returns before the cache is touched).
//!
//! Commands (`Command`'s `FromStr`/`Display` are the spelling):
//! `lose`, `checkpoint`, `report`, `fail eio-read|eio-write|eio-fsync|enospc
//! [PATH-PREFIX]`, `heal`, `corrupt bitflip PATH P SEED`, `corrupt truncate
//! PATH BYTES SEED`, `corrupt snapshot PATH CHUNK SEED`, `corrupt restore
//! PATH CHUNK P SEED`.
//!
//! Reply: `ok MESSAGE` or `err MESSAGE`, then the counters line `stats
//! overflows=N overflow-bytes=N loses=N lost-bytes=N`, then one line per
//! file `file CACHED SYNCED DIRTY PATH` (what it had un-synced, or what it
//! lost for `lose`), then `damage COUNT UNIT PATH` lines for `corrupt`,
//! then `end`.

use super::cache::{FileReport, Stats};
use super::corrupt::{Corruption, Damage};
use std::fmt;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Which operations a disk fault fails, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskError {
    /// `read` returns `EIO`.
    EioRead,
    /// `write` returns `EIO`.
    EioWrite,
    /// `fsync`/`fdatasync` of files and directories return `EIO` (and
    /// keep the data, and in strict mode the namespace, un-synced).
    EioFsync,
    /// `write`, `fallocate`, `create`, `mkdir` return `ENOSPC`.
    Enospc,
}

impl DiskError {
    /// The protocol spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DiskError::EioRead => "eio-read",
            DiskError::EioWrite => "eio-write",
            DiskError::EioFsync => "eio-fsync",
            DiskError::Enospc => "enospc",
        }
    }
}

impl FromStr for DiskError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "eio-read" => DiskError::EioRead,
            "eio-write" => DiskError::EioWrite,
            "eio-fsync" => DiskError::EioFsync,
            "enospc" => DiskError::Enospc,
            _ => {
                return Err(format!(
                    "unknown disk error {s:?} (expected eio-read, eio-write, eio-fsync, enospc)"
                ));
            }
        })
    }
}

/// A disk fault: operations of a kind fail on files under a path prefix
/// (relative to the mount; empty = every file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskFault {
    /// What fails.
    pub error: DiskError,
    /// Files whose path starts with this (empty: all).
    pub prefix: String,
}

/// One control command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Drop every un-synced byte.
    Lose,
    /// Make everything durable.
    Checkpoint,
    /// Say what is un-synced.
    Report,
    /// Start a disk fault.
    Fail(DiskFault),
    /// End every disk fault.
    Heal,
    /// Damage a durable file (or a random file under a directory).
    Corrupt {
        /// File or directory, relative to the mount.
        path: String,
        /// The damage.
        how: Corruption,
        /// Seed for the random choices.
        seed: u64,
    },
}

fn num<T: FromStr>(s: Option<&str>, what: &str) -> Result<T, String> {
    s.ok_or_else(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("bad {what}"))
}

impl FromStr for Command {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut w = s.split_whitespace();
        let cmd = match w.next().unwrap_or("") {
            "lose" => Command::Lose,
            "checkpoint" => Command::Checkpoint,
            "report" => Command::Report,
            "heal" => Command::Heal,
            "fail" => Command::Fail(DiskFault {
                error: w.next().unwrap_or("").parse()?,
                prefix: w.next().unwrap_or("").to_string(),
            }),
            "corrupt" => {
                let kind = w.next().unwrap_or("");
                let path = w.next().ok_or("missing path")?.to_string();
                let how = match kind {
                    "bitflip" => Corruption::Bitflip {
                        probability: num(w.next(), "probability")?,
                    },
                    "truncate" => Corruption::Truncate {
                        bytes: num(w.next(), "byte count")?,
                    },
                    "snapshot" => Corruption::Snapshot {
                        chunk: num(w.next(), "chunk size")?,
                    },
                    "restore" => Corruption::Restore {
                        chunk: num(w.next(), "chunk size")?,
                        probability: num(w.next(), "probability")?,
                    },
                    k => return Err(format!("unknown corruption {k:?}")),
                };
                let seed = num(w.next(), "seed")?;
                Command::Corrupt { path, how, seed }
            }
            c => {
                return Err(format!(
                    "unknown command {c:?} (expected lose, checkpoint, report, fail, heal, corrupt)"
                ));
            }
        };
        match w.next() {
            Some(extra) => Err(format!("unexpected {extra:?}")),
            None => Ok(cmd),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Lose => f.write_str("lose"),
            Command::Checkpoint => f.write_str("checkpoint"),
            Command::Report => f.write_str("report"),
            Command::Heal => f.write_str("heal"),
            Command::Fail(d) if d.prefix.is_empty() => write!(f, "fail {}", d.error.as_str()),
            Command::Fail(d) => write!(f, "fail {} {}", d.error.as_str(), d.prefix),
            Command::Corrupt { path, how, seed } => match how {
                Corruption::Bitflip { probability } => {
                    write!(f, "corrupt bitflip {path} {probability} {seed}")
                }
                Corruption::Truncate { bytes } => {
                    write!(f, "corrupt truncate {path} {bytes} {seed}")
                }
                Corruption::Snapshot { chunk } => {
                    write!(f, "corrupt snapshot {path} {chunk} {seed}")
                }
                Corruption::Restore { chunk, probability } => {
                    write!(f, "corrupt restore {path} {chunk} {probability} {seed}")
                }
            },
        }
    }
}

/// The answer to a command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// Whether the command succeeded.
    pub ok: bool,
    /// What happened (or the error).
    pub message: String,
    /// Counters after the command.
    pub stats: Stats,
    /// Per file: what it had un-synced (lost, for `lose`).
    pub files: Vec<FileReport>,
    /// For `corrupt`: what was damaged.
    pub damage: Vec<Damage>,
}

impl Reply {
    /// Dirty bytes over all files.
    pub fn dirty_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.dirty_bytes).sum()
    }

    /// The wire form.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{} {}\nstats overflows={} overflow-bytes={} loses={} lost-bytes={}\n",
            if self.ok { "ok" } else { "err" },
            self.message.replace('\n', " "),
            self.stats.overflows,
            self.stats.overflow_bytes,
            self.stats.loses,
            self.stats.lost_bytes
        );
        for f in &self.files {
            s.push_str(&format!(
                "file {} {} {} {}\n",
                f.cached_size, f.synced_size, f.dirty_bytes, f.path
            ));
        }
        for d in &self.damage {
            s.push_str(&format!("damage {} {} {}\n", d.count, d.unit, d.file));
        }
        s.push_str("end\n");
        s
    }

    /// Parses the wire form (a reply without its `end` line was cut short).
    ///
    /// # Errors
    /// A malformed or truncated reply.
    pub fn parse(text: &str) -> Result<Reply, String> {
        let mut r = Reply::default();
        let mut ended = false;
        for (i, line) in text.lines().enumerate() {
            let (head, rest) = line.split_once(' ').unwrap_or((line, ""));
            match (i, head) {
                (0, "ok" | "err") => {
                    r.ok = head == "ok";
                    r.message = rest.to_string();
                }
                (0, _) => return Err(format!("not a lossyfs reply: {line:?}")),
                (_, "stats") => {
                    for kv in rest.split_whitespace() {
                        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                        let v: u64 = v.parse().map_err(|_| format!("bad stats {kv:?}"))?;
                        match k {
                            "overflows" => r.stats.overflows = v,
                            "overflow-bytes" => r.stats.overflow_bytes = v,
                            "loses" => r.stats.loses = v,
                            "lost-bytes" => r.stats.lost_bytes = v,
                            _ => {}
                        }
                    }
                }
                (_, "file") => {
                    let mut p = rest.splitn(4, ' ');
                    r.files.push(FileReport {
                        cached_size: num(p.next(), "cached size")?,
                        synced_size: num(p.next(), "synced size")?,
                        dirty_bytes: num(p.next(), "dirty bytes")?,
                        path: p.next().unwrap_or("").to_string(),
                    });
                }
                (_, "damage") => {
                    let mut p = rest.splitn(3, ' ');
                    let count = num(p.next(), "damage count")?;
                    let unit = match p.next().unwrap_or("") {
                        "bits" => "bits",
                        "bytes" => "bytes",
                        "chunks-saved" => "chunks-saved",
                        _ => "chunks-restored",
                    };
                    r.damage.push(Damage {
                        count,
                        unit,
                        file: p.next().unwrap_or("").to_string(),
                    });
                }
                (_, "end") => ended = true,
                _ => return Err(format!("unexpected reply line {line:?}")),
            }
        }
        if ended {
            Ok(r)
        } else {
            Err("reply cut short (no end line): the filesystem daemon died?".to_string())
        }
    }
}

/// Sends `cmd` to the daemon listening on `socket` and waits for its reply.
///
/// # Errors
/// Connecting, a timeout, or a malformed reply.
pub fn send(socket: &Path, cmd: &Command, timeout: Duration) -> io::Result<Reply> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(format!("{cmd}\n").as_bytes())?;
    let mut text = String::new();
    for line in BufReader::new(s).lines() {
        let line = line?;
        text.push_str(&line);
        text.push('\n');
        if line == "end" {
            break;
        }
    }
    Reply::parse(&text).map_err(io::Error::other)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_typos_are_rejected() {
        for s in [
            "lose",
            "checkpoint",
            "report",
            "heal",
            "fail eio-fsync",
            "fail enospc base/5",
            "corrupt bitflip base 0.001 7",
            "corrupt truncate pg_wal 100 1",
            "corrupt snapshot base 4096 2",
            "corrupt restore base 4096 0.5 3",
        ] {
            let c: Command = s.parse().unwrap();
            assert_eq!(c.to_string(), s);
        }
        assert!("loose".parse::<Command>().is_err());
        assert!("fail eio".parse::<Command>().is_err());
        assert!("lose now".parse::<Command>().is_err());
        assert!("corrupt bitflip base x 1".parse::<Command>().is_err());
    }

    #[test]
    fn replies_round_trip_and_a_cut_reply_is_an_error() {
        let r = Reply {
            ok: true,
            message: "lost 8192 bytes in 1 file".into(),
            stats: Stats {
                overflows: 1,
                overflow_bytes: 2,
                loses: 3,
                lost_bytes: 4,
            },
            files: vec![FileReport {
                path: "base/5/16384 with space".into(),
                cached_size: 8192,
                synced_size: 0,
                dirty_bytes: 8192,
            }],
            damage: vec![Damage {
                file: "pg_wal/0001".into(),
                count: 3,
                unit: "bits",
            }],
        };
        let text = r.render();
        assert_eq!(Reply::parse(&text).unwrap(), r);
        assert_eq!(r.dirty_bytes(), 8192);
        assert!(Reply::parse(text.trim_end_matches("end\n")).is_err());
        assert!(Reply::parse("hello\nend\n").is_err());
    }
}
