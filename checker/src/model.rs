//! Consistency models: Elle's lattice, which anomalies each model
//! proscribes, and the algorithms that turn requested models into anomalies
//! to look for and found anomalies into `not` / `also-not`.
//!
//! Key decision: one enum variant per *canonical* model; aliases
//! (`strict-serializable` = `strong-serializable` = `PL-SS`, `serializable` =
//! `conflict-serializable` = `PL-3`, …) only exist in [`ConsistencyModel::parse`].
//! Output uses Elle's friendly names (so `PL-SS` prints `strong-serializable`).
//! Our `garbage-read` is proscribed by read-uncommitted. The weak-isolation
//! patterns (`weak`) follow Biswas & Enea and Plume: `read-committed` also
//! proscribes non-monotonic reads within a transaction (their RC's axiom,
//! which PL-2 alone allows), session-order variants are proscribed by the
//! session-aware models (strong-session-read-committed, which with
//! Plume's own-write conditions is their full RC, alias `RC`; Cerone's
//! read-atomic), fractured reads by read-atomic, causality violations by
//! causal-cerone.
//!
//! One lattice for the verdict and the analyses: for every edge
//! (stronger → weaker), a check at the stronger model searches every
//! anomaly the weaker proscribes ([`weak_level_needed`]), so no history is
//! invalid at the weaker and valid at the stronger. Three of Elle's edges
//! are cut because our weaker models are stronger than Elle's
//! (checker/CONFORMANCE.md, "Lattice: three of Elle's edges cut"):
//! snapshot-isolation → prefix / parallel-snapshot-isolation (ours are
//! Cerone's, with session order: H1), cursor-stability → read-committed
//! (ours forbids non-monotonic reads: H4; cursor-stability implies
//! read-uncommitted and proscribes PL-2's anomalies itself), and
//! monotonic-atomic-view no longer proscribes fractured reads (H3).

use crate::anomaly::{
    AnomalyType, BASE_CYCLE_TYPES, NameKind, UnknownName, Variant, all_implied, all_implying,
};
use std::collections::BTreeSet;

/// A level the weak-isolation check (`weak`) decides (each includes the
/// weaker ones); here, beside the models, so the model lattice does not
/// import the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Read committed (with session order in the commit order).
    ReadCommitted,
    /// Read atomic.
    ReadAtomic,
    /// Causal consistency.
    Causal,
}

impl Level {
    /// The strongest level that `models` (taken literally, not through
    /// implication, so Elle's default checks stay as they were) or the extra
    /// `anomalies` ask for.
    pub fn needed(models: &[ConsistencyModel], anomalies: &[AnomalyType]) -> Option<Level> {
        use AnomalyType as A;
        use ConsistencyModel as M;
        let from_models = models.iter().filter_map(|m| match m {
            M::ReadCommitted | M::StrongSessionReadCommitted | M::MonotonicView => {
                Some(Level::ReadCommitted)
            }
            M::MonotonicAtomicView | M::ReadAtomic => Some(Level::ReadAtomic),
            M::CausalCerone => Some(Level::Causal),
            _ => None,
        });
        let from_anomalies = anomalies.iter().filter_map(|a| match a {
            A::NonMonotonicRead
            | A::NonMonotonicReadProcess
            | A::CyclicCausalOrder
            | A::NotMyOwnWrite
            | A::NotMyLastWrite => Some(Level::ReadCommitted),
            A::NonRepeatableRead | A::FracturedRead | A::FracturedReadProcess => {
                Some(Level::ReadAtomic)
            }
            A::CausalityViolation => Some(Level::Causal),
            _ => None,
        });
        from_models.chain(from_anomalies).max()
    }

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Level::ReadCommitted => "read-committed",
            Level::ReadAtomic => "read-atomic",
            Level::Causal => "causal",
        }
    }
}

