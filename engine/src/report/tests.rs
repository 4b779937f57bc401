//! Tests of the report pictures: spans and fault windows, the plots' PNG and
//! SVG files (dimensions, axes, series; a golden summary of the SVG
//! structure), and the timeline page's size at 100k ops.

use super::plots::{PLOT_SIZE, PlotKind};
use super::spans::{FaultKind, Outcome, extract};
use store::{
    Data, F, History, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ReadValue, Val,
};

fn nemesis(index: u64, t: i64, op_type: OpType, f: F) -> Op {
    Op {
        index: OpIndex(index),
        time_ns: Some(t),
        op_type,
        process: Some(Process::Nemesis),
        f: Some(f),
        value: OpValue::Data(Box::new(Data::Map(vec![(
            Data::Str("n1".into()),
            Data::Vec(vec![Data::Str("n2".into())]),
        )]))),
        error: None,
        extra: store::Extra::new(),
    }
}

/// `clients` processes doing `txns` transactions each, 1 ms apart, with a
/// partition from 30% to 60% of the run; every 7th op fails, every 11th is info.
pub(crate) fn sample_history(clients: u64, txns: u64) -> History {
    let mut ops = Vec::new();
    let mut index = 0u64;
    let total = clients * txns;
    let mut push = |ops: &mut Vec<Op>, mut op: Op, t: i64| {
        op.index = OpIndex(index);
        op.time_ns = Some(t);
        index += 1;
        ops.push(op);
    };
    let mut proc_of: Vec<u64> = (0..clients).collect();
    let mut n = 0u64;
    for round in 0..txns {
        for c in 0..clients {
            let t = ((round * clients + c) * 1_000_000) as i64;
            if n == total * 3 / 10 {
                push(
                    &mut ops,
                    nemesis(0, 0, OpType::Invoke, F::StartPartition),
                    t,
                );
                push(
                    &mut ops,
                    nemesis(0, 0, OpType::Info, F::StartPartition),
                    t + 10,
                );
            }
            if n == total * 6 / 10 {
                push(&mut ops, nemesis(0, 0, OpType::Invoke, F::StopPartition), t);
                push(
                    &mut ops,
                    nemesis(0, 0, OpType::Info, F::StopPartition),
                    t + 10,
                );
            }
            let p = proc_of[c as usize];
            let k = Key::int((n % 5) as i64);
            let inv = vec![
                MicroOp::Append(k.clone(), Val::int(n as i64)),
                MicroOp::Read(k.clone(), ReadValue::Nil),
            ];
            push(&mut ops, Op::txn(0, OpType::Invoke, p, inv), t + 100);
            let outcome = if n % 11 == 10 {
                OpType::Info
            } else if n % 7 == 6 {
                OpType::Fail
            } else {
                OpType::Ok
            };
            let comp = vec![
                MicroOp::Append(k.clone(), Val::int(n as i64)),
                MicroOp::Read(k, ReadValue::List(vec![Val::int(n as i64)].into())),
            ];
            // Latency grows through the partition so the plots have shape.
            let lat = 200_000 + (n % 13) as i64 * 50_000;
            push(&mut ops, Op::txn(0, outcome, p, comp), t + 100 + lat);
            if outcome == OpType::Info {
                proc_of[c as usize] += clients;
            }
            n += 1;
        }
    }
    let _ = &mut push;
    match History::new(ops) {
        Ok(h) => h,
        Err(e) => panic!("sample history is malformed: {e}"),
    }
}

