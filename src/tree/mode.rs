//! BLAKE3's three modes: the public [`Mode`], and the key words and flags ([`Domain`]) every
//! backend hashes with. Both keep their secrets: their `Debug` forms print no key bytes or key
//! words, keys compare in constant time, and a `Mode` wipes its key when dropped.

use crate::core::compress::cv_words;
use crate::core::constants::{flags, IV, KEY_LEN};
use std::fmt;
use zeroize::Zeroize;

/// One of BLAKE3's three modes.
///
/// Its `Debug` form never shows a key (`Keyed(<redacted>)`); two modes compare equal in constant
/// time where they hold keys; the key bytes are wiped (zeroized) when the `Mode` is dropped.
///
/// ```
/// use b3accel::{hash_xof_on, Device, Mode};
/// let mut out = [0u8; 32];
/// hash_xof_on(Device::Cpu, &Mode::DeriveKey("my app v1".into()), b"material", 0, &mut out).unwrap();
/// assert_eq!(out, blake3::derive_key("my app v1", b"material"));
/// assert_eq!(format!("{:?}", Mode::Keyed([7; 32])), "Keyed(<redacted>)");
/// ```
#[derive(Clone)]
pub enum Mode {
    /// The plain hash.
    Hash,
    /// The keyed hash (a MAC or PRF) with a 32-byte key.
    Keyed([u8; KEY_LEN]),
    /// Key derivation with a context string; the input is the key material.
    DeriveKey(String),
}

/// The context string is shown: BLAKE3 asks for a hard-coded, public one. The key is not.
impl fmt::Debug for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Hash => f.write_str("Hash"),
            Mode::Keyed(_) => f.write_str("Keyed(<redacted>)"),
            Mode::DeriveKey(context) => f.debug_tuple("DeriveKey").field(context).finish(),
        }
    }
}

/// Keys compare in constant time (no early exit on the first differing byte).
impl PartialEq for Mode {
    fn eq(&self, other: &Mode) -> bool {
        match (self, other) {
            (Mode::Hash, Mode::Hash) => true,
            (Mode::Keyed(a), Mode::Keyed(b)) => ct_eq(a, b),
            (Mode::DeriveKey(a), Mode::DeriveKey(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Mode {}

impl Drop for Mode {
    fn drop(&mut self) {
        match self {
            Mode::Hash => {}
            Mode::Keyed(key) => key.zeroize(),
            Mode::DeriveKey(context) => context.zeroize(),
        }
    }
}

/// Whether two 32-byte secrets are equal, in time that does not depend on where they differ
/// (`blake3::Hash`'s comparison, which is constant-time).
pub(crate) fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    blake3::Hash::from_bytes(*a) == blake3::Hash::from_bytes(*b)
}

/// The key words and flags that select one of BLAKE3's three modes.
///
/// `Domain` is `Copy` on purpose: it is passed by value into every chunk, parent and batch
/// compression, down to the SIMD kernels and across rayon tasks and GPU parameter blocks. A
/// `Drop` impl (to zeroize) would forbid `Copy` and put a clone or a reference into each of those
/// hot calls, while the copies that matter for a leak, in registers and stack frames, are
/// beyond any destructor's reach anyway. So the *owners* that keep key words for long wipe them
/// instead: [`Mode`] (the key), the `Hasher` (its `Domain`, with [`Domain::zeroize`]) and the
/// `Output` an `OutputReader` keeps. Its `Debug` form shows the mode, never the key words.
#[derive(Clone, Copy)]
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

    /// Key derivation with the context string already hashed (`context::context_key`).
    pub fn from_context_key(context_key: &[u8; KEY_LEN]) -> Domain {
        Domain { key: cv_words(context_key), flags: flags::DERIVE_KEY_MATERIAL }
    }

    /// Whether this domain's key words are secret (keyed hashing, key derivation), so that what
    /// it hashes and the chaining values it gives must be kept from view and wiped.
    pub fn is_secret(&self) -> bool {
        self.flags & (flags::KEYED_HASH | flags::DERIVE_KEY_MATERIAL) != 0
    }

    /// The mode's name for `Debug` forms.
    pub fn mode_name(&self) -> &'static str {
        if self.flags & flags::KEYED_HASH != 0 {
            "keyed"
        } else if self.flags & flags::DERIVE_KEY_MATERIAL != 0 {
            "derive-key"
        } else if self.flags & flags::DERIVE_KEY_CONTEXT != 0 {
            "derive-key context"
        } else {
            "hash"
        }
    }

    /// Wipes the key words (the owner of a long-lived `Domain` calls it when dropped).
    pub fn zeroize(&mut self) {
        self.key.zeroize();
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain").field("mode", &self.mode_name()).field("key", &format_args!("<redacted>")).finish()
    }
}
