//! `harness soak SUITE.toml`: many runs unattended, a clear outcome for
//! each, nothing hanging, memory flat.
//!
//! The suite file's format is `engine::suite_file`'s; all its runs are
//! checked against `harness run`'s own parser and validation
//! ([`checked_run_flags`]) before the first one starts. Each run is a
//! child process with a fresh seed (recorded in its `test.json`), its output in
//! `<store>/soak/<suite>/<time>/logs/`, and one of the outcomes of
//! [`Outcome`]. The suite goes on after any outcome; at the end (also after
//! Ctrl-C, which stops the current run cleanly) it writes `summary.json` and
//! `junit.xml` there and prints a table.
//!
//! Exit codes: 0 every run ended as expected, 1 some did not, 2 the suite
//! was interrupted, 3 a bad suite file.
//!
//! `--shard I/N` runs the runs of shard I of N (`engine::report::shard`: by a
//! hash of each run's cell key, with the unsharded suite's seeds), in
//! `<store>/soak/<suite>/<time>-shard-IofN/`; `harness soak merge` (in
//! `soak_cmd/merge.rs`) writes from the shards' summaries what the
//! unsharded soak would have written. A shard's exit codes are the suite's:
//! a shard whose runs found anomalies ran fine (exit 0 or 1), only 2 and 3
//! mean it could not run (see `docs/soak-on-n-nodes.md`). Each run directory
//! gets a `soak.json` ([`store::run::SoakTag`]) for the trends of `serve`.

mod merge;
mod triage;

use crate::run_cmd::checked_run_flags;
use anyhow::Context as _;
use engine::exit;
use engine::report::shard::{Shard, cell_keys};
use engine::report::soak::{
    Planned, Record, expect_names, junit_xml, log_tail, summary_json, table,
};
use engine::suite::{self, ChildSpec, Outcome, run_child, run_dirs};
use engine::suite_file;
use std::path::PathBuf;
use std::time::SystemTime;

/// `harness soak` flags.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SoakArgs {
    /// `merge`: combine shards.
    #[command(subcommand)]
    pub command: Option<SoakCommand>,
    /// The suite file (TOML).
    #[arg(required = true)]
    pub suite: Option<PathBuf>,
    /// Store root: runs go to <store>/runs/<test>/…, the suite's summary to
    /// <store>/soak/<suite>/<time>/.
    #[arg(long, default_value = ".")]
    pub store: PathBuf,
    /// Base seed (overrides the suite's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the runs the suite expands to and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only shard I of N (I from 1): a fixed share of the runs, by a
    /// hash of each run's cell key; `soak merge` combines the shards.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// The night these runs belong to on the trends page (default: the UTC
    /// date the soak started; give shards of one night the same value).
    #[arg(long)]
    pub night: Option<String>,
    /// The commit (or version) of the database under test, kept with each
    /// run for the trends.
    #[arg(long)]
    pub db_commit: Option<String>,
    /// Re-run each run that did not end as expected K times with its seed
    /// and K times with fresh seeds, and record how often it reproduced.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub triage: u32,
}

/// `harness soak` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum SoakCommand {
    /// Combine the summaries of the shards of one suite into the summary.json,
    /// junit.xml and table the unsharded soak would have written.
    Merge(merge::MergeArgs),
}

