//! `store::format`'s JSON fast paths against its general parser.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use store::format::{self, Format};
use store::{Key, MicroOp, OpIndex, OpValue, ReadValue, Val};

fn jsonl(text: &str) -> format::ReadOutcome {
    format::read_str(text, Format::JsonLines).unwrap_or_else(|e| panic!("{e}"))
}

/// `[["append", k, v], ["r", rk, list]]` of `[k, v, rk]`.
fn append_then_read([k, v, rk]: [i64; 3], list: [i64; 2]) -> OpValue {
    OpValue::Txn(vec![
        MicroOp::Append(Key::int(k), Val::int(v)),
        MicroOp::Read(
            Key::int(rk),
            ReadValue::List(list.map(Val::int).to_vec().into()),
        ),
    ])
}

/// The JSON fast paths (integers summed unchecked up to 18 digits, the
/// usual names compared whole) read what the general parser reads: at the
/// 18/19-digit edge, at `i64`'s limits, and names spelled with escapes.
#[test]
fn integers_at_every_width_and_escaped_names_read_as_the_general_parser_does() {
    let (e18, e19) = (999_999_999_999_999_999_i64, 1_000_000_000_000_000_000);
    let ints = [e18, e19, -e18, -e19, i64::MAX, i64::MIN, 0];
    for i in ints {
        let line = format!(
            "{{\"index\":0,\"time\":{i},\"type\":\"ok\",\"process\":1,\"value\":[[\"append\",{i},{i}],[\"r\",{i},[{i},7]]]}}\n"
        );
        let op = &jsonl(&line).ops[0];
        assert_eq!(op.time_ns, Some(i), "{line}");
        assert_eq!(op.value, append_then_read([i, i, i], [i, 7]), "{line}");
    }
    // One past the limit is no integer: not silently wrapped.
    let e = format::read_str(
        "{\"index\":9223372036854775808,\"type\":\"ok\"}\n",
        Format::JsonLines,
    )
    .unwrap_err();
    assert!(e.to_string().contains("index"), "{e}");
    // A leading zero is refused, 18 digits or not.
    for bad in ["01", "0123456789012345678"] {
        let text = format!("{{\"index\":0,\"type\":\"ok\",\"value\":[[\"append\",1,{bad}]]}}\n");
        assert!(
            format::read_str(&text, Format::JsonLines).is_err(),
            "{text}"
        );
    }
    let plain = jsonl("{\"index\":4,\"type\":\"ok\",\"value\":[[\"append\",1,2],[\"r\",1,[2]]]}\n");
    let escaped = jsonl(
        "{\"\\u0069ndex\":4,\"t\\u0079pe\":\"ok\",\"value\":[[\"app\\u0065nd\",1,2],[\"\\u0072\",1,[2]]]}\n",
    );
    assert_eq!(plain.ops, escaped.ops);
    assert_eq!(plain.ops[0].index, OpIndex(4));
}

/// Integers of every width up to 19 digits, read by whole words of eight
/// digits where they fit (a time in nanoseconds has 10–12), keep their
/// value, sign and end, wherever they stand in the line.
#[test]
fn integers_read_by_words_keep_their_value_at_every_width() {
    for width in 1..=19 {
        for digits in [
            "8876543210987654321",
            "1000000000000000000",
            "1203456789012345678",
        ] {
            let i: i64 = digits[..width].parse().unwrap();
            for v in [i, -i] {
                let line = format!(
                    "{{\"index\":{i},\"time\":{i},\"type\":\"ok\",\"process\":1,\"f\":\"txn\",\"value\":[[\"append\",{v},{i}],[\"r\",{i},[{v},{i}]]]}}\n"
                );
                let op = &jsonl(&line).ops[0];
                assert_eq!(op.index, OpIndex(i as u64), "{line}");
                assert_eq!(op.time_ns, Some(i), "{line}");
                assert_eq!(op.value, append_then_read([v, i, i], [v, i]), "{line}");
            }
        }
    }
    // Nine to fifteen digits then a fraction or an exponent: no integer.
    for tail in [".5", "e3", "E3"] {
        let text = format!(
            "{{\"index\":0,\"type\":\"ok\",\"value\":[[\"append\",1,123456789012{tail}]]}}\n"
        );
        assert!(
            format::read_str(&text, Format::JsonLines).is_err(),
            "{text}"
        );
    }
}