macro_rules! models {
    ($( $(#[$doc:meta])* $var:ident => $name:literal [$($alias:literal),*] ),* $(,)?) => {
        /// A consistency model of Elle's lattice.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ConsistencyModel {
            $( $(#[$doc])* $var, )*
        }

        impl ConsistencyModel {
            /// All models, in declaration order.
            pub const ALL: &'static [ConsistencyModel] = &[ $( ConsistencyModel::$var, )* ];

            /// Elle's friendly output name (`read-committed`, `strong-serializable`).
            pub fn name(self) -> &'static str {
                match self {
                    $( ConsistencyModel::$var => $name, )*
                }
            }

            /// Other accepted spellings (canonical `PL-*` names and aliases).
            pub fn aliases(self) -> &'static [&'static str] {
                match self {
                    $( ConsistencyModel::$var => &[$($alias),*], )*
                }
            }
        }
    };
}

models! {
    /// Adya PL-1.
    ReadUncommitted => "read-uncommitted" ["PL-1"],
    /// Adya PL-2.
    ReadCommitted => "read-committed" ["PL-2"],
    /// Adya PL-CS.
    CursorStability => "cursor-stability" ["PL-CS"],
    /// Adya PL-2L.
    MonotonicView => "monotonic-view" ["PL-2L"],
    /// Adya PL-MSR.
    MonotonicSnapshotRead => "monotonic-snapshot-read" ["PL-MSR"],
    /// Adya PL-2+.
    ConsistentView => "consistent-view" ["PL-2+"],
    /// Adya PL-FCV.
    ForwardConsistentView => "forward-consistent-view" ["PL-FCV"],
    /// Adya PL-2.99.
    RepeatableRead => "repeatable-read" ["PL-2.99"],
    /// Adya PL-SI (generalized SI).
    SnapshotIsolation => "snapshot-isolation" ["PL-SI"],
    /// Adya PL-3U.
    UpdateSerializable => "update-serializable" ["PL-3U"],
    /// Adya PL-3 (conflict serializability).
    Serializable => "serializable" ["PL-3", "conflict-serializable"],
    /// Adya PL-SS; Elle prints it as `strong-serializable`.
    StrictSerializable => "strong-serializable" ["strict-serializable", "PL-SS"],
    /// Strong-session PL-1.
    StrongSessionReadUncommitted => "strong-session-read-uncommitted" ["strong-session-PL-1"],
    /// Strong-session PL-2, which is also read committed as Biswas & Enea
    /// (OOPSLA 2019), Plume and AWDIT define it (`RC`): a commit order
    /// containing session order and write-read, reads monotonic within a
    /// transaction, a read of a key its transaction wrote returns the last
    /// such write (`weak`; Elle's `read-committed` is PL-2, session-free).
    StrongSessionReadCommitted => "strong-session-read-committed" ["strong-session-PL-2", "session-read-committed", "RC", "rc"],
    /// Strong PL-1.
    StrongReadUncommitted => "strong-read-uncommitted" ["strong-PL-1"],
    /// Strong PL-2.
    StrongReadCommitted => "strong-read-committed" ["strong-PL-2"],
    /// Bailis' MAV.
    MonotonicAtomicView => "monotonic-atomic-view" [],
    /// Cerone's read atomic.
    ReadAtomic => "read-atomic" [],
    /// Cerone's causal consistency.
    CausalCerone => "causal-cerone" [],
    /// Cerone's prefix consistency.
    Prefix => "prefix" [],
    /// Parallel snapshot isolation.
    ParallelSnapshotIsolation => "parallel-snapshot-isolation" [],
    /// Update atomic (formerly ROLA).
    UpdateAtomic => "update-atomic" ["ROLA"],
    /// Strong session snapshot isolation.
    StrongSessionSnapshotIsolation => "strong-session-snapshot-isolation" [],
    /// Strong snapshot isolation.
    StrongSnapshotIsolation => "strong-snapshot-isolation" [],
    /// Strong session serializable.
    StrongSessionSerializable => "strong-session-serializable" [],
    /// Session serializable.
    SessionSerializable => "session-serializable" [],
    /// One-copy serializability.
    OneSR => "1SR" [],
    /// View serializability.
    ViewSerializable => "view-serializable" [],
    /// Linearizability (single-object).
    Linearizable => "linearizable" [],
    /// Sequential consistency (single-object).
    Sequential => "sequential" [],
    /// Causal consistency (single-object).
    Causal => "causal" [],
    /// Writes follow reads.
    WritesFollowReads => "writes-follow-reads" [],
    /// PRAM.
    Pram => "PRAM" [],
    /// Monotonic reads.
    MonotonicReads => "monotonic-reads" [],
    /// Monotonic writes.
    MonotonicWrites => "monotonic-writes" [],
    /// Read your writes.
    ReadYourWrites => "read-your-writes" [],
}

use AnomalyType as A;
use ConsistencyModel as M;

/// The default model of a check (Elle's default).
pub const DEFAULT_MODEL: ConsistencyModel = M::StrictSerializable;

impl ConsistencyModel {
    /// Parses a friendly name, canonical `PL-*` name or alias, with or
    /// without a leading `:`.
    ///
    /// # Errors
    /// [`UnknownName`] for anything else (case-sensitive).
    pub fn parse(s: &str) -> Result<ConsistencyModel, UnknownName> {
        let bare = s.trim();
        let bare = bare.strip_prefix(':').unwrap_or(bare);
        M::ALL
            .iter()
            .copied()
            .find(|m| m.name() == bare || m.aliases().contains(&bare))
            .ok_or_else(|| UnknownName {
                kind: NameKind::Model,
                name: s.to_string(),
                known: M::ALL
                    .iter()
                    .flat_map(|m| std::iter::once(m.name()).chain(m.aliases().iter().copied()))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Elle's canonical name (`PL-2` for read-committed); the friendly name
    /// for models without a `PL-*` name.
    pub fn canonical_name(self) -> &'static str {
        match self {
            M::Serializable => "PL-3",
            M::StrictSerializable => "PL-SS",
            m => m.aliases().first().copied().unwrap_or(m.name()),
        }
    }

    /// Direct implications (Elle): if `self` holds, so do these.
    pub fn implies(self) -> &'static [ConsistencyModel] {
        match self {
            M::StrictSerializable => &[
                M::Serializable,
                M::Linearizable,
                M::SnapshotIsolation,
                M::StrongSnapshotIsolation,
                M::StrongSessionSerializable,
                M::SessionSerializable,
            ],
            M::SessionSerializable => &[M::OneSR],
            M::Serializable => &[
                M::RepeatableRead,
                M::UpdateSerializable,
                M::SnapshotIsolation,
                M::ViewSerializable,
            ],
            M::StrongSessionSerializable => &[M::Serializable, M::StrongSessionSnapshotIsolation],
            M::StrongSnapshotIsolation => {
                &[M::StrongSessionSnapshotIsolation, M::StrongReadCommitted]
            }
            M::StrongSessionSnapshotIsolation => {
                &[M::SnapshotIsolation, M::StrongSessionReadCommitted]
            }
            // Not prefix / parallel-snapshot-isolation, as Elle has it: ours
            // are Cerone's, with session order, which PL-SI ignores
            // (checker/CONFORMANCE.md, H1).
            M::SnapshotIsolation => &[
                M::ForwardConsistentView,
                M::MonotonicAtomicView,
                M::MonotonicSnapshotRead,
            ],
            M::UpdateSerializable => &[M::ForwardConsistentView],
            M::ForwardConsistentView => &[M::ConsistentView],
            M::ConsistentView => &[M::CursorStability, M::MonotonicView],
            M::RepeatableRead => &[M::CursorStability, M::MonotonicAtomicView],
            // Not read-committed, as Elle has it: ours forbids
            // non-monotonic reads, a cycle over two keys that PL-CS's
            // one-item G-cursor allows (checker/CONFORMANCE.md, H4).
            M::CursorStability => &[M::ReadUncommitted],
            M::MonotonicView | M::MonotonicSnapshotRead | M::MonotonicAtomicView => {
                &[M::ReadCommitted]
            }
            M::ParallelSnapshotIsolation => &[M::CausalCerone, M::UpdateAtomic],
            M::Prefix => &[M::CausalCerone],
            M::CausalCerone | M::UpdateAtomic => &[M::ReadAtomic],
            M::ReadAtomic => &[M::MonotonicAtomicView],
            M::ReadCommitted => &[M::ReadUncommitted],
            M::StrongReadCommitted => &[M::StrongSessionReadCommitted, M::StrongReadUncommitted],
            M::StrongReadUncommitted => &[M::StrongSessionReadUncommitted],
            M::StrongSessionReadCommitted => &[M::ReadCommitted, M::StrongSessionReadUncommitted],
            M::StrongSessionReadUncommitted => &[M::ReadUncommitted],
            M::Linearizable => &[M::Sequential],
            M::Sequential => &[M::Causal],
            M::Causal => &[M::WritesFollowReads, M::Pram],
            M::Pram => &[M::MonotonicReads, M::MonotonicWrites, M::ReadYourWrites],
            M::ReadUncommitted
            | M::OneSR
            | M::ViewSerializable
            | M::WritesFollowReads
            | M::MonotonicReads
            | M::MonotonicWrites
            | M::ReadYourWrites => &[],
        }
    }

    /// Anomalies this model proscribes directly (Elle); the full set
    /// also includes those of implied models and every anomaly implying one.
    pub fn direct_proscribed(self) -> &'static [AnomalyType] {
        match self {
            M::ReadUncommitted => &[
                A::G0,
                A::DuplicateElements,
                A::CyclicVersions,
                A::GarbageRead,
                A::Pl1CycleExists,
            ],
            M::ReadCommitted => &[A::G1, A::Pl2CycleExists, A::NonMonotonicRead],
            // Read committed's PL-2 part, which it no longer implies.
            M::CursorStability => &[A::G1, A::GCursor, A::LostUpdate, A::Pl2CycleExists],
            M::MonotonicView => &[A::G1, A::GMonotonic],
            M::MonotonicSnapshotRead => &[A::G1, A::GMsr],
            M::ConsistentView => &[A::G1, A::GSingle],
            M::ForwardConsistentView => &[A::G1, A::GSib],
            M::UpdateSerializable => &[A::G1, A::GUpdate],
            M::RepeatableRead => &[A::G1, A::G2Item, A::Pl299CycleExists, A::LostUpdate],
            M::SnapshotIsolation => &[
                A::Internal,
                A::G1,
                A::GSi,
                A::GNonadjacent,
                A::PlSiCycleExists,
            ],
            M::Serializable => &[
                A::Internal,
                A::G1,
                A::G2,
                A::PredicateReadMiss,
                A::ExpectedOrderViolation,
                A::Pl3CycleExists,
            ],
            M::StrictSerializable => &[A::G1, A::G1cRealtime, A::G2Realtime, A::PlSsCycleExists],
            M::ReadAtomic => &[
                A::Internal,
                A::G1a,
                A::FutureRead,
                A::CyclicCausalOrder,
                A::NonMonotonicReadProcess,
                A::NonRepeatableRead,
                A::FracturedReadProcess,
            ],
            // Fractured reads are read atomic's (through `fractured-read →
            // fractured-read-process`), not Bailis's MAV (§5.3 H3).
            M::MonotonicAtomicView => &[],
            M::CausalCerone => &[A::Internal, A::G1a, A::CausalityViolation],
            M::Prefix | M::ParallelSnapshotIsolation => &[A::Internal, A::G1a],
            M::UpdateAtomic => &[A::LostUpdate],
            M::StrongSessionReadUncommitted => &[A::G0Process, A::StrongSessionPl1CycleExists],
            // Also B&E / Plume RC: their monotonic reads through session
            // order and their internal conditions (TAP-c future-read is a
            // G1c already, TAP-g cyclic-causal-order a G1c-process).
            M::StrongSessionReadCommitted => &[
                A::G1cProcess,
                A::StrongSessionPl2CycleExists,
                A::NonMonotonicReadProcess,
                A::NotMyOwnWrite,
                A::NotMyLastWrite,
            ],
            M::StrongReadUncommitted => &[A::G0Realtime, A::StrongPl1CycleExists],
            M::StrongReadCommitted => &[A::G1cRealtime, A::StrongPl2CycleExists],
            M::StrongSessionSnapshotIsolation => &[
                A::Internal,
                A::G1Process,
                A::GNonadjacentProcess,
                A::StrongSessionSnapshotIsolationCycleExists,
            ],
            M::StrongSnapshotIsolation => &[
                A::Internal,
                A::G1Realtime,
                A::GNonadjacentRealtime,
                A::StrongSnapshotIsolationCycleExists,
            ],
            M::StrongSessionSerializable => &[
                A::G1Process,
                A::G2Process,
                A::StrongSessionSerializableCycleExists,
            ],
            M::SessionSerializable
            | M::OneSR
            | M::ViewSerializable
            | M::Linearizable
            | M::Sequential
            | M::Causal
            | M::WritesFollowReads
            | M::Pram
            | M::MonotonicReads
            | M::MonotonicWrites
            | M::ReadYourWrites => &[],
        }
    }

    /// The `<model>-cycle-exists` pseudo-anomaly of this model, if it has one.
    pub fn cycle_exists_anomaly(self) -> Option<AnomalyType> {
        let own = self.canonical_name();
        self.direct_proscribed().iter().copied().find(|a| {
            a.name()
                .strip_suffix("-cycle-exists")
                .is_some_and(|m| m == own)
        })
    }
}

crate::anomaly::name_impls!(ConsistencyModel);

/// Every model implied by `models`, including themselves.
pub fn all_implied_models(
    models: impl IntoIterator<Item = ConsistencyModel>,
) -> BTreeSet<ConsistencyModel> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<ConsistencyModel> = models.into_iter().collect();
    while let Some(m) = stack.pop() {
        if seen.insert(m) {
            stack.extend(m.implies().iter().copied());
        }
    }
    seen
}

