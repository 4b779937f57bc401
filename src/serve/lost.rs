//! The run page's "Lost acknowledged writes" section: what the text report
//! prints under `LOST ACKNOWLEDGED WRITES`, from the same data —
//! `results.json` `lost-writes`, written by `engine::report::lost_writes`
//! (bounded there: an exact count and at most 100 listed writes). Each
//! listed write gets one table row: which write (key, value), when the
//! database acknowledged it, the crash window it fell in (the kill or loss
//! of un-fsynced writes after it, which nodes, when it began and was done,
//! the restart after it) and the first read that misses it, plus the
//! report's own sentence. Every value comes from the file and is escaped.

use engine::report::html_escape as esc;
use serde_json::Value;

/// Seconds since the test began, as the text report writes them.
fn secs(ns: &Value) -> String {
    ns.as_i64()
        .map_or_else(|| "?".to_string(), |n| format!("{:.3} s", n as f64 / 1e9))
}

/// A JSON scalar as text (`?` when missing).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "?".to_string(),
        other => other.to_string(),
    }
}

/// The crash-window cell of one lost write.
fn window_cell(w: &Value) -> String {
    if !w.is_object() {
        return "none: no kill or loss between it and the read that misses it".to_string();
    }
    let nodes: Vec<String> = w["nodes"]
        .as_array()
        .map(|a| a.iter().map(text).collect())
        .unwrap_or_default();
    let mut s = text(&w["fault"]);
    if !nodes.is_empty() {
        s.push_str(&format!(" of {}", nodes.join(", ")));
    }
    let (begun, done) = (&w["fault-begin-time-ns"], &w["fault-time-ns"]);
    if begun.is_i64() && begun != done {
        s.push_str(&format!(
            ", begun at {}, done at {}",
            secs(begun),
            secs(done)
        ));
    } else {
        s.push_str(&format!(" at {}", secs(done)));
    }
    s.push_str(&format!(" (op {})", text(&w["fault-index"])));
    if w["restart-index"].is_null() {
        s.push_str("; never restarted");
    } else {
        s.push_str(&format!(
            "; restarted at {} (op {})",
            secs(&w["restart-time-ns"]),
            text(&w["restart-index"])
        ));
    }
    s
}

/// The section's HTML; empty when `lost` names no lost write.
pub fn section(lost: &Value) -> String {
    let count = lost["count"].as_u64().unwrap_or(0);
    if count == 0 {
        return String::new();
    }
    let listed = lost["listed"].as_array().map_or(&[][..], Vec::as_slice);
    let mut b = String::from("<h2 id=\"lost-writes\">Lost acknowledged writes</h2>\n");
    b.push_str(&format!(
        "<p id=\"lost-writes-summary\">{count} write(s) the database acknowledged are missing \
         from every later read ({} in a crash window). The checker's anomalies above are the \
         proof; this names the writes.</p>\n",
        lost["in-crash-windows"].as_u64().unwrap_or(0)
    ));
    b.push_str(
        "<table id=\"lost-writes-table\">\n<tr><th>key</th><th>value</th><th>acknowledged</th>\
         <th>crash window</th><th>missing from the read at</th><th>in words</th></tr>\n",
    );
    for l in listed {
        b.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{} (op {})</td><td>{}</td><td>{} (op {})</td><td>{}</td></tr>\n",
            esc(&text(&l["key"])),
            esc(&text(&l["value"])),
            secs(&l["ack-time-ns"]),
            esc(&text(&l["ack-index"])),
            esc(&window_cell(&l["window"])),
            secs(&l["missing-time-ns"]),
            esc(&text(&l["missing-index"])),
            esc(l["explanation"].as_str().unwrap_or("")),
        ));
    }
    b.push_str("</table>\n");
    let more = count.saturating_sub(listed.len() as u64);
    if more > 0 {
        b.push_str(&format!(
            "<p class=\"muted\">… and {more} more, not shown (results.json `lost-writes` lists up to 100)</p>\n"
        ));
    }
    b
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(window: Value) -> Value {
        json!({"count": 3, "in-crash-windows": 1, "listed": [{
            "key": "95", "value": "28", "ack-index": 4715, "ack-time-ns": 19_920_352_535i64,
            "missing-index": 9397, "missing-time-ns": 69_156_376_406i64,
            "explanation": "28 to key 95 <acknowledged>", "window": window,
        }]})
    }

    #[test]
    fn a_lost_write_is_named_with_its_crash_window() {
        let html = section(&one(json!({
            "fault": "kill", "fault-index": 4761, "fault-begin-time-ns": 19_922_484_945i64,
            "fault-time-ns": 20_320_471_192i64, "nodes": ["n1", "n2", "n3"],
            "restart-index": 5535, "restart-time-ns": 36_927_587_642i64,
        })));
        assert!(
            html.contains("3 write(s) the database acknowledged"),
            "{html}"
        );
        assert!(html.contains("(1 in a crash window)"), "{html}");
        assert!(html.contains("<td>95</td><td>28</td><td>19.920 s (op 4715)</td>"));
        assert!(html.contains(
            "kill of n1, n2, n3, begun at 19.922 s, done at 20.320 s (op 4761); restarted at 36.928 s (op 5535)"
        ));
        assert!(html.contains("<td>69.156 s (op 9397)</td>"));
        assert!(
            html.contains("28 to key 95 &lt;acknowledged&gt;"),
            "escaped"
        );
        assert!(html.contains("… and 2 more"), "{html}");
    }

    #[test]
    fn a_write_lost_without_a_fault_and_an_empty_section() {
        let html = section(&one(Value::Null));
        assert!(html.contains("none: no kill or loss between it and the read that misses it"));
        assert!(
            section(&one(
                json!({"fault": "lose-unfsynced-writes", "fault-index": 7,
                "fault-time-ns": 1_000_000_000i64, "nodes": []})
            ))
            .contains("lose-unfsynced-writes at 1.000 s (op 7); never restarted")
        );
        assert_eq!(section(&json!({"count": 0, "listed": []})), "");
        assert_eq!(section(&json!("not an object")), "");
    }
}
