//! The set-full checker (Jepsen's `set-full`): adds of distinct elements
//! with reads throughout; every element ends `stable` (present in the last
//! read that could see it), `lost` (known to be added, then missing from
//! every read that could see it after some point) or `never-read`, with
//! visibility latencies, stale elements and duplicates.
//!
//! Rules (Jepsen's, reads taken at their invocation): an element is tracked
//! from its add's invocation `a`; a read *sees* it when it completed after
//! `a`. `known` = the add's ok completion or the completion of the first
//! read containing it, whichever is first. `last-present` = the
//! latest-invoked read containing it; `last-absent` = the latest-invoked
//! read that sees it and lacks it. Stable: present last. Lost: known before
//! `last-absent` was invoked and absent last. Latencies in ms:
//! stable = `last-absent.time + 1 − known.time`, lost =
//! `last-present.time + 1 − known.time` (0 without one, floored at 0);
//! stale = stable with a positive latency. Duplicates are elements that
//! occur more than once in one read (Jepsen means to report them but its
//! frequency test can never fire; this one does).
//!
//! Key decision: linear in the elements read, not Jepsen's elements ×
//! reads, and no copy of any read. Reads are numbered by invocation and
//! visited once each, their elements borrowed from the history; an element
//! value maps to its id through a dense table (a hash map only when the
//! values are spread out). Per element the pass keeps three numbers: the
//! latest read containing it (`last-present`), the latest read that saw it
//! and lacked it (`last-absent`) and `known`. When a read contains the
//! element, the reads since its previous occurrence all lack it, and the
//! newest of them that saw it (completed after the add's invocation) is the
//! new `last-absent`: found by walking down from the read before, which
//! stops at once unless reads completed before the add — those are only
//! the reads in flight at the add, and a prefix maximum of completion
//! positions ends the walk when no older read can see it. After the pass,
//! the same walk from the newest read finds an absence after the last
//! occurrence. Cost: Σ|reads| + elements × (reads in flight at their add);
//! memory: three words per element and two per read.

use super::set::{ElementIds, added, read_ints};
use super::{Finding, Report, idx, intervals};
use rustc_hash::FxHashMap;
use serde_json::json;
use store::{F, History, OpType};

/// set-full's settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// A stale element is a violation (Jepsen's `:linearizable?`).
    pub linearizable: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Elem {
    pub(crate) value: i64,
    add_inv: usize,
    /// Position of the op that made it known.
    known: Option<usize>,
}

/// What happened to one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Stable,
    Lost,
    NeverRead,
}

fn quantiles(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(f64::total_cmp);
    let mut m = serde_json::Map::new();
    if v.is_empty() {
        return serde_json::Value::Object(m);
    }
    for q in [0.0, 0.5, 0.95, 0.99, 1.0] {
        let i = ((v.len() as f64 * q).floor() as usize).min(v.len() - 1);
        m.insert(format!("{q}"), json!(v[i]));
    }
    serde_json::Value::Object(m)
}

