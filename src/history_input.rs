//! A history file named on the command line (`check`, `history convert`,
//! `history stats`): plain words when it is not a history at all.
//!
//! Key decision: the parser's positioned error stays for anything that may
//! be a broken history; only files that `store::format::not_a_history` can
//! name (a directory, an empty file, Markdown, TOML, YAML, HTML, binary)
//! get a sentence instead, and a run directory points at `harness analyze`.

use anyhow::Context as _;
use std::path::Path;
use store::History;
use store::format::NotHistory;

/// The formats a history may be in, for messages.
pub const EXPECTED: &str =
    "expected a history in JSON Lines, Elle JSON or Jepsen EDN (gzip-compressed or not)";

/// Why `path` cannot be a history, in one sentence; `None` when it may be.
pub fn not_a_history(path: &Path) -> Option<String> {
    let kind = store::format::not_a_history(path)?;
    if kind == NotHistory::Directory {
        let is_run = ["test.json", "history.jsonl", "history.jsonl.gz"]
            .iter()
            .any(|f| path.join(f).is_file());
        return Some(if is_run {
            format!(
                "{} is a run directory, not a history file: `harness analyze {}` re-checks the run \
                 (or check its history file, {}/history.jsonl.gz)",
                path.display(),
                path.display(),
                path.display()
            )
        } else {
            format!("{} is a directory; {EXPECTED}", path.display())
        });
    }
    Some(format!(
        "{} is {}; {EXPECTED}",
        path.display(),
        kind.describe()
    ))
}

/// Reads and validates the history at `path`.
///
/// # Errors
/// `path` is not a history (named in plain words), is malformed (file, line,
/// column, reason), or holds no operation.
pub fn load(path: &Path) -> anyhow::Result<(History, Vec<String>)> {
    if !path.exists() {
        anyhow::bail!("{} does not exist", path.display());
    }
    // A directory or an empty file is named before parsing; a file that
    // merely looks like Markdown or TOML only after the parser gave up, so
    // that nothing readable is ever refused.
    if matches!(
        store::format::not_a_history(path),
        Some(NotHistory::Directory | NotHistory::Empty)
    ) && let Some(why) = not_a_history(path)
    {
        anyhow::bail!(why);
    }
    match store::format::load_history(path) {
        Ok((history, warnings)) if !history.is_empty() => Ok((history, warnings)),
        Ok(_) => Err(anyhow::anyhow!(not_a_history(path).unwrap_or_else(
            || format!("{} holds no operations; {EXPECTED}", path.display())
        ))),
        Err(e) => match not_a_history(path) {
            Some(why) => Err(anyhow::anyhow!(why)),
            None => Err(e).with_context(|| format!("reading history {}", path.display())),
        },
    }
}
