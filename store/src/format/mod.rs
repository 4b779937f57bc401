//! History files: JSON Lines (native), Elle/elle-cli JSON, Jepsen EDN.
//!
//! Reading streams: [`OpReader`] holds one op (plus one read chunk) at a
//! time, never the whole file as text or as a tree. A file that ends inside
//! its last op (a torn write: no newline at the end) yields the ops before it
//! and a warning; anything else malformed is a [`FormatError`] with file,
//! line, column and reason. Nothing in here panics on input.
//!
//! Conversions are lossless as parsed [`Op`]s: JSON ⇄ EDN keeps keywords,
//! sets, symbols, tagged values and non-string map keys.
//!
//! Data positions (keys, values, `error`, extra fields) use this encoding so
//! that EDN survives a trip through JSON:
//!
//! | EDN / `Data`            | JSON                                     |
//! |-------------------------|------------------------------------------|
//! | keyword `:x`            | `":x"`                                   |
//! | string starting with `:`, `#` or `\` | that string prefixed with `\` (`"\\:x"`) |
//! | set `#{1 2}`            | `{"#set":[1,2]}`                         |
//! | map with a key that is not a string or keyword | `{"#map":[[k,v],…]}` |
//! | symbol `s`              | `{"#sym":"s"}`                           |
//! | tagged `#t v`           | `{"#tag":["t",v]}`                       |
//! | `##NaN`, `##Inf`, `##-Inf` | `{"#float":"NaN"}`, `"Infinity"`, `"-Infinity"` |
//!
//! `type`, `f`, `process` `"nemesis"` and micro-op names are plain strings.
//!
//! Any of these may be gzip-compressed (a finished run keeps its history as
//! `history.jsonl.gz`): [`OpReader::open`] recognises gzip by its magic bytes
//! and reads through it, so every reader takes compressed files as they are.
//!
//! Both JSON flavours are read with this encoding, so a foreign JSON string
//! that starts with `:` reads as a keyword and one starting with `\\` loses
//! that backslash. Missing `index` values are assigned in
//! file order (one more than the previous op's); `time` `-1` or absent is
//! `time_ns: None` and is written back as absent.

mod convert;
mod cursor;
mod edn;
mod input;
mod json;
mod kind;
mod op_writer;
mod parallel;
mod source;

use crate::history::{History, HistoryBuilder, Op};
use crate::list::ListSharer;
pub(crate) use convert::UsualOp;
use cursor::Cursor;
pub use input::{Input, Peeked, compress_file, is_gzip};
pub use kind::{NotHistory, classify as classify_head, not_a_history};
use source::{MAX_ITEM_BYTES, PErr, Source};
use std::borrow::Borrow;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A history file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One JSON object per line (`.jsonl`), harness' native format.
    JsonLines,
    /// elle-cli / adya JSON: one array of op objects (`.json`). When read, one
    /// op object per line without the array is accepted too.
    ElleJson,
    /// Jepsen EDN: one op map per line, or one vector of op maps (`.edn`).
    Edn,
}

