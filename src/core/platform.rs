//! The CPU kernel and instruction set, chosen once per process: what the CPU supports, capped
//! or replaced by `B3ACCEL_CPU`.
//!
//! As upstream's `platform.rs` does, the choice is made once and every primitive matches on it:
//! the single-block compressions of the row form ([`Rows`], used by the tree's few compressions and
//! every input of one chunk or less) read a cached value instead of detecting CPU features on each
//! call. The CPU backend takes its [`Kernel`] (the crate's own lane kernels at a [`SimdLevel`], or
//! upstream's) from here by default too.
//!
//! `B3ACCEL_CPU` names a level (`portable`, `sse41`, `avx2`, `avx512`: the crate's own kernels,
//! at most that level) or `upstream` ([`Kernel::Upstream`]). Without it the CPU gets its best
//! level where the crate has SIMD for it (x86 and x86-64) and the upstream kernel elsewhere.
//! An unknown value changes nothing here; `CpuBackend::from_env` reports it, as the command line
//! does.

use super::compress::{block_words, compress_portable, words_to_cv, Cv};
use super::constants::{flags, BLOCK_LEN, CHUNK_LEN};
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use super::rows as simd_rows;
#[cfg(target_arch = "x86")]
use std::arch::x86::{__cpuid, CpuidResult};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__cpuid, CpuidResult};
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that caps the instruction set (`B3ACCEL_CPU=sse41`) or chooses
/// upstream's kernel (`B3ACCEL_CPU=upstream`); see [`Kernel`].
pub const CPU_LEVEL_ENV: &str = "B3ACCEL_CPU";

/// The instruction set the CPU backend's kernel runs on.
///
/// ```
/// use b3accel::cpu::SimdLevel;
/// let best = SimdLevel::detect();
/// assert!(best.is_supported());
/// assert!(SimdLevel::Portable <= best);
/// assert_eq!("avx2".parse::<SimdLevel>().unwrap(), SimdLevel::Avx2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Plain Rust, one input at a time: every CPU.
    Portable,
    /// SSE4.1, four inputs at a time.
    Sse41,
    /// AVX2, eight inputs at a time.
    Avx2,
    /// AVX-512F, sixteen inputs at a time.
    Avx512,
}

