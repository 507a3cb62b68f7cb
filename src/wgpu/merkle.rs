//! Merkle trees and batches of equal-length messages on a wgpu device (`merkle_pass` and
//! `many_chunks` in shaders/blake3.wgsl), for buffers already on the device; the
//! [`Backend`](crate::Backend) overrides of [`WgpuBackend`](super::WgpuBackend) upload host memory
//! and call the same code.
//!
//! A Merkle tree takes one dispatch per `merkle_levels` levels (4 by default; a workgroup of 256
//! invocations takes 512 nodes and reduces them by up to 9 levels: 2^25 leaves are 7 dispatches
//! of 4 levels, or 3 of 9), all in one compute pass of one submission; only the root (32 bytes) comes back unless the inner nodes are asked for. Levels
//! larger than one storage binding are split over several dispatches, and every dispatch uses a
//! 2D grid, so neither the binding size nor the 65535 workgroups per dimension limit the leaf
//! count.
//!
//! Messages of at most one chunk take one invocation each and come back as their hashes; longer
//! ones one invocation per chunk, whose chaining values come back and are merged on the host in
//! BLAKE3's tree order (`tree::root_from_chunk_cvs`).

use super::pipelines::{LOG_WORKGROUP, PARAMS_BYTES, PARAMS_STRIDE, WORKGROUP};
use super::{lock, Gpu, MapTicket};
use crate::backend::Timings;
use crate::compress::{Cv, CHUNK_LEN};
use crate::error::{Error, Result};
use crate::tree::{self, Domain};
use std::time::{Duration, Instant};

/// Levels one `merkle_pass` dispatch reduces at most: 512 nodes per workgroup down to one.
const MERKLE_SPAN: u32 = LOG_WORKGROUP + 1;
/// Nodes one workgroup of `merkle_pass` takes.
const GROUP_NODES: u64 = 2 * WORKGROUP as u64;
/// Bytes of `ManyParams` in the shader, as bound (`MerkleParams`, 8 words, is bound as 64 bytes,
/// the layout's minimum for every uniform binding).
const MANY_PARAMS_BYTES: u64 = 64;

/// The largest storage binding this code uses: the device's limit, kept below 2^31 bytes so that
/// every byte index in the shaders fits in 32 bits.
fn max_binding(gpu: &Gpu) -> u64 {
    let l = gpu.device.limits();
    l.max_storage_buffer_binding_size.min(l.max_buffer_size).min(1 << 31)
}

/// A 2D grid of at least `groups` workgroups within the per-dimension limit: (x, y).
fn grid(gpu: &Gpu, groups: u64) -> Result<(u32, u32)> {
    let max = gpu.device.limits().max_compute_workgroups_per_dimension.max(1) as u64;
    let x = groups.clamp(1, max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(Error::InvalidInput(format!("{groups} workgroups do not fit in a {max} x {max} grid")));
    }
    Ok((x as u32, y as u32))
}

/// Checks a caller's buffer: STORAGE usage, aligned offset, `len` bytes (rounded up to whole
/// words) inside it.
fn check_buffer(gpu: &Gpu, what: &str, buffer: &::wgpu::Buffer, offset: u64, len: u64) -> Result<()> {
    if !buffer.usage().contains(::wgpu::BufferUsages::STORAGE) {
        return Err(Error::InvalidInput(format!(
            "{what}: the buffer needs STORAGE usage (it has {:?})",
            buffer.usage()
        )));
    }
    if !offset.is_multiple_of(gpu.storage_align) {
        return Err(Error::InvalidInput(format!(
            "{what}: offset {offset} is not a multiple of the device's storage offset alignment {}",
            gpu.storage_align
        )));
    }
    if offset.checked_add(len.next_multiple_of(4)).is_none_or(|end| end > buffer.size()) {
        return Err(Error::InvalidInput(format!(
            "{what}: {len} bytes at offset {offset} (rounded up to whole 4-byte words) do not fit in a buffer of {} bytes",
            buffer.size()
        )));
    }
    Ok(())
}

fn words_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn read_buffer(gpu: &Gpu, label: &str, size: u64) -> ::wgpu::Buffer {
    gpu.device.create_buffer(&::wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn binding(buffer: &::wgpu::Buffer, offset: u64, size: u64) -> ::wgpu::BindingResource<'_> {
    ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding { buffer, offset, size: ::wgpu::BufferSize::new(size) })
}

/// Timestamps of one compute pass, where the device has them and the caller wants them.
struct PassTimer {
    set: ::wgpu::QuerySet,
    resolve: ::wgpu::Buffer,
}

