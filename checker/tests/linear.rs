//! The linearizability checker against a brute-force reference written
//! from the definition, on thousands of small random register histories
//! (with open `info` ops and cas), plus its handling of whole histories.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::Budget;
use checker::linear::model::{CasRegister, Model, RegInput, RegOutput};
use checker::linear::search::{Operation, Verdict, search};
use checker::linear::{FailedCas, LinearOptions, check_register, report};
use checker::result::Valid;

type Op = Operation<RegInput, RegOutput>;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The definition: some subset of the open ops (unknown output) together
/// with every completed op, in some total order that puts `a` before `b`
/// whenever `a` returned before `b` was invoked, replays through the model
/// accepting every known output.
fn brute_force(model: &CasRegister, ops: &[Op]) -> bool {
    let open: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].ret.is_none()).collect();
    for mask in 0u32..(1 << open.len()) {
        let chosen: Vec<usize> = (0..ops.len())
            .filter(|&i| match open.iter().position(|&o| o == i) {
                Some(bit) => mask & (1 << bit) != 0,
                None => true,
            })
            .collect();
        let mut perm = chosen.clone();
        if permutations_any(&mut perm, 0, &mut |order| legal(model, ops, order)) {
            return true;
        }
    }
    false
}

fn permutations_any(v: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize]) -> bool) -> bool {
    if k == v.len() {
        return f(v);
    }
    for i in k..v.len() {
        v.swap(k, i);
        if permutations_any(v, k + 1, f) {
            v.swap(k, i);
            return true;
        }
        v.swap(k, i);
    }
    false
}

fn legal(model: &CasRegister, ops: &[Op], order: &[usize]) -> bool {
    for (x, &a) in order.iter().enumerate() {
        for &b in &order[x + 1..] {
            // b placed after a, but b returned before a was invoked.
            if ops[b].ret.is_some_and(|r| r < ops[a].call) {
                return false;
            }
        }
    }
    let mut s = model.init();
    for &i in order {
        match model.step(&s, &ops[i].input, ops[i].output.as_ref()) {
            Some(n) => s = n,
            None => return false,
        }
    }
    true
}

/// A random history: a real execution (linearization points inside the
/// intervals) with, sometimes, one output perturbed; some ops open.
fn random_history(rng: &mut Rng) -> Vec<Op> {
    let n = 1 + rng.below(7) as usize;
    let mut ops: Vec<(Op, i64)> = Vec::new();
    for _ in 0..n {
        let call = rng.below(12) as i64;
        let ret = call + rng.below(6) as i64;
        let point = call * 100 + rng.below((ret - call) as u64 * 100 + 1) as i64;
        let input = match rng.below(3) {
            0 => RegInput::Read,
            1 => RegInput::Write(rng.below(3) as i64),
            _ => RegInput::Cas(rng.below(3) as i64, rng.below(3) as i64),
        };
        ops.push((
            Op {
                id: 0,
                process: None,
                call,
                ret: Some(ret),
                input,
                output: None,
            },
            point,
        ));
    }
    ops.sort_by_key(|(_, p)| *p);
    let mut state: Option<i64> = None;
    for (op, _) in &mut ops {
        op.output = Some(match op.input {
            RegInput::Read => RegOutput::Read(state),
            RegInput::Write(v) => {
                state = Some(v);
                RegOutput::Written
            }
            RegInput::Cas(a, b) => {
                let ok = state == Some(a);
                if ok {
                    state = Some(b);
                }
                RegOutput::Cas(ok)
            }
        });
    }
    let mut ops: Vec<Op> = ops.into_iter().map(|(o, _)| o).collect();
    if rng.below(3) != 0 {
        let i = rng.below(n as u64) as usize;
        ops[i].output = Some(match ops[i].input {
            RegInput::Read => RegOutput::Read(match rng.below(4) {
                3 => None,
                v => Some(v as i64),
            }),
            RegInput::Write(_) => RegOutput::Written,
            RegInput::Cas(..) => RegOutput::Cas(rng.below(2) == 0),
        });
    }
    for op in &mut ops {
        // Open: never returned, output unknown (an `info` op).
        if !matches!(op.input, RegInput::Read) && rng.below(5) == 0 {
            op.ret = None;
            op.output = None;
        }
    }
    for (i, op) in ops.iter_mut().enumerate() {
        op.id = i;
    }
    ops
}

#[test]
fn agrees_with_brute_force_on_random_histories() {
    let model = CasRegister::default();
    let mut rng = Rng(28);
    let (mut valid, mut invalid) = (0, 0);
    for case in 0..6000 {
        let ops = random_history(&mut rng);
        let want = brute_force(&model, &ops);
        let got = search(&model, &ops, &Budget::unlimited(), usize::MAX);
        assert_ne!(got.verdict, Verdict::Unknown);
        assert_eq!(
            got.verdict == Verdict::Linearizable,
            want,
            "case {case}: {ops:#?}"
        );
        if want {
            // The linearization given is one.
            let mut order = got.order.iter().map(|&i| i as usize).collect::<Vec<_>>();
            // Open ops the search placed are part of it; the reference
            // accepts a subset, so check the order as given.
            assert!(legal(&model, &ops, &order), "case {case}: bad witness");
            order.sort_unstable();
            assert_eq!(order, (0..ops.len()).collect::<Vec<_>>());
            valid += 1;
        } else {
            invalid += 1;
            // The longest prefix is itself a legal partial order.
            let prefix: Vec<usize> = got.order.iter().map(|&i| i as usize).collect();
            let mut s = model.init();
            for &i in &prefix {
                s = model
                    .step(&s, &ops[i].input, ops[i].output.as_ref())
                    .expect("prefix replays");
            }
        }
    }
    // The generator gives both kinds in bulk.
    assert!(
        valid > 1000 && invalid > 1000,
        "valid {valid}, invalid {invalid}"
    );
}

