// BLAKE3's constants, with no dependencies: the crate's `core::constants` module, and included
// by `build.rs`, which writes them into the OpenCL and WGSL kernels' preludes so that the shaders
// can never drift from the Rust code.

/// Bytes in a BLAKE3 hash (the default output length).
pub const OUT_LEN: usize = 32;
/// Bytes in a key for the keyed-hash mode.
pub const KEY_LEN: usize = 32;
/// Bytes in a block, the unit of the compression function.
pub const BLOCK_LEN: usize = 64;
/// Bytes in a chunk, the leaf of BLAKE3's tree (16 blocks).
pub const CHUNK_LEN: usize = 1024;

/// The initialisation vector (the same as SHA-256's).
pub const IV: [u32; 8] =
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19];

/// The permutation applied to the message words between rounds.
pub const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

/// Number of rounds in one compression.
pub const ROUNDS: usize = 7;

/// `MSG_SCHEDULE[r][i]`: which message word is the i-th input of round r (the permutation applied
/// r times), so that kernels index the message instead of moving it between rounds.
pub const MSG_SCHEDULE: [[usize; 16]; ROUNDS] = {
    let mut s = [[0usize; 16]; ROUNDS];
    let mut i = 0;
    while i < 16 {
        s[0][i] = i;
        i += 1;
    }
    let mut r = 1;
    while r < ROUNDS {
        let mut i = 0;
        while i < 16 {
            s[r][i] = s[r - 1][MSG_PERMUTATION[i]];
            i += 1;
        }
        r += 1;
    }
    s
};

/// The state words (a, b, c, d) of the four column G's of a round, then of the four diagonal
/// G's (the state as 16 words, row-major 4x4).
pub const G_COLUMNS: [[usize; 4]; 4] = [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]];
/// See [`G_COLUMNS`].
pub const G_DIAGONALS: [[usize; 4]; 4] = [[0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]];

/// The row form's turn to the diagonals (state row i in one vector, x86's `pshufd` immediates):
/// rows 0, 2 and 3 in that order are rotated by -1, +1 and +2 words and row 1 stays, so that
/// word j of the rows holds diagonal (j + 3) % 4. Used by `rows::round` and by `build.rs`'s
/// AVX2 row template.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub const ROW_TO_DIAGONALS: [i32; 3] = [0b10_01_00_11, 0b00_11_10_01, 0b01_00_11_10];
/// The turn back from [`ROW_TO_DIAGONALS`], for the same rows 0, 2 and 3.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub const ROW_FROM_DIAGONALS: [i32; 3] = [0b00_11_10_01, 0b10_01_00_11, 0b01_00_11_10];

/// Domain flags, combined into the compression function's last state word.
pub mod flags {
    /// First block of a chunk.
    pub const CHUNK_START: u32 = 1 << 0;
    /// Last block of a chunk.
    pub const CHUNK_END: u32 = 1 << 1;
    /// A parent node: the block is two child chaining values.
    pub const PARENT: u32 = 1 << 2;
    /// The root node: its output is the hash (and the XOF stream).
    pub const ROOT: u32 = 1 << 3;
    /// Keyed-hash mode.
    pub const KEYED_HASH: u32 = 1 << 4;
    /// Derive-key mode, hashing the context string.
    pub const DERIVE_KEY_CONTEXT: u32 = 1 << 5;
    /// Derive-key mode, hashing the key material.
    pub const DERIVE_KEY_MATERIAL: u32 = 1 << 6;
}
