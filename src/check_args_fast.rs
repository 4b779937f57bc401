//! `harness check FILE [-c MODELS]… [-m WORKLOAD] [--format F]` read
//! without clap: building clap's command tree and matching against it was
//! a sixth of a small check's instructions (BENCHMARKS.md, "Start-up and
//! small files"), more than the check of a 200-event history itself.
//!
//! Key decision: this path only ever accepts; it never reports. Anything
//! it does not know for certain — help, `--`, a flag outside the few above,
//! a flag given twice that clap refuses twice, a value that does not parse,
//! a second file, a value that looks like a flag, arguments that are not
//! UTF-8 — returns `None`, and clap parses the whole command line as
//! before, so every error, suggestion and help text is clap's. What it
//! accepts it turns into the same [`CheckArgs`] clap makes (the test below
//! compares the two on every form), defaults taken from the same constants.

use crate::check_cmd::{CheckArgs, DEFAULT_CYCLE_SEARCH_TIMEOUT, DEFAULT_WORKLOAD, Format};
use checker::model::ConsistencyModel;
use std::ffi::OsString;

/// The arguments after the program name, `check` first, as [`CheckArgs`];
/// `None` when clap must parse them (see the module docs).
pub fn parse(args: &[OsString]) -> Option<CheckArgs> {
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    let (&first, rest) = args.split_first()?;
    if first != "check" {
        return None;
    }
    let mut history = None;
    let mut models: Vec<ConsistencyModel> = Vec::new();
    let mut workload = None;
    let mut format = None;
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i];
        i += 1;
        if !arg.starts_with('-') {
            if history.replace(arg).is_some() {
                return None;
            }
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg, None),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                let v = *rest.get(i)?;
                i += 1;
                v
            }
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        match flag {
            "-c" | "--consistency-models" | "--consistency-model" => {
                for m in value.split(',') {
                    models.push(m.parse().ok()?);
                }
            }
            "-m" | "--workload" | "--model" if workload.is_none() => {
                workload = Some(value.parse().ok()?);
            }
            "--format" if format.is_none() => {
                format = Some(match value {
                    "text" => Format::Text,
                    "json" => Format::Json,
                    "edn" => Format::Edn,
                    _ => return None,
                });
            }
            _ => return None,
        }
    }
    Some(CheckArgs {
        history: history?.into(),
        history_format: None,
        workload: match workload {
            Some(w) => w,
            None => DEFAULT_WORKLOAD.parse().ok()?,
        },
        consistency_models: models,
        anomalies: Vec::new(),
        wfr_keys: false,
        sequential_keys: false,
        linearizable_keys: false,
        cycle_search_timeout: humantime::parse_duration(DEFAULT_CYCLE_SEARCH_TIMEOUT).ok()?,
        failed_ops: None,
        memory: None,
        drop_failed_cas: false,
        format: format.unwrap_or(Format::Text),
        directory: None,
        witness: None,
        all_anomalies: false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use clap::Parser;

    fn argv(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    /// What the whole CLI makes of `line`, as text (`Err` for its error).
    fn by_clap(line: &str) -> Result<String, String> {
        let mut full = vec![OsString::from("harness")];
        full.extend(argv(line));
        crate::Cli::try_parse_from(full)
            .map(|c| format!("{:?}", c.command))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn what_it_accepts_clap_reads_the_same() {
        for line in [
            "check h.txt",
            "check h.txt -c causal",
            "check -c causal h.txt",
            "check h.txt -c serializable,read-committed",
            "check h.txt -c serializable -c read-committed --consistency-model causal",
            "check h.txt --consistency-models=causal-cerone",
            "check h.txt -m rw-register",
            "check h.txt --workload list-append -c strict-serializable",
            "check h.txt --model=auto",
            "check h.txt --format json",
            "check h.txt --format=edn -c causal",
            "check dir/with.dots/h.jsonl --format text",
        ] {
            let fast = parse(&argv(line)).unwrap_or_else(|| panic!("not accepted: {line}"));
            let fast = format!("{:?}", crate::Command::Check(fast));
            assert_eq!(Ok(fast), by_clap(line), "{line}");
        }
    }

    #[test]
    fn what_it_does_not_know_is_left_to_clap() {
        for line in [
            "check",
            "check --help",
            "check -h",
            "check h.txt --help",
            "check h.txt --version",
            "check h.txt -c",
            "check h.txt -c no-such-model",
            "check h.txt -c causal,",
            "check h.txt -c ,causal",
            "check h.txt -c=causal",
            "check h.txt -ccausal",
            "check h.txt -m no-such-workload",
            "check h.txt -m rw-register -m list-append",
            "check h.txt --format yaml",
            "check h.txt --format json --format text",
            "check h.txt other.txt",
            "check h.txt --",
            "check -- h.txt",
            "check - -c causal",
            "check h.txt --directory out",
            "check h.txt --witness",
            "check h.txt --all-anomalies",
            "check h.txt --consistency-models",
            "check h.txt --consistency-models=",
            "check h.txt -c -m",
            "check h.txt --no-such-flag",
            "history stats h.txt",
            "run --db sim",
        ] {
            assert!(parse(&argv(line)).is_none(), "accepted: {line}");
        }
        // Some of those are clap's errors, others its valid forms: either
        // way clap, not this path, answers them.
        assert!(by_clap("check h.txt -c no-such-model").is_err());
        assert!(by_clap("check h.txt --directory out").is_ok());
    }

    #[test]
    fn arguments_that_are_not_utf8_are_left_to_clap() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![
            OsString::from("check"),
            OsString::from_vec(vec![b'h', 0xff, b'.', b't']),
        ];
        assert!(parse(&args).is_none());
    }
}
