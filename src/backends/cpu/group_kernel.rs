//! The kernels a group of equal-length inputs can be hashed with on this CPU (lanes, rows of
//! several inputs, one input at a time), as `CpuBackend::group_kernel` chooses among them.

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use super::lanes::{avx2, avx512, sse41};
use super::lanes::{hash_groups, hash_rows, Job};
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use super::multi_rows::groups;
use crate::core::compress::Cv;

/// The rows of several inputs (`multi_rows/`) a CPU runs, for small groups and the top levels of
/// small trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MultiRows {
    /// None: no AVX2, or not x86.
    None,
    /// AVX2's 256-bit rows, on CPUs without AVX-512VL.
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    Avx2,
    /// AVX-512VL's: four inputs on one chain of 512-bit rows, or with `two_chains` on two chains
    /// of 256-bit rows (`platform::prefers_256_bit_rows`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    Avx512Vl { two_chains: bool },
}

impl MultiRows {
    /// Whether these are AVX-512VL's rows.
    #[inline(always)]
    pub(super) fn is_avx512vl(self) -> bool {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        return matches!(self, MultiRows::Avx512Vl { .. });
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        false
    }
}

/// A kernel that hashes a group of equal-length inputs, as [`CpuBackend::group_kernel`] chooses
/// it. No x86 variant exists off x86.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GroupKernel {
    /// Rows of several inputs on AVX-512VL (`groups::hash_on_rows_avx512vl`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    RowsAvx512Vl { two_chains: bool },
    /// Rows of several inputs on AVX2 (`groups::hash_on_rows_avx2`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    RowsAvx2,
    /// The 16-lane kernel (`avx512::hash_many`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    LanesAvx512,
    /// The 8-lane kernel in EVEX encoding, with AVX-512VL's rotations (`avx2::hash_many_evex`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    LanesAvx2Evex,
    /// The 8-lane kernel (`avx2::hash_many`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    LanesAvx2,
    /// The 4-lane kernel (`sse41::hash_many`).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    LanesSse41,
    /// One input at a time on rows (`lanes::hash_rows`).
    Rows,
    /// The portable code, one input per (scalar) lane.
    Portable,
}

impl GroupKernel {
    /// Whether this kernel runs rows of several inputs.
    #[inline(always)]
    pub(super) fn is_multi_rows(self) -> bool {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        return matches!(self, GroupKernel::RowsAvx512Vl { .. } | GroupKernel::RowsAvx2);
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        false
    }

    /// Hashes the `out.len()` inputs of `blocks` blocks each at `stride` bytes apart.
    ///
    /// # Safety
    /// The CPU must support the kernel's instruction set.
    #[inline(always)]
    pub(super) unsafe fn hash(self, input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
        // SAFETY: the instruction sets as the caller guarantees; every kernel asserts that the
        // inputs lie inside `input`.
        unsafe {
            match self {
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::RowsAvx512Vl { two_chains } => {
                    groups::hash_on_rows_avx512vl(input, stride, blocks, job, out, two_chains)
                }
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::RowsAvx2 => groups::hash_on_rows_avx2(input, stride, blocks, job, out),
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::LanesAvx512 => avx512::hash_many(input, stride, blocks, job, out),
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::LanesAvx2Evex => avx2::hash_many_evex(input, stride, blocks, job, out),
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::LanesAvx2 => avx2::hash_many(input, stride, blocks, job, out),
                #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
                GroupKernel::LanesSse41 => sse41::hash_many(input, stride, blocks, job, out),
                GroupKernel::Rows => hash_rows(input, stride, blocks, job, out),
                GroupKernel::Portable => hash_groups::<u32>(input, stride, blocks, job, out),
            }
        }
    }
}
