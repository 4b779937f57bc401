//! `store::format`: reading, writing, encodings, positions of errors.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::Write;
use store::format::{self, Format, OpReader};
use store::{Atom, Data, F, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ReadValue, Val};

fn jsonl(text: &str) -> format::ReadOutcome {
    format::read_str(text, Format::JsonLines).unwrap_or_else(|e| panic!("{e}"))
}

fn edn(text: &str) -> format::ReadOutcome {
    format::read_str(text, Format::Edn).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str, f: Format) -> format::FormatError {
    match format::read_str(text, f) {
        Ok(o) => panic!("expected an error, read {:?}", o.ops),
        Err(e) => e,
    }
}

fn round_trip(ops: &[Op]) {
    for f in [Format::JsonLines, Format::ElleJson, Format::Edn] {
        let mut buf = Vec::new();
        format::write_ops(&mut buf, ops, f).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let back = format::read_str(&text, f).unwrap_or_else(|e| panic!("{f}: {e}\n{text}"));
        assert_eq!(back.ops, ops, "{f}:\n{text}");
    }
}

#[test]
fn native_json_lines_example_reads() {
    let out = jsonl(concat!(
        r#"{"index":0,"time":12000,"type":"invoke","process":0,"f":"txn","value":[["append",3,7],["r",4,null]]}"#,
        "\n",
        r#"{"index":1,"time":15500,"type":"ok","process":0,"f":"txn","value":[["append",3,7],["r",4,[1,7]]]}"#,
        "\n",
        r#"{"index":2,"time":16000,"type":"info","process":"nemesis","f":"start-partition","value":{"n1":["n2","n3"]}}"#,
        "\n"
    ));
    assert!(out.warnings.is_empty());
    assert_eq!(out.ops.len(), 3);
    let ok = &out.ops[1];
    assert_eq!(ok.time_ns, Some(15500));
    assert_eq!(ok.op_type, OpType::Ok);
    assert_eq!(
        ok.value,
        OpValue::Txn(vec![
            MicroOp::Append(Key::int(3), Val::int(7)),
            MicroOp::Read(
                Key::int(4),
                ReadValue::List(vec![Val::int(1), Val::int(7)].into())
            ),
        ])
    );
    let nem = &out.ops[2];
    assert_eq!(nem.process, Some(Process::Nemesis));
    assert_eq!(nem.f, Some(F::StartPartition));
    assert_eq!(
        nem.value,
        OpValue::Data(Box::new(Data::Map(vec![(
            Data::Str("n1".into()),
            Data::Vec(vec![Data::Str("n2".into()), Data::Str("n3".into())])
        )])))
    );
    round_trip(&out.ops);
}

#[test]
fn jepsen_edn_with_records_sets_keywords_reads() {
    let out = edn(concat!(
        "; a comment\n",
        "{:type :invoke, :f :txn, :value [[:append 1 2] [:r 1 nil]], :process 0, :time 123, :index 4}\n",
        "#jepsen.history.Op{:index 5, :time 130, :type :ok, :process 0, :f :txn, :value [[:append 1 2] [:r 1 [1 2]]]}\n",
        "{:index 6 :type :info :process :nemesis :f :start-partition :value {\"n1\" #{\"n2\" \"n3\"}} :node \"n1\"}\n",
        "{:index 7 :type :ok :process 1 :f :txn :value [[:w :x 2] [:r :y \"s\"]] :error [:timeout \"t\\n\"]}\n",
    ));
    let ops = &out.ops;
    assert_eq!(ops.len(), 4);
    assert_eq!(ops[0].index, OpIndex(4));
    assert_eq!(ops[1].index, OpIndex(5));
    assert_eq!(ops[1].time_ns, Some(130));
    assert_eq!(
        ops[2].value,
        OpValue::Data(Box::new(Data::Map(vec![(
            Data::Str("n1".into()),
            Data::Set(vec![Data::Str("n2".into()), Data::Str("n3".into())])
        )])))
    );
    assert_eq!(
        *ops[2].extra,
        [("node".to_string(), Data::Str("n1".into()))]
    );
    assert_eq!(
        ops[3].value,
        OpValue::Txn(vec![
            MicroOp::Write(Key(Atom::Keyword("x".into())), Val::int(2)),
            MicroOp::Read(
                Key(Atom::Keyword("y".into())),
                ReadValue::Scalar(Val(Atom::Str("s".into())))
            ),
        ])
    );
    assert_eq!(
        ops[3].error.as_deref(),
        Some(&Data::Vec(vec![
            Data::Keyword("timeout".into()),
            Data::Str("t\n".into())
        ]))
    );
    round_trip(ops);
}

