//! JSON: a hand-rolled parser straight into [`Op`] and the writer.
//!
//! Key decision: no `serde_json::Value` per op. The common fields and the
//! usual `[["append",k,v],["r",k,[…]]]` transaction shape are parsed directly;
//! anything else goes through [`Data`] and the shared rules in `convert`.
//! A reader filling a history ([`super::OpReader::read_into`]) first tries
//! [`Json::usual_op`]: a client transaction with only the six usual fields,
//! read without an [`Op`] (its micro-ops into the reader's scratch vector,
//! then straight into the columns); on anything else it reads the same
//! bytes again with [`Json::op`], so errors and results are that path's.
//!
//! The JSON encoding of EDN-only values is documented in the parent module.

use super::convert::{
    RawOp, RawValue, SEEN_ALL_USUAL, SEEN_F, SEEN_INDEX, SEEN_PROCESS, SEEN_TIME, SEEN_TYPE,
    SEEN_VALUE, UsualOp, type_from_name,
};
use super::cursor::{Cursor, push_digit, show};
use super::edn::is_keyword_name;
use super::op_writer::{self, Syntax, float_text};
use super::source::PErr;
use crate::data::Data;
use crate::history::{Atom, F, Key, MicroOp, Op, OpType, ReadValue, Val};
use crate::list::ListSharer;
use std::borrow::Cow;

/// Deepest nesting of JSON arrays/objects accepted.
pub(crate) const MAX_DEPTH: u32 = 64;

/// Strings up to this long are scanned byte by byte ([`Json::raw_str`]).
const SHORT_STR: usize = 16;

/// An op's usual field names, quoted, in the order they usually come.
const FIELDS: [&[u8]; 6] = [
    b"\"index\"",
    b"\"time\"",
    b"\"type\"",
    b"\"process\"",
    b"\"f\"",
    b"\"value\"",
];

/// The micro-op names of the usual transaction shape, quoted.
const MOP_NAMES: [&[u8]; 3] = [b"\"append\"", b"\"r\"", b"\"w\""];

/// A JSON parser over one buffer.
pub(crate) struct Json<'a> {
    b: &'a [u8],
    /// Current byte offset in `b`.
    pub pos: usize,
}

super::cursor::cursor_over_fields!(Json);

