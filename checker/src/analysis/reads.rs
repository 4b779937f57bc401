//! What each read of a committed transaction observed, from the
//! observations alone: a value nobody wrote (`garbage-read`), an aborted
//! transaction's write (`G1a`), another transaction's intermediate write
//! (`G1b`), its own later write (`future-read`, register and list), an
//! element twice (`duplicate-elements`), or something its own earlier
//! micro-ops rule out (`internal`; when a weak level is asked for, also by
//! Plume's names for the own-write cases, `not-my-own-write` and
//! `not-my-last-write`). Every read is judged, not only a key's first read
//! in its transaction (a G1b behind an earlier read of the key is a G1b).
//! One pass over the reads, no allocation per read; a list read is looked
//! at element by element only when the observations flag it
//! (`Read::careful`).

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, Expected};
use crate::observe::{Read, ReadFrom, Value, read_list, read_scalar};
use crate::txn::{Status, Txns};
use crate::weak::Level;
use store::{Key, MicroOp, Val};

/// The non-cycle anomalies of single reads.
pub struct Reads;

impl Analysis for Reads {
    fn name(&self) -> &'static str {
        "reads"
    }

    /// Always: what they find counts for `not` whatever was asked.
    fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
        true
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let (txns, history, obs) = (cx.txns, cx.history, cx.obs);
        let opi = |t: u32| txns.op_index(history, t);
        let key = |k: u32| Key(txns.keys[k as usize].clone());
        let read = |kind, r: &Read, element: &Val, writer: Option<u32>| Anomaly {
            kind,
            evidence: Evidence::Read {
                op: opi(r.txn),
                mop: r.mop as usize,
                key: key(r.key(txns)),
                element: element.clone(),
                writer: writer.map(opi),
            },
        };
        let failed = |w: u32| txns.status(obs.write(w).txn) == Status::Fail;
        let mut stamp: Vec<u32> = vec![0; obs.writes.len()];
        let mut stamp_gen = 0u32;
        let mut dup_counts: Vec<(u32, usize)> = Vec::new();
        // Plume's names for the own-write cases of `internal` (TAP-d/e),
        // only when a weak level is needed — asked for, or implied by a
        // requested model (the lattice law: a model stronger than
        // strong-session-read-committed must find what it forbids); Elle
        // reports them as `internal` alone.
        let plume = crate::model::weak_level_needed(cx.opts.models, cx.opts.anomalies).is_some()
            || Level::needed(cx.opts.models, cx.opts.anomalies).is_some();
        for r in &obs.reads {
            if txns.txns[r.txn as usize].status != Status::Ok {
                continue;
            }
            match r.value(txns) {
                Value::Register(got) => {
                    // Every read, not only a key's first: what it observed
                    // (a read after an own write of the key must return that
                    // write, which `internal` judges; Elle names it so only).
                    let external = !r.after_own_write();
                    if let Some(v) = got {
                        match r.from() {
                            ReadFrom::Garbage if external => {
                                out.push(read(AnomalyType::GarbageRead, r, v, None))
                            }
                            ReadFrom::Write(w) if obs.write(w).txn != r.txn && external => {
                                if failed(w) {
                                    out.push(read(AnomalyType::G1a, r, v, Some(obs.write(w).txn)));
                                } else if !obs.write(w).is_final {
                                    out.push(read(AnomalyType::G1b, r, v, Some(obs.write(w).txn)));
                                }
                            }
                            ReadFrom::Write(w) if obs.write(w).txn == r.txn => {
                                let e = obs.write(w);
                                if e.mop > r.mop && !e.repeated {
                                    out.push(read(AnomalyType::FutureRead, r, v, None));
                                }
                            }
                            ReadFrom::Initial | ReadFrom::Garbage | ReadFrom::Write(_) => {}
                        }
                    }
                    if let Some(expected) = register_expectation(txns, r)
                        && expected != got
                    {
                        out.push(internal(
                            opi(r.txn),
                            r,
                            key(r.key(txns)),
                            Expected::Register(expected.cloned()),
                        ));
                    }
                    if plume
                        && r.after_own_write()
                        && let Some(kind) = own_write_case(txns, r, got)
                    {
                        let last = last_own_write(txns, r).cloned();
                        out.push(Anomaly {
                            kind,
                            ..internal(opi(r.txn), r, key(r.key(txns)), Expected::Register(last))
                        });
                    }
                }
                Value::List(l) => {
                    if r.careful() {
                        stamp_gen = stamp_gen.wrapping_add(1);
                        dup_counts.clear();
                        for v in l {
                            match obs.write_of(r.key(txns), v) {
                                None => out.push(read(AnomalyType::GarbageRead, r, v, None)),
                                Some(id) if stamp[id as usize] == stamp_gen => {
                                    match dup_counts.iter_mut().find(|d| d.0 == id) {
                                        Some(d) => d.1 += 1,
                                        None => dup_counts.push((id, 2)),
                                    }
                                }
                                Some(id) => {
                                    stamp[id as usize] = stamp_gen;
                                    if failed(id) {
                                        out.push(read(
                                            AnomalyType::G1a,
                                            r,
                                            v,
                                            Some(obs.write(id).txn),
                                        ));
                                    }
                                }
                            }
                        }
                        if !dup_counts.is_empty() {
                            out.push(Anomaly {
                                kind: AnomalyType::DuplicateElements,
                                evidence: Evidence::DuplicateElements {
                                    op: opi(r.txn),
                                    mop: r.mop as usize,
                                    key: key(r.key(txns)),
                                    duplicates: dup_counts
                                        .iter()
                                        .filter_map(|&(id, n)| {
                                            Some((obs.write(id).val(txns)?.clone(), n))
                                        })
                                        .collect(),
                                },
                            });
                        }
                    }
                    if let (Some(last), ReadFrom::Write(w)) = (l.last(), r.from()) {
                        let e = obs.write(w);
                        if !e.is_final && e.txn != r.txn {
                            out.push(read(AnomalyType::G1b, r, last, Some(e.txn)));
                        }
                    }
                    let tx = &txns.txns[r.txn as usize];
                    for (j, m) in txns.mops_of(tx).iter().enumerate().skip(r.mop as usize + 1) {
                        if let MicroOp::Append(_, v) = m
                            && txns.key_of(r.txn, j) == r.key(txns)
                            && l.contains(v)
                        {
                            out.push(read(AnomalyType::FutureRead, r, v, None));
                        }
                    }
                    if plume
                        && r.after_own_write()
                        && let Some(kind) = own_write_case(txns, r, l.last())
                    {
                        let tail = last_own_write(txns, r).cloned().into_iter().collect();
                        out.push(Anomaly {
                            kind,
                            ..internal(
                                opi(r.txn),
                                r,
                                key(r.key(txns)),
                                Expected::List {
                                    unknown_prefix: true,
                                    tail,
                                },
                            )
                        });
                    }
                    if !r.first_on_key()
                        && !list_as_expected(txns, r, l)
                        && let Some(expected) = list_expectation(txns, r)
                    {
                        let bad = match &expected {
                            Expected::List {
                                unknown_prefix: false,
                                tail,
                            } => tail.as_slice() != l,
                            Expected::List {
                                unknown_prefix: true,
                                tail,
                            } => !l.ends_with(tail),
                            Expected::Register(_) => false,
                        };
                        if bad {
                            out.push(internal(opi(r.txn), r, key(r.key(txns)), expected));
                        }
                    }
                }
            }
        }
    }
}