impl Format {
    /// The format a file name's extension implies (`.jsonl`/`.ndjson`,
    /// `.json`, `.edn`).
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Some(Format::JsonLines),
            "json" => Some(Format::ElleJson),
            "edn" => Some(Format::Edn),
            _ => None,
        }
    }

    /// The usual extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::JsonLines => "jsonl",
            Format::ElleJson => "json",
            Format::Edn => "edn",
        }
    }

    /// A human name.
    pub fn name(self) -> &'static str {
        match self {
            Format::JsonLines => "JSON Lines",
            Format::ElleJson => "Elle JSON",
            Format::Edn => "EDN",
        }
    }

    /// Guesses the format from the first bytes of a file; `None` when they
    /// do not tell (empty file, `[]`, `{}`).
    pub fn sniff(head: &[u8]) -> Option<Format> {
        let head = head.strip_prefix(&source::BOM).unwrap_or(head);
        let mut i = 0;
        let next = |i: &mut usize| -> Option<u8> {
            while let Some(&c) = head.get(*i) {
                if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
                    *i += 1;
                } else {
                    return Some(c);
                }
            }
            None
        };
        match next(&mut i)? {
            b';' | b'#' | b':' | b'(' | b',' => Some(Format::Edn),
            b'{' => {
                i += 1;
                match next(&mut i)? {
                    b'"' => Some(Format::JsonLines),
                    b'}' => None,
                    _ => Some(Format::Edn),
                }
            }
            b'[' => {
                i += 1;
                match next(&mut i)? {
                    b'{' => {
                        i += 1;
                        match next(&mut i)? {
                            b'"' => Some(Format::ElleJson),
                            b'}' => None,
                            _ => Some(Format::Edn),
                        }
                    }
                    b']' => None,
                    b'#' => Some(Format::Edn),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Malformed or unreadable history input, with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// The file, when reading one.
    pub file: Option<PathBuf>,
    /// 1-based line; 0 when the error is not about one place (IO, history rules).
    pub line: u64,
    /// 1-based column in bytes, where known.
    pub column: Option<u64>,
    /// What is wrong.
    pub reason: String,
    /// For an IO error (line 0): what was being done to `file` (`read`,
    /// `create`, `write`), said as `cannot read FILE: CAUSE` like every
    /// other file error harness prints.
    pub op: Option<&'static str>,
}

impl FormatError {
    fn new(file: Option<&Path>, line: u64, column: Option<u64>, reason: impl Into<String>) -> Self {
        FormatError {
            file: file.map(Path::to_path_buf),
            line,
            column,
            reason: reason.into(),
            op: None,
        }
    }

    /// An IO error while doing `op` (`read`, `create`, `write`) to `file`.
    pub fn io(op: &'static str, file: Option<&Path>, e: &io::Error) -> Self {
        FormatError {
            op: Some(op),
            ..FormatError::new(file, 0, None, e.to_string())
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(op), Some(p), 0) = (self.op, &self.file, self.line) {
            return write!(f, "cannot {op} {}: {}", p.display(), self.reason);
        }
        match &self.file {
            Some(p) => write!(f, "{}", p.display())?,
            None => f.write_str("<input>")?,
        }
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for FormatError {}

/// The ops of a file and what was odd about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOutcome {
    /// The ops, in file order.
    pub ops: Vec<Op>,
    /// Non-fatal problems, each with its position (e.g. a torn last line).
    pub warnings: Vec<String>,
    /// The format the input was read as.
    pub format: Format,
}

/// Syntax family chosen for reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing read yet: decide between a sequence and an array of ops.
    Start,
    /// JSON objects, one per line.
    Lines,
    /// Inside a JSON array / EDN vector or list; `first`: no op read yet;
    /// `close`: the byte that ends it (`]`, or `)` for an EDN list, as
    /// Knossos writes some histories).
    Array {
        first: bool,
        close: u8,
    },
    /// EDN forms one after another.
    Forms,
    /// After the closing `]`: only whitespace may follow.
    Trailer,
    Done,
}

/// A streaming reader of ops: an iterator of `Result<Op, FormatError>` that
/// stops after the first error.
pub struct OpReader<R> {
    src: Source<R>,
    format: Format,
    file: Option<PathBuf>,
    state: State,
    next_index: u64,
    warnings: Vec<String>,
    /// Set by [`OpReader::sharing_lists`]: JSON Lines list reads are built
    /// in per-key shared buffers (`crate::list`).
    lists: Option<ListSharer>,
    /// Set while [`OpReader::read_into`] runs: JSON Lines ops of the usual
    /// shape are read by [`json::Json::usual_op`] and handed to the sink
    /// without an [`Op`] (the iterator always reads with [`json::Json::op`]).
    usual: bool,
    /// The micro-ops of the last usual op (the sink empties it).
    mops: Vec<crate::history::MicroOp>,
}

/// What the reader read: an op, or an op of the usual shape whose
/// micro-ops are in the reader's `mops`.
enum Item {
    Op(Op),
    Usual(convert::UsualOp),
}

impl OpReader<Input> {
    /// Opens `path`, choosing the format from its first bytes, else its
    /// extension (`.gz` stripped); gzip-compressed files are read through.
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open(path: &Path) -> Result<OpReader<Input>, FormatError> {
        let io = |e: io::Error| FormatError::io("read", Some(path), &e);
        let mut f = Input::open(path).map_err(io)?;
        let mut head = [0u8; 4096];
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        let format = Format::sniff(&head[..n])
            .or_else(|| Format::from_extension(&input::without_gz(path)))
            .unwrap_or(Format::JsonLines);
        let f = Input::open(path).map_err(io)?;
        Ok(OpReader::new(f, format, Some(path.to_path_buf())))
    }
}

impl<R: Read> OpReader<R> {
    /// Reads `format` from `r`; `file` names the input in errors.
    pub fn new(r: R, format: Format, file: Option<PathBuf>) -> OpReader<R> {
        OpReader {
            src: Source::new(r),
            format,
            file,
            state: State::Start,
            next_index: 0,
            warnings: Vec::new(),
            lists: None,
            usual: false,
            mops: Vec::new(),
        }
    }

    /// Reads into `buf` (another reader's, see [`OpReader::into_buffer`]).
    pub(crate) fn with_buffer(mut self, buf: Vec<u8>) -> OpReader<R> {
        self.src.reuse(buf);
        self
    }

    /// The read buffer, for the next reader of a thread that reads many
    /// pieces of a file: one zeroed buffer per thread, not one per piece.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.src.into_buffer()
    }

    /// Builds the list reads of JSON Lines ops in per-key shared buffers
    /// (`crate::list`): for a reader whose ops are all kept (a whole
    /// history in memory), not for streaming one op at a time, where each
    /// op would pin a buffer.
    pub fn sharing_lists(mut self) -> OpReader<R> {
        self.lists = Some(ListSharer::new());
        self
    }

    /// The format being read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Warnings so far (complete once the iterator has ended).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Consumes the reader, returning its warnings.
    pub fn into_warnings(self) -> Vec<String> {
        self.warnings
    }

    fn err_at(&self, off: usize, reason: impl Into<String>) -> FormatError {
        let (line, col) = self.src.position(off);
        FormatError::new(self.file.as_deref(), line, Some(col), reason)
    }

    fn fail<T>(&mut self, e: FormatError) -> Option<Result<T, FormatError>> {
        self.state = State::Done;
        Some(Err(e))
    }

    fn refill(&mut self) -> Result<(), FormatError> {
        if self.src.avail().len() >= MAX_ITEM_BYTES {
            return Err(self.err_at(
                0,
                format!(
                    "an op (or line) longer than {} MiB: refusing to read further",
                    MAX_ITEM_BYTES >> 20
                ),
            ));
        }
        self.src
            .fill()
            .map_err(|e| FormatError::io("read", self.file.as_deref(), &e))
    }

    /// The file's name for a warning, `<input>` for text.
    fn input_name(&self) -> String {
        self.file
            .as_deref()
            .map_or_else(|| "<input>".to_string(), |p| p.display().to_string())
    }

    /// The file ended inside an item: torn (warning) if there is no final
    /// newline, else an error.
    fn ended_inside<T>(&mut self, what: &str) -> Option<Result<T, FormatError>> {
        let len = self.src.avail().len();
        if !self.src.ends_with_newline() {
            let (line, col) = self.src.position(0);
            let name = self.input_name();
            self.warnings.push(format!(
                "{name}:{line}:{col}: torn last line ({len} bytes; the input ends inside {what}); ignored, using the ops before it"
            ));
            self.state = State::Done;
            return None;
        }
        let e = self.err_at(len, format!("unexpected end of input inside {what}"));
        self.fail(e)
    }

    /// The input's last `len` bytes end in NUL padding: the history log of
    /// a run killed before it closed its log (`run.rs`, `mapped.rs`). Warns,
    /// and returns how many bytes come before the padding (a last line
    /// without its newline, or none).
    fn nul_tail(&mut self, len: usize) -> usize {
        let a = &self.src.avail()[..len];
        let keep = a.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let (line, col) = self.src.position(keep);
        let name = self.input_name();
        self.warnings.push(format!(
            "{name}:{line}:{col}: the input ends in {} NUL bytes (the log of a run that was killed before closing it); ignored",
            len - keep
        ));
        keep
    }

    fn accept(&mut self, item: Item) -> Option<Result<Item, FormatError>> {
        let index = match &item {
            Item::Op(op) => op.index.0,
            Item::Usual(u) => u.index,
        };
        self.next_index = index.saturating_add(1);
        Some(Ok(item))
    }

    fn next_line(&mut self) -> Option<Result<Item, FormatError>> {
        // Bytes at the start of the buffer known to hold no newline, and
        // whether the line's start is known to be fine: a long line read
        // from a pipe (64 KiB per read) is scanned once, not once per read.
        let mut scanned = 0;
        let mut start_ok = false;
        loop {
            let a = self.src.avail();
            let (line_len, has_nl) = match memchr::memchr(b'\n', &a[scanned.min(a.len())..]) {
                Some(n) => (n + scanned, true),
                None if !self.src.eof => {
                    // A line that can no longer become an op stops here,
                    // not after reading up to the line limit (an endless
                    // stream of NUL bytes or of anything else).
                    if let Some((pos, reason)) = hopeless_line(a, &mut start_ok) {
                        let e = self.err_at(pos, reason);
                        return self.fail(e);
                    }
                    scanned = a.len();
                    if let Err(e) = self.refill() {
                        return self.fail(e);
                    }
                    continue;
                }
                None => (a.len(), false),
            };
            let padded = !has_nl && a[..line_len].last() == Some(&0);
            let line_len = if padded {
                self.nul_tail(line_len)
            } else {
                line_len
            };
            let line = &self.src.avail()[..line_len];
            let mut p = json::Json::new(line);
            p.ws();
            if p.at_end() {
                if !has_nl {
                    self.state = State::Done;
                    return None;
                }
                self.src.consume(line_len + 1);
                continue;
            }
            if p.peek() != Some(b'{') {
                if padded {
                    return self.ended_inside("an op torn by the kill");
                }
                let e = self.err_at(p.pos, "expected an op object `{` at the start of the line");
                return self.fail(e);
            }
            let usual = if self.usual {
                let start = p.pos;
                let r = p.usual_op(self.next_index, &mut self.mops, self.lists.as_mut());
                if r.is_none() {
                    // Read again from the op's start by the general path.
                    p.pos = start;
                    self.mops.clear();
                }
                r
            } else {
                None
            };
            let r = match usual {
                Some(u) => Ok(Item::Usual(u)),
                None => p.op(self.next_index, self.lists.as_mut()).map(Item::Op),
            };
            return match r {
                Ok(item) => {
                    p.ws();
                    if !p.at_end() {
                        let e = self.err_at(p.pos, "unexpected data after the op on this line");
                        return self.fail(e);
                    }
                    if has_nl {
                        self.src.consume_line(line_len + 1);
                    } else {
                        self.src.consume(line_len);
                    }
                    if padded {
                        // Only padding follows.
                        self.state = State::Done;
                    }
                    self.accept(item)
                }
                Err(PErr::Incomplete) if !has_nl => self.ended_inside("an op"),
                // Before the NUL padding of a killed run's log, the last
                // line may hold its bytes in any state the kill left them
                // (a copy is not written front to back): torn, not bad.
                Err(PErr::Bad { .. }) if padded => self.ended_inside("an op torn by the kill"),
                Err(PErr::Incomplete) => {
                    let e = self.err_at(
                        line_len,
                        "truncated op: the line ends before the JSON object is complete",
                    );
                    self.fail(e)
                }
                Err(PErr::Bad { pos, reason }) => {
                    let e = self.err_at(pos, reason);
                    self.fail(e)
                }
            };
        }
    }

    /// Runs `parse` on the buffer, refilling and retrying while it needs more.
    /// `Ok(None)`: the input ended inside the item.
    fn item<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> (Result<T, PErr>, usize),
    ) -> Result<Option<(T, usize)>, FormatError> {
        loop {
            let a = self.src.avail();
            let (r, used) = parse(a);
            match r {
                Err(PErr::Bad { pos, reason }) => return Err(self.err_at(pos, reason)),
                // An item ending exactly at the end of the buffer may go on
                // (a token cut by the chunk boundary): read more and retry.
                Ok(v) if used < a.len() || self.src.eof => return Ok(Some((v, used))),
                _ if !self.src.eof => self.refill()?,
                _ => return Ok(None),
            }
        }
    }

    fn step(&mut self) -> Option<Result<Item, FormatError>> {
        loop {
            match self.state {
                State::Done => return None,
                State::Lines => return self.next_line(),
                State::Start => {
                    match self.src.skip_bom() {
                        Ok(false) => {}
                        Ok(true) => {
                            let name = self.input_name();
                            self.warnings.push(format!(
                                "{name}:1:1: starts with a UTF-8 byte-order mark (EF BB BF); skipped"
                            ));
                        }
                        Err(e) => {
                            let e = FormatError::io("read", self.file.as_deref(), &e);
                            return self.fail(e);
                        }
                    }
                    let is_edn = self.format == Format::Edn;
                    // Find the first significant byte.
                    let r = self.item(|a| first_significant(is_edn, a));
                    match r {
                        Err(e) => return self.fail(e),
                        Ok(None) => return self.ended_inside("a discarded form"),
                        Ok(Some((first, used))) => {
                            self.src.consume(used);
                            self.state = match (first, is_edn) {
                                (None, _) => State::Done,
                                (Some(b'['), _) => {
                                    self.src.consume(1);
                                    State::Array {
                                        first: true,
                                        close: b']',
                                    }
                                }
                                (Some(b'('), true) => {
                                    self.src.consume(1);
                                    State::Array {
                                        first: true,
                                        close: b')',
                                    }
                                }
                                (Some(_), true) => State::Forms,
                                (Some(_), false) => State::Lines,
                            };
                        }
                    }
                }
                State::Forms => {
                    let next = self.next_index;
                    let r = self.item(|a| {
                        let mut p = edn::Edn::new(a);
                        if let Err(e) = p.skip(0) {
                            return (Err(e), p.pos);
                        }
                        if p.at_end() {
                            return (Ok(None), p.pos);
                        }
                        let start = p.pos;
                        let r = p.form(0).and_then(|d| {
                            convert::op_from_data(d, next)
                                .map(Some)
                                .map_err(|reason| PErr::Bad { pos: start, reason })
                        });
                        (r, p.pos)
                    });
                    return match r {
                        Err(e) => self.fail(e),
                        Ok(None) => self.ended_inside("an op form"),
                        Ok(Some((None, _))) => {
                            self.state = State::Done;
                            None
                        }
                        Ok(Some((Some(op), used))) => {
                            self.src.consume(used);
                            self.accept(Item::Op(op))
                        }
                    };
                }
                State::Array { first, close } => {
                    let next = self.next_index;
                    let is_edn = self.format == Format::Edn;
                    let r = self.item(|a| {
                        if is_edn {
                            let mut p = edn::Edn::new(a);
                            if let Err(e) = p.skip(1) {
                                return (Err(e), p.pos);
                            }
                            match p.peek() {
                                None => (Err(PErr::Incomplete), p.pos),
                                Some(c) if c == close => (Ok(None), p.pos + 1),
                                Some(_) => {
                                    let start = p.pos;
                                    let r = p.form(1).and_then(|d| {
                                        convert::op_from_data(d, next)
                                            .map(Some)
                                            .map_err(|reason| PErr::Bad { pos: start, reason })
                                    });
                                    (r, p.pos)
                                }
                            }
                        } else {
                            let mut p = json::Json::new(a);
                            p.ws();
                            if !first {
                                match p.peek() {
                                    None => return (Err(PErr::Incomplete), p.pos),
                                    Some(b',') => {
                                        p.pos += 1;
                                        p.ws();
                                    }
                                    Some(b']') => return (Ok(None), p.pos + 1),
                                    Some(_) => {
                                        return (
                                            Err(PErr::Bad {
                                                pos: p.pos,
                                                reason: "expected `,` or `]` after an op".into(),
                                            }),
                                            p.pos,
                                        );
                                    }
                                }
                            } else if p.peek() == Some(b']') {
                                return (Ok(None), p.pos + 1);
                            }
                            match p.peek() {
                                None => (Err(PErr::Incomplete), p.pos),
                                Some(b'{') => {
                                    let r = p.op(next, None).map(Some);
                                    (r, p.pos)
                                }
                                Some(_) => (
                                    Err(PErr::Bad {
                                        pos: p.pos,
                                        reason: "expected an op object `{`".into(),
                                    }),
                                    p.pos,
                                ),
                            }
                        }
                    });
                    return match r {
                        Err(e) => self.fail(e),
                        Ok(None) => self.ended_inside("the array of ops"),
                        Ok(Some((None, used))) => {
                            self.src.consume(used);
                            self.state = State::Trailer;
                            continue;
                        }
                        Ok(Some((Some(op), used))) => {
                            self.src.consume(used);
                            self.state = State::Array {
                                first: false,
                                close,
                            };
                            self.accept(Item::Op(op))
                        }
                    };
                }
                State::Trailer => {
                    let is_edn = self.format == Format::Edn;
                    let r = self.item(|a| {
                        let (r, pos) = first_significant(is_edn, a);
                        (r.map(|c| c.is_none()), pos)
                    });
                    return match r {
                        Err(e) => self.fail(e),
                        Ok(Some((true, _))) => {
                            self.state = State::Done;
                            None
                        }
                        Ok(None) | Ok(Some((false, _))) => {
                            let (line, col) = self.src.position(0);
                            let e = FormatError::new(
                                self.file.as_deref(),
                                line,
                                Some(col),
                                "unexpected data after the closing `]` (or `)`)",
                            );
                            self.fail(e)
                        }
                    };
                }
            }
        }
    }
}

