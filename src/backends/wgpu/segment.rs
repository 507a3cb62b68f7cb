//! One segment's passes on a wgpu device: the per-segment scratch (CVs between passes, pieces,
//! parameters, readback, timestamps), the pass plan, and encoding the passes of a segment of
//! chunks into its pieces.

use super::device::{Gpu, PooledScratch};
use super::pipelines::{self, Params, LOG_WORKGROUP, PARAMS_BYTES, PARAMS_STRIDE, PIECES_BYTES};
use crate::backends::gpu::capped::{cap_level, capped_passes};
use crate::backends::gpu::groups::{chunk_group_shift, MIN_GROUP_CHUNKS};
use crate::core::constants::CHUNK_LEN;
use crate::tree::{Domain, Result};
use std::collections::HashMap;

/// Passes (dispatches) a segment can need: the chunk pass, then 2^22 chunks >> CHUNK_LEVELS
/// reduced 256 at a time down to one workgroup's worth (3 passes), then the last.
pub(super) const MAX_PASSES: u64 = 5;
/// Levels the chunk pass reduces inside its workgroup at least (the later passes reduce 8; see
/// `Gpu::plan` for when it reduces more).
///
/// Three is the fastest or even at 64 MiB and 1 GiB (docs/performance.md). The top levels of a workgroup's tree keep 16, 8, 4, 2, 1 invocations busy between
/// barriers while the rest of the workgroup waits; handing them to the next pass, 8 times
/// smaller, costs one more small dispatch at some sizes but frees the chunk pass's workgroups
/// sooner.
pub(super) const CHUNK_LEVELS: u32 = 3;
const _: () = assert!(MIN_GROUP_CHUNKS >= 1 << CHUNK_LEVELS, "a chunk pass's workgroup reduces CHUNK_LEVELS levels");

/// Bytes of readback room per segment for its timestamps (up to 32).
const STAMP_ROOM: u64 = 256;

/// Per-segment scratch on the device: the CVs between passes, the pieces, the pass parameters,
/// the readback buffer, and timestamp queries where the device has them.
///
/// `pieces` holds every segment's pieces end to end, a resident input's last chunk right after
/// the last segment's, and room for it after all of them; `readback` starts with the same bytes,
/// so that one copy brings all of them back (each copy after the passes costs device time), then
/// room for each segment's timestamps.
///
/// Where the device has mappable storage buffers (`Gpu::mapped_pieces`), `pieces` is
/// `STORAGE | MAP_READ` with the timestamps' room too, and `readback` is the same buffer: the
/// passes write where the host maps, and nothing is copied after them: about half the device
/// time after the passes (docs/performance.md).
pub(crate) struct Scratch {
    pub(super) cap: u64,
    pub(super) segs: u64,
    pub(super) cv_a: ::wgpu::Buffer,
    pub(super) cv_b: ::wgpu::Buffer,
    pub(super) pieces: ::wgpu::Buffer,
    pub(super) params: ::wgpu::Buffer,
    pub(super) readback: ::wgpu::Buffer,
    pub(super) queries: Option<(::wgpu::QuerySet, ::wgpu::Buffer)>,
    /// What each parameter block of `params` (by byte offset) last had written to it.
    pub(super) params_shadow: HashMap<u64, Vec<u8>>,
    /// Bind groups naming only this scratch's buffers, by (segment, pass, items, source offset,
    /// whether the pass writes `capped`).
    pub(super) groups: HashMap<(u64, usize, u64, u64, bool), ::wgpu::BindGroup>,
    /// Where a capped segment's last pass writes its level-k CVs, and their readback (made on
    /// the first capped call; see `gpu::capped`).
    pub(super) capped: Option<CappedCvs>,
}

/// A capped segment's level-k CVs on the device and their host-visible copy, `bytes` each.
pub(crate) struct CappedCvs {
    pub(super) bytes: u64,
    pub(super) cvs: ::wgpu::Buffer,
    pub(super) readback: ::wgpu::Buffer,
}

/// Up to 16 sets kept between calls, the largest last to go.
impl PooledScratch for Scratch {
    const MAX_IDLE: usize = 16;
    fn bytes(&self) -> u64 {
        self.cap * self.segs
    }
}

impl Scratch {
    /// Byte of `pieces` and of `readback` where the last chunk of a resident input of `count`
    /// segments goes: right after the last segment's pieces, where its chunk pass copies it.
    pub(super) fn tail_at(count: u64) -> u64 {
        PIECES_BYTES * count
    }

