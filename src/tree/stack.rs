//! BLAKE3's tree, written once for every backend: which chunks form complete subtrees, the stack
//! that merges their chaining values, and the partial last chunk.
//!
//! Backends only ever see runs of full chunks (see [`Backend::chunk_subtrees`]); the last chunk of
//! an input, which may be partial and may be the root, is always hashed here, on the CPU. So is
//! the whole chunk before it when the two are all there is (1025 to 2047 bytes): side by side
//! with the partial one where the CPU has two-input rows.

use super::bulk::{subtree_count, subtree_sizes, Bulk, MAX_SUBTREE};
use super::error::{Error, Result};
use super::mode::Domain;
use super::output::Output;
use crate::core::compress::{block_words, words_to_cv, Cv};
use crate::core::constants::{flags, BLOCK_LEN, CHUNK_LEN};
use crate::core::platform::{chunk_and_tail_cvs, compress_blocks, compress_chunk_end, parent_cv};
use zeroize::Zeroize;

/// One chunk of 0 to 1024 bytes (0 only for the empty input) with index `chunk_index`, all but
/// its last block compressed: the chaining value so far, the last block (0 to 64 bytes) and the
/// flags it is to be compressed with (ROOT aside). Always inlined: as a call of its own (registers
/// saved, the result returned through memory) it slows small inputs (docs/performance.md).
#[inline(always)]
fn chunk_head(chunk: &[u8], chunk_index: u64, domain: Domain) -> ([u32; 8], &[u8], u32) {
    let (body, last, last_flags) = chunk_split(chunk, domain);
    let mut cv = domain.key;
    compress_blocks(&mut cv, body, chunk_index, domain.flags, flags::CHUNK_START);
    (cv, last, last_flags)
}

/// One chunk of 0 to 1024 bytes split into its whole blocks but the last (compressed with
/// `domain.flags`, the first with CHUNK_START added) and its last block (0 to 64 bytes: 0 only
/// for the empty input), with the flags of that last block (ROOT aside).
#[inline(always)]
fn chunk_split(chunk: &[u8], domain: Domain) -> (&[u8], &[u8], u32) {
    debug_assert!(chunk.len() <= CHUNK_LEN);
    let last_start = chunk.len().saturating_sub(1) / BLOCK_LEN * BLOCK_LEN;
    let start = if last_start == 0 { flags::CHUNK_START } else { 0 };
    let (body, last) = chunk.split_at(last_start);
    (body, last, domain.flags | start | flags::CHUNK_END)
}

/// The output node of one chunk of 0 to 1024 bytes (0 only for the empty input) with index
/// `chunk_index`: every block but the last is compressed, the last is kept for the caller.
#[inline]
pub(crate) fn chunk_output(chunk: &[u8], chunk_index: u64, domain: Domain) -> Output {
    let (cv, last, flags) = chunk_head(chunk, chunk_index, domain);
    let mut block = [0u8; BLOCK_LEN];
    block[..last.len()].copy_from_slice(last);
    Output { input_cv: cv, block: block_words(&block), block_len: last.len() as u32, counter: chunk_index, flags }
}

/// The hash of an input of at most one chunk: no backend is involved at all, and the last block
/// is compressed from where it lies (see [`compress_chunk_end`]).
#[inline]
pub(crate) fn hash_small(input: &[u8], domain: Domain) -> [u8; 32] {
    let (body, last, last_flags) = chunk_split(input, domain);
    let out =
        compress_chunk_end(&domain.key, body, 0, domain.flags, flags::CHUNK_START, last, last_flags | flags::ROOT);
    words_to_cv(&out)
}

/// Deepest possible stack: 2^64 bytes are 2^54 chunks.
const MAX_DEPTH: usize = 54;

