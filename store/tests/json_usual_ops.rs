//! The JSON Lines reader's path for ops of the usual shape (`index`,
//! `time`, `type`, `process`, `f` `"txn"`, a transaction value; read
//! without building an `Op` and pushed straight into a history's columns)
//! against the general path (the reader's iterator, every op through
//! `Json::op`): the same ops or the same error, the same history (ops,
//! elided invocations, pairs, warnings), malformed lines included.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use proptest::prelude::*;
use std::path::Path;
use store::format::{self, Format, OpReader};
use store::{History, HistoryBuilder, Op};

/// Every op of `text` as the general path reads it (errors naming `file`),
/// or its first error.
fn general(text: &str, file: Option<&Path>) -> Result<Vec<Op>, String> {
    OpReader::new(
        text.as_bytes(),
        Format::JsonLines,
        file.map(Path::to_path_buf),
    )
    .collect::<Result<Vec<_>, _>>()
    .map_err(|e| e.to_string())
}

/// Each op of a history, whether its micro-ops are stored (not elided),
/// its partner.
type OpsShown = Vec<(Op, bool, Option<usize>)>;

/// What a history shows of its storage: each op, whether its micro-ops
/// are stored (not elided), its partner; then the warnings and the
/// micro-op count.
fn shape(h: &History) -> (OpsShown, Vec<String>, usize) {
    let ops = (0..h.len())
        .map(|pos| (h.op(pos), h.stored_txn(pos).is_some(), h.partner(pos)))
        .collect();
    let warnings = h.warnings().iter().map(ToString::to_string).collect();
    (ops, warnings, h.mop_count())
}

/// Checks the three readers of `text` agree: `read_str` (usual path into
/// ops), `load_history` (usual path into columns) and the general path
/// (ops pushed one by one into a `HistoryBuilder`).
fn agree(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    std::fs::write(&path, text).unwrap();
    let via_str = format::read_str(text, Format::JsonLines)
        .map(|o| o.ops)
        .map_err(|e| e.to_string());
    assert_eq!(general(text, None), via_str, "{text}");
    let reference = general(text, Some(&path));
    let loaded = format::load_history(&path);
    let ops = match reference {
        Err(e) => {
            let got = loaded.err().map(|e| e.to_string());
            assert_eq!(got.as_deref(), Some(e.as_str()), "{text}");
            return;
        }
        Ok(ops) => ops,
    };
    let mut b = HistoryBuilder::new();
    for op in ops {
        b.push(op);
    }
    match (b.finish(), loaded) {
        (Ok(want), Ok((got, _))) => assert_eq!(shape(&want), shape(&got), "{text}"),
        (Err(want), Err(got)) => {
            assert!(got.to_string().contains(&want.to_string()), "{text}: {got}");
        }
        (want, got) => panic!("{text}\ngeneral {want:?}\nusual {:?}", got.map(|x| x.0)),
    }
}

#[test]
fn usual_ops_in_any_field_order_read_as_the_general_path_reads_them() {
    let inv = r#"{"index":0,"time":5,"type":"invoke","process":3,"f":"txn","value":[["append",1,2],["r",1,null]]}"#;
    let ok = r#"{"index":1,"time":9,"type":"ok","process":3,"f":"txn","value":[["append",1,2],["r",1,[2]]]}"#;
    agree(&format!("{inv}\n{ok}\n"));
    // Reordered, blanks everywhere, no index (positions), no time.
    let inv2 = r#"{ "value" : [ ["r", 7, null] ] , "f":"txn", "process": 0, "type":"invoke" }"#;
    let ok2 = r#"{"process":0,"type":"ok","value":[["r",7,[]]],"f":"txn"}"#;
    agree(&format!("{inv2}\n{ok2}\n"));
    // Time -1 is no time; a process too big for the record's u32.
    agree(&format!(
        "{}\n{}\n",
        r#"{"index":3,"time":-1,"type":"invoke","process":4294967295,"f":"txn","value":[["w",1,2]]}"#,
        r#"{"index":4,"time":-1,"type":"info","process":4294967295,"f":"txn","value":[["w",1,2]]}"#
    ));
    // Mixed with unusual ops: another f, an error field, nemesis, extra fields.
    agree(&format!(
        "{inv}\n{}\n{}\n{}\n",
        r#"{"index":1,"type":"fail","process":3,"f":"txn","value":[["append",1,2]],"error":"x"}"#,
        r#"{"index":2,"type":"info","process":"nemesis","f":"start-partition","value":null}"#,
        r#"{"index":3,"type":"invoke","process":3,"f":"txn","value":[["r",1,null]],"node":"n1"}"#
    ));
}