impl PassTimer {
    fn new(gpu: &Gpu, wanted: bool) -> Option<PassTimer> {
        (wanted && gpu.timestamps).then(|| PassTimer {
            set: gpu.device.create_query_set(&::wgpu::QuerySetDescriptor {
                label: Some("b3accel pass timer"),
                ty: ::wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel pass timer"),
                size: 16,
                usage: ::wgpu::BufferUsages::QUERY_RESOLVE | ::wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        })
    }

    fn writes(&self) -> ::wgpu::ComputePassTimestampWrites<'_> {
        ::wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// Resolves the two timestamps into `readback` at byte `at` (a multiple of 8).
    fn finish(&self, enc: &mut ::wgpu::CommandEncoder, readback: &::wgpu::Buffer, at: u64) {
        enc.resolve_query_set(&self.set, 0..2, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, readback, at, 16);
    }

    /// The pass's duration from the 16 resolved bytes.
    fn duration(gpu: &Gpu, bytes: &[u8]) -> Duration {
        let tick = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        Duration::from_nanos((tick(1).saturating_sub(tick(0)) as f64 * gpu.timestamp_period) as u64)
    }
}

/// Submits `enc`, maps `readbacks` and waits for all of them.
fn submit_and_map(gpu: &Gpu, enc: ::wgpu::CommandEncoder, readbacks: &[&::wgpu::Buffer]) -> Result<()> {
    let index = gpu.queue.submit([enc.finish()]);
    let tickets: Vec<MapTicket> = readbacks.iter().map(|b| MapTicket::begin(b, ::wgpu::MapMode::Read)).collect();
    for t in &tickets {
        gpu.wait(&index, t)?;
    }
    Ok(())
}

fn mapped(gpu: &Gpu, buffer: &::wgpu::Buffer) -> Result<::wgpu::BufferView> {
    buffer
        .get_mapped_range(..)
        .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })
}

/// One `merkle_pass` of the reduction: `levels` levels from `count` nodes to `out` nodes.
struct Pass {
    levels: u32,
    count: u64,
    out: u64,
    /// Index in the inner nodes of the first level this pass makes.
    inner_at: u64,
}

/// The passes that reduce `n >= 1` nodes to one, `span` levels each where a pass's output level
/// fits in one storage binding of `max_out` nodes (each pass binds its whole output level), more
/// (up to 9) where it would not.
fn plan(n: u64, span: u32, max_out: u64) -> Vec<Pass> {
    let span = span.clamp(1, MERKLE_SPAN);
    let mut passes = Vec::new();
    let mut count = n;
    let mut made = 0u64;
    loop {
        // Levels left to the root, ceil(log2(count)); a single leaf still takes one pass (which
        // carries it through as the root).
        let left = (u64::BITS - (count - 1).leading_zeros()).max(1);
        let mut levels = span;
        while levels < MERKLE_SPAN && count.div_ceil(1 << levels) > max_out {
            levels += 1;
        }
        let levels = left.min(levels);
        let out = count.div_ceil(1 << levels);
        let inner_at = made;
        let mut c = count;
        for _ in 0..levels {
            made += c / 2;
            c = c.div_ceil(2);
        }
        passes.push(Pass { levels, count, out, inner_at });
        count = out;
        if count == 1 {
            return passes;
        }
    }
}

/// What one Merkle call needs on the device besides the leaves, kept per device between calls
/// (level buffers, parameters, the root's readback, timestamps, and the bind groups that name
/// only these buffers), so that a call allocates nothing once warm.
pub(crate) struct MerkleScratch {
    size_a: u64,
    size_b: u64,
    params_cap: u64,
    a: ::wgpu::Buffer,
    b: ::wgpu::Buffer,
    /// Bound as `pieces` when no inner nodes are kept.
    dummy: ::wgpu::Buffer,
    params: ::wgpu::Buffer,
    /// The parameter bytes last written to `params` (skipped when a call writes the same).
    params_shadow: Vec<u8>,
    readback: ::wgpu::Buffer,
    timer: Option<PassTimer>,
    /// Bind groups of the dispatches after the first pass (no inner nodes kept), by their
    /// (pass, source offset, nodes).
    groups: Vec<((usize, u64, u64), ::wgpu::BindGroup)>,
}

/// Merkle scratch sets kept per device.
const MERKLE_KEPT: usize = 2;

