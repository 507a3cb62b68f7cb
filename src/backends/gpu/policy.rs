//! The host-memory policy of both GPU backends' `merkle` and `hash_many` overrides: what goes to
//! the device, in what batches, and what falls back to the trait's defaults.

use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::merkle::{check_many_args, check_merkle_args, reduce_on};
use crate::tree::{hash_small, Backend, Domain, Error, Result};

/// Messages longer than this many chunks are hashed one at a time through the chunk passes (the
/// trait's default), which spread one long message over the whole device; shorter ones go to the
/// message kernels in batches.
pub(crate) const MANY_MAX_CHUNKS: usize = 64;
/// Bytes of host messages (and at most of hashes) uploaded and hashed in one batch.
pub(crate) const MANY_BATCH_BYTES: usize = 64 << 20;

/// What a GPU's `hash_many` of host memory does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ManyPlan {
    /// Nothing left to do: no messages, or empty messages (each the hash of the empty input).
    Done,
    /// Messages too long for the message kernels: the trait's default, one message at a time.
    OneAtATime,
    /// Batches of this many messages through the message kernels.
    Batches(usize),
}

/// Checks the arguments of `Backend::hash_many` and decides how a GPU hashes them; `out` is
/// already filled when the plan is [`ManyPlan::Done`].
pub(crate) fn plan_many(data: &[u8], msg_len: usize, domain: Domain, out: &mut [Cv]) -> Result<ManyPlan> {
    check_many_args(data, msg_len, out)?;
    if out.is_empty() {
        return Ok(ManyPlan::Done);
    }
    if msg_len == 0 {
        out.fill(hash_small(&[], domain));
        return Ok(ManyPlan::Done);
    }
    if msg_len.div_ceil(CHUNK_LEN) > MANY_MAX_CHUNKS {
        return Ok(ManyPlan::OneAtATime);
    }
    Ok(ManyPlan::Batches((MANY_BATCH_BYTES / msg_len).clamp(1, MANY_BATCH_BYTES / 32)))
}

/// `Backend::merkle` of host leaves on a GPU: `on_device` uploads the leaves and reduces them
/// there, unless the tree is a single leaf, or does not `fit` the device's buffers, or the device
/// runs out of memory: then the trait's default reduction (level by level through `hash_blocks`).
pub(crate) fn merkle_host<B: Backend + ?Sized>(
    backend: &B,
    leaves: &[Cv],
    mut inner: Option<&mut [Cv]>,
    fits: bool,
    on_device: impl FnOnce(&[Cv], Option<&mut [Cv]>) -> Result<Cv>,
) -> Result<Cv> {
    check_merkle_args(leaves, inner.as_deref())?;
    if leaves.len() == 1 {
        return Ok(leaves[0]);
    }
    if !fits {
        return reduce_on(backend, leaves, inner);
    }
    match on_device(leaves, inner.as_deref_mut()) {
        Err(Error::OutOfMemory { .. }) => reduce_on(backend, leaves, inner),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_plans() {
        let d = Domain::HASH;
        let mut out = vec![[0u8; 32]; 3];
        assert_eq!(plan_many(&[], 0, d, &mut out).unwrap(), ManyPlan::Done);
        assert!(out.iter().all(|h| h == blake3::hash(b"").as_bytes()));
        assert_eq!(plan_many(&[0; 12], 4, d, &mut out).unwrap(), ManyPlan::Batches(MANY_BATCH_BYTES / 32));
        let long = vec![0u8; 3 * 65 * CHUNK_LEN];
        assert_eq!(plan_many(&long, 65 * CHUNK_LEN, d, &mut out).unwrap(), ManyPlan::OneAtATime);
        let ok = vec![0u8; 3 * 64 * CHUNK_LEN];
        assert_eq!(plan_many(&ok, 64 * CHUNK_LEN, d, &mut out).unwrap(), ManyPlan::Batches(1024));
        assert!(plan_many(&[0; 5], 2, d, &mut out).is_err());
        assert_eq!(plan_many(&[], 7, d, &mut []).unwrap(), ManyPlan::Done);
    }
}
