//! What a file that is not a history looks like, so that a user who passed
//! the wrong file hears "this is Markdown" rather than a parser's complaint
//! about its first byte.
//!
//! Key decision: this only names a kind; it never decides whether a file is
//! a history. Callers ask it after a read failed (or found no operations),
//! and keep the parser's positioned error for files it cannot name.

use super::input::Input;
use std::io::Read;
use std::path::Path;

/// Bytes looked at.
const HEAD_BYTES: usize = 8192;

/// A kind of file that is not a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotHistory {
    /// A directory.
    Directory,
    /// Zero bytes (or only white space).
    Empty,
    /// Markdown text (`# heading`, fenced code, lists).
    Markdown,
    /// A TOML document (`[table]`, `key = value`).
    Toml,
    /// A YAML document (`---`, `key: value`).
    Yaml,
    /// HTML or XML.
    Markup,
    /// Not text (NUL bytes, or mostly invalid UTF-8).
    Binary,
    /// A JSON array with nothing in it (`[]`).
    EmptyJsonArray,
}

impl NotHistory {
    /// How it reads in a sentence: "FILE is …".
    pub fn describe(self) -> &'static str {
        match self {
            NotHistory::Directory => "a directory",
            NotHistory::Empty => "empty",
            NotHistory::Markdown => "not a history file (it looks like Markdown)",
            NotHistory::Toml => "not a history file (it looks like TOML)",
            NotHistory::Yaml => "not a history file (it looks like YAML)",
            NotHistory::Markup => "not a history file (it looks like HTML or XML)",
            NotHistory::Binary => "not a history file (it is binary data, not text)",
            NotHistory::EmptyJsonArray => "an empty JSON array (`[]`, no operations)",
        }
    }
}