/// The chaining values of complete subtrees not yet merged, left to right, and how many chunks
/// they cover. Merging is lazy: a CV is merged with its left neighbour only once more input
/// proves that the pair is not the root.
///
/// A stack hashes one subtree of the input: the whole input (from chunk 0), or one that starts at
/// chunk `start` ([`CvStack::at`]) and ends within the largest subtree that can start there
/// (`start`'s lowest set bit, in chunks; see [`super::subtree`]). Merges go by the chunks
/// committed since `start`, chunk counters by the chunks' place in the whole input.
///
/// The chaining values of a keyed or key-derivation tree are secret: such a stack wipes the
/// entries it used when dropped (a plain hash's stack skips that; nothing in it is secret).
#[derive(Clone)]
pub(crate) struct CvStack {
    cvs: [Cv; MAX_DEPTH + 1],
    len: usize,
    /// The first chunk of the subtree this stack hashes.
    start: u64,
    /// The index of the next chunk in the whole input: `start` plus the full chunks committed.
    chunks: u64,
    /// The most entries ever in use, and whether any was secret: what `Drop` wipes.
    high: usize,
    secret: bool,
}

impl Drop for CvStack {
    fn drop(&mut self) {
        if self.secret {
            self.cvs[..self.high].as_flattened_mut().zeroize();
        }
    }
}

impl CvStack {
    pub fn new() -> CvStack {
        CvStack::at(0)
    }

    /// A stack for the subtree that starts at chunk `start` of the input. The caller keeps what
    /// it commits within the largest subtree that can start there.
    pub fn at(start: u64) -> CvStack {
        CvStack { cvs: [[0; 32]; MAX_DEPTH + 1], len: 0, start, chunks: start, high: 0, secret: false }
    }

    /// Full chunks committed since the start.
    fn committed(&self) -> u64 {
        self.chunks - self.start
    }

    /// Whether nothing has been committed.
    pub fn is_empty(&self) -> bool {
        self.committed() == 0
    }

    /// Merges the top of the stack until it holds one CV per set bit of `chunks - start`: what is
    /// left of the merged subtree once a subtree starting at chunk `chunks` follows.
    fn merge_to(&mut self, chunks: u64, domain: Domain) {
        while self.len > (chunks - self.start).count_ones() as usize {
            let right = self.cvs[self.len - 1];
            let left = self.cvs[self.len - 2];
            self.cvs[self.len - 2] = parent_cv(&left, &right, &domain.key, domain.flags);
            self.len -= 1;
        }
    }

    /// Pushes the CV of a complete subtree of `size` chunks (a power of two) starting at the
    /// current position, which must be a multiple of `size`.
    pub fn push(&mut self, cv: Cv, size: u64, domain: Domain) {
        debug_assert!(size.is_power_of_two() && self.chunks.is_multiple_of(size));
        self.merge_to(self.chunks, domain);
        self.cvs[self.len] = cv;
        self.len += 1;
        self.chunks += size;
        self.high = self.high.max(self.len);
        self.secret |= domain.is_secret();
    }

    /// Hashes `input` (full chunks that continue the input at the current position; more input
    /// follows them) on `backend` and pushes the resulting subtrees, none larger than `max`
    /// chunks.
    pub fn commit_chunks<B: Bulk + ?Sized>(
        &mut self,
        backend: &B,
        input: &[u8],
        max: u64,
        domain: Domain,
    ) -> Result<()> {
        debug_assert!(input.len().is_multiple_of(CHUNK_LEN));
        self.commit_runs((input.len() / CHUNK_LEN) as u64, max, domain, |offset, n, first_chunk, out| {
            let run = &input[offset as usize * CHUNK_LEN..(offset + n) as usize * CHUNK_LEN];
            backend.chunk_subtrees_capped(run, first_chunk, max, &domain.key, domain.flags, out)
        })
    }

    /// Commits `chunks` full chunks that continue the input at the current position (more input
    /// follows them) wherever they lie: `subtrees(offset, n, first_chunk, out)` must hash the `n`
    /// chunks starting `offset` chunks into this commit, whose first chunk has index
    /// `first_chunk`, into subtrees of at most `max` chunks, exactly as
    /// [`Backend::chunk_subtrees_capped`] does. The commit is cut into runs that each start at a
    /// multiple of their size rounded up to a power of two, as that contract requires.
    pub fn commit_runs(
        &mut self,
        chunks: u64,
        max: u64,
        domain: Domain,
        mut subtrees: impl FnMut(u64, u64, u64, &mut [Cv]) -> Result<()>,
    ) -> Result<()> {
        // The subtrees' CVs: on the stack when they fit (always, for calls of up to 64 times
        // `max` chunks), so that a small input pays for no allocation.
        let mut on_stack = [[0u8; 32]; 64];
        let mut on_heap = Vec::new();
        let mut offset = 0;
        while offset < chunks {
            let remaining = chunks - offset;
            let align = if self.chunks == 0 { u64::MAX } else { 1u64 << self.chunks.trailing_zeros() };
            let n = remaining.min(align);
            let count = subtree_count(n, max);
            let pieces = if count <= on_stack.len() {
                &mut on_stack[..count]
            } else {
                on_heap.clear();
                on_heap.resize(count, [0u8; 32]);
                &mut on_heap[..]
            };
            subtrees(offset, n, self.chunks, pieces)?;
            for (size, cv) in subtree_sizes(n, max).zip(pieces.iter()) {
                self.push(*cv, size, domain);
            }
            offset += n;
        }
        Ok(())
    }

