//! A linearizability result rendered: as data (`to_json`, the shape of
//! Jepsen's `independent` + `linearizable` results), as text (per failing
//! key: the longest linearizable prefix and the op that cannot go next),
//! and as a self-contained HTML page of SVG timelines, one per key shown
//! (ops as bars per process, the linearization or longest prefix as
//! numbered points, the op that cannot be placed in red) — the
//! information of Porcupine's visualization, drawn by our own code.

use super::model::Model;
use super::search::{Operation, Verdict};
use super::{KeyResult, LinearResult};
use serde_json::{Value, json};
use std::fmt::Write as _;
use store::{Atom, Key};

/// Ops of the prefix listed in text (the last ones; the rest elided).
const TEXT_PREFIX_OPS: usize = 8;
/// Keys drawn in the HTML page (failing and unknown first).
pub const MAX_KEYS_DRAWN: usize = 20;
/// Ops drawn per key (a window ending at the failure).
pub const MAX_OPS_DRAWN: usize = 400;

/// A key as text (`nil`-free: unkeyed is `register`).
pub fn key_name(key: Option<&Key>) -> String {
    match key {
        None => "register".to_string(),
        Some(Key(Atom::Int(i))) => i.to_string(),
        Some(Key(Atom::Str(s))) => s.to_string(),
        Some(Key(Atom::Keyword(s))) => format!(":{}", &**s),
    }
}

fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Linearizable => "valid",
        Verdict::Illegal => "invalid",
        Verdict::Unknown => "unknown",
    }
}

fn op_line<M: Model>(model: &M, op: &Operation<M::Input, M::Output>) -> String {
    let p = op.process.map_or("?".to_string(), |p| p.to_string());
    let ret = op
        .ret
        .map_or("never returned".to_string(), |r| format!("returned {r}"));
    format!(
        "op at position {} (process {p}, {}; invoked {}, {ret})",
        op.id,
        model.describe_op(&op.input, op.output.as_ref()),
        op.call
    )
}

/// The result as JSON: `valid?`, the analyzer, counts, `failures` (keys),
/// and per key that is not valid its evidence.
pub fn to_json<M: Model>(model: &M, r: &LinearResult<M>) -> Value {
    let mut results = serde_json::Map::new();
    for k in r
        .keys
        .iter()
        .filter(|k| k.searched.verdict != Verdict::Linearizable)
    {
        let mut o = json!({
            "valid?": verdict_str(k.searched.verdict),
            "op-count": k.ops.len(),
            "configurations": k.searched.cache_entries,
            "steps": k.searched.steps,
            "longest-prefix": k.searched.order.iter().map(|&i| k.ops[i as usize].id).collect::<Vec<_>>(),
        });
        if let Some(why) = k.searched.exhausted {
            o["reason"] = json!(why.name());
        }
        if let Some(f) = &k.failure {
            let b = &k.ops[f.blocking as usize];
            o["op"] = json!({
                "position": b.id,
                "process": b.process,
                "description": model.describe_op(&b.input, b.output.as_ref()),
            });
            o["state"] = json!(model.describe_state(&f.state));
            o["candidates"] = f
                .candidates
                .iter()
                .map(|(i, s)| {
                    let op = &k.ops[*i as usize];
                    json!({
                        "position": op.id,
                        "description": model.describe_op(&op.input, op.output.as_ref()),
                        "leads-to": s.as_ref().map(|s| model.describe_state(s)),
                    })
                })
                .collect();
        }
        results.insert(key_name(k.key.as_ref()), o);
    }
    let failures: Vec<String> = r.failures().map(|k| key_name(k.key.as_ref())).collect();
    json!({
        "valid?": r.valid,
        "analyzer": "wgl",
        "key-count": r.keys.len(),
        "op-count": r.op_count(),
        "failures": failures,
        "results": results,
        "warnings": r.warnings,
    })
}

