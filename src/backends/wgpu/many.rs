//! Batches of equal-length messages on a wgpu device (`many_vec4` and `many_chunks` in
//! shaders/blake3.wgsl), lying in a device buffer: back to the host, or into another device
//! buffer. Messages of at most one chunk take one invocation each and come back as their hashes;
//! longer ones one invocation per chunk, whose chaining values come back and are merged on the
//! host in BLAKE3's tree order (`tree::root_from_chunk_cvs`). The
//! [`Backend`](crate::Backend) override of [`WgpuBackend`](super::WgpuBackend) uploads host
//! messages and calls the same code.

use super::device::{Gpu, PooledScratch};
use super::errors::scoped;
use super::passes::{
    binding, check_buffer, grid, internal, mapped, max_binding, params_bytes, read_buffer, submit_and_map,
    write_params, PassTimer,
};
use super::pipelines::{PARAMS_STRIDE, WORKGROUP};
use super::wait::MapTicket;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{root_from_chunk_cvs, Domain, Error, Result, Timings};
use std::time::{Duration, Instant};

/// Bytes of `ManyParams` in the shader, as bound (`MerkleParams`, 8 words, is bound as 64 bytes,
/// the layout's minimum for every uniform binding).
const MANY_PARAMS_BYTES: u64 = 64;

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
/// calls: parameters, timestamps, and for results that go back to the host one or two sets of an
/// output buffer and its readback of `cap` bytes (two let the device fill one while the host
/// copies out of the other).
pub(crate) struct ManyScratch {
    pub(super) cap: u64,
    params_cap: u64,
    params: ::wgpu::Buffer,
    params_shadow: Vec<u8>,
    /// (the hashes or chunk CVs on the device, their host-visible copy with the pass's 16 bytes
    /// of timestamps at byte `cap`).
    out: Vec<(::wgpu::Buffer, ::wgpu::Buffer)>,
    /// The pass timer and, for `hash_many_into`, its 16-byte readback.
    timer: Option<(PassTimer, ::wgpu::Buffer)>,
    /// Stands in for the messages when they are empty (a binding needs a size).
    empty: Option<::wgpu::Buffer>,
}

impl PooledScratch for ManyScratch {
    const MAX_IDLE: usize = 4;
    fn bytes(&self) -> u64 {
        self.cap
    }
}

impl ManyScratch {
    fn new(gpu: &Gpu, cap: u64, sets: usize, params_cap: u64) -> ManyScratch {
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
            out: (0..sets)
                .map(|_| {
                    (
                        gpu.storage_buffer("b3accel many out", cap, ::wgpu::BufferUsages::COPY_SRC),
                        read_buffer(gpu, "b3accel many readback", cap + 16),
                    )
                })
                .collect(),
            timer: None,
            empty: None,
        }
    }
}

/// Runs `f` with `hash_many` scratch of `sets` output sets of `cap` bytes and room for
/// `params_cap` dispatches, from the device's pool (kept for the next call when `f` succeeds)
/// or new.
fn with_many<R>(
    gpu: &Gpu,
    cap: u64,
    sets: usize,
    params_cap: u64,
    f: impl FnOnce(&mut ManyScratch) -> Result<R>,
) -> Result<R> {
    gpu.pool::<ManyScratch>().with(
        |s| s.cap >= cap && s.out.len() >= sets && s.params_cap >= params_cap,
        || Ok(ManyScratch::new(gpu, cap, sets, params_cap)),
        f,
    )
}

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
    scoped(&gpu.device, gpu.id, || {
        let mut t = Timings::default();
        // Messages per round: whole dispatches within the round's output bytes, a multiple of
        // 256 (so that every round's messages start aligned).
        let round = (gpu.many_round_bytes / (chunks * 32) / 256 * 256).max(256).min(count.next_multiple_of(256));
        let sets = if count > round { 2 } else { 1 };
        with_many(gpu, round * chunks * 32, sets, round.div_ceil(per), |scr| {
            let job = Many { data, offset, msg_len, chunks, per, domain, timed: timings.is_some() && gpu.timestamps };
            many_rounds(gpu, scr, &job, out, round as usize, &mut t)
        })?;
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
    scoped(&gpu.device, gpu.id, || {
        let timed = timings.is_some() && gpu.timestamps;
        let kernel = with_many(gpu, 0, 0, count.div_ceil(per), |scr| {
            let label = Some("b3accel many");
            let mut enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label });
            encode_many(gpu, scr, &mut enc, data, offset, msg_len, 1, per, domain, count, out, out_offset, timed)?;
            if !timed {
                let index = gpu.queue.submit([enc.finish()]);
                gpu.wait(&index, &MapTicket::work_done(&gpu.queue))?;
                return Ok(Duration::ZERO);
            }
            let (timer, times) = scr.timer.as_ref().ok_or_else(|| internal("no pass timer"))?;
            timer.finish(&mut enc, times, 0);
            submit_and_map(gpu, enc, &[times])?;
            let view = mapped(gpu, times)?;
            let d = PassTimer::duration(gpu, &view);
            drop(view);
            times.unmap();
            Ok(d)
        })?;
        if let Some(t) = timings {
            t.kernel += kernel;
            t.total = start.elapsed();
        }
        Ok(())
    })
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

