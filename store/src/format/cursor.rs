//! The byte cursor the JSON and EDN parsers share: a buffer, a position in
//! it, and the few steps both grammars take the same way (peek, the
//! malformed-input error at the position, an integer's digits with
//! overflow checked in the sign's direction).
//!
//! Key decision: a trait over the parsers' own `b`/`pos` fields rather than a
//! struct they wrap, so each parser keeps addressing its bytes directly on
//! its hot path and only the shared steps live here.

use super::source::PErr;

/// A parser positioned in one buffer.
pub(crate) trait Cursor<'a> {
    /// The whole buffer.
    fn bytes(&self) -> &'a [u8];
    /// The current byte offset in [`Cursor::bytes`].
    fn pos(&self) -> usize;
    /// Moves to byte offset `pos`.
    fn set_pos(&mut self, pos: usize);

    /// The byte at the position, if any.
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos()).copied()
    }

    /// Whether the position is at (or past) the end of the buffer.
    #[inline]
    fn at_end(&self) -> bool {
        self.pos() >= self.bytes().len()
    }

    /// Malformed input at the current position.
    fn bad<T>(&self, reason: impl Into<String>) -> Result<T, PErr> {
        Err(PErr::Bad {
            pos: self.pos(),
            reason: reason.into(),
        })
    }

    /// Consumes the decimal digits at the position and returns their value
    /// with the sign `neg` and how many there were; `None` when the value
    /// does not fit in an `i64` (the position is then inside the digits).
    #[inline]
    fn int_digits(&mut self, neg: bool) -> Option<(i64, usize)> {
        let first = self.pos();
        let mut v: i64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            v = push_digit(v, c, neg)?;
            self.set_pos(self.pos() + 1);
        }
        Some((v, self.pos() - first))
    }
}

/// `new(bytes)` and the [`Cursor`] accessors for a parser struct with the
/// fields `b: &'a [u8]` and `pos: usize`.
macro_rules! cursor_over_fields {
    ($t:ident) => {
        impl<'a> $crate::format::cursor::Cursor<'a> for $t<'a> {
            #[inline]
            fn bytes(&self) -> &'a [u8] {
                self.b
            }
            #[inline]
            fn pos(&self) -> usize {
                self.pos
            }
            #[inline]
            fn set_pos(&mut self, pos: usize) {
                self.pos = pos;
            }
        }

        impl<'a> $t<'a> {
            /// A parser at the start of `b`.
            pub fn new(b: &'a [u8]) -> $t<'a> {
                $t { b, pos: 0 }
            }
        }
    };
}
pub(crate) use cursor_over_fields;

/// `v` with the ASCII digit `c` appended, growing away from zero in the
/// direction of the sign; `None` on overflow.
#[inline]
pub(crate) fn push_digit(v: i64, c: u8, neg: bool) -> Option<i64> {
    let d = i64::from(c - b'0');
    let x = v.checked_mul(10)?;
    if neg {
        x.checked_sub(d)
    } else {
        x.checked_add(d)
    }
}

/// A byte as an error message names it.
pub(crate) fn show(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("`{}`", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}
