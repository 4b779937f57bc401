//! `timeline.html`: one lane per process, each op a bar from invocation to
//! completion coloured by outcome, the transactions of reported anomalies
//! outlined, details on hover. Above the processes, one fault lane per
//! package (and per target when the window names them), coloured as in the
//! plots ([`FaultKind::rgb`]); with a single lane its windows are also
//! shaded light grey behind the bars.
//!
//! Key decision: the page is self-contained (inline CSS/JS, no network) and
//! draws on a `<canvas>` from column-oriented JSON embedded in the page
//! (start times and op indices delta-encoded, values cut to a length budget),
//! so a 100k-op history stays a few MB and pans/zooms smoothly; only bars in
//! view are drawn, found by binary search per lane. A longer history is
//! sampled down to [`MAX_SPANS`] transactions (every k-th, evenly over the
//! run), always keeping the ones the caller names (those in anomalies) and
//! every fault window; the page says what it left out. The page of a 30 s
//! SQLite run (425k transactions) went from 27 MB to a few MB this way.

use super::spans::{Extract, FaultKind, Outcome, Span, value_text};
use serde::Serialize;
use store::{History, OpType, Process};

/// Total bytes of op text the page may embed; per-op text is cut to fit.
const VALUE_TEXT_BUDGET_BYTES: usize = 8_000_000;

/// Most transactions a bounded page shows (see [`Shown`]).
pub const MAX_SPANS: usize = 100_000;

/// Which transactions the page shows.
pub enum Shown<'a> {
    /// Every one (`--keep timeline`).
    All,
    /// At most this many: every k-th, plus every transaction whose
    /// invocation or completion index is in the set.
    AtMost(usize, &'a std::collections::BTreeSet<u64>),
}

#[derive(Serialize)]
struct TimelineData<'a> {
    title: &'a str,
    /// Whether times are op positions rather than nanoseconds.
    synthetic: bool,
    lanes: Vec<String>,
    /// Lane index per span.
    ln: Vec<u32>,
    /// Start time per span (ns from the first op), delta-encoded.
    s: Vec<i64>,
    /// Duration per span (ns).
    d: Vec<i64>,
    /// Outcome per span: `o`k, `f`ail, `i`nfo, `p`ending (never completed).
    o: String,
    /// Invocation index per span, delta-encoded.
    i: Vec<i64>,
    /// Completion index per span, minus the invocation index (-1 when none).
    c: Vec<i64>,
    /// `f` per span, as an index into `fs`.
    f: Vec<u32>,
    fs: Vec<String>,
    /// Op text per span (the completion's value when it has one).
    v: Vec<String>,
    /// Fault windows: `[kind, start, end, healed, detail, targets]`.
    w: Vec<(String, i64, i64, bool, String, Vec<String>)>,
    /// Colour (`r,g,b`) per fault kind, in lane order.
    wc: Vec<(String, String)>,
    /// Positions (into the per-span arrays) of spans in a reported anomaly.
    a: Vec<u32>,
    /// The nemesis' lane, or -1.
    nl: i64,
    /// What sampling left out, for the reader; empty when nothing was.
    note: String,
}

/// The spans to draw, in order, and a note saying what was left out.
fn select<'s>(history: &History, spans: &'s [Span], shown: &Shown) -> (Vec<&'s Span>, String) {
    let (max, keep) = match shown {
        Shown::AtMost(max, keep) if spans.len() > *max => (*max, *keep),
        _ => return (spans.iter().collect(), String::new()),
    };
    let kept = |s: &Span| {
        keep.contains(&history.index(s.invoke_pos).0)
            || s.complete_pos
                .is_some_and(|c| keep.contains(&history.index(c).0))
    };
    let must = spans.iter().filter(|s| kept(s)).count();
    let room = max.saturating_sub(must).max(1);
    let step = spans.len().div_ceil(room).max(1);
    let out: Vec<&Span> = spans
        .iter()
        .enumerate()
        .filter(|(i, s)| i % step == 0 || kept(s))
        .map(|(_, s)| s)
        .collect();
    let note = format!(
        "Showing {} of {} operations: every {}, plus all {must} that take part in a reported anomaly. \
         Fault windows are all shown. `harness analyze --keep timeline RUN_DIR` draws every one.",
        out.len(),
        spans.len(),
        ordinal(step)
    );
    (out, note)
}

