//! The text reader's tests: the streaming path against the general one,
//! and the usual line's parser against the general parser.

use super::*;

/// The general path's ops: [`read`], then one op per transaction.
fn general(text: &str) -> Vec<crate::history::Op> {
    let txns = read(text.as_bytes(), None).unwrap();
    History::new(to_ops(txns)).unwrap().to_ops()
}

/// [`stream`] reads the usual files (adjacent lines, `-1` runs, ids
/// below -1, ids beyond the bit table, lines the fast parser leaves to
/// [`parse_line`]) into the ops the general path makes.
#[test]
fn streamed_ops_are_the_general_paths() {
    let cases = [
        "w(1,1,0,0)\nr(1,1,0,1)\nw(2,2,0,1)\nr(2,2,1,2)\n",
        "w(1,1,0,-1)\nw(2,1,0,-1)\nw(3,1,1,-1)\nr(1,0,0,4)\nw(1,5,0,-1)\n",
        "w(1,1,0,-7)\nw(2,1,0,-7)\nw(3,1,0,-8)\nr(3,0,2,900000000000)\n",
        "# c\n\n w(1, 1,0,3) \r\nr(1,1,0,3)\r\nr(-2,-5,1,4)",
    ];
    for text in cases {
        let b = stream(text.as_bytes(), None).unwrap().unwrap();
        assert_eq!(b.finish().unwrap().to_ops(), general(text), "{text}");
    }
}

/// A transaction whose lines are not adjacent (after another one, or
/// after a `-1` run) is left to [`read`]; [`build`] still groups it.
#[test]
fn interleaved_transactions_take_the_general_path() {
    for text in [
        "w(1,1,0,1)\nw(2,1,0,2)\nr(2,1,0,1)\n",
        "w(1,1,0,1)\nw(2,1,0,-1)\nr(2,0,0,1)",
    ] {
        assert!(stream(text.as_bytes(), None).unwrap().is_none(), "{text}");
        let built = build(text.as_bytes(), None).unwrap().unwrap();
        assert_eq!(built.to_ops(), general(text));
    }
}

/// The fast parser reads what [`parse_line`] reads, up to the newline
/// or the end, and leaves it the rest (spaces, CR, overflow, missing
/// fields, trailing text).
#[test]
fn the_usual_line_parser_agrees_with_the_general_one() {
    let usual = |l: &str| scan_usual(l.as_bytes()).map(|(p, _)| p);
    for l in ["w(1,2,3,4)", "r(-1,0,9,-1)", "r(123456789012345678,1,2,3)"] {
        assert_eq!(usual(l), parse_line(l.as_bytes()).ok(), "{l}");
        let next = format!("{l}\nw(5,6,7,8)");
        assert_eq!(scan_usual(next.as_bytes()).map(|(_, n)| n), Some(l.len()));
    }
    let others = "w(1,2,3) w(_1,2,3,4) r(1234567890123456789,1,2,3) w(1,2,3,4)x w(1,2,3,4 \
        r(99999999999999999999999,1,2,3) x(1,2,3,4) w(-,2,3,4) w(1,2,3,4,5) w(1-2,3,4,5) \
        w(1,2,3,4)\\r w(1,,3,4) w(--1,2,3,4) w(1,2,3,4)) r() r(";
    for l in others
        .split_whitespace()
        .map(|l| l.replace('_', " ").replace("\\r", "\r"))
    {
        assert_eq!(usual(&l), None, "{l}");
    }
}