/// Given impossible models, every model that is therefore impossible too
/// (all models implying one of them), including themselves.
pub fn all_impossible_models(
    impossible: impl IntoIterator<Item = ConsistencyModel>,
) -> BTreeSet<ConsistencyModel> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<ConsistencyModel> = impossible.into_iter().collect();
    while let Some(m) = stack.pop() {
        if seen.insert(m) {
            stack.extend(M::ALL.iter().copied().filter(|s| s.implies().contains(&m)));
        }
    }
    seen
}

/// Anomalies that cannot be present if all of `models` hold (Elle's
/// `anomalies-prohibited-by`).
pub fn anomalies_prohibited_by(
    models: impl IntoIterator<Item = ConsistencyModel>,
) -> BTreeSet<AnomalyType> {
    all_implying(
        all_implied_models(models)
            .into_iter()
            .flat_map(|m| m.direct_proscribed().iter().copied()),
    )
}

/// Anomalies whose presence makes a check fail: every anomaly implying one
/// of `extra`, plus those prohibited by `models` (Elle's
/// `prohibited-anomaly-types`). An empty `models` means "no models".
pub fn prohibited_anomaly_types(
    models: &[ConsistencyModel],
    extra: &[AnomalyType],
) -> BTreeSet<AnomalyType> {
    let cached = |c: &ProhibitedCache| {
        c.iter()
            .find(|((m, e), _)| m == models && e == extra)
            .map(|(_, set)| set.clone())
    };
    if let Some(set) = PROHIBITED.lock().ok().and_then(|c| cached(&c)) {
        return set;
    }
    let mut p = all_implying(extra.iter().copied());
    p.extend(anomalies_prohibited_by(models.iter().copied()));
    if let Ok(mut c) = PROHIBITED.lock() {
        if c.len() >= 8 {
            c.remove(0);
        }
        c.push(((models.to_vec(), extra.to_vec()), p.clone()));
    }
    p
}

