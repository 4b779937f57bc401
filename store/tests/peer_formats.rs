//! Other checkers' formats: the hand-written files in tests/data/peer-formats
//! read, round-trip and detect; malformed input is an error with its place.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use store::import::{self, FileFormat, PeerFormat};
use store::{History, MicroOp, Op, OpType, Process, ReadValue, Val};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/peer-formats")
        .join(name)
}

fn load(name: &str) -> History {
    import::load(&data(name), None)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .history
}

/// Each transaction as (session, committed, micro-ops).
fn txns(h: &History) -> Vec<(u64, bool, Vec<MicroOp>)> {
    h.to_ops()
        .iter()
        .filter(|o| o.op_type != OpType::Invoke)
        .map(|o| {
            let Some(Process::Client(p)) = o.process else {
                panic!("no process: {o:?}")
            };
            (
                p.0,
                o.op_type == OpType::Ok,
                o.value.txn().unwrap_or(&[]).to_vec(),
            )
        })
        .collect()
}

const TEXT: [&str; 7] = [
    "lost-update.txt",
    "causal-session.txt",
    "causal.txt",
    "fractured-read.txt",
    "write-skew.txt",
    "initial-only.txt",
    "aborted-read.txt",
];
const DBCOP: [&str; 5] = [
    "lost-update.json",
    "causal.json",
    "fractured-read.json",
    "write-skew.json",
    "initial-only.json",
];

#[test]
fn files_are_detected_by_content() {
    for f in TEXT {
        let got = FileFormat::detect(&data(f)).unwrap();
        assert_eq!(got, FileFormat::Peer(PeerFormat::Text), "{f}");
    }
    for f in DBCOP {
        let got = FileFormat::detect(&data(f)).unwrap();
        assert_eq!(got, FileFormat::Peer(PeerFormat::Dbcop), "{f}");
    }
    // Ours stay ours.
    assert_eq!(import::sniff_peer(b"{\"index\":0,\"type\":\"ok\"}"), None);
    assert_eq!(import::sniff_peer(b"[{\"index\":0}]"), None);
    assert_eq!(import::sniff_peer(b"{:index 0}"), None);
    assert_eq!(
        import::sniff_peer(b"# a comment\n\nw(1,1,0,1)\n"),
        Some(PeerFormat::Text)
    );
}

#[test]
fn text_maps_sessions_txns_and_the_initial_value() {
    let h = load("lost-update.txt");
    assert_eq!(h.initial_value(), Some(&Val::int(0)));
    assert!(!h.has_realtime_order());
    let t = txns(&h);
    assert_eq!(t.len(), 3);
    assert_eq!(
        t.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(1, true), (2, true), (1, true)]
    );
    assert_eq!(
        t[0].2,
        [
            MicroOp::Read(store::Key::int(0), ReadValue::Scalar(Val::int(0))),
            MicroOp::Write(store::Key::int(0), Val::int(1)),
        ]
    );
    // One completion per transaction, no invocation (the file has no clock).
    assert_eq!(h.to_ops().len(), 3);
    assert!(h.to_ops().iter().all(|o| o.op_type != OpType::Invoke));
    assert_eq!(h.partner(0), None);
    assert!(h.warnings().is_empty());
}

#[test]
fn text_groups_lines_by_txn_id_and_marks_aborted_writes() {
    // write-skew.txt interleaves its two transactions' lines.
    let t = txns(&load("write-skew.txt"));
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|x| x.2.len() == 3));
    // aborted-read.txt: two `-1` lines of session 1 are one aborted txn.
    let t = txns(&load("aborted-read.txt"));
    assert_eq!(
        t.iter().map(|x| (x.0, x.1, x.2.len())).collect::<Vec<_>>(),
        [(1, false, 2), (1, true, 1), (2, true, 1), (2, true, 1)]
    );
    // Other negative ids: an aborted transaction each (written back as -1).
    let h =
        import::read_peer_str("w(1,1,0,-7)\nw(2,1,0,-7)\nw(3,1,0,-8)\n", PeerFormat::Text).unwrap();
    let t = txns(&h);
    assert_eq!(
        t.iter().map(|x| (x.1, x.2.len())).collect::<Vec<_>>(),
        [(false, 2), (false, 1)]
    );
    let out = import::write_peer_string(&h, PeerFormat::Text).unwrap();
    assert_eq!(out, "w(1,1,0,-1)\nw(2,1,0,-1)\nw(3,1,0,-1)\n");
}

