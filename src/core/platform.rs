//! The instruction set, chosen once per process: what the CPU supports, capped by `B3ACCEL_CPU`.
//!
//! As upstream's `platform.rs` does, the choice is made once and every primitive matches on it:
//! the single-block compressions of the row form ([`Rows`], used by the tree's few compressions and
//! every input of one chunk or less) read a cached value instead of detecting CPU features on each
//! call. The CPU backend's lane kernels take their [`SimdLevel`] from here by default too.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that caps the instruction set, e.g. `B3ACCEL_CPU=sse41`.
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

/// The process's choice, cached: 0 until made, then the level's index + 1 in the low nibble and
/// the rows' index + 1 in the high nibble.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

const LEVELS: [SimdLevel; 4] = SimdLevel::ALL;
const ROWS: [Rows; 4] = [Rows::Portable, Rows::Sse41, Rows::Avx2, Rows::Avx512];

/// Makes the choice: the best level the CPU has, capped by `B3ACCEL_CPU` where that names a
/// lower one (an unknown name caps nothing here; `CpuBackend::from_env` reports it), and the
/// row form that level allows.
#[cold]
fn choose() -> u8 {
    let detected = SimdLevel::detect();
    let cap = std::env::var(CPU_LEVEL_ENV).ok().and_then(|v| SimdLevel::from_name(&v));
    let level = cap.map_or(detected, |c| c.min(detected));
    let rows = match level {
        SimdLevel::Portable => Rows::Portable,
        SimdLevel::Sse41 => Rows::Sse41,
        SimdLevel::Avx2 => Rows::Avx2,
        SimdLevel::Avx512 if avx512_rows_supported() => Rows::Avx512,
        SimdLevel::Avx512 => Rows::Avx2,
    };
    let level_index = LEVELS.iter().position(|&l| l == level).unwrap_or(0) as u8;
    let rows_index = ROWS.iter().position(|&r| r == rows).unwrap_or(0) as u8;
    let packed = (level_index + 1) | ((rows_index + 1) << 4);
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

/// The process's instruction-set level: the CPU's best, capped by `B3ACCEL_CPU`.
#[inline]
pub(crate) fn level() -> SimdLevel {
    LEVELS[((chosen() & 0xF) - 1) as usize]
}

/// The process's row form (see [`Rows`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_supported_and_consistent() {
        let level = level();
        assert!(level.is_supported());
        assert!(level <= SimdLevel::detect());
        let expected_rows = match level {
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
        // Cached: asking again gives the same answer.
        assert_eq!((level, rows()), (super::level(), super::rows()));
    }

    #[test]
    fn names_round_trip() {
        for l in SimdLevel::ALL {
            assert_eq!(SimdLevel::from_name(&l.to_string().to_uppercase()), Some(l));
        }
        assert_eq!(SimdLevel::from_name("upstream"), None);
    }
}