    /// The chaining values of the complete subtrees that everything committed forms when nothing
    /// is known to follow it: one per set bit of the number of chunks committed, largest first, exactly
    /// what [`Backend::chunk_subtrees`] returns for those chunks. A backend that hashes one call's
    /// chunks in several pieces (segments streamed through a device) merges them with this.
    #[cfg_attr(not(any(feature = "opencl", feature = "wgpu")), allow(dead_code))]
    pub fn subtree_cvs(&self, domain: Domain, out: &mut [Cv]) {
        let mut stack = self.clone();
        stack.merge_to(self.chunks, domain);
        out.copy_from_slice(&stack.cvs[..stack.len]);
    }

    /// The top node of the subtree (the root, when the stack hashes the whole input), given its
    /// last chunk (1 to 1024 bytes, which follows everything committed) or, for an input that was
    /// empty from the start, no bytes at all. The stack is used up (merged); a caller that goes
    /// on hashing finalizes a clone.
    pub fn finalize(&mut self, last_chunk: &[u8], domain: Domain) -> Output {
        let last = chunk_output(last_chunk, self.chunks, domain);
        if self.len == 0 {
            return last;
        }
        self.merge_to(self.chunks, domain);
        self.merge_right(&last.chaining_value(), domain)
    }

    /// The top node, given the chaining value of the subtree that ends the input (any subtree
    /// that starts at the current position and fits there), after at least one committed
    /// subtree. The stack is used up, as by [`finalize`](Self::finalize).
    pub fn finalize_cv(&mut self, last: &Cv, domain: Domain) -> Output {
        debug_assert!(self.len > 0, "a subtree of its own is not merged with anything");
        self.merge_to(self.chunks, domain);
        self.merge_right(last, domain)
    }

    /// Every CV on the stack merged with `right` from the right (see [`merge_right`]). The stack
    /// is not empty.
    fn merge_right(&self, right: &Cv, domain: Domain) -> Output {
        merge_right(&self.cvs[..self.len], right, domain)
    }

    /// The top node when nothing follows the stack's subtrees (at least two of them): all of
    /// them merged from the right, the last merge being the top node.
    fn root_of_stack(&mut self, domain: Domain) -> Output {
        debug_assert!(self.len >= 2, "at least two subtrees are on the stack here");
        self.len -= 1;
        let right = self.cvs[self.len];
        self.merge_right(&right, domain)
    }

    /// The top node (the root, when the stack hashes the whole input), given everything that
    /// follows the committed chunks: `tail`, at least one byte unless nothing was committed.
    /// Full chunks go to `backend`, the last one too when it is full (it is then not the top
    /// node, so it can share a SIMD group or a dispatch with the others); a partial last chunk is
    /// hashed here. The stack is used up, as by [`finalize`](Self::finalize).
    pub fn finish<B: Bulk + ?Sized>(&mut self, backend: &B, tail: &[u8], domain: Domain) -> Result<Output> {
        let chunks = (tail.len() as u64).div_ceil(CHUNK_LEN as u64);
        if self.committed() == 0 && (self.chunks == 0 || chunks <= 1 << self.chunks.trailing_zeros()) {
            return top_of_run(backend, tail, self.chunks, domain);
        }
        // Only a run longer than the subtree at its start is left here with nothing committed:
        // `commit_runs` cuts it into several subtrees, so none needs halving.
        if tail.len().is_multiple_of(CHUNK_LEN) {
            self.commit_chunks(backend, tail, MAX_SUBTREE, domain)?;
            return Ok(self.root_of_stack(domain));
        }
        let full = tail.len() / CHUNK_LEN * CHUNK_LEN;
        self.commit_chunks(backend, &tail[..full], MAX_SUBTREE, domain)?;
        Ok(self.finalize(&tail[full..], domain))
    }
}