#[test]
fn spans_pair_ops_and_fault_windows_close() {
    let h = sample_history(3, 10);
    let x = extract(&h);
    assert_eq!(x.spans.len(), 30 + 2);
    assert!(!x.synthetic_time);
    assert_eq!(x.windows.len(), 1);
    let w = &x.windows[0];
    assert_eq!(w.kind, FaultKind::Partition);
    assert!(w.healed);
    assert!(w.start_ns < w.end_ns);
    assert!(w.detail.contains("n1"), "{}", w.detail);
    let fails = x
        .spans
        .iter()
        .filter(|s| s.outcome == Outcome::Fail)
        .count();
    let infos = x
        .spans
        .iter()
        .filter(|s| s.outcome == Outcome::Info)
        .count();
    assert_eq!(
        infos,
        2 + 2,
        "two client infos + two nemesis info completions"
    );
    assert!(fails > 0);
    assert!(x.spans.iter().all(|s| s.end_ns >= s.start_ns));
}

#[test]
fn spans_without_times_use_positions_and_unhealed_faults_run_to_the_end() {
    let mut ops = vec![nemesis(0, 0, OpType::Invoke, F::Kill)];
    ops[0].time_ns = None;
    ops.push(Op::txn(
        1,
        OpType::Invoke,
        0,
        vec![MicroOp::Write(Key::int(1), Val::int(1))],
    ));
    let h = match History::new(ops) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    };
    let x = extract(&h);
    assert!(x.synthetic_time);
    assert_eq!(x.windows.len(), 1);
    assert!(!x.windows[0].healed);
    assert_eq!(x.windows[0].end_ns, 1);
    // Neither op completed: both pending, counted as info.
    assert!(
        x.spans
            .iter()
            .all(|s| s.pending && s.outcome == Outcome::Info)
    );
}

