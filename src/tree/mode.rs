//! BLAKE3's three modes: the public [`Mode`], and the key words and flags ([`Domain`]) every
//! backend hashes with.

use super::stack::hash_small;
use crate::core::compress::cv_words;
use crate::core::constants::{flags, IV, KEY_LEN};

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
        let ctx = Domain { key: IV, flags: flags::DERIVE_KEY_CONTEXT };
        let context_key = hash_small(context.as_bytes(), ctx);
        Domain { key: cv_words(&context_key), flags: flags::DERIVE_KEY_MATERIAL }
    }
}