/// `cvs` (at least one) merged with `right` from the right: `right` with the last, that with the
/// one before, and so on; the last merge is the top node.
fn merge_right(cvs: &[Cv], right: &Cv, domain: Domain) -> Output {
    merge_right_with(cvs, right, domain, |left, right| Output::parent(left, right, domain))
}

/// [`merge_right`], the top node handed to `top` as its two children: every merge below it is a
/// parent CV computed from the CVs where they lie.
fn merge_right_with<T>(cvs: &[Cv], right: &Cv, domain: Domain, top: impl FnOnce(&Cv, &Cv) -> T) -> T {
    let (first, rest) = cvs.split_first().expect("there is a CV to merge with");
    let mut right = *right;
    for cv in rest.iter().rev() {
        right = parent_cv(cv, &right, &domain.key, domain.flags);
    }
    top(first, &right)
}

/// What [`top_of_run`] makes of the top node: the node itself ([`Output`], for any output), or
/// only the hash, which for a parent is its CV with ROOT added ([`parent_cv`] from the two CVs
/// where they lie: no [`Output`] is built and read back).
trait Top: Sized {
    /// A top node of one chunk.
    fn chunk(output: Output) -> Self;
    /// A top node that is the parent of `left` and `right`.
    fn parent(left: &Cv, right: &Cv, domain: Domain) -> Self;
    /// The top node of a run of two or more full chunks and nothing else (`input`, from
    /// `first_chunk`), if this kind of top node can come from the backend's
    /// [`Backend::subtree_top`]; `None` where the tree module needs the CVs below it themselves.
    fn whole_run<B: Bulk + ?Sized>(
        _backend: &B,
        _input: &[u8],
        _first_chunk: u64,
        _domain: Domain,
    ) -> Option<Result<Self>> {
        None
    }
}

impl Top for Output {
    fn chunk(output: Output) -> Self {
        output
    }
    fn parent(left: &Cv, right: &Cv, domain: Domain) -> Self {
        Output::parent(left, right, domain)
    }
}

/// The root hash alone, compressed straight from the last node: building an [`Output`] first
/// costs a small input's root most of a compression's time again (docs/performance.md).
struct RootHash([u8; 32]);

impl Top for RootHash {
    fn chunk(output: Output) -> Self {
        RootHash(output.root_hash())
    }
    fn parent(left: &Cv, right: &Cv, domain: Domain) -> Self {
        RootHash(parent_cv(left, right, &domain.key, domain.flags | flags::ROOT))
    }
    /// The root hash of a whole input of full chunks: the backend compresses the root itself. On
    /// the CPU, up to 16 chunks, no level goes through memory; up to a leaf of one or two
    /// complete subtrees (2^k, or 2^a + 2^b chunks), the last levels are in registers (see
    /// `Backend::subtree_top`).
    fn whole_run<B: Bulk + ?Sized>(
        backend: &B,
        input: &[u8],
        first_chunk: u64,
        domain: Domain,
    ) -> Option<Result<Self>> {
        Some(backend.subtree_top(input, first_chunk, &domain.key, domain.flags, flags::ROOT).map(RootHash))
    }
}

/// Subtree CVs that live on the stack of [`top_of_run`]: a whole input of fewer than 256 chunks
/// (or a run of them) has at most 8 subtrees.
const RUN_CVS_ON_STACK: usize = 8;