impl MerkleScratch {
    fn new(gpu: &Gpu, size_a: u64, size_b: u64, params_cap: u64) -> MerkleScratch {
        let storage = |label, size| gpu.storage_buffer(label, size, ::wgpu::BufferUsages::COPY_SRC);
        MerkleScratch {
            size_a,
            size_b,
            params_cap,
            a: storage("b3accel merkle a", size_a),
            b: storage("b3accel merkle b", size_b),
            dummy: storage("b3accel merkle no inner", 32),
            params: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some("b3accel merkle params"),
                size: params_cap * PARAMS_STRIDE,
                usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            params_shadow: Vec::new(),
            readback: read_buffer(gpu, "b3accel merkle root", 64),
            timer: None,
            groups: Vec::new(),
        }
    }
}

fn take_merkle(gpu: &Gpu, size_a: u64, size_b: u64, params_cap: u64) -> MerkleScratch {
    let mut pool = lock(&gpu.merkle_pool);
    if let Some(i) = pool.iter().position(|s| s.size_a >= size_a && s.size_b >= size_b && s.params_cap >= params_cap) {
        return pool.swap_remove(i);
    }
    drop(pool);
    MerkleScratch::new(gpu, size_a, size_b, params_cap.max(16))
}

fn give_merkle(gpu: &Gpu, s: MerkleScratch) {
    let mut pool = lock(&gpu.merkle_pool);
    pool.push(s);
    if pool.len() > MERKLE_KEPT {
        // Keep the largest sets: they serve every smaller tree too.
        let smallest = (0..pool.len()).min_by_key(|&i| pool[i].size_a + pool[i].size_b).unwrap_or(0);
        pool.swap_remove(smallest);
    }
}

/// Writes `bytes` at the start of `params` unless it already holds them.
fn write_params(gpu: &Gpu, params: &::wgpu::Buffer, shadow: &mut Vec<u8>, bytes: Vec<u8>) {
    if *shadow != bytes {
        gpu.queue.write_buffer(params, 0, &bytes);
        *shadow = bytes;
    }
}

fn params_bytes<'a>(blocks: impl ExactSizeIterator<Item = &'a [u32]>) -> Vec<u8> {
    let mut bytes = vec![0u8; blocks.len() * PARAMS_STRIDE as usize];
    for (i, words) in blocks.enumerate() {
        let at = i * PARAMS_STRIDE as usize;
        bytes[at..at + 4 * words.len()].copy_from_slice(&words_bytes(words));
    }
    bytes
}

/// The root of the Merkle tree over the `n` leaves (32 bytes each) of `leaves` at byte `offset`,
/// and with `inner` (exactly `n - 1` entries) every inner node, level by level. `timings` gets
/// the pass's device time (`kernel`, timestamps where available), the host's reading of the
/// results (`download`) and the wall time (`total`).
pub(crate) fn merkle(
    gpu: &Gpu,
    leaves: &::wgpu::Buffer,
    offset: u64,
    n: u64,
    inner: Option<&mut [Cv]>,
    timings: Option<&mut Timings>,
) -> Result<Cv> {
    let start = Instant::now();
    if n == 0 {
        return Err(Error::InvalidInput("a Merkle tree needs at least one leaf".to_string()));
    }
    let bytes = n.checked_mul(32).ok_or_else(|| Error::InvalidInput(format!("{n} leaves overflow")))?;
    check_buffer(gpu, "merkle", leaves, offset, bytes)?;
    if let Some(inner) = &inner {
        if inner.len() as u64 != n - 1 {
            return Err(Error::InvalidInput(format!(
                "merkle: {n} leaves have {} inner nodes, but inner has room for {}",
                n - 1,
                inner.len()
            )));
        }
    }
    let bind_max = max_binding(gpu);
    if n >= 1 << 31 {
        return Err(Error::InvalidInput(format!("merkle: {n} leaves are more than the 2^31 - 1 supported")));
    }
    if inner.is_some() && (n - 1) * 32 > bind_max {
        return Err(Error::InvalidInput(format!(
            "merkle: the {} inner nodes of {n} leaves do not fit in one storage binding of this device ({bind_max} bytes)",
            n - 1
        )));
    }
    gpu.check_health()?;
    super::scoped(&gpu.device, gpu.id, || merkle_on_device(gpu, leaves, offset, n, inner, timings, start))
}

