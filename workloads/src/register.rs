//! rw-register transactions: blind writes `["w", k, v]` (values unique per
//! key) and reads `["r", k, nil]`.

use crate::txn::TxnGen;
use crate::{WorkloadConfig, WorkloadError, WorkloadKind};

/// An endless rw-register transaction generator.
///
/// # Errors
/// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
pub fn generator(cfg: &WorkloadConfig, seed: u64) -> Result<TxnGen, WorkloadError> {
    TxnGen::new(WorkloadKind::RwRegister, cfg, seed)
}