/// `1st`, `2nd`, `3rd`, `4th`, … `11th`, `21st`.
pub(crate) fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn lane_name(p: Option<Process>) -> String {
    match p {
        Some(p) => p.to_string(),
        None => "?".to_string(),
    }
}

fn lane_order(p: Option<Process>) -> (u8, u64) {
    match p {
        Some(Process::Nemesis) => (0, 0),
        Some(Process::Client(id)) => (1, id.0),
        None => (2, 0),
    }
}

/// Renders the timeline page for `history`; the transactions `shown` keeps
/// are outlined as in an anomaly.
pub fn render(history: &History, extract: &Extract, title: &str, shown: &Shown) -> String {
    let empty = std::collections::BTreeSet::new();
    let marked = match shown {
        Shown::AtMost(_, keep) => *keep,
        Shown::All => &empty,
    };
    render_marked(history, extract, title, shown, marked)
}

/// Renders the timeline page for `history`, outlining the transactions
/// whose invocation or completion index is in `marked`.
pub fn render_marked(
    history: &History,
    extract: &Extract,
    title: &str,
    shown: &Shown,
    marked: &std::collections::BTreeSet<u64>,
) -> String {
    let (spans, note) = select(history, &extract.spans, shown);
    let mut procs: Vec<Option<Process>> = spans.iter().map(|s| s.process).collect();
    procs.sort_by_key(|p| lane_order(*p));
    procs.dedup();
    let lanes: Vec<String> = procs.iter().map(|p| lane_name(*p)).collect();
    let value_max = (VALUE_TEXT_BUDGET_BYTES / spans.len().max(1)).clamp(40, 400);
    let mut fs: Vec<String> = Vec::new();
    let mut data = TimelineData {
        title,
        synthetic: extract.synthetic_time,
        lanes,
        ln: Vec::with_capacity(spans.len()),
        s: Vec::with_capacity(spans.len()),
        d: Vec::with_capacity(spans.len()),
        o: String::with_capacity(spans.len()),
        i: Vec::with_capacity(spans.len()),
        c: Vec::with_capacity(spans.len()),
        f: Vec::with_capacity(spans.len()),
        fs: Vec::new(),
        v: Vec::with_capacity(spans.len()),
        w: Vec::new(),
        wc: FaultKind::ALL
            .iter()
            .map(|k| {
                let (r, g, b) = k.rgb();
                (k.name().to_string(), format!("{r},{g},{b}"))
            })
            .collect(),
        a: Vec::new(),
        nl: procs
            .iter()
            .position(|p| *p == Some(Process::Nemesis))
            .map_or(-1, |i| i as i64),
        note,
    };
    let mut prev_start = 0i64;
    let mut prev_index = 0i64;
    for (at, span) in spans.into_iter().enumerate() {
        if marked.contains(&history.index(span.invoke_pos).0)
            || span
                .complete_pos
                .is_some_and(|c| marked.contains(&history.index(c).0))
        {
            data.a.push(at as u32);
        }
        let lane = procs
            .binary_search_by_key(&lane_order(span.process), |p| lane_order(*p))
            .unwrap_or(0);
        data.ln.push(lane as u32);
        let start = span.start_ns - extract.t_min_ns;
        data.s.push(start - prev_start);
        prev_start = start;
        data.d.push(span.latency_ns());
        data.o.push(if span.pending {
            'p'
        } else {
            match span.outcome {
                Outcome::Ok => 'o',
                Outcome::Fail => 'f',
                Outcome::Info => 'i',
            }
        });
        let index = history.index(span.invoke_pos).0 as i64;
        data.i.push(index - prev_index);
        prev_index = index;
        let comp = span.complete_pos;
        data.c
            .push(comp.map_or(-1, |c| history.index(c).0 as i64 - index));
        let f = history.f(span.invoke_pos).map_or("", |f| f.as_str());
        let fi = match fs.iter().position(|x| x == f) {
            Some(i) => i,
            None => {
                fs.push(f.to_string());
                fs.len() - 1
            }
        };
        data.f.push(fi as u32);
        // An ok completion carries what was read; otherwise show what was asked.
        let shown = match comp {
            Some(c) if history.op_type(c) == OpType::Ok => c,
            _ => span.invoke_pos,
        };
        let mut text = value_text(history, shown, value_max);
        if let Some(err) = comp.and_then(|c| history.error(c)) {
            let mut e = String::new();
            super::spans::data_text(err, &mut e, 80);
            text.push_str(" error: ");
            text.push_str(&e);
        }
        data.v.push(text);
    }
    data.fs = fs;
    data.w = extract
        .windows
        .iter()
        .map(|w| {
            (
                w.kind.name().to_string(),
                w.start_ns - extract.t_min_ns,
                w.end_ns - extract.t_min_ns,
                w.healed,
                w.detail.clone(),
                w.targets.clone(),
            )
        })
        .collect();
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".to_string());
    // `<` appears only inside JSON strings; escaping it keeps `</script>` out.
    let json = json.replace('<', "\\u003c");
    let mut html = String::with_capacity(json.len() + PAGE_HEAD.len() + PAGE_TAIL.len() + 256);
    html.push_str(PAGE_HEAD);
    html.push_str("<title>");
    html.push_str(&super::html_escape(title));
    html.push_str(" — timeline</title>\n</head>\n<body>\n<h1>");
    html.push_str(&super::html_escape(title));
    html.push_str("</h1>\n<script type=\"application/json\" id=\"data\">");
    html.push_str(&json);
    html.push_str("</script>\n");
    html.push_str(PAGE_TAIL);
    html
}