/// The explanation of one failing key, in words.
pub fn render_key_text<M: Model>(model: &M, k: &KeyResult<M>) -> String {
    let mut s = String::new();
    let name = key_name(k.key.as_ref());
    let Some(f) = &k.failure else {
        let _ = writeln!(
            s,
            "key {name}: {} ({} ops, {} configurations explored)",
            verdict_str(k.searched.verdict),
            k.ops.len(),
            k.searched.cache_entries
        );
        return s;
    };
    let prefix = &k.searched.order;
    let _ = writeln!(
        s,
        "key {name}: not linearizable ({} ops; {} configurations explored).",
        k.ops.len(),
        k.searched.cache_entries
    );
    let _ = writeln!(
        s,
        "  The longest linearizable prefix has {} op(s) and leaves the register at {}:",
        prefix.len(),
        model.describe_state(&f.state)
    );
    let skip = prefix.len().saturating_sub(TEXT_PREFIX_OPS);
    if skip > 0 {
        let _ = writeln!(s, "    … {skip} earlier op(s)");
    }
    for (n, &i) in prefix.iter().enumerate().skip(skip) {
        let _ = writeln!(s, "    {}. {}", n + 1, op_line(model, &k.ops[i as usize]));
    }
    let b = &k.ops[f.blocking as usize];
    let _ = writeln!(
        s,
        "  Then the {} must take effect before anything invoked after it returned, but nothing can go next:",
        op_line(model, b)
    );
    for (i, next) in &f.candidates {
        let op = &k.ops[*i as usize];
        let what = match next {
            None => format!("impossible in state {}", model.describe_state(&f.state)),
            Some(st) => format!(
                "would leave {}, from where the rest cannot be placed",
                model.describe_state(st)
            ),
        };
        let _ = writeln!(
            s,
            "    - {} at position {}: {what}",
            model.describe_op(&op.input, op.output.as_ref()),
            op.id
        );
    }
    s
}