type ProhibitedCache = Vec<(
    (Vec<ConsistencyModel>, Vec<AnomalyType>),
    BTreeSet<AnomalyType>,
)>;

/// The last answers of [`prohibited_anomaly_types`]: one check asks for
/// the same set from several places (the weak level, the search set, the
/// order edges, the verdict), and each answer is two closures over the
/// lattice — a tenth of a 200-event read-atomic check's instructions.
static PROHIBITED: std::sync::Mutex<ProhibitedCache> = std::sync::Mutex::new(Vec::new());

/// Anomalies reported in a result: the prohibited ones plus the two that make
/// a verdict unknown (Elle's `reportable-anomaly-types`).
pub fn reportable_anomaly_types(
    models: &[ConsistencyModel],
    extra: &[AnomalyType],
) -> BTreeSet<AnomalyType> {
    let mut r = prohibited_anomaly_types(models, extra);
    r.insert(A::EmptyTransactionGraph);
    r.insert(A::CycleSearchTimeout);
    r
}

/// Which order edges the dependency graph needs for `models` + `extra`
/// (Elle's `additional-graphs`): realtime if any reportable anomaly is a
/// `-realtime` cycle (realtime order subsumes process order), else process if
/// any is a `-process` cycle, else none ([`Variant::Plain`]).
pub fn order_edges_needed(models: &[ConsistencyModel], extra: &[AnomalyType]) -> Variant {
    let reportable = reportable_anomaly_types(models, extra);
    let has = |v: Variant| {
        reportable
            .iter()
            .any(|a| a.cycle_parts().is_some_and(|(_, av)| av == v))
    };
    if has(Variant::Realtime) {
        Variant::Realtime
    } else if has(Variant::Process) {
        Variant::Process
    } else {
        Variant::Plain
    }
}

