//! Property tests: every reader survives random and mutated input without
//! panicking (errors carry a position), and random ops round-trip through
//! every format.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use proptest::prelude::*;
use store::format::{self, Format};
use store::{
    Atom, Data, F, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId, ReadValue, Val,
};

const FORMATS: [Format; 3] = [Format::JsonLines, Format::ElleJson, Format::Edn];

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9.*+!?<>=-]{0,8}".prop_filter("not a literal", |s| {
        !matches!(s.as_str(), "nil" | "true" | "false")
    })
}

fn atom() -> impl Strategy<Value = Atom> {
    prop_oneof![
        any::<i64>().prop_map(Atom::Int),
        ".{0,6}".prop_map(|s: String| Atom::Str(s.into())),
        name().prop_map(|s| Atom::Keyword(s.into())),
    ]
}

fn data() -> impl Strategy<Value = Data> {
    let leaf = prop_oneof![
        Just(Data::Nil),
        any::<bool>().prop_map(Data::Bool),
        any::<i64>().prop_map(Data::Int),
        any::<f64>()
            .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
            .prop_map(Data::Float),
        ".{0,6}".prop_map(Data::Str),
        name().prop_map(Data::Keyword),
        name().prop_map(Data::Symbol),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Data::Vec),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Data::Set),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(Data::Map),
            ("[a-z][a-z.]{0,6}", inner).prop_map(|(t, v)| Data::Tagged(t, Box::new(v))),
        ]
    })
}