/// The reader skips the id lookup for a line of the transaction the line
/// before named: grouping, aborted runs between, a session clash on the
/// very next line and a file without its last newline read as always.
#[test]
fn text_adjacent_lines_of_one_txn_group_as_interleaved_ones_do() {
    let shape = |text: &str| {
        let h = import::read_peer_str(text, PeerFormat::Text).unwrap();
        txns(&h)
            .iter()
            .map(|x| (x.0, x.1, x.2.len()))
            .collect::<Vec<_>>()
    };
    // Adjacent, then the same id again after another transaction's line.
    assert_eq!(
        shape("w(1,1,0,1)\nr(1,1,0,1)\nw(2,1,1,2)\nw(3,1,0,1)\nr(2,1,1,2)"),
        [(0, true, 3), (1, true, 2)]
    );
    // A `-1` run between two lines of txn 1: still one txn 1.
    assert_eq!(
        shape("w(1,1,0,1)\nw(1,2,0,-1)\nw(2,1,0,-1)\nr(1,1,0,1)\n"),
        [(0, true, 2), (0, false, 2)]
    );
    // Ids far beyond the line count (kept in a map) and small ones (in a
    // table by id) mixed, each grouped.
    assert_eq!(
        shape("w(1,1,0,9000000000)\nw(2,1,1,3)\nr(1,1,0,9000000000)\nr(2,1,1,3)\nw(3,1,2,-9)"),
        [(0, true, 2), (1, true, 2), (2, false, 1)]
    );
    assert!(
        err_text(
            "w(1,1,0,9000000000)\nw(2,1,0,3)\nw(3,1,7,9000000000)",
            PeerFormat::Text
        )
        .starts_with(
            "<input>:3:1: transaction 9000000000 is in session 7 here but in session 0 at line 1"
        )
    );
    // Blank and comment lines between adjacent lines of one txn.
    assert_eq!(shape("w(1,1,0,1)\n\n# c\nr(1,1,0,1)\n"), [(0, true, 2)]);
    assert!(
        err_text("w(1,1,0,1)\nw(2,1,5,1)\n", PeerFormat::Text).starts_with(
            "<input>:2:1: transaction 1 is in session 5 here but in session 0 at line 1"
        )
    );
    assert!(
        err_text("w(1,1,0,1)\nw(2,1,0,1)\nw(3,1,4,1)", PeerFormat::Text).starts_with(
            "<input>:3:1: transaction 1 is in session 4 here but in session 0 at line 1"
        )
    );
}

#[test]
fn text_round_trips() {
    for f in TEXT {
        let h = load(f);
        let out = import::write_peer_string(&h, PeerFormat::Text).unwrap();
        let again = import::read_peer_str(&out, PeerFormat::Text).unwrap();
        assert_eq!(again.to_ops(), h.to_ops(), "{f}");
        // Files listing each transaction's lines together, ids 1.. in order,
        // come back byte for byte.
        if f != "write-skew.txt" && f != "aborted-read.txt" {
            let orig = std::fs::read_to_string(data(f)).unwrap();
            assert_eq!(out, orig, "{f}");
        }
    }
}

#[test]
fn dbcop_round_trips_and_agrees_with_text() {
    for f in DBCOP {
        let h = load(f);
        assert_eq!(h.initial_value(), Some(&Val::int(0)), "{f}");
        let out = import::write_peer_string(&h, PeerFormat::Dbcop).unwrap();
        let again = import::read_peer_str(&out, PeerFormat::Dbcop).unwrap();
        assert_eq!(again.to_ops(), h.to_ops(), "{f}: {out}");
        // The written file is the standalone form dbcop's CLI reads.
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(
            v["params"]["n_node"].is_u64() && v["data"].is_array(),
            "{out}"
        );
    }
    // Text → dbcop → text keeps every transaction (sessions renumbered from 0).
    let h = load("causal.txt");
    let j = import::write_peer_string(&h, PeerFormat::Dbcop).unwrap();
    let back = import::read_peer_str(&j, PeerFormat::Dbcop).unwrap();
    let strip = |h: &History| txns(h).into_iter().map(|x| (x.1, x.2)).collect::<Vec<_>>();
    assert_eq!(strip(&back), strip(&h));
}

#[test]
fn dbcop_event_shapes() {
    // The three event shapes and both transaction spellings.
    let h = load("fractured-read.json");
    let t = txns(&h);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[1].2[1],
        MicroOp::Read(store::Key::int(1), ReadValue::Scalar(Val::int(0)))
    );
    let t = txns(&load("lost-update.json"));
    assert_eq!(t[0].2[0], MicroOp::Read(store::Key::int(0), ReadValue::Nil));
    // The older dbcop: a failed write becomes an aborted transaction, a
    // failed read is dropped.
    let h = import::read_peer_str(
        r#"[[{"events": [{"write": true, "variable": 1, "value": 5, "success": false},
                         {"write": false, "variable": 2, "value": 0, "success": false},
                         {"write": true, "variable": 3, "value": 1, "success": true}],
              "success": true}]]"#,
        PeerFormat::Dbcop,
    )
    .unwrap();
    let t = txns(&h);
    assert_eq!(
        t.iter().map(|x| (x.1, x.2.len())).collect::<Vec<_>>(),
        [(true, 1), (false, 1)]
    );
}