/// Anomaly types the analysis must look for so that `models` + `extra` can be
/// decided the way Elle decides them.
///
/// Elle searches *every* cycle class its graph can hold, not only the
/// prohibited ones, because `not`/`also-not` are computed from everything
/// found. So this is: the reportable set, every base cycle type and the
/// cycle-exists checks of the base models, plus the `-realtime` (or
/// `-process`) variants and their cycle-exists checks when
/// [`order_edges_needed`] says the graph gets those edges. The analysis adds
/// realtime edges iff the set holds a `-realtime` cycle type, else process
/// edges iff it holds a `-process` one.
pub fn anomalies_to_search(
    models: &[ConsistencyModel],
    extra: &[AnomalyType],
) -> BTreeSet<AnomalyType> {
    let edges = order_edges_needed(models, extra);
    let mut s = reportable_anomaly_types(models, extra);
    s.extend(BASE_CYCLE_TYPES.iter().copied());
    s.extend([
        A::Pl1CycleExists,
        A::Pl2CycleExists,
        A::PlSiCycleExists,
        A::Pl299CycleExists,
        A::Pl3CycleExists,
    ]);
    match edges {
        Variant::Realtime => {
            s.extend(
                BASE_CYCLE_TYPES
                    .iter()
                    .filter_map(|b| b.with_variant(Variant::Realtime)),
            );
            s.extend([
                A::StrongPl1CycleExists,
                A::StrongPl2CycleExists,
                A::StrongSnapshotIsolationCycleExists,
                A::PlSsCycleExists,
            ]);
        }
        Variant::Process => {
            s.extend(
                BASE_CYCLE_TYPES
                    .iter()
                    .filter_map(|b| b.with_variant(Variant::Process)),
            );
            s.extend([
                A::StrongSessionPl1CycleExists,
                A::StrongSessionPl2CycleExists,
                A::StrongSessionSnapshotIsolationCycleExists,
                A::StrongSessionSerializableCycleExists,
            ]);
        }
        Variant::Plain => {}
    }
    s
}

/// The level of the complete weak-isolation check (`weak`) that
/// finds every weak-isolation pattern `models` + `extra` prohibit, through
/// the models they imply as much as those named: a check at a model finds
/// what each model below it would (so `not`/`also-not` of one check never
/// contradict another's `valid`). Causal if `causality-violation` is
/// prohibited, read atomic for `fractured-read(-process)` or
/// `non-repeatable-read` (which implies G-single-item, so every model from
/// consistent-view and repeatable-read up asks for it), read committed for
/// `non-monotonic-read(-process)` or `cyclic-causal-order`; none otherwise.
pub fn weak_level_needed(models: &[ConsistencyModel], extra: &[AnomalyType]) -> Option<Level> {
    let p = prohibited_anomaly_types(models, extra);
    let any = |xs: &[AnomalyType]| xs.iter().any(|a| p.contains(a));
    if any(&[A::CausalityViolation]) {
        Some(Level::Causal)
    } else if any(&[
        A::FracturedRead,
        A::FracturedReadProcess,
        A::NonRepeatableRead,
    ]) {
        Some(Level::ReadAtomic)
    } else if any(&[
        A::NonMonotonicRead,
        A::NonMonotonicReadProcess,
        A::CyclicCausalOrder,
    ]) {
        Some(Level::ReadCommitted)
    } else {
        None
    }
}

/// The models a complete weak check at `level` decides, with the syntactic
/// read checks that always run beside it (aborted, intermediate, future,
/// garbage and internal reads): when it finds nothing, each holds; a commit
/// order it finds is also a version order without G0/G1c (with the session
/// order: without G0-process/G1c-process). Read committed decides
/// read-uncommitted, read-committed, their strong-session versions and
/// monotonic-atomic-view; read atomic adds read-atomic; causal adds
/// causal-cerone.
pub fn decided_by_weak(level: Level) -> BTreeSet<ConsistencyModel> {
    let mut s: BTreeSet<ConsistencyModel> = [
        M::ReadUncommitted,
        M::ReadCommitted,
        M::StrongSessionReadUncommitted,
        M::StrongSessionReadCommitted,
        M::MonotonicAtomicView,
    ]
    .into_iter()
    .collect();
    if level >= Level::ReadAtomic {
        s.insert(M::ReadAtomic);
    }
    if level >= Level::Causal {
        s.insert(M::CausalCerone);
    }
    s
}

/// Models that cannot hold given that `anomalies` were found (Elle's
/// `anomalies->impossible-models`).
pub fn impossible_models(
    anomalies: impl IntoIterator<Item = AnomalyType>,
) -> BTreeSet<ConsistencyModel> {
    let implied = all_implied(anomalies);
    all_impossible_models(
        M::ALL
            .iter()
            .copied()
            .filter(|m| m.direct_proscribed().iter().any(|a| implied.contains(a))),
    )
}

/// The weakest models of `models`: those from which no other member is
/// reachable by implication.
pub fn weakest_models(models: &BTreeSet<ConsistencyModel>) -> BTreeSet<ConsistencyModel> {
    models
        .iter()
        .copied()
        .filter(|&m| {
            let below = all_implied_models(m.implies().iter().copied());
            !below.iter().any(|b| models.contains(b))
        })
        .collect()
}

/// The strongest models of `models`: those no other member implies.
pub fn strongest_models(models: &BTreeSet<ConsistencyModel>) -> BTreeSet<ConsistencyModel> {
    models
        .iter()
        .copied()
        .filter(|&m| {
            !models
                .iter()
                .any(|&o| o != m && all_implied_models([o]).contains(&m))
        })
        .collect()
}

/// `not` (weakest violated models) and `also-not` (the other violated ones).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Boundary {
    /// The weakest models the anomalies rule out.
    pub not: BTreeSet<ConsistencyModel>,
    /// Every other (stronger) model they rule out.
    pub also_not: BTreeSet<ConsistencyModel>,
}