/// The top node of `input`, all of a subtree that starts at chunk `first_chunk` (the whole input
/// when that is 0; else one that fits in the largest subtree that can start there: the caller
/// checks), with no
/// [`CvStack`]: its full chunks go to `backend` in one call (the last one too when it is full:
/// it is then not the top node, so it can share a SIMD group or a dispatch with the others), the
/// few subtrees it returns are merged from the right with the last chunk. One whole chunk and a
/// partial one are hashed here instead, side by side ([`chunk_and_tail_cvs`]) where the CPU has
/// two-input rows: no backend call, and one chunk's compressions on the critical path. Where
/// the input is full chunks alone, the backend is asked for the top node's hash where that is
/// all that is wanted ([`Top::whole_run`]); else, for a whole input of 2^k chunks (one complete
/// subtree, whose CV would be the top node), for its two halves.
///
/// No stack of 64 pieces is zeroed for each call: that `memset` slows small inputs
/// (docs/performance.md).
fn top_of_run<B: Bulk + ?Sized, T: Top>(backend: &B, input: &[u8], first_chunk: u64, domain: Domain) -> Result<T> {
    if input.len() <= CHUNK_LEN {
        return Ok(T::chunk(chunk_output(input, first_chunk, domain)));
    }
    let whole = input.len().is_multiple_of(CHUNK_LEN);
    let full = if whole { input.len() } else { input.len() / CHUNK_LEN * CHUNK_LEN };
    let n = (full / CHUNK_LEN) as u64;
    if whole {
        if let Some(top) = T::whole_run(backend, input, first_chunk, domain) {
            return top;
        }
    }
    if n == 1 && !whole {
        let (chunk, tail) = input.split_first_chunk::<CHUNK_LEN>().expect("more than one chunk");
        if let Some(mut cvs) = chunk_and_tail_cvs(&domain.key, chunk, tail, first_chunk, domain.flags) {
            let top = T::parent(&cvs[0], &cvs[1], domain);
            if domain.is_secret() {
                cvs.as_flattened_mut().zeroize();
            }
            return Ok(top);
        }
    }
    let complete = whole && n.is_power_of_two();
    let max = if complete { n / 2 } else { MAX_SUBTREE };
    with_run_cvs(backend, &input[..full], first_chunk, max, domain, |cvs| {
        let top = |left: &Cv, right: &Cv| T::parent(left, right, domain);
        if whole {
            let (right, rest) = cvs.split_last().expect("two or more subtrees");
            merge_right_with(rest, right, domain, top)
        } else {
            let last = chunk_output(&input[full..], first_chunk + n, domain).chaining_value();
            merge_right_with(cvs, &last, domain, top)
        }
    })
}

/// Runs `f` on the CVs of the subtrees that the full chunks `input` form, none larger than `max`
/// chunks, as the backend returns them: on the stack for a run of fewer than 256 chunks. The CVs
/// of a keyed or key-derivation tree are secret (as on a `CvStack`): wiped after `f`.
fn with_run_cvs<B: Bulk + ?Sized, R>(
    backend: &B,
    input: &[u8],
    first_chunk: u64,
    max: u64,
    domain: Domain,
    f: impl FnOnce(&[Cv]) -> R,
) -> Result<R> {
    let count = subtree_count((input.len() / CHUNK_LEN) as u64, max);
    let mut on_stack = [[0u8; 32]; RUN_CVS_ON_STACK];
    let mut on_heap = Vec::new();
    let cvs = if count <= RUN_CVS_ON_STACK {
        &mut on_stack[..count]
    } else {
        on_heap.resize(count, [0u8; 32]);
        &mut on_heap[..]
    };
    let out = backend.chunk_subtrees_capped(input, first_chunk, max, &domain.key, domain.flags, cvs).map(|()| f(cvs));
    if domain.is_secret() {
        cvs.as_flattened_mut().zeroize();
    }
    out
}

/// [`Backend::subtree_top`] from the CVs of the run's two halves (`n = 2^k`) or of its subtrees
/// (any other `n`), merged from the right (`n` chunks in all, the arguments already checked): the
/// trait's default, and a fallback for backends that override it.
pub(crate) fn top_by_subtrees<B: Bulk + ?Sized>(
    backend: &B,
    input: &[u8],
    first_chunk: u64,
    n: u64,
    key: &[u32; 8],
    flags: u32,
    top_flags: u32,
) -> Result<Cv> {
    let max = if n.is_power_of_two() { n / 2 } else { MAX_SUBTREE };
    let domain = Domain { key: *key, flags };
    with_run_cvs(backend, input, first_chunk, max, domain, |cvs| {
        let (right, rest) = cvs.split_last().expect("two or more subtrees");
        merge_right_with(rest, right, domain, |left, right| parent_cv(left, right, key, flags | top_flags))
    })
}