fn merkle_on_device(
    gpu: &Gpu,
    leaves: &::wgpu::Buffer,
    offset: u64,
    n: u64,
    inner: Option<&mut [Cv]>,
    timings: Option<&mut Timings>,
    start: Instant,
) -> Result<Cv> {
    let passes = plan(n, gpu.merkle_span, max_binding(gpu) / 32);
    let per_binding = (max_binding(gpu) / 32 / GROUP_NODES) * GROUP_NODES;
    if per_binding == 0 {
        return Err(Error::Unavailable {
            device: gpu.id,
            reason: "storage bindings too small for a workgroup's Merkle nodes".into(),
        });
    }
    let keep = inner.is_some();

    // Every dispatch: (pass, src byte offset, nodes, grid, params); pass 0 reads the leaves,
    // pass p > 0 the level buffer pass p - 1 wrote.
    let mut dispatches = Vec::new();
    for (p, pass) in passes.iter().enumerate() {
        let src_base = if p == 0 { offset } else { 0 };
        let mut first = 0u64;
        while first < pass.count {
            let local = per_binding.min(pass.count - first);
            let groups = local.div_ceil(GROUP_NODES);
            let params = [
                local as u32,
                pass.count as u32,
                (first / GROUP_NODES) as u32,
                groups as u32,
                pass.levels,
                u32::from(keep),
                pass.inner_at as u32,
                0,
            ];
            dispatches.push((p, src_base + first * 32, local, grid(gpu, groups)?, params));
            first += local;
        }
    }
    // Level buffers in turn: pass p writes `a` when p is even (pass p + 2 needs 2^span^2 times
    // less room than pass p), `b` when odd.
    let size_a = passes[0].out * 32;
    let size_b = passes.get(1).map_or(32, |p| p.out * 32);
    let mut scr = take_merkle(gpu, size_a, size_b, dispatches.len() as u64);
    let r = merkle_with(gpu, &mut scr, leaves, n, &passes, &dispatches, inner, timings, start);
    if r.is_ok() {
        give_merkle(gpu, scr);
    }
    r
}

type MerkleDispatch = (usize, u64, u64, (u32, u32), [u32; 8]);

#[allow(clippy::too_many_arguments)]
fn merkle_with(
    gpu: &Gpu,
    scr: &mut MerkleScratch,
    leaves: &::wgpu::Buffer,
    n: u64,
    passes: &[Pass],
    dispatches: &[MerkleDispatch],
    inner: Option<&mut [Cv]>,
    timings: Option<&mut Timings>,
    start: Instant,
) -> Result<Cv> {
    let keep = inner.is_some();
    let inner_buf = keep
        .then(|| gpu.storage_buffer("b3accel merkle inner", ((n - 1) * 32).max(32), ::wgpu::BufferUsages::COPY_SRC));
    write_params(gpu, &scr.params, &mut scr.params_shadow, params_bytes(dispatches.iter().map(|d| &d.4[..])));
    if keep {
        scr.groups.clear();
    }
    let make = |scr: &MerkleScratch, p: usize, src_at: u64, local: u64| {
        let src = match p {
            0 => leaves,
            p if p % 2 == 1 => &scr.a,
            _ => &scr.b,
        };
        let dst = if p.is_multiple_of(2) { &scr.a } else { &scr.b };
        let pieces = inner_buf.as_ref().unwrap_or(&scr.dummy);
        gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel merkle_pass"),
            layout: &gpu.pipes.merkle_layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: binding(src, src_at, local * 32) },
                ::wgpu::BindGroupEntry { binding: 1, resource: dst.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 2, resource: pieces.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 5, resource: binding(&scr.params, 0, PARAMS_BYTES) },
            ],
        })
    };
    // The first pass's groups name the caller's buffer: made per call, never kept.
    let mut bind_groups = Vec::with_capacity(dispatches.len());
    for &(p, src_at, local, _, _) in dispatches {
        if p == 0 || keep {
            bind_groups.push(make(scr, p, src_at, local));
            continue;
        }
        let key = (p, src_at, local);
        let bg = match scr.groups.iter().find(|(k, _)| *k == key) {
            Some((_, bg)) => bg.clone(),
            None => {
                let bg = make(scr, p, src_at, local);
                if scr.groups.len() >= 64 {
                    scr.groups.clear();
                }
                scr.groups.push((key, bg.clone()));
                bg
            }
        };
        bind_groups.push(bg);
    }

    if timings.is_some() && gpu.timestamps && scr.timer.is_none() {
        scr.timer = PassTimer::new(gpu, true);
    }
    let timer = scr.timer.as_ref().filter(|_| timings.is_some());
    let inner_rb = (keep && n > 1).then(|| read_buffer(gpu, "b3accel merkle inner readback", (n - 1) * 32));
    let mut enc =
        gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel merkle") });
    {
        let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
            label: Some("b3accel merkle"),
            timestamp_writes: timer.map(PassTimer::writes),
        });
        pass.set_pipeline(&gpu.pipes.merkle);
        for (i, (d, bg)) in dispatches.iter().zip(&bind_groups).enumerate() {
            pass.set_bind_group(0, bg, &[(i as u64 * PARAMS_STRIDE) as u32]);
            pass.dispatch_workgroups(d.3 .0, d.3 .1, 1);
        }
    }
    let root_buf = if (passes.len() - 1).is_multiple_of(2) { &scr.a } else { &scr.b };
    enc.copy_buffer_to_buffer(root_buf, 0, &scr.readback, 0, 32);
    if let Some(t) = timer {
        t.finish(&mut enc, &scr.readback, 32);
    }
    if let (Some(rb), Some(ib)) = (&inner_rb, &inner_buf) {
        enc.copy_buffer_to_buffer(ib, 0, rb, 0, (n - 1) * 32);
    }
    let mut maps = vec![&scr.readback];
    maps.extend(inner_rb.as_ref());
    submit_and_map(gpu, enc, &maps)?;
    let t_read = Instant::now();
    let view = mapped(gpu, &scr.readback)?;
    let mut root = [0u8; 32];
    root.copy_from_slice(&view[..32]);
    let kernel = timer.map(|_| PassTimer::duration(gpu, &view[32..48]));
    drop(view);
    scr.readback.unmap();
    if let (Some(inner), Some(rb)) = (inner, &inner_rb) {
        let view = mapped(gpu, rb)?;
        inner.as_flattened_mut().copy_from_slice(&view);
        drop(view);
        rb.unmap();
    }
    if let Some(t) = timings {
        t.kernel += kernel.unwrap_or_default();
        t.download += t_read.elapsed();
        t.total = start.elapsed();
    }
    Ok(root)
}

