//! The CPU backend's type: how one is made (its kernel and rows), and how it hashes runs of
//! full chunks: leaves of SIMD groups, the parent levels above them, the splits across cores.

use super::group_kernel::{GroupKernel, MultiRows};
use super::lanes::{prefetch_for, Job, Prefetch};
use super::model;
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use super::multi_rows::{groups, small_tree};
use super::threads::use_threads;
use crate::core::compress::Cv;
use crate::core::constants::{flags, BLOCK_LEN, CHUNK_LEN};
use crate::core::platform::{self, parent_cv, Kernel, SimdLevel, CPU_LEVEL_ENV};
use crate::tree::{BackendKind, Device, DeviceInfo, DeviceKind, Error, Result, MAX_SUBTREE};

/// Chunks in a leaf on the thread pool: each is one task. Larger leaves leave threads idle at the
/// end while the last ones finish, smaller ones cost more in tasks (docs/performance.md).
pub(super) const POOL_LEAF_CHUNKS: usize = 64;
/// The same without the pool: larger, so that the last parent levels of a leaf, too narrow for
/// whole SIMD groups, come once per MiB.
pub(super) const SERIAL_LEAF_CHUNKS: usize = 1024;
/// CVs that a subtree reduced wide hands up: the widest SIMD group's lanes (two AVX2 groups,
/// four SSE4.1 ones), so that the parent levels above its leaves are whole groups.
pub(super) const WIDE: usize = 16;
/// Subtrees on the pool smaller than this are reduced to one CV per half, not `WIDE`: with a
/// leaf or two per thread, the reduction at the top is the critical path, and the scalar parent
/// at each split ends sooner than a pass of `WIDE` parents (docs/performance.md).
pub(super) const POOL_WIDE_MIN_CHUNKS: usize = 4096;

std::thread_local! {
    /// The tree levels of a leaf: `SERIAL_LEAF_CHUNKS * 3 / 2` CVs at most, per thread.
    static LEVELS: std::cell::RefCell<Vec<Cv>> = const { std::cell::RefCell::new(Vec::new()) };
}
/// A run of chunks whose remainder after its first subtree is smaller than this is not split
/// across cores.
pub(super) const PARALLEL_GRAIN_BYTES: usize = 64 * 1024;

/// The rayon + SIMD CPU backend, on one [`Kernel`]: the crate's own at a [`SimdLevel`], or
/// upstream's.
///
/// ```
/// use b3accel::cpu::{CpuBackend, Kernel, SimdLevel};
/// use b3accel::Backend;
/// let portable = CpuBackend::with_level(SimdLevel::Portable).unwrap();
/// assert_eq!(portable.level(), SimdLevel::Portable);
/// assert_eq!(portable.info().device, b3accel::Device::Cpu);
/// let upstream = CpuBackend::with_kernel(Kernel::Upstream).unwrap();
/// let data = vec![9u8; 100_000];
/// let mut out = [0u8; 32];
/// b3accel::xof_reader_with(&upstream, &b3accel::Mode::Hash, &data).unwrap().fill(&mut out);
/// assert_eq!(out, *blake3::hash(&data).as_bytes());
/// ```
#[derive(Clone, Debug)]
pub struct CpuBackend {
    pub(super) kernel: Kernel,
    /// `kernel.level()`: the instruction set of the crate's own code here.
    level: SimdLevel,
    /// The rows of several inputs (`multi_rows/`) that small groups and the top of small trees
    /// run on here. Always `None`, and unread, off x86.
    #[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
    rows: MultiRows,
    pub(super) info: DeviceInfo,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// The process's kernel: the CPU's best ([`Kernel::detect`]), or what `B3ACCEL_CPU` asks
    /// for (a level caps the crate's own kernels, `upstream` chooses upstream's). An unknown
    /// value, or a level above what the CPU supports, is not an error here (the CPU's best
    /// runs); use [`CpuBackend::from_env`] to have it reported.
    ///
    /// ```
    /// let cpu = b3accel::cpu::CpuBackend::new();
    /// assert!(cpu.kernel().is_supported());
    /// ```
    pub fn new() -> CpuBackend {
        CpuBackend::build(platform::kernel())
    }

