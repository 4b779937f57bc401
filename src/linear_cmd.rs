//! `harness check` of a read/write/cas register history (or Porcupine's kv
//! get/put/append history): the linearizability checker
//! (`checker::linear`), its verdict, the explanation of each failing key,
//! and with `--directory` `linear.txt`, `linear.json` and `linear.html`
//! (the per-key timelines).

use anyhow::Context;
use checker::Budget;
use checker::linear::model::Model;
use checker::linear::{FailedCas, LinearOptions, LinearResult, report};
use std::path::Path;
use std::time::Instant;
use store::{History, OpType, Process};

/// Which linearizability model a history needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinearKind {
    /// read / write / cas registers (Jepsen's `register`, Knossos, etcd logs).
    Register,
    /// Porcupine's kv: get / put / append on string keys.
    Kv,
}

/// The kind of a history whose client ops are register or kv ops (by `f`),
/// `None` for transaction histories.
pub fn detect(history: &History) -> Option<LinearKind> {
    let mut kind = None;
    for pos in 0..history.len() {
        if history.process(pos) == Some(Process::Nemesis) || history.op_type(pos) != OpType::Invoke
        {
            continue;
        }
        let k = match history.f(pos).map(|f| f.as_str()) {
            Some("read" | "write" | "cas") => LinearKind::Register,
            Some("get" | "put" | "append") => LinearKind::Kv,
            _ => return None,
        };
        if kind.is_some_and(|x| x != k) {
            return None;
        }
        kind = Some(k);
    }
    kind
}

/// What the CLI passes in.
pub struct LinearArgs<'a> {
    /// The history's path (for messages).
    pub path: &'a Path,
    /// JSON on stdout instead of text.
    pub json: bool,
    /// Where to write linear.txt / .json / .html.
    pub directory: Option<&'a Path>,
    /// Time the search may take.
    pub timeout: std::time::Duration,
    /// Knossos' reading of failed cas ops.
    pub drop_failed_cas: bool,
    /// Search every key even after one is not linearizable (`--all-anomalies`).
    pub all_keys: bool,
}

/// Checks and reports; returns the exit code (0 valid, 1 invalid, 2 unknown).
///
/// # Errors
/// A history whose ops are not of the kind, or an unwritable directory.
pub fn run(history: &History, kind: LinearKind, args: &LinearArgs<'_>) -> anyhow::Result<u8> {
    let deadline = Instant::now() + args.timeout;
    let budget = Budget::until(Box::new(move || Instant::now() >= deadline));
    let opts = LinearOptions {
        failed_cas: if args.drop_failed_cas {
            FailedCas::Dropped
        } else {
            FailedCas::Observed
        },
        all_keys: args.all_keys,
        ..LinearOptions::default()
    };
    let started = Instant::now();
    match kind {
        LinearKind::Register => {
            let model = checker::linear::model::CasRegister::default();
            let r = checker::linear::check_register(history, &opts, &budget)
                .with_context(|| format!("checking {}", args.path.display()))?;
            output(&model, &r, args, started, opts.failed_cas)
        }
        LinearKind::Kv => {
            let r = checker::linear::check_kv(history, &opts, &budget)
                .with_context(|| format!("checking {}", args.path.display()))?;
            output(
                &checker::linear::model::KvString,
                &r,
                args,
                started,
                opts.failed_cas,
            )
        }
    }
}

fn output<M: Model>(
    model: &M,
    r: &LinearResult<M>,
    args: &LinearArgs<'_>,
    started: Instant,
    failed_cas: FailedCas,
) -> anyhow::Result<u8> {
    let elapsed = started.elapsed();
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let json = report::to_json(model, r);
    if args.json {
        engine::say!("{}", serde_json::to_string(&json).unwrap_or_default());
    } else {
        engine::say_raw!("{}", report::render_text(model, r));
        let unknown = r
            .keys
            .iter()
            .filter(|k| k.searched.verdict == checker::linear::search::Verdict::Unknown)
            .count()
            .saturating_sub(r.skipped);
        engine::say!(
            "{}: linearizability of {} op(s) over {} key(s) (failed cas: {}) in {:.3} s; {} key(s) not linearizable{}{}",
            match r.valid {
                checker::Valid::True => "valid",
                checker::Valid::False => "INVALID",
                checker::Valid::Unknown => "unknown",
            },
            r.op_count(),
            r.keys.len(),
            failed_cas.name(),
            elapsed.as_secs_f64(),
            r.failures().count(),
            if unknown > 0 {
                format!(", {unknown} undecided within the time limit")
            } else {
                String::new()
            },
            if r.skipped > 0 {
                format!(
                    ", {} not searched to the end after the first failure (--all-anomalies searches every key)",
                    r.skipped
                )
            } else {
                String::new()
            }
        );
    }
    if let Some(dir) = args.directory {
        write_dir(dir, model, r, &json, args.path)
            .with_context(|| format!("writing {}", dir.display()))?;
    }
    Ok(r.valid.exit_code())
}

/// `linear.txt`, `linear.json`, `linear.html` into `dir` (created).
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_dir<M: Model>(
    dir: &Path,
    model: &M,
    r: &LinearResult<M>,
    json: &serde_json::Value,
    source: &Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("linear.txt"), report::render_text(model, r))?;
    std::fs::write(
        dir.join("linear.json"),
        serde_json::to_string_pretty(json).unwrap_or_default(),
    )?;
    std::fs::write(
        dir.join("linear.html"),
        report::render_html(model, r, &format!("linearizability: {}", source.display())),
    )?;
    Ok(())
}
