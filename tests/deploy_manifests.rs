//! `deploy/`: the Kubernetes Indexed Job and the GitHub Actions matrix that
//! run a soak suite as N shards. Always: the Job maps its completion index
//! to `--shard`, its N agrees in every place, and the suite it ships is a
//! valid suite whose N shards cover every run once (`soak --dry-run`); the
//! pods' and the merge's own scripts, run here as N processes, merge a
//! suite whole. In CI (`kubernetes-validate`, installed by .ci/run from
//! PyPI, bundles the Kubernetes OpenAPI schemas and needs no cluster): every
//! manifest validates against the schema, strictly, and a broken copy does
//! not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use run_common::harness;
use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The integer after `key:` on its line.
fn int_field(text: &str, key: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key}"));
    line.split(':').nth(1).unwrap().trim().parse().unwrap()
}

/// The block scalar under `nightly.toml: |`, dedented.
fn configmap_suite(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| !l.contains("nightly.toml: |"));
    lines.next().unwrap();
    lines
        .map(|l| l.strip_prefix("    ").unwrap_or(l.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_indexed_job_maps_its_index_to_shards_that_cover_the_suite() {
    let job = read(&deploy().join("kubernetes/soak-job.yaml"));
    assert!(job.contains("completionMode: Indexed"));
    assert!(
        job.contains("--shard \"$((JOB_COMPLETION_INDEX + 1))/$SHARDS\""),
        "index (from 0) → --shard I/N (from 1)"
    );
    let n = int_field(&job, "completions");
    assert_eq!(
        int_field(&job, "parallelism"),
        n,
        "one pod per shard at once"
    );
    let shards_env = job
        .split("name: SHARDS")
        .nth(1)
        .and_then(|rest| rest.lines().nth(1))
        .unwrap();
    assert_eq!(shards_env.trim(), format!("value: \"{n}\""));
    // Anomalies are a shard's result, not a failed pod.
    assert!(job.contains("if [ \"$rc\" -le 1 ]; then exit 0"));
    let merge = read(&deploy().join("kubernetes/merge-job.yaml"));
    assert!(merge.contains("harness soak merge /results/shard-*"));

    // The shipped suite parses, and its N shards hold every run once.
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("nightly.toml");
    std::fs::write(
        &suite,
        configmap_suite(&read(&deploy().join("kubernetes/suite-configmap.yaml"))),
    )
    .unwrap();
    let listed = |extra: &[String]| -> Vec<String> {
        let out = harness()
            .arg("soak")
            .arg(&suite)
            .arg("--dry-run")
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    let all = listed(&[]);
    assert!(all.len() >= 6, "{all:?}");
    let mut union = Vec::new();
    for i in 1..=n {
        union.extend(listed(&["--shard".into(), format!("{i}/{n}")]));
    }
    union.sort();
    assert_eq!(union, all);

    let gha = read(&deploy().join("github-actions/soak-matrix.yml"));
    assert!(gha.contains("--shard \"${{ matrix.shard }}/$SHARDS\""));
    assert!(gha.contains("harness soak merge store-*"));
    let shards: Vec<String> = (1..=4).map(|i| i.to_string()).collect();
    assert!(gha.contains(&format!("shard: [{}]", shards.join(", "))));
    assert!(gha.contains("SHARDS: 4"));
}

/// The block scalar after the line `- |` in `text` (the container's
/// script), dedented.
fn script(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "- |")
        .expect("a `- |` block");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(lines[at]);
    let body: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) > base)
        .copied()
        .collect();
    let cut = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap_or(0);
    body.iter()
        .map(|l| l.get(cut..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pods' and the merge Job's own shell scripts, run here as the Job
/// would run them (`JOB_COMPLETION_INDEX` 0..N−1 at once, then the merge),
/// on a simulator suite in place of the ConfigMap's: the index arithmetic,
/// the paths and the exit-code mapping work, and the merged summary holds
/// every run once.
#[test]
fn the_job_scripts_run_a_suite_as_n_pods_and_merge_it() {
    let job = read(&deploy().join("kubernetes/soak-job.yaml"));
    let merge = read(&deploy().join("kubernetes/merge-job.yaml"));
    let n = int_field(&job, "completions");
    let tmp = tempfile::tempdir().unwrap();
    let (suite_dir, results) = (tmp.path().join("suite"), tmp.path().join("results"));
    std::fs::create_dir_all(&suite_dir).unwrap();
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(
        suite_dir.join("nightly.toml"),
        "[suite]\nname = \"nightly\"\nseed = 5\n[defaults]\ndb = \"sim\"\nops = 200\n\
         [[test]]\nname = \"sim\"\n[test.matrix]\nconcurrency = [1, 2, 3, 4]\n\
         [[test]]\nname = \"bug\"\nsim-bug = \"lost-update\"\nexpect = \"valid\"\n",
    )
    .unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_harness"), bin.join("harness")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let localize = |s: &str| {
        s.replace("/suite/", &format!("{}/", suite_dir.display()))
            .replace("/results", &results.display().to_string())
    };
    let pod = localize(&script(&job));
    let pods: Vec<_> = (0..n)
        .map(|k| {
            Command::new("sh")
                .arg("-c")
                .arg(&pod)
                .env("PATH", &path)
                .env("JOB_COMPLETION_INDEX", k.to_string())
                .env("SHARDS", n.to_string())
                .env("NIGHT", "2026-12-06")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let pods: Vec<_> = pods
        .into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect();
    for (k, out) in pods.iter().enumerate() {
        assert_eq!(
            out.status.code(),
            Some(0),
            "pod {k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            results.join(format!("shard-{k}/soak/nightly")).is_dir(),
            "pod {k}"
        );
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(localize(&script(&merge)))
        .env("PATH", &path)
        .env("NIGHT", "2026-12-06")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "merge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(results.join("merged/2026-12-06/summary.json")).unwrap(),
    )
    .unwrap();
    let ids: Vec<u64> = summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    // The unexpected run is a result (pods and merge exit 0), not lost.
    assert_eq!(summary["unexpected"], 1);
}

fn validate(files: &[PathBuf]) -> std::process::Output {
    Command::new("kubernetes-validate")
        .arg("--strict")
        .args(files)
        .output()
        .expect("kubernetes-validate (pip install kubernetes-validate; .ci/run does)")
}

#[test]
#[ignore = "needs kubernetes-validate from PyPI; .ci/run installs it and runs this"]
fn the_manifests_validate_against_the_kubernetes_schema() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy().join("kubernetes"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    let out = validate(&files);
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{said}");
    assert!(out.status.success(), "{said}");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            said.lines()
                .any(|l| l.contains(&name) && l.contains("passed")),
            "{name}: {said}"
        );
    }
    // The validator does check: a misspelt field and a mistyped value fail.
    let tmp = tempfile::tempdir().unwrap();
    let job = read(&deploy().join("kubernetes/soak-job.yaml"));
    for (broken, why) in [
        (
            job.replace("completions: 4", "completion: 4"),
            "'completion' was unexpected",
        ),
        (
            job.replace("parallelism: 4", "parallelism: \"four\""),
            "spec.parallelism",
        ),
    ] {
        let p = tmp.path().join("broken.yaml");
        std::fs::write(&p, broken).unwrap();
        let out = validate(&[p]);
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains(why), "{said}");
    }
    // The GitHub Actions example is YAML with a shard matrix (PyYAML comes
    // with kubernetes-validate).
    let out = Command::new("python3")
        .arg("-c")
        .arg("import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(d['jobs']['soak']['strategy']['matrix']['shard'], d['jobs']['merge']['needs'])")
        .arg(deploy().join("github-actions/soak-matrix.yml"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "[1, 2, 3, 4] soak",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