const PAGE_HEAD: &str = r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 13px system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 18px; margin: 0 0 6px 0; }
#bar { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; }
.key { display: inline-block; width: 12px; height: 12px; vertical-align: middle; margin-right: 3px; border: 1px solid #0003; }
#wrap { position: relative; border: 1px solid #ccc; overflow-x: hidden; }
canvas { display: block; cursor: crosshair; }
#tip { position: fixed; pointer-events: none; background: #fffff4; border: 1px solid #888; padding: 5px 7px; max-width: 600px;
  font: 12px ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; display: none; box-shadow: 2px 2px 6px #0003; z-index: 5; }
#errors { color: #b00; }
button { font-size: 12px; }
table.faults { border-collapse: collapse; margin-top: 10px; }
table.faults td, table.faults th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap; }
</style>
"##;

const PAGE_TAIL: &str = r##"<div id="bar">
  <span><span class="key" style="background:#5cb85c"></span>ok</span>
  <span><span class="key" style="background:#e0534a"></span>fail</span>
  <span><span class="key" style="background:#f0a830"></span>info</span>
  <span><span class="key" style="background:#bbbbbb"></span>never completed</span>
  <span><span class="key" style="background:#fff;border:2px solid #000"></span>in a reported anomaly</span>
  <button id="reset">reset zoom</button>
  <span>wheel: zoom · drag: pan</span>
  <span id="status">loading…</span>