    /// The kernel `B3ACCEL_CPU` names ([`Kernel::detect`]'s where it is unset or blank); an
    /// unknown name ([`Error::InvalidInput`]) or a level this CPU cannot run
    /// ([`Error::Unavailable`]) is an error.
    ///
    /// ```
    /// match b3accel::cpu::CpuBackend::from_env() {
    ///     Ok(cpu) => assert!(cpu.kernel().is_supported()),
    ///     Err(e) => eprintln!("B3ACCEL_CPU is wrong: {e}"),
    /// }
    /// ```
    pub fn from_env() -> Result<CpuBackend> {
        let Some(value) = platform::env_value() else {
            return Ok(CpuBackend::build(Kernel::detect()));
        };
        let kernel: Kernel = value.parse().map_err(|e| Error::InvalidInput(format!("{CPU_LEVEL_ENV}: {e}")))?;
        CpuBackend::with_kernel(kernel).map_err(|e| match e {
            Error::Unavailable { device, reason } => {
                Error::Unavailable { device, reason: format!("{CPU_LEVEL_ENV}={value}: {reason}") }
            }
            other => other,
        })
    }

    /// The CPU backend on the crate's own kernels at a given level; an error if this CPU cannot
    /// run it. The same as `with_kernel(Kernel::Lanes(level))`.
    ///
    /// ```
    /// use b3accel::cpu::{CpuBackend, SimdLevel};
    /// for level in SimdLevel::supported() {
    ///     assert_eq!(CpuBackend::with_level(level).unwrap().level(), level);
    /// }
    /// ```
    pub fn with_level(level: SimdLevel) -> Result<CpuBackend> {
        CpuBackend::with_kernel(Kernel::Lanes(level))
    }

    /// The CPU backend on a given kernel; an error if this CPU cannot run it.
    ///
    /// ```
    /// use b3accel::cpu::{CpuBackend, Kernel};
    /// for kernel in Kernel::supported() {
    ///     assert_eq!(CpuBackend::with_kernel(kernel).unwrap().kernel(), kernel);
    /// }
    /// ```
    pub fn with_kernel(kernel: Kernel) -> Result<CpuBackend> {
        if !kernel.is_supported() {
            return Err(Error::Unavailable {
                device: Device::Cpu,
                reason: format!("this CPU does not support {kernel}"),
            });
        }
        Ok(CpuBackend::build(kernel))
    }