impl<'a> Json<'a> {
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), PErr> {
        match self.peek() {
            None => Err(PErr::Incomplete),
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(x) => self.bad(format!("expected {what}, found {}", show(x))),
        }
    }

    /// A string, at its opening quote.
    fn string(&mut self) -> Result<Cow<'a, str>, PErr> {
        self.expect(b'"', "a string")?;
        let start = self.pos;
        let mut i = start;
        // Fast path: no escapes.
        loop {
            match self.b.get(i) {
                None => return Err(PErr::Incomplete),
                Some(b'"') => {
                    let s = std::str::from_utf8(&self.b[start..i]).map_err(|e| PErr::Bad {
                        pos: start + e.valid_up_to(),
                        reason: "invalid UTF-8 in string".into(),
                    })?;
                    self.pos = i + 1;
                    return Ok(Cow::Borrowed(s));
                }
                Some(b'\\') => break,
                Some(&c) if c < 0x20 => {
                    self.pos = i;
                    return self.bad("control character in string");
                }
                Some(_) => i += 1,
            }
        }
        let mut out: Vec<u8> = self.b[start..i].to_vec();
        loop {
            match self.b.get(i) {
                None => return Err(PErr::Incomplete),
                Some(b'"') => {
                    self.pos = i + 1;
                    return String::from_utf8(out)
                        .map(Cow::Owned)
                        .map_err(|_| PErr::Bad {
                            pos: start,
                            reason: "invalid UTF-8 in string".into(),
                        });
                }
                Some(b'\\') => {
                    let Some(&e) = self.b.get(i + 1) else {
                        return Err(PErr::Incomplete);
                    };
                    i += 2;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4(i)?;
                            i += 4;
                            if (0xD800..0xDC00).contains(&hi) {
                                match (self.b.get(i), self.b.get(i + 1)) {
                                    (None, _) | (Some(b'\\'), None) => {
                                        return Err(PErr::Incomplete);
                                    }
                                    (Some(b'\\'), Some(b'u')) => {}
                                    _ => {
                                        self.pos = i;
                                        return self.bad("unpaired surrogate in \\u escape");
                                    }
                                }
                                let lo = self.hex4(i + 2)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    self.pos = i;
                                    return self.bad("unpaired surrogate in \\u escape");
                                }
                                i += 6;
                                let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                char::from_u32(cp).unwrap_or('\u{FFFD}')
                            } else {
                                match char::from_u32(hi) {
                                    Some(c) => c,
                                    None => {
                                        self.pos = i - 6;
                                        return self.bad("unpaired surrogate in \\u escape");
                                    }
                                }
                            }
                        }
                        other => {
                            self.pos = i - 1;
                            return self.bad(format!("invalid escape \\{}", other as char));
                        }
                    };
                    let mut tmp = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
                Some(&c) if c < 0x20 => {
                    self.pos = i;
                    return self.bad("control character in string");
                }
                Some(&c) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
    }

    fn hex4(&mut self, at: usize) -> Result<u32, PErr> {
        let mut v = 0u32;
        for k in 0..4 {
            let Some(&c) = self.b.get(at + k) else {
                return Err(PErr::Incomplete);
            };
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => {
                    self.pos = at + k;
                    return self.bad("invalid hex digit in \\u escape");
                }
            };
            v = v * 16 + u32::from(d);
        }
        Ok(v)
    }

    /// A string at its opening quote, as [`Json::raw_str`] reads it, but
    /// first compared whole (quotes included) with the `usual` strings: the
    /// names every line of a history repeats.
    #[inline]
    fn usual(&mut self, usual: &[&'static [u8]]) -> Result<Option<&'a [u8]>, PErr> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        for quoted in usual {
            if rest.starts_with(quoted) {
                self.pos += quoted.len();
                return Ok(rest.get(1..quoted.len() - 1));
            }
        }
        self.raw_str()
    }

    /// [`Json::usual`] with [`FIELDS`], the one candidate picked by the
    /// name's first letters (each compared as a constant, no `memcmp`).
    #[inline]
    fn usual_field(&mut self) -> Result<Option<&'a [u8]>, PErr> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        let n = match rest.get(1..3) {
            Some(b"in") if rest.starts_with(FIELDS[0]) => FIELDS[0].len(),
            Some(b"ti") if rest.starts_with(FIELDS[1]) => FIELDS[1].len(),
            Some(b"ty") if rest.starts_with(FIELDS[2]) => FIELDS[2].len(),
            Some(b"pr") if rest.starts_with(FIELDS[3]) => FIELDS[3].len(),
            Some(b"f\"") if rest.starts_with(FIELDS[4]) => FIELDS[4].len(),
            Some(b"va") if rest.starts_with(FIELDS[5]) => FIELDS[5].len(),
            _ => return self.raw_str(),
        };
        self.pos += n;
        Ok(rest.get(1..n - 1))
    }

    /// The op type when the string at the position (its opening quote) is
    /// one of the usual quoted names (and moves past it); `None` (position
    /// unchanged) otherwise.
    #[inline]
    fn usual_type(&mut self) -> Option<OpType> {
        let rest = self.b.get(self.pos..)?;
        let (n, t) = match rest.get(1)? {
            b'i' if rest.starts_with(b"\"invoke\"") => (8, OpType::Invoke),
            b'i' if rest.starts_with(b"\"info\"") => (6, OpType::Info),
            b'o' if rest.starts_with(b"\"ok\"") => (4, OpType::Ok),
            b'f' if rest.starts_with(b"\"fail\"") => (6, OpType::Fail),
            _ => return None,
        };
        self.pos += n;
        Some(t)
    }

    /// The byte `c` at the position, stepped over; `None` for anything else.
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek()? == c {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    /// A name's string (`type`, `f`), at its opening quote: borrowed when it
    /// is plain ASCII, else as [`Json::string`] reads it (errors included).
    fn name_str(&mut self) -> Result<Cow<'a, str>, PErr> {
        let save = self.pos;
        if let Ok(Some(b)) = self.raw_str()
            && let Ok(s) = std::str::from_utf8(b)
        {
            return Ok(Cow::Borrowed(s));
        }
        self.pos = save;
        self.string()
    }

    /// The bytes of a string at its opening quote when it is plain ASCII
    /// without escapes (the common case); `None` (position unchanged) otherwise.
    /// Field names and micro-op names are short: a plain loop over their
    /// first bytes finds the closing quote before `memchr2` is set up; it
    /// hands anything else (an escape, a byte outside printable ASCII, a
    /// long string) to the general scan unchanged.
    #[inline]
    fn raw_str(&mut self) -> Result<Option<&'a [u8]>, PErr> {
        let start = self.pos + 1;
        let rest = self.b.get(start..).unwrap_or(&[]);
        for (n, &c) in rest.iter().take(SHORT_STR).enumerate() {
            if c == b'"' {
                self.pos = start + n + 1;
                return Ok(Some(&rest[..n]));
            }
            if c == b'\\' || !(0x20..0x7f).contains(&c) {
                break;
            }
        }
        self.raw_str_long(start, rest)
    }

    /// [`Json::raw_str`] past its first bytes.
    fn raw_str_long(&mut self, start: usize, rest: &'a [u8]) -> Result<Option<&'a [u8]>, PErr> {
        match memchr::memchr2(b'"', b'\\', rest) {
            None => Err(PErr::Incomplete),
            Some(n) if rest[n] == b'"' => {
                let s = &rest[..n];
                if s.iter().all(|&c| (0x20..0x7f).contains(&c)) {
                    self.pos = start + n + 1;
                    Ok(Some(s))
                } else {
                    Ok(None)
                }
            }
            Some(_) => Ok(None),
        }
    }

    /// An integer in one pass; `None` (position unchanged) for anything
    /// else (floats, overflow, malformed), which the caller re-parses slowly.
    /// Its own digit loop rather than `Cursor::int_digits`: on the JSON
    /// Lines hot path that costs 3–5 % more CPU (BENCHMARKS.md). Up to 18
    /// digits cannot overflow, so they are summed unchecked; a longer number
    /// goes through [`Json::int_checked`].
    #[inline]
    fn int_fast(&mut self) -> Option<i64> {
        let b = self.b;
        let neg = b.get(self.pos) == Some(&b'-');
        let first = self.pos + usize::from(neg);
        if let Some((v, n)) = b.get(first..first + 8).and_then(short_digits) {
            return self.int_end(first, v, n, neg);
        }
        self.int_long(first, neg)
    }

    /// [`Json::int_fast`] of an integer of `n` digits from `first`, worth
    /// `v`, negative if `neg`: `None` for no digit, a leading zero or a
    /// number that goes on as a float.
    #[inline]
    fn int_end(&mut self, first: usize, v: u64, n: usize, neg: bool) -> Option<i64> {
        let b = self.b;
        if n == 0
            || (n > 1 && b[first] == b'0')
            || matches!(b.get(first + n), Some(b'.' | b'e' | b'E') | None)
        {
            return None;
        }
        self.pos = first + n;
        // At most 18 digits: fits an i64 either way.
        let v = v as i64;
        Some(if neg { -v } else { v })
    }

    /// [`Json::int_fast`] of eight digits or more (or of the last bytes of
    /// the buffer), apart so the short numbers' path stays small: up to 15
    /// digits as two words of eight (a time in nanoseconds has 10–12),
    /// else digit by digit.
    #[inline(never)]
    fn int_long(&mut self, first: usize, neg: bool) -> Option<i64> {
        let b = self.b;
        if let Some((eight, next)) = b.get(first..first + 16).map(|w| w.split_at(8))
            && let Some((low, k)) = short_digits(next)
        {
            return self.int_end(first, eight_digits(eight) * TENS[k] + low, 8 + k, neg);
        }
        let stop = b.len().min(first + 18);
        let mut i = first;
        let mut v: u64 = 0;
        while i < stop {
            let d = b[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v * 10 + u64::from(d);
            i += 1;
        }
        match b.get(i) {
            Some(b'0'..=b'9') => return self.int_checked(),
            Some(b'.' | b'e' | b'E') | None => return None,
            Some(_) => {}
        }
        self.int_end(first, v, i - first, neg)
    }

    /// [`Json::int_fast`] for any number of digits, overflow checked.
    fn int_checked(&mut self) -> Option<i64> {
        let save = self.pos;
        let neg = self.peek() == Some(b'-');
        if neg {
            self.pos += 1;
        }
        let first = self.pos;
        let mut v: i64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            match push_digit(v, c, neg) {
                Some(x) => v = x,
                None => {
                    self.pos = save;
                    return None;
                }
            }
            self.pos += 1;
        }
        let n = self.pos - first;
        let ok = n > 0
            && !(n > 1 && self.b.get(first) == Some(&b'0'))
            && !matches!(self.peek(), Some(b'.' | b'e' | b'E') | None);
        if ok {
            Some(v)
        } else {
            self.pos = save;
            None
        }
    }

    fn digits(&mut self) -> Result<usize, PErr> {
        let s = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        if self.pos == s {
            return match self.peek() {
                None => Err(PErr::Incomplete),
                Some(c) => self.bad(format!("expected a digit, found {}", show(c))),
            };
        }
        Ok(self.pos - s)
    }

    /// A number: `Int` when it is an integer that fits in 64 bits, else `Float`.
    fn number(&mut self) -> Result<Data, PErr> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = self.digits()?;
        if n > 1 && self.b.get(int_start) == Some(&b'0') {
            self.pos = int_start;
            return self.bad("leading zero in number");
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.digits()?;
            float = true;
        }
        let text = &self.b[start..self.pos];
        if !float {
            let neg = text.first() == Some(&b'-');
            let digits = &self.b[int_start..self.pos];
            if let Some(v) = digits.iter().try_fold(0, |v, &c| push_digit(v, c, neg)) {
                return Ok(Data::Int(v));
            }
        }
        // ASCII only, so this cannot fail; keep it total anyway.
        let s = std::str::from_utf8(text).unwrap_or("");
        match s.parse::<f64>() {
            Ok(f) => Ok(Data::Float(f)),
            Err(_) => {
                self.pos = start;
                self.bad("invalid number")
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), PErr> {
        for (k, &c) in word.iter().enumerate() {
            match self.b.get(self.pos + k) {
                None => return Err(PErr::Incomplete),
                Some(&x) if x == c => {}
                Some(_) => return self.bad("invalid literal"),
            }
        }
        self.pos += word.len();
        Ok(())
    }

    /// Any JSON value, decoded with the data encoding of this module.
    pub fn data(&mut self, depth: u32) -> Result<Data, PErr> {
        if depth > MAX_DEPTH {
            return self.bad(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        match self.peek() {
            None => Err(PErr::Incomplete),
            Some(b'"') => Ok(decode_str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true").map(|_| Data::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|_| Data::Bool(false)),
            Some(b'n') => self.literal(b"null").map(|_| Data::Nil),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Data::Vec(items));
                }
                loop {
                    self.ws();
                    items.push(self.data(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Data::Vec(items));
                        }
                        None => return Err(PErr::Incomplete),
                        Some(c) => {
                            return self.bad(format!("expected `,` or `]`, found {}", show(c)));
                        }
                    }
                }
            }
            Some(b'{') => self.object(depth),
            Some(c) => self.bad(format!("expected a JSON value, found {}", show(c))),
        }
    }

    fn object(&mut self, depth: u32) -> Result<Data, PErr> {
        self.pos += 1;
        let mut raw: Vec<(Cow<'a, str>, Data)> = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Data::Map(Vec::new()));
        }
        loop {
            self.ws();
            let k = self.string()?;
            self.ws();
            self.expect(b':', "`:`")?;
            self.ws();
            let v = self.data(depth + 1)?;
            raw.push((k, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                None => return Err(PErr::Incomplete),
                Some(c) => return self.bad(format!("expected `,` or `}}`, found {}", show(c))),
            }
        }
        if raw.len() == 1
            && let Some((k, v)) = raw.pop()
        {
            match decode_escape(&k, v) {
                Ok(d) => return Ok(d),
                Err(v) => raw.push((k, v)),
            }
        }
        Ok(Data::Map(
            raw.into_iter().map(|(k, v)| (decode_str(k), v)).collect(),
        ))
    }

    /// One op object, at its `{`.
    /// With `lists`, list reads are built in shared buffers (`crate::list`).
    pub fn op(&mut self, next_index: u64, mut lists: Option<&mut ListSharer>) -> Result<Op, PErr> {
        let start = self.pos;
        self.expect(b'{', "an op object `{`")?;
        let mut raw = RawOp::default();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                let key_pos = self.pos;
                if self.peek() != Some(b'"') {
                    self.expect(b'"', "a field name")?;
                }
                let k: Cow<'a, [u8]> = match self.usual_field()? {
                    Some(name) => Cow::Borrowed(name),
                    None => match self.string()? {
                        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
                    },
                };
                self.ws();
                if self.peek() == Some(b':') {
                    self.pos += 1;
                } else {
                    self.expect(b':', "`:`")?;
                }
                self.ws();
                let val_pos = self.pos;
                let at = |reason: String| PErr::Bad {
                    pos: val_pos,
                    reason,
                };
                match &*k {
                    b"index" | b"time" | b"process"
                        if matches!(self.peek(), Some(b'-' | b'0'..=b'9')) =>
                    {
                        let name = if &*k == b"index" {
                            "index"
                        } else if &*k == b"time" {
                            "time"
                        } else {
                            "process"
                        };
                        match self.int_fast() {
                            Some(i) => match name {
                                "index" => raw.set_index(i),
                                "time" => raw.set_time(i),
                                _ => raw.set_process(i),
                            }
                            .map_err(at)?,
                            None => {
                                let v = self.data(2)?;
                                raw.set(name, v).map_err(at)?;
                            }
                        }
                    }
                    b"type" if self.peek() == Some(b'"') => {
                        raw.mark(SEEN_TYPE, "type").map_err(|r| PErr::Bad {
                            pos: key_pos,
                            reason: r,
                        })?;
                        raw.op_type = Some(match self.usual_type() {
                            Some(t) => t,
                            None => {
                                let s = self.name_str()?;
                                type_from_name(codec_name(&s)).map_err(at)?
                            }
                        });
                    }
                    b"f" if self.peek() == Some(b'"') => {
                        raw.mark(SEEN_F, "f").map_err(|r| PErr::Bad {
                            pos: key_pos,
                            reason: r,
                        })?;
                        let rest = self.b.get(self.pos..).unwrap_or_default();
                        raw.f = Some(if rest.starts_with(b"\"txn\"") {
                            self.pos += 5;
                            F::Txn
                        } else {
                            F::parse(codec_name(&self.name_str()?))
                        });
                    }
                    b"value" => {
                        raw.mark(SEEN_VALUE, "value").map_err(|r| PErr::Bad {
                            pos: key_pos,
                            reason: r,
                        })?;
                        let save = self.pos;
                        let fast = if self.peek() == Some(b'[') {
                            self.try_txn(lists.as_deref_mut())
                        } else {
                            None
                        };
                        raw.value = Some(match fast {
                            Some(m) => RawValue::Txn(m),
                            None => {
                                self.pos = save;
                                RawValue::Data(self.data(2)?)
                            }
                        });
                    }
                    name => {
                        let name = std::str::from_utf8(name).map_err(|_| PErr::Bad {
                            pos: key_pos,
                            reason: "invalid UTF-8 in field name".into(),
                        })?;
                        let v = self.data(2)?;
                        raw.set(name, v).map_err(at)?;
                    }
                }
                self.ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    None => return Err(PErr::Incomplete),
                    Some(c) => {
                        return self.bad(format!("expected `,` or `}}`, found {}", show(c)));
                    }
                }
            }
        }
        raw.finish(next_index)
            .map_err(|reason| PErr::Bad { pos: start, reason })
    }

    /// One op object of the usual shape, at its `{`: the fields `index`
    /// (a non-negative integer; absent: `next_index`), `time` (an integer;
    /// optional), `type` (one of the four names), `process` (a non-negative
    /// integer), `f` (`"txn"`) and `value` (the transaction shape
    /// [`Json::try_txn`] reads), each once and in any order, nothing else.
    /// The micro-ops go into `mops` (empty on entry). `None` for anything
    /// else — an unusual field or value, a duplicate, a syntax error, the
    /// end of the buffer — and the caller reads the same bytes with
    /// [`Json::op`] from the start (`mops` cleared), which gives the error
    /// or the op; for the bytes it accepts, this gives what `op` gives
    /// (`store/tests/json_usual_ops.rs`).
    pub fn usual_op(
        &mut self,
        next_index: u64,
        mops: &mut Vec<MicroOp>,
        mut lists: Option<&mut ListSharer>,
    ) -> Option<UsualOp> {
        let start = self.pos;
        if let Some(op) = self.usual_in_order(mops, lists.as_deref_mut()) {
            return Some(op);
        }
        self.pos = start;
        mops.clear();
        self.eat(b'{')?;
        let (mut index, mut time_ns, mut op_type, mut process) = (None, None, None, None);
        let mut seen = 0u8;
        loop {
            self.ws();
            let rest = self.b.get(self.pos..)?;
            // Each field name picked by its first letters, compared whole.
            let (bit, n) = match rest.get(1..3)? {
                b"in" if rest.starts_with(FIELDS[0]) => (SEEN_INDEX, FIELDS[0].len()),
                b"ti" if rest.starts_with(FIELDS[1]) => (SEEN_TIME, FIELDS[1].len()),
                b"ty" if rest.starts_with(FIELDS[2]) => (SEEN_TYPE, FIELDS[2].len()),
                b"pr" if rest.starts_with(FIELDS[3]) => (SEEN_PROCESS, FIELDS[3].len()),
                b"f\"" if rest.starts_with(FIELDS[4]) => (SEEN_F, FIELDS[4].len()),
                b"va" if rest.starts_with(FIELDS[5]) => (SEEN_VALUE, FIELDS[5].len()),
                _ => return None,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            self.pos += n;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match bit {
                SEEN_INDEX => index = Some(u64::try_from(self.usual_int()?).ok()?),
                SEEN_TIME => time_ns = Some(self.usual_int()?),
                SEEN_TYPE => op_type = Some(self.usual_type()?),
                SEEN_PROCESS => process = Some(u64::try_from(self.usual_int()?).ok()?),
                SEEN_F => {
                    if !self.b.get(self.pos..)?.starts_with(b"\"txn\"") {
                        return None;
                    }
                    self.pos += 5;
                }
                _ => {
                    if self.peek()? != b'[' {
                        return None;
                    }
                    self.txn_into(mops, lists.as_deref_mut())?;
                }
            }
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
        if seen | SEEN_INDEX | SEEN_TIME != SEEN_ALL_USUAL {
            return None;
        }
        Some(UsualOp {
            index: index.unwrap_or(next_index),
            time_ns: time_ns.and_then(super::convert::time_from_int),
            op_type: op_type?,
            process: process?,
        })
    }

    /// [`Json::usual_op`] of the op harness writes: all six fields in
    /// [`FIELDS`]' order, no blanks — each name and separator compared as
    /// one constant. `None` for anything else (the caller tries any order).
    #[inline]
    fn usual_in_order(
        &mut self,
        mops: &mut Vec<MicroOp>,
        lists: Option<&mut ListSharer>,
    ) -> Option<UsualOp> {
        self.skip_const(b"{\"index\":")?;
        let index = u64::try_from(self.usual_int()?).ok()?;
        self.skip_const(b",\"time\":")?;
        let time = self.usual_int()?;
        self.skip_const(b",\"type\":")?;
        let op_type = self.usual_type()?;
        self.skip_const(b",\"process\":")?;
        let process = match self.int_short() {
            Some(p) => p,
            None => self.usual_int()?,
        };
        let process = u64::try_from(process).ok()?;
        self.skip_const(b",\"f\":\"txn\",\"value\":[")?;
        self.pos -= 1;
        self.txn_into(mops, lists)?;
        self.skip_const(b"}")?;
        Some(UsualOp {
            index,
            time_ns: super::convert::time_from_int(time),
            op_type,
            process,
        })
    }

    /// Steps over `c` when the bytes at the position are `c` (compared as
    /// an array of known length: a few loads, no `memcmp` call).
    #[inline]
    fn skip_const<const N: usize>(&mut self, c: &[u8; N]) -> Option<()> {
        let at: &[u8; N] = self.b.get(self.pos..self.pos + N)?.try_into().ok()?;
        if at == c {
            self.pos += N;
            Some(())
        } else {
            None
        }
    }

    /// An integer where [`Json::op`] takes [`Json::int_fast`]'s (a sign or
    /// a digit first), else `None`.
    #[inline]
    fn usual_int(&mut self) -> Option<i64> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.int_fast(),
            _ => None,
        }
    }

    /// The usual transaction shape, parsed without building `Data`; `None`
    /// when the value is anything else (the caller re-parses it as data).
    /// The micro-ops are collected in a per-thread scratch vector and moved
    /// into one allocation of exactly their number (pushing into a fresh
    /// vector and shrinking it left most ops a 4-slot block).
    fn try_txn(&mut self, lists: Option<&mut ListSharer>) -> Option<Vec<MicroOp>> {
        thread_local! {
            static SCRATCH: std::cell::Cell<Vec<MicroOp>> = const { std::cell::Cell::new(Vec::new()) };
        }
        let mut mops = SCRATCH.take();
        mops.clear();
        let ok = self.txn_into(&mut mops, lists).is_some();
        let out = ok.then(|| {
            let mut exact = Vec::with_capacity(mops.len());
            exact.append(&mut mops);
            exact
        });
        mops.clear();
        SCRATCH.set(mops);
        out
    }

    /// [`Json::try_txn`]'s parse, into `mops`.
    fn txn_into(
        &mut self,
        mops: &mut Vec<MicroOp>,
        mut lists: Option<&mut ListSharer>,
    ) -> Option<()> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Some(());
        }
        loop {
            let (kind, key) = match self.mop_head_compact() {
                Some(head) => head,
                None => self.mop_head()?,
            };
            let mop = match kind {
                0 => MicroOp::Append(key, Val(self.atom()?)),
                1 => MicroOp::Write(key, Val(self.atom()?)),
                _ => match self.peek()? {
                    b'n' => {
                        self.literal(b"null").ok()?;
                        MicroOp::Read(key, ReadValue::Nil)
                    }
                    b'[' => {
                        let l = match lists.as_deref_mut() {
                            Some(s) => self.list_shared(&key, s)?,
                            None => {
                                let mut buf = Vec::new();
                                self.list_into(&mut buf)?;
                                buf.into()
                            }
                        };
                        MicroOp::Read(key, ReadValue::List(l))
                    }
                    _ => MicroOp::Read(key, ReadValue::Scalar(Val(self.atom()?))),
                },
            };
            self.ws();
            self.eat(b']')?;
            mops.push(mop);
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The start of a micro-op as harness writes it, up to its value:
    /// `["append",K,`, `["w",K,` or `["r",K,` without blanks, `K` a
    /// short integer ([`Json::int_short`]) — each name and separator
    /// compared as one constant. `None`, position unchanged, for anything
    /// else, which [`Json::mop_head`] reads.
    #[inline]
    fn mop_head_compact(&mut self) -> Option<(u8, Key)> {
        let start = self.pos;
        let rest = self.b.get(start..)?;
        let (kind, n) = if rest.starts_with(b"[\"append\",") {
            (0, 10)
        } else if rest.starts_with(b"[\"r\",") {
            (2, 5)
        } else if rest.starts_with(b"[\"w\",") {
            (1, 5)
        } else {
            return None;
        };
        self.pos += n;
        let head = self.int_short().and_then(|k| {
            self.skip_const(b",")?;
            Some((kind, Key(Atom::Int(k))))
        });
        if head.is_none() {
            self.pos = start;
        }
        head
    }

    /// The start of a micro-op up to its value, in any spelling JSON
    /// allows: blanks anywhere, any key (the kind: 0 append, 1 w, 2 r).
    fn mop_head(&mut self) -> Option<(u8, Key)> {
        self.ws();
        if self.peek() != Some(b'[') {
            return None;
        }
        self.pos += 1;
        self.ws();
        if self.peek() != Some(b'"') {
            return None;
        }
        let kind = match self.usual(&MOP_NAMES).ok()?? {
            b"append" => 0,
            b"w" => 1,
            b"r" => 2,
            _ => return None,
        };
        self.ws();
        self.eat(b',')?;
        self.ws();
        let key = Key(self.atom()?);
        self.ws();
        self.eat(b',')?;
        self.ws();
        Some((kind, key))
    }

    /// A list read of `key`, at its `[`, its buffer shared with the key's
    /// other reads: the elements whose bytes are those the key's longest
    /// read began with are taken from it unparsed
    /// ([`ListSharer::known_prefix`]; a read usually repeats the previous
    /// one and adds a few), only the rest is parsed. `None` as
    /// [`Json::list_into`] gives it, for the same bytes.
    fn list_shared(&mut self, key: &Key, s: &mut ListSharer) -> Option<crate::list::ValList> {
        let body_at = self.pos + 1;
        let body = self.b.get(body_at..)?;
        let (known, off) = s.known_prefix(key, body);
        let mut more = s.take_scratch();
        let text_end = if known == 0 {
            self.list_ends(&mut more, body_at)
        } else {
            self.pos = body_at + off;
            self.list_tail(&mut more, body_at, off)
        };
        let l = text_end.map(|end| s.share_text(key, known, &more, &body[..end]));
        s.put_scratch(more);
        l
    }

    /// [`Json::list_into`], also noting where the last element ends (as an
    /// offset from `base`, the byte after the `[`; 0 for `[]`).
    fn list_ends(&mut self, out: &mut Vec<Val>, base: usize) -> Option<usize> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Some(0);
        }
        self.ws();
        out.push(Val(self.atom()?));
        let end = self.pos - base;
        self.list_tail(out, base, end)
    }

    /// The rest of a list after an element that ends at `end` (an offset
    /// from `base`), as [`Json::list_ends`] reads it.
    fn list_tail(&mut self, out: &mut Vec<Val>, base: usize, mut end: usize) -> Option<usize> {
        loop {
            // `,N` without blanks, `N` a short integer: the usual element.
            if self.b.get(self.pos) == Some(&b',') {
                self.pos += 1;
                if let Some(v) = self.int_short() {
                    out.push(Val(Atom::Int(v)));
                } else {
                    self.ws();
                    out.push(Val(self.atom()?));
                }
                end = self.pos - base;
                continue;
            }
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(end);
                }
                _ => return None,
            }
            self.ws();
            out.push(Val(self.atom()?));
            end = self.pos - base;
        }
    }

    /// A list of atoms, at its `[`, into `out`.
    fn list_into(&mut self, out: &mut Vec<Val>) -> Option<()> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.ws();
            out.push(Val(self.atom()?));
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn atom(&mut self) -> Option<Atom> {
        if let Some(v) = self.int_short() {
            return Some(Atom::Int(v));
        }
        match self.peek()? {
            b'"' => match decode_str(self.string().ok()?) {
                Data::Str(s) => Some(Atom::Str(s.into())),
                Data::Keyword(s) => Some(Atom::Keyword(s.into())),
                _ => None,
            },
            b'-' | b'0'..=b'9' => self.int_fast().map(Atom::Int),
            _ => None,
        }
    }

    /// The usual key, value or list element: one to five digits, the
    /// first not `0`, followed (within the next six bytes) by a byte that
    /// is no digit and does not go on as a float. `None`, position
    /// unchanged, for anything else, which [`Json::int_fast`] reads. A
    /// digit at a time, where `int_fast` sums eight bytes at once and
    /// checks for a sign and more digits (worth it on an op's index and
    /// time): loading a 100k-transaction list-append history took 538.5 M
    /// instructions with `int_fast` alone, 456.3 M with this (and the
    /// prefixes of [`Json::mop_head_compact`]); a window of five bytes
    /// cost a 1M history's five-digit keys 13 % more, one of eight 0.5 %
    /// more at both sizes (BENCHMARKS.md, "h23").
    #[inline(always)]
    fn int_short(&mut self) -> Option<i64> {
        let p = self.pos;
        let w: &[u8; 6] = self.b.get(p..p + 6)?.try_into().ok()?;
        let d0 = w[0].wrapping_sub(b'1');
        if d0 > 8 {
            return None;
        }
        let mut v = i64::from(d0) + 1;
        // By index, not `enumerate().skip(1)`: the test profile (which the
        // performance guard counts) calls the iterator's `nth` there.
        let mut i = 1;
        while i < w.len() {
            let d = w[i].wrapping_sub(b'0');
            if d > 9 {
                if matches!(w[i], b'.' | b'e' | b'E') {
                    return None;
                }
                self.pos = p + i;
                return Some(v);
            }
            v = v * 10 + i64::from(d);
            i += 1;
        }
        None
    }
}

