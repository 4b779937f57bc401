//! The run page's small "Soak, triage and shrinking" section: the run's
//! `soak.json` (suite, cell, night, outcome, `soak --triage` result), its
//! `shrink.json` (`reproduce --shrink`: sizes before and after, the
//! scenario file) and the link to the run as one archive. Files are read
//! through `runs::read_inside_capped`.

use super::runs::{RunInfo, read_inside_capped};
use engine::report::html_escape as esc;
use serde_json::Value;

/// Largest `soak.json` / `shrink.json` read.
const MAX_BYTES: u64 = 256 * 1024;

fn json(run: &RunInfo, name: &str) -> Option<Value> {
    let (bytes, more) = read_inside_capped(&run.root, &run.dir.join(name), MAX_BYTES).ok()?;
    if more {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// The section's HTML (links relative to the run page).
pub fn section(run: &RunInfo) -> String {
    let mut b = String::from("<h2 id=\"soak\">Soak, triage, shrinking</h2>\n");
    b.push_str(
        "<p><a href=\"archive.tar.gz\" download>download the run (archive.tar.gz)</a></p>\n",
    );
    if let Some(t) = json(run, store::run::SOAK_JSON) {
        let s = |k: &str| esc(t[k].as_str().unwrap_or("—"));
        b.push_str(&format!(
            "<p>soak <b>{}</b>, cell <b>{}</b>, night {}{}: {} (expected {}){}</p>\n",
            s("suite"),
            s("cell"),
            s("night"),
            t["db_commit"]
                .as_str()
                .map(|c| format!(", db commit {}", esc(c)))
                .unwrap_or_default(),
            s("outcome"),
            esc(&strings(&t["expected"]).join("|")),
            t["shard"]
                .as_str()
                .map(|x| format!(", shard {}", esc(x)))
                .unwrap_or_default()
        ));
        if let Some(tr) = t["triage"].as_str() {
            b.push_str(&format!("<p class=\"triage\">triage: {}</p>\n", esc(tr)));
        }
    }
    if let Some(r) = json(run, "shrink.json") {
        b.push_str("<table class=\"shrink\"><tr><th></th><th>original</th><th>shrunk</th></tr>\n");
        for dim in ["workers", "keys", "ops", "seconds", "faults"] {
            let v = |w: &str| {
                r[w]["sizes"][dim]
                    .as_f64()
                    .map_or("—".to_string(), |x| x.to_string())
            };
            b.push_str(&format!(
                "<tr><th>{dim}</th><td>{}</td><td>{}</td></tr>\n",
                v("original"),
                v("shrunk")
            ));
        }
        b.push_str("</table>\n");
        b.push_str(&format!(
            "<p class=\"shrunk\">still fails ({}) in {} of {} runs: <a href=\"shrunk.toml\">shrunk.toml</a> \
             (<code>harness reproduce RUN/shrunk.toml</code>)</p>\n",
            esc(&strings(&r["anomalies"]).join(" or ")),
            r["still_fails"]["failed"],
            r["still_fails"]["runs"]
        ));
    }
    b
}

fn strings(v: &Value) -> Vec<String> {
    engine::suite::json_strings(v)
}