impl<R: Read> OpReader<R> {
    /// Reads every op into `sink` (ops of the usual shape without building
    /// an [`Op`]); stops at the first error. Gives `sink` the ops the
    /// iterator gives, in order, and leaves the same warnings.
    pub(crate) fn read_into<S: OpSink>(&mut self, sink: &mut S) -> Result<(), FormatError> {
        self.usual = true;
        while let Some(item) = self.step() {
            match item? {
                Item::Op(op) => sink.push(op),
                Item::Usual(u) => sink.push_usual(u, &mut self.mops),
            }
            if let Some(e) = sink.refused() {
                self.state = State::Done;
                return Err(self.refusal(e));
            }
        }
        self.usual = false;
        Ok(())
    }

    /// The error for the op just read, which the sink refused (`e`).
    fn refusal(&self, e: &crate::HistoryError) -> FormatError {
        let line = self.src.last_line();
        FormatError::new(self.file.as_deref(), line, None, e.to_string())
    }
}

impl<R: Read> Iterator for OpReader<R> {
    type Item = Result<Op, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step()? {
            Ok(Item::Op(op)) => Some(Ok(op)),
            Ok(Item::Usual(u)) => Some(Ok(u.into_op(&mut self.mops))),
            Err(e) => Some(Err(e)),
        }
    }
}