/// Runs `harness soak`.
///
/// # Errors
/// The suite file cannot be read or is invalid (exit 3), or the soak
/// directory cannot be written.
pub fn run(mut args: SoakArgs) -> anyhow::Result<u8> {
    let suite_path = match (args.command.take(), &args.suite) {
        (Some(SoakCommand::Merge(m)), _) => return merge::run(m),
        (None, Some(p)) => p.clone(),
        (None, None) => anyhow::bail!("no suite file given"),
    };
    let text = std::fs::read_to_string(&suite_path)
        .with_context(|| format!("cannot read {}", suite_path.display()))?;
    let mut suite = suite_file::parse(&suite_path, &text, &checked_run_flags)
        .with_context(|| format!("{}", suite_path.display()))?;
    if args.seed.is_some() {
        suite.seed = args.seed;
    }
    // Runs of other shards are not this soak's: not run, not "not run".
    let keys = cell_keys(&suite.runs);
    let mine: Vec<bool> = keys
        .iter()
        .map(|k| args.shard.is_none_or(|s| s.takes(k)))
        .collect();
    if suite.seed.is_none() && args.shard.is_some() {
        // Each shard would draw its own clock seed: fine, but say so.
        eprintln!("note: no base seed ([suite] seed or --seed): each shard's runs get fresh seeds");
    }
    if args.dry_run {
        for (r, _) in suite.runs.iter().zip(&mine).filter(|(_, m)| **m) {
            engine::say!(
                "{:>3}  {:<32} expect {:<16} harness run {}",
                r.id,
                r.test_name,
                expect_names(&r.expect),
                r.flags.join(" ")
            );
        }
        return Ok(exit::VALID);
    }
    let store = suite::prepare_store(&args.store)?;
    let started = SystemTime::now();
    let started_ms = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    // Named like run directories.
    let mut dir_name = store::run::timestamp_name(started_ms);
    if let Some(s) = args.shard {
        dir_name.push_str(&format!("-shard-{}", s.label()));
    }
    let soak_dir = store.join("soak").join(&suite.name).join(dir_name);
    let night = args.night.clone().unwrap_or_else(|| {
        humantime::format_rfc3339_seconds(started).to_string()[..10].to_string()
    });
    let logs = soak_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    suite::install_interrupt_flag();
    let total = mine.iter().filter(|m| **m).count();
    eprintln!(
        "soak {}: {total} runs; summary in {}",
        suite.name,
        soak_dir.display()
    );
    let mut records: Vec<Record> = Vec::new();
    let mut not_run: Vec<Planned> = Vec::new();
    let mut triages: Vec<Option<serde_json::Value>> = Vec::new();
    for (i, p) in suite.runs.iter().enumerate() {
        if !mine[i] {
            continue;
        }
        if suite::interrupted() {
            not_run.push(p.clone());
            continue;
        }
        let seed = suite::seed_for(suite.seed, i as u64);
        let mut flags = p.flags.clone();
        flags.extend([
            "--store".to_string(),
            store.display().to_string(),
            "--test-name".to_string(),
            p.test_name.clone(),
            "--seed".to_string(),
            seed.to_string(),
        ]);
        let log = logs.join(format!("{:03}-{}.log", p.id, p.test_name));
        let before = run_dirs(&store, &p.test_name);
        let end = run_child(&ChildSpec {
            flags: &flags,
            cwd: None,
            log: Some(&log),
            watchdog: Some(p.watchdog),
            grace: suite.grace,
            own_group: true,
        })?;
        if end.timed_out || end.signal.is_some() {
            // It may have died holding faults.
            suite::heal_nodes(&flags);
        }
        let run_dir = suite::new_run_dir(&before, &run_dirs(&store, &p.test_name));
        let facts = run_dir.as_deref().map(suite::run_facts).unwrap_or_default();
        let outcome = if end.timed_out {
            Outcome::TimedOut
        } else {
            end.code.map_or(Outcome::Crashed, |c| facts.outcome(c))
        };
        let detail = match outcome {
            Outcome::Crashed | Outcome::SetupFailed | Outcome::TimedOut => {
                Some(facts.error.clone().unwrap_or_else(|| log_tail(&log, 5)))
            }
            _ => None,
        };
        let rec = Record {
            planned: p.clone(),
            seed,
            outcome,
            end,
            run_dir,
            log,
            facts,
            detail,
            soak_rss_kb: suite::self_rss_kb(),
        };
        let triaged = if args.triage > 0 && !rec.as_expected() && !suite::interrupted() {
            let t = triage::triage(&rec, args.triage, &store, &logs, suite.grace)?;
            eprintln!("  triage: {}", t["summary"].as_str().unwrap_or_default());
            Some(t)
        } else {
            None
        };
        write_tag(
            &rec,
            &keys[i],
            &suite.name,
            &night,
            &args,
            &soak_dir,
            triaged.as_ref(),
        );
        triages.push(triaged);
        eprintln!(
            "[{}/{total}] {} seed {} → {}{} in {:.1} s",
            p.id,
            p.test_name,
            seed,
            outcome.name(),
            if rec.as_expected() {
                String::new()
            } else {
                format!(" (expected {})", expect_names(&p.expect))
            },
            rec.end.elapsed.as_secs_f64()
        );
        records.push(rec);
    }
    let interrupted = suite::interrupted();
    let ended = SystemTime::now();
    let build = engine::run::Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("HARNESS_GIT_COMMIT"),
    };
    let mut summary = summary_json(
        &suite,
        &suite_path,
        &records,
        &not_run,
        started,
        ended,
        suite::interrupted(),
        build,
    );
    summary["night"] = night.clone().into();
    for (r, t) in summary["runs"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&triages)
    {
        if let Some(t) = t {
            r["triage"] = t.clone();
        }
    }
    if let Some(s) = args.shard {
        summary["shard"] = serde_json::json!({"index": s.index, "count": s.count});
    }
    let summary_path = soak_dir.join("summary.json");
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .with_context(|| format!("writing {}", summary_path.display()))?;
    let junit_path = soak_dir.join("junit.xml");
    std::fs::write(&junit_path, junit_xml(&suite, &records, &not_run, started))
        .with_context(|| format!("writing {}", junit_path.display()))?;
    engine::say_raw!("{}", table(&records, &not_run));
    engine::say_raw!("{}", triage::lines(&summary));
    engine::say!("summary: {}", summary_path.display());
    engine::say!("junit:   {}", junit_path.display());
    let unexpected = records.iter().filter(|r| !r.as_expected()).count();
    Ok(if interrupted {
        eprintln!("suite interrupted: {} runs not run", not_run.len());
        exit::UNKNOWN
    } else if unexpected > 0 {
        exit::INVALID
    } else {
        exit::VALID
    })
}