fn micro_op() -> impl Strategy<Value = MicroOp> {
    prop_oneof![
        (atom(), atom()).prop_map(|(k, v)| MicroOp::Append(Key(k), Val(v))),
        (atom(), atom()).prop_map(|(k, v)| MicroOp::Write(Key(k), Val(v))),
        atom().prop_map(|k| MicroOp::Read(Key(k), ReadValue::Nil)),
        (atom(), atom()).prop_map(|(k, v)| MicroOp::Read(Key(k), ReadValue::Scalar(Val(v)))),
        (atom(), prop::collection::vec(atom(), 0..5)).prop_map(|(k, l)| MicroOp::Read(
            Key(k),
            ReadValue::List(l.into_iter().map(Val).collect())
        )),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let op_type = prop_oneof![
        Just(OpType::Invoke),
        Just(OpType::Ok),
        Just(OpType::Fail),
        Just(OpType::Info)
    ];
    let process = prop_oneof![
        Just(None),
        Just(Some(Process::Nemesis)),
        (0u64..1 << 40).prop_map(|p| Some(Process::Client(ProcessId(p)))),
    ];
    let client = prop::collection::vec(micro_op(), 0..4).prop_map(OpValue::Txn);
    let value_f = prop_oneof![
        (prop_oneof![Just(None), Just(Some(F::Txn))], client),
        (
            name().prop_map(|n| Some(F::parse(&n))),
            data().prop_map(|d| OpValue::Data(Box::new(d)))
        )
            .prop_filter("txn f carries a txn", |(f, _)| f != &Some(F::Txn)),
    ];
    let extra = prop::collection::btree_map(
        "[a-z][a-z-]{0,6}".prop_filter("reserved", |k| {
            !matches!(
                k.as_str(),
                "index" | "time" | "type" | "process" | "f" | "value" | "error"
            )
        }),
        data(),
        0..3,
    );
    (
        0u64..1 << 50,
        any::<Option<i64>>().prop_filter("-1 means absent", |t| *t != Some(-1)),
        op_type,
        process,
        value_f,
        prop::option::of(data()),
        extra,
    )
        .prop_map(
            |(index, time_ns, op_type, process, (f, value), error, extra)| Op {
                index: OpIndex(index),
                time_ns,
                op_type,
                process,
                f,
                value,
                error: error.map(Box::new),
                extra: extra.into_iter().collect(),
            },
        )
}

fn valid_text(ops: &[Op], f: Format) -> Vec<u8> {
    let mut buf = Vec::new();
    format::write_ops(&mut buf, ops, f).unwrap();
    buf
}

fn check_no_panic(bytes: &[u8]) {
    for f in FORMATS {
        if let Err(e) = format::read_bytes(bytes, f) {
            assert!(!e.reason.is_empty());
            // A position is given for syntax errors; shown as FILE:LINE:COL.
            let _ = e.to_string();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_ops_round_trip_through_every_format(ops in prop::collection::vec(op(), 0..6)) {
        for f in FORMATS {
            let text = valid_text(&ops, f);
            let back = format::read_bytes(&text, f)
                .unwrap_or_else(|e| panic!("{f}: {e}\n{}", String::from_utf8_lossy(&text)));
            prop_assert_eq!(&back.ops, &ops, "{}: {}", f, String::from_utf8_lossy(&text));
            prop_assert!(back.warnings.is_empty());
        }
        // JSON → EDN → JSON.
        let edn = valid_text(&ops, Format::Edn);
        let via = format::read_bytes(&edn, Format::Edn).unwrap().ops;
        let json = valid_text(&via, Format::JsonLines);
        prop_assert_eq!(format::read_bytes(&json, Format::JsonLines).unwrap().ops, ops);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_no_panic(&bytes);
    }

    #[test]
    fn random_text_of_syntax_characters_never_panics(s in r#"[\[\]{}()":,;#_\\ \n0-9a-z.+-]{0,200}"#) {
        check_no_panic(s.as_bytes());
    }

    #[test]
    fn mutated_valid_input_never_panics(
        ops in prop::collection::vec(op(), 1..4),
        fmt in 0usize..3,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..6),
    ) {
        let mut text = valid_text(&ops, FORMATS[fmt]);
        for (at, kind, byte) in edits {
            if text.is_empty() {
                break;
            }
            let i = at.index(text.len());
            match kind {
                0 => text[i] = byte,
                1 => text.insert(i, byte),
                2 => { text.remove(i); }
                _ => text.truncate(i),
            }
        }
        check_no_panic(&text);
    }

    #[test]
    fn any_cut_of_a_valid_file_is_a_prefix_plus_at_most_a_warning(
        ops in prop::collection::vec(op(), 1..5),
        fmt in 0usize..3,
        cut in any::<prop::sample::Index>(),
    ) {
        let f = FORMATS[fmt];
        let text = valid_text(&ops, f);
        let cut = cut.index(text.len());
        let part = &text[..cut];
        // Cutting right after a newline leaves a clean file; otherwise the
        // last op is torn (or, for the Elle array, the closing bracket).
        if let Ok(out) = format::read_bytes(part, f) {
            prop_assert!(out.ops.len() <= ops.len());
            prop_assert_eq!(&out.ops[..], &ops[..out.ops.len()]);
            prop_assert!(out.warnings.len() <= 1);
        } else {
            // Only a cut that ends in a newline inside an array/op may be an error.
            prop_assert!(part.last() == Some(&b'\n'), "{}", String::from_utf8_lossy(part));
        }
    }
}

/// The case the property test found: an Elle array cut right after its `[`
/// is a torn file (a warning), not an error — the reader had already dropped
/// the consumed `[` when it asked whether the input ended with a newline.
#[test]
fn an_array_cut_after_its_bracket_is_torn_not_an_error() {
    for (text, f) in [
        ("[", Format::ElleJson),
        ("  [", Format::ElleJson),
        ("[", Format::Edn),
    ] {
        let out = format::read_bytes(text.as_bytes(), f).unwrap();
        assert!(out.ops.is_empty());
        assert_eq!(out.warnings.len(), 1, "{text:?}: {:?}", out.warnings);
        assert!(out.warnings[0].contains("torn"), "{:?}", out.warnings);
    }
    // With a newline after the bracket the array is unterminated: an error.
    assert!(format::read_bytes(b"[\n", Format::ElleJson).is_err());
}
