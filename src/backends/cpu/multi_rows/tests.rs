//! The rows of several inputs against one input at a time, and what the other tests here share.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

use super::two_inputs::*;
use super::vector::*;
use crate::core::rows::*;

/// Whether this CPU runs the AVX-512VL rows and the AVX2 rows; each one it lacks is
/// reported missing from `test`.
pub(super) fn row_sets(test: &str) -> (bool, bool) {
    let vl = std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx512f");
    let avx2 = std::is_x86_feature_detected!("avx2");
    if !vl {
        crate::core::expect::missing("avx512vl", &format!("{test} on AVX-512VL rows"));
    }
    if !avx2 {
        crate::core::expect::missing("simd:avx2", &format!("{test} on AVX2 rows"));
    }
    (vl, avx2)
}

/// The AVX2 templates of the row form's rounds (`rounds_avx2_one_chain` on one chain of two
/// inputs, `rounds_avx2_two_chains` on two chains) give the rows the compiled generic rounds
/// give, for rows and blocks of varied bits in every word.
#[cfg(target_arch = "x86_64")]
#[test]
fn row_templates_match_compiled_rounds() {
    /// 64 random states and blocks through both, on one chain and on two.
    #[target_feature(enable = "avx2")]
    unsafe fn check() {
        let mut x = 0x2545_F491u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut rows = || -> [TwoRowsAvx2; 4] {
            let w: [[u32; 8]; 4] = core::array::from_fn(|_| core::array::from_fn(|_| next()));
            // SAFETY: AVX2 (this function's).
            core::array::from_fn(|i| unsafe { TwoRowsAvx2::load(&w[i]) })
        };
        let words = |v: __m256i| -> [u32; 8] {
            let mut w = [0u32; 8];
            // SAFETY: AVX; 32 bytes written into `w`.
            unsafe { _mm256_storeu_si256(w.as_mut_ptr() as *mut __m256i, v) };
            w
        };
        for _ in 0..64 {
            let (state, block) = (rows().map(MultiRow), rows().map(MultiRow));
            let (mut want, mut got) = (state, state);
            // SAFETY: AVX2.
            unsafe {
                all_rounds(&mut want, block);
                rounds_avx2_one_chain(&mut got, block);
            }
            assert_eq!(got.map(|r| words(r.0 .0)), want.map(|r| words(r.0 .0)), "one chain");

            let (other, other_block) = (rows(), rows());
            let pair = |a: [MultiRow<TwoRowsAvx2>; 4], b: [TwoRowsAvx2; 4]| -> [MultiRow<TwoChains<TwoRowsAvx2>>; 4] {
                core::array::from_fn(|i| MultiRow(TwoChains([a[i].0, b[i]])))
            };
            let (state, block) = (pair(state, other), pair(block, other_block));
            let (mut want, mut got) = (state, state);
            // SAFETY: AVX2.
            unsafe {
                all_rounds(&mut want, block);
                rounds_avx2_two_chains(&mut got, block);
            }
            let all = |r: [MultiRow<TwoChains<TwoRowsAvx2>>; 4]| r.map(|r| r.0 .0.map(|h| words(h.0)));
            assert_eq!(all(got), all(want), "two chains");
        }
    }
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { check() };
    } else {
        crate::core::expect::missing("simd:avx2", "row_templates_match_compiled_rounds");
    }
}