impl SimdLevel {
    /// Every level, lowest first.
    ///
    /// ```
    /// assert_eq!(b3accel::cpu::SimdLevel::ALL.len(), 4);
    /// ```
    pub const ALL: [SimdLevel; 4] = [SimdLevel::Portable, SimdLevel::Sse41, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The best level this CPU supports.
    ///
    /// ```
    /// println!("{}", b3accel::cpu::SimdLevel::detect());
    /// ```
    pub fn detect() -> SimdLevel {
        *SimdLevel::ALL.iter().rev().find(|l| l.is_supported()).unwrap_or(&SimdLevel::Portable)
    }

    /// Whether this CPU can run this level.
    ///
    /// ```
    /// assert!(b3accel::cpu::SimdLevel::Portable.is_supported());
    /// ```
    pub fn is_supported(self) -> bool {
        match self {
            SimdLevel::Portable => true,
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            SimdLevel::Sse41 => std::is_x86_feature_detected!("sse4.1"),
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            SimdLevel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            SimdLevel::Avx512 => std::is_x86_feature_detected!("avx512f"),
            #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
            _ => false,
        }
    }

    /// Inputs hashed side by side.
    ///
    /// ```
    /// assert_eq!(b3accel::cpu::SimdLevel::Avx2.lanes(), 8);
    /// ```
    pub fn lanes(self) -> usize {
        match self {
            SimdLevel::Portable => 1,
            SimdLevel::Sse41 => 4,
            SimdLevel::Avx2 => 8,
            SimdLevel::Avx512 => 16,
        }
    }

    /// Every level this CPU supports, lowest first.
    ///
    /// ```
    /// assert_eq!(b3accel::cpu::SimdLevel::supported()[0], b3accel::cpu::SimdLevel::Portable);
    /// ```
    pub fn supported() -> Vec<SimdLevel> {
        SimdLevel::ALL.into_iter().filter(|l| l.is_supported()).collect()
    }

    /// The level a name spells (`portable`, `sse41`, `avx2`, `avx512`, any case), if any. The
    /// CPU backend's `FromStr` turns `None` into an error that lists the names.
    pub(crate) fn from_name(s: &str) -> Option<SimdLevel> {
        SimdLevel::ALL.into_iter().find(|l| l.to_string().eq_ignore_ascii_case(s.trim()))
    }
}

/// The CPU backend's kernel: the crate's own, at an instruction-set level, or upstream
/// `blake3`'s.
///
/// The crate's own SIMD kernels are for x86 and x86-64. Elsewhere (aarch64's NEON, ...) the
/// default is [`Kernel::Upstream`], so that the CPU backend runs the SIMD that upstream has
/// there instead of the crate's portable code. On x86 `B3ACCEL_CPU=upstream` chooses it, which
/// is how the tests run that path on every input they try.
///
/// ```
/// use b3accel::cpu::{Kernel, SimdLevel};
/// assert!(Kernel::detect().is_supported());
/// assert!(Kernel::supported().contains(&Kernel::Upstream));
/// assert_eq!("upstream".parse::<Kernel>().unwrap(), Kernel::Upstream);
/// assert_eq!("AVX2".parse::<Kernel>().unwrap(), Kernel::Lanes(SimdLevel::Avx2));
/// assert_eq!(Kernel::Upstream.level(), SimdLevel::Portable);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The crate's own kernels at this level: SIMD lanes across chunks, nodes or messages, and
    /// the row form for single blocks.
    Lanes(SimdLevel),
    /// Runs of full chunks (`Backend::chunk_subtrees`, so every input of more than one chunk)
    /// hashed by upstream `blake3` through its `hazmat` API, on whatever SIMD upstream has for
    /// this CPU; messages of several chunks in `hash_many` go the same way. Work made of single
    /// blocks (Merkle parents, `hash_blocks`, messages of one chunk or less), for which upstream
    /// has no SIMD across inputs, runs on the crate's portable code. Key and flag combinations
    /// that `hazmat` cannot express (none of BLAKE3's three modes) run on the portable code too.
    Upstream,
}

impl Kernel {
    /// Every kernel: each level's, lowest first, then upstream's.
    ///
    /// ```
    /// assert_eq!(b3accel::cpu::Kernel::ALL.len(), 5);
    /// ```
    pub const ALL: [Kernel; 5] = [
        Kernel::Lanes(SimdLevel::Portable),
        Kernel::Lanes(SimdLevel::Sse41),
        Kernel::Lanes(SimdLevel::Avx2),
        Kernel::Lanes(SimdLevel::Avx512),
        Kernel::Upstream,
    ];

    /// The default for this CPU: the crate's own kernels at the best level it supports where
    /// that is SIMD, upstream's where the crate has only portable code for it.
    ///
    /// ```
    /// let k = b3accel::cpu::Kernel::detect();
    /// if cfg!(target_arch = "aarch64") {
    ///     assert_eq!(k, b3accel::cpu::Kernel::Upstream);
    /// }
    /// ```
    pub fn detect() -> Kernel {
        match SimdLevel::detect() {
            SimdLevel::Portable => Kernel::Upstream,
            level => Kernel::Lanes(level),
        }
    }