/// Where a reader puts the ops it collects: a vector (ops handed out) or
/// a [`HistoryBuilder`] (a history built as the file is read).
pub(crate) trait OpSink: Default + Send {
    /// An empty sink for about `bytes` of JSON Lines (a hint: sinks that
    /// can size their storage ahead do, so it never grows by copying).
    fn for_bytes(_bytes: u64) -> Self {
        Self::default()
    }
    fn push(&mut self, op: Op);
    /// Why the sink refuses ops, once one passed its limits
    /// ([`HistoryBuilder`]: more than 32-bit positions address).
    fn refused(&self) -> Option<&crate::HistoryError> {
        None
    }
    /// Adds an op of the usual shape whose micro-ops are `mops` (left
    /// empty): the op [`convert::UsualOp::into_op`] makes of them.
    fn push_usual(&mut self, op: convert::UsualOp, mops: &mut Vec<crate::history::MicroOp>) {
        self.push(op.into_op(mops));
    }
    /// The first op's index, if any.
    fn first_index(&self) -> Option<u64>;
    /// Consecutive parts of one file's ops, joined in order; `None` when
    /// they are too many for one sink.
    fn join(parts: Vec<Self>) -> Option<Self>;
}

impl OpSink for Vec<Op> {
    fn push(&mut self, op: Op) {
        Vec::push(self, op);
    }

