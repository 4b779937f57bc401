//! The reads of [`Observations`]: what each read of a transaction that did
//! not abort observed. A big history's transactions are read in two halves
//! side by side (`graph::halves`); the reads come back in one list in
//! transaction order, as one pass makes it.

use super::{NO, Observations, Read, ReadFrom, around, read_list, read_scalar};
use crate::graph::halves;
use crate::txn::{Status, Txns};
use std::ops::Range;
use store::{MicroOp, ReadValue};

impl<'h> Observations<'h> {
    /// list-append reads: prefix of the longest read or not, the writer of
    /// the last element, and whether a closer look is needed.
    pub(super) fn list_reads(&mut self, txns: &Txns<'h>, parallel: bool) {
        let nkeys = txns.keys.len();
        // Raw position in each longest read from which reads need a careful
        // look: a garbage element, one seen before, or an aborted one.
        let mut suspicious_from: Vec<usize> = vec![usize::MAX; nkeys];
        let mut placed = vec![false; self.writes.len()];
        for (k, s) in suspicious_from.iter_mut().enumerate() {
            for (raw, &id) in self.longest_ids(k as u32).iter().enumerate() {
                let bad = id == NO
                    || std::mem::replace(&mut placed[id as usize], true)
                    || txns.status(self.writes[id as usize].txn) == Status::Fail;
                if bad {
                    *s = raw;
                    break;
                }
            }
        }
        drop(placed);
        let this = &*self;
        let parts = halves(parallel, txns.len(), |part| {
            let mut out = reads_for(txns, &part);
            this.list_reads_of(txns, part, &suspicious_from, &mut out);
            out
        });
        self.reads = concat(parts);
    }

    /// [`Observations::list_reads`] of the transactions `part`, into `out`.
    fn list_reads_of(
        &self,
        txns: &Txns<'h>,
        part: Range<usize>,
        suspicious_from: &[usize],
        out: &mut Vec<Read>,
    ) {
        each_read(txns, part, |t, status, i, rv| {
            let Some(r) = read_list(status, rv) else {
                return;
            };
            let k = txns.key_of(t, i);
            let l = self.longest[k as usize];
            // A read that shares the longest read's buffer (the store's
            // `ValList`) starts where it starts: a prefix, no compare.
            let prefix = r.len() <= l.len()
                && (std::ptr::eq(r.as_ptr(), l.as_ptr()) || r.iter().zip(l).all(|(a, b)| a == b));
            // The last element's write: from the longest read when this
            // read is a prefix of it (no hashing), else looked up.
            let from = match r.last() {
                None => ReadFrom::Initial,
                Some(_) if prefix => match self.longest_ids(k)[r.len() - 1] {
                    NO => ReadFrom::Garbage,
                    id => ReadFrom::Write(id),
                },
                Some(v) => self
                    .write_of(k, v)
                    .map_or(ReadFrom::Garbage, ReadFrom::Write),
            };
            let mut flags = around(txns, t, i, k, true) | Read::LIST;
            if prefix {
                flags |= Read::PREFIX;
            }
            if !prefix || r.len() > suspicious_from[k as usize] {
                flags |= Read::CAREFUL;
            }
            out.push(Read::new(t, i as u32, from, flags));
        });
    }

    /// rw-register reads: the writer of the value read.
    pub(super) fn register_reads(&mut self, txns: &Txns<'h>, parallel: bool) {
        let this = &*self;
        let parts = halves(parallel, txns.len(), |part| {
            let mut out = reads_for(txns, &part);
            let bad_type = this.register_reads_of(txns, part, &mut out);
            (out, bad_type)
        });
        let bad_type: usize = parts.iter().map(|p| p.1).sum();
        self.reads = concat(parts.into_iter().map(|p| p.0).collect());
        if bad_type > 0 {
            self.warnings.push(format!(
                "{bad_type} reads returned a list rather than a single value; ignored by rw-register"
            ));
        }
    }

    /// [`Observations::register_reads`] of the transactions `part`, into
    /// `out`; returns how many external reads of committed transactions
    /// returned a list.
    fn register_reads_of(&self, txns: &Txns<'h>, part: Range<usize>, out: &mut Vec<Read>) -> usize {
        let mut bad_type = 0usize;
        each_read(txns, part, |t, status, i, rv| {
            let k = txns.key_of(t, i);
            let flags = around(txns, t, i, k, false);
            let Some(v) = read_scalar(rv) else {
                // Counted where Elle looks: external reads of committed txns.
                if flags & Read::FIRST_ON_KEY != 0 && status == Status::Ok {
                    bad_type += 1;
                }
                return;
            };
            let from = match v {
                None => ReadFrom::Initial,
                Some(v) if self.reads_initial(k, v) => ReadFrom::Initial,
                Some(v) => self
                    .write_of(k, v)
                    .map_or(ReadFrom::Garbage, ReadFrom::Write),
            };
            out.push(Read::new(t, i as u32, from, flags));
        });
        bad_type
    }
}

/// Calls `f` with each read micro-op of the transactions `part` that did
/// not abort: the transaction, its status, the micro-op's position, what
/// it returned.
fn each_read<'h>(
    txns: &Txns<'h>,
    part: Range<usize>,
    mut f: impl FnMut(u32, Status, usize, &'h ReadValue),
) {
    for t in part {
        let tx = &txns.txns[t];
        if tx.status == Status::Fail {
            continue;
        }
        for (i, m) in txns.mops_of(tx).iter().enumerate() {
            if let MicroOp::Read(_, rv) = m {
                f(t as u32, tx.status, i, rv);
            }
        }
    }
}

/// A list for the reads of the transactions `part`, sized once: the first
/// part's for every read micro-op (at most one read each; the later
/// parts' reads are appended to it), a later part's for its share and a
/// little more.
fn reads_for(txns: &Txns<'_>, part: &Range<usize>) -> Vec<Read> {
    let n = txns.n_reads;
    if part.start == 0 {
        return Vec::with_capacity(n);
    }
    let share = (n as u128 * part.len() as u128 / txns.len().max(1) as u128) as usize;
    Vec::with_capacity((share + share / 16).min(n))
}

/// The parts' reads, in order, in the first part's list.
fn concat(parts: Vec<Vec<Read>>) -> Vec<Read> {
    let mut parts = parts.into_iter();
    let mut all = parts.next().unwrap_or_default();
    for p in parts {
        all.extend(p);
    }
    all
}
