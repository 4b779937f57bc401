//! A generic data tree that can hold anything JSON or EDN can say.
//!
//! Ops carry structured values the harness does not interpret (nemesis
//! grudges, errors, fields added by other tools). `Data` keeps them so that a
//! JSON ⇄ EDN round trip is lossless: keywords stay keywords, sets stay sets,
//! maps keep non-string keys.

/// A JSON/EDN value.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `null` / `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// An EDN keyword, without its leading colon (`:x` is `Keyword("x")`).
    Keyword(String),
    /// An EDN symbol.
    Symbol(String),
    /// A vector / JSON array (EDN lists are read as vectors too).
    Vec(Vec<Data>),
    /// An EDN set, in the order it was written.
    Set(Vec<Data>),
    /// A map, in the order it was written; keys may be any value.
    Map(Vec<(Data, Data)>),
    /// An EDN tagged element `#tag value`.
    Tagged(String, Box<Data>),
}

impl Data {
    /// The value of `key` in a map whose keys are keywords or strings named `key`.
    pub fn get(&self, key: &str) -> Option<&Data> {
        match self {
            Data::Map(entries) => entries.iter().find_map(|(k, v)| match k {
                Data::Keyword(s) | Data::Str(s) if s == key => Some(v),
                _ => None,
            }),
            Data::Tagged(_, inner) => inner.get(key),
            _ => None,
        }
    }

    /// The string of a `Str`, `Keyword` or `Symbol`.
    pub fn as_name(&self) -> Option<&str> {
        match self {
            Data::Str(s) | Data::Keyword(s) | Data::Symbol(s) => Some(s),
            _ => None,
        }
    }

    /// Elements of a vector or set.
    pub fn as_seq(&self) -> Option<&[Data]> {
        match self {
            Data::Vec(v) | Data::Set(v) => Some(v),
            _ => None,
        }
    }
}