</div>
<div id="errors"></div>
<div id="wrap"><canvas id="cv"></canvas></div>
<div id="tip"></div>
<div id="summary"></div>
<script>
"use strict";
window.addEventListener("error", function (e) {
  document.getElementById("errors").textContent += "error: " + e.message + "\n";
});
(function () {
  const t0ms = performance.now();
  const D = JSON.parse(document.getElementById("data").textContent);
  const n = D.ln.length;
  const S = new Float64Array(n), E = new Float64Array(n), I = new Float64Array(n);
  let acc = 0, iacc = 0, tmax = 0;
  for (let k = 0; k < n; k++) {
    acc += D.s[k]; S[k] = acc; E[k] = acc + D.d[k]; iacc += D.i[k]; I[k] = iacc;
    if (E[k] > tmax) tmax = E[k];
  }
  for (const w of D.w) if (w[2] > tmax) tmax = w[2];
  if (tmax <= 0) tmax = 1;
  const lanes = D.lanes.map(() => []);
  for (let k = 0; k < n; k++) lanes[D.ln[k]].push(k);
  const COLORS = { o: "#5cb85c", f: "#e0534a", i: "#f0a830", p: "#bbbbbb" };
  const OUT = { o: "ok", f: "fail", i: "info", p: "never completed (info)" };
  const FAULT = {}, ORDER = {};
  D.wc.forEach(function (c, i) { FAULT[c[0]] = c[1]; ORDER[c[0]] = i; });
  const MARK = new Set(D.a);
  // Fault lanes: one per kind, or per (kind, target) when windows name
  // targets; targets of a kind share a lane past 12 lanes.
  function faultLanes(perTarget) {
    const m = new Map();
    D.w.forEach(function (w, wi) {
      const labels = perTarget && w[5].length ? w[5].map(t => w[0] + " " + t) : [w[0]];
      for (const l of labels) {
        if (!m.has(l)) m.set(l, { label: l, kind: w[0], ws: [] });
        m.get(l).ws.push(wi);
      }
    });
    return Array.from(m.values()).sort((a, b) =>
      (ORDER[a.kind] - ORDER[b.kind]) || a.label.localeCompare(b.label));
  }
  let FL = faultLanes(true);
  if (FL.length > 12) FL = faultLanes(false);
  // The union of all windows, shaded once behind the bars.
  const UNION = [];
  for (const w of D.w.slice().sort((a, b) => a[1] - b[1])) {
    const last = UNION[UNION.length - 1];
    if (last && w[1] <= last[1]) last[1] = Math.max(last[1], w[2]); else UNION.push([w[1], w[2]]);
  }
  const cv = document.getElementById("cv"), wrap = document.getElementById("wrap"), tip = document.getElementById("tip");
  const ctx = cv.getContext("2d");
  const LABEL = 110, AXIS = 24, FH = 14;
  const LTOP = AXIS + FL.length * FH + (FL.length ? 6 : 0);
  const rowH = Math.max(3, Math.min(22, Math.floor(720 / Math.max(1, lanes.length))));
  let v0 = 0, v1 = tmax * 1.01;
  function unit(t) {
    if (D.synthetic) return Math.round(t) + " op";
    const span = v1 - v0;
    if (span > 5e9) return (t / 1e9).toFixed(1) + " s";
    if (span > 5e6) return (t / 1e6).toFixed(1) + " ms";
    return (t / 1e3).toFixed(1) + " µs";
  }
  function tick(t, step) {
    if (D.synthetic) return Math.round(t) + " op";
    const [div, u] = step >= 1e8 ? [1e9, " s"] : step >= 1e5 ? [1e6, " ms"] : step >= 1e2 ? [1e3, " µs"] : [1, " ns"];
    const digits = Math.max(0, -Math.floor(Math.log10(step / div) + 1e-9));
    return (t / div).toFixed(digits) + u;
  }
  function dur(ns) {
    if (D.synthetic) return ns + " op";
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    return (ns / 1e3).toFixed(1) + " µs";
  }
  function size() {
    const dpr = window.devicePixelRatio || 1;
    const w = wrap.clientWidth, h = LTOP + lanes.length * rowH + 4;
    cv.width = w * dpr; cv.height = h * dpr; cv.style.width = w + "px"; cv.style.height = h + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }
  function plotW() { return cv.clientWidth - LABEL - 4; }
  function x(t) { return LABEL + (t - v0) / (v1 - v0) * plotW(); }
  function tAt(px) { return v0 + (px - LABEL) / plotW() * (v1 - v0); }
  // First index in lane list `L` whose end >= t (ends increase along a lane).
  function firstEnding(L, t) {
    let lo = 0, hi = L.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (E[L[m]] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  function draw() {
    const W = cv.clientWidth, H = cv.clientHeight;
    ctx.clearRect(0, 0, W, H);
    ctx.font = "11px sans-serif";
    ctx.strokeStyle = "#999"; ctx.fillStyle = "#333";
    // Ticks at round multiples (1, 2, 5 × 10^k) of the time unit.
    const raw = (v1 - v0) / 8, p10 = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p10;
    const step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p10;
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const px = x(t);
      if (px < LABEL) continue;
      ctx.fillRect(px, AXIS - 5, 1, 5);
      ctx.fillText(tick(t, step), Math.min(px + 2, W - 60), 12);
    }
    // Fault lanes above the processes.
    FL.forEach(function (fl, i) {
      const y = AXIS + i * FH;
      ctx.fillStyle = "#f5f5f5"; ctx.fillRect(LABEL, y, W - LABEL, FH - 2);
      ctx.fillStyle = "rgb(" + FAULT[fl.kind] + ")";
      for (const wi of fl.ws) {
        const w = D.w[wi], a = Math.max(LABEL, x(w[1])), b = Math.min(W, x(w[2]));
        if (b < LABEL || a > W) continue;
        ctx.fillRect(a, y + 1, Math.max(2, b - a), FH - 4);
      }
      ctx.fillStyle = "#333"; ctx.fillText(fl.label, 4, y + FH - 3);
    });
    // Behind the bars, with a single fault lane: its windows, one light
    // grey (with several, their union would cover most of the run).
    ctx.fillStyle = "rgba(0,0,0,0.07)";
    for (const u of FL.length === 1 ? UNION : []) {
      const a = Math.max(LABEL, x(u[0])), b = Math.min(W, x(u[1]));
      if (b < LABEL || a > W) continue;
      ctx.fillRect(a, LTOP, Math.max(1, b - a), H - LTOP);
    }
    for (let l = 0; l < lanes.length; l++) {
      const y = LTOP + l * rowH;
      if (l % 2 === 0) { ctx.fillStyle = "rgba(0,0,0,0.03)"; ctx.fillRect(LABEL, y, W - LABEL, rowH); }
      if (rowH >= 9) { ctx.fillStyle = "#333"; ctx.fillText(D.lanes[l], 4, y + rowH - 3); }
      const L = lanes[l];
      const pad = rowH >= 6 ? 1 : 0;
      const marked = [];
      for (let j = firstEnding(L, v0); j < L.length; j++) {
        const k = L[j];
        if (S[k] > v1) break;
        const a = Math.max(LABEL, x(S[k])), b = x(E[k]);
        ctx.fillStyle = COLORS[D.o[k]];
        ctx.fillRect(a, y + pad, Math.max(1, b - a), rowH - 2 * pad);
        if (MARK.has(k)) marked.push([a, Math.max(1, b - a)]);
      }
      ctx.strokeStyle = "#000"; ctx.lineWidth = 2;
      for (const [a, w] of marked) ctx.strokeRect(a, y + 1, Math.max(3, w), Math.max(2, rowH - 2));
      ctx.lineWidth = 1;
    }
  }
  function faultAt(px, py) {
    const i = Math.floor((py - AXIS) / FH);
    if (py < AXIS || i < 0 || i >= FL.length || px < LABEL) return -1;
    const t = tAt(px), slack = 3 / plotW() * (v1 - v0);
    for (const wi of FL[i].ws) if (D.w[wi][1] - slack <= t && t <= D.w[wi][2] + slack) return wi;
    return -1;
  }
  function spanAt(px, py) {
    const l = Math.floor((py - LTOP) / rowH);
    if (py < LTOP) return -1;
    if (l < 0 || l >= lanes.length || px < LABEL) return -1;
    const L = lanes[l], t = tAt(px), slack = 3 / plotW() * (v1 - v0);
    let j = firstEnding(L, t - slack);
    if (j < L.length && S[L[j]] <= t + slack) return L[j];
    return -1;
  }
  cv.addEventListener("mousemove", function (ev) {
    const r = cv.getBoundingClientRect();
    if (drag) {
      const dt = (ev.clientX - drag.x) / plotW() * (drag.v1 - drag.v0);
      v0 = drag.v0 - dt; v1 = drag.v1 - dt; draw(); tip.style.display = "none"; return;
    }
    const wi = faultAt(ev.clientX - r.left, ev.clientY - r.top);
    const k = wi >= 0 ? -1 : spanAt(ev.clientX - r.left, ev.clientY - r.top);
    if (wi >= 0) {
      const w = D.w[wi];
      tip.textContent = w[0] + (w[5].length ? " on " + w[5].join(", ") : "") + "\nfrom " + unit(w[1]) +
        " to " + (w[3] ? unit(w[2]) : "the end (not healed)") + "\n" + w[4];
    } else if (k < 0) { tip.style.display = "none"; return; } else {
    const c = D.c[k] >= 0 ? I[k] + D.c[k] : null;
    tip.textContent = "process " + D.lanes[D.ln[k]] + "  f " + D.fs[D.f[k]] + "  " + OUT[D.o[k]] +
      (MARK.has(k) ? "  (in a reported anomaly)" : "") +
      "\nindex " + I[k] + (c === null ? "" : " → " + c) +
      "\nstart " + unit(S[k]) + "  latency " + dur(D.d[k]) +
      "\n" + D.v[k];
    }
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 420) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  });
  cv.addEventListener("mouseleave", function () { tip.style.display = "none"; drag = null; });
  let drag = null;
  cv.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v0: v0, v1: v1 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  cv.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    const r = cv.getBoundingClientRect(), t = tAt(ev.clientX - r.left);
    const f = ev.deltaY > 0 ? 1.25 : 0.8;
    const nv0 = t - (t - v0) * f, nv1 = t + (v1 - t) * f;
    if (nv1 - nv0 < 1) return;
    v0 = nv0; v1 = nv1; draw();
  }, { passive: false });
  document.getElementById("reset").addEventListener("click", function () { v0 = 0; v1 = tmax * 1.01; draw(); });
  window.addEventListener("resize", function () { size(); draw(); });
  const counts = { o: 0, f: 0, i: 0, p: 0 };
  let nem = 0;
  for (let k = 0; k < n; k++) { if (D.ln[k] === D.nl) nem++; else counts[D.o[k]]++; }
  const procs = lanes.length - (D.nl >= 0 ? 1 : 0);
  let html = "<p>" + (n - nem) + " client operations on " + procs + " processes: " + counts.o + " ok, " +
    counts.f + " fail, " + counts.i + " info (outcome unknown), " + counts.p + " never completed" +
    (nem ? "; " + nem + " nemesis operations" : "") + (MARK.size ? "; " + MARK.size + " in a reported anomaly (outlined)" : "") + ".</p>";
  if (D.w.length) {
    html += '<table class="faults"><tr><th>fault</th><th>on</th><th>from</th><th>to</th><th>detail</th></tr>';
    for (const w of D.w) {
      const tr = document.createElement("tr");
      for (const cell of [w[0], w[5].join(", "), unit(w[1]), w[3] ? unit(w[2]) : "not healed", w[4]]) {
        const td = document.createElement("td"); td.textContent = cell; tr.appendChild(td);
      }
      html += tr.outerHTML;
    }
    html += "</table>";
  }
  if (D.note) {
    const p = document.createElement("p"); p.textContent = D.note; html = p.outerHTML + html;
  }
  document.getElementById("summary").innerHTML = html;
  size(); draw();
  document.getElementById("status").textContent = "rendered " + n + " ops in " + Math.round(performance.now() - t0ms) + " ms";
})();
</script>
</body>
</html>
"##;