/// Element counts and text labels of an SVG: its structure, without coordinates.
fn svg_summary(svg: &str) -> (String, Vec<String>) {
    let doc = match roxmltree::Document::parse(svg) {
        Ok(d) => d,
        Err(e) => panic!("plot SVG does not parse: {e}"),
    };
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut texts = Vec::new();
    for n in doc.descendants().filter(|n| n.is_element()) {
        *counts.entry(n.tag_name().name().to_string()).or_default() += 1;
        if n.tag_name().name() == "text"
            && let Some(t) = n.text()
        {
            texts.push(t.trim().to_string());
        }
    }
    let head = format!(
        "svg {}x{}; {}",
        root.attribute("width").unwrap_or("?"),
        root.attribute("height").unwrap_or("?"),
        counts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    (head, texts)
}

#[test]
fn plot_svgs_have_axes_series_and_fault_shading() {
    let h = sample_history(4, 50);
    let x = extract(&h);
    for kind in PlotKind::ALL {
        let svg = match super::plots::svg_string(kind, &x) {
            Ok(s) => s,
            Err(e) => panic!("{kind:?}: {e}"),
        };
        let (head, texts) = svg_summary(&svg);
        assert!(
            head.starts_with(&format!("svg {}x{};", PLOT_SIZE.0, PLOT_SIZE.1)),
            "{kind:?}: {head}"
        );
        // A 50 ms run is drawn in ms, one unit for the whole run.
        assert!(
            texts.iter().any(|t| t == "time (ms)"),
            "{kind:?}: x axis: {texts:?}"
        );
        // One lane per package and target: the partition isolated n1.
        assert!(
            texts.iter().any(|t| t == "partition n1"),
            "{kind:?}: fault lane: {texts:?}"
        );
        // Integer ticks carry no fraction.
        assert!(
            !texts.iter().any(|t| t.ends_with(".0")),
            "{kind:?}: ticks: {texts:?}"
        );
        match kind {
            PlotKind::LatencyRaw => {
                assert!(texts.iter().any(|t| t == "latency (µs)"));
                for o in ["ok", "fail", "info"] {
                    assert!(texts.iter().any(|t| t == o), "legend {o}: {texts:?}");
                }
                // One circle per client op, plus three legend markers.
                let circles = svg.matches("<circle").count();
                assert_eq!(circles, 200 + 3, "{head}");
            }
            PlotKind::LatencyQuantiles => {
                for q in ["p50", "p95", "p99", "max"] {
                    assert!(texts.iter().any(|t| t == q), "legend {q}: {texts:?}");
                }
            }
            PlotKind::Rate => {
                assert!(texts.iter().any(|t| t == "throughput (ops/s)"));
                for o in ["ok", "fail", "info"] {
                    assert!(texts.iter().any(|t| t == o), "legend {o}: {texts:?}");
                }
            }
        }
    }
}

/// Golden structure of the rate plot: element counts and every label.
/// Coordinates are left out so font metrics do not make it brittle.
#[test]
fn rate_svg_structure_matches_golden() {
    let h = sample_history(4, 50);
    let x = extract(&h);
    let svg = match super::plots::svg_string(PlotKind::Rate, &x) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let (head, texts) = svg_summary(&svg);
    let golden = format!("{head}\n{}", texts.join("|"));
    assert_eq!(golden, RATE_GOLDEN, "\n--- actual ---\n{golden}\n");
}

const RATE_GOLDEN: &str = "svg 1000x480; line=17 polyline=25 rect=4 svg=1 text=24\n\
throughput by outcome|ok|fail|info|throughput (ops/s)|time (ms)|0|200|400|600|800|1000|1200|\
0|20|40|60|80|100|120|140|160|180|partition n1";

#[test]
fn plot_files_are_valid_png_and_svg_with_expected_dimensions() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let h = sample_history(2, 20);
    if let Err(e) = super::write_perf_reports(dir.path(), &h, None, super::Keep::default()) {
        panic!("{e:#}");
    }
    for kind in PlotKind::ALL {
        let png =
            std::fs::read(dir.path().join(format!("{}.png", kind.stem()))).unwrap_or_default();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{kind:?}: PNG signature");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
        let hgt = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
        assert_eq!((w, hgt), PLOT_SIZE, "{kind:?}");
        let svg = std::fs::read_to_string(dir.path().join(format!("{}.svg", kind.stem())))
            .unwrap_or_default();
        let (head, _) = svg_summary(&svg);
        assert!(head.starts_with("svg 1000x480;"), "{head}");
    }
    let html = std::fs::read_to_string(dir.path().join("timeline.html")).unwrap_or_default();
    assert!(html.contains("<canvas"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "self-contained"
    );
}

#[test]
fn timeline_of_100k_ops_stays_under_20_mb() {
    // 10 clients × 5000 txns = 50k transactions = 100k ops.
    let h = sample_history(10, 5_000);
    assert!(h.len() >= 100_000);
    let x = extract(&h);
    let html = super::timeline::render(&h, &x, "big", &super::timeline::Shown::All);
    assert!(html.len() < 20 * 1024 * 1024, "{} bytes", html.len());
    // The embedded JSON parses and has one entry per span.
    let start = html.find("id=\"data\">").map(|i| i + 10).unwrap_or(0);
    let end = html[start..]
        .find("</script>")
        .map(|i| i + start)
        .unwrap_or(start);
    let v: serde_json::Value = match serde_json::from_str(&html[start..end]) {
        Ok(v) => v,
        Err(e) => panic!("embedded JSON: {e}"),
    };
    assert_eq!(v["ln"].as_array().map(Vec::len), Some(x.spans.len()));
    assert_eq!(v["w"].as_array().map(Vec::len), Some(1));
}

/// The spans drawn by a rendered timeline page: (`ln` length, invocation
/// indices, note).
fn drawn(html: &str) -> (usize, Vec<u64>, String) {
    let start = html.find("id=\"data\">").map(|i| i + 10).unwrap_or(0);
    let end = html[start..]
        .find("</script>")
        .map(|i| i + start)
        .unwrap_or(start);
    let v: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap_or_default();
    let mut at = 0i64;
    let idx: Vec<u64> = v["i"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| {
                    at += d.as_i64().unwrap_or(0);
                    at as u64
                })
                .collect()
        })
        .unwrap_or_default();
    let n = v["ln"].as_array().map(Vec::len).unwrap_or(0);
    (n, idx, v["note"].as_str().unwrap_or("").to_string())
}