    /// Whether this CPU can run this kernel (upstream's runs everywhere).
    ///
    /// ```
    /// assert!(b3accel::cpu::Kernel::Upstream.is_supported());
    /// ```
    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Lanes(level) => level.is_supported(),
            Kernel::Upstream => true,
        }
    }

    /// Every kernel this CPU can run, in the order of [`Kernel::ALL`].
    ///
    /// ```
    /// let all = b3accel::cpu::Kernel::supported();
    /// assert_eq!(all.first(), Some(&b3accel::cpu::Kernel::Lanes(b3accel::cpu::SimdLevel::Portable)));
    /// ```
    pub fn supported() -> Vec<Kernel> {
        Kernel::ALL.into_iter().filter(|k| k.is_supported()).collect()
    }

    /// The instruction set of the crate's own code under this kernel: the level itself, or
    /// [`SimdLevel::Portable`] for upstream's (the work it does not hand to upstream).
    ///
    /// ```
    /// use b3accel::cpu::{Kernel, SimdLevel};
    /// assert_eq!(Kernel::Lanes(SimdLevel::Sse41).level(), SimdLevel::Sse41);
    /// ```
    pub fn level(self) -> SimdLevel {
        match self {
            Kernel::Lanes(level) => level,
            Kernel::Upstream => SimdLevel::Portable,
        }
    }

    /// The kernel a name spells (a level's name, or `upstream`; any case), if any. The CPU
    /// backend's `FromStr` turns `None` into an error that lists the names.
    pub(crate) fn from_name(s: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.to_string().eq_ignore_ascii_case(s.trim()))
    }

    /// What `B3ACCEL_CPU` chooses on this CPU: a level caps the crate's own kernels at the best
    /// level the CPU supports, `upstream` is upstream's, and anything else (unset, empty,
    /// unknown) leaves [`Kernel::detect`]'s choice.
    fn from_env_capped() -> Kernel {
        match env_value().as_deref().and_then(Kernel::from_name) {
            Some(Kernel::Lanes(cap)) => Kernel::Lanes(cap.min(SimdLevel::detect())),
            Some(Kernel::Upstream) => Kernel::Upstream,
            None => Kernel::detect(),
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Lanes(level) => level.fmt(f),
            Kernel::Upstream => f.write_str("upstream"),
        }
    }
}

/// `B3ACCEL_CPU`'s value, trimmed, where it is set and not blank (a value that is not UTF-8
/// comes with U+FFFD in place of the bad bytes, so that it is reported as unknown).
pub(crate) fn env_value() -> Option<String> {
    let value = std::env::var_os(CPU_LEVEL_ENV)?;
    let value = value.to_string_lossy().trim().to_string();
    (!value.is_empty()).then_some(value)
}

impl fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SimdLevel::Portable => "portable",
            SimdLevel::Sse41 => "sse41",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        })
    }
}

/// The single-block row form's instruction set: one block's four state rows side by side in
/// 128-bit registers (`core::rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rows {
    /// No SIMD rows: the portable compression.
    Portable,
    /// SSE4.1 rows.
    Sse41,
    /// SSE4.1 arithmetic in VEX encoding, message words permuted in 256-bit registers.
    Avx2,
    /// AVX-512F, VL and BW: one-instruction rotations and masked byte loads.
    Avx512,
}

/// The process's choice, cached: 0 until made, then the kernel's index in [`Kernel::ALL`] + 1 in
/// the low nibble and the rows' index + 1 in the high nibble.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

const ROWS: [Rows; 4] = [Rows::Portable, Rows::Sse41, Rows::Avx2, Rows::Avx512];

/// The row form that a level allows.
fn rows_for(level: SimdLevel) -> Rows {
    match level {
        SimdLevel::Portable => Rows::Portable,
        SimdLevel::Sse41 => Rows::Sse41,
        SimdLevel::Avx2 => Rows::Avx2,
        SimdLevel::Avx512 if avx512_rows_supported() => Rows::Avx512,
        SimdLevel::Avx512 => Rows::Avx2,
    }
}

/// Makes the choice: the kernel of [`Kernel::detect`], or what `B3ACCEL_CPU` asks for (see
/// [`Kernel`]), and the row form its level allows. Under upstream's kernel the crate's own code
/// is portable, rows included: on x86 `B3ACCEL_CPU=upstream` runs what a CPU without the
/// crate's SIMD runs.
#[cold]
fn choose() -> u8 {
    let kernel = Kernel::from_env_capped();
    let rows = rows_for(kernel.level());
    let kernel_index = Kernel::ALL.iter().position(|&k| k == kernel).unwrap_or(0) as u8;
    let rows_index = ROWS.iter().position(|&r| r == rows).unwrap_or(0) as u8;
    let packed = (kernel_index + 1) | ((rows_index + 1) << 4);
    CHOSEN.store(packed, Ordering::Relaxed);
    packed
}

#[inline(always)]
fn chosen() -> u8 {
    match CHOSEN.load(Ordering::Relaxed) {
        0 => choose(),
        packed => packed,
    }
}