/// Names what `path` is when it is recognisably not a history; `None` when
/// it may be one (let the parser's error speak) or cannot be read.
pub fn not_a_history(path: &Path) -> Option<NotHistory> {
    let md = std::fs::metadata(path).ok()?;
    if md.is_dir() {
        return Some(NotHistory::Directory);
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    Input::open(path)
        .ok()?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    classify(&head)
}

/// [`not_a_history`] on the first bytes of a file.
pub fn classify(head: &[u8]) -> Option<NotHistory> {
    if head.iter().all(u8::is_ascii_whitespace) {
        return Some(NotHistory::Empty);
    }
    if head.contains(&0) {
        return Some(NotHistory::Binary);
    }
    let lossy;
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A cut in the middle of a character at the end is still text.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => {
            lossy = String::from_utf8_lossy(head);
            let bad = lossy
                .chars()
                .filter(|&c| c == char::REPLACEMENT_CHARACTER)
                .count();
            // Mostly bad bytes: binary. A few in text (one mis-encoded
            // line) are the parser's to report, with their position.
            if bad * 20 > head.len() {
                return Some(NotHistory::Binary);
            }
            &lossy
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(3)
        .collect();
    if compact == "[]" {
        return Some(NotHistory::EmptyJsonArray);
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(40)
        .collect();
    let first = lines.first().map_or("", |l| l.trim_start());
    if first.starts_with('<') {
        return Some(NotHistory::Markup);
    }
    if first == "---" {
        return Some(NotHistory::Yaml);
    }
    // TOML before Markdown: TOML comments look like Markdown headings.
    // `[table]` or `[[array]]` with a bare name: `[]`, `[1, 2]` are JSON.
    let toml_line = |l: &&str| {
        let l = l.trim();
        let table = l
            .strip_prefix("[[")
            .and_then(|t| t.strip_suffix("]]"))
            .or_else(|| l.strip_prefix('[').and_then(|t| t.strip_suffix(']')));
        table.is_some_and(|t| is_bare_key(t) && !t.trim().starts_with(|c: char| c.is_ascii_digit()))
            || l.split_once(" = ").is_some_and(|(k, _)| is_bare_key(k))
    };
    let uncommented: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    if !uncommented.is_empty()
        && uncommented.iter().filter(|l| toml_line(l)).count() * 2 >= uncommented.len()
    {
        return Some(NotHistory::Toml);
    }
    let markdown = lines.iter().any(|l| {
        let l = l.trim_start();
        l.starts_with("```") || (l.starts_with('#') && l.trim_start_matches('#').starts_with(' '))
    });
    if markdown {
        return Some(NotHistory::Markdown);
    }
    let yaml_line = |l: &&str| {
        l.split_once(": ")
            .is_some_and(|(k, _)| is_bare_key(k.trim_start_matches("- ")))
    };
    if lines.iter().filter(|l| yaml_line(l)).count() * 2 > lines.len() {
        return Some(NotHistory::Yaml);
    }
    None
}

/// A key as TOML and YAML write it bare: letters, digits, `-`, `_`, `.`.
fn is_bare_key(k: &str) -> bool {
    let k = k.trim();
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_files_users_pass_by_mistake() {
        let cases: &[(&str, Option<NotHistory>)] = &[
            (
                "# harness\n\nA Jepsen-style test harness\n",
                Some(NotHistory::Markdown),
            ),
            ("intro\n```sh\ncargo run\n```\n", Some(NotHistory::Markdown)),
            (
                "[workspace]\nmembers = [\".\"]\n\n[package]\nname = \"harness\"\n",
                Some(NotHistory::Toml),
            ),
            (
                "# A suite\n# more words\n[suite]\nname = \"ci\"\n\n[[test]]\ndb = \"sim\"\n",
                Some(NotHistory::Toml),
            ),
            ("---\nname: ci\non: push\n", Some(NotHistory::Yaml)),
            ("name: ci\njobs:\n  test: x\n", Some(NotHistory::Yaml)),
            ("<!DOCTYPE html>\n<html>", Some(NotHistory::Markup)),
            ("", Some(NotHistory::Empty)),
            (" \n\t\n", Some(NotHistory::Empty)),
            // Histories (and broken ones) are left to the parser.
            ("{\"index\":0,\"type\":\"invoke\"}\n", None),
            ("[{\"type\":\"invoke\"}]", None),
            ("{:type :invoke, :f :txn, :value [[:append 1 2]]}\n", None),
            ("#jepsen.history.Op{:index 0}\n", None),
            ("{\"index\":0,\"type\":\"inv", None),
            ("w(1,2,0,0)\nr(1,2,1,1)\n", None),
        ];
        for (text, want) in cases {
            assert_eq!(classify(text.as_bytes()), *want, "{text:?}");
        }
        assert_eq!(
            classify(&[0x7f, b'E', b'L', b'F', 0, 1]),
            Some(NotHistory::Binary)
        );
        assert_eq!(
            classify(&[0xff, 0xfe, 0xfd, b'a']),
            Some(NotHistory::Binary)
        );
    }

    #[test]
    fn an_empty_array_is_json_and_one_bad_line_is_still_text() {
        assert_eq!(classify(b"[]"), Some(NotHistory::EmptyJsonArray));
        assert_eq!(classify(b" [ ]\n"), Some(NotHistory::EmptyJsonArray));
        // Before: `[]` looked like a TOML table header.
        assert_ne!(classify(b"[]\n"), Some(NotHistory::Toml));
        assert_eq!(classify(b"[1, 2]\n"), None);
        assert_eq!(
            classify(b"[[test]]\ndb = \"sim\"\n"),
            Some(NotHistory::Toml)
        );
        // One mis-encoded line among many valid ones: left to the parser,
        // which names its line and column.
        let mut text = Vec::new();
        for i in 0..20 {
            text.extend_from_slice(
                format!("{{\"index\":{i},\"type\":\"invoke\",\"f\":\"txn\"}}\n").as_bytes(),
            );
        }
        text.extend_from_slice(b"{\"index\":20,\"type\":\"ok\",\"f\":\"t\xffxn\"}\n");
        assert_eq!(classify(&text), None);
        // A byte-order mark is not a reason to call text anything else.
        assert_eq!(
            classify(b"\xef\xbb\xbf[]"),
            Some(NotHistory::EmptyJsonArray)
        );
    }
}