/// Messages per dispatch for messages of `msg_len` bytes and `chunks` chunks: a multiple of 256
/// (so that every dispatch's data and output offsets stay aligned), within one binding for the
/// data and one for the outputs.
fn many_per_dispatch(gpu: &Gpu, msg_len: u64, chunks: u64) -> Result<u64> {
    let bind = max_binding(gpu);
    let k = (bind / msg_len.max(1)).min(bind / (32 * chunks)).min((u32::MAX as u64 / 2) / chunks) / 256 * 256;
    if k == 0 {
        return Err(Error::InvalidInput(format!(
            "hash_many: 256 messages of {msg_len} bytes do not fit in one storage binding of this device ({bind} bytes)"
        )));
    }
    Ok(k)
}

/// Chunks per message as `many_chunks` counts them (one for the empty message).
fn chunks_of(msg_len: u64) -> u64 {
    msg_len.div_ceil(CHUNK_LEN as u64).max(1)
}

/// What a `hash_many` call needs on the device besides the messages, kept per device between
/// calls: parameters, timestamps, and for results that go back to the host an output buffer and
/// its readback of `cap` bytes.
pub(crate) struct ManyScratch {
    cap: u64,
    params_cap: u64,
    params: ::wgpu::Buffer,
    params_shadow: Vec<u8>,
    /// (the hashes or chunk CVs on the device, their host-visible copy), `cap` bytes each.
    out: Option<(::wgpu::Buffer, ::wgpu::Buffer)>,
    /// The pass timer and its 16-byte readback.
    timer: Option<(PassTimer, ::wgpu::Buffer)>,
    /// Stands in for the messages when they are empty (a binding needs a size).
    empty: Option<::wgpu::Buffer>,
}

/// hash_many scratch sets kept per device.
const MANY_KEPT: usize = 4;

fn take_many(gpu: &Gpu, cap: u64, params_cap: u64) -> ManyScratch {
    let mut pool = lock(&gpu.many_pool);
    if let Some(i) = pool.iter().position(|s| s.cap >= cap && s.params_cap >= params_cap) {
        return pool.swap_remove(i);
    }
    drop(pool);
    let params_cap = params_cap.max(8);
    ManyScratch {
        cap,
        params_cap,
        params: gpu.device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("b3accel many params"),
            size: params_cap * PARAMS_STRIDE,
            usage: ::wgpu::BufferUsages::UNIFORM | ::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }),
        params_shadow: Vec::new(),
        out: (cap > 0).then(|| {
            (
                gpu.storage_buffer("b3accel many out", cap, ::wgpu::BufferUsages::COPY_SRC),
                read_buffer(gpu, "b3accel many readback", cap),
            )
        }),
        timer: None,
        empty: None,
    }
}