#[test]
fn keywords_survive_json_with_a_colon_and_strings_that_look_like_them_are_escaped() {
    let out = edn("{:index 0 :type :ok :f :txn :value [[:w :x 1] [:w \":y\" 2] [:w \"#z\" 3]]}\n");
    let line = format::to_json_line(&out.ops[0]);
    assert!(line.contains(r#"["w",":x",1]"#), "{line}");
    assert!(line.contains(r#"["w","\\:y",2]"#), "{line}");
    assert!(line.contains(r#"["w","\\#z",3]"#), "{line}");
    // `type` and `f` stay plain strings.
    assert!(
        line.contains(r#""type":"ok""#) && line.contains(r#""f":"txn""#),
        "{line}"
    );
    let back = jsonl(&line);
    assert_eq!(back.ops, out.ops);
}

#[test]
fn edn_only_values_have_a_json_encoding() {
    let v = Data::Vec(vec![
        Data::Set(vec![Data::Int(1)]),
        Data::Map(vec![(Data::Int(1), Data::Keyword("a".into()))]),
        Data::Symbol("sym".into()),
        Data::Tagged("inst".into(), Box::new(Data::Str("2020".into()))),
        Data::Float(f64::INFINITY),
        Data::Float(1.0),
        Data::Map(vec![(Data::Str("#set".into()), Data::Vec(vec![]))]),
    ]);
    let op = Op {
        index: OpIndex(0),
        time_ns: None,
        op_type: OpType::Info,
        process: Some(Process::Nemesis),
        f: Some(F::Other("weird".into())),
        value: OpValue::Data(Box::new(v)),
        error: None,
        extra: vec![("x-y".into(), Data::Nil)].into(),
    };
    let line = format::to_json_line(&op);
    assert!(line.contains(r##"{"#set":[1]}"##), "{line}");
    assert!(line.contains(r##"{"#map":[[1,":a"]]}"##), "{line}");
    assert!(line.contains(r##"{"#sym":"sym"}"##), "{line}");
    assert!(line.contains(r##"{"#float":"Infinity"}"##), "{line}");
    assert!(line.contains(r##"{"\\#set":[]}"##), "{line}");
    round_trip(&[op]);
}

#[test]
fn elle_json_array_and_completion_only_edn_read_with_indices_in_file_order() {
    let a = jsonl(
        r#"[{"index":0,"process":0,"type":"invoke","value":[["append",1,1]]},
 {"index":1,"process":0,"type":"ok","value":[["append",1,1]]}]"#,
    );
    assert_eq!(a.ops.len(), 2);
    assert_eq!(a.format, Format::JsonLines);
    // Elle's README style: completions only, no index/process/time/f.
    let b = edn(
        "{:type :ok, :value [[:append :x 1] [:r :y [1]]]}\n{:type :ok, :value [[:r :x [1]]]}\n",
    );
    assert_eq!(b.ops.len(), 2);
    assert_eq!(b.ops[0].index, OpIndex(0));
    assert_eq!(b.ops[1].index, OpIndex(1));
    assert_eq!(b.ops[0].process, None);
    assert_eq!(b.ops[0].time_ns, None);
    assert_eq!(b.ops[0].f, None);
    // A vector of ops as one form, and an index gap continues from the last.
    let c = edn("[{:index 7 :type :ok :value []} {:type :fail :value nil}]");
    assert_eq!(c.ops[1].index, OpIndex(8));
    let h = store::History::new(b.ops).unwrap();
    assert_eq!(h.invocation(0).map(|p| h.index(p)), Some(OpIndex(0)));
}

#[test]
fn elle_time_minus_one_is_absent_and_stays_absent() {
    let out = jsonl(r#"{"index":0,"time":-1,"type":"ok","value":[]}"#);
    assert_eq!(out.ops[0].time_ns, None);
    assert!(!format::to_json_line(&out.ops[0]).contains("time"));
    assert!(!format::to_edn(&out.ops[0]).contains(":time"));
}

#[test]
fn a_nul_padded_tail_is_a_warning_and_the_ops_before_it_are_kept() {
    // The history log of a run killed before it closed its mapped log.
    let good = r#"{"index":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}"#;
    let pad = "\0".repeat(5000);
    let out = jsonl(&format!("{good}\n{good}\n{pad}"));
    assert_eq!(out.ops.len(), 2);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].contains(":3:1: the input ends in 5000 NUL bytes"),
        "{}",
        out.warnings[0]
    );
    // Killed after the op's bytes but before its newline: the op counts.
    let out = jsonl(&format!("{good}\n{good}{pad}"));
    assert_eq!(
        (out.ops.len(), out.warnings.len()),
        (2, 1),
        "{:?}",
        out.warnings
    );
    // Killed mid-copy: the torn line is reported too.
    let out = jsonl(&format!("{good}\n{}{pad}", &good[..20]));
    assert_eq!(out.ops.len(), 1);
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains(":2:21: the input ends in"))
    );
    assert!(out.warnings.iter().any(|w| w.contains("torn last line")));
    // A NUL anywhere but the tail is an error, as before.
    let e = format::read_str(&format!("{good}\n\0\n{good}\n"), Format::JsonLines).unwrap_err();
    assert!(e.to_string().contains(":2:1:"), "{e}");
}

#[test]
fn torn_last_line_is_a_warning_and_the_prefix_is_used() {
    let good = r#"{"index":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}"#;
    for cut in [1, 10, good.len() - 1] {
        let text = format!("{good}\n{}", &good[..cut]);
        let out = jsonl(&text);
        assert_eq!(out.ops.len(), 1, "cut {cut}");
        assert_eq!(out.warnings.len(), 1, "cut {cut}");
        assert!(
            out.warnings[0].contains(":2:1: torn last line"),
            "{}",
            out.warnings[0]
        );
    }
    let e = "{:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}";
    for cut in [1, 5, 20, e.len() - 1] {
        let out = edn(&format!("{e}\n{}", &e[..cut]));
        assert_eq!(out.ops.len(), 1, "cut {cut}");
        assert_eq!(out.warnings.len(), 1, "cut {cut}: {:?}", out.warnings);
    }
    let arr = "[{\"index\":0,\"type\":\"ok\",\"value\":[]},\n {\"index\":1,\"ty";
    let out = jsonl(arr);
    assert_eq!((out.ops.len(), out.warnings.len()), (1, 1));
}

#[test]
fn truncation_followed_by_a_newline_is_an_error_with_its_position() {
    let e = err(
        "{\"index\":0,\"type\":\"ok\"}\n{\"index\":1,\"type\":\n{\"index\":2,\"type\":\"ok\"}\n",
        Format::JsonLines,
    );
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("truncated"), "{e}");
    let e = err("{:index 0 :type :ok\n", Format::Edn);
    assert!(e.reason.contains("end of input"), "{e}");
}

#[test]
fn malformed_input_names_line_column_and_reason() {
    let cases: &[(&str, Format, u64, &str)] = &[
        (
            "{\"index\":0,\"type\":\"ok\"}\n{\"index\":\"x\",\"type\":\"ok\"}\n",
            Format::JsonLines,
            2,
            "index",
        ),
        (
            "{\"index\":0,\"type\":\"maybe\"}\n",
            Format::JsonLines,
            1,
            "unknown op type",
        ),
        (
            "{\"index\":0}\n",
            Format::JsonLines,
            1,
            "missing field `type`",
        ),
        (
            "{\"type\":\"ok\",\"value\":[[\"append\",1]]}\n",
            Format::JsonLines,
            1,
            "micro-op 0",
        ),
        (
            "{\"type\":\"ok\",\"value\":[[\"frob\",1,2]]}\n",
            Format::JsonLines,
            1,
            "unknown micro-op",
        ),
        (
            "{\"type\":\"ok\",\"process\":-3}\n",
            Format::JsonLines,
            1,
            "negative process",
        ),
        (
            "{\"type\":\"ok\",\"type\":\"ok\"}\n",
            Format::JsonLines,
            1,
            "duplicate",
        ),
        (
            "{\"type\":\"ok\"} x\n",
            Format::JsonLines,
            1,
            "after the op",
        ),
        (
            "\n\n  nonsense\n",
            Format::JsonLines,
            3,
            "expected an op object",
        ),
        ("{:type :ok}\n{:type :ok]\n", Format::Edn, 2, "unbalanced"),
        ("{:type :ok}\n}\n", Format::Edn, 2, "unbalanced"),
        ("{:type :ok :index}\n", Format::Edn, 1, "odd number"),
        (
            "{:type :ok :value \"\\q\"}\n",
            Format::Edn,
            1,
            "invalid escape",
        ),
        (
            "{:type :ok :index 99999999999999999999}\n",
            Format::Edn,
            1,
            "64 bits",
        ),
        ("[1 2]\n", Format::Edn, 1, "expected an op map"),
        ("{:type :ok}\n:x\n", Format::Edn, 2, "expected an op map"),
    ];
    for (text, f, line, needle) in cases {
        let e = err(text, *f);
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.column.is_some(), "{text:?}: {e}");
        assert!(e.reason.contains(needle), "{text:?}: {e}");
    }
}

#[test]
fn nesting_is_bounded_not_a_stack_overflow() {
    let deep = format!(
        "{{\"type\":\"ok\",\"value\":{}1{}}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = err(&deep, Format::JsonLines);
    assert!(e.reason.contains("nesting"), "{e}");
    let deep = format!(
        "{{:type :ok :value {}1{}}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = err(&deep, Format::Edn);
    assert!(e.reason.contains("nesting"), "{e}");
    let deep = format!("{{:type :ok :value {}1}}\n", "#_ ".repeat(100_000));
    let _ = format::read_str(&deep, Format::Edn);
}

#[test]
fn files_errors_name_the_file_and_detection_uses_content_then_extension() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.json");
    std::fs::write(&p, "{:type :ok :value []}\n").unwrap();
    // EDN content in a .json file: the content wins.
    assert_eq!(format::read_path(&p).unwrap().format, Format::Edn);
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "{\"type\":\"ok\"}\n{\"type\":7}\n").unwrap();
    let e = format::read_path(&p).unwrap_err();
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("{}:2:", p.display())), "{shown}");
    let p = dir.path().join("empty.edn");
    std::fs::write(&p, "").unwrap();
    let out = format::read_path(&p).unwrap();
    assert_eq!((out.ops.len(), out.format), (0, Format::Edn));
    assert_eq!(Format::sniff(b"  [ {\"index\""), Some(Format::ElleJson));
    assert_eq!(Format::sniff(b"{:index 0"), Some(Format::Edn));
    assert_eq!(Format::sniff(b"#jepsen.history.Op{"), Some(Format::Edn));
    assert_eq!(Format::sniff(b"[]"), None);
}

#[test]
fn a_huge_single_line_is_refused_with_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        f.write_all(b"{\"type\":\"ok\"}\n{\"type\":\"ok\",\"value\":\"")
            .unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\"}\n").unwrap();
    }
    let e = format::read_path(&p).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.reason.contains("MiB"), "{e}");
    // The same as EDN: one form too large.
    let p = dir.path().join("huge.edn");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        f.write_all(b"{:type :ok :value \"").unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\"}\n").unwrap();
    }
    let e = format::read_path(&p).unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    assert!(e.reason.contains("MiB"), "{e}");
}

#[test]
fn the_reader_streams_across_chunk_boundaries() {
    // Many ops spanning several 1 MiB chunks, in every format, with ops and
    // tokens cut at arbitrary chunk boundaries.
    let ops: Vec<Op> = (0..30_000u64)
        .map(|i| {
            Op::txn(
                i,
                if i.is_multiple_of(2) {
                    OpType::Invoke
                } else {
                    OpType::Ok
                },
                i % 7,
                vec![
                    MicroOp::Append(Key::int((i % 13) as i64), Val::int(i as i64)),
                    MicroOp::Read(
                        Key(Atom::Keyword(format!("k{}", i % 5).into())),
                        ReadValue::List((0..(i % 11) as i64).map(Val::int).collect()),
                    ),
                ],
            )
        })
        .collect();
    for f in [Format::JsonLines, Format::ElleJson, Format::Edn] {
        let mut buf = Vec::new();
        format::write_ops(&mut buf, &ops, f).unwrap();
        assert!(buf.len() > 2 << 20);
        // A reader that returns odd-sized pieces.
        struct Odd<'a>(&'a [u8], usize);
        impl std::io::Read for Odd<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                self.1 = (self.1 * 31 + 7) % 4093 + 1;
                let n = self.1.min(out.len()).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let r = OpReader::new(Odd(&buf, 1), f, None);
        let back: Result<Vec<Op>, _> = r.collect();
        assert_eq!(back.unwrap(), ops, "{f}");
    }
}

/// The list reads of a key read whole share one buffer where one is a prefix
/// of another, in every format, and read back exactly as written.
#[test]
fn list_reads_of_a_key_share_one_buffer() {
    let text = concat!(
        r#"{"index":0,"type":"ok","process":0,"f":"txn","value":[["r",1,[1]],["r",2,[5]]]}"#,
        "\n",
        r#"{"index":1,"type":"ok","process":0,"f":"txn","value":[["r",1,[1,2,3]]]}"#,
        "\n",
        r#"{"index":2,"type":"ok","process":0,"f":"txn","value":[["r",1,[1,2]],["r",1,[1,9]]]}"#,
        "\n",
    );
    let lists = |ops: &[Op]| -> Vec<store::ValList> {
        ops.iter()
            .flat_map(|o| o.value.txn().unwrap().iter())
            .filter_map(|m| match m {
                MicroOp::Read(_, ReadValue::List(l)) => Some(l.clone()),
                _ => None,
            })
            .collect()
    };
    let jsonl = format::read_str(text, Format::JsonLines).unwrap().ops;
    let mut edn = Vec::new();
    format::write_ops(&mut edn, &jsonl, Format::Edn).unwrap();
    let edn = format::read_bytes(&edn, Format::Edn).unwrap().ops;
    for ops in [&jsonl, &edn] {
        let l = lists(ops);
        let want: Vec<Vec<Val>> = [&[1][..], &[5], &[1, 2, 3], &[1, 2], &[1, 9]]
            .iter()
            .map(|v| v.iter().map(|&i| Val::int(i)).collect())
            .collect();
        assert_eq!(l.iter().map(|x| x.to_vec()).collect::<Vec<_>>(), want);
        assert!(
            l[0].shares(&l[2]) && l[2].shares(&l[3]),
            "prefixes of key 1 share"
        );
        assert!(!l[1].shares(&l[0]), "keys never share");
        assert!(!l[4].shares(&l[2]), "a diverging read has its own buffer");
    }
}

#[test]
fn range_and_count_reads_round_trip_and_bad_counts_are_refused() {
    let ops = jsonl(concat!(
        r#"{"index":0,"type":"invoke","process":0,"f":"txn","value":[["rc",[1,4],null],["rr",[1,4],null]]}"#,
        "\n",
        r#"{"index":1,"type":"ok","process":0,"f":"txn","value":[["rc",[1,4],2],["rr",[1,4],[[1,[5]],[3,[6,7]]]]]}"#,
        "\n"
    ))
    .ops;
    let OpValue::Txn(m) = &ops[1].value else {
        panic!("not a txn")
    };
    let [MicroOp::ReadRange(c), MicroOp::ReadRange(r)] = m.as_slice() else {
        panic!("{m:?}")
    };
    assert_eq!(c.kind, store::RangeKind::Count(Some(2)));
    assert_eq!(c.rows, None);
    assert_eq!(r.kind, store::RangeKind::Rows);
    assert_eq!(r.rows.as_ref().map(Vec::len), Some(2));
    round_trip(&ops);
    let e = err(
        "{:index 0 :type :ok :process 0 :f :txn :value [[:rc [1 4] -1]]}\n",
        Format::Edn,
    );
    assert!(e.to_string().contains("count of rows >= 0"), "{e}");
    let e = err(
        "{:index 0 :type :ok :process 0 :f :txn :value [[:rc [1 4] [1]]]}\n",
        Format::Edn,
    );
    assert!(e.to_string().contains("null or an integer"), "{e}");
}

#[test]
fn an_edn_list_of_ops_reads_as_the_vector_does() {
    let ops = "{:process 0, :type :invoke, :f :write, :value 1}\n \
               {:process 0, :type :ok, :f :write, :value 1}";
    let vector = edn(&format!("[{ops}]"));
    let list = edn(&format!(";; Knossos\n({ops})\n"));
    assert_eq!(list.ops.len(), 2);
    assert_eq!(list.ops, vector.ops);
    // A list is closed by `)`, not `]`, and nothing may follow it.
    let e = err(&format!("({ops}]"), Format::Edn);
    assert!(e.line >= 1, "{e}");
    let e = err(&format!("({ops}) {{:process 1}}"), Format::Edn);
    assert!(e.to_string().contains("after the closing"), "{e}");
}
