//! list-append transactions: `["append", k, v]` and `["r", k, nil]`, with
//! Elle's defaults (see [`crate::WorkloadConfig`]).

use crate::txn::TxnGen;
use crate::{WorkloadConfig, WorkloadError, WorkloadKind};

/// An endless list-append transaction generator.
///
/// # Errors
/// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
pub fn generator(cfg: &WorkloadConfig, seed: u64) -> Result<TxnGen, WorkloadError> {
    TxnGen::new(WorkloadKind::ListAppend, cfg, seed)
}