    fn first_index(&self) -> Option<u64> {
        self.first().map(|op| op.index.0)
    }

    fn join(parts: Vec<Self>) -> Option<Self> {
        let mut all = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            all.extend(part);
        }
        Some(all)
    }
}

impl OpSink for HistoryBuilder {
    fn for_bytes(bytes: u64) -> Self {
        HistoryBuilder::for_jsonl_bytes(bytes)
    }

    fn push(&mut self, op: Op) {
        HistoryBuilder::push(self, op);
    }

    fn push_usual(&mut self, op: convert::UsualOp, mops: &mut Vec<crate::history::MicroOp>) {
        HistoryBuilder::push_usual(self, op, mops);
    }

    fn refused(&self) -> Option<&crate::HistoryError> {
        HistoryBuilder::refused(self)
    }

    fn first_index(&self) -> Option<u64> {
        HistoryBuilder::first_index(self)
    }

    fn join(parts: Vec<Self>) -> Option<Self> {
        HistoryBuilder::join(parts)
    }
}

/// Reads every op of `r` into `sink`, list reads shared (`crate::list`);
/// returns the reader's warnings.
pub(crate) fn collect_into<R: Read>(
    r: OpReader<R>,
    sink: &mut impl OpSink,
) -> Result<(Format, Vec<String>), FormatError> {
    let mut r = r.sharing_lists();
    if r.format == Format::JsonLines {
        r.read_into(sink)?;
        return Ok((r.format, r.warnings));
    }
    let mut sharer = ListSharer::new();
    for op in r.by_ref() {
        let mut op = op?;
        sharer.share_op(&mut op);
        sink.push(op);
        if sink.refused().is_some() {
            break;
        }
    }
    if let Some(e) = sink.refused() {
        return Err(r.refusal(e));
    }
    Ok((r.format, r.warnings))
}

