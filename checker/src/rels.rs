//! Dependency relations between transactions as a bitset (`Rels`), after
//! Elle's `BitRels`: an edge of the dependency graph carries every relation
//! that was inferred between its two transactions.

use std::fmt;

/// One relation between two transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rel {
    /// Write-write: the target overwrote (or appended after) the source's write.
    Ww,
    /// Write-read: the target read the source's write.
    Wr,
    /// Read-write (anti-dependency): the target overwrote what the source read.
    Rw,
    /// Process (session) order.
    Process,
    /// Real-time order: the source completed before the target was invoked.
    Realtime,
}

impl Rel {
    /// All relations, in bit order.
    pub const ALL: [Rel; 5] = [Rel::Ww, Rel::Wr, Rel::Rw, Rel::Process, Rel::Realtime];

    /// Elle's spelling (`ww`, `wr`, `rw`, `process`, `realtime`).
    pub fn name(self) -> &'static str {
        match self {
            Rel::Ww => "ww",
            Rel::Wr => "wr",
            Rel::Rw => "rw",
            Rel::Process => "process",
            Rel::Realtime => "realtime",
        }
    }

    /// The short label used on plot edges (`ww`, `wr`, `rw`, `p`, `rt`).
    pub fn short(self) -> &'static str {
        match self {
            Rel::Process => "p",
            Rel::Realtime => "rt",
            r => r.name(),
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Rel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Rel`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Rels(u8);

impl Rels {
    /// No relation.
    pub const NONE: Rels = Rels(0);
    /// `{ww}`.
    pub const WW: Rels = Rels(1);
    /// `{wr}`.
    pub const WR: Rels = Rels(2);
    /// `{rw}`.
    pub const RW: Rels = Rels(4);
    /// `{process}`.
    pub const PROCESS: Rels = Rels(8);
    /// `{realtime}`.
    pub const REALTIME: Rels = Rels(16);
    /// The data relations `{ww, wr, rw}`.
    pub const DATA: Rels = Rels(7);

    /// The set holding just `r`.
    pub fn of(r: Rel) -> Rels {
        Rels(r.bit())
    }

    /// Union.
    pub fn union(self, o: Rels) -> Rels {
        Rels(self.0 | o.0)
    }

    /// Intersection.
    pub fn intersect(self, o: Rels) -> Rels {
        Rels(self.0 & o.0)
    }

    /// The relations of `self` not in `o`.
    pub fn minus(self, o: Rels) -> Rels {
        Rels(self.0 & !o.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `r` is in the set.
    pub fn contains(self, r: Rel) -> bool {
        self.0 & r.bit() != 0
    }

    /// Whether the sets share a relation.
    pub fn intersects(self, o: Rels) -> bool {
        self.0 & o.0 != 0
    }

    /// The set as bits (one per [`Rel`], in bit order).
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// The set of [`Rels::bits`] `b`.
    pub(crate) fn from_bits(b: u8) -> Rels {
        Rels(b)
    }

    /// The relations in the set, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Rel> {
        Rel::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

impl std::ops::BitOr for Rels {
    type Output = Rels;
    fn bitor(self, o: Rels) -> Rels {
        self.union(o)
    }
}

impl std::ops::BitOrAssign for Rels {
    fn bitor_assign(&mut self, o: Rels) {
        self.0 |= o.0;
    }
}

impl fmt::Debug for Rels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(Rel::name)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let r = Rels::WW | Rels::of(Rel::Realtime);
        assert!(r.contains(Rel::Ww) && r.contains(Rel::Realtime) && !r.contains(Rel::Rw));
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![Rel::Ww, Rel::Realtime]);
        assert!(r.intersects(Rels::WW) && !r.intersects(Rels::RW));
        assert_eq!(Rels::DATA, Rels::WW | Rels::WR | Rels::RW);
        assert_eq!(format!("{r:?}"), "{\"ww\", \"realtime\"}");
    }
}