fn give_many(gpu: &Gpu, s: ManyScratch) {
    let mut pool = lock(&gpu.many_pool);
    pool.push(s);
    if pool.len() > MANY_KEPT {
        let smallest = (0..pool.len()).min_by_key(|&i| pool[i].cap).unwrap_or(0);
        pool.swap_remove(smallest);
    }
}

/// Bytes of chunk CVs (or hashes) one host-bound `hash_many` round brings back; larger batches
/// take several rounds through the same kept buffers.
const MANY_ROUND_BYTES: u64 = 64 << 20;

/// Hashes the `out.len()` messages of `msg_len` bytes each that lie end to end in `data` from
/// byte `offset`, in `domain`, into host memory.
pub(crate) fn hash_many(
    gpu: &Gpu,
    data: &::wgpu::Buffer,
    offset: u64,
    msg_len: u64,
    domain: Domain,
    out: &mut [Cv],
    timings: Option<&mut Timings>,
) -> Result<()> {
    let start = Instant::now();
    let count = out.len() as u64;
    let bytes = count
        .checked_mul(msg_len)
        .ok_or_else(|| Error::InvalidInput(format!("hash_many: {count} messages of {msg_len} bytes overflow")))?;
    check_buffer(gpu, "hash_many", data, offset, bytes)?;
    if count == 0 {
        return Ok(());
    }
    let chunks = chunks_of(msg_len);
    let per = many_per_dispatch(gpu, msg_len, chunks)?;
    gpu.check_health()?;
    super::scoped(&gpu.device, gpu.id, || {
        let mut t = Timings::default();
        // Messages per round: whole dispatches, within the round's output bytes.
        // (a multiple of 256, so every round's messages start aligned).
        let rounds = (MANY_ROUND_BYTES / (chunks * 32) / 256 * 256).max(256).min(count.next_multiple_of(256));
        let cap = rounds * chunks * 32;
        let mut scr = take_many(gpu, cap, rounds.div_ceil(per));
        let mut first = 0u64;
        while first < count {
            let m = rounds.min(count - first);
            let part = &mut out[first as usize..(first + m) as usize];
            let at = offset + first * msg_len;
            many_round(gpu, &mut scr, data, at, msg_len, chunks, per, domain, part, &mut t, timings.is_some())?;
            first += m;
        }
        give_many(gpu, scr);
        if let Some(timings) = timings {
            timings.kernel += t.kernel;
            timings.download += t.download;
            timings.total = start.elapsed();
        }
        Ok(())
    })
}

/// Hashes `count` messages of `msg_len <= CHUNK_LEN` bytes lying end to end in `data` from byte
/// `offset`, in `domain`, into `out` at byte `out_offset` (32 bytes each), and waits until they
/// are written. One submission; nothing comes back to the host but the pass's timestamps where
/// `timings` asks for them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn hash_many_into(
    gpu: &Gpu,
    data: &::wgpu::Buffer,
    offset: u64,
    count: u64,
    msg_len: u64,
    domain: Domain,
    out: &::wgpu::Buffer,
    out_offset: u64,
    timings: Option<&mut Timings>,
) -> Result<()> {
    let start = Instant::now();
    if msg_len > CHUNK_LEN as u64 {
        return Err(Error::InvalidInput(format!(
            "hash_many_into: messages of {msg_len} bytes are longer than one chunk ({CHUNK_LEN} bytes); use hash_many"
        )));
    }
    let bytes = count
        .checked_mul(msg_len)
        .ok_or_else(|| Error::InvalidInput(format!("hash_many: {count} messages of {msg_len} bytes overflow")))?;
    check_buffer(gpu, "hash_many_into (messages)", data, offset, bytes)?;
    let out_bytes =
        count.checked_mul(32).ok_or_else(|| Error::InvalidInput(format!("hash_many_into: {count} hashes overflow")))?;
    check_buffer(gpu, "hash_many_into (hashes)", out, out_offset, out_bytes)?;
    if count == 0 {
        return Ok(());
    }
    let per = many_per_dispatch(gpu, msg_len, 1)?;
    gpu.check_health()?;
    super::scoped(&gpu.device, gpu.id, || {
        let mut scr = take_many(gpu, 0, count.div_ceil(per));
        let timed = timings.is_some() && gpu.timestamps;
        let mut enc =
            gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel many") });
        encode_many(gpu, &mut scr, &mut enc, data, offset, msg_len, 1, per, domain, count, out, out_offset, timed)?;
        let kernel = if timed {
            let (timer, times) = scr.timer.as_ref().ok_or_else(|| internal("no pass timer"))?;
            timer.finish(&mut enc, times, 0);
            submit_and_map(gpu, enc, &[times])?;
            let view = mapped(gpu, times)?;
            let d = PassTimer::duration(gpu, &view);
            drop(view);
            times.unmap();
            d
        } else {
            let index = gpu.queue.submit([enc.finish()]);
            gpu.wait(&index, &MapTicket::work_done(&gpu.queue))?;
            Duration::ZERO
        };
        give_many(gpu, scr);
        if let Some(t) = timings {
            t.kernel += kernel;
            t.total = start.elapsed();
        }
        Ok(())
    })
}