fn err_text(text: &str, f: PeerFormat) -> String {
    match import::read_peer_str(text, f) {
        Ok(h) => panic!("{text:?} read: {:?}", h.to_ops()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_text_names_line_and_column() {
    let cases = [
        (
            "w(1,1,0,1)\nr(1,2,3)\n",
            "<input>:2:8: expected `,` after the session",
        ),
        (
            "x(1,1,0,1)\n",
            "<input>:1:1: expected `r(key,value,session,txn)`",
        ),
        (
            "w(1,1,0,1) extra\n",
            "<input>:1:12: unexpected text after `)`",
        ),
        ("w(1,a,0,1)\n", "<input>:1:5: expected an integer value"),
        ("w(1,1,-2,1)\n", "<input>:1:1: session id -2 is negative"),
        (
            "w(1,1,0,1)\n\nw(2,1,5,1)\n",
            "<input>:3:1: transaction 1 is in session 5 here but in session 0 at line 1",
        ),
        (
            "w(1,99999999999999999999,0,1)\n",
            "<input>:1:5: the value 99999999999999999999 is out of range",
        ),
        ("w(1,1,0,1", "<input>:1:10: expected `)` after the txn id"),
    ];
    for (text, want) in cases {
        let got = err_text(text, PeerFormat::Text);
        assert!(
            got.starts_with(want),
            "{text:?}: got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn malformed_dbcop_names_line_and_column() {
    let cases = [
        ("[[{\"events\": [{\"Foo\": 1}]}]]", "<input>:1:"),
        (
            "[[{\"events\": [[\"x\", 1, 2]]}]]",
            "unknown event tag \"x\"",
        ),
        (
            "[[{\"events\": [{\"Write\": {\"variable\": 1, \"version\": null}}]}]]",
            "null version",
        ),
        ("[\n[\n{\"events\": 3}]]", "<input>:3:"),
        ("{\"params\": {}}", "missing field `data`"),
        ("[[", "<input>:1:2"),
    ];
    for (text, want) in cases {
        let got = err_text(text, PeerFormat::Dbcop);
        assert!(got.contains(want), "{text:?}: got {got:?}, want {want:?}");
    }
}

fn rec(buf: &mut Vec<u8>, c: u8, xs: &[i64]) {
    buf.push(c);
    for x in xs {
        buf.extend_from_slice(&x.to_be_bytes());
    }
}

#[test]
fn cobra_logs_read_by_hand_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let init = 0xbebe_ebee_i64;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    // Client 1: T10 reads key 7's initial state, writes 7 := write id 100.
    rec(&mut a, b'S', &[10]);
    rec(&mut a, b'R', &[init, init, 7, 0]);
    rec(&mut a, b'W', &[100, 7, 42]);
    rec(&mut a, b'C', &[10]);
    // Client 2: T20 reads T10's write; a GC read is skipped.
    rec(&mut b, b'S', &[20]);
    rec(&mut b, b'R', &[10, 100, 7, 42]);
    rec(&mut b, b'R', &[init, 0x2333_2333, 9, 0]);
    rec(&mut b, b'C', &[20]);
    std::fs::write(dir.path().join("T1.log"), &a).unwrap();
    std::fs::write(dir.path().join("T2.log"), &b).unwrap();
    let loaded = import::load(dir.path(), None).unwrap();
    assert_eq!(loaded.format, FileFormat::Peer(PeerFormat::Cobra));
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let h = loaded.history;
    assert_eq!(h.initial_value(), None);
    let k = store::Key::int(7);
    assert_eq!(
        txns(&h),
        [
            (
                0,
                true,
                vec![
                    MicroOp::Read(k.clone(), ReadValue::Nil),
                    MicroOp::Write(k.clone(), Val::int(100)),
                ]
            ),
            (
                1,
                true,
                vec![MicroOp::Read(k, ReadValue::Scalar(Val::int(100)))]
            ),
        ]
    );
    // Written and read back: the same transactions.
    let out = dir.path().join("out");
    import::write_peer(&out, &h, PeerFormat::Cobra).unwrap();
    let again = import::load(&out, Some(FileFormat::Peer(PeerFormat::Cobra))).unwrap();
    assert_eq!(again.history.to_ops(), h.to_ops());
    // A text history through Cobra: reads of 0 become initial-state reads.
    let t = load("lost-update.txt");
    let out2 = dir.path().join("lu");
    let w = import::write_peer(&out2, &t, PeerFormat::Cobra).unwrap();
    assert!(w.is_empty(), "{w:?}");
    let c = import::load(&out2, None).unwrap().history;
    let first = &txns(&c)[0].2[0];
    assert_eq!(first, &MicroOp::Read(store::Key::int(0), ReadValue::Nil));
    // A value written to two keys: write ids are renumbered, said in a warning.
    let t = load("causal.txt");
    let out3 = dir.path().join("causal");
    let w = import::write_peer(&out3, &t, PeerFormat::Cobra).unwrap();
    assert!(w.iter().any(|w| w.contains("renumbered")), "{w:?}");
    let c = import::load(&out3, None).unwrap().history;
    let shape = |h: &History| {
        txns(h)
            .into_iter()
            .map(|x| {
                (
                    x.0,
                    x.2.iter()
                        .map(|m| (m.f_name(), m.key().clone()))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&c).len(), 3);
    assert_eq!(
        shape(&c).into_iter().map(|x| x.1).collect::<Vec<_>>(),
        shape(&t).into_iter().map(|x| x.1).collect::<Vec<_>>()
    );
}

#[test]
fn malformed_cobra_logs_name_file_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[u8], &str); 4] = [
        (
            b"S\0\0\0\0\0\0\0\x01W\0\0",
            "byte 9: the log ends inside a `W` record",
        ),
        (b"S\0\0\0\0\0\0\0\x01Z", "byte 9: unknown record type 0x5a"),
        (b"S\0\0\0\0\0\0\0\x01", "the log ends inside transaction 1"),
        (
            b"C\0\0\0\0\0\0\0\x01",
            "byte 0: commit of transaction 1 that is not the open one",
        ),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("c{i}.log"));
        std::fs::write(&p, bytes).unwrap();
        let got = import::load(&p, Some(FileFormat::Peer(PeerFormat::Cobra)))
            .map(|l| format!("{:?}", l.history.to_ops()))
            .expect_err("malformed log read");
        let got = got.to_string();
        assert!(got.contains(want), "{got:?} lacks {want:?}");
        assert!(got.contains(&format!("c{i}.log")), "{got}");
    }
    let empty = tempfile::tempdir().unwrap();
    let e = import::load(empty.path(), None).expect_err("an empty directory read");
    assert!(e.to_string().contains("without *.log files"), "{e}");
}

#[test]
fn our_formats_take_initial_reads_as_nil() {
    let h = load("initial-only.txt");
    let init = h.initial_value().cloned().unwrap();
    let mut ops: Vec<Op> = h.into_ops();
    import::initial_reads_to_nil(&mut ops, &init);
    let nil_reads = ops
        .iter()
        .filter(|o| o.op_type == OpType::Ok)
        .flat_map(|o| o.value.txn().unwrap_or(&[]))
        .filter(|m| matches!(m, MicroOp::Read(_, ReadValue::Nil)))
        .count();
    assert_eq!(nil_reads, 2);
}

#[test]
fn format_names() {
    for n in ["text", "polysi", "plume", "isovista", "awdit"] {
        assert_eq!(FileFormat::parse(n), Ok(FileFormat::Peer(PeerFormat::Text)));
    }
    assert_eq!(
        FileFormat::parse("DBCOP"),
        Ok(FileFormat::Peer(PeerFormat::Dbcop))
    );
    let e = FileFormat::parse("xml").unwrap_err();
    assert!(e.contains("known formats: jsonl"), "{e}");
}

mod never_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn text_and_dbcop_readers_never_panic(s in "[rw(),0-9\\-\\n #\\[\\]{}\":a-zA-Z]{0,200}") {
            let _ = import::read_peer_str(&s, PeerFormat::Text);
            let _ = import::read_peer_str(&s, PeerFormat::Dbcop);
        }

        #[test]
        fn cobra_reader_never_panics(bytes in proptest::collection::vec(
            prop_oneof![Just(b'S'), Just(b'C'), Just(b'W'), Just(b'R'), any::<u8>()], 0..120)) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("T1.log");
            std::fs::write(&p, &bytes).unwrap();
            let _ = import::load(dir.path(), None);
        }
    }
}

#[test]
fn text_tolerates_crlf_blank_lines_comments_and_spaces() {
    let h = import::read_peer_str(
        "# a comment\r\n\r\nw( 1, 2 ,0,1)\r\n  r(1,2,1,2)  \r\n",
        PeerFormat::Text,
    )
    .unwrap();
    let t = txns(&h);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[1].2,
        [MicroOp::Read(
            store::Key::int(1),
            ReadValue::Scalar(Val::int(2))
        )]
    );
}