fn history(lines: &str) -> store::History {
    store::History::new(
        store::read_str(lines, store::Format::JsonLines)
            .unwrap()
            .ops,
    )
    .unwrap()
}

#[test]
fn keyed_history_partitions_and_explains() {
    // Key 1 is fine; key 2 reads a value overwritten before the read began.
    let h = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":[1,1]}
{"index":1,"time":1,"type":"ok","process":0,"f":"write","value":[1,1]}
{"index":2,"time":2,"type":"invoke","process":0,"f":"write","value":[2,1]}
{"index":3,"time":3,"type":"ok","process":0,"f":"write","value":[2,1]}
{"index":4,"time":4,"type":"invoke","process":1,"f":"cas","value":[2,[1,2]]}
{"index":5,"time":5,"type":"ok","process":1,"f":"cas","value":[2,[1,2]]}
{"index":6,"time":6,"type":"invoke","process":0,"f":"read","value":[2,null]}
{"index":7,"time":7,"type":"ok","process":0,"f":"read","value":[2,1]}
{"index":8,"time":8,"type":"invoke","process":1,"f":"read","value":[1,null]}
{"index":9,"time":9,"type":"ok","process":1,"f":"read","value":[1,1]}
"#,
    );
    let r = check_register(&h, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::False);
    assert_eq!(r.keys.len(), 2);
    let bad: Vec<_> = r.failures().collect();
    assert_eq!(bad.len(), 1);
    let f = bad[0].failure.as_ref().unwrap();
    assert_eq!(f.state, Some(2));
    assert_eq!(bad[0].ops[f.blocking as usize].id, 6);
    let text = report::render_key_text(&CasRegister::default(), bad[0]);
    assert!(text.contains("key 2: not linearizable"), "{text}");
    assert!(
        text.contains("read 1 at position 6: impossible in state 2"),
        "{text}"
    );
    let html = report::render_html(&CasRegister::default(), &r, "t");
    assert!(html.contains("<svg") && html.contains("class=\"bad\""));
    let j = report::to_json(&CasRegister::default(), &r);
    assert_eq!(j["failures"], serde_json::json!(["2"]));
    assert_eq!(j["results"]["2"]["op"]["position"], 6);
}

#[test]
fn failed_cas_semantics_differ() {
    // A cas 1→2 fails while the register holds 1: impossible if the
    // failure was observed (Porcupine), fine if it never happened (Knossos).
    let h = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":1}
{"index":1,"time":1,"type":"ok","process":0,"f":"write","value":1}
{"index":2,"time":2,"type":"invoke","process":0,"f":"cas","value":[1,2]}
{"index":3,"time":3,"type":"fail","process":0,"f":"cas","value":[1,2]}
"#,
    );
    let observed = check_register(&h, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(observed.valid, Valid::False);
    let opts = LinearOptions {
        failed_cas: FailedCas::Dropped,
        ..LinearOptions::default()
    };
    let dropped = check_register(&h, &opts, &Budget::unlimited()).unwrap();
    assert_eq!(dropped.valid, Valid::True);
    // A cas that failed for another reason (an abort) did not happen.
    let aborted = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":1}
{"index":1,"time":1,"type":"ok","process":0,"f":"write","value":1}
{"index":2,"time":2,"type":"invoke","process":0,"f":"cas","value":[1,2]}
{"index":3,"time":3,"type":"fail","process":0,"f":"cas","value":[1,2],"error":["40001","could not serialize"]}
"#,
    );
    let r = check_register(&aborted, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::True);
    let mismatch = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":1}
{"index":1,"time":1,"type":"ok","process":0,"f":"write","value":1}
{"index":2,"time":2,"type":"invoke","process":0,"f":"cas","value":[1,2]}
{"index":3,"time":3,"type":"fail","process":0,"f":"cas","value":[1,2],"error":["cas-mismatch","0 rows"]}
"#,
    );
    let r = check_register(&mismatch, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::False);
}