/// Writes the run's `soak.json` (a warning if it cannot).
fn write_tag(
    rec: &Record,
    key: &str,
    suite: &str,
    night: &str,
    args: &SoakArgs,
    soak_dir: &std::path::Path,
    triage: Option<&serde_json::Value>,
) {
    let Some(dir) = &rec.run_dir else {
        return;
    };
    let lost_writes = store::RunDir::open(dir)
        .ok()
        .and_then(|r| store::run::RunResults::load(&r.results_path()).ok())
        .and_then(|r| r.extra.get("lost-writes").and_then(|l| l["count"].as_u64()));
    let tag = store::run::SoakTag {
        suite: suite.to_string(),
        cell: rec.planned.test_name.clone(),
        key: key.to_string(),
        night: night.to_string(),
        db_commit: args.db_commit.clone(),
        shard: args.shard.map(|s| format!("{}/{}", s.index, s.count)),
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: rec.seed,
        outcome: rec.outcome.name().to_string(),
        expected: rec
            .planned
            .expect
            .iter()
            .map(|o| o.name().to_string())
            .collect(),
        as_expected: rec.as_expected(),
        anomaly_types: rec.facts.anomaly_types.clone(),
        lost_writes,
        soak_dir: soak_dir.display().to_string(),
        triage: triage
            .and_then(|t| t["summary"].as_str())
            .map(str::to_string),
    };
    if let Err(e) = tag.save(&dir.join(store::run::SOAK_JSON)) {
        eprintln!("warning: {e}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use engine::report::soak::Suite;
    use engine::suite::{ChildEnd, RunFacts};
    use std::path::Path;
    use std::time::Duration;

    fn parse(text: &str) -> anyhow::Result<Suite> {
        suite_file::parse(Path::new("/x/nightly.toml"), text, &checked_run_flags)
    }

    #[test]
    fn a_matrix_expands_with_defaults_and_counts() {
        let s = parse(
            r#"
[suite]
seed = 9
[defaults]
time-limit = "2s"
[[test]]
name = "sim"
db = "sim"
expect = ["invalid", "unknown"]
count = 2
[test.matrix]
isolation = ["read-committed", "serializable"]
concurrency = [1, 4]
[[test]]
db = "sqlite"
"#,
        )
        .unwrap();
        assert_eq!(s.name, "nightly");
        assert_eq!(s.seed, Some(9));
        assert_eq!(s.runs.len(), 2 * 2 * 2 + 1);
        let names: Vec<&str> = s.runs.iter().map(|r| r.test_name.as_str()).collect();
        assert_eq!(names[0], "sim-1-read-committed");
        assert_eq!(names[1], "sim-1-read-committed");
        assert_eq!(names[7], "sim-4-serializable");
        assert_eq!(names[8], "test2");
        let f = &s.runs[0].flags;
        assert_eq!(suite::flag_value(f, "--time-limit"), Some("2s"));
        assert_eq!(suite::flag_value(f, "--isolation"), Some("read-committed"));
        assert_eq!(s.runs[0].expect, [Outcome::Invalid, Outcome::Unknown]);
        assert_eq!(s.runs[8].expect, [Outcome::Valid]);
        // 2 × 2 s + 10 min
        assert_eq!(s.runs[0].watchdog, Duration::from_secs(604));
        assert_eq!(
            s.runs.iter().map(|r| r.id).collect::<Vec<_>>(),
            (1..=9).collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_suites_name_the_problem() {
        let cases = [
            ("[[test]]\ndb = \"sim\"\ncolour = \"red\"\n", "--colour"),
            (
                "[[test]]\ndb = \"sim\"\nisolation = \"snapshott\"\n",
                "snapshott",
            ),
            (
                "[[test]]\ndb = \"sim\"\nexpect = \"passed\"\n",
                "unknown outcome \"passed\"",
            ),
            (
                "[[test]]\ndb = \"sim\"\nseed = 3\n",
                "\"seed\" is set by soak",
            ),
            ("[suite]\nname = \"x\"\n", "no [[test]] entries"),
            (
                "[[test]]\ndb = \"sim\"\ncount = 0\n",
                "count: expected an integer from 1 to 100000",
            ),
            (
                "[[test]]\ndb = \"sim\"\n[test.matrix]\nisolation = \"x\"\n",
                "matrix.isolation",
            ),
            ("[[test]\n", "line 1"),
            ("[tests]\n", "unknown top-level key \"tests\""),
        ];
        for (text, needle) in cases {
            let e = format!("{:#}", parse(text).unwrap_err());
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn junit_marks_unexpected_outcomes() {
        let s = parse("[[test]]\nname = \"a<b\"\ndb = \"sim\"\n").unwrap();
        let rec = |outcome| Record {
            planned: s.runs[0].clone(),
            seed: 1,
            outcome,
            end: ChildEnd {
                code: Some(0),
                signal: None,
                timed_out: false,
                interrupted: false,
                max_rss_kb: 0,
                elapsed: Duration::from_millis(1500),
            },
            run_dir: None,
            log: PathBuf::from("/l"),
            facts: RunFacts::default(),
            detail: Some("boom & bust".into()),
            soak_rss_kb: None,
        };
        let recs = [
            rec(Outcome::Valid),
            rec(Outcome::Invalid),
            rec(Outcome::SetupFailed),
        ];
        let x = junit_xml(&s, &recs, &s.runs[..1], SystemTime::UNIX_EPOCH);
        assert!(
            x.contains("tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\""),
            "{x}"
        );
        assert!(x.contains("<failure type=\"invalid\" message=\"invalid (expected valid)\">"));
        assert!(x.contains("<error type=\"setup-failed\""));
        assert!(x.contains("boom &amp; bust"));
        assert!(x.contains("classname=\"nightly.a&lt;b\""), "{x}");
        assert!(x.contains("<skipped"));
    }
}