/// A host-bound `hash_many` call: where the messages are and how they are hashed.
struct Many<'a> {
    data: &'a ::wgpu::Buffer,
    offset: u64,
    msg_len: u64,
    chunks: u64,
    /// Messages per dispatch.
    per: u64,
    domain: Domain,
    /// Time the passes (the device has timestamps and the caller asked).
    timed: bool,
}

/// A submitted round: the output set it fills, the results' place, its submission and mapping.
struct Round<'o> {
    set: usize,
    out: &'o mut [Cv],
    index: ::wgpu::SubmissionIndex,
    ticket: MapTicket,
}

/// Host-bound `hash_many` of `out.len()` messages in rounds of `round` messages: round k + 1 is
/// submitted before round k is copied out, so the device works while the host copies.
fn many_rounds(
    gpu: &Gpu,
    scr: &mut ManyScratch,
    job: &Many,
    out: &mut [Cv],
    round: usize,
    t: &mut Timings,
) -> Result<()> {
    let mut pending: Option<Round> = None;
    let mut first = 0u64;
    for (k, part) in out.chunks_mut(round).enumerate() {
        let set = k % scr.out.len();
        let m = part.len() as u64;
        let (index, ticket) = submit_round(gpu, scr, job, set, job.offset + first * job.msg_len, m)?;
        if let Some(done) = pending.take() {
            finish_round(gpu, scr, job, done, t)?;
        }
        pending = Some(Round { set, out: part, index, ticket });
        first += m;
    }
    match pending {
        Some(done) => finish_round(gpu, scr, job, done, t),
        None => Ok(()),
    }
}

/// Encodes and submits one round of `count` messages from byte `offset` into output set `set`,
/// and asks for its readback to be mapped.
fn submit_round(
    gpu: &Gpu,
    scr: &mut ManyScratch,
    job: &Many,
    set: usize,
    offset: u64,
    count: u64,
) -> Result<(::wgpu::SubmissionIndex, MapTicket)> {
    let out_bytes = count * job.chunks * 32;
    let (cvs, readback) =
        scr.out.get(set).cloned().ok_or_else(|| internal("hash_many scratch without output buffers"))?;
    if out_bytes > scr.cap {
        return Err(internal("hash_many round larger than its scratch"));
    }
    let mut enc = gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel many") });
    let (msg_len, chunks, per, domain) = (job.msg_len, job.chunks, job.per, job.domain);
    encode_many(gpu, scr, &mut enc, job.data, offset, msg_len, chunks, per, domain, count, &cvs, 0, job.timed)?;
    enc.copy_buffer_to_buffer(&cvs, 0, &readback, 0, out_bytes);
    if let Some((timer, _)) = scr.timer.as_ref().filter(|_| job.timed) {
        timer.finish(&mut enc, &readback, scr.cap);
    }
    let index = gpu.queue.submit([enc.finish()]);
    Ok((index, MapTicket::begin(&readback, ::wgpu::MapMode::Read)))
}

/// Waits for a submitted round and copies its results out (in parallel where there are many).
fn finish_round(gpu: &Gpu, scr: &ManyScratch, job: &Many, round: Round, t: &mut Timings) -> Result<()> {
    use rayon::prelude::*;
    /// Hashes per parallel piece of the copy out.
    const PIECE: usize = 8 << 10;
    let readback = &scr.out[round.set].1;
    gpu.wait(&round.index, &round.ticket)?;
    let t_read = Instant::now();
    let view = mapped(gpu, readback)?;
    let chunks = job.chunks as usize;
    let got = view[..round.out.len() * chunks * 32].as_chunks::<32>().0;
    if chunks == 1 {
        round.out.par_chunks_mut(PIECE).zip(got.par_chunks(PIECE)).for_each(|(o, g)| o.copy_from_slice(g));
    } else {
        round
            .out
            .par_iter_mut()
            .zip(got.par_chunks_exact(chunks))
            .with_min_len(PIECE / chunks)
            .for_each(|(hash, cvs)| *hash = root_from_chunk_cvs(cvs, job.domain).root_hash());
    }
    if job.timed {
        let at = scr.cap as usize;
        t.kernel += PassTimer::duration(gpu, &view[at..at + 16]);
    }
    drop(view);
    readback.unmap();
    t.download += t_read.elapsed();
    Ok(())
}