fn internal(op: store::OpIndex, r: &Read, key: Key, expected: Expected) -> Anomaly {
    Anomaly {
        kind: AnomalyType::Internal,
        evidence: Evidence::Internal {
            op,
            mop: r.mop as usize,
            key,
            expected,
        },
    }
}

/// The value of `r`'s transaction's last write (append) of `r`'s key
/// before `r`.
fn last_own_write<'h>(txns: &Txns<'h>, r: &Read) -> Option<&'h Val> {
    let tx = &txns.txns[r.txn as usize];
    let k = r.key(txns);
    (0..r.mop as usize)
        .rev()
        .find_map(|j| match &txns.mops_of(tx)[j] {
            MicroOp::Write(_, v) | MicroOp::Append(_, v) if txns.key_of(r.txn, j) == k => Some(v),
            _ => None,
        })
}

/// Plume's case of a read after an own write of its key whose value
/// (`got`: the register's value, a list's last element) is not the last
/// own write: `not-my-last-write` if it is an earlier own write,
/// `not-my-own-write` if it is anything else but a later own write (that
/// is a `future-read`, reported as such). `None` when it is right.
fn own_write_case(txns: &Txns<'_>, r: &Read, got: Option<&Val>) -> Option<AnomalyType> {
    let last = last_own_write(txns, r)?;
    if got == Some(last) {
        return None;
    }
    let tx = &txns.txns[r.txn as usize];
    let k = r.key(txns);
    let own = |range: std::ops::Range<usize>| {
        range.into_iter().any(|j| match &txns.mops_of(tx)[j] {
            MicroOp::Write(_, v) | MicroOp::Append(_, v) => {
                Some(v) == got && txns.key_of(r.txn, j) == k
            }
            _ => false,
        })
    };
    if own(0..r.mop as usize) {
        Some(AnomalyType::NotMyLastWrite)
    } else if own(r.mop as usize + 1..txns.mops_of(tx).len()) {
        None
    } else {
        Some(AnomalyType::NotMyOwnWrite)
    }
}

