//! EDN (Jepsen's `history.edn`): a small reader into [`Data`] and the writer.
//!
//! Key decision: our own reader rather than a crate, so that it works on a
//! refillable buffer (streaming), reports `Incomplete` distinctly from
//! malformed input (a torn last op is a warning, not an error), bounds its
//! nesting depth, and never panics. Lists read as vectors; characters read as
//! one-character strings; `#_` discards; `#tag value` keeps the tag.

use super::cursor::{Cursor, show};
use super::op_writer::{self, Syntax, float_text};
use super::source::PErr;
use crate::data::Data;
use crate::history::{Atom, Op};

/// Deepest nesting of EDN collections accepted.
pub(crate) const MAX_DEPTH: u32 = 64;

/// An EDN parser over one buffer.
pub(crate) struct Edn<'a> {
    b: &'a [u8],
    /// Current byte offset in `b`.
    pub pos: usize,
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b',' | 0x0c)
}

fn is_delim(c: u8) -> bool {
    is_ws(c) || matches!(c, b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';')
}

fn is_sym_char(c: char) -> bool {
    c.is_alphanumeric() || ".*+!-_?$%&=<>/:#'".contains(c)
}

/// Whether `s` can be written as `:s` and read back as the keyword `s`
/// (by this reader: a keyword is `:` followed by a token).
pub(crate) fn is_keyword_name(s: &str) -> bool {
    !s.is_empty() && !s.bytes().any(is_delim)
}

super::cursor::cursor_over_fields!(Edn);