#[test]
fn integers_of_every_width_in_usual_ops_read_as_the_general_path_reads_them() {
    for width in 1..=20 {
        for first in ['1', '9', '0'] {
            let digits: String = std::iter::once(first)
                .chain("1234567890123456789".chars())
                .take(width)
                .collect();
            for tok in [digits.clone(), format!("-{digits}"), format!("{digits}.5")] {
                agree(&format!(
                    "{{\"index\":0,\"time\":{tok},\"type\":\"invoke\",\"process\":1,\"f\":\"txn\",\"value\":[[\"append\",{tok},{tok}],[\"r\",{tok},null]]}}\n\
                     {{\"index\":1,\"time\":{tok},\"type\":\"ok\",\"process\":1,\"f\":\"txn\",\"value\":[[\"append\",{tok},{tok}],[\"r\",{tok},[{tok},{tok}]]]}}\n"
                ));
            }
        }
    }
}

#[test]
fn malformed_usual_lines_give_the_general_paths_errors() {
    let head = r#"{"index":0,"type":"invoke","process":1,"f":"txn","value":[["r",1,null]]}"#;
    for bad in [
        r#"{"index":1,"index":2,"type":"ok","process":1,"f":"txn","value":[]}"#,
        r#"{"index":-1,"type":"ok","process":1,"f":"txn","value":[]}"#,
        r#"{"index":1,"type":"ok","process":-1,"f":"txn","value":[]}"#,
        r#"{"index":1,"type":"okay","process":1,"f":"txn","value":[]}"#,
        r#"{"index":1,"type":"ok","process":1,"f":"txn","value":[["r",1,[1,]]]}"#,
        r#"{"index":1,"type":"ok","process":1,"f":"txn","value":[["r",1,[1]]],}"#,
        r#"{"index":1,"type":"ok","process":1,"f":"txn","value":[["r",1,[1]]]"#,
        r#"{"index":1,"type":"ok","process":1,"f":"txn","value":[["r",1,[1]]]} x"#,
        r#"{"index":1,"time":1.5,"type":"ok","process":1,"f":"txn","value":[]}"#,
        r#"{"index":01,"type":"ok","process":1,"f":"txn","value":[]}"#,
        r#"{"index":1,"type":"ok","process":1,"f":"txn"  "value":[]}"#,
        r#"{"index":0,"type":"ok","process":1,"f":"txn","value":[["r",1,[1]]]}"#,
        r#"{"type":"ok","process":1,"f":"txn"}"#,
        r#"{"index":1,"process":1,"f":"txn","value":[]}"#,
    ] {
        agree(&format!("{head}\n{bad}\n"));
        // A torn last line (no newline): a warning, the ops before it.
        agree(&format!("{head}\n{bad}"));
    }
}

/// A transaction's micro-ops as (invocation, completion) texts: reads are
/// `null` in the invocation, a list or `null` in the completion.
fn mops() -> impl Strategy<Value = (String, String)> {
    let mop = prop_oneof![
        4 => (0i64..3, 0i64..5).prop_map(|(k, v)| {
            let m = format!("[\"append\",{k},{v}]");
            (m.clone(), m)
        }),
        4 => (0i64..3, prop::collection::vec(0i64..5, 0..4)).prop_map(|(k, l)| {
            let l = format!("{l:?}").replace(' ', "");
            (format!("[\"r\",{k},null]"), format!("[\"r\",{k},{l}]"))
        }),
        1 => (0i64..3).prop_map(|k| (format!("[\"r\",{k},null]"), format!("[\"r\",{k},null]"))),
        1 => (0i64..3, 0i64..5).prop_map(|(k, v)| {
            let m = format!("[\"w\",{k},{v}]");
            (m.clone(), m)
        }),
        1 => Just(("[\"r\",\"k\",null]".to_string(), "[\"r\",\"k\",[\"a\",1]]".to_string())),
        1 => Just(("[\"cas\",1,[1,2]]".to_string(), "[\"cas\",1,[1,2]]".to_string())),
        1 => Just(("[\"r\",1,null]".to_string(), "[\"r\",1,[1,]]".to_string())),
    ];
    prop::collection::vec(mop, 0..4).prop_map(|m| {
        let (inv, ok): (Vec<String>, Vec<String>) = m.into_iter().unzip();
        (
            format!("[{}]", inv.join(",")),
            format!("[{}]", ok.join(",")),
        )
    })
}

