//! [`ValList`]: a list read's elements, shared with every other read of the
//! same key that is a prefix of the same observation.
//!
//! Why: in a list-append history almost every read of a key is a prefix of
//! the key's longest read (that is what a valid history looks like), so
//! storing each read as its own `Vec<Val>` holds the same elements dozens of
//! times (most of a loaded history's memory, and one allocation per read).
//! A `ValList` is `(shared buffer, length)`: [`ListSharer`] (used by the
//! readers while they collect a history) makes every read of a key that is a
//! prefix of, or extends, the key's current buffer point into that buffer.
//!
//! Key decisions and invariants:
//! - A buffer ([`Chunk`]) is append-only with a fixed capacity. `claimed`
//!   counts the slots handed out; a slot is written exactly once, by the
//!   one caller whose compare-exchange claimed it, before any `ValList`
//!   covering it exists. A `ValList` only ever reads `[..len]`, and `len`
//!   never exceeds the slots written before it was made, so readers and the
//!   appender never touch the same slot (hence `Send`/`Sync`).
//! - Extending works only from the buffer's end (`len == claimed`); a read
//!   that diverges, or outgrows the capacity, gets a new buffer (doubling
//!   capacity, so a key's buffers sum to ~2× its longest read).
//! - Equality, hashing, ordering and `Debug` are those of the element slice:
//!   sharing is invisible to everything but memory and [`ValList::shares`].
//! - The JSON Lines reader also hands the sharer each read's text: a read
//!   whose bytes begin with those of its key's longest read takes those
//!   elements from the buffer unparsed ([`ListSharer::known_prefix`],
//!   [`ListSharer::share_text`]); the result is the one
//!   [`ListSharer::share_vals`] gives for the parsed list.
//! - This is the store's only `unsafe` code (the workspace denies it
//!   elsewhere): four blocks, each with the invariant it relies on.

#![allow(unsafe_code)]

use crate::history::{Key, MicroOp, Op, OpValue, ReadValue, Val};
use rustc_hash::FxHashMap;
use std::cell::UnsafeCell;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An append-only buffer of values (see the module doc for its invariant).
struct Chunk {
    /// Slots handed out (written, or being written by their claimer).
    claimed: AtomicUsize,
    slots: Box<[UnsafeCell<MaybeUninit<Val>>]>,
}

// SAFETY: every slot is written once by the thread that claimed it, before
// any `ValList` covering it is made; afterwards it is only read. `Val` is
// `Send + Sync`.
unsafe impl Send for Chunk {}
// SAFETY: as above.
unsafe impl Sync for Chunk {}

impl Chunk {
    /// A buffer holding `vals`, with room for `capacity` (≥ `vals.len()`).
    fn new(vals: Vec<Val>, capacity: usize) -> Chunk {
        let n = vals.len();
        // Same layout: collected in place, `vals`' allocation reused.
        let mut slots: Vec<UnsafeCell<MaybeUninit<Val>>> = vals
            .into_iter()
            .map(|v| UnsafeCell::new(MaybeUninit::new(v)))
            .collect();
        if capacity > n {
            slots.reserve_exact(capacity - n);
            slots.resize_with(capacity, || UnsafeCell::new(MaybeUninit::uninit()));
        }
        Chunk {
            claimed: AtomicUsize::new(n),
            slots: slots.into_boxed_slice(),
        }
    }

    /// The first `len` values (`len` ≤ slots written).
    fn prefix(&self, len: usize) -> &[Val] {
        debug_assert!(len <= self.claimed.load(Ordering::Relaxed));
        // SAFETY: `UnsafeCell<MaybeUninit<Val>>` has `Val`'s layout; the first
        // `len` slots are initialised and never written again (module doc).
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr().cast::<Val>(), len) }
    }

    /// Appends `more` at `at` if the buffer ends there and has room.
    fn try_append(&self, at: usize, more: &[Val]) -> bool {
        let end = at + more.len();
        if end > self.slots.len()
            || self
                .claimed
                .compare_exchange(at, end, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        for (slot, v) in self.slots[at..end].iter().zip(more) {
            // SAFETY: this call claimed `[at, end)`; nobody reads it yet.
            unsafe { (*slot.get()).write(v.clone()) };
        }
        true
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let n = *self.claimed.get_mut();
        for slot in &mut self.slots[..n] {
            // SAFETY: claimed slots are initialised (module doc); dropped once.
            unsafe { slot.get_mut().assume_init_drop() };
        }
    }
}

/// A list of values: a length into a shared, append-only buffer. Derefs to
/// `[Val]`.
#[derive(Clone, Default)]
pub struct ValList {
    chunk: Option<Arc<Chunk>>,
    len: usize,
}