impl<'a> Edn<'a> {
    /// Skips whitespace, commas and `;` comments.
    pub fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if is_ws(c) {
                self.pos += 1;
            } else if c == b';' {
                match memchr::memchr(b'\n', &self.b[self.pos..]) {
                    Some(n) => self.pos += n + 1,
                    None => self.pos = self.b.len(),
                }
            } else {
                break;
            }
        }
    }

    /// Skips whitespace, comments and `#_` discarded forms.
    pub fn skip(&mut self, depth: u32) -> Result<(), PErr> {
        loop {
            self.ws();
            if self.b.get(self.pos) == Some(&b'#') && self.b.get(self.pos + 1) == Some(&b'_') {
                self.pos += 2;
                self.form(depth + 1)?;
            } else if self.b.get(self.pos) == Some(&b'#') && self.b.get(self.pos + 1).is_none() {
                return Err(PErr::Incomplete);
            } else {
                return Ok(());
            }
        }
    }

    fn token(&mut self) -> Result<&'a str, PErr> {
        let s = self.pos;
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            self.pos += 1;
        }
        if self.at_end() {
            // A token cut by the end of the buffer may continue after it.
            return Err(PErr::Incomplete);
        }
        std::str::from_utf8(&self.b[s..self.pos]).map_err(|e| PErr::Bad {
            pos: s + e.valid_up_to(),
            reason: "invalid UTF-8".into(),
        })
    }

    /// One form.
    pub fn form(&mut self, depth: u32) -> Result<Data, PErr> {
        if depth > MAX_DEPTH {
            return self.bad(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.skip(depth)?;
        let Some(c) = self.peek() else {
            return Err(PErr::Incomplete);
        };
        match c {
            b'{' => {
                let open = self.pos;
                self.pos += 1;
                let items = self.coll(depth, b'}')?;
                if items.len() % 2 != 0 {
                    return Err(PErr::Bad {
                        pos: open,
                        reason: "map literal with an odd number of forms".into(),
                    });
                }
                let mut entries = Vec::with_capacity(items.len() / 2);
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    entries.push((k, v));
                }
                Ok(Data::Map(entries))
            }
            b'[' => {
                self.pos += 1;
                self.coll(depth, b']').map(Data::Vec)
            }
            b'(' => {
                self.pos += 1;
                self.coll(depth, b')').map(Data::Vec)
            }
            b'"' => self.string().map(Data::Str),
            b':' => {
                self.pos += 1;
                let t = self.token()?;
                if t.is_empty() {
                    return match self.peek() {
                        None => Err(PErr::Incomplete),
                        Some(_) => self.bad("empty keyword"),
                    };
                }
                Ok(Data::Keyword(t.to_string()))
            }
            b'\\' => self.character(),
            b'#' => self.dispatch(depth),
            b')' | b']' | b'}' => self.bad(format!("unbalanced {}: no open collection", show(c))),
            b'0'..=b'9' => match self.int_fast() {
                Some(i) => Ok(Data::Int(i)),
                None => self.number(),
            },
            b'+' | b'-' if matches!(self.b.get(self.pos + 1), Some(b'0'..=b'9')) => {
                match self.int_fast() {
                    Some(i) => Ok(Data::Int(i)),
                    None => self.number(),
                }
            }
            _ => {
                let at = self.pos;
                let t = self.token()?;
                match t {
                    "" => self.bad(format!("unexpected {}", show(c))),
                    "nil" => Ok(Data::Nil),
                    "true" => Ok(Data::Bool(true)),
                    "false" => Ok(Data::Bool(false)),
                    s if s.chars().all(is_sym_char) => Ok(Data::Symbol(s.to_string())),
                    _ => Err(PErr::Bad {
                        pos: at,
                        reason: format!("invalid symbol {t:?}"),
                    }),
                }
            }
        }
    }

    fn coll(&mut self, depth: u32, close: u8) -> Result<Vec<Data>, PErr> {
        let mut items = Vec::new();
        loop {
            self.skip(depth + 1)?;
            match self.peek() {
                None => return Err(PErr::Incomplete),
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(items);
                }
                Some(c @ (b')' | b']' | b'}')) => {
                    return self.bad(format!(
                        "unbalanced: expected `{}`, found {}",
                        close as char,
                        show(c)
                    ));
                }
                Some(_) => items.push(self.form(depth + 1)?),
            }
        }
    }

    fn dispatch(&mut self, depth: u32) -> Result<Data, PErr> {
        let at = self.pos;
        match self.b.get(self.pos + 1) {
            None => Err(PErr::Incomplete),
            Some(b'{') => {
                self.pos += 2;
                self.coll(depth, b'}').map(Data::Set)
            }
            Some(b'#') => {
                self.pos += 2;
                match self.token()? {
                    "Inf" => Ok(Data::Float(f64::INFINITY)),
                    "-Inf" => Ok(Data::Float(f64::NEG_INFINITY)),
                    "NaN" => Ok(Data::Float(f64::NAN)),
                    "" if self.at_end() => Err(PErr::Incomplete),
                    t => Err(PErr::Bad {
                        pos: at,
                        reason: format!("unknown symbolic value ##{t}"),
                    }),
                }
            }
            Some(&c) if c.is_ascii_alphabetic() => {
                self.pos += 1;
                let tag = self.token()?.to_string();
                if !tag.chars().all(is_sym_char) {
                    return Err(PErr::Bad {
                        pos: at,
                        reason: format!("invalid tag #{tag}"),
                    });
                }
                let v = self.form(depth + 1)?;
                Ok(Data::Tagged(tag, Box::new(v)))
            }
            Some(&c) => {
                self.pos += 1;
                self.bad(format!("unsupported dispatch #{}", show(c)))
            }
        }
    }

    /// A plain integer followed by a delimiter, in one pass; `None`
    /// (position unchanged) for anything else, which `number` handles.
    fn int_fast(&mut self) -> Option<i64> {
        let save = self.pos;
        let neg = match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b'+') => {
                self.pos += 1;
                false
            }
            _ => false,
        };
        match (self.int_digits(neg), self.peek()) {
            (Some((v, n)), Some(c)) if n > 0 && is_delim(c) => Some(v),
            _ => {
                self.pos = save;
                None
            }
        }
    }

    fn number(&mut self) -> Result<Data, PErr> {
        let at = self.pos;
        let t = self.token()?;
        let bad = |reason: String| PErr::Bad { pos: at, reason };
        if let Some(int) = t.strip_suffix('N') {
            return int
                .parse::<i64>()
                .map(Data::Int)
                .map_err(|_| bad(format!("integer {t} does not fit in 64 bits")));
        }
        let is_float = t.contains(['.', 'e', 'E']) || t.ends_with('M');
        if !is_float {
            let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
            if !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad(format!("invalid number {t:?}")));
            }
            return t
                .strip_prefix('+')
                .unwrap_or(t)
                .parse::<i64>()
                .map(Data::Int)
                .map_err(|_| bad(format!("integer {t} does not fit in 64 bits")));
        }
        let f = t.strip_suffix('M').unwrap_or(t);
        let ok_chars = f
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
        match f.parse::<f64>() {
            Ok(v) if ok_chars => Ok(Data::Float(v)),
            _ => Err(bad(format!("invalid number {t:?}"))),
        }
    }

    fn character(&mut self) -> Result<Data, PErr> {
        let at = self.pos;
        self.pos += 1;
        let Some(&first) = self.b.get(self.pos) else {
            return Err(PErr::Incomplete);
        };
        let t = if is_delim(first) {
            self.pos += 1;
            return Ok(Data::Str((first as char).to_string()));
        } else {
            self.token()?
        };
        let mut chars = t.chars();
        let c = match (chars.next(), chars.next()) {
            (Some(c), None) => Some(c),
            _ => match t {
                "newline" => Some('\n'),
                "space" => Some(' '),
                "tab" => Some('\t'),
                "return" => Some('\r'),
                "formfeed" => Some('\u{c}'),
                "backspace" => Some('\u{8}'),
                _ => t
                    .strip_prefix('u')
                    .filter(|h| h.len() == 4)
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .and_then(char::from_u32),
            },
        };
        match c {
            Some(c) => Ok(Data::Str(c.to_string())),
            None => Err(PErr::Bad {
                pos: at,
                reason: format!("invalid character literal \\{t}"),
            }),
        }
    }

    fn string(&mut self) -> Result<String, PErr> {
        let start = self.pos + 1;
        let mut i = start;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.b.get(i) {
                None => return Err(PErr::Incomplete),
                Some(b'"') => {
                    self.pos = i + 1;
                    return String::from_utf8(out).map_err(|_| PErr::Bad {
                        pos: start,
                        reason: "invalid UTF-8 in string".into(),
                    });
                }
                Some(b'\\') => {
                    let Some(&e) = self.b.get(i + 1) else {
                        return Err(PErr::Incomplete);
                    };
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let Some(h) = self.b.get(i + 2..i + 6) else {
                                return Err(PErr::Incomplete);
                            };
                            let c = std::str::from_utf8(h)
                                .ok()
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .and_then(char::from_u32);
                            match c {
                                Some(c) => {
                                    i += 4;
                                    c
                                }
                                None => {
                                    self.pos = i;
                                    return self.bad("invalid \\u escape");
                                }
                            }
                        }
                        other => {
                            self.pos = i;
                            return self.bad(format!("invalid escape \\{}", other as char));
                        }
                    };
                    i += 2;
                    let mut tmp = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
                Some(&c) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
    }
}

