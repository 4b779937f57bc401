//! `store::format`'s JSON fast paths against its general parser.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use store::format::{self, Format};
use store::{Key, MicroOp, OpIndex, OpValue, ReadValue, Val};

fn jsonl(text: &str) -> format::ReadOutcome {
    format::read_str(text, Format::JsonLines).unwrap_or_else(|e| panic!("{e}"))
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
        assert_eq!(
            op.value,
            OpValue::Txn(vec![
                MicroOp::Append(Key::int(i), Val::int(i)),
                MicroOp::Read(
                    Key::int(i),
                    ReadValue::List(vec![Val::int(i), Val::int(7)].into())
                ),
            ]),
            "{line}"
        );
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
