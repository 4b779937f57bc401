//! Anomaly types: Elle's closed set of names and the implication graph
//! between them (Elle).
//!
//! Key decision: a closed enum whose only spelling is Elle's keyword (without
//! the colon), so a typo in `--anomalies` is an error and never a silent pass.
//! Besides Elle's names we add `garbage-read` (a read of a value nobody wrote,
//! which Elle's code does not report) and the weak-isolation patterns of
//! `weak` (Plume's transactional anomalous patterns, including TAP-d/e
//! `not-my-own-write` / `not-my-last-write`, the cases of `internal` that
//! Biswas & Enea's and Plume's read committed forbids).

use std::collections::BTreeSet;

/// The kind of name that failed to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// An anomaly type (`G1c`, `lost-update`, …).
    Anomaly,
    /// A consistency model (`serializable`, `PL-2`, …).
    Model,
}

/// An anomaly or model name that is not in the closed set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {} {name:?}; known {}s: {known}", kind_str(*.kind), kind_str(*.kind))]
pub struct UnknownName {
    /// What was being parsed.
    pub kind: NameKind,
    /// The name as given.
    pub name: String,
    /// Comma-separated list of the accepted names.
    pub known: String,
}

fn kind_str(k: NameKind) -> &'static str {
    match k {
        NameKind::Anomaly => "anomaly type",
        NameKind::Model => "consistency model",
    }
}

/// Edge kinds a cycle may be qualified with (`G0-process`, `G0-realtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// Uses data edges only.
    Plain,
    /// Uses at least one process (session order) edge, no realtime edge.
    Process,
    /// Uses at least one realtime edge.
    Realtime,
}