    pub(super) fn build(kernel: Kernel) -> CpuBackend {
        let level = kernel.level();
        let threads = std::thread::available_parallelism().map(|n| n.get() as u32).ok();
        let api = match kernel {
            Kernel::Lanes(level) => format!("{level} ({} lanes)", level.lanes()),
            Kernel::Upstream => "upstream blake3 (hazmat), portable single blocks".to_string(),
        };
        let info = DeviceInfo {
            device: Device::Cpu,
            backend: BackendKind::Cpu,
            kind: DeviceKind::Cpu,
            name: model::cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string()),
            api,
            driver: "rayon".to_string(),
            memory_bytes: None,
            compute_units: threads,
        };
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        let rows = if level == SimdLevel::Avx512 && std::is_x86_feature_detected!("avx512vl") {
            MultiRows::Avx512Vl { two_chains: platform::prefers_256_bit_rows() }
        } else if level >= SimdLevel::Avx2 {
            MultiRows::Avx2
        } else {
            MultiRows::None
        };
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        let rows = MultiRows::None;
        CpuBackend { kernel, level, rows, info }
    }

    /// The kernel in use.
    ///
    /// ```
    /// println!("{}", b3accel::cpu::CpuBackend::new().kernel());
    /// ```
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The instruction set of the crate's own code in use: the kernel's level
    /// ([`SimdLevel::Portable`] under [`Kernel::Upstream`]).
    ///
    /// ```
    /// println!("{}", b3accel::cpu::CpuBackend::new().level());
    /// ```
    pub fn level(&self) -> SimdLevel {
        self.level
    }

    /// Hashes `out.len()` inputs of `blocks` full blocks each, at `stride` bytes apart. Each
    /// instruction set takes its whole groups, plus a last partial group when more than half of
    /// it would be used (a padded 16-lane group costs less than an 8-lane, a 4-lane and a scalar
    /// pass); what is left goes to the next narrower one, on the kernel [`Self::group_kernel`]
    /// chooses. Under AVX-512VL everything left after the 8-lane kernel goes to the row form on
    /// several inputs (`groups::hash_on_rows_avx512vl`: four or three on 512-bit rows or two
    /// chains of 256-bit rows, two on 256-bit rows, one on 128-bit rows).
    pub(super) fn hash_lanes(&self, input: &[u8], stride: usize, blocks: usize, job: &Job, out: &mut [Cv]) {
        let mut done = 0;
        for level in SimdLevel::ALL.into_iter().rev().filter(|l| *l <= self.level) {
            let left = out.len() - done;
            if left == 0 {
                break;
            }
            let kernel = self.group_kernel(level, left, blocks);
            let n = level.lanes();
            let take = match left % n {
                // Rows of several inputs at the CPU's own level take the whole call.
                _ if level == self.level && kernel.is_multi_rows() => left,
                0 => left,
                r if level == SimdLevel::Portable || 2 * r > n || (n == 4 && (r >= 2 || self.rows.is_avx512vl())) => {
                    left
                }
                r => left - r,
            };
            if take == 0 {
                continue;
            }
            let job = &job.starting_at(done);
            let (input, out) = (&input[done * stride..], &mut out[done..done + take]);
            // SAFETY: `group_kernel` names only kernels of `level <= self.level` or of `self.rows`,
            // which `build` found this CPU supports; the kernels assert that the inputs lie
            // inside `input`.
            unsafe { kernel.hash(input, stride, blocks, job, out) };
            done += take;
        }
    }

    /// The kernel for `inputs` inputs of `blocks` blocks each at SIMD `level`, the one place
    /// where the CPU's kernel is chosen by instruction set and group size. At the CPU's own level
    /// (the whole call), small groups go to rows of several inputs: four or fewer under AVX2,
    /// and under AVX-512VL also five to eight one-block inputs (the 8-parent level of 16 chunks,
    /// `groups::avx512vl_rows_take` says why). Below it, each level's lane kernel, but under
    /// AVX-512VL or AVX2 the 4-lane level's groups go to the rows, which are much faster there.
    #[inline(always)]
    pub(super) fn group_kernel(&self, level: SimdLevel, inputs: usize, blocks: usize) -> GroupKernel {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        let top = level == self.level;
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        return match (self.rows, level) {
            (MultiRows::Avx512Vl { two_chains }, _) if top && groups::avx512vl_rows_take(inputs, blocks) => {
                GroupKernel::RowsAvx512Vl { two_chains }
            }
            (MultiRows::Avx2, _) if top && inputs <= 4 => GroupKernel::RowsAvx2,
            (_, SimdLevel::Avx512) => GroupKernel::LanesAvx512,
            (MultiRows::Avx512Vl { .. }, SimdLevel::Avx2) => GroupKernel::LanesAvx2Evex,
            (_, SimdLevel::Avx2) => GroupKernel::LanesAvx2,
            (MultiRows::Avx512Vl { two_chains }, SimdLevel::Sse41) => GroupKernel::RowsAvx512Vl { two_chains },
            (MultiRows::Avx2, SimdLevel::Sse41) => GroupKernel::RowsAvx2,
            (MultiRows::None, SimdLevel::Sse41) => GroupKernel::LanesSse41,
            (_, SimdLevel::Portable) if self.level > SimdLevel::Portable => GroupKernel::Rows,
            (_, SimdLevel::Portable) => GroupKernel::Portable,
        };
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        {
            let _ = (level, inputs, blocks);
            if self.level > SimdLevel::Portable {
                GroupKernel::Rows
            } else {
                GroupKernel::Portable
            }
        }
    }

    /// The top node's CV of a whole tree of 2, 4, 8 or 16 `nodes`, its levels on rows in
    /// registers (`small_tree::subtree_top_avx512vl`, `small_tree::subtree_top_avx2`), `top_flags`
    /// added to the top parent's flags; `None` where this CPU or kernel has no such rows, or for
    /// another count.
    #[inline(always)]
    pub(super) fn small_top(&self, nodes: &[Cv], key: &[u32; 8], flags: u32, top_flags: u32) -> Option<Cv> {
        if !matches!(nodes.len(), 2 | 4 | 8 | 16) {
            return None;
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        return match self.rows {
            MultiRows::Avx512Vl { two_chains } => {
                // SAFETY: `self.rows` names rows only where the CPU has their instruction sets.
                Some(unsafe { small_tree::subtree_top_avx512vl(nodes, key, flags, top_flags, two_chains) })
            }
            // SAFETY: as above.
            MultiRows::Avx2 => Some(unsafe { small_tree::subtree_top_avx2(nodes, key, flags, top_flags) }),
            MultiRows::None => None,
        };
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        {
            let _ = (key, flags, top_flags);
            None
        }
    }

    /// [`CpuBackend::small_top`] straight from 2, 4, 8 or 16 whole chunks starting at chunk
    /// `first_chunk` (a multiple of their number): the chunks, then every level above, with no
    /// level through memory (`small_tree::chunks_top_avx512vl`, `small_tree::chunks_top_avx2`).
    #[inline(always)]
    pub(super) fn small_chunks_top(
        &self,
        input: &[u8],
        first_chunk: u64,
        key: &[u32; 8],
        flags: u32,
        top_flags: u32,
    ) -> Option<Cv> {
        if !input.len().is_multiple_of(CHUNK_LEN) || !matches!(input.len() / CHUNK_LEN, 2 | 4 | 8 | 16) {
            return None;
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        return match self.rows {
            MultiRows::Avx512Vl { two_chains } => {
                // SAFETY: `self.rows` names rows only where the CPU has their instruction sets.
                Some(unsafe { small_tree::chunks_top_avx512vl(input, first_chunk, key, flags, top_flags, two_chains) })
            }
            // SAFETY: as above.
            MultiRows::Avx2 => Some(unsafe { small_tree::chunks_top_avx2(input, first_chunk, key, flags, top_flags) }),
            MultiRows::None => None,
        };
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        {
            let _ = (first_chunk, key, flags, top_flags);
            None
        }
    }

    /// The top node's CV of a run of one or two complete subtrees (`2^a` chunks, or `2^a + 2^b`
    /// with `a > b`) that is at most one leaf of `plan`, `top_flags` on the top parent: every
    /// chunk CV at once, then the levels through memory in whole SIMD groups and the last ones on
    /// rows in registers ([`CpuBackend::tree_top`]). Where a single call hashed each subtree
    /// apart, the levels of each would end in narrow groups, and its chunks too. `None` where
    /// this CPU has no rows for the top, or for another count.
    ///
    /// Two subtrees are reduced in one of two ways (`2^a + 2^b` chunks; the smaller subtree's
    /// nodes are its chunks):
    /// - *Evened*: the larger one's levels alone until it has as many nodes as the smaller one,
    ///   whose CVs move along behind them; the two are then one complete tree of `2^(b+1)`
    ///   nodes, which goes to `tree_top` whole. The fewest levels, but the first ones are the
    ///   larger subtree's alone, through memory.
    /// - *Apart*: each subtree's own `tree_top`, then their parent. Two chains of rows instead of
    ///   one, but the larger one's last levels are in registers.
    pub(super) fn leaf_top(
        &self,
        input: &[u8],
        first_chunk: u64,
        key: &[u32; 8],
        flags: u32,
        top_flags: u32,
        plan: Plan,
    ) -> Option<Cv> {
        let chunks = input.len() / CHUNK_LEN;
        if chunks < 2 || chunks.count_ones() > 2 || chunks > plan.leaf || self.rows == MultiRows::None {
            return None;
        }
        // A complete subtree is two evened halves.
        let small = if chunks.is_power_of_two() { chunks / 2 } else { 1 << chunks.trailing_zeros() };
        let large = chunks - small;
        // Evened wins where the smaller subtree's levels in registers outnumber the
        // larger one's extra levels through memory (docs/performance.md).
        let evened = small == large || small * small > large.min(WIDE);
        self.with_leaf_cvs(input, first_chunk, key, flags, plan.prefetch, |mut level, mut next| {
            if evened {
                let mut left = large;
                while left > small {
                    self.parent_cvs(&level[..left], key, flags, &mut next[..left / 2]);
                    next[left / 2..][..small].copy_from_slice(&level[left..][..small]);
                    left /= 2;
                    std::mem::swap(&mut level, &mut next);
                }
                return self.tree_top(&mut level[..2 * small], next, key, flags, top_flags);
            }
            let (l, r) = level.split_at_mut(large);
            let left = self.tree_top(l, next, key, flags, 0)?;
            let right = if small == 1 { r[0] } else { self.tree_top(&mut r[..small], next, key, flags, 0)? };
            Some(parent_cv(&left, &right, key, flags | top_flags))
        })
    }

    /// The top node's CV of a complete tree whose nodes (two or more, a power of two) are
    /// `level`: its levels in whole SIMD groups through memory (`next` has room for half of
    /// `level`) down to [`WIDE`] nodes, then [`CpuBackend::small_top`] (`top_flags` on the top
    /// parent).
    pub(super) fn tree_top<'a>(
        &self,
        mut level: &'a mut [Cv],
        mut next: &'a mut [Cv],
        key: &[u32; 8],
        flags: u32,
        top_flags: u32,
    ) -> Option<Cv> {
        let mut n = level.len();
        while n > WIDE {
            self.parent_cvs(&level[..n], key, flags, &mut next[..n / 2]);
            n /= 2;
            std::mem::swap(&mut level, &mut next);
        }
        self.small_top(&level[..n], key, flags, top_flags)
    }

    /// CVs of consecutive full chunks, the first with index `first_chunk`; `prefetch` as in
    /// [`Job`].
    pub(super) fn chunk_cvs(
        &self,
        input: &[u8],
        first_chunk: u64,
        key: &[u32; 8],
        flags: u32,
        prefetch: Prefetch,
        out: &mut [Cv],
    ) {
        let job = Job::chunks(key, first_chunk, flags, prefetch);
        self.hash_lanes(input, CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, &job, out);
    }

    /// Parent CVs of consecutive pairs of CVs.
    pub(crate) fn parent_cvs(&self, children: &[Cv], key: &[u32; 8], flags: u32, out: &mut [Cv]) {
        let job = Job {
            key,
            counter: 0,
            increment_counter: false,
            flags: flags | flags::PARENT,
            flags_start: 0,
            flags_end: 0,
            last_block_len: BLOCK_LEN,
            // The children were just written: they are in the cache.
            prefetch: Prefetch::None,
        };
        self.hash_lanes(children.as_flattened(), BLOCK_LEN, 1, &job, out);
    }

    /// The subtrees of at most [`SERIAL_LEAF_CHUNKS`] chunks, none larger than `max` chunks, into
    /// `out`: every chunk CV at once, then [`CpuBackend::reduce`]. The levels live in this
    /// thread's scratch buffer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn leaf_subtrees(
        &self,
        input: &[u8],
        first_chunk: u64,
        max: u64,
        key: &[u32; 8],
        flags: u32,
        plan: Plan,
        out: &mut [Cv],
    ) {
        debug_assert!(input.len() / CHUNK_LEN <= SERIAL_LEAF_CHUNKS);
        self.with_leaf_cvs(input, first_chunk, key, flags, plan.prefetch, |level, next| {
            self.reduce(level, next, max, key, flags, out)
        });
    }

    /// Runs `f` on the chunk CVs of `input` (one leaf of whole chunks) and on room for as many
    /// more (the next levels). Up to [`WIDE`] chunks the levels live on the stack: no
    /// thread-local to look up and borrow, which small inputs feel (docs/performance.md); above,
    /// in this thread's scratch buffer.
    pub(super) fn with_leaf_cvs<R>(
        &self,
        input: &[u8],
        first_chunk: u64,
        key: &[u32; 8],
        flags: u32,
        prefetch: Prefetch,
        f: impl for<'a> FnOnce(&'a mut [Cv], &'a mut [Cv]) -> R,
    ) -> R {
        let chunks = input.len() / CHUNK_LEN;
        if chunks <= WIDE {
            let mut buf = [[0u8; 32]; 2 * WIDE];
            let (level, next) = buf.split_at_mut(chunks);
            self.chunk_cvs(input, first_chunk, key, flags, prefetch, level);
            return f(level, next);
        }
        LEVELS.with_borrow_mut(|buf| {
            if buf.len() < 2 * chunks {
                buf.resize(2 * chunks, [0; 32]);
            }
            let (level, next) = buf.split_at_mut(chunks);
            self.chunk_cvs(input, first_chunk, key, flags, prefetch, level);
            f(level, next)
        })
    }

    /// Reduces the nodes in `level`, level by level, pairs into parents (in SIMD groups), into
    /// `out`: a level's odd last node is a finished subtree (one set bit of the node count), as is
    /// every node once the level's nodes cover `max` of the first level's. `next` (room for half
    /// of `level`) and `level` are used in turns: nothing is zeroed or copied per level.
    pub(super) fn reduce<'a>(
        &self,
        mut level: &'a mut [Cv],
        mut next: &'a mut [Cv],
        max: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) {
        let (mut n, mut size) = (level.len(), 1u64);
        // Odd nodes split off on the way up, smallest first; they come last in `out`.
        let mut tail = out.len();
        while n > 1 && size < max {
            // What is left is one whole tree of 2, 4, 8 or 16 nodes (`max` covers it): its
            // levels on rows, in registers.
            if max / size >= n as u64 {
                if let Some(top) = self.small_top(&level[..n], key, flags, 0) {
                    debug_assert_eq!(tail, 1, "one subtree left");
                    out[0] = top;
                    return;
                }
            }
            if n % 2 == 1 {
                tail -= 1;
                out[tail] = level[n - 1];
            }
            if n / 2 == 1 && self.level > SimdLevel::Portable {
                // One parent: the row form straight from the two CVs (`parent_cv`), not through
                // the lane dispatch, a `Job` and a masked block load, which cost more than the
                // compression itself (docs/performance.md).
                next[0] = parent_cv(&level[0], &level[1], key, flags);
            } else {
                self.parent_cvs(&level[..n - n % 2], key, flags, &mut next[..n / 2]);
            }
            n /= 2;
            size *= 2;
            std::mem::swap(&mut level, &mut next);
        }
        out[..tail].copy_from_slice(&level[..tail]);
    }

    /// The CV of a complete subtree: `input` is a power-of-two number of chunks.
    pub(super) fn subtree_cv(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, plan: Plan) -> Cv {
        let chunks = input.len() / CHUNK_LEN;
        debug_assert!(chunks.is_power_of_two());
        if let Some(cv) = self.small_chunks_top(input, first_chunk, key, flags, 0) {
            return cv;
        }
        if chunks <= plan.leaf {
            let mut out = [[0u8; 32]];
            self.leaf_subtrees(input, first_chunk, MAX_SUBTREE, key, flags, plan, &mut out);
            return out[0];
        }
        if plan.pool && chunks < POOL_WIDE_MIN_CHUNKS {
            let (left, right) = input.split_at(input.len() / 2);
            let right_first = first_chunk + (chunks / 2) as u64;
            let (l, r) = rayon::join(
                || self.subtree_cv(left, first_chunk, key, flags, plan),
                || self.subtree_cv(right, right_first, key, flags, plan),
            );
            return parent_cv(&l, &r, key, flags);
        }
        let mut levels = [[0u8; 32]; WIDE + WIDE / 2];
        let (cvs, next) = levels.split_at_mut(WIDE);
        self.wide_cvs(input, first_chunk, key, flags, plan, cvs);
        // The narrow levels (8, 4, 2 and 1 parents), once per subtree rather than once per leaf.
        let mut out = [[0u8; 32]];
        self.reduce(cvs, next, MAX_SUBTREE, key, flags, &mut out);
        out[0]
    }

    /// The CVs of the [`WIDE`] equal parts of a complete subtree larger than a leaf, in order.
    /// Each half yields its own `WIDE` CVs (on another core under the pool), and one pass of
    /// `WIDE` parents pairs them up: every parent level between the leaves and the top of the
    /// subtree is whole SIMD groups, however small the leaves.
    pub(super) fn wide_cvs(
        &self,
        input: &[u8],
        first_chunk: u64,
        key: &[u32; 8],
        flags: u32,
        plan: Plan,
        out: &mut [Cv],
    ) {
        let chunks = input.len() / CHUNK_LEN;
        if chunks <= plan.leaf {
            // The leaf's parent levels stop at `WIDE` subtrees.
            return self.leaf_subtrees(input, first_chunk, (chunks / WIDE) as u64, key, flags, plan, out);
        }
        let (left, right) = input.split_at(input.len() / 2);
        let right_first = first_chunk + (chunks / 2) as u64;
        let mut children = [[0u8; 32]; 2 * WIDE];
        let (l, r) = children.split_at_mut(WIDE);
        if plan.pool {
            rayon::join(
                || self.wide_cvs(left, first_chunk, key, flags, plan, l),
                || self.wide_cvs(right, right_first, key, flags, plan, r),
            );
        } else {
            self.wide_cvs(left, first_chunk, key, flags, plan, l);
            self.wide_cvs(right, right_first, key, flags, plan, r);
        }
        self.parent_cvs(&children, key, flags, out);
    }

    /// The subtrees of `input`, none larger than `max` chunks, largest first, into `out`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn subtrees(
        &self,
        input: &[u8],
        first_chunk: u64,
        max: u64,
        key: &[u32; 8],
        flags: u32,
        plan: Plan,
        out: &mut [Cv],
    ) {
        let chunks = input.len() / CHUNK_LEN;
        if chunks <= plan.leaf {
            return self.leaf_subtrees(input, first_chunk, max, key, flags, plan, out);
        }
        let size = (1u64 << (u64::BITS - 1 - (chunks as u64).leading_zeros())).min(max) as usize;
        if size as u64 == max && chunks >= 4 * size {
            // Many subtrees of the cap's size: halves at a subtree boundary, so that the depth of
            // the calls grows with the log of their number, not with the number.
            let half = chunks / size / 2 * size;
            let (left, right) = input.split_at(half * CHUNK_LEN);
            let (left_out, right_out) = out.split_at_mut(half / size);
            let right_first = first_chunk + half as u64;
            if plan.pool && right.len() >= PARALLEL_GRAIN_BYTES {
                rayon::join(
                    || self.subtrees(left, first_chunk, max, key, flags, plan, left_out),
                    || self.subtrees(right, right_first, max, key, flags, plan, right_out),
                );
            } else {
                self.subtrees(left, first_chunk, max, key, flags, plan, left_out);
                self.subtrees(right, right_first, max, key, flags, plan, right_out);
            }
            return;
        }
        let (head, tail) = input.split_at(size * CHUNK_LEN);
        let (first, rest) = out.split_first_mut().expect("one CV per subtree");
        let tail_first = first_chunk + size as u64;
        if tail.is_empty() {
            *first = self.subtree_cv(head, first_chunk, key, flags, plan);
        } else if plan.pool && tail.len() >= PARALLEL_GRAIN_BYTES {
            let (cv, ()) = rayon::join(
                || self.subtree_cv(head, first_chunk, key, flags, plan),
                || self.subtrees(tail, tail_first, max, key, flags, plan, rest),
            );
            *first = cv;
        } else {
            *first = self.subtree_cv(head, first_chunk, key, flags, plan);
            self.subtrees(tail, tail_first, max, key, flags, plan, rest);
        }
    }
}