fn collect<R: Read>(r: OpReader<R>) -> Result<ReadOutcome, FormatError> {
    let mut ops = Vec::new();
    let (format, warnings) = collect_into(r, &mut ops)?;
    Ok(ReadOutcome {
        ops,
        warnings,
        format,
    })
}

/// Reads a history file, detecting its format.
///
/// # Errors
/// IO failure or malformed input (with file, line, column, reason).
pub fn read_path(path: &Path) -> Result<ReadOutcome, FormatError> {
    let (ops, warnings, format) = read_path_into(path)?;
    Ok(ReadOutcome {
        ops,
        warnings,
        format,
    })
}

/// Reads `path` into a fresh sink: in parallel where that gives the same
/// answer (`parallel`), else sequentially.
fn read_path_into<S: OpSink>(path: &Path) -> Result<(S, Vec<String>, Format), FormatError> {
    let reader = OpReader::open(path)?;
    if reader.format == Format::JsonLines
        && !is_gzip(path)
        && let Some(sink) = parallel::read_jsonl(path)
    {
        return Ok((sink, Vec::new(), Format::JsonLines));
    }
    let mut sink = match (reader.format, is_gzip(path)) {
        (Format::JsonLines, false) => S::for_bytes(std::fs::metadata(path).map_or(0, |m| m.len())),
        _ => S::default(),
    };
    let (format, warnings) = collect_into(reader, &mut sink)?;
    Ok((sink, warnings, format))
}