/// The process's kernel: [`Kernel::detect`]'s, or what `B3ACCEL_CPU` asks for.
#[inline]
pub(crate) fn kernel() -> Kernel {
    Kernel::ALL[((chosen() & 0xF) - 1) as usize]
}

/// The process's row form (see [`Rows`]): x86's only; elsewhere it is always portable and nothing
/// reads it.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
#[inline(always)]
pub(crate) fn rows() -> Rows {
    ROWS[((chosen() >> 4) - 1) as usize]
}

/// Whether the CPU has what the AVX-512 row form needs: F, VL and BW (masked byte loads).
pub(crate) fn avx512_rows_supported() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        false
    }
}

/// Whether four inputs side by side on 128-bit rows run faster as two chains of 256-bit
/// instructions than as one chain of 512-bit ones: on AMD's CPUs, which execute a 512-bit
/// instruction as two 256-bit halves; Intel's run the 512-bit chain faster (docs/performance.md).
/// x86 only (false elsewhere, where nothing reads it).
pub(crate) fn prefers_256_bit_rows() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        let leaf = cpuid(0);
        let mut vendor = [0u8; 12];
        for (bytes, word) in vendor.chunks_exact_mut(4).zip([leaf.ebx, leaf.edx, leaf.ecx]) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        &vendor == b"AuthenticAMD"
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        false
    }
}

/// One core's L2 cache in bytes, as CPUID leaf 0x8000_0006 gives it (AMD's and Intel's CPUs both
/// fill in its size field): `None` where there is no such leaf, where the size is implausible
/// (a hypervisor may report 0), and off x86.
pub(crate) fn l2_cache_bytes() -> Option<usize> {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if cpuid(0x8000_0000).eax < 0x8000_0006 {
            return None;
        }
        let kib = (cpuid(0x8000_0006).ecx >> 16) as usize;
        (64..=64 * 1024).contains(&kib).then_some(kib << 10)
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        None
    }
}

/// CPUID `leaf` (sub-leaf 0).
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn cpuid(leaf: u32) -> CpuidResult {
    // CPUID exists on every x86-64 CPU and on every CPU Rust's 32-bit x86 targets run on (i586
    // and up; `__cpuid` is a safe function from Rust 1.94 on). A leaf above the CPU's highest
    // reports another leaf's values, never a fault: callers check the highest first where it
    // matters.
    #[allow(unused_unsafe)]
    // SAFETY: CPUID has no side effects.
    unsafe {
        __cpuid(leaf)
    }
}