#[test]
fn info_write_may_or_may_not_happen() {
    // An info write of 3 explains a later read of 3; a read of nil after
    // it is also fine (it may never have happened) — but not both orders.
    let h = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":3}
{"index":1,"time":1,"type":"info","process":0,"f":"write","value":3}
{"index":2,"time":2,"type":"invoke","process":1,"f":"read","value":null}
{"index":3,"time":3,"type":"ok","process":1,"f":"read","value":null}
{"index":4,"time":4,"type":"invoke","process":1,"f":"read","value":null}
{"index":5,"time":5,"type":"ok","process":1,"f":"read","value":3}
"#,
    );
    let r = check_register(&h, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::True);
    let h2 = history(
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":3}
{"index":1,"time":1,"type":"info","process":0,"f":"write","value":3}
{"index":2,"time":2,"type":"invoke","process":1,"f":"read","value":null}
{"index":3,"time":3,"type":"ok","process":1,"f":"read","value":3}
{"index":4,"time":4,"type":"invoke","process":1,"f":"read","value":null}
{"index":5,"time":5,"type":"ok","process":1,"f":"read","value":null}
"#,
    );
    let r = check_register(&h2, &LinearOptions::default(), &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::False);
}

#[test]
fn budget_exhaustion_is_unknown_never_valid() {
    // 40 concurrent writes and a read of a value none wrote.
    let mut lines = String::new();
    let mut i = 0;
    for p in 0..40 {
        lines += &format!(
            r#"{{"index":{i},"time":{i},"type":"invoke","process":{p},"f":"write","value":{p}}}"#
        );
        lines.push('\n');
        i += 1;
    }
    for p in 0..40 {
        lines += &format!(
            r#"{{"index":{i},"time":{i},"type":"ok","process":{p},"f":"write","value":{p}}}"#
        );
        lines.push('\n');
        i += 1;
    }
    lines += &format!(
        "{{\"index\":{i},\"time\":{i},\"type\":\"invoke\",\"process\":99,\"f\":\"read\",\"value\":null}}\n"
    );
    i += 1;
    lines += &format!(
        "{{\"index\":{i},\"time\":{i},\"type\":\"ok\",\"process\":99,\"f\":\"read\",\"value\":77}}\n"
    );
    let h = history(&lines);
    let r = check_register(&h, &LinearOptions::default(), &Budget::steps(5_000)).unwrap();
    assert_eq!(r.valid, Valid::Unknown);
    let small = LinearOptions {
        max_cache: 1_000,
        ..LinearOptions::default()
    };
    let r = check_register(&h, &small, &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::Unknown);
}

#[test]
fn non_register_ops_are_a_typed_error() {
    let h = history(
        r#"{"index":0,"type":"invoke","process":0,"f":"txn","value":[["w",1,1]]}
{"index":1,"type":"ok","process":0,"f":"txn","value":[["w",1,1]]}
"#,
    );
    assert!(check_register(&h, &LinearOptions::default(), &Budget::unlimited()).is_err());
}

/// A keyed history: key 0 has a stale read (not linearizable) and the most
/// ops, so it is searched first; keys 1..=`good` are fine.
fn one_bad_key_of_many(good: i64) -> store::History {
    let mut lines = String::new();
    let mut i = 0;
    let mut push = |lines: &mut String, t: &str, f: &str, v: &str| {
        lines.push_str(&format!(
            "{{\"index\":{i},\"time\":{i},\"type\":\"{t}\",\"process\":0,\"f\":\"{f}\",\"value\":{v}}}\n"
        ));
        i += 1;
    };
    for w in 1..=6 {
        push(&mut lines, "invoke", "write", &format!("[0,{w}]"));
        push(&mut lines, "ok", "write", &format!("[0,{w}]"));
    }
    push(&mut lines, "invoke", "read", "[0,null]");
    push(&mut lines, "ok", "read", "[0,1]");
    for k in 1..=good {
        push(&mut lines, "invoke", "write", &format!("[{k},5]"));
        push(&mut lines, "ok", "write", &format!("[{k},5]"));
        push(&mut lines, "invoke", "read", &format!("[{k},null]"));
        push(&mut lines, "ok", "read", &format!("[{k},5]"));
    }
    history(&lines)
}

#[test]
fn first_failing_key_stops_the_others_unless_all_keys() {
    let h = one_bad_key_of_many(20);
    let first = LinearOptions {
        threads: 1,
        ..LinearOptions::default()
    };
    let r = check_register(&h, &first, &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::False);
    assert_eq!(r.keys.len(), 21);
    assert_eq!(r.failures().count(), 1);
    // One thread, the failing key first: no other key was searched.
    assert_eq!(r.skipped, 20);
    assert!(
        r.keys
            .iter()
            .filter(|k| k.searched.verdict == Verdict::Unknown)
            .all(|k| k.searched.steps == 0)
    );
    let all = LinearOptions {
        all_keys: true,
        ..first
    };
    let r = check_register(&h, &all, &Budget::unlimited()).unwrap();
    assert_eq!(r.valid, Valid::False);
    assert_eq!(r.skipped, 0);
    assert_eq!(r.failures().count(), 1);
    assert_eq!(
        r.keys
            .iter()
            .filter(|k| k.searched.verdict == Verdict::Linearizable)
            .count(),
        20
    );
    // Nothing left to skip when the failing key is the only one.
    let ok = one_bad_key_of_many(0);
    let r = check_register(&ok, &first, &Budget::unlimited()).unwrap();
    assert_eq!((r.valid, r.skipped), (Valid::False, 0));
}