/// Reads a history from text in `format` (`JsonLines` and `ElleJson` read
/// the same: an array or a sequence of objects).
///
/// # Errors
/// Malformed input.
pub fn read_str(text: &str, format: Format) -> Result<ReadOutcome, FormatError> {
    collect(OpReader::new(text.as_bytes(), format, None))
}

/// The first byte of `a` that is not whitespace (in EDN: nor a comment
/// or a discarded `#_` form), `None` when there is none, and its offset.
fn first_significant(is_edn: bool, a: &[u8]) -> (Result<Option<u8>, PErr>, usize) {
    if is_edn {
        let mut p = edn::Edn::new(a);
        let r = p.skip(0).map(|_| p.peek());
        (r, p.pos)
    } else {
        let mut p = json::Json::new(a);
        p.ws();
        (Ok(p.peek()), p.pos)
    }
}

/// Reads a history from bytes in `format`.
///
/// # Errors
/// Malformed input.
pub fn read_bytes(bytes: &[u8], format: Format) -> Result<ReadOutcome, FormatError> {
    collect(OpReader::new(bytes, format, None))
}

/// Reads and validates a history: [`read_path`] then [`History::new`].
/// Warnings include the history's (unmatched invocations, reused processes).
///
/// # Errors
/// Malformed input, or a history rule broken (the error names the op index).
pub fn load_history(path: &Path) -> Result<(History, Vec<String>), FormatError> {
    let (builder, mut warnings, _) = read_path_into::<HistoryBuilder>(path)?;
    let h = builder
        .finish()
        .map_err(|e| FormatError::new(Some(path), 0, None, e.to_string()))?;
    warnings.extend(
        h.warnings()
            .iter()
            .map(|w| format!("{}: {w}", path.display())),
    );
    Ok((h, warnings))
}

/// Writes `ops` to `path` in `format` (replacing the file): a slice of
/// ops, or a history's `History::iter_ops`.
///
/// # Errors
/// IO failure.
pub fn write_path<O: Borrow<Op>>(
    path: &Path,
    ops: impl IntoIterator<Item = O>,
    format: Format,
) -> Result<(), FormatError> {
    let io = |e: io::Error| FormatError::io("write", Some(path), &e);
    let f = File::create(path).map_err(io)?;
    let mut w = io::BufWriter::with_capacity(1 << 20, f);
    write_ops(&mut w, ops, format).map_err(io)?;
    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)
}

/// Most NUL bytes a JSON Lines input may end in: the history log of a run
/// killed before it closed its log pads to the end of its mapped window
/// (`crate::mapped::WINDOW`, 1 MiB; a batch may reserve a few).
const MAX_NUL_PADDING: usize = 8 << 20;

/// How far a line that does not start like an op may run, without a NUL
/// byte, before it is refused: longer than the torn last line of a killed
/// run's log (one op, cut by the kill) would be.
const TORN_LINE_MAX: usize = 1 << 20;