/// The threads this process may run at once (cgroup quota and affinity), read once: the
/// standard library reads files under /proc and /sys on each call, which cost per-call paths
/// more than the small hashes they serve.
pub(crate) fn machine_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `Some(f(args))` of the row form the process chose (`core::rows`: module `sse41`, `avx2` or
/// `avx512`; see [`rows`]), `None` where that is the portable code. `f`'s
/// result type `T` is written out (`on_rows!(f(args) -> T)`): off x86 the `None` has nothing
/// else to take it from.
macro_rules! on_rows {
    ($f:ident($($arg:expr),*) -> $t:ty) => {{
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `rows` chose each form only where the CPU has its instruction
        // sets.
        let done: Option<$t> = unsafe {
            match rows() {
                Rows::Avx512 => Some(simd_rows::avx512::$f($($arg),*)),
                Rows::Avx2 => Some(simd_rows::avx2::$f($($arg),*)),
                Rows::Sse41 => Some(simd_rows::sse41::$f($($arg),*)),
                Rows::Portable => None,
            }
        };
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        let done: Option<$t> = None;
        done
    }};
}

/// The full compression: the 16-word state after the rounds and the feed-forward. Words 0..8 are
/// the output chaining value; all 16 are one block of root (XOF) output.
///
/// Uses the row-parallel form the process chose (AVX-512VL, AVX2 or SSE4.1; see
/// [`Rows`]): the tree's few compressions and every input of one chunk or
/// less go through here; the portable form otherwise.
#[inline]
pub(crate) fn compress(cv: &[u32; 8], block: &[u32; 16], block_len: u32, counter: u64, flags: u32) -> [u32; 16] {
    if let Some(out) = on_rows!(compress(cv, block, block_len, counter, flags) -> [u32; 16]) {
        return out;
    }
    compress_portable(cv, block, block_len, counter, flags)
}

/// Compresses consecutive full blocks (`blocks.len()` a multiple of 64) into `cv`, all with
/// `counter` and `flags`, the first also with `first_flags`: a chunk's blocks but its last. On
/// SIMD rows the CV stays in registers from block to block.
#[inline]
pub(crate) fn compress_blocks(cv: &mut [u32; 8], blocks: &[u8], counter: u64, flags: u32, first_flags: u32) {
    debug_assert!(blocks.len().is_multiple_of(BLOCK_LEN));
    if blocks.is_empty() || on_rows!(blocks(cv, blocks, counter, flags, first_flags) -> ()).is_some() {
        return;
    }
    let mut f = flags | first_flags;
    for block in blocks.chunks_exact(BLOCK_LEN) {
        let out = compress_bytes(cv, block, counter, f);
        *cv = core::array::from_fn(|i| out[i]);
        f = flags;
    }
}

/// The end of one chunk: the whole blocks `body` compressed into `cv` in turn (the first with
/// `first_flags` added, as in [`compress_blocks`]), then the last block `last` (0 to 64 bytes,
/// zero-padded) with `last_flags`, all its flags; its first 8 output words (a CV, or with ROOT
/// the root hash). On SIMD rows one call keeps the CV in registers throughout.
#[inline]
pub(crate) fn compress_chunk_end(
    cv: &[u32; 8],
    body: &[u8],
    counter: u64,
    flags: u32,
    first_flags: u32,
    last: &[u8],
    last_flags: u32,
) -> [u32; 8] {
    if let Some(out) = on_rows!(chunk_end(cv, body, counter, flags, first_flags, last, last_flags) -> [u32; 8]) {
        return out;
    }
    let mut cv = *cv;
    compress_blocks(&mut cv, body, counter, flags, first_flags);
    let out = compress_bytes(&cv, last, counter, last_flags);
    core::array::from_fn(|i| out[i])
}

/// The chaining values of the last two chunks of an input of 1025 to 2047 bytes, or of a
/// subtree that ends the same way: the whole chunk `chunk` (index `counter`) and the partial one
/// after it, `tail` (1 to 1023 bytes), as `[chunk's CV, tail's CV]`, hashed side by side on
/// two-input rows where the process's row form has them (AVX-512VL or AVX2); `None` elsewhere
/// (SSE4.1, portable), where the caller hashes them apart.
#[inline]
pub(crate) fn chunk_and_tail_cvs(
    key: &[u32; 8],
    chunk: &[u8; CHUNK_LEN],
    tail: &[u8],
    counter: u64,
    flags: u32,
) -> Option<[Cv; 2]> {
    assert!((1..CHUNK_LEN).contains(&tail.len()), "a partial chunk of {} bytes", tail.len());
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        // SAFETY: `rows` chose each form only where the CPU has its instruction
        // sets; the lengths are as asserted.
        match rows() {
            Rows::Avx512 => return Some(unsafe { simd_rows::chunk_and_tail_avx512(key, chunk, tail, counter, flags) }),
            Rows::Avx2 => return Some(unsafe { simd_rows::chunk_and_tail_avx2(key, chunk, tail, counter, flags) }),
            Rows::Sse41 | Rows::Portable => {}
        }
    }
    // Off x86 there are no two-input rows.
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let _ = (key, chunk, counter, flags);
    None
}

/// The compression of a block given as bytes: `block.len()` (at most 64) is the block length
/// and the block is zero-padded. Reads the bytes where they lie when the CPU can (AVX-512), and
/// otherwise pads a copy.
#[inline]
pub(crate) fn compress_bytes(cv: &[u32; 8], block: &[u8], counter: u64, flags: u32) -> [u32; 16] {
    debug_assert!(block.len() <= BLOCK_LEN);
    if let Some(out) = on_rows!(bytes(cv, block, counter, flags) -> [u32; 16]) {
        return out;
    }
    let mut padded = [0u8; BLOCK_LEN];
    padded[..block.len()].copy_from_slice(block);
    compress_portable(cv, &block_words(&padded), block.len() as u32, counter, flags)
}