macro_rules! anomalies {
    ($( $(#[$doc:meta])* $var:ident => $name:literal ),* $(,)?) => {
        /// Every anomaly type Elle names, plus `garbage-read`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum AnomalyType {
            $( $(#[$doc])* $var, )*
        }

        impl AnomalyType {
            /// All anomaly types, in declaration order.
            pub const ALL: &'static [AnomalyType] = &[ $( AnomalyType::$var, )* ];

            /// Elle's spelling, without the leading colon (`G-single-item-realtime`).
            pub fn name(self) -> &'static str {
                match self {
                    $( AnomalyType::$var => $name, )*
                }
            }
        }
    };
}

anomalies! {
    /// Write cycle: ww edges only.
    G0 => "G0",
    /// G0 with at least one process edge.
    G0Process => "G0-process",
    /// G0 with at least one realtime edge.
    G0Realtime => "G0-realtime",
    /// G1a ∪ G1b ∪ G1c (used for requesting and in model definitions).
    G1 => "G1",
    /// G1 with process edges.
    G1Process => "G1-process",
    /// G1 with realtime edges.
    G1Realtime => "G1-realtime",
    /// Aborted read.
    G1a => "G1a",
    /// Intermediate read.
    G1b => "G1b",
    /// Cyclic information flow: ww/wr cycle with at least one wr.
    G1c => "G1c",
    /// G1c with process edges.
    G1cProcess => "G1c-process",
    /// G1c with realtime edges.
    G1cRealtime => "G1c-realtime",
    /// Exactly one anti-dependency, predicate edges involved.
    GSingle => "G-single",
    /// G-single with process edges.
    GSingleProcess => "G-single-process",
    /// G-single with realtime edges.
    GSingleRealtime => "G-single-realtime",
    /// Exactly one item anti-dependency ("read skew").
    GSingleItem => "G-single-item",
    /// G-single-item with process edges.
    GSingleItemProcess => "G-single-item-process",
    /// G-single-item with realtime edges.
    GSingleItemRealtime => "G-single-item-realtime",
    /// Two or more non-adjacent anti-dependencies, predicate edges involved.
    GNonadjacent => "G-nonadjacent",
    /// G-nonadjacent with process edges.
    GNonadjacentProcess => "G-nonadjacent-process",
    /// G-nonadjacent with realtime edges.
    GNonadjacentRealtime => "G-nonadjacent-realtime",
    /// Two or more non-adjacent item anti-dependencies.
    GNonadjacentItem => "G-nonadjacent-item",
    /// G-nonadjacent-item with process edges.
    GNonadjacentItemProcess => "G-nonadjacent-item-process",
    /// G-nonadjacent-item with realtime edges.
    GNonadjacentItemRealtime => "G-nonadjacent-item-realtime",
    /// Anti-dependency cycle with predicate edges.
    G2 => "G2",
    /// G2 with process edges.
    G2Process => "G2-process",
    /// G2 with realtime edges.
    G2Realtime => "G2-realtime",
    /// Item anti-dependency cycle with two adjacent rw edges.
    G2Item => "G2-item",
    /// G2-item with process edges.
    G2ItemProcess => "G2-item-process",
    /// G2-item with realtime edges.
    G2ItemRealtime => "G2-item-realtime",
    /// Adya's SI anomaly (never emitted by list-append/rw-register).
    GSI => "GSI",
    /// GSIa (never emitted here).
    GSIa => "GSIa",
    /// GSIb (never emitted here).
    GSIb => "GSIb",
    /// G-SI (never emitted here).
    GSi => "G-SI",
    /// G-SIb (never emitted here).
    GSib => "G-SIb",
    /// G-cursor (never emitted here).
    GCursor => "G-cursor",
    /// G-monotonic (never emitted here).
    GMonotonic => "G-monotonic",
    /// G-MSR (never emitted here).
    GMsr => "G-MSR",
    /// G-update (never emitted here).
    GUpdate => "G-update",
    /// Write skew (implied by lost update).
    WriteSkew => "write-skew",
    /// Predicate read miss (closed-predicate checker only).
    PredicateReadMiss => "predicate-read-miss",
    /// A read that disagrees with the state the database's own expected
    /// serialization order (ascending commit timestamps, white-box) gives
    /// it: Enne's replay check (`analysis::expected_order`).
    ExpectedOrderViolation => "expected-order-violation",
    /// A transaction fails to observe its own prior reads/writes.
    Internal => "internal",
    /// A transaction reads an element it appends later.
    FutureRead => "future-read",
    /// After writing a key, a transaction read another transaction's value
    /// of it (Plume's TAP-d NotMyOwnWrite; a case of `internal`, reported
    /// by that name only when a weak level is asked for).
    NotMyOwnWrite => "not-my-own-write",
    /// After writing a key twice, a transaction read its own earlier write
    /// (Plume's TAP-e NotMyLastWrite; a case of `internal`, as above).
    NotMyLastWrite => "not-my-last-write",
    /// A committed write built on an aborted write.
    DirtyUpdate => "dirty-update",
    /// A read list contains an element twice.
    DuplicateElements => "duplicate-elements",
    /// Two reads of a key that are not prefixes of one another.
    IncompatibleOrder => "incompatible-order",
    /// Two committed transactions read the same version and both wrote it.
    LostUpdate => "lost-update",
    /// A register's inferred version order is cyclic.
    CyclicVersions => "cyclic-versions",
    /// A read observed a value no transaction wrote (ours; Elle ignores these).
    GarbageRead => "garbage-read",
    /// A cycle of session order and write-read (Plume's TAP-g CyclicCO;
    /// without session order it is also a G1c).
    CyclicCausalOrder => "cyclic-causal-order",
    /// A transaction read a key from t1 after reading from t2, which also
    /// wrote the key and must commit before t1 (Plume's TAP-h/i); the cycle
    /// uses no session order.
    NonMonotonicRead => "non-monotonic-read",
    /// A non-monotonic read whose cycle uses session order.
    NonMonotonicReadProcess => "non-monotonic-read-process",
    /// A transaction read one key from two different writers (Plume's TAP-j).
    NonRepeatableRead => "non-repeatable-read",
    /// A transaction saw t2 (read from it) yet read a key t2 wrote from a
    /// writer that must commit before t2 (Plume's TAP-k/l); no session order.
    FracturedRead => "fractured-read",
    /// A fractured read whose cycle uses session order (e.g. a transaction
    /// not seeing its own session's earlier write).
    FracturedReadProcess => "fractured-read-process",
    /// A transaction read a key from t1 though t2, which wrote the key and
    /// happens before the reader, must commit after t1 (Plume's TAP-m/n).
    CausalityViolation => "causality-violation",
    /// The dependency graph has no vertices (verdict: unknown).
    EmptyTransactionGraph => "empty-transaction-graph",
    /// The cycle search ran out of budget (verdict: unknown).
    CycleSearchTimeout => "cycle-search-timeout",
    /// A PL-1 (ww) cycle exists in some SCC.
    Pl1CycleExists => "PL-1-cycle-exists",
    /// A PL-2 (ww/wr) cycle exists.
    Pl2CycleExists => "PL-2-cycle-exists",
    /// A PL-SI cycle (ww/wr with non-adjacent rw) exists.
    PlSiCycleExists => "PL-SI-cycle-exists",
    /// A PL-2.99 (ww/wr/item rw) cycle exists.
    Pl299CycleExists => "PL-2.99-cycle-exists",
    /// A PL-3 cycle exists.
    Pl3CycleExists => "PL-3-cycle-exists",
    /// A PL-SS cycle (PL-3 + realtime) exists.
    PlSsCycleExists => "PL-SS-cycle-exists",
    /// A strong-session-PL-1 cycle (ww + process) exists.
    StrongSessionPl1CycleExists => "strong-session-PL-1-cycle-exists",
    /// A strong-session-PL-2 cycle (ww/wr + process) exists.
    StrongSessionPl2CycleExists => "strong-session-PL-2-cycle-exists",
    /// A strong-session-snapshot-isolation cycle exists.
    StrongSessionSnapshotIsolationCycleExists => "strong-session-snapshot-isolation-cycle-exists",
    /// A strong-session-serializable cycle exists.
    StrongSessionSerializableCycleExists => "strong-session-serializable-cycle-exists",
    /// A strong-PL-1 cycle (ww + realtime) exists.
    StrongPl1CycleExists => "strong-PL-1-cycle-exists",
    /// A strong-PL-2 cycle (ww/wr + realtime) exists.
    StrongPl2CycleExists => "strong-PL-2-cycle-exists",
    /// A strong-snapshot-isolation cycle exists.
    StrongSnapshotIsolationCycleExists => "strong-snapshot-isolation-cycle-exists",
}

use AnomalyType as A;

/// The base cycle types (no process/realtime qualification), in Elle's
/// search (severity) order.
pub const BASE_CYCLE_TYPES: &[AnomalyType] = &[
    A::G0,
    A::G1c,
    A::GSingleItem,
    A::GSingle,
    A::GNonadjacentItem,
    A::GNonadjacent,
    A::G2Item,
    A::G2,
];

/// The `<model>-cycle-exists` pseudo-anomalies, in Elle's pre-pass order.
pub const CYCLE_EXISTS_TYPES: &[AnomalyType] = &[
    A::Pl1CycleExists,
    A::Pl2CycleExists,
    A::PlSiCycleExists,
    A::Pl299CycleExists,
    A::Pl3CycleExists,
    A::StrongSessionPl1CycleExists,
    A::StrongSessionPl2CycleExists,
    A::StrongSessionSnapshotIsolationCycleExists,
    A::StrongSessionSerializableCycleExists,
    A::StrongPl1CycleExists,
    A::StrongPl2CycleExists,
    A::StrongSnapshotIsolationCycleExists,
    A::PlSsCycleExists,
];

impl AnomalyType {
    /// Parses Elle's spelling, with or without a leading `:`.
    ///
    /// # Errors
    /// [`UnknownName`] for anything not in [`AnomalyType::ALL`] (exact,
    /// case-sensitive match: `g1c` is not `G1c`).
    pub fn parse(s: &str) -> Result<AnomalyType, UnknownName> {
        let bare = s.trim();
        let bare = bare.strip_prefix(':').unwrap_or(bare);
        AnomalyType::ALL
            .iter()
            .copied()
            .find(|a| a.name() == bare)
            .ok_or_else(|| UnknownName {
                kind: NameKind::Anomaly,
                name: s.to_string(),
                known: AnomalyType::ALL
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Direct implications (Elle): seeing `self` means each of these
    /// is present too.
    pub fn implies(self) -> &'static [AnomalyType] {
        match self {
            A::G0 => &[A::G1c, A::G0Process],
            A::G0Process => &[A::G1cProcess, A::G0Realtime],
            A::G0Realtime => &[A::G1cRealtime],
            A::G1a | A::G1b => &[A::G1],
            A::G1c => &[A::G1, A::G1cProcess],
            A::G1cProcess => &[A::G1cRealtime, A::G1Process],
            A::G1cRealtime => &[A::G1Realtime],
            A::G1 => &[A::G1Process],
            A::G1Process => &[A::G1Realtime],
            A::GSingleItem => &[A::GSingle, A::GSingleItemProcess, A::GNonadjacentItem],
            A::GSingleItemProcess => &[
                A::GSingleProcess,
                A::GSingleItemRealtime,
                A::GNonadjacentItemProcess,
            ],
            A::GSingleItemRealtime => &[A::GSingleRealtime, A::GNonadjacentItemRealtime],
            A::GSingle => &[A::GNonadjacent, A::GSIb, A::GSingleProcess],
            A::GSingleProcess => &[A::GNonadjacentProcess, A::GSingleRealtime],
            A::GSingleRealtime => &[A::GNonadjacentRealtime],
            A::GNonadjacentItem => &[A::GNonadjacent, A::G2Item, A::GNonadjacentItemProcess],
            A::GNonadjacentItemProcess => &[
                A::GNonadjacentProcess,
                A::G2ItemProcess,
                A::GNonadjacentItemRealtime,
            ],
            A::GNonadjacentItemRealtime => &[A::G2ItemRealtime, A::GNonadjacentRealtime],
            A::GNonadjacent => &[A::G2, A::GNonadjacentProcess],
            A::GNonadjacentProcess => &[A::G2Process, A::GNonadjacentRealtime],
            A::GNonadjacentRealtime => &[A::G2Realtime],
            A::G2 => &[A::G2Process],
            A::G2Process => &[A::G2Realtime],
            A::G2Item => &[A::G2, A::G2ItemProcess],
            A::G2ItemProcess => &[A::G2Process, A::G2ItemRealtime],
            A::G2ItemRealtime => &[A::G2Realtime],
            A::GSIa | A::GSIb => &[A::GSI],
            A::IncompatibleOrder => &[A::G1a],
            A::FutureRead => &[A::G1c],
            A::NotMyOwnWrite | A::NotMyLastWrite => &[A::Internal],
            A::DirtyUpdate => &[A::G1a],
            A::LostUpdate => &[A::WriteSkew, A::G2Item],
            A::WriteSkew => &[A::G2],
            A::CyclicCausalOrder => &[A::G1cProcess],
            A::NonMonotonicRead => &[A::NonMonotonicReadProcess],
            A::FracturedRead => &[A::FracturedReadProcess],
            A::NonRepeatableRead => &[A::GSingleItem],
            _ => &[],
        }
    }

    /// Whether this is a cycle anomaly (one of the base cycle types or its
    /// `-process`/`-realtime` variant).
    pub fn is_cycle(self) -> bool {
        self.cycle_parts().is_some()
    }

    /// For a cycle type: its base type and its variant.
    pub fn cycle_parts(self) -> Option<(AnomalyType, Variant)> {
        BASE_CYCLE_TYPES.iter().find_map(|&base| {
            [Variant::Plain, Variant::Process, Variant::Realtime]
                .into_iter()
                .find(|&v| base.with_variant(v) == Some(self))
                .map(|v| (base, v))
        })
    }

    /// For a base cycle type, its `-process`/`-realtime` variant (or itself
    /// for [`Variant::Plain`]); `None` for anything else.
    pub fn with_variant(self, v: Variant) -> Option<AnomalyType> {
        let triple = match self {
            A::G0 => [A::G0, A::G0Process, A::G0Realtime],
            A::G1c => [A::G1c, A::G1cProcess, A::G1cRealtime],
            A::GSingle => [A::GSingle, A::GSingleProcess, A::GSingleRealtime],
            A::GSingleItem => [
                A::GSingleItem,
                A::GSingleItemProcess,
                A::GSingleItemRealtime,
            ],
            A::GNonadjacent => [
                A::GNonadjacent,
                A::GNonadjacentProcess,
                A::GNonadjacentRealtime,
            ],
            A::GNonadjacentItem => [
                A::GNonadjacentItem,
                A::GNonadjacentItemProcess,
                A::GNonadjacentItemRealtime,
            ],
            A::G2 => [A::G2, A::G2Process, A::G2Realtime],
            A::G2Item => [A::G2Item, A::G2ItemProcess, A::G2ItemRealtime],
            _ => return None,
        };
        Some(match v {
            Variant::Plain => triple[0],
            Variant::Process => triple[1],
            Variant::Realtime => triple[2],
        })
    }

    /// Whether this is a `<model>-cycle-exists` pseudo-anomaly.
    pub fn is_cycle_exists(self) -> bool {
        CYCLE_EXISTS_TYPES.contains(&self)
    }

    /// Whether finding (only) this makes the verdict `unknown` rather than
    /// `false`: `empty-transaction-graph` and `cycle-search-timeout`.
    pub fn is_unknown(self) -> bool {
        matches!(self, A::EmptyTransactionGraph | A::CycleSearchTimeout)
    }
}

/// `Display`, `FromStr` and serde for a closed set of names, all through
/// the type's `name()` and `parse()` (anomaly types and models are
/// written and read as their names everywhere).
macro_rules! name_impls {
    ($t:ident) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $t {
            type Err = $crate::anomaly::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $t::parse(s)
            }
        }

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $t::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use name_impls;

name_impls!(AnomalyType);

/// Every anomaly implied by any of `anomalies`, including themselves
/// (Elle's `all-implied-anomalies`: forward closure of §3.3).
pub fn all_implied(anomalies: impl IntoIterator<Item = AnomalyType>) -> BTreeSet<AnomalyType> {
    let mut seen: BTreeSet<AnomalyType> = BTreeSet::new();
    let mut stack: Vec<AnomalyType> = anomalies.into_iter().collect();
    while let Some(a) = stack.pop() {
        if seen.insert(a) {
            stack.extend(a.implies().iter().copied());
        }
    }
    seen
}

/// Every anomaly that implies any of `anomalies`, including themselves
/// (Elle's `all-anomalies-implying`: backward closure of §3.3).
///
/// Marked by passes over every type until none is added (as many passes as
/// the longest chain of implications, each a few hundred look-ups in a
/// table on the stack): searching every type's `implies` for each anomaly
/// reached was a third of a 200-transaction read-atomic check (BENCHMARKS.md,
/// "Start-up and small files").
pub fn all_implying(anomalies: impl IntoIterator<Item = AnomalyType>) -> BTreeSet<AnomalyType> {
    const N: usize = AnomalyType::ALL.len();
    // `ALL` lists the variants in declaration order, so `a as usize` is
    // `a`'s index in it (`all_is_in_declaration_order` below).
    let mut seen = [false; N];
    for a in anomalies {
        seen[a as usize] = true;
    }
    loop {
        let mut added = false;
        for &b in AnomalyType::ALL {
            if !seen[b as usize] && b.implies().iter().any(|&a| seen[a as usize]) {
                seen[b as usize] = true;
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    AnomalyType::ALL
        .iter()
        .copied()
        .filter(|&a| seen[a as usize])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut names = BTreeSet::new();
        for &a in AnomalyType::ALL {
            assert!(names.insert(a.name()), "duplicate name {}", a.name());
            assert_eq!(AnomalyType::parse(a.name()), Ok(a));
            assert_eq!(AnomalyType::parse(&format!(":{}", a.name())), Ok(a));
        }
    }

    #[test]
    fn all_is_in_declaration_order() {
        for (i, &a) in AnomalyType::ALL.iter().enumerate() {
            assert_eq!(a as usize, i, "{}", a.name());
        }
    }

    /// The backward closure, for each anomaly alone and for a set, is the
    /// one found by searching every type's `implies` (its definition).
    #[test]
    fn all_implying_is_the_backward_closure() {
        let by_search = |start: &[AnomalyType]| {
            let mut seen = BTreeSet::new();
            let mut stack = start.to_vec();
            while let Some(a) = stack.pop() {
                if seen.insert(a) {
                    stack.extend(AnomalyType::ALL.iter().filter(|b| b.implies().contains(&a)));
                }
            }
            seen
        };
        for &a in AnomalyType::ALL {
            assert_eq!(all_implying([a]), by_search(&[a]), "{}", a.name());
        }
        let some = [A::G0, A::G1c, A::FracturedRead];
        assert_eq!(all_implying(some), by_search(&some));
        assert!(all_implying([A::G1c]).contains(&A::G0));
    }

    #[test]
    fn unknown_and_miscased_names_are_rejected() {
        for bad in ["g1c", "G1C", "G-single-items", "", ":", "serializable"] {
            let e = AnomalyType::parse(bad).err();
            assert!(e.is_some(), "{bad:?} parsed");
        }
        let msg = AnomalyType::parse("G3").err().map(|e| e.to_string());
        assert!(msg.is_some_and(|m| m.contains("\"G3\"") && m.contains("G-single-item")));
    }

    #[test]
    fn variants() {
        assert_eq!(
            A::G2ItemRealtime.cycle_parts(),
            Some((A::G2Item, Variant::Realtime))
        );
        assert_eq!(A::G0.cycle_parts(), Some((A::G0, Variant::Plain)));
        assert_eq!(A::G1a.cycle_parts(), None);
        assert_eq!(AnomalyType::ALL.iter().filter(|a| a.is_cycle()).count(), 24);
        assert_eq!(CYCLE_EXISTS_TYPES.len(), 13);
        assert!(A::PlSsCycleExists.is_cycle_exists());
        assert!(!A::G0.is_cycle_exists());
    }

    #[test]
    fn implication_examples() {
        let g0 = all_implied([A::G0]);
        for a in [A::G1c, A::G1, A::G0Realtime, A::G1Realtime, A::G1cProcess] {
            assert!(g0.contains(&a), "{a}");
        }
        assert!(!g0.contains(&A::G2));
        let lu = all_implied([A::LostUpdate]);
        assert!(lu.contains(&A::G2Item) && lu.contains(&A::G2Realtime));
        let implying_g1 = all_implying([A::G1]);
        for a in [
            A::G0,
            A::G1a,
            A::G1b,
            A::IncompatibleOrder,
            A::DirtyUpdate,
            A::FutureRead,
        ] {
            assert!(implying_g1.contains(&a), "{a}");
        }
        assert!(!implying_g1.contains(&A::G0Process));
        // Process anomalies imply their realtime counterpart, never the reverse.
        assert!(all_implied([A::GSingleItemProcess]).contains(&A::GSingleItemRealtime));
        assert!(!all_implied([A::GSingleItemRealtime]).contains(&A::GSingleItemProcess));
    }

    #[test]
    fn implication_graph_is_acyclic() {
        for &a in AnomalyType::ALL {
            let downstream = all_implied(a.implies().iter().copied());
            assert!(!downstream.contains(&a), "{a} implies itself");
        }
    }
}