/// The root node of an input of two or more chunks, given every chunk's chaining value in order
/// (each computed as a non-root chunk, the last one possibly partial): BLAKE3's merges, as if the
/// input had been hashed in one piece. For backends that hash chunk `j` of many equal-length
/// messages side by side.
pub(crate) fn root_from_chunk_cvs(cvs: &[Cv], domain: Domain) -> Output {
    assert!(cvs.len() >= 2, "a single chunk is its own root");
    let mut stack = CvStack::new();
    for cv in cvs {
        stack.push(*cv, 1, domain);
    }
    stack.root_of_stack(domain)
}

/// The root node of a whole input held in memory: its chunks go to `backend` in one call (the
/// last one too when it is full), the merge of the few subtrees and a partial last chunk happen
/// here.
pub(crate) fn hash_all<B: Bulk + ?Sized>(backend: &B, input: &[u8], domain: Domain) -> Result<Output> {
    top_of_run(backend, input, 0, domain)
}

/// The top node of `input`, one whole subtree that starts at chunk `first_chunk` (a whole input
/// when that is 0): its chaining value is the subtree's CV, its root hash the input's hash when it
/// is the whole input. The bao module hashes chunk groups and the nodes inside them with it.
pub(crate) fn subtree_node<B: Bulk + ?Sized>(
    backend: &B,
    input: &[u8],
    first_chunk: u64,
    domain: Domain,
) -> Result<Output> {
    if first_chunk > 0 && input.is_empty() {
        return Err(Error::InvalidInput("a subtree after chunk 0 has at least one byte".to_string()));
    }
    let max_chunks = if first_chunk == 0 { u64::MAX } else { 1u64 << first_chunk.trailing_zeros() };
    if (input.len() as u64).div_ceil(CHUNK_LEN as u64) > max_chunks {
        return Err(Error::InvalidInput(format!(
            "{} bytes at chunk {first_chunk} go past the largest subtree that can start there",
            input.len()
        )));
    }
    top_of_run(backend, input, first_chunk, domain)
}

/// The root hash of a whole input held in memory: [`hash_all`]'s root hash, without building
/// the root node.
pub(crate) fn root_hash_all<B: Bulk + ?Sized>(backend: &B, input: &[u8], domain: Domain) -> Result<[u8; 32]> {
    top_of_run::<B, RootHash>(backend, input, 0, domain).map(|h| h.0)
}

/// How many bytes of an input of `len` bytes the tree module needs to see itself: its last chunk
/// (1 to 1024 bytes; none for the empty input). Everything before them is full chunks.
#[cfg_attr(not(any(feature = "opencl", feature = "wgpu")), allow(dead_code))]
pub(crate) fn last_chunk_len(len: u64) -> u64 {
    if len == 0 {
        0
    } else {
        (len - 1) % CHUNK_LEN as u64 + 1
    }
}

/// The top node of `len` bytes that lie elsewhere, in a device buffer, and start at chunk `start`
/// of the input (0 for a whole input, whose top node is the root; else a subtree that the caller
/// has checked with [`super::subtree::check_subtree`]): the backend hashes its full chunks where
/// they lie through `subtrees` (as in [`CvStack::commit_runs`], with `offset` counted in chunks
/// from the first byte, and chunk counters from the input's start), and the caller fetches the
/// last [`last_chunk_len`] bytes, which the tree module hashes here.
#[cfg_attr(not(any(feature = "opencl", feature = "wgpu")), allow(dead_code))]
pub(crate) fn hash_resident(
    start: u64,
    len: u64,
    last_chunk: &[u8],
    domain: Domain,
    subtrees: impl FnMut(u64, u64, u64, &mut [Cv]) -> Result<()>,
) -> Result<Output> {
    assert_eq!(last_chunk.len() as u64, last_chunk_len(len), "the caller fetches exactly the last chunk");
    let full_chunks = (len - last_chunk.len() as u64) / CHUNK_LEN as u64;
    let mut stack = CvStack::at(start);
    stack.commit_runs(full_chunks, MAX_SUBTREE, domain, subtrees)?;
    Ok(stack.finalize(last_chunk, domain))
}