/// How a run of chunks is split: the leaf size in chunks (a power of two, at least [`WIDE`], so
/// that a subtree larger than a leaf splits into `WIDE` parts), whether the halves above the
/// leaves go to the thread pool, and how the chunk kernels prefetch ([`prefetch_for`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    leaf: usize,
    pool: bool,
    prefetch: Prefetch,
}

const _: () = assert!(POOL_LEAF_CHUNKS.is_power_of_two() && POOL_LEAF_CHUNKS >= WIDE);
const _: () = assert!(SERIAL_LEAF_CHUNKS.is_power_of_two() && SERIAL_LEAF_CHUNKS >= WIDE);

/// The plan for hashing `len` bytes.
pub(super) fn plan(len: usize) -> Plan {
    let pool = use_threads(len);
    let leaf = if pool { POOL_LEAF_CHUNKS } else { SERIAL_LEAF_CHUNKS };
    Plan { leaf, pool, prefetch: prefetch_for(len) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::constants::IV;

    /// Prefetching is only a hint: every SIMD level this CPU has gives the same CVs whichever
    /// way it prefetches, for group counts around every kernel's width, chunks and one-block
    /// parents alike, as the portable single lane does. (The differential tests reach
    /// `Prefetch::NextGroup` only through inputs of [`lanes::prefetch_min_bytes`] or more.)
    #[test]
    pub(super) fn prefetching_changes_no_cv() {
        let data: Vec<u8> = (0..40 * CHUNK_LEN).map(|i| (i * 7 + (i >> 9)) as u8).collect();
        let portable = CpuBackend::with_level(SimdLevel::Portable).expect("the portable level");
        for level in SimdLevel::supported() {
            let cpu = CpuBackend::with_level(level).expect("a supported level");
            for (stride, blocks, flags_start, flags_end) in
                [(CHUNK_LEN, CHUNK_LEN / BLOCK_LEN, flags::CHUNK_START, flags::CHUNK_END), (BLOCK_LEN, 1, 0, 0)]
            {
                for count in [1, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 40] {
                    let job = |prefetch| Job {
                        key: &IV,
                        counter: 5,
                        increment_counter: blocks > 1,
                        flags: 0,
                        flags_start,
                        flags_end,
                        last_block_len: BLOCK_LEN,
                        prefetch,
                    };
                    let mut want = vec![[0u8; 32]; count];
                    portable.hash_lanes(&data, stride, blocks, &job(Prefetch::None), &mut want);
                    for prefetch in [Prefetch::None, Prefetch::Near, Prefetch::NextGroup] {
                        let mut got = vec![[0u8; 32]; count];
                        cpu.hash_lanes(&data, stride, blocks, &job(prefetch), &mut got);
                        assert_eq!(got, want, "{level:?}, {count} inputs of {blocks} blocks, {prefetch:?}");
                    }
                }
            }
        }
    }

    /// Each lane kernel's own rounds (`Lanes::rounds`: the templates `build.rs` writes for
    /// `avx2.rs` and `avx512.rs`) give the state the compiled generic rounds give, for states
    /// and messages of varied bits in every lane.
    #[cfg(target_arch = "x86_64")]
    #[test]
    pub(super) fn kernel_rounds_match_compiled_rounds() {
        use super::super::lanes::Lanes;
        use crate::core::compress::rounds;
        /// 64 random states and messages through both.
        fn check<V: Lanes>(name: &str) {
            let mut x = 0x9E37_79B9u32;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            };
            let words_of = |v: &[V; 16]| {
                v.map(|x| {
                    let mut w = [0u32; 16];
                    // SAFETY: the caller checked the instruction set.
                    unsafe { x.store(&mut w) };
                    w
                })
            };
            for _ in 0..64 {
                let mut vectors = || -> [V; 16] {
                    let w: [[u32; 16]; 16] = core::array::from_fn(|_| core::array::from_fn(|_| next()));
                    // SAFETY: as above.
                    core::array::from_fn(|i| unsafe { V::load(&w[i]) })
                };
                let (state, msg) = (vectors(), vectors());
                let mut want = state;
                rounds(&mut want, &msg);
                let mut got = state;
                // SAFETY: as above.
                unsafe { V::rounds(&mut got, &msg) };
                assert_eq!(words_of(&got), words_of(&want), "{name}");
            }
        }
        if std::is_x86_feature_detected!("avx2") {
            check::<super::super::lanes::avx2::LanesAvx2>("AVX2, 8 lanes");
        } else {
            crate::core::expect::missing("simd:avx2", "kernel_rounds_match_compiled_rounds on AVX2");
        }
        if std::is_x86_feature_detected!("avx512f") {
            check::<core::arch::x86_64::__m512i>("AVX-512, 16 lanes");
        } else {
            crate::core::expect::missing("simd:avx512", "kernel_rounds_match_compiled_rounds on AVX-512");
        }
    }
}