/// Every op of `text` as the JSON Lines reader gives it without sharing
/// list reads (each list parsed element by element), or its first error.
fn unshared(text: &str) -> Result<Vec<store::Op>, String> {
    format::OpReader::new(text.as_bytes(), Format::JsonLines, None)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// What the shared reader (list reads compared byte-wise with the key's
/// longest read) gives for `text`.
fn shared(text: &str) -> Result<Vec<store::Op>, String> {
    format::read_str(text, Format::JsonLines)
        .map(|o| o.ops)
        .map_err(|e| e.to_string())
}

fn read_line(i: usize, key: &str, list: &str) -> String {
    format!("{{\"index\":{i},\"type\":\"ok\",\"process\":1,\"value\":[[\"r\",{key},{list}]]}}\n")
}

#[test]
fn a_read_that_repeats_or_extends_the_keys_longest_read_shares_its_buffer() {
    let text = [
        read_line(0, "1", "[1,2]"),
        read_line(1, "1", "[1,2,3]"),
        read_line(2, "1", "[1]"),
        read_line(3, "1", "[1,2,3]"),
        // `12` begins with the bytes of `1`: not the same element.
        read_line(4, "1", "[12]"),
        read_line(5, "2", "[1,2]"),
    ]
    .concat();
    let ops = shared(&text).unwrap();
    assert_eq!(Ok(ops.clone()), unshared(&text));
    let list = |i: usize| match &ops[i].value {
        OpValue::Txn(m) => match &m[0] {
            MicroOp::Read(_, ReadValue::List(l)) => l.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert!(list(0).shares(&list(1)) && list(1).shares(&list(2)) && list(2).shares(&list(3)));
    assert_eq!(list(4), store::ValList::from(vec![Val::int(12)]));
    assert!(!list(4).shares(&list(1)));
    assert!(!list(5).shares(&list(0)));
}

mod generated {
    use super::*;
    use proptest::prelude::*;

    /// List elements: integers that begin with another's bytes, strings
    /// with commas and escapes, and a few that are no atom or no JSON.
    fn element() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => prop_oneof![Just("1"), Just("12"), Just("123"), Just("-1"), Just("0"), Just("99999999"), Just("123456789012")].prop_map(str::to_string),
            2 => prop_oneof![Just("\"a\""), Just("\"a,b\""), Just("\"\\u0031\""), Just("\":k\""), Just("\"a]\"")].prop_map(str::to_string),
            1 => prop_oneof![Just("01"), Just("1.5"), Just("1e3"), Just("x"), Just("null"), Just("[1]"), Just("-"), Just("\"")].prop_map(str::to_string),
        ]
    }

    fn separator() -> impl Strategy<Value = &'static str> {
        prop_oneof![6 => Just(","), 1 => Just(", "), 1 => Just(" ,"), 1 => Just(",\t")]
    }

    /// A read of a key: the key (0–2), how much of its base list, an
    /// element changed (position, text), elements added, the separators,
    /// whether the brackets have blanks inside.
    type Read = (
        u8,
        usize,
        Option<(usize, String)>,
        Vec<String>,
        Vec<&'static str>,
        bool,
    );

    /// A [`Read`]: a prefix of the key's base list, maybe with an element
    /// changed and more added, written with these separators.
    fn read() -> impl Strategy<Value = Read> {
        (
            0u8..3,
            0usize..10,
            proptest::option::weighted(0.2, (0usize..10, element())),
            prop::collection::vec(element(), 0..3),
            prop::collection::vec(separator(), 12),
            proptest::bool::weighted(0.1),
        )
    }

    fn render(
        bases: &[Vec<String>],
        (key, len, change, more, seps, blank): &Read,
    ) -> (String, String) {
        let base = &bases[usize::from(*key)];
        let mut items: Vec<String> = base[..(*len).min(base.len())].to_vec();
        if let Some((at, e)) = change
            && *at < items.len()
        {
            items[*at] = e.clone();
        }
        items.extend(more.iter().cloned());
        let mut list = String::from(if *blank { "[ " } else { "[" });
        for (i, e) in items.iter().enumerate() {
            if i > 0 {
                list.push_str(seps[i % seps.len()]);
            }
            list.push_str(e);
        }
        list.push_str(if *blank { " ]" } else { "]" });
        (key.to_string(), list)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The shared reader gives exactly what the element-by-element
        /// reader gives: the same ops, or the same error at the same place.
        #[test]
        fn shared_list_reads_read_as_unshared_ones(
            bases in prop::collection::vec(prop::collection::vec(element(), 0..10), 3),
            reads in prop::collection::vec(read(), 1..12),
        ) {
            let text: String = reads
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let (key, list) = render(&bases, r);
                    read_line(i, &key, &list)
                })
                .collect();
            prop_assert_eq!(shared(&text), unshared(&text), "{}", text);
        }

        /// An integer-like token reads in every fast position (index,
        /// time, process, key, appended value, list element after a
        /// shared prefix) as the general data parser reads it in an extra
        /// field: the same integer, or no op at all.
        #[test]
        fn integer_tokens_read_as_the_data_parser_reads_them(
            tok in "-?[0-9]{0,21}(\\.[0-9]{1,2})?([eE][+-]?[0-9]{1,2})?[ ]?",
        ) {
            let general = format::read_str(
                &format!("{{\"index\":0,\"type\":\"ok\",\"x\":{tok}}}\n"),
                Format::JsonLines,
            );
            let int = match &general {
                Ok(o) => match o.ops[0].extra.first() {
                    Some((_, store::Data::Int(i))) => Some(*i),
                    _ => None,
                },
                Err(_) => None,
            };
            let one = |line: String| format::read_str(&line, Format::JsonLines).map(|o| o.ops);
            let index = one(format!("{{\"index\":{tok},\"type\":\"ok\"}}\n"));
            prop_assert_eq!(
                index.as_ref().ok().map(|ops| ops[0].index.0),
                int.filter(|&i| i >= 0).map(|i| i as u64)
            );
            let time = one(format!("{{\"index\":0,\"time\":{tok},\"type\":\"ok\"}}\n"));
            prop_assert_eq!(
                time.as_ref().ok().map(|ops| ops[0].time_ns),
                int.map(|i| (i != -1).then_some(i))
            );
            let process = one(format!("{{\"index\":0,\"process\":{tok},\"type\":\"ok\"}}\n"));
            prop_assert_eq!(
                process.is_ok(),
                int.is_some_and(|i| i >= 0)
            );
            let txn = one(format!(
                "{{\"index\":0,\"type\":\"ok\",\"value\":[[\"r\",{tok},[1,2]]]}}\n{{\"index\":1,\"type\":\"ok\",\"value\":[[\"append\",7,{tok}],[\"r\",{tok},[1,2,{tok}]]]}}\n"
            ));
            let expected = int.map(|i| {
                vec![
                    MicroOp::Append(Key::int(7), Val::int(i)),
                    MicroOp::Read(
                        Key::int(i),
                        ReadValue::List(vec![Val::int(1), Val::int(2), Val::int(i)].into()),
                    ),
                ]
            });
            prop_assert_eq!(
                txn.as_ref().ok().map(|ops| ops[1].value.clone()),
                expected.map(OpValue::Txn)
            );
        }
    }
}
