//! `harness history convert|stats`.
//!
//! `-` (standard input), a pipe and a FIFO are read once, whole, with the
//! format sniffed from the bytes read ahead (`history_input::read_stream`);
//! a regular file of our formats is streamed op by op.
//!
//! Malformed input (a `FormatError`: file, line, column, reason) is printed
//! to stderr and gives exit code 3 (`exit::ERROR`), like every other error.

use clap::Subcommand;
use engine::exit;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use store::format::{FormatError, OpReader, OpWriter};
use store::import::FileFormat;
use store::pairing::StreamPairing;
use store::{HistoryWarning, Key, Op, OpValue, Process, ProcessId};

/// `harness history …`
#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Convert a history between formats (by the output file's extension,
    /// or `--to`).
    Convert {
        /// Input history (JSON Lines, Elle JSON, Jepsen EDN, PolySI/Plume/
        /// AWDIT text, dbcop JSON, dbcop's history.bincode or a directory
        /// holding one, a directory of Cobra logs; detected). `-` reads
        /// standard input; a pipe or FIFO is read once, whole.
        input: PathBuf,
        /// Output file: `.jsonl`, `.json` (Elle JSON array), `.edn`, `.txt`
        /// (PolySI/Plume/AWDIT text), `.bincode` (dbcop); a directory for
        /// `--to cobra` (or an existing one for `--to dbcop-bincode`: its
        /// history.bincode).
        output: PathBuf,
        /// The input's format instead of detecting it: jsonl, json, edn,
        /// text (polysi, plume, isovista, awdit), dbcop (dbcop-json),
        /// dbcop-bincode (bincode), cobra.
        #[arg(long, visible_alias = "format", value_parser = str::parse::<FileFormat>)]
        from: Option<FileFormat>,
        /// The output's format instead of its extension (same names).
        #[arg(long, value_parser = str::parse::<FileFormat>)]
        to: Option<FileFormat>,
    },
    /// Summarize a history: ops by type and f, processes, keys, time span,
    /// unmatched invocations.
    Stats {
        /// The history file; `-` reads standard input (pipes and FIFOs
        /// are read once, too).
        file: PathBuf,
        /// Print the summary as one JSON object.
        #[arg(long)]
        json: bool,
        /// The file's format instead of detecting it (names as for convert).
        #[arg(long, visible_alias = "from", value_parser = str::parse::<FileFormat>)]
        format: Option<FileFormat>,
    },
}

/// Runs a history subcommand, returning the exit code.
pub fn run(cmd: HistoryCommand) -> anyhow::Result<u8> {
    let forced = match &cmd {
        HistoryCommand::Convert { from, .. } => from.is_some(),
        HistoryCommand::Stats { format, .. } => format.is_some(),
    };
    let (input, r) = match &cmd {
        HistoryCommand::Convert {
            input,
            output,
            from,
            to,
        } => (input, convert(input, output, *from, *to)),
        HistoryCommand::Stats { file, json, format } => (file, stats(file, *json, *format)),
    };
    match r {
        Ok(()) => Ok(exit::VALID),
        Err(e) => {
            // Bad input is exit 3: in plain words when it is no history at
            // all, else with the parser's position. A stream was read once
            // and is not looked at again.
            let named = if crate::history_input::is_stream(input) {
                None
            } else {
                crate::history_input::not_a_history(input)
            };
            match named {
                Some(why) if !forced => eprintln!("error: {why}"),
                _ => eprintln!("error: {e}"),
            }
            Ok(exit::ERROR)
        }
    }
}