/// Why the start `a` of a JSON Lines line (no newline yet) can never be an
/// op, with the offset to name: its first byte after blanks is neither `{`
/// nor NUL padding (nor a byte-order mark), or it ends in more NUL bytes
/// than a killed run's log is padded with.
/// `start_ok` is set once the first byte after blanks was seen to be fine
/// (and skips that look afterwards).
fn hopeless_line(a: &[u8], start_ok: &mut bool) -> Option<(usize, String)> {
    if !*start_ok {
        let first = a.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r'));
        match first {
            Some(i) if !matches!(a[i], b'{' | 0 | 0xef) => {
                // A run killed in the middle of a write leaves its last
                // line torn, its bytes in any state, before the NUL
                // padding of its log: such a line is left to the end of
                // the input, where a torn last line is dropped. A line
                // that starts wrong and runs on without a NUL is no torn
                // line.
                if memchr::memchr(0, &a[i..]).is_some() {
                    *start_ok = true;
                } else if a.len() - i >= TORN_LINE_MAX {
                    return Some((
                        i,
                        "expected an op object `{` at the start of the line".to_string(),
                    ));
                }
            }
            Some(_) => *start_ok = true,
            // Blanks so far: a line of blanks longer than the line limit
            // stops there.
            None => {}
        }
    }
    if a.len() <= MAX_NUL_PADDING {
        // Cheap while short: refills of a pipe come 64 KiB at a time.
        return None;
    }
    let nuls = a.iter().rev().take_while(|&&b| b == 0).count();
    (nuls > MAX_NUL_PADDING).then(|| {
        (
            a.len() - nuls,
            format!(
                "more than {} MiB of NUL bytes: not the padding of a killed run's log (at most a few MiB); not a history",
                MAX_NUL_PADDING >> 20
            ),
        )
    })
}

/// Writes `ops` in `format` to any writer.
///
/// # Errors
/// IO failure.
pub fn write_ops<W: Write, O: Borrow<Op>>(
    w: &mut W,
    ops: impl IntoIterator<Item = O>,
    format: Format,
) -> io::Result<()> {
    let mut ow = OpWriter::new(w, format);
    for op in ops {
        ow.write(op.borrow())?;
    }
    ow.finish().map(|_| ())
}

/// A streaming writer of ops in one format (for conversions that never
/// hold the whole history).
pub struct OpWriter<W: Write> {
    w: W,
    format: Format,
    line: String,
    count: u64,
}

impl<W: Write> OpWriter<W> {
    /// Writes to `w` in `format`.
    pub fn new(w: W, format: Format) -> OpWriter<W> {
        OpWriter {
            w,
            format,
            line: String::with_capacity(256),
            count: 0,
        }
    }

    /// Writes one op.
    ///
    /// # Errors
    /// IO failure.
    pub fn write(&mut self, op: &Op) -> io::Result<()> {
        self.line.clear();
        match self.format {
            Format::JsonLines => json::write_op(&mut self.line, op),
            Format::ElleJson => {
                self.line
                    .push_str(if self.count == 0 { "[" } else { ",\n " });
                json::write_op(&mut self.line, op);
            }
            Format::Edn => edn::write_op(&mut self.line, op),
        }
        if self.format != Format::ElleJson {
            self.line.push('\n');
        }
        self.count += 1;
        self.w.write_all(self.line.as_bytes())
    }

    /// Ops written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Closes the array (Elle JSON) and flushes; returns the writer.
    ///
    /// # Errors
    /// IO failure.
    pub fn finish(mut self) -> io::Result<W> {
        if self.format == Format::ElleJson {
            self.w.write_all(if self.count == 0 {
                &b"[]\n"[..]
            } else {
                &b"]\n"[..]
            })?;
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

/// `op` as one JSON Lines line, without the newline.
pub fn to_json_line(op: &Op) -> String {
    let mut s = String::with_capacity(128);
    json::write_op(&mut s, op);
    s
}

/// Appends `op` as JSON (no newline) to `out`.
pub fn push_json_line(out: &mut String, op: &Op) {
    json::write_op(out, op);
}

/// `op` as one EDN map.
pub fn to_edn(op: &Op) -> String {
    let mut s = String::with_capacity(128);
    edn::write_op(&mut s, op);
    s
}

/// `d` as EDN (keywords, sets, tagged values as they are), e.g. a result map.
pub fn data_to_edn(d: &crate::Data) -> String {
    let mut s = String::with_capacity(256);
    edn::write_data(&mut s, d);
    s
}