#[test]
fn a_long_timeline_is_sampled_but_keeps_every_anomaly_op_and_says_so() {
    // 60k transactions = 120k ops, over the page's bound.
    let h = sample_history(10, 6_000);
    let x = extract(&h);
    assert!(x.spans.len() > super::timeline::MAX_SPANS / 2);
    // An odd invocation far from the sampling stride, and a completion.
    let odd = h.index(x.spans[12_347].invoke_pos).0;
    let done = x.spans[33_331]
        .complete_pos
        .map(|c| h.index(c).0)
        .unwrap_or(0);
    let keep: std::collections::BTreeSet<u64> = [odd, done].into_iter().collect();
    let bound = 20_000;
    let html = super::timeline::render(&h, &x, "t", &super::timeline::Shown::AtMost(bound, &keep));
    let (n, idx, note) = drawn(&html);
    assert!(n <= bound && n > bound / 2, "{n} spans drawn");
    assert!(idx.contains(&odd), "the anomaly's invocation is drawn");
    assert!(
        idx.contains(&h.index(x.spans[33_331].invoke_pos).0),
        "so is the completed one"
    );
    assert!(
        note.contains(&format!("of {} operations", x.spans.len())),
        "{note}"
    );
    // Under the bound, everything is drawn and nothing is said.
    let all = super::timeline::render(
        &h,
        &x,
        "t",
        &super::timeline::Shown::AtMost(1_000_000, &keep),
    );
    let (n, _, note) = drawn(&all);
    assert_eq!(n, x.spans.len());
    assert!(note.is_empty());
}

#[test]
fn timeline_escapes_script_end_in_values() {
    let ops = vec![Op::txn(
        0,
        OpType::Invoke,
        0,
        vec![MicroOp::Write(
            Key(store::Atom::Str("</script><b>".into())),
            Val::int(1),
        )],
    )];
    let h = match History::new(ops) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    };
    let html = super::timeline::render(&h, &extract(&h), "<x>", &super::timeline::Shown::All);
    assert!(!html.contains("</script><b>"));
    assert!(html.contains("&lt;x&gt;"));
}

#[test]
fn quantile_lines_break_where_no_op_completed() {
    // Ok ops in buckets 0, 1 and 4: nothing completed in 2 and 3 (a kill).
    let span = |start: i64| super::spans::Span {
        invoke_pos: 0,
        complete_pos: Some(1),
        process: Some(Process::Client(store::ProcessId(0))),
        start_ns: start,
        end_ns: start + 1_000,
        outcome: Outcome::Ok,
        pending: false,
    };
    let spans: Vec<super::spans::Span> = [0, 1, 4].iter().map(|b| span(b * 10)).collect();
    let failed = super::spans::Span {
        outcome: Outcome::Fail,
        ..span(20)
    };
    let bs: Vec<(f64, Vec<&super::spans::Span>)> = vec![
        (0.5, vec![&spans[0]]),
        (1.5, vec![&spans[1]]),
        (2.5, vec![&failed]),
        (3.5, vec![]),
        (4.5, vec![&spans[2]]),
    ];
    let segs = super::plots::quantile_segments(|s| s.latency_ns() as f64, &bs, 0.5);
    assert_eq!(
        segs,
        vec![vec![(0.5, 1000.0), (1.5, 1000.0)], vec![(4.5, 1000.0)]],
        "no line across buckets 2 and 3"
    );
}

#[test]
fn timeline_footer_words() {
    assert_eq!(super::timeline::ordinal(2), "2nd");
    assert_eq!(super::timeline::ordinal(11), "11th");
    assert_eq!(super::timeline::ordinal(21), "21st");
    assert_eq!(super::timeline::ordinal(103), "103rd");
}