fn convert(
    input: &Path,
    output: &Path,
    from: Option<FileFormat>,
    to: Option<FileFormat>,
) -> Result<(), FormatError> {
    let err = |reason: String| FormatError {
        file: Some(output.to_path_buf()),
        line: 0,
        column: None,
        op: None,
        reason,
    };
    let out_format = to
        .or_else(|| FileFormat::from_extension(output))
        .ok_or_else(|| {
            err(
                "unknown output format: use a .jsonl, .json, .edn, .txt or .bincode file name, or --to NAME"
                    .into(),
            )
        })?;
    if let (Ok(a), Ok(b)) = (fs::canonicalize(input), fs::canonicalize(output))
        && a == b
    {
        return Err(err("output is the input file".into()));
    }
    if crate::history_input::is_stream(input) {
        // Read once, whole: the format is sniffed from the bytes read ahead.
        let loaded = crate::history_input::read_stream(input, from)?;
        let name = crate::history_input::stream_name(input);
        return write_loaded(name, output, loaded, out_format);
    }
    let in_format = match from {
        Some(f) => f,
        None => FileFormat::detect(input)?,
    };
    let (FileFormat::Ours(in_ours), FileFormat::Ours(format)) = (in_format, out_format) else {
        return convert_peer(input, output, in_format, out_format);
    };
    let mut reader = open_reader(input, from.is_some(), in_ours)?;
    // Write beside the output and rename, so a failed conversion leaves no
    // half-written file under the output's name.
    let tmp = output.with_file_name(format!(
        ".{}.tmp.{}",
        output
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let io = |e: io::Error| err(e.to_string());
    let result = (|| {
        let f = fs::File::create(&tmp).map_err(io)?;
        let mut w = OpWriter::new(BufWriter::with_capacity(1 << 20, f), format);
        for op in reader.by_ref() {
            let op = op?;
            if let Some(why) = failed_cas_changes_meaning(in_ours, format, &op) {
                return Err(err(why));
            }
            w.write(&op).map_err(io)?;
        }
        let n = w.count();
        let f = w
            .finish()
            .map_err(io)?
            .into_inner()
            .map_err(|e| io(e.into_error()))?;
        f.sync_all().map_err(io)?;
        fs::rename(&tmp, output).map_err(io)?;
        Ok(n)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    let n = result?;
    for w in reader.warnings() {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "converted {n} ops: {} ({}) → {} ({format})",
        input.display(),
        reader.format(),
        output.display()
    );
    Ok(())
}

/// Why `op` cannot be converted from `from` to `to` without changing a
/// verdict: a failed `cas` did not happen in Jepsen's EDN (Knossos' reading)
/// but observed another value in the other formats (Porcupine's; see
/// `harness check --failed-ops`), so a conversion between the two
/// families would check differently. `None` when its meaning is kept.
fn failed_cas_changes_meaning(
    from: store::Format,
    to: store::Format,
    op: &store::Op,
) -> Option<String> {
    let edn = |f: store::Format| f == store::Format::Edn;
    if edn(from) == edn(to)
        || op.op_type != store::OpType::Fail
        || op.f.as_ref().is_none_or(|f| f.as_str() != "cas")
    {
        return None;
    }
    Some(format!(
        "op {}: a failed cas did not happen in {} but observed another value in {}, so the converted history could get another verdict; \
         not converted (check the original with --failed-ops dropped or observed instead)",
        op.index.0,
        if edn(from) {
            "EDN (Knossos' reading)"
        } else {
            from.name()
        },
        if edn(to) {
            "EDN (Knossos' reading)"
        } else {
            to.name()
        },
    ))
}

/// A streaming reader of one of our formats: `in_format` when it was
/// forced, else sniffed from the file (as `store::import::load` does).
fn open_reader(
    input: &Path,
    forced: bool,
    in_format: store::Format,
) -> Result<OpReader<store::format::Input>, FormatError> {
    if !forced {
        return OpReader::open(input);
    }
    let file = store::format::Input::open(input).map_err(|e| FormatError {
        file: Some(input.to_path_buf()),
        line: 0,
        column: None,
        op: Some("read"),
        reason: e.to_string(),
    })?;
    Ok(OpReader::new(file, in_format, Some(input.to_path_buf())))
}

/// A conversion from or to another checker's format: the whole history is
/// read (peer formats group micro-ops by transaction id anywhere in a file).
fn convert_peer(
    input: &Path,
    output: &Path,
    in_format: FileFormat,
    out_format: FileFormat,
) -> Result<(), FormatError> {
    let loaded = store::import::load(input, Some(in_format))?;
    write_loaded(input, output, loaded, out_format)
}

/// Writes a history read whole (a peer format, or a stream) to `output`.
fn write_loaded(
    input: &Path,
    output: &Path,
    loaded: store::import::Loaded,
    out_format: FileFormat,
) -> Result<(), FormatError> {
    let in_format = loaded.format;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let h = loaded.history;
    let n = h.len();
    match out_format {
        FileFormat::Peer(p) => {
            for w in store::import::write_peer(output, &h, p)? {
                eprintln!("warning: {w}");
            }
        }
        FileFormat::Ours(f) => {
            if !h.has_realtime_order() {
                eprintln!(
                    "warning: {} records session order only; {} lays its transactions out one after another, \
                     which strict models (strict-serializable, the default) would read as real-time order: \
                     check the output with -c serializable (or check {} itself)",
                    input.display(),
                    output.display(),
                    input.display()
                );
            }
            let initial = h.initial_value().cloned();
            let mut ops = h.into_ops();
            if let FileFormat::Ours(from) = in_format
                && let Some(why) = ops
                    .iter()
                    .find_map(|op| failed_cas_changes_meaning(from, f, op))
            {
                return Err(FormatError {
                    file: Some(output.to_path_buf()),
                    line: 0,
                    column: None,
                    op: None,
                    reason: why,
                });
            }
            if let Some(v) = initial {
                // Our formats name no initial value: its reads become nil.
                store::import::initial_reads_to_nil(&mut ops, &v);
            }
            store::format::write_path(output, &ops, f)?;
        }
    }
    eprintln!(
        "converted {n} ops: {} ({in_format}) → {} ({out_format})",
        input.display(),
        output.display()
    );
    Ok(())
}

/// What `stats` reports.
#[derive(Debug, Default, serde::Serialize)]
struct Stats {
    file: String,
    format: String,
    ops: u64,
    by_type: BTreeMap<String, u64>,
    /// f → type → count; `(none)` when an op has no f.
    by_f: BTreeMap<String, BTreeMap<String, u64>>,
    client_processes: u64,
    nemesis_ops: u64,
    ops_without_process: u64,
    micro_ops: BTreeMap<String, u64>,
    keys: u64,
    first_time_ns: Option<i64>,
    last_time_ns: Option<i64>,
    unmatched_invocations: u64,
    unmatched_examples: Vec<u64>,
    processes_reused_after_info: u64,
    warnings: Vec<String>,
}

/// `Stats` built one op at a time: what it keeps besides the counts is the
/// set of client processes and of keys, never the ops.
#[derive(Default)]
struct Tally {
    s: Stats,
    procs: HashSet<ProcessId>,
    keys: HashSet<Key>,
}

impl Tally {
    fn add(&mut self, op: &Op) {
        let s = &mut self.s;
        s.ops += 1;
        *s.by_type.entry(op.op_type.as_str().into()).or_default() += 1;
        let f = op.f.as_ref().map_or("(none)", |f| f.as_str());
        *s.by_f
            .entry(f.into())
            .or_default()
            .entry(op.op_type.as_str().into())
            .or_default() += 1;
        match op.process {
            Some(Process::Client(p)) => {
                self.procs.insert(p);
            }
            Some(Process::Nemesis) => s.nemesis_ops += 1,
            None => s.ops_without_process += 1,
        }
        if let OpValue::Txn(m) = &op.value {
            for mop in m {
                *s.micro_ops.entry(mop.f_name().into()).or_default() += 1;
                if !self.keys.contains(mop.key()) {
                    self.keys.insert(mop.key().clone());
                }
            }
        }
        if let Some(t) = op.time_ns {
            s.first_time_ns = Some(s.first_time_ns.map_or(t, |x| x.min(t)));
            s.last_time_ns = Some(s.last_time_ns.map_or(t, |x| x.max(t)));
        }
    }

    /// The summary, given the history's warnings (unmatched invocations
    /// and reused processes are counted).
    fn finish(self, file: &Path, format: FileFormat, history: &[HistoryWarning]) -> Stats {
        let mut s = self.s;
        s.file = file.display().to_string();
        s.format = format.name().to_string();
        s.client_processes = self.procs.len() as u64;
        s.keys = self.keys.len() as u64;
        for w in history {
            match w {
                HistoryWarning::Unmatched { index } => {
                    s.unmatched_invocations += 1;
                    if s.unmatched_examples.len() < 10 {
                        s.unmatched_examples.push(index.0);
                    }
                }
                HistoryWarning::CompletionWithoutInvocation { .. }
                | HistoryWarning::MoreCompletionsWithoutInvocation { .. } => {
                    s.warnings.push(format!("{}: {w}", file.display()));
                }
                HistoryWarning::ProcessReusedAfterInfo { .. } => {
                    s.processes_reused_after_info += 1;
                    // Listing every unmatched op would drown the output.
                    s.warnings.push(format!("{}: {w}", file.display()));
                }
            }
        }
        s
    }
}

/// The history's error as `load_history` reports it.
fn history_error(file: &Path, e: &store::HistoryError) -> FormatError {
    FormatError {
        file: Some(file.to_path_buf()),
        line: 0,
        column: None,
        op: None,
        reason: e.to_string(),
    }
}

/// Stats of one of our formats in one pass: memory is the reader's buffer,
/// the open invocations, and the process and key sets.
fn stream_stats(
    file: &Path,
    format: FileFormat,
    forced: bool,
    in_format: store::Format,
) -> Result<Stats, FormatError> {
    let mut reader = open_reader(file, forced, in_format)?;
    let mut pairing = StreamPairing::default();
    let mut broken = None;
    let mut tally = Tally::default();
    for op in reader.by_ref() {
        let op = op?;
        tally.add(&op);
        // A malformed line later in the file is reported first, as when
        // the whole file was read before pairing.
        if broken.is_none()
            && let Err(e) = pairing.push(&op)
        {
            broken = Some(e);
        }
    }
    if let Some(e) = broken {
        return Err(history_error(file, &e));
    }
    tally.s.warnings = reader.into_warnings();
    Ok(tally.finish(file, format, &pairing.finish()))
}

/// Stats of another checker's format, read whole (its transactions are
/// grouped by id anywhere in the file).
fn loaded_stats(file: &Path, forced: Option<FileFormat>) -> Result<Stats, FormatError> {
    Ok(tally_loaded(file, store::import::load(file, forced)?))
}

/// Stats of a history read whole.
fn tally_loaded(file: &Path, loaded: store::import::Loaded) -> Stats {
    let h = loaded.history;
    // The history's own warnings are counted by `Tally::finish`; keep the
    // reader's.
    let hist_warnings: Vec<String> = h
        .warnings()
        .iter()
        .map(|w| format!("{}: {w}", file.display()))
        .collect();
    let mut tally = Tally::default();
    for op in h.iter_ops() {
        tally.add(&op);
    }
    tally.s.warnings = loaded
        .warnings
        .into_iter()
        .filter(|w| !hist_warnings.contains(w))
        .collect();
    tally.finish(file, loaded.format, h.warnings())
}

fn stats(file: &Path, json: bool, forced: Option<FileFormat>) -> Result<(), FormatError> {
    let s = if crate::history_input::is_stream(file) {
        // `-`, a pipe or a FIFO: read once, whole, sniffed from a buffer.
        let loaded = crate::history_input::read_stream(file, forced)?;
        tally_loaded(crate::history_input::stream_name(file), loaded)
    } else {
        let format = match forced {
            Some(f) => f,
            None => FileFormat::detect(file)?,
        };
        match format {
            FileFormat::Ours(f) => stream_stats(file, format, forced.is_some(), f)?,
            FileFormat::Peer(_) => loaded_stats(file, forced)?,
        }
    };
    let out = io::stdout();
    let mut out = out.lock();
    let r = if json {
        serde_json::to_writer_pretty(&mut out, &s)
            .map_err(io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        print_text(&mut out, &s)
    };
    r.map_err(|e| FormatError {
        file: None,
        line: 0,
        column: None,
        op: None,
        reason: format!("writing to stdout: {e}"),
    })
}

fn print_text(out: &mut impl Write, s: &Stats) -> io::Result<()> {
    writeln!(out, "{} ({})", s.file, s.format)?;
    writeln!(out, "ops: {}", s.ops)?;
    let types: Vec<String> = ["invoke", "ok", "fail", "info"]
        .iter()
        .map(|t| format!("{t} {}", s.by_type.get(*t).copied().unwrap_or(0)))
        .collect();
    writeln!(out, "  by type: {}", types.join(", "))?;
    writeln!(out, "  by f:")?;
    for (f, by_type) in &s.by_f {
        let parts: Vec<String> = by_type.iter().map(|(t, n)| format!("{t} {n}")).collect();
        writeln!(out, "    {f}: {}", parts.join(", "))?;
    }
    writeln!(
        out,
        "processes: {} client, {} nemesis ops, {} ops without a process",
        s.client_processes, s.nemesis_ops, s.ops_without_process
    )?;
    let mops: Vec<String> = s
        .micro_ops
        .iter()
        .map(|(f, n)| format!("{f} {n}"))
        .collect();
    writeln!(
        out,
        "micro-ops: {}",
        if mops.is_empty() {
            "none".into()
        } else {
            mops.join(", ")
        }
    )?;
    writeln!(out, "keys: {}", s.keys)?;
    match (s.first_time_ns, s.last_time_ns) {
        (Some(a), Some(b)) => writeln!(
            out,
            "time: {:.3} s … {:.3} s (span {:.3} s)",
            a as f64 / 1e9,
            b as f64 / 1e9,
            (b - a) as f64 / 1e9
        )?,
        _ => writeln!(out, "time: none recorded")?,
    }
    write!(out, "unmatched invocations: {}", s.unmatched_invocations)?;
    if !s.unmatched_examples.is_empty() {
        let ex: Vec<String> = s.unmatched_examples.iter().map(u64::to_string).collect();
        write!(out, " (ops {}", ex.join(", "))?;
        if s.unmatched_invocations > s.unmatched_examples.len() as u64 {
            write!(out, ", …")?;
        }
        write!(out, ")")?;
    }
    writeln!(out)?;
    if s.processes_reused_after_info > 0 {
        writeln!(
            out,
            "processes reused after info: {}",
            s.processes_reused_after_info
        )?;
    }
    for w in &s.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}