impl ValList {
    /// The empty list (no allocation).
    pub fn new() -> ValList {
        ValList::default()
    }

    /// The elements.
    pub fn as_slice(&self) -> &[Val] {
        match &self.chunk {
            Some(c) => c.prefix(self.len),
            None => &[],
        }
    }

    /// The first `len` elements, sharing this list's buffer.
    pub fn prefix(&self, len: usize) -> ValList {
        ValList {
            chunk: if len == 0 { None } else { self.chunk.clone() },
            len: len.min(self.len),
        }
    }

    /// Whether `self` and `other` are views of one buffer (so the shorter is
    /// a prefix of the longer without looking at the elements).
    pub fn shares(&self, other: &ValList) -> bool {
        match (&self.chunk, &other.chunk) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => self.len == 0 || other.len == 0,
        }
    }

    /// `self` followed by `more`, in this buffer if it ends where `self`
    /// does and has room; `None` otherwise.
    fn extended(&self, more: &[Val]) -> Option<ValList> {
        let c = self.chunk.as_ref()?;
        c.try_append(self.len, more).then(|| ValList {
            chunk: Some(c.clone()),
            len: self.len + more.len(),
        })
    }

    /// A list in a new buffer with room for `capacity` elements.
    fn with_capacity(vals: Vec<Val>, capacity: usize) -> ValList {
        if vals.is_empty() && capacity == 0 {
            return ValList::new();
        }
        let len = vals.len();
        ValList {
            chunk: Some(Arc::new(Chunk::new(vals, capacity))),
            len,
        }
    }
}

impl Deref for ValList {
    type Target = [Val];
    fn deref(&self) -> &[Val] {
        self.as_slice()
    }
}

impl From<Vec<Val>> for ValList {
    fn from(v: Vec<Val>) -> ValList {
        let n = v.len();
        ValList::with_capacity(v, n)
    }
}

impl From<&[Val]> for ValList {
    fn from(v: &[Val]) -> ValList {
        ValList::from(v.to_vec())
    }
}