/// Commits consecutive segments' subtree CVs to fresh stacks: the CVs of the complete subtrees of
/// the whole run, none larger than `max_chunks`, as `Backend::chunk_subtrees_capped` returns them.
/// A segment smaller than the cap lies inside one `max_chunks`-aligned block of the run (both
/// powers of two, each segment at a multiple of its length) and gives its uncapped subtree CVs;
/// each block's segments merge on a stack of their own. A segment of at least `max_chunks`
/// chunks starts a block and gives its capped CVs already (the passes stopped at the cap's
/// level): they are copied out as they are. All merging is the tree module's.
pub(crate) fn merge_segments(
    segments: &[(u64, Vec<Cv>)],
    max_chunks: u64,
    domain: Domain,
    out: &mut [Cv],
) -> Result<()> {
    let total: u64 = segments.iter().map(|s| s.0).sum();
    if out.len() != subtree_count(total, max_chunks) {
        return Err(internal(format!("{} outputs for {total} chunks capped at {max_chunks}", out.len())));
    }
    let mut written = 0;
    let mut block = CvStack::new();
    let mut in_block = 0u64;
    let mut rest = segments.iter().peekable();
    while let Some((n, pieces)) = rest.next() {
        if *n >= max_chunks {
            let k = subtree_count(*n, max_chunks);
            if in_block != 0 || pieces.len() != k || written + k > out.len() {
                return Err(internal(format!("a capped segment of {n} chunks with {} CVs", pieces.len())));
            }
            out[written..written + k].copy_from_slice(pieces);
            written += k;
            continue;
        }
        block.commit_runs(*n, MAX_SUBTREE, domain, |_, m, _, o| {
            if m != *n || o.len() != pieces.len() {
                return Err(internal(format!("a segment of {n} chunks committed as a run of {m}")));
            }
            o.copy_from_slice(pieces);
            Ok(())
        })?;
        in_block += n;
        if in_block == max_chunks || rest.peek().is_none() {
            let k = in_block.count_ones() as usize;
            if written + k > out.len() {
                return Err(internal(format!("more subtrees than the {} outputs", out.len())));
            }
            block.subtree_cvs(domain, &mut out[written..written + k]);
            written += k;
            block = CvStack::new();
            in_block = 0;
        }
    }
    debug_assert_eq!(written, out.len());
    Ok(())
}

/// An error for a broken internal invariant of [`merge_segments`].
fn internal(what: String) -> Error {
    Error::InvalidInput(format!("internal: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn single_chunk_lengths_match_upstream() {
        for len in [0, 1, 63, 64, 65, 127, 128, 1023, 1024] {
            let data = input(len);
            assert_eq!(hash_small(&data, Domain::HASH), *blake3::hash(&data).as_bytes(), "len {len}");
        }
    }

    #[test]
    fn xof_at_any_position_matches_upstream() {
        let data = input(100);
        let out = chunk_output(&data, 0, Domain::HASH);
        let mut expected = [0u8; 300];
        blake3::Hasher::new().update(&data).finalize_xof().fill(&mut expected);
        for seek in [0usize, 1, 63, 64, 65, 130] {
            let mut got = vec![0u8; 300 - seek];
            out.root_bytes(seek as u64, &mut got);
            assert_eq!(got, expected[seek..], "seek {seek}");
        }
    }

    #[test]
    fn root_from_chunk_cvs_matches_upstream() {
        for chunks in 2..=9usize {
            let data = input(chunks * CHUNK_LEN - 100);
            let cvs: Vec<Cv> = data
                .chunks(CHUNK_LEN)
                .enumerate()
                .map(|(i, c)| chunk_output(c, i as u64, Domain::HASH).chaining_value())
                .collect();
            let root = root_from_chunk_cvs(&cvs, Domain::HASH).root_hash();
            assert_eq!(root, *blake3::hash(&data).as_bytes(), "{chunks} chunks");
        }
    }

    #[test]
    fn derive_key_domain_matches_upstream() {
        let d = Domain::derive_key("ctx");
        assert_eq!(hash_small(b"material", d), blake3::derive_key("ctx", b"material"));
    }
}