    /// Byte of `readback` where segment `k`'s timestamps go.
    pub(super) fn stamps_at(&self, k: u64) -> u64 {
        PIECES_BYTES * self.segs + CHUNK_LEN as u64 + STAMP_ROOM * k
    }

    /// Copies the pieces of segments `0..count`, and the `tail_bytes` after them (0: none; see
    /// [`tail_at`](Self::tail_at)), into the readback buffer: one copy, or none where the
    /// readback buffer is `pieces` itself.
    pub(super) fn copy_back(&self, enc: &mut ::wgpu::CommandEncoder, count: u64, tail_bytes: u64) {
        if self.readback == self.pieces {
            return;
        }
        enc.copy_buffer_to_buffer(&self.pieces, 0, &self.readback, 0, Scratch::tail_at(count) + tail_bytes);
    }

    /// Copies a capped segment's `count` level-k CVs into their readback buffer.
    pub(super) fn copy_capped_back(&self, enc: &mut ::wgpu::CommandEncoder, count: u64) {
        if let Some(c) = &self.capped {
            enc.copy_buffer_to_buffer(&c.cvs, 0, &c.readback, 0, count * 32);
        }
    }

    /// The bind group entry of a pass's parameters: binding 3, one block of `params` at the
    /// dynamic offset the pass is set with.
    pub(super) fn params_entry(&self) -> ::wgpu::BindGroupEntry<'_> {
        ::wgpu::BindGroupEntry {
            binding: 3,
            resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                buffer: &self.params,
                offset: 0,
                size: ::wgpu::BufferSize::new(PARAMS_BYTES),
            }),
        }
    }

    /// Writes `bytes` at byte `at` of `params` unless they are there already.
    pub(super) fn write_params(&mut self, gpu: &Gpu, at: u64, bytes: Vec<u8>) {
        if self.params_shadow.get(&at) != Some(&bytes) {
            gpu.queue.write_buffer(&self.params, at, &bytes);
            self.params_shadow.insert(at, bytes);
        }
    }
}

/// Timestamps per segment: upload begin/end, pass begin/end, readback copy end.
pub(super) const QUERIES_PER_SEG: u32 = 5;

impl Scratch {
    pub(super) fn new(gpu: &Gpu, cap: u64, segs: u64) -> Scratch {
        let queries = gpu.timestamps.then(|| {
            (
                gpu.device.create_query_set(&::wgpu::QuerySetDescriptor {
                    label: Some("b3accel timestamps"),
                    ty: ::wgpu::QueryType::Timestamp,
                    count: QUERIES_PER_SEG * segs as u32,
                }),
                gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                    label: Some("b3accel timestamps"),
                    size: 256 * segs,
                    usage: ::wgpu::BufferUsages::QUERY_RESOLVE | ::wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
            )
        });
        let readback_bytes = (PIECES_BYTES + STAMP_ROOM) * segs + CHUNK_LEN as u64;
        let (pieces, readback) = if gpu.mapped_pieces {
            let usage = ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST;
            let both = gpu.storage_buffer("b3accel pieces (mapped)", readback_bytes, usage);
            (both.clone(), both)
        } else {
            (
                gpu.storage_buffer(
                    "b3accel pieces",
                    PIECES_BYTES * segs + CHUNK_LEN as u64,
                    ::wgpu::BufferUsages::COPY_SRC,
                ),
                gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                    label: Some("b3accel readback"),
                    size: readback_bytes,
                    usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
            )
        };
        Scratch {
            cap,
            segs,
            // Pass 0 writes cap >> CHUNK_LEVELS CVs to cv_a, pass 1 256 times fewer to cv_b,
            // pass 2 fewer still to cv_a.
            cv_a: gpu.storage_buffer("b3accel cv_a", (cap >> CHUNK_LEVELS).max(1) * 32, ::wgpu::BufferUsages::empty()),
            cv_b: gpu.storage_buffer(
                "b3accel cv_b",
                (cap >> CHUNK_LEVELS >> LOG_WORKGROUP).max(1) * 32,
                ::wgpu::BufferUsages::empty(),
            ),
            pieces,
            params: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel params"),
                // One block of pass parameters per segment, then copy_tail's.
                size: MAX_PASSES * PARAMS_STRIDE * segs + PARAMS_STRIDE,
                usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            readback,
            queries,
            params_shadow: HashMap::new(),
            groups: HashMap::new(),
            capped: None,
        }
    }
}