impl FromIterator<Val> for ValList {
    fn from_iter<I: IntoIterator<Item = Val>>(iter: I) -> ValList {
        ValList::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a ValList {
    type Item = &'a Val;
    type IntoIter = std::slice::Iter<'a, Val>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl fmt::Debug for ValList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl PartialEq for ValList {
    fn eq(&self, other: &ValList) -> bool {
        (self.len == other.len && self.shares(other)) || self.as_slice() == other.as_slice()
    }
}

impl Eq for ValList {}

impl PartialEq<Vec<Val>> for ValList {
    fn eq(&self, other: &Vec<Val>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<[Val]> for ValList {
    fn eq(&self, other: &[Val]) -> bool {
        self.as_slice() == other
    }
}

impl Hash for ValList {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

/// Makes list reads of the same key share buffers: per key, the buffer of
/// the longest read so far (see the module doc). One per reader thread.
#[derive(Default)]
pub struct ListSharer {
    longest: FxHashMap<Key, Longest>,
    texts: Texts,
    scratch: Vec<Val>,
}

/// A key's longest read so far, and the text it was read from when a
/// reader gave it ([`ListSharer::share_text`]).
///
/// Invariant: `text` (the bytes after the read's `[`, up to the end of its
/// last element, in the sharer's [`Texts`]) holds exactly the elements
/// `list[..elems]`, and has no `"` (so every `,` in it separates two
/// elements); a list given without text, or with strings, keeps none (`elems` 0).
struct Longest {
    list: ValList,
    text: Span,
    elems: usize,
}

impl Longest {
    fn without_text(list: ValList) -> Longest {
        Longest {
            list,
            text: Span::default(),
            elems: 0,
        }
    }

    /// Remembers `text` as holding the first `elems` elements, unless it
    /// has a string.
    fn set_text(&mut self, texts: &mut Texts, text: &[u8], elems: usize) {
        if memchr::memchr(b'"', text).is_none() {
            texts.set(&mut self.text, text);
            self.elems = elems;
        } else {
            self.text.len = 0;
            self.elems = 0;
        }
    }
}

/// Where a key's text is in [`Texts`]: `len` bytes at `at`, room for `cap`.
#[derive(Clone, Copy, Default)]
struct Span {
    at: usize,
    len: usize,
    cap: usize,
}

/// Every key's remembered text in one buffer, not one allocation per key:
/// freed at once with the sharer, it leaves no holes in the pages that hold
/// the lists (per-key buffers left the loaded history 6 MB bigger at 1M).
/// A text that outgrows its room moves to the end, with room to double.
#[derive(Default)]
struct Texts(Vec<u8>);

impl Texts {
    fn get(&self, s: Span) -> &[u8] {
        self.0.get(s.at..s.at + s.len).unwrap_or_default()
    }

    /// `s` made to hold `text`.
    fn set(&mut self, s: &mut Span, text: &[u8]) {
        s.len = 0;
        self.append(s, text);
    }

    /// `more` appended to `s`'s text.
    fn append(&mut self, s: &mut Span, more: &[u8]) {
        let len = s.len + more.len();
        if len > s.cap {
            let cap = (2 * len).max(32);
            let at = self.0.len();
            self.0.resize(at + cap, 0);
            self.0.copy_within(s.at..s.at + s.len, at);
            *s = Span {
                at,
                len: s.len,
                cap,
            };
        }
        self.0[s.at + s.len..s.at + len].copy_from_slice(more);
        s.len = len;
    }
}

impl ListSharer {
    /// A sharer with no keys yet.
    pub fn new() -> ListSharer {
        ListSharer::default()
    }

    /// `list` (a read of `key`) as a view of the key's shared buffer when it
    /// is a prefix of it or extends it; otherwise in a buffer of its own,
    /// which becomes the key's if it is longer.
    pub fn share(&mut self, key: &Key, list: &ValList) -> ValList {
        self.share_vals(key, list)
    }

    /// [`ListSharer::share`] for elements not yet in a list: what the
    /// readers call, so a read that is a prefix of its key's buffer costs no
    /// allocation at all.
    pub fn share_vals(&mut self, key: &Key, list: &[Val]) -> ValList {
        if list.is_empty() {
            return ValList::new();
        }
        let Some(cur) = self.longest.get_mut(key) else {
            let own = fresh(list);
            self.longest
                .insert(key.clone(), Longest::without_text(own.clone()));
            return own;
        };
        let (own, grew) = share_with(&mut cur.list, list);
        if grew {
            cur.set_text(&mut self.texts, &[], 0);
        }
        own
    }

    /// How much of a read of `key` the key's remembered text already
    /// holds: `body` is the read's bytes after its `[`; the answer is a
    /// number of leading elements whose bytes are those of the key's
    /// longest read (so are its elements), and the offset in `body` just
    /// past the last of them (the next byte is `,`, `]` or a blank).
    /// `(0, 0)` when none do.
    pub fn known_prefix(&self, key: &Key, body: &[u8]) -> (usize, usize) {
        let Some(cur) = self.longest.get(key) else {
            return (0, 0);
        };
        let text = self.texts.get(cur.text);
        let same = common_prefix(body, text);
        if same == text.len()
            && cur.elems > 0
            && matches!(
                body.get(same),
                Some(b',' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            )
        {
            // The whole text, its last element ended.
            return (cur.elems, same);
        }
        // The elements before the last `,` the two agree on (`12` against
        // `1`: an element may go on in `body` where the bytes stop agreeing).
        match memchr::memrchr(b',', &text[..same]) {
            Some(at) => (memchr::memchr_iter(b',', &text[..at]).count() + 1, at),
            None => (0, 0),
        }
    }

    /// A read of `key` whose first `known` elements are the key's longest
    /// read's ([`ListSharer::known_prefix`]), followed by `more`: what
    /// [`ListSharer::share_vals`] gives for the whole list. `text` is the
    /// read's bytes after its `[` up to the end of its last element; the
    /// key remembers it when this read becomes its longest.
    pub fn share_text(&mut self, key: &Key, known: usize, more: &[Val], text: &[u8]) -> ValList {
        let Some(cur) = self.longest.get_mut(key) else {
            if more.is_empty() {
                return ValList::new();
            }
            let own = fresh(more);
            let mut entry = Longest::without_text(own.clone());
            entry.set_text(&mut self.texts, text, more.len());
            self.longest.insert(key.clone(), entry);
            return own;
        };
        if more.is_empty() {
            // A prefix of the key's list, by its bytes.
            return cur.list.prefix(known);
        }
        let n = cur.list.len();
        if known == n && known == cur.elems {
            // Extends the key's list (its bytes and more).
            let own = match cur.list.extended(more) {
                Some(l) => l,
                None => {
                    let mut all = cur.list.to_vec();
                    all.extend_from_slice(more);
                    fresh(&all)
                }
            };
            cur.list = own.clone();
            let tail = text.get(cur.text.len..).unwrap_or_default();
            if memchr::memchr(b'"', tail).is_none() {
                self.texts.append(&mut cur.text, tail);
                cur.elems += more.len();
            } else {
                cur.set_text(&mut self.texts, &[], 0);
            }
            return own;
        }
        let mut all = cur.list[..known].to_vec();
        all.extend_from_slice(more);
        let (own, grew) = share_with(&mut cur.list, &all);
        if grew {
            cur.set_text(&mut self.texts, text, known + more.len());
        }
        own
    }

    /// A cleared buffer for a reader to collect a list's elements in before
    /// [`ListSharer::share_vals`]; give it back with [`ListSharer::put_scratch`].
    pub fn take_scratch(&mut self) -> Vec<Val> {
        let mut v = std::mem::take(&mut self.scratch);
        v.clear();
        v
    }

    /// Returns the buffer of [`ListSharer::take_scratch`] for reuse.
    pub fn put_scratch(&mut self, v: Vec<Val>) {
        self.scratch = v;
    }
}

/// `list` (not empty) against a key's longest list `cur`: a view of it when
/// `list` is a prefix, the buffer extended when `list` extends it, else a
/// buffer of its own, which replaces `cur` when longer; and whether `cur`
/// changed.
fn share_with(cur: &mut ValList, list: &[Val]) -> (ValList, bool) {
    let n = cur.len();
    if list.len() <= n && cur[..list.len()] == *list {
        return (cur.prefix(list.len()), false);
    }
    let ext = list.len() > n && list[..n] == cur[..];
    let own = if ext {
        cur.extended(&list[n..]).unwrap_or_else(|| fresh(list))
    } else {
        fresh(list)
    };
    let grew = own.len() > n;
    if grew {
        *cur = own.clone();
    }
    (own, grew)
}

/// How many leading bytes `a` and `b` have in common.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap_or_default());
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

impl ListSharer {
    /// Shares the list reads of `op` (a no-op for anything else).
    pub fn share_op(&mut self, op: &mut Op) {
        let OpValue::Txn(mops) = &mut op.value else {
            return;
        };
        for m in mops {
            if let MicroOp::Read(k, ReadValue::List(l)) = m {
                *l = self.share(k, l);
            }
        }
    }
}

/// `list` in a new buffer with room to double.
fn fresh(list: &[Val]) -> ValList {
    let capacity = (2 * list.len()).max(8);
    // Allocated once at its final size (`Chunk::new` keeps the allocation).
    let mut vals = Vec::with_capacity(capacity);
    vals.extend_from_slice(list);
    ValList::with_capacity(vals, capacity)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn l(v: &[i64]) -> ValList {
        v.iter().map(|&i| Val::int(i)).collect()
    }

    #[test]
    fn prefixes_and_extensions_share_one_buffer() {
        let mut s = ListSharer::new();
        let k = Key::int(1);
        let a = s.share(&k, &l(&[1, 2]));
        let b = s.share(&k, &l(&[1, 2, 3, 4]));
        let c = s.share(&k, &l(&[1]));
        assert!(a.shares(&b) && b.shares(&c));
        assert_eq!(
            (a.to_vec(), b.to_vec(), c.to_vec()),
            (
                l(&[1, 2]).to_vec(),
                l(&[1, 2, 3, 4]).to_vec(),
                l(&[1]).to_vec()
            )
        );
        // A read that diverges gets its own buffer and leaves the others intact.
        let d = s.share(&k, &l(&[1, 9]));
        assert!(!d.shares(&b));
        assert_eq!(d, l(&[1, 9]));
        assert_eq!(b, l(&[1, 2, 3, 4]));
        // Another key never shares.
        let e = s.share(&Key::int(2), &l(&[1, 2]));
        assert!(!e.shares(&a));
        assert_eq!(e, a);
    }

    #[test]
    fn extending_from_a_shorter_view_does_not_overwrite() {
        let mut s = ListSharer::new();
        let k = Key::int(1);
        let long = s.share(&k, &l(&[1, 2, 3]));
        let short = long.prefix(1);
        // Only the buffer's end may be extended.
        assert!(short.extended(&[Val::int(7)]).is_none());
        assert_eq!(long, l(&[1, 2, 3]));
        // Growing past the capacity moves to a new, bigger buffer.
        let big: Vec<i64> = (1..=40).collect();
        let grown = s.share(&k, &l(&big));
        assert!(!grown.shares(&long));
        assert_eq!(grown.len(), 40);
        assert_eq!(long, l(&[1, 2, 3]));
    }

    #[test]
    fn shared_lists_cross_threads() {
        let mut s = ListSharer::new();
        let k = Key::int(1);
        let lists: Vec<ValList> = (1..=20)
            .map(|n| s.share(&k, &l(&(0..n).collect::<Vec<_>>())))
            .collect();
        let sums: Vec<i64> = std::thread::scope(|sc| {
            let h: Vec<_> = lists
                .iter()
                .map(|x| {
                    sc.spawn(move || {
                        x.iter()
                            .map(|v| match v.0 {
                                crate::Atom::Int(i) => i,
                                _ => 0,
                            })
                            .sum::<i64>()
                    })
                })
                .collect();
            h.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(sums[19], (0..20).sum::<i64>());
        assert_eq!(sums[0], 0);
    }
}