/// Every failing key's explanation, then a line per unknown key.
pub fn render_text<M: Model>(model: &M, r: &LinearResult<M>) -> String {
    let mut s = String::new();
    for k in r
        .keys
        .iter()
        .filter(|k| k.searched.verdict != Verdict::Linearizable)
    {
        s.push_str(&render_key_text(model, k));
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML page: one SVG timeline per key shown (failing keys first).
pub fn render_html<M: Model>(model: &M, r: &LinearResult<M>, title: &str) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
         body{{font-family:sans-serif;margin:1em}} svg{{border:1px solid #ccc;margin-bottom:1em}}\
         .ok{{fill:#cfe8cf;stroke:#3a7d3a}} .other{{fill:#eee;stroke:#999}} .open{{fill:#fff;stroke:#999;stroke-dasharray:4 3}}\
         .bad{{fill:#f6c6c6;stroke:#c00;stroke-width:2}} .pt{{fill:#205080}} .ptn{{font-size:9px;fill:#205080}}\
         text{{font-size:11px}} pre{{background:#f6f6f6;padding:.5em}}</style></head><body>\n\
         <h1>{}</h1><p>verdict: <b>{}</b>; {} key(s), {} op(s); failing keys: {}</p>\n",
        esc(title),
        esc(title),
        r.valid,
        r.keys.len(),
        r.op_count(),
        r.failures().count()
    );
    let mut shown: Vec<&KeyResult<M>> = r
        .keys
        .iter()
        .filter(|k| k.searched.verdict != Verdict::Linearizable)
        .collect();
    if shown.is_empty() {
        shown.extend(r.keys.iter());
    }
    shown.truncate(MAX_KEYS_DRAWN);
    for k in shown {
        draw_key(&mut html, model, k);
    }
    html.push_str("<p>Bars: an op from invocation to return, one row per process (dashed: never returned). \
         Numbered dots: the linearization (valid key) or the longest linearizable prefix (invalid key). \
         Red: the op that must take effect next and cannot. Hover for details.</p></body></html>\n");
    html
}

fn draw_key<M: Model>(html: &mut String, model: &M, k: &KeyResult<M>) {
    let name = key_name(k.key.as_ref());
    let n = k.ops.len();
    let blocking = k.failure.as_ref().map(|f| f.blocking as usize);
    // A window of ops around the failure (or the start).
    let centre = blocking.unwrap_or(0);
    let lo = centre.saturating_sub(MAX_OPS_DRAWN * 3 / 4);
    let hi = (lo + MAX_OPS_DRAWN).min(n);
    let in_win = |i: usize| (lo..hi).contains(&i);
    // Ranks of the times in the window: equal spacing, order kept.
    let mut times: Vec<i64> = Vec::new();
    for op in &k.ops[lo..hi] {
        times.push(op.call);
        if let Some(r) = op.ret {
            times.push(r);
        }
    }
    times.sort_unstable();
    times.dedup();
    let end_rank = times.len();
    let rank = |t: i64| times.partition_point(|&x| x < t);
    let mut procs: Vec<Option<u64>> = k.ops[lo..hi].iter().map(|o| o.process).collect();
    procs.sort_unstable();
    procs.dedup();
    let row = |p: Option<u64>| procs.partition_point(|&x| x < p);
    let (x0, dx, dy) = (60.0f64, 24.0f64, 26.0f64);
    let width = x0 + dx * (end_rank as f64 + 2.0);
    let height = dy * (procs.len() as f64 + 1.0);
    let mut pos_in_order = vec![usize::MAX; n];
    for (p, &i) in k.searched.order.iter().enumerate() {
        pos_in_order[i as usize] = p;
    }
    let _ = writeln!(
        html,
        "<h2>key {}: {}</h2>",
        esc(&name),
        verdict_str(k.searched.verdict)
    );
    if k.failure.is_some() {
        let _ = writeln!(html, "<pre>{}</pre>", esc(&render_key_text(model, k)));
    }
    if lo > 0 || hi < n {
        let _ = writeln!(html, "<p>ops {lo}–{hi} of {n} shown</p>");
    }
    let _ = writeln!(
        html,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\">"
    );
    for (r, p) in procs.iter().enumerate() {
        let _ = writeln!(
            html,
            "<text x=\"4\" y=\"{:.0}\">p{}</text>",
            dy * (r as f64 + 1.0) - 8.0,
            p.map_or("?".to_string(), |p| p.to_string())
        );
    }
    let mut state = model.init();
    let mut states_after: Vec<Option<String>> = vec![None; n];
    for &i in &k.searched.order {
        let op = &k.ops[i as usize];
        if let Some(s) = model.step(&state, &op.input, op.output.as_ref()) {
            state = s;
        }
        states_after[i as usize] = Some(model.describe_state(&state));
    }
    for i in (lo..hi).filter(|&i| in_win(i)) {
        let op = &k.ops[i];
        let xa = x0 + dx * rank(op.call) as f64;
        let xb = x0 + dx * op.ret.map_or(end_rank as f64 + 1.0, |r| rank(r) as f64);
        let y = dy * row(op.process) as f64 + 4.0;
        let class = if Some(i) == blocking {
            "bad"
        } else if op.ret.is_none() {
            "open"
        } else if pos_in_order[i] != usize::MAX {
            "ok"
        } else {
            "other"
        };
        let desc = model.describe_op(&op.input, op.output.as_ref());
        let after = states_after[i]
            .as_ref()
            .map_or(String::new(), |s| format!("; state after: {s}"));
        let _ = writeln!(
            html,
            "<g><title>{} (position {}{})</title><rect class=\"{class}\" x=\"{xa:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            esc(&desc),
            op.id,
            esc(&after),
            (xb - xa).max(6.0),
            dy - 10.0,
            xa + 3.0,
            y + dy - 16.0,
            esc(&desc
                .chars()
                .take(((xb - xa) / 6.0).max(4.0) as usize)
                .collect::<String>()),
        );
    }
    // Linearization points: inside each op's interval, in order.
    let mut last_x = 0.0f64;
    for (p, &i) in k.searched.order.iter().enumerate() {
        let i = i as usize;
        let op = &k.ops[i];
        let xa = x0 + dx * rank(op.call) as f64;
        let x = (last_x + 4.0).max(xa + 4.0);
        last_x = x;
        if !in_win(i) {
            continue;
        }
        let y = dy * row(op.process) as f64 + 4.0;
        let _ = writeln!(
            html,
            "<circle class=\"pt\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\"/><text class=\"ptn\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 3.0,
            y - 1.0,
            p + 1
        );
    }
    html.push_str("</svg>\n");
}