fn internal(what: &str) -> Error {
    Error::InvalidInput(format!("internal: {what}"))
}

/// Encodes one compute pass hashing `count` messages (from byte `offset` of `data`) into `dst`
/// from byte `dst_offset`: `per` messages per dispatch, `many_vec4` where the message length is a
/// nonzero multiple of 16 bytes, `many_chunks` otherwise. With `timed`, the pass's timestamps
/// go to `scr.timer`.
#[allow(clippy::too_many_arguments)]
fn encode_many(
    gpu: &Gpu,
    scr: &mut ManyScratch,
    enc: &mut ::wgpu::CommandEncoder,
    data: &::wgpu::Buffer,
    offset: u64,
    msg_len: u64,
    chunks: u64,
    per: u64,
    domain: Domain,
    count: u64,
    dst: &::wgpu::Buffer,
    dst_offset: u64,
    timed: bool,
) -> Result<()> {
    let vec4 = msg_len > 0 && msg_len.is_multiple_of(16);
    let mut dispatches = Vec::new();
    let mut first = 0u64;
    while first < count {
        let m = per.min(count - first);
        let items = m * chunks;
        let groups = items.div_ceil(WORKGROUP as u64);
        let (x, y) = grid(gpu, groups)?;
        let data_bytes = (m * msg_len).next_multiple_of(4);
        let mut p = [0u32; 16];
        p[..8].copy_from_slice(&domain.key);
        p[8] = msg_len as u32;
        p[9] = items as u32;
        p[10] = chunks as u32;
        p[11] = domain.flags;
        p[12] = (data_bytes / 4) as u32;
        p[13] = x * WORKGROUP;
        dispatches.push((first, m, data_bytes, (x, y), p));
        first += m;
    }
    if dispatches.len() as u64 > scr.params_cap {
        return Err(internal("hash_many scratch too small for its dispatches"));
    }
    write_params(gpu, &scr.params, &mut scr.params_shadow, params_bytes(dispatches.iter().map(|d| &d.4[..])));
    if msg_len == 0 && scr.empty.is_none() {
        scr.empty = Some(gpu.storage_buffer("b3accel many empty", 16, ::wgpu::BufferUsages::empty()));
    }
    if timed && scr.timer.is_none() {
        scr.timer = PassTimer::new(gpu, true).map(|t| (t, read_buffer(gpu, "b3accel many timestamps", 16)));
    }
    let (layout, data_binding) = if vec4 { (&gpu.pipes.many4_layout, 0) } else { (&gpu.pipes.many_layout, 4) };
    let bind_groups: Vec<::wgpu::BindGroup> = dispatches
        .iter()
        .map(|&(first, m, data_bytes, _, _)| {
            let data_res = match &scr.empty {
                Some(e) if msg_len == 0 => e.as_entire_binding(),
                _ => binding(data, offset + first * msg_len, data_bytes),
            };
            gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                label: Some("b3accel many"),
                layout,
                entries: &[
                    ::wgpu::BindGroupEntry {
                        binding: 1,
                        resource: binding(dst, dst_offset + first * chunks * 32, m * chunks * 32),
                    },
                    ::wgpu::BindGroupEntry { binding: data_binding, resource: data_res },
                    ::wgpu::BindGroupEntry { binding: 6, resource: binding(&scr.params, 0, MANY_PARAMS_BYTES) },
                ],
            })
        })
        .collect();
    let timer = scr.timer.as_ref().filter(|_| timed).map(|t| &t.0);
    let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
        label: Some("b3accel many"),
        timestamp_writes: timer.map(PassTimer::writes),
    });
    pass.set_pipeline(if vec4 { &gpu.pipes.many4 } else { &gpu.pipes.many });
    for (i, (d, bg)) in dispatches.iter().zip(&bind_groups).enumerate() {
        pass.set_bind_group(0, bg, &[(i as u64 * PARAMS_STRIDE) as u32]);
        pass.dispatch_workgroups(d.3 .0, d.3 .1, 1);
    }
    Ok(())
}

