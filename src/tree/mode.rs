//! BLAKE3's three modes: the public [`Mode`], and the key words and flags ([`Domain`]) every
//! backend hashes with.

use super::stack::{chunk_output, hash_small, CvStack};
use crate::core::compress::cv_words;
use crate::core::constants::{flags, CHUNK_LEN, IV, KEY_LEN};

/// One of BLAKE3's three modes.
///
/// ```
/// use b3accel::{hash_xof_on, Device, Mode};
/// let mut out = [0u8; 32];
/// hash_xof_on(Device::Cpu, &Mode::DeriveKey("my app v1".into()), b"material", 0, &mut out).unwrap();
/// assert_eq!(out, blake3::derive_key("my app v1", b"material"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The plain hash.
    Hash,
    /// The keyed hash (a MAC or PRF) with a 32-byte key.
    Keyed([u8; KEY_LEN]),
    /// Key derivation with a context string; the input is the key material.
    DeriveKey(String),
}

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

/// The key words and flags that select one of BLAKE3's three modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Domain {
    pub key: [u32; 8],
    pub flags: u32,
}

impl Domain {
    /// The plain hash.
    pub const HASH: Domain = Domain { key: IV, flags: 0 };

    /// Keyed hashing with a 32-byte key.
    pub fn keyed(key: &[u8; 32]) -> Domain {
        Domain { key: cv_words(key), flags: flags::KEYED_HASH }
    }

    /// Key derivation: the context string is hashed first (a short input, on the CPU) and its
    /// hash keys the hashing of the key material.
    pub fn derive_key(context: &str) -> Domain {
        Domain::from_context_key(&context_key(context))
    }

    /// Key derivation with the context string already hashed by [`context_key`].
    pub fn from_context_key(context_key: &[u8; KEY_LEN]) -> Domain {
        Domain { key: cv_words(context_key), flags: flags::DERIVE_KEY_MATERIAL }
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