/// The value and number of the decimal digits `eight` starts with, when a
/// byte that is no digit follows them within the eight (fewer than eight
/// digits); `None` otherwise. All eight bytes at once: a digit is a byte
/// whose value minus `'0'` is below 10; borrows and carries between bytes
/// only start at the first byte that is no digit, so the bytes before it
/// are judged and summed right.
#[inline]
fn short_digits(eight: &[u8]) -> Option<(u64, usize)> {
    let x = u64::from_le_bytes(eight.try_into().ok()?);
    let d = x.wrapping_sub(0x3030_3030_3030_3030);
    // High bit set in each byte below '0' (d borrows) or above '9' (+0x46
    // reaches 0x80).
    let not_digit = (d | x.wrapping_add(0x4646_4646_4646_4646)) & 0x8080_8080_8080_8080;
    if not_digit == 0 {
        return None;
    }
    let n = (not_digit.trailing_zeros() / 8) as usize;
    if n == 0 {
        return Some((0, 0));
    }
    // The digits to the high bytes (leading zeros below), then summed in
    // pairs, fours and eights.
    let v = d << (8 * (8 - n));
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    let v = (v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff;
    Some((v, n))
}

/// 10^k for the digits [`short_digits`] counts (k < 8).
const TENS: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The value of `eight` bytes that are all decimal digits (as
/// [`short_digits`] found them: it returned `None`).
#[inline]
fn eight_digits(eight: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(eight);
    let v = u64::from_le_bytes(x).wrapping_sub(0x3030_3030_3030_3030);
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    (v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff
}

/// A name field (`type`, `f`): accepts `"ok"` and the keyword form `":ok"`.
fn codec_name(s: &str) -> &str {
    match s.strip_prefix(':') {
        Some(rest) if is_keyword_name(rest) => rest,
        _ => s.strip_prefix('\\').unwrap_or(s),
    }
}

/// A JSON string in a data position: `":x"` is a keyword, `"\…"` an escaped string.
fn decode_str(s: Cow<'_, str>) -> Data {
    if let Some(rest) = s.strip_prefix(':')
        && is_keyword_name(rest)
    {
        return Data::Keyword(rest.to_string());
    }
    if let Some(rest) = s.strip_prefix('\\') {
        return Data::Str(rest.to_string());
    }
    Data::Str(s.into_owned())
}

/// `{"#set": …}` and friends; gives the value back when `k`/`v` is no escape.
fn decode_escape(k: &str, v: Data) -> Result<Data, Data> {
    match (k, v) {
        ("#set", Data::Vec(items)) => Ok(Data::Set(items)),
        ("#map", Data::Vec(items))
            if items
                .iter()
                .all(|e| matches!(e, Data::Vec(p) if p.len() == 2)) =>
        {
            Ok(Data::Map(
                items
                    .into_iter()
                    .filter_map(|e| match e {
                        Data::Vec(mut p) => {
                            let v = p.pop()?;
                            let k = p.pop()?;
                            Some((k, v))
                        }
                        _ => None,
                    })
                    .collect(),
            ))
        }
        ("#sym", Data::Str(s)) => Ok(Data::Symbol(s)),
        ("#tag", Data::Vec(mut p)) if p.len() == 2 && matches!(p.first(), Some(Data::Str(_))) => {
            let v = p.pop().unwrap_or(Data::Nil);
            match p.pop() {
                Some(Data::Str(t)) => Ok(Data::Tagged(t, Box::new(v))),
                _ => Err(Data::Nil),
            }
        }
        ("#float", Data::Str(s)) => match s.as_str() {
            "NaN" => Ok(Data::Float(f64::NAN)),
            "Infinity" => Ok(Data::Float(f64::INFINITY)),
            "-Infinity" => Ok(Data::Float(f64::NEG_INFINITY)),
            _ => Err(Data::Str(s)),
        },
        (_, v) => Err(v),
    }
}

// ---------------------------------------------------------------- writing

fn write_raw_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut last = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let esc: Option<&str> = match c {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[last..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                out.push_str("\\u00");
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push(HEX[usize::from(c >> 4)] as char);
                out.push(HEX[usize::from(c & 15)] as char);
            }
        }
        last = i + 1;
    }
    out.push_str(&s[last..]);
    out.push('"');
}

/// A string in a data position (see the module docs).
fn write_str(out: &mut String, s: &str) {
    if s.starts_with([':', '#', '\\']) {
        let mut t = String::with_capacity(s.len() + 1);
        t.push('\\');
        t.push_str(s);
        write_raw_str(out, &t);
    } else {
        write_raw_str(out, s);
    }
}

fn write_keyword(out: &mut String, k: &str) {
    let mut t = String::with_capacity(k.len() + 1);
    t.push(':');
    t.push_str(k);
    write_raw_str(out, &t);
}

fn write_int(out: &mut String, i: i64) {
    out.push_str(itoa::Buffer::new().format(i));
}

fn write_atom(out: &mut String, a: &Atom) {
    match a {
        Atom::Int(i) => write_int(out, *i),
        Atom::Str(s) => write_str(out, s),
        Atom::Keyword(k) => write_keyword(out, k),
    }
}

/// Writes `d` as JSON with the data encoding of this module.
pub(crate) fn write_data(out: &mut String, d: &Data) {
    match d {
        Data::Nil => out.push_str("null"),
        Data::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Data::Int(i) => write_int(out, *i),
        Data::Float(f) => {
            if f.is_nan() {
                out.push_str(r##"{"#float":"NaN"}"##);
            } else if f.is_infinite() {
                out.push_str(if *f > 0.0 {
                    r##"{"#float":"Infinity"}"##
                } else {
                    r##"{"#float":"-Infinity"}"##
                });
            } else {
                out.push_str(&float_text(*f));
            }
        }
        Data::Str(s) => write_str(out, s),
        Data::Keyword(k) => write_keyword(out, k),
        Data::Symbol(s) => {
            out.push_str(r##"{"#sym":"##);
            write_raw_str(out, s);
            out.push('}');
        }
        Data::Vec(items) => write_seq(out, items),
        Data::Set(items) => {
            out.push_str(r##"{"#set":"##);
            write_seq(out, items);
            out.push('}');
        }
        Data::Map(entries) => {
            if entries
                .iter()
                .all(|(k, _)| matches!(k, Data::Str(_) | Data::Keyword(_)))
            {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_data(out, k);
                    out.push(':');
                    write_data(out, v);
                }
                out.push('}');
            } else {
                out.push_str(r##"{"#map":["##);
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('[');
                    write_data(out, k);
                    out.push(',');
                    write_data(out, v);
                    out.push(']');
                }
                out.push_str("]}");
            }
        }
        Data::Tagged(t, v) => {
            out.push_str(r##"{"#tag":["##);
            write_raw_str(out, t);
            out.push(',');
            write_data(out, v);
            out.push_str("]}");
        }
    }
}

fn write_seq(out: &mut String, items: &[Data]) {
    out.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_data(out, x);
    }
    out.push(']');
}

/// JSON's tokens for the shared op layout.
struct JsonSyntax;

impl Syntax for JsonSyntax {
    const SEP: &'static str = ",";
    const FIELD_SEP: &'static str = ",";
    const NIL: &'static str = "null";
    const KEY_SEP: &'static str = ":";
    fn name(out: &mut String, name: &str) {
        out.push('"');
        out.push_str(name);
        out.push('"');
    }
    fn extra_name(out: &mut String, name: &str) {
        write_raw_str(out, name);
    }
    fn f(out: &mut String, name: &str) {
        if name.starts_with([':', '\\']) {
            // Keep names that look like our encodings intact.
            write_str(out, name);
        } else {
            write_raw_str(out, name);
        }
    }
    fn atom(out: &mut String, a: &Atom) {
        write_atom(out, a);
    }
    fn data(out: &mut String, d: &Data) {
        write_data(out, d);
    }
}

/// Appends `op` as one JSON object (no newline).
pub(crate) fn write_op(out: &mut String, op: &Op) {
    op_writer::write_op::<JsonSyntax>(out, op);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Number spellings around the short-integer path's edges: widths 1–5
    /// and beyond, zero and leading zeros, signs, fractions and exponents,
    /// the limits of an i64.
    const NUMBERS: &[&str] = &[
        "0",
        "7",
        "42",
        "999",
        "1000",
        "9999",
        "12345",
        "123456",
        "2003921190",
        "-3",
        "-0",
        "-1234",
        "00",
        "007",
        "1.5",
        "10.0",
        "2e3",
        "1E2",
        "12e1",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
    ];

    /// An atom's text: a number of [`NUMBERS`] or a string.
    fn atom() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::sample::select(NUMBERS).prop_map(str::to_string),
            1 => proptest::sample::select(&["\"k\"", "\"x1\""][..]).prop_map(str::to_string),
        ]
    }

    /// Blanks, or none (most often).
    fn blank() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(&["", "", "", " ", "\n "][..])
    }

    /// A micro-op's text: append, w or r of an atom key, with blanks
    /// between any tokens.
    fn mop() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            atom(),
            Just("null".to_string()),
            proptest::collection::vec(atom(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec((atom(), blank()), 1..4).prop_map(|v| {
                let items: Vec<String> = v.into_iter().map(|(a, b)| format!("{b}{a}{b}")).collect();
                format!("[{}]", items.join(","))
            }),
        ];
        (
            proptest::sample::select(&["append", "r", "w"][..]),
            atom(),
            value,
            proptest::collection::vec(blank(), 6),
        )
            .prop_map(|(f, k, v, b)| {
                format!(
                    "{}[{}\"{f}\"{},{}{k}{},{}{v}]",
                    b[0], b[1], b[2], b[3], b[4], b[5]
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// What the transaction path reads (fast prefixes and short
        /// integers included) is what the generic data path reads of the
        /// same bytes, and it stops at the same byte; where it declines,
        /// the caller falls back to that path.
        #[test]
        fn the_transaction_path_reads_what_the_data_path_reads(
            mops in proptest::collection::vec(mop(), 0..4),
        ) {
            let text = format!("[{}]", mops.join(","));
            let mut sharer = ListSharer::new();
            let mut fast = Json::new(text.as_bytes());
            let got = fast.try_txn(Some(&mut sharer));
            let mut slow = Json::new(text.as_bytes());
            let want = slow
                .data(2)
                .ok()
                .and_then(|d| super::super::convert::txn_from_data(&d).ok());
            if let Some(got) = got {
                prop_assert_eq!(Some(&got), want.as_ref(), "{}", text);
                prop_assert_eq!(fast.pos, slow.pos, "{}", text);
            }
        }
    }
}