/// One submission of host-bound `hash_many`: `out.len()` messages, `per` per dispatch, through
/// the kept output and readback buffers of `scr`.
#[allow(clippy::too_many_arguments)]
fn many_round(
    gpu: &Gpu,
    scr: &mut ManyScratch,
    data: &::wgpu::Buffer,
    offset: u64,
    msg_len: u64,
    chunks: u64,
    per: u64,
    domain: Domain,
    out: &mut [Cv],
    t: &mut Timings,
    timed: bool,
) -> Result<()> {
    let count = out.len() as u64;
    let out_bytes = count * chunks * 32;
    let timed = timed && gpu.timestamps;
    let (cvs, readback) = scr.out.clone().ok_or_else(|| internal("hash_many scratch without output buffers"))?;
    if out_bytes > scr.cap {
        return Err(internal("hash_many round larger than its scratch"));
    }
    let mut enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel many") });
    encode_many(gpu, scr, &mut enc, data, offset, msg_len, chunks, per, domain, count, &cvs, 0, timed)?;
    enc.copy_buffer_to_buffer(&cvs, 0, &readback, 0, out_bytes);
    let times = scr.timer.as_ref().filter(|_| timed);
    if let Some((timer, times)) = times {
        timer.finish(&mut enc, times, 0);
    }
    let mut maps = vec![&readback];
    maps.extend(times.map(|t| &t.1));
    submit_and_map(gpu, enc, &maps)?;
    let t_read = Instant::now();
    let view = readback
        .slice(..out_bytes)
        .get_mapped_range()
        .map_err(|e| Error::Device { device: gpu.id, detail: format!("readback buffer not mapped: {e:?}") })?;
    let got = view.as_chunks::<32>().0;
    if chunks == 1 {
        out.copy_from_slice(got);
    } else {
        for (hash, cvs) in out.iter_mut().zip(got.chunks_exact(chunks as usize)) {
            *hash = tree::root_from_chunk_cvs(cvs, domain).root_hash();
        }
    }
    drop(view);
    readback.unmap();
    if let Some((_, times)) = times {
        let view = mapped(gpu, times)?;
        t.kernel += PassTimer::duration(gpu, &view);
        drop(view);
        times.unmap();
    }
    t.download += t_read.elapsed();
    Ok(())
}

/// Uploads `bytes` into a new STORAGE buffer (padded to whole words, at least one).
pub(crate) fn upload(gpu: &Gpu, label: &str, bytes: &[u8]) -> ::wgpu::Buffer {
    let size = (bytes.len() as u64).next_multiple_of(4).max(4);
    let buf = gpu.storage_buffer(label, size, ::wgpu::BufferUsages::COPY_DST);
    let whole = bytes.len() / 4 * 4;
    if whole > 0 {
        gpu.queue.write_buffer(&buf, 0, &bytes[..whole]);
    }
    if whole < bytes.len() {
        let mut last = [0u8; 4];
        last[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
        gpu.queue.write_buffer(&buf, whole as u64, &last);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_take_few_passes_and_count_every_inner_node() {
        for n in [1u64, 2, 3, 5, 511, 512, 513, 1 << 20, (1 << 25) + 7] {
            for span in [1, 3, 4, MERKLE_SPAN] {
                let passes = plan(n, span, u64::MAX);
                let mut levels = 0;
                let mut count = n;
                for p in &passes {
                    assert_eq!(p.count, count);
                    levels += p.levels;
                    count = p.out;
                }
                assert_eq!(count, 1);
                let depth = crate::merkle::level_sizes(n as usize).count() as u32;
                assert_eq!(levels, depth.max(1), "n = {n}");
                assert!(passes.len() as u64 <= n.max(2).ilog2().div_ceil(span) as u64 + 1);
            }
        }
        assert_eq!(plan(1 << 25, MERKLE_SPAN, u64::MAX).len(), 3);
        assert_eq!(plan(1 << 25, 4, u64::MAX).len(), 7);
        // Outputs that must fit in 64 KiB bindings (2048 nodes): 2^16 leaves need 5 levels first.
        let p = plan(1 << 16, 4, 2048);
        assert_eq!(p[0].levels, 5);
        assert!(p.iter().all(|p| p.out <= 2048));
    }
}
