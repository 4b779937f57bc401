//! The README's commands, run as written: every line of a ```sh block that
//! follows a `<!-- readme-test -->` line is run with the built `harness`,
//! in order, in one fresh directory that holds the repository's `suites`,
//! `scenarios`, `store` and `testdata` (as symlinks), so `runs/latest` of one
//! command is there for the next. Each must end with a verdict (exit 0, 1
//! or 2), and every word in backticks in its comment must appear in what it
//! printed: the README says what a command prints, and this holds it to it.
//!
//! About 60 s in a debug build (a 5 s SQLite run, a 10 s simulator run, a
//! soak of three 5 s runs, a reproduction).

#![allow(clippy::panic)]

use std::path::Path;
use std::process::Command;

/// One README command: its words (after `harness`) and the texts its
/// comment promises.
#[derive(Debug, PartialEq)]
struct Cmd {
    line: String,
    args: Vec<String>,
    promises: Vec<String>,
}

/// The commands of the marked blocks of `readme`, in order.
fn commands(readme: &str) -> Vec<Cmd> {
    let mut out = Vec::new();
    let mut marked = false;
    let mut inside = false;
    for line in readme.lines() {
        let t = line.trim();
        if !inside && t == "<!-- readme-test -->" {
            marked = true;
            continue;
        }
        if t.starts_with("```") {
            if inside {
                inside = false;
                marked = false;
            } else if marked {
                inside = true;
            }
            continue;
        }
        if !inside || t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (cmd, comment) = t.split_once(" #").unwrap_or((t, ""));
        let mut words = cmd.split_whitespace().map(str::to_string);
        let first = words.next().unwrap_or_default();
        assert_eq!(first, "harness", "a README test command runs harness: {t}");
        let promises = comment
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        out.push(Cmd {
            line: t.to_string(),
            args: words.collect(),
            promises,
        });
    }
    out
}

#[test]
fn marked_blocks_are_parsed_with_their_promises() {
    let md = "text\n```sh\nharness skipped\n```\n<!-- readme-test -->\n```sh\n\
              harness run --db sim   # ends with `valid`\n# a comment line\nharness check f.json\n```\n";
    let cmds = commands(md);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    assert_eq!(cmds[0].args, ["run", "--db", "sim"]);
    assert_eq!(cmds[0].promises, ["valid"]);
    assert!(cmds[1].promises.is_empty());
}

#[test]
fn the_readmes_commands_run_as_written_and_print_what_it_says() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md"))
        .unwrap_or_else(|e| panic!("README.md: {e}"));
    let cmds = commands(&readme);
    assert!(
        cmds.len() >= 6,
        "each use in the README has a tested command: {cmds:?}"
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for d in ["suites", "scenarios", "store", "testdata"] {
        std::os::unix::fs::symlink(repo.join(d), dir.path().join(d))
            .unwrap_or_else(|e| panic!("linking {d}: {e}"));
    }
    for c in &cmds {
        let out = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(&c.args)
            .current_dir(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", c.line));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let code = out.status.code().unwrap_or(-1);
        assert!(
            (0..=2).contains(&code),
            "README command `{}` exited {code}:\n{text}",
            c.line
        );
        for p in &c.promises {
            assert!(
                text.contains(p.as_str()),
                "README command `{}` promises `{p}`; it printed:\n{text}",
                c.line
            );
        }
    }
}