/// One op's fields (the usual six, sometimes one changed, left out or
/// added to) in an order drawn from `seed`, with blanks or without.
fn render(fields: [Option<String>; 6], seed: u64, blanks: bool) -> String {
    let mut fields: Vec<String> = fields.into_iter().flatten().collect();
    // A third in the order harness writes (its own fast path).
    let mut s = seed | 1;
    for i in (1..fields.len()).rev().filter(|_| !seed.is_multiple_of(3)) {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
        fields.swap(i, (s >> 33) as usize % (i + 1));
    }
    let (sep, colon) = if blanks { (" , ", " : ") } else { (",", ":") };
    format!("{{{}}}", fields.join(sep)).replace("\":", &format!("\"{colon}"))
}

/// A change to one op: none mostly, else one unusual or malformed field.
fn twist() -> impl Strategy<Value = u8> {
    prop_oneof![12 => Just(0u8), 1 => 1u8..12]
}

/// An invocation and its completion, rendered, for op number `n` (indices
/// `2n`, `2n + 1` when `indexed`).
#[allow(clippy::too_many_arguments)]
fn pair(
    n: u64,
    indexed: bool,
    process: u64,
    (inv_m, ok_m): &(String, String),
    done: &str,
    seeds: (u64, u64),
    blanks: bool,
    twists: (u8, u8),
) -> [String; 2] {
    let one = |i: u64, t: &str, m: &str, seed: u64, twist: u8| {
        let mut f: [Option<String>; 6] = [
            indexed.then(|| format!("\"index\":{i}")),
            Some(format!("\"time\":{}", i * 10)),
            Some(format!("\"type\":\"{t}\"")),
            Some(format!("\"process\":{process}")),
            Some("\"f\":\"txn\"".to_string()),
            Some(format!("\"value\":{m}")),
        ];
        match twist {
            1 => f[0] = Some("\"index\":-3".into()),
            2 => f[1] = Some("\"time\":-1".into()),
            3 => f[1] = Some("\"time\":null".into()),
            4 => f[2] = Some("\"type\":\"weird\"".into()),
            5 => f[3] = Some("\"process\":4294967299".into()),
            6 => f[3] = Some("\"process\":\"nemesis\"".into()),
            7 => f[4] = Some("\"f\":\"read\"".into()),
            8 => f[5] = Some("\"value\":null".into()),
            9 => f[1] = Some("\"error\":\"timeout\"".into()),
            10 => f[2] = None,
            11 => f[4] = Some("\"f\":\"txn\",\"f\":\"txn\"".into()),
            _ => {}
        }
        render(f, seed, blanks)
    };
    [
        one(2 * n, "invoke", inv_m, seeds.0, twists.0),
        one(2 * n + 1, done, ok_m, seeds.1, twists.1),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn generated_histories_read_the_same_by_both_paths(
        txns in prop::collection::vec(
            (
                0u64..4,
                mops(),
                prop::sample::select(vec!["ok", "ok", "ok", "fail", "info"]),
                (any::<u64>(), any::<u64>()),
                any::<bool>(),
                (twist(), twist()),
            ),
            1..10,
        ),
        indexed in any::<bool>(),
        cut in prop::option::weighted(0.1, 0usize..400),
        torn in any::<bool>(),
    ) {
        let mut lines = Vec::new();
        for (n, (process, m, done, seeds, blanks, twists)) in txns.iter().enumerate() {
            let [inv, ok] = pair(n as u64, indexed, *process, m, done, *seeds, *blanks, *twists);
            lines.push(inv);
            lines.push(ok);
        }
        let mut text = lines.join("\n");
        if let Some(c) = cut {
            // Cut anywhere (a char boundary: the text is ASCII).
            text.truncate(c.min(text.len()));
        }
        if !torn {
            text.push('\n');
        }
        agree(&text);
    }
}