/// The compression reduced to the chaining value it produces (the first 8 output words).
#[inline]
pub(crate) fn compress_cv(cv: &[u32; 8], block: &[u32; 16], block_len: u32, counter: u64, flags: u32) -> [u32; 8] {
    let v = compress(cv, block, block_len, counter, flags);
    core::array::from_fn(|i| v[i])
}

/// The chaining value of a parent node whose children have chaining values `left` and `right`.
#[inline]
pub(crate) fn parent_cv(left: &Cv, right: &Cv, key: &[u32; 8], flags: u32) -> Cv {
    let flags = flags | flags::PARENT;
    if let Some(out) = on_rows!(parent(key, left, right, flags) -> [u32; 16]) {
        return words_to_cv(&core::array::from_fn(|i| out[i]));
    }
    let mut block = [0u8; BLOCK_LEN];
    block[..32].copy_from_slice(left);
    block[32..].copy_from_slice(right);
    words_to_cv(&compress_cv(key, &block_words(&block), BLOCK_LEN as u32, 0, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_supported_and_consistent() {
        let kernel = kernel();
        assert!(kernel.is_supported());
        assert!(kernel.level() <= SimdLevel::detect());
        let expected_rows = match kernel.level() {
            SimdLevel::Portable => Rows::Portable,
            SimdLevel::Sse41 => Rows::Sse41,
            SimdLevel::Avx2 => Rows::Avx2,
            SimdLevel::Avx512 => {
                if avx512_rows_supported() {
                    Rows::Avx512
                } else {
                    Rows::Avx2
                }
            }
        };
        assert_eq!(rows(), expected_rows);
        // What the environment asks for, where it asks for anything known.
        match env_value().as_deref().and_then(Kernel::from_name) {
            Some(Kernel::Upstream) => assert_eq!(kernel, Kernel::Upstream),
            Some(Kernel::Lanes(cap)) => assert_eq!(kernel, Kernel::Lanes(cap.min(SimdLevel::detect()))),
            None => assert_eq!(kernel, Kernel::detect()),
        }
        // Cached: asking again gives the same answer.
        assert_eq!((kernel, rows()), (super::kernel(), super::rows()));
    }

    #[test]
    fn names_round_trip() {
        for l in SimdLevel::ALL {
            assert_eq!(SimdLevel::from_name(&l.to_string().to_uppercase()), Some(l));
        }
        assert_eq!(SimdLevel::from_name("upstream"), None);
        for k in Kernel::ALL {
            assert_eq!(Kernel::from_name(&format!(" {} ", k.to_string().to_uppercase())), Some(k));
        }
        assert_eq!(Kernel::from_name("avx3"), None);
        assert_eq!(Kernel::from_name(""), None);
    }

    #[test]
    fn the_default_kernel_is_simd_wherever_the_cpu_has_any() {
        let detected = Kernel::detect();
        assert!(detected.is_supported());
        match SimdLevel::detect() {
            SimdLevel::Portable => assert_eq!(detected, Kernel::Upstream),
            best => assert_eq!(detected, Kernel::Lanes(best)),
        }
        assert_eq!(Kernel::supported().last(), Some(&Kernel::Upstream));
        assert!(Kernel::supported().iter().all(|k| k.is_supported()));
    }

    /// CPUID's L2 size against the one Linux gives for CPU 0 (also from CPUID, through the
    /// kernel's own decoding: Intel's leaf 4 or AMD's 0x8000_001D), where both have one.
    #[test]
    fn the_l2_size_agrees_with_linux() {
        let linux = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index2/size").ok();
        let linux =
            linux.as_deref().map(str::trim).and_then(|s| s.strip_suffix('K')).and_then(|k| k.parse::<usize>().ok());
        match (l2_cache_bytes(), linux) {
            (Some(ours), Some(kib)) => assert_eq!(ours, kib << 10),
            (ours, linux) => eprintln!("L2 size not compared: CPUID {ours:?}, Linux {linux:?} KiB"),
        }
    }
}