// ---------------------------------------------------------------- writing

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A name as a keyword when it can be one, else as a string.
fn write_name(out: &mut String, s: &str) {
    if is_keyword_name(s) {
        out.push(':');
        out.push_str(s);
    } else {
        write_string(out, s);
    }
}

fn write_atom(out: &mut String, a: &Atom) {
    match a {
        Atom::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Atom::Str(s) => write_string(out, s),
        Atom::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
    }
}

/// Writes `d` as EDN.
pub(crate) fn write_data(out: &mut String, d: &Data) {
    match d {
        Data::Nil => out.push_str("nil"),
        Data::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Data::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Data::Float(f) => {
            if f.is_nan() {
                out.push_str("##NaN");
            } else if f.is_infinite() {
                out.push_str(if *f > 0.0 { "##Inf" } else { "##-Inf" });
            } else {
                out.push_str(&float_text(*f));
            }
        }
        Data::Str(s) => write_string(out, s),
        Data::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
        Data::Symbol(s) => out.push_str(s),
        Data::Vec(items) => write_seq(out, "[", items, "]"),
        Data::Set(items) => write_seq(out, "#{", items, "}"),
        Data::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_data(out, k);
                out.push(' ');
                write_data(out, v);
            }
            out.push('}');
        }
        Data::Tagged(t, v) => {
            out.push('#');
            out.push_str(t);
            out.push(' ');
            write_data(out, v);
        }
    }
}

fn write_seq(out: &mut String, open: &str, items: &[Data], close: &str) {
    out.push_str(open);
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_data(out, x);
    }
    out.push_str(close);
}

/// EDN's tokens for the shared op layout.
struct EdnSyntax;

impl Syntax for EdnSyntax {
    const SEP: &'static str = " ";
    const FIELD_SEP: &'static str = ", ";
    const NIL: &'static str = "nil";
    const KEY_SEP: &'static str = " ";
    fn name(out: &mut String, name: &str) {
        out.push(':');
        out.push_str(name);
    }
    fn extra_name(out: &mut String, name: &str) {
        write_name(out, name);
    }
    fn atom(out: &mut String, a: &Atom) {
        write_atom(out, a);
    }
    fn data(out: &mut String, d: &Data) {
        write_data(out, d);
    }
}

/// Appends `op` as one EDN map (no newline).
pub(crate) fn write_op(out: &mut String, op: &Op) {
    op_writer::write_op::<EdnSyntax>(out, op);
}
