//! A compact notation for histories in tests, and `check` helpers.
//!
//! One op per line: `TYPE PROCESS MOP…` with TYPE `invoke|ok|fail|info`,
//! micro-ops `[a k v]` (append), `[w k v]`, `[r k nil]`, `[r k [1 2]]`,
//! `[r k 5]`. A completion whose process has no open invocation gets one
//! inserted just before it (reads `nil`), so a list of completions is a
//! history of transactions executed one at a time. Keys and values are
//! integers, or keywords when written as words. `@T` after the type sets the
//! op's time in milliseconds.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::{AnalyzeOptions, Workload, analyze};
use checker::anomaly::AnomalyType;
use checker::budget::Budget;
use checker::explain::{Anomaly, render_text};
use std::collections::{BTreeMap, BTreeSet};
use store::{Atom, History, Key, MicroOp, Op, OpType, ReadValue, Val};

fn atom(s: &str) -> Atom {
    match s.parse::<i64>() {
        Ok(i) => Atom::Int(i),
        Err(_) => Atom::Keyword(s.into()),
    }
}

fn tokens(line: &str) -> Vec<String> {
    let spaced = line.replace('[', " [ ").replace(']', " ] ");
    spaced.split_whitespace().map(String::from).collect()
}

fn parse_mops(toks: &[String]) -> Vec<MicroOp> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        assert_eq!(toks[i], "[", "expected [ in {toks:?}");
        let f = toks[i + 1].as_str();
        let k = Key(atom(&toks[i + 2]));
        i += 3;
        let m = match f {
            "a" | "append" => {
                let v = Val(atom(&toks[i]));
                i += 1;
                MicroOp::Append(k, v)
            }
            "w" => {
                let v = Val(atom(&toks[i]));
                i += 1;
                MicroOp::Write(k, v)
            }
            "r" => {
                let v = if toks[i] == "[" {
                    let mut l = Vec::new();
                    i += 1;
                    while toks[i] != "]" {
                        l.push(Val(atom(&toks[i])));
                        i += 1;
                    }
                    i += 1;
                    ReadValue::List(l.into())
                } else if toks[i] == "nil" {
                    i += 1;
                    ReadValue::Nil
                } else {
                    i += 1;
                    ReadValue::Scalar(Val(atom(&toks[i - 1])))
                };
                MicroOp::Read(k, v)
            }
            other => panic!("unknown micro-op {other}"),
        };
        assert_eq!(toks[i], "]");
        i += 1;
        out.push(m);
    }
    out
}

fn invocation_of(m: &[MicroOp]) -> Vec<MicroOp> {
    m.iter()
        .map(|x| match x {
            MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
            o => o.clone(),
        })
        .collect()
}

/// Parses the notation into a history.
pub fn h(text: &str) -> History {
    let mut ops: Vec<Op> = Vec::new();
    let mut open: BTreeSet<u64> = BTreeSet::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let toks = tokens(line);
        let ty = OpType::parse(&toks[0]).expect("op type");
        let mut rest = &toks[1..];
        let mut time = None;
        if rest[0].starts_with('@') {
            time = Some(rest[0][1..].parse::<i64>().unwrap() * 1_000_000);
            rest = &rest[1..];
        }
        let p: u64 = rest[0].parse().expect("process");
        let mops = parse_mops(&rest[1..]);
        if ty == OpType::Invoke {
            open.insert(p);
        } else if !open.remove(&p) {
            let mut inv = Op::txn(ops.len() as u64, OpType::Invoke, p, invocation_of(&mops));
            inv.time_ns = time;
            ops.push(inv);
        }
        let mut op = Op::txn(ops.len() as u64, ty, p, mops);
        op.time_ns = time;
        ops.push(op);
    }
    History::new(ops).expect("valid history")
}

/// Every cycle class (with -realtime variants, so realtime edges are added).
pub fn all_cycles() -> BTreeSet<AnomalyType> {
    AnomalyType::ALL
        .iter()
        .copied()
        .filter(|a| a.is_cycle())
        .collect()
}

/// Plain cycle classes only (no order edges).
pub fn plain_cycles() -> BTreeSet<AnomalyType> {
    AnomalyType::ALL
        .iter()
        .copied()
        .filter(|a| {
            a.cycle_parts()
                .is_some_and(|p| p.1 == checker::anomaly::Variant::Plain)
        })
        .collect()
}

/// Plain and -process cycle classes only (so process edges are added).
pub fn process_cycles() -> BTreeSet<AnomalyType> {
    AnomalyType::ALL
        .iter()
        .copied()
        .filter(|a| {
            a.cycle_parts()
                .is_some_and(|p| p.1 != checker::anomaly::Variant::Realtime)
        })
        .collect()
}

/// Runs the analysis.
pub fn run(
    workload: Workload,
    history: &History,
    search: BTreeSet<AnomalyType>,
) -> BTreeMap<AnomalyType, Vec<Anomaly>> {
    let budget = Budget::unlimited();
    let opts = AnalyzeOptions::new(workload, search, &budget);
    analyze(history, &opts).anomalies
}

/// Names of the anomaly types found (empty-transaction-graph excluded).
pub fn types(found: &BTreeMap<AnomalyType, Vec<Anomaly>>) -> Vec<&'static str> {
    found
        .keys()
        .filter(|a| **a != AnomalyType::EmptyTransactionGraph)
        .map(|a| a.name())
        .collect()
}

/// Checks a list-append history (all cycle classes, realtime edges) and
/// asserts exactly `expect` was found; returns the explanation text of every
/// anomaly, for snapshots.
pub fn check_la(text: &str, expect: &[&str]) -> String {
    check_with(Workload::ListAppend, text, all_cycles(), expect)
}

/// As [`check_la`] for rw-register.
pub fn check_rw(text: &str, expect: &[&str]) -> String {
    check_with(Workload::RwRegister, text, all_cycles(), expect)
}

/// Checks with a given search set and asserts the types found.
pub fn check_with(
    w: Workload,
    text: &str,
    search: BTreeSet<AnomalyType>,
    expect: &[&str],
) -> String {
    let hist = h(text);
    let found = run(w, &hist, search);
    assert_eq!(types(&found), expect, "history:\n{text}");
    let mut out = String::new();
    for (t, cases) in &found {
        for (i, a) in cases.iter().enumerate() {
            out.push_str(&format!("{} #{i}\n{}\n\n", t.name(), render_text(a, &hist)));
        }
    }
    out
}
