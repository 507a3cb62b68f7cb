//! Key derivation's first step: a context string hashed into the key of the key material, and
//! so each [`Mode`]'s key words and flags. The one part of the modes that hashes, on top of the
//! tree code that does it.

use super::mode::{Domain, Mode};
use super::stack::{chunk_output, hash_small, CvStack};
use crate::core::constants::{flags, CHUNK_LEN, IV, KEY_LEN};
use zeroize::Zeroize;

impl Mode {
    /// The key words and flags of this mode.
    pub(crate) fn domain(&self) -> Domain {
        match self {
            Mode::Hash => Domain::HASH,
            Mode::Keyed(key) => Domain::keyed(key),
            Mode::DeriveKey(context) => Domain::derive_key(context),
        }
    }
}

impl Domain {
    /// Key derivation: the context string is hashed first (a short input, on the CPU) and its
    /// hash keys the hashing of the key material.
    pub fn derive_key(context: &str) -> Domain {
        let mut key = context_key(context);
        let domain = Domain::from_context_key(&key);
        key.zeroize();
        domain
    }
}

/// The hash of a key derivation context string: the key of the key material's hashing. Context
/// strings are short, so this is always one pass on the CPU (a context longer than a chunk goes
/// through the CPU backend's tree).
pub(crate) fn context_key(context: &str) -> [u8; KEY_LEN] {
    let domain = Domain { key: IV, flags: flags::DERIVE_KEY_CONTEXT };
    let bytes = context.as_bytes();
    if bytes.len() <= CHUNK_LEN {
        return hash_small(bytes, domain);
    }
    let mut stack = CvStack::new();
    let full = (bytes.len() - 1) / CHUNK_LEN * CHUNK_LEN;
    for (i, chunk) in bytes[..full].chunks(CHUNK_LEN).enumerate() {
        stack.push(chunk_output(chunk, i as u64, domain).chaining_value(), 1, domain);
    }
    stack.finalize(&bytes[full..], domain).root_hash()
}
