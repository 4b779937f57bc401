//! `harness soak merge SHARD…`: the shards of one suite (their soak
//! directories, `summary.json` files, or stores holding them) combined into
//! the `summary.json`, `junit.xml` and table the unsharded soak would have
//! written — the same functions write them, from the records read back
//! ([`engine::report::shard`]).

use anyhow::Context as _;
use engine::exit;
use engine::report::shard::{ShardSummary, merge};
use engine::report::soak::{junit_xml, summary_json, table};
use std::path::{Path, PathBuf};

/// `harness soak merge` flags.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Shard results: soak directories (with summary.json), summary.json
    /// files, or stores (every shard summary under <store>/soak/).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Where to write summary.json and junit.xml (default:
    /// <first store>/soak/<suite>/<earliest start>-merged/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// With stores: only shards of this night (`soak --night`).
    #[arg(long)]
    pub night: Option<String>,
}

/// The shard summaries under `p`: the file itself, `p/summary.json`, or
/// every `soak/<suite>/<dir>/summary.json` of a store whose summary names
/// a shard.
fn summaries(p: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if p.is_file() {
        return Ok(vec![p.to_path_buf()]);
    }
    if p.join("summary.json").is_file() {
        return Ok(vec![p.join("summary.json")]);
    }
    let soak = p.join("soak");
    anyhow::ensure!(
        soak.is_dir(),
        "{}: neither a summary.json, a soak directory nor a store with soak/",
        p.display()
    );
    let mut found = Vec::new();
    for suite in
        std::fs::read_dir(&soak).with_context(|| format!("cannot read {}", soak.display()))?
    {
        let suite = suite?.path();
        let Ok(rd) = std::fs::read_dir(&suite) else {
            continue;
        };
        for d in rd.flatten() {
            let name = d.file_name().to_string_lossy().to_string();
            let s = d.path().join("summary.json");
            if name.contains("-shard-") && s.is_file() {
                found.push(s);
            }
        }
    }
    found.sort();
    anyhow::ensure!(
        !found.is_empty(),
        "{}: no shard summaries under soak/",
        p.display()
    );
    Ok(found)
}

fn read(path: &Path) -> anyhow::Result<(serde_json::Value, ShardSummary)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    let s = ShardSummary::parse(&v).with_context(|| format!("{}", path.display()))?;
    Ok((v, s))
}

/// Runs `harness soak merge`. Exit codes as `soak`'s: 0 every run as
/// expected, 1 some not, 2 a shard was interrupted, 3 bad input.
///
/// # Errors
/// A summary cannot be read, or the shards do not make one suite.
pub fn run(args: MergeArgs) -> anyhow::Result<u8> {
    let mut parts = Vec::new();
    let mut harness = serde_json::Value::Null;
    // `soak --triage` results by run id (not part of a record).
    let mut triages = std::collections::HashMap::new();
    for p in &args.shards {
        for f in summaries(p)? {
            let (v, s) = read(&f)?;
            if args
                .night
                .as_ref()
                .is_some_and(|n| s.night.as_ref() != Some(n))
            {
                continue;
            }
            harness = v["harness"].clone();
            for r in v["runs"].as_array().into_iter().flatten() {
                if let (Some(id), t) = (r["id"].as_u64(), &r["triage"])
                    && !t.is_null()
                {
                    triages.insert(id, t.clone());
                }
            }
            parts.push((f.display().to_string(), s));
        }
    }
    let all = merge(parts)?;
    let out = match &args.out {
        Some(o) => o.clone(),
        None => {
            let first = &args.shards[0];
            let store = if first.join("soak").is_dir() {
                first.clone()
            } else {
                // <store>/soak/<suite>/<dir>[/summary.json]
                let dir = if first.is_file() {
                    first.parent().unwrap_or(first)
                } else {
                    first
                };
                dir.ancestors().nth(3).unwrap_or(dir).to_path_buf()
            };
            let ms = all
                .started
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            store
                .join("soak")
                .join(&all.suite.name)
                .join(format!("{}-merged", store::run::timestamp_name(ms)))
        }
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    // The build is the shards' (checked equal), not this binary's.
    let build = engine::run::Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("HARNESS_GIT_COMMIT"),
    };
    let mut summary = summary_json(
        &all.suite,
        &all.suite_file,
        &all.records,
        &all.not_run,
        all.started,
        all.ended,
        all.interrupted,
        build,
    );
    summary["harness"] = harness;
    for r in summary["runs"].as_array_mut().into_iter().flatten() {
        if let Some(t) = r["id"].as_u64().and_then(|id| triages.get(&id)) {
            r["triage"] = t.clone();
        }
    }
    if let Some(n) = &all.night {
        summary["night"] = n.clone().into();
    }
    let summary_path = out.join("summary.json");
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .with_context(|| format!("writing {}", summary_path.display()))?;
    let junit_path = out.join("junit.xml");
    std::fs::write(
        &junit_path,
        junit_xml(&all.suite, &all.records, &all.not_run, all.started),
    )
    .with_context(|| format!("writing {}", junit_path.display()))?;
    engine::say_raw!("{}", table(&all.records, &all.not_run));
    engine::say_raw!("{}", super::triage::lines(&summary));
    engine::say!("summary: {}", summary_path.display());
    engine::say!("junit:   {}", junit_path.display());
    Ok(if all.interrupted {
        exit::UNKNOWN
    } else if all.records.iter().any(|r| !r.as_expected()) {
        exit::INVALID
    } else {
        exit::VALID
    })
}