impl Boundary {
    /// `not`, sorted by name as Elle prints it.
    pub fn not_sorted(&self) -> Vec<ConsistencyModel> {
        sorted_by_name(&self.not)
    }

    /// `also-not`, sorted by name as Elle prints it.
    pub fn also_not_sorted(&self) -> Vec<ConsistencyModel> {
        sorted_by_name(&self.also_not)
    }
}

fn sorted_by_name(s: &BTreeSet<ConsistencyModel>) -> Vec<ConsistencyModel> {
    let mut v: Vec<_> = s.iter().copied().collect();
    v.sort_by_key(|m| m.name());
    v
}

/// Elle's `boundary`: the weakest models `anomalies` rule out, and the rest.
pub fn boundary(anomalies: impl IntoIterator<Item = AnomalyType>) -> Boundary {
    let impossible = impossible_models(anomalies);
    let not = weakest_models(&impossible);
    let also_not = impossible.difference(&not).copied().collect();
    Boundary { not, also_not }
}

/// Drops `<model>-cycle-exists` types whose model is already ruled out by
/// the other (non-cycle-exists) types in `found` (Elle's
/// `remove-redundant-cycle-exists`): a specific cycle or anomaly says more
/// than "some cycle exists in these transactions".
pub fn remove_redundant_cycle_exists(found: &BTreeSet<AnomalyType>) -> BTreeSet<AnomalyType> {
    let impossible = impossible_models(found.iter().copied().filter(|a| !a.is_cycle_exists()));
    found
        .iter()
        .copied()
        .filter(|a| {
            !a.is_cycle_exists()
                || !M::ALL
                    .iter()
                    .any(|m| impossible.contains(m) && m.cycle_exists_anomaly() == Some(*a))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &BTreeSet<ConsistencyModel>) -> Vec<&'static str> {
        let mut v: Vec<_> = s.iter().map(|m| m.name()).collect();
        v.sort();
        v
    }

    #[test]
    fn parse_names_and_aliases() {
        for (s, m) in [
            ("strict-serializable", M::StrictSerializable),
            ("strong-serializable", M::StrictSerializable),
            (":PL-SS", M::StrictSerializable),
            ("serializable", M::Serializable),
            ("conflict-serializable", M::Serializable),
            ("PL-3", M::Serializable),
            ("PL-2.99", M::RepeatableRead),
            ("PL-2+", M::ConsistentView),
            ("ROLA", M::UpdateAtomic),
            ("strong-session-PL-2", M::StrongSessionReadCommitted),
            (":read-uncommitted", M::ReadUncommitted),
            ("1SR", M::OneSR),
        ] {
            assert_eq!(ConsistencyModel::parse(s), Ok(m), "{s}");
        }
        for bad in [
            "serialisable",
            "Serializable",
            "PL-4",
            "",
            "G1c",
            "snapshot",
        ] {
            assert!(ConsistencyModel::parse(bad).is_err(), "{bad}");
        }
        let mut seen = BTreeSet::new();
        for &m in M::ALL {
            assert!(seen.insert(m.name()));
            for a in m.aliases() {
                assert!(seen.insert(a), "alias {a} used twice");
            }
            assert_eq!(ConsistencyModel::parse(m.name()), Ok(m));
        }
        assert_eq!(M::ReadCommitted.canonical_name(), "PL-2");
        assert_eq!(M::StrictSerializable.canonical_name(), "PL-SS");
        assert_eq!(M::ReadAtomic.canonical_name(), "read-atomic");
    }

    #[test]
    fn cycle_exists_names_follow_canonical_model_names() {
        for &m in M::ALL {
            if let Some(a) = m.cycle_exists_anomaly() {
                assert_eq!(a.name(), format!("{}-cycle-exists", m.canonical_name()));
            }
        }
        let with: Vec<_> = M::ALL
            .iter()
            .filter_map(|m| m.cycle_exists_anomaly())
            .collect();
        assert_eq!(with.len(), crate::anomaly::CYCLE_EXISTS_TYPES.len());
    }

    /// The emitted anomalies of Elle (list-append/rw-register can
    /// produce these), used to compare our lattice with the computed table.
    const EMITTED: &[AnomalyType] = &[
        A::G0,
        A::G1a,
        A::G1b,
        A::G1c,
        A::GSingle,
        A::GSingleItem,
        A::GNonadjacent,
        A::GNonadjacentItem,
        A::G2,
        A::G2Item,
        A::Internal,
        A::FutureRead,
        A::DirtyUpdate,
        A::DuplicateElements,
        A::IncompatibleOrder,
        A::LostUpdate,
        A::CyclicVersions,
    ];

    fn emitted_prohibited(m: ConsistencyModel) -> BTreeSet<&'static str> {
        let p = anomalies_prohibited_by([m]);
        let mut all: Vec<AnomalyType> = EMITTED.to_vec();
        for b in BASE_CYCLE_TYPES {
            all.extend(b.with_variant(Variant::Process));
            all.extend(b.with_variant(Variant::Realtime));
        }
        all.into_iter()
            .filter(|a| p.contains(a))
            .map(|a| a.name())
            .collect()
    }

    fn set(xs: &[&'static str]) -> BTreeSet<&'static str> {
        xs.iter().copied().collect()
    }

    const RC: &[&str] = &[
        "G0",
        "G1a",
        "G1b",
        "G1c",
        "future-read",
        "dirty-update",
        "incompatible-order",
        "duplicate-elements",
        "cyclic-versions",
    ];

    fn plus(base: &[&'static str], more: &[&'static str]) -> BTreeSet<&'static str> {
        base.iter().chain(more).copied().collect()
    }

    #[test]
    fn prohibited_table_of_section_4_6() {
        assert_eq!(
            emitted_prohibited(M::ReadUncommitted),
            set(&["G0", "duplicate-elements", "cyclic-versions"])
        );
        for m in [
            M::ReadCommitted,
            M::MonotonicAtomicView,
            M::MonotonicView,
            M::MonotonicSnapshotRead,
        ] {
            assert_eq!(emitted_prohibited(m), set(RC), "{m}");
        }
        let cs = plus(RC, &["lost-update"]);
        assert_eq!(emitted_prohibited(M::CursorStability), cs);
        let cs_v: Vec<&'static str> = cs.iter().copied().collect();
        for m in [
            M::ConsistentView,
            M::ForwardConsistentView,
            M::UpdateSerializable,
        ] {
            assert_eq!(
                emitted_prohibited(m),
                plus(&cs_v, &["G-single", "G-single-item"]),
                "{m}"
            );
        }
        assert_eq!(
            emitted_prohibited(M::RepeatableRead),
            plus(&cs_v, &["G-single-item", "G-nonadjacent-item", "G2-item"])
        );
        for m in [M::ReadAtomic, M::CausalCerone, M::Prefix] {
            assert_eq!(emitted_prohibited(m), plus(RC, &["internal"]), "{m}");
        }
        for m in [M::ParallelSnapshotIsolation, M::UpdateAtomic] {
            assert_eq!(
                emitted_prohibited(m),
                plus(RC, &["internal", "lost-update"]),
                "{m}"
            );
        }
        let si = plus(
            RC,
            &[
                "internal",
                "lost-update",
                "G-single",
                "G-single-item",
                "G-nonadjacent",
                "G-nonadjacent-item",
            ],
        );
        assert_eq!(emitted_prohibited(M::SnapshotIsolation), si);
        let si_v: Vec<&'static str> = si.iter().copied().collect();
        assert_eq!(
            emitted_prohibited(M::Serializable),
            plus(&si_v, &["G2-item", "G2"])
        );
        let ru = ["G0", "duplicate-elements", "cyclic-versions"];
        assert_eq!(
            emitted_prohibited(M::StrongSessionReadUncommitted),
            plus(&ru, &["G0-process"])
        );
        assert_eq!(
            emitted_prohibited(M::StrongSessionReadCommitted),
            plus(RC, &["G0-process", "G1c-process"])
        );
        assert_eq!(
            emitted_prohibited(M::StrongReadUncommitted),
            plus(&ru, &["G0-process", "G0-realtime"])
        );
        assert_eq!(
            emitted_prohibited(M::StrongReadCommitted),
            plus(
                RC,
                &["G0-process", "G1c-process", "G0-realtime", "G1c-realtime"]
            )
        );
        let proc_si = [
            "G0-process",
            "G1c-process",
            "G-single-process",
            "G-single-item-process",
            "G-nonadjacent-process",
            "G-nonadjacent-item-process",
        ];
        let ssi = plus(&si_v, &proc_si);
        assert_eq!(
            emitted_prohibited(M::StrongSessionSnapshotIsolation),
            ssi.clone()
        );
        let ssi_v: Vec<&'static str> = ssi.iter().copied().collect();
        assert_eq!(
            emitted_prohibited(M::StrongSnapshotIsolation),
            plus(
                &ssi_v,
                &[
                    "G0-realtime",
                    "G1c-realtime",
                    "G-single-realtime",
                    "G-single-item-realtime",
                    "G-nonadjacent-realtime",
                    "G-nonadjacent-item-realtime",
                ]
            )
        );
        let ser: Vec<&'static str> = emitted_prohibited(M::Serializable).into_iter().collect();
        let mut all_proc: Vec<&'static str> = BASE_CYCLE_TYPES
            .iter()
            .filter_map(|b| b.with_variant(Variant::Process))
            .map(|a| a.name())
            .collect();
        assert_eq!(
            emitted_prohibited(M::StrongSessionSerializable),
            plus(&ser, &all_proc)
        );
        // strict-serializable prohibits everything emitted, every variant.
        all_proc.extend(
            BASE_CYCLE_TYPES
                .iter()
                .filter_map(|b| b.with_variant(Variant::Realtime))
                .map(|a| a.name()),
        );
        assert_eq!(
            emitted_prohibited(M::StrictSerializable),
            plus(&ser, &all_proc)
        );
        // Every model also prohibits its own cycle-exists type.
        for &m in M::ALL {
            if let Some(a) = m.cycle_exists_anomaly() {
                assert!(anomalies_prohibited_by([m]).contains(&a), "{m}");
            }
        }
    }

    fn not_of(a: AnomalyType) -> Vec<&'static str> {
        names(&boundary([a]).not)
    }

    #[test]
    fn not_table_of_section_4_6() {
        for (anoms, expect) in [
            (
                &[
                    A::G0,
                    A::DuplicateElements,
                    A::CyclicVersions,
                    A::GarbageRead,
                ][..],
                &["read-uncommitted"][..],
            ),
            (
                &[
                    A::G1a,
                    A::G1b,
                    A::G1c,
                    A::FutureRead,
                    A::DirtyUpdate,
                    A::IncompatibleOrder,
                ],
                &["cursor-stability", "read-committed"],
            ),
            (&[A::Internal], &["read-atomic", "snapshot-isolation"]),
            (&[A::LostUpdate], &["cursor-stability", "update-atomic"]),
            (&[A::GSingle], &["consistent-view"]),
            (&[A::GSingleItem], &["consistent-view", "repeatable-read"]),
            (&[A::GNonadjacent], &["snapshot-isolation"]),
            (
                &[A::GNonadjacentItem],
                &["repeatable-read", "snapshot-isolation"],
            ),
            (&[A::G2Item], &["repeatable-read"]),
            (&[A::G2], &["serializable"]),
            (&[A::G0Process], &["strong-session-read-uncommitted"]),
            (&[A::G1cProcess], &["strong-session-read-committed"]),
            (
                &[
                    A::GSingleProcess,
                    A::GSingleItemProcess,
                    A::GNonadjacentProcess,
                    A::GNonadjacentItemProcess,
                ],
                &["strong-session-snapshot-isolation"],
            ),
            (
                &[A::G2Process, A::G2ItemProcess],
                &["strong-session-serializable"],
            ),
            (&[A::G0Realtime], &["strong-read-uncommitted"]),
            (&[A::G1cRealtime], &["strong-read-committed"]),
            (
                &[
                    A::GSingleRealtime,
                    A::GSingleItemRealtime,
                    A::GNonadjacentRealtime,
                    A::GNonadjacentItemRealtime,
                ],
                &["strong-snapshot-isolation"],
            ),
            (
                &[A::G2Realtime, A::G2ItemRealtime],
                &["strong-serializable"],
            ),
        ] {
            for &a in anoms {
                assert_eq!(not_of(a), expect.to_vec(), "{a}");
            }
        }
        assert!(boundary([A::G2ItemRealtime]).also_not.is_empty());
    }

    #[test]
    fn g1c_also_not_is_section_4_6_but_for_cursor_stability() {
        // Elle's, but for cursor-stability: it no longer implies our
        // read-committed, so it is a weakest model ruled out too (H4).
        let b = boundary([A::G1c]);
        assert_eq!(names(&b.not), vec!["cursor-stability", "read-committed"]);
        assert_eq!(
            names(&b.also_not),
            vec![
                "causal-cerone",
                "consistent-view",
                "forward-consistent-view",
                "monotonic-atomic-view",
                "monotonic-snapshot-read",
                "monotonic-view",
                "parallel-snapshot-isolation",
                "prefix",
                "read-atomic",
                "repeatable-read",
                "serializable",
                "snapshot-isolation",
                "strong-read-committed",
                "strong-serializable",
                "strong-session-read-committed",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "update-atomic",
                "update-serializable",
            ]
        );
    }

    #[test]
    fn pseudo_anomalies_rule_out_nothing() {
        assert_eq!(
            boundary([A::EmptyTransactionGraph, A::CycleSearchTimeout]),
            Boundary::default()
        );
    }

    #[test]
    fn cycle_exists_boundaries_and_redundancy() {
        // list-append-anomaly-incompatible-order (conformance corpus).
        let b = boundary([
            A::G1cRealtime,
            A::IncompatibleOrder,
            A::StrongPl1CycleExists,
        ]);
        assert_eq!(
            names(&b.not),
            vec![
                "cursor-stability",
                "read-committed",
                "strong-read-uncommitted"
            ]
        );
        let found: BTreeSet<_> = [
            A::G2Item,
            A::StrongSnapshotIsolationCycleExists,
            A::Pl299CycleExists,
        ]
        .into_iter()
        .collect();
        let kept = remove_redundant_cycle_exists(&found);
        assert!(kept.contains(&A::StrongSnapshotIsolationCycleExists));
        assert!(!kept.contains(&A::Pl299CycleExists));
        assert!(kept.contains(&A::G2Item));
    }

    #[test]
    fn default_search_covers_reportable_and_all_base_cycles() {
        let s = anomalies_to_search(&[M::StrictSerializable], &[A::G0]);
        assert!(s.contains(&A::G2ItemRealtime) && s.contains(&A::G0));
        assert_eq!(
            order_edges_needed(&[M::StrictSerializable], &[]),
            Variant::Realtime
        );
        assert_eq!(
            order_edges_needed(&[M::Serializable], &[A::G0]),
            Variant::Plain
        );
        assert_eq!(
            order_edges_needed(&[M::StrongSessionSerializable], &[]),
            Variant::Process
        );
        let ser = anomalies_to_search(&[M::Serializable], &[]);
        assert!(ser.contains(&A::GSingleItem) && ser.contains(&A::Pl299CycleExists));
        assert!(
            !ser.iter()
                .any(|a| a.cycle_parts().is_some_and(|(_, v)| v != Variant::Plain))
        );
        // Elle searches cycles a weak model does not prohibit: they feed `not`.
        let ru = anomalies_to_search(&[M::ReadUncommitted], &[]);
        assert!(ru.contains(&A::G2Item));
        // Extra anomalies pull in what implies them.
        let x = prohibited_anomaly_types(&[], &[A::G1]);
        assert!(x.contains(&A::G1a) && x.contains(&A::G0) && !x.contains(&A::G2Item));
        assert!(prohibited_anomaly_types(&[], &[]).is_empty());
    }

    #[test]
    fn weakest_and_strongest() {
        let s: BTreeSet<_> = [M::StrictSerializable, M::Serializable]
            .into_iter()
            .collect();
        assert_eq!(names(&weakest_models(&s)), vec!["serializable"]);
        assert_eq!(names(&strongest_models(&s)), vec!["strong-serializable"]);
    }
}