impl Gpu {
    /// Runs `f` with scratch for `segs` segments of up to `cap` chunks, from the device's pool
    /// (kept for the next call when `f` succeeds) or new.
    pub(super) fn with_scratch<R>(&self, cap: u64, segs: u64, f: impl FnOnce(&mut Scratch) -> Result<R>) -> Result<R> {
        self.pool::<Scratch>().with(|s| s.cap >= cap && s.segs >= segs, || Ok(Scratch::new(self, cap, segs)), f)
    }

    /// The passes that hash a segment of `n` chunks, as (items, levels), and the chunk pass's
    /// group shift ([`chunk_group_shift`]; 0 when the chunk pass is the last). The chunk pass
    /// reduces CHUNK_LEVELS levels per workgroup, or more where that saves a pass (never more
    /// than its workgroups hold), every further pass LOG_WORKGROUP, until at most one workgroup's
    /// worth of items is left for the last pass, which reduces them all into pieces.
    ///
    /// With `cap = Some(k)` ([`cap_level`]) the passes stop at level k instead, the last one
    /// writing every level-k node to its `dst`: one chunk pass where its workgroups can hold 2^k
    /// chunks (they are made that large), else the usual first passes and a last one up to k.
    pub(super) fn plan(n: u64, cap: Option<u32>) -> (Vec<(u64, u32)>, u32) {
        let wg = pipelines::WORKGROUP as u64;
        if n <= wg && cap.is_none() {
            return (vec![(n, LOG_WORKGROUP + 1)], 0);
        }
        let mut shift = chunk_group_shift(n, wg);
        if let Some(k) = cap.filter(|&k| k <= LOG_WORKGROUP) {
            shift = shift.min(LOG_WORKGROUP - k);
        }
        let passes_after = |mut items: u64| {
            let mut k = 0;
            while items > wg {
                items >>= LOG_WORKGROUP;
                k += 1;
            }
            k
        };
        // The fewest passes, and among those the fewest levels in the chunk pass: a few
        // microseconds less at 4 and 16 MiB (docs/performance.md).
        let first =
            (CHUNK_LEVELS..=LOG_WORKGROUP - shift).min_by_key(|&l| (passes_after(n >> l), l)).unwrap_or(CHUNK_LEVELS);
        if let Some(k) = cap {
            let mut items = n;
            let passes = capped_passes(k, LOG_WORKGROUP - shift, first, LOG_WORKGROUP)
                .into_iter()
                .map(|levels| {
                    let pass = (items, levels);
                    items >>= levels;
                    pass
                })
                .collect();
            return (passes, shift);
        }
        let mut passes = vec![(n, first)];
        let mut items = n >> first;
        while items > wg {
            passes.push((items, LOG_WORKGROUP));
            items >>= LOG_WORKGROUP;
        }
        passes.push((items, LOG_WORKGROUP + 1));
        (passes, shift)
    }

    /// The buffers a capped segment's level-k CVs go to, at least `bytes` long.
    fn capped_cvs(&self, scr: &mut Scratch, bytes: u64) {
        if scr.capped.as_ref().is_some_and(|c| c.bytes >= bytes) {
            return;
        }
        let bytes = bytes.next_power_of_two().max(1024);
        scr.capped = Some(CappedCvs {
            bytes,
            cvs: self.storage_buffer("b3accel capped cvs", bytes, ::wgpu::BufferUsages::COPY_SRC),
            readback: self.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel capped readback"),
                size: bytes,
                usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        });
        // Cached bind groups may name the buffer this one replaces.
        scr.groups.clear();
    }