/// What a register read must return given the transaction's previous
/// micro-op on its key (its write, or what it read): `None` when nothing
/// earlier constrains it (at once for a key's first micro-op, the common
/// case, without a look back).
fn register_expectation<'h>(txns: &Txns<'h>, r: &Read) -> Option<Option<&'h Val>> {
    if r.first_on_key() {
        return None;
    }
    let tx = &txns.txns[r.txn as usize];
    let j = (0..r.mop as usize)
        .rev()
        .find(|&j| txns.key_of(r.txn, j) == r.key(txns))?;
    match &txns.mops_of(tx)[j] {
        MicroOp::Write(_, v) | MicroOp::Append(_, v) => Some(Some(v)),
        MicroOp::Read(_, rv) => read_scalar(rv),
        MicroOp::ReadRange(_) => None,
    }
}

/// Whether list read `r`, which returned `l`, is what the transaction's
/// own earlier micro-ops on its key say (always, when they say nothing):
/// [`list_expectation`] without building the expectation — no list is
/// copied unless it is wrong.
fn list_as_expected(txns: &Txns<'_>, r: &Read, l: &[Val]) -> bool {
    let (t, k) = (r.txn, r.key(txns));
    let tx = &txns.txns[t as usize];
    // The own appends since the last own read (last first), and that read.
    let mut appended: Vec<&Val> = Vec::new();
    let mut base: Option<&[Val]> = None;
    for j in (0..r.mop as usize).rev() {
        if txns.key_of(t, j) != k {
            continue;
        }
        match &txns.mops_of(tx)[j] {
            MicroOp::Append(_, v) => appended.push(v),
            MicroOp::Read(_, rv) => {
                if let Some(b) = read_list(tx.status, rv) {
                    base = Some(b);
                    break;
                }
            }
            MicroOp::Write(..) | MicroOp::ReadRange(_) => {}
        }
    }
    let tail_ok = |tail: &[Val]| tail.iter().eq(appended.iter().rev().copied());
    match base {
        Some(b) => {
            l.len() == b.len() + appended.len() && l.starts_with(b) && tail_ok(&l[b.len()..])
        }
        None => l.len() >= appended.len() && tail_ok(&l[l.len() - appended.len()..]),
    }
}

/// What a list read must return given the transaction's own earlier
/// micro-ops on its key (`None`: no constraint).
fn list_expectation(txns: &Txns<'_>, r: &Read) -> Option<Expected> {
    let (t, k) = (r.txn, r.key(txns));
    let tx = &txns.txns[t as usize];
    let mut appended: Vec<Val> = Vec::new();
    let mut base: Option<&[Val]> = None;
    for j in (0..r.mop as usize).rev() {
        if txns.key_of(t, j) != k {
            continue;
        }
        match &txns.mops_of(tx)[j] {
            MicroOp::Append(_, v) => appended.push(v.clone()),
            MicroOp::Read(_, rv) => {
                if let Some(l) = read_list(tx.status, rv) {
                    base = Some(l);
                    break;
                }
            }
            MicroOp::Write(..) | MicroOp::ReadRange(_) => {}
        }
    }
    appended.reverse();
    match base {
        Some(b) => {
            let mut tail = b.to_vec();
            tail.extend(appended);
            Some(Expected::List {
                unknown_prefix: false,
                tail,
            })
        }
        None if !appended.is_empty() => Some(Expected::List {
            unknown_prefix: true,
            tail: appended,
        }),
        None => None,
    }
}