/// Checks every element against every read that could see it.
pub fn check(history: &History, o: &Options) -> Report {
    let mut report = Report::new("set-full");
    let time_ms = |pos: usize| history.time_ns(pos).unwrap_or(0) as f64 / 1e6;
    let mut elems: Vec<Elem> = Vec::new();
    let mut id_of: FxHashMap<i64, u32> = FxHashMap::default();
    for pos in 0..history.len() {
        if !history.is_client(pos) || history.f(pos) != Some(&F::Add) {
            continue;
        }
        let Some(x) = history.txn(pos).and_then(|m| added(&m, history.data(pos))) else {
            continue;
        };
        match history.op_type(pos) {
            OpType::Invoke => {
                id_of.entry(x).or_insert_with(|| {
                    elems.push(Elem {
                        value: x,
                        add_inv: pos,
                        known: None,
                    });
                    (elems.len() - 1) as u32
                });
            }
            OpType::Ok => {
                let id = *id_of.entry(x).or_insert_with(|| {
                    elems.push(Elem {
                        value: x,
                        add_inv: pos,
                        known: None,
                    });
                    (elems.len() - 1) as u32
                });
                let e = &mut elems[id as usize];
                e.known = Some(e.known.map_or(pos, |k| k.min(pos)));
            }
            _ => {}
        }
    }
    let ids = ElementIds::new(&elems, id_of);
    // Ok reads of integers, by invocation: (invocation, completion).
    let mut reads: Vec<(usize, usize)> = Vec::new();
    for pos in 0..history.len() {
        if history.is_client(pos)
            && history.op_type(pos) == OpType::Ok
            && history.f(pos) == Some(&F::Read)
            && read_ints(history, pos, |_| ())
        {
            reads.push((history.invocation(pos).unwrap_or(pos), pos));
        }
    }
    reads.sort_unstable_by_key(|r| r.0);
    let mut max_comp = Vec::with_capacity(reads.len());
    let mut m = 0usize;
    for r in &reads {
        m = m.max(r.1);
        max_comp.push(m);
    }
    // The newest read below `top` (exclusive) and above `floor` that saw an
    // element added (invoked) at `add`: completed after it.
    let newest_seeing = |top: usize, floor: Option<usize>, add: usize| -> Option<usize> {
        let mut j = top;
        while j > floor.map_or(0, |f| f + 1) {
            j -= 1;
            if reads[j].1 > add {
                return Some(j);
            }
            if max_comp[j] < add {
                return None;
            }
        }
        None
    };
    let n = elems.len();
    let mut last_present: Vec<Option<u32>> = vec![None; n];
    let mut last_absent: Vec<Option<u32>> = vec![None; n];
    let mut duplicated: Vec<(i64, u64)> = Vec::new();
    let mut unexpected: Vec<i64> = Vec::new();
    for (j, &(_, comp)) in reads.iter().enumerate() {
        read_ints(history, comp, |x| {
            let Some(id) = ids.get(x) else {
                unexpected.push(x);
                return;
            };
            let id = id as usize;
            let prev = last_present[id].map(|p| p as usize);
            if prev == Some(j) {
                duplicated.push((x, idx(history, comp)));
                return;
            }
            let e = &mut elems[id];
            if let Some(la) = newest_seeing(j, prev, e.add_inv) {
                last_absent[id] = Some(la as u32);
            }
            last_present[id] = Some(j as u32);
            e.known = Some(e.known.map_or(comp, |k| k.min(comp)));
        });
    }
    // An absence after the last occurrence.
    for (id, e) in elems.iter().enumerate() {
        let lp = last_present[id].map(|p| p as usize);
        if let Some(la) = newest_seeing(reads.len(), lp, e.add_inv) {
            last_absent[id] = Some(la as u32);
        }
    }
    let reads_inv = |j: u32| reads[j as usize].0;
    let (mut stable, mut lost, mut never, mut stale) = (0usize, Vec::new(), Vec::new(), Vec::new());
    let (mut stable_lat, mut lost_lat) = (Vec::new(), Vec::new());
    let mut worst: Vec<(f64, i64, usize, usize)> = Vec::new();
    let mut first_lost: Option<(i64, usize, Option<usize>, usize)> = None;
    for (id, e) in elems.iter().enumerate() {
        let last_present = last_present[id];
        let last_absent = last_absent[id].map(|la| la as usize);
        let outcome = match (last_present, last_absent) {
            (Some(lp), la) if la.is_none_or(|la| la < lp as usize) => Outcome::Stable,
            (lp, Some(la))
                if e.known.is_some_and(|k| k < reads[la].0)
                    && lp.is_none_or(|lp| (lp as usize) < la) =>
            {
                Outcome::Lost
            }
            _ => Outcome::NeverRead,
        };
        let known_ms = e.known.map_or(0.0, time_ms);
        match outcome {
            Outcome::Stable => {
                stable += 1;
                let lat = last_absent
                    .map_or(0.0, |la| time_ms(reads[la].0) + 1e-6 - known_ms)
                    .max(0.0);
                stable_lat.push(lat);
                if lat > 0.0 {
                    stale.push(e.value);
                    if let (Some(k), Some(la)) = (e.known, last_absent) {
                        worst.push((lat, e.value, k, reads[la].0));
                    }
                }
            }
            Outcome::Lost => {
                lost.push(e.value);
                let lat = last_present
                    .map_or(0.0, |lp| time_ms(reads_inv(lp)) + 1e-6 - known_ms)
                    .max(0.0);
                lost_lat.push(lat);
                if first_lost.is_none()
                    && let (Some(k), Some(la)) = (e.known, last_absent)
                {
                    first_lost = Some((e.value, k, last_present.map(reads_inv), reads[la].0));
                }
            }
            Outcome::NeverRead => never.push(e.value),
        }
    }
    lost.sort_unstable();
    never.sort_unstable();
    stale.sort_unstable();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    worst.truncate(8);
    if let Some((x, known, lp, la)) = first_lost {
        let seen = match lp {
            Some(lp) => format!(
                "last present in the read invoked as op {}",
                idx(history, lp)
            ),
            None => "never present in any read".to_string(),
        };
        report.add(Finding {
            kind: "lost",
            ops: [Some(known), lp, Some(la)].into_iter().flatten().map(|p| idx(history, p)).collect(),
            explanation: format!(
                "{} elements were lost: {}; e.g. element {x} was known to be added at op {} but is absent from every read since the read invoked as op {} ({seen})",
                lost.len(),
                intervals(&lost),
                idx(history, known),
                idx(history, la),
            ),
            data: json!({"lost": intervals(&lost)}),
        });
    }
    if !duplicated.is_empty() {
        let (x, at) = duplicated[0];
        let mut d: Vec<i64> = duplicated.iter().map(|(x, _)| *x).collect();
        d.sort_unstable();
        d.dedup();
        report.add(Finding {
            kind: "duplicated",
            ops: duplicated.iter().take(8).map(|(_, i)| *i).collect(),
            explanation: format!(
                "{} elements occur more than once in one read though each was added once: {}; e.g. {x} in the read completed as op {at}",
                d.len(),
                intervals(&d)
            ),
            data: json!({"duplicated": intervals(&d)}),
        });
    }
    if !unexpected.is_empty() {
        unexpected.sort_unstable();
        unexpected.dedup();
        report.add(Finding {
            kind: "unexpected",
            ops: Vec::new(),
            explanation: format!(
                "reads returned {} elements nobody tried to add: {}",
                unexpected.len(),
                intervals(&unexpected)
            ),
            data: json!({"unexpected": intervals(&unexpected)}),
        });
    }
    if o.linearizable && !stale.is_empty() {
        let (lat, x, k, la) = worst[0];
        report.add(Finding {
            kind: "stale",
            ops: vec![idx(history, k), idx(history, la)],
            explanation: format!(
                "{} elements were read stale: {}; e.g. element {x} was known at op {} but the read invoked later as op {} missed it ({lat:.3} ms after it was known)",
                stale.len(),
                intervals(&stale),
                idx(history, k),
                idx(history, la)
            ),
            data: json!({"stale": intervals(&stale)}),
        });
    }
    if report.valid == crate::result::Valid::True && stable == 0 {
        report.unknown("no element is stable");
    }
    report.stat("attempt-count", elems.len());
    report.stat("read-count", reads.len());
    report.stat("stable-count", stable);
    report.stat("lost-count", lost.len());
    report.stat("lost", intervals(&lost));
    report.stat("never-read-count", never.len());
    report.stat("never-read", intervals(&never));
    report.stat("stale-count", stale.len());
    report.stat("stale", intervals(&stale));
    report.stat("duplicated-count", duplicated.len());
    report.stat(
        "worst-stale",
        worst
            .iter()
            .map(|(lat, x, k, la)| {
                json!({"element": x, "stable-latency": lat, "known": idx(history, *k),
                       "last-absent": idx(history, *la)})
            })
            .collect::<Vec<_>>(),
    );
    report.stat("stable-latencies", quantiles(stable_lat));
    report.stat("lost-latencies", quantiles(lost_lat));
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::set::read_elements;
    use super::super::tests::{H, ap, rl, rn};
    use super::*;
    use crate::result::Valid;

    fn add(h: &mut H, p: u64, x: i64) {
        h.both(OpType::Ok, p, F::Add, vec![ap(0, x)], vec![ap(0, x)]);
    }
    fn read(h: &mut H, p: u64, xs: &[i64]) -> u64 {
        h.both(OpType::Ok, p, F::Read, vec![rn(0)], vec![rl(0, xs)])
    }

    #[test]
    fn stable_elements_are_valid() {
        let mut h = H::default();
        add(&mut h, 0, 1);
        read(&mut h, 1, &[1]);
        add(&mut h, 0, 2);
        read(&mut h, 1, &[1, 2]);
        let rep = check(&h.history(), &Options { linearizable: true });
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(3));
        assert_eq!(rep.stats["stable-count"], 2);
        assert_eq!(rep.stats["stale-count"], 0);
    }

    #[test]
    fn an_element_that_disappears_is_lost() {
        let mut h = H::default();
        add(&mut h, 0, 1);
        add(&mut h, 0, 2);
        read(&mut h, 1, &[1, 2]);
        let gone = read(&mut h, 1, &[2]);
        let rep = check(&h.history(), &Options::default());
        assert_eq!(rep.valid, Valid::False);
        assert_eq!(rep.kinds(), ["lost"]);
        let f = &rep.findings[0];
        assert!(
            f.explanation.starts_with("1 elements were lost: #{1}"),
            "{}",
            f.explanation
        );
        assert!(f.ops.contains(&(gone - 1)), "{:?}", f.ops);
        assert_eq!(rep.stats["stable-count"], 1);
    }

    #[test]
    fn a_concurrent_read_that_misses_an_add_is_not_loss() {
        let mut h = H::default();
        // The read is invoked before the add and completes after its invocation.
        h.op(OpType::Invoke, 1, F::Read, vec![rn(0)]);
        h.op(OpType::Invoke, 0, F::Add, vec![ap(0, 1)]);
        h.op(OpType::Ok, 1, F::Read, vec![rl(0, &[])]);
        h.op(OpType::Ok, 0, F::Add, vec![ap(0, 1)]);
        let rep = check(&h.history(), &Options::default());
        assert_eq!(rep.stats["never-read-count"], 1);
        assert_eq!(rep.valid, Valid::Unknown, "nothing stable");
    }

    #[test]
    fn stale_reads_and_duplicates() {
        let mut h = H::default();
        add(&mut h, 0, 1);
        read(&mut h, 1, &[]);
        read(&mut h, 1, &[1]);
        let hist = h.history();
        let lenient = check(&hist, &Options::default());
        assert_eq!(lenient.valid, Valid::True);
        assert_eq!(lenient.stats["stale"], "#{1}");
        let strict = check(&hist, &Options { linearizable: true });
        assert_eq!(strict.kinds(), ["stale"]);
        assert!(
            strict.findings[0]
                .explanation
                .contains("element 1 was known at op 1")
        );
        let mut h = H::default();
        add(&mut h, 0, 1);
        read(&mut h, 1, &[1, 1]);
        assert_eq!(
            check(&h.history(), &Options::default()).kinds(),
            ["duplicated"]
        );
    }

    /// Elements far apart (a map, not the dense table) and negative ones
    /// are told apart as well as dense ones.
    #[test]
    fn sparse_and_negative_elements() {
        let mut h = H::default();
        for x in [-5, 1 << 40, 7] {
            add(&mut h, 0, x);
        }
        read(&mut h, 1, &[-5, 1 << 40, 7, 3]);
        read(&mut h, 1, &[1 << 40, 7]);
        let rep = check(&h.history(), &Options::default());
        assert_eq!(rep.kinds(), ["lost", "unexpected"]);
        assert_eq!(rep.stats["lost"], "#{-5}");
        assert_eq!(rep.stats["stable-count"], 2);
        let mut h = H::default();
        for x in [-3, -2, -1] {
            add(&mut h, 0, x);
        }
        read(&mut h, 1, &[-1, -2, -3, -4]);
        let rep = check(&h.history(), &Options::default());
        assert_eq!(rep.kinds(), ["unexpected"]);
        assert_eq!(rep.stats["stable-count"], 3);
    }

    /// The linear walk against Jepsen's per-read update of every element.
    #[test]
    fn agrees_with_the_quadratic_definition_on_random_histories() {
        use std::collections::BTreeSet;
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..200 {
            let mut h = H::default();
            let mut db: BTreeSet<i64> = BTreeSet::new();
            let mut open: Vec<(u64, bool, i64)> = Vec::new(); // (process, is_read, x)
            let mut x = 0;
            for _ in 0..40 {
                if !open.is_empty() && next(2) == 0 {
                    let (p, is_read, v) = open.remove(next(open.len() as u64) as usize);
                    if is_read {
                        let mut els: Vec<i64> = db.iter().copied().collect();
                        if next(4) == 0 && !els.is_empty() {
                            els.remove(next(els.len() as u64) as usize);
                        }
                        h.op(OpType::Ok, p, F::Read, vec![rl(0, &els)]);
                    } else {
                        db.insert(v);
                        h.op(OpType::Ok, p, F::Add, vec![ap(0, v)]);
                    }
                } else if open.len() < 4 {
                    let p = (0..8).find(|p| open.iter().all(|o| o.0 != *p)).unwrap();
                    if next(2) == 0 {
                        h.op(OpType::Invoke, p, F::Read, vec![rn(0)]);
                        open.push((p, true, 0));
                    } else {
                        h.op(OpType::Invoke, p, F::Add, vec![ap(0, x)]);
                        open.push((p, false, x));
                        x += 1;
                    }
                }
            }
            let hist = h.history();
            let rep = check(&hist, &Options::default());
            let (s, l, n, stale) = quadratic(&hist);
            assert_eq!(rep.stats["stable-count"], s);
            assert_eq!(rep.stats["lost-count"], l);
            assert_eq!(rep.stats["never-read-count"], n);
            assert_eq!(rep.stats["stale-count"], stale);
        }
    }

    /// Jepsen's algorithm: walk the history, update every tracked element
    /// at each ok read completion.
    fn quadratic(h: &History) -> (usize, usize, usize, usize) {
        #[derive(Default, Clone)]
        struct S {
            known: Option<usize>,
            lp: Option<usize>,
            la: Option<usize>,
        }
        let mut st: Vec<(i64, S)> = Vec::new();
        for pos in 0..h.len() {
            let f = h.f(pos).unwrap();
            let t = h.op_type(pos);
            let m = h.txn(pos).unwrap();
            if *f == F::Add {
                let x = added(&m, None).unwrap();
                if t == OpType::Invoke {
                    st.push((x, S::default()));
                } else if t == OpType::Ok {
                    let s = &mut st.iter_mut().find(|e| e.0 == x).unwrap().1;
                    s.known = Some(s.known.unwrap_or(pos));
                }
            } else if t == OpType::Ok {
                let els = read_elements(&m, None).unwrap();
                let inv = h.invocation(pos).unwrap();
                for (x, s) in &mut st {
                    if els.contains(x) {
                        s.known = Some(s.known.unwrap_or(pos));
                        if s.lp.is_none_or(|l| l < inv) {
                            s.lp = Some(inv);
                        }
                    } else if s.la.is_none_or(|l| l < inv) {
                        s.la = Some(inv);
                    }
                }
            }
        }
        let (mut a, mut b, mut c, mut stale) = (0, 0, 0, 0);
        for (_, s) in st {
            if s.lp.is_some() && s.la.is_none_or(|la| la < s.lp.unwrap_or(0)) {
                a += 1;
                let ms =
                    |p: Option<usize>| p.map_or(0.0, |p| h.time_ns(p).unwrap_or(0) as f64 / 1e6);
                stale += usize::from(s.la.is_some() && ms(s.la) + 1e-6 - ms(s.known) > 0.0);
            } else if s.known.is_some()
                && s.la.is_some_and(|la| s.known.unwrap_or(usize::MAX) < la)
                && s.lp.is_none_or(|lp| lp < s.la.unwrap_or(0))
            {
                b += 1;
            } else {
                c += 1;
            }
        }
        (a, b, c, stale)
    }
}