    /// Encodes the passes that hash `n` chunks (1 <= n <= max_segment_chunks) lying in `src` at
    /// byte `offset` into the pieces of segment slot `seg` of `scr`: one CV per set bit of n
    /// (slot k = the subtree of 2^k chunks). `counter` is the first chunk's index. A nonzero
    /// `tail` has the chunk pass also copy the `tail` 16-byte words after the chunks in `src` (a
    /// resident input's last chunk) to the room after the segment's pieces.
    ///
    /// A `max_chunks` cap that splits the segment ([`cap_level`]) stops the passes at its level:
    /// the last writes the segment's `n >> k` level-k CVs to `scr.capped` (then
    /// [`copy_capped_back`](Self::copy_capped_back)), or with `capped_to` into that buffer from
    /// that byte (straight, where the byte is a storage offset the device allows, else through
    /// `scr.capped` and a copy); the pieces hold the ragged end's subtrees below k. Without
    /// `capped_to`, only for a segment alone in its scratch.
    #[allow(clippy::too_many_arguments)]
    ///
    /// The parameters are written only where `scr` does not already hold them, and the bind
    /// groups that name only `scr`'s buffers (every pass after the first, and the first too when
    /// `src_ours`: `src` is a buffer that stays with `scr`) are kept in `scr` for the next call.
    pub(super) fn encode_segment(
        &self,
        enc: &mut ::wgpu::CommandEncoder,
        scr: &mut Scratch,
        seg: u64,
        src: &::wgpu::Buffer,
        src_ours: bool,
        offset: u64,
        n: u64,
        counter: u64,
        domain: Domain,
        timestamps: Option<(&::wgpu::QuerySet, u32)>,
        tail: u64,
        max_chunks: u64,
        capped_to: Option<(&::wgpu::Buffer, u64)>,
    ) {
        debug_assert!(n >= 1 && n <= scr.cap && seg < scr.segs && tail <= CHUNK_LEN as u64 / 16);
        // A bind group over our own input is kept, keyed without the tail: it never has one.
        debug_assert!(tail == 0 || !src_ours);
        let wg = pipelines::WORKGROUP as u64;
        let cap = cap_level(n, max_chunks);
        debug_assert!(cap.is_none() || scr.segs == 1 || capped_to.is_some());
        let capped_bytes = cap.map_or(0, |k| (n >> k) * 32);
        let direct = capped_to.filter(|(_, at)| cap.is_some() && at.is_multiple_of(self.storage_align));
        if cap.is_some() && direct.is_none() {
            self.capped_cvs(scr, capped_bytes);
        }
        let (passes, shift) = Gpu::plan(n, cap);
        let last = passes.len() - 1;
        let params_base = seg * MAX_PASSES * PARAMS_STRIDE;
        let mut block = vec![0u8; (passes.len() as u64 * PARAMS_STRIDE) as usize];
        let mut piece_slot = 0;
        for (l, &(items, levels)) in passes.iter().enumerate() {
            let p = Params {
                group_shift: if l == 0 { shift } else { 0 },
                key: domain.key,
                counter,
                n_items: items as u32,
                flags: domain.flags,
                piece_slot,
                src_word: if l == 0 { tail as u32 } else { 0 },
                levels,
            };
            piece_slot += levels;
            let at = l * PARAMS_STRIDE as usize;
            block[at..at + PARAMS_BYTES as usize].copy_from_slice(&p.bytes());
        }
        scr.write_params(self, params_base, block);

        fn cvs(buf: &::wgpu::Buffer, count: u64) -> ::wgpu::BufferBinding<'_> {
            ::wgpu::BufferBinding { buffer: buf, offset: 0, size: ::wgpu::BufferSize::new((count * 32).max(32)) }
        }
        let make = |scr: &Scratch, l: usize, items: u64, levels: u32, to_capped: bool| {
            // Pass l reads the chunks (l = 0) or the CVs pass l-1 wrote, and writes its full
            // workgroups' CVs: ping-pong between cv_a and cv_b (pass l+2 needs 256^2 times
            // less room than pass l, so cv_a is always large enough), or a capped segment's
            // last pass to `capped`.
            let (input, output) = if l.is_multiple_of(2) { (&scr.cv_b, &scr.cv_a) } else { (&scr.cv_a, &scr.cv_b) };
            let mut output = cvs(output, items >> levels.min(63));
            match (to_capped, direct, &scr.capped) {
                (true, Some((buf, at)), _) => {
                    output =
                        ::wgpu::BufferBinding { buffer: buf, offset: at, size: ::wgpu::BufferSize::new(capped_bytes) }
                }
                (true, None, Some(c)) => output = cvs(&c.cvs, items >> levels.min(63)),
                _ => {}
            }
            // The chunk pass binds the tail's words after its chunks, and room for them after
            // its pieces.
            let tail_bytes = if l == 0 { tail * 16 } else { 0 };
            let src_binding = if l == 0 {
                let size = ::wgpu::BufferSize::new(n * CHUNK_LEN as u64 + tail_bytes);
                ::wgpu::BufferBinding { buffer: src, offset, size }
            } else {
                cvs(input, items)
            };
            self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                label: Some("b3accel pass"),
                layout: &self.pipes.layout,
                entries: &[
                    ::wgpu::BindGroupEntry { binding: 0, resource: ::wgpu::BindingResource::Buffer(src_binding) },
                    ::wgpu::BindGroupEntry { binding: 1, resource: ::wgpu::BindingResource::Buffer(output) },
                    ::wgpu::BindGroupEntry {
                        binding: 2,
                        resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                            buffer: &scr.pieces,
                            offset: seg * PIECES_BYTES,
                            size: ::wgpu::BufferSize::new(PIECES_BYTES + tail_bytes),
                        }),
                    },
                    scr.params_entry(),
                ],
            })
        };
        let mut bind_groups = Vec::with_capacity(passes.len());
        for (l, &(items, levels)) in passes.iter().enumerate() {
            let to_capped = cap.is_some() && l == last;
            // Bind groups naming buffers not ours are made per call, never kept.
            if (l == 0 && !src_ours) || (to_capped && direct.is_some()) {
                bind_groups.push(make(scr, l, items, levels, to_capped));
                continue;
            }
            // Pass 0 over our own input binds it at `offset`, which is always 0 there.
            let key = (seg, l, items, if l == 0 { offset } else { 0 }, to_capped);
            let bg = match scr.groups.get(&key) {
                Some(bg) => bg.clone(),
                None => {
                    let bg = make(scr, l, items, levels, to_capped);
                    if scr.groups.len() >= 256 {
                        scr.groups.clear();
                    }
                    scr.groups.insert(key, bg.clone());
                    bg
                }
            };
            bind_groups.push(bg);
        }
        {
            let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("b3accel segment"),
                timestamp_writes: timestamps.map(|(q, i)| ::wgpu::ComputePassTimestampWrites {
                    query_set: q,
                    beginning_of_pass_write_index: Some(i),
                    end_of_pass_write_index: Some(i + 1),
                }),
            });
            for (l, (&(items, _), bg)) in passes.iter().zip(&bind_groups).enumerate() {
                pass.set_pipeline(if l == 0 { &self.pipes.chunk } else { &self.pipes.reduce });
                let dyn_offset = (params_base + l as u64 * PARAMS_STRIDE) as u32;
                pass.set_bind_group(0, bg, &[dyn_offset]);
                let group = if l == 0 { wg >> shift } else { wg };
                pass.dispatch_workgroups(items.div_ceil(group) as u32, 1, 1);
            }
        }
        if let (Some((buf, at)), None, Some(c)) = (capped_to, direct, &scr.capped) {
            enc.copy_buffer_to_buffer(&c.cvs, 0, buf, at, capped_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_take_the_fewest_passes_within_a_workgroup() {
        let wg = pipelines::WORKGROUP as u64;
        for n in [1u64, 2, 255, 256, 257, 300, 1024, 4096, 4097, 16_384, 65_536, 65_537, 1 << 20, 1 << 22] {
            let (passes, shift) = Gpu::plan(n, None);
            assert!(passes.len() as u64 <= MAX_PASSES, "n = {n}");
            assert_eq!(passes[0].0, n);
            let (last_items, last_levels) = *passes.last().unwrap();
            assert!(last_items <= wg && last_levels == LOG_WORKGROUP + 1, "n = {n}");
            if passes.len() == 1 {
                assert_eq!(shift, 0);
                continue;
            }
            // The chunk pass reduces no more levels than its workgroups hold, at least CHUNK_LEVELS.
            let first = passes[0].1;
            assert!((CHUNK_LEVELS..=LOG_WORKGROUP - shift).contains(&first), "n = {n}");
            // Each pass takes what the one before it left.
            for w in passes.windows(2) {
                assert_eq!(w[1].0, w[0].0 >> w[0].1, "n = {n}");
            }
        }
        // 4 MiB: four levels make the chunk pass's 256 CVs the last pass's input.
        assert_eq!(Gpu::plan(4096, None).0, vec![(4096, 4), (256, LOG_WORKGROUP + 1)]);
        assert_eq!(Gpu::plan(1 << 20, None).0.len(), 3);
    }

    #[test]
    fn capped_plans_stop_at_the_cap() {
        // Within a workgroup: one chunk pass, its groups at least 2^k chunks.
        for (n, k) in [(1u64 << 14, 0u32), (1 << 14, 4), (100, 2), (1 << 22, 8), (1000, 6)] {
            let (passes, shift) = Gpu::plan(n, Some(k));
            assert_eq!(passes, vec![(n, k)], "n = {n}, k = {k}");
            assert!(pipelines::WORKGROUP as u64 >> shift >= 1 << k, "n = {n}, k = {k}");
        }
        // Beyond it: the usual chunk pass, then passes up to level k.
        let (passes, _) = Gpu::plan(1 << 22, Some(12));
        assert_eq!(passes.iter().map(|p| p.1).sum::<u32>(), 12);
        for w in passes.windows(2) {
            assert_eq!(w[1].0, w[0].0 >> w[0].1);
        }
    }
}
