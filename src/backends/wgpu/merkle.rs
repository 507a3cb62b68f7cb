//! Merkle trees on a wgpu device (`merkle_pass` in shaders/blake3.wgsl), for leaves already on
//! the device; the [`Backend`](crate::Backend) override of [`WgpuBackend`](super::WgpuBackend)
//! uploads host leaves and calls the same code.
//!
//! A Merkle tree takes one dispatch per `merkle_levels` levels while a level is large (4 by
//! default; `merkle_pass4`, a workgroup of 256 invocations taking 1024 nodes, the first two
//! levels in each invocation's registers), and one per 9 levels once it is small
//! (`merkle_pass`: 512 nodes reduced by up to 9 levels: 2^25 leaves are 4 dispatches), all in one compute
//! pass of one submission; only the root (32 bytes) comes back unless the inner nodes are asked for. Levels
//! larger than one storage binding are split over several dispatches, and every dispatch uses a
//! 2D grid, so neither the binding size nor the 65535 workgroups per dimension limit the leaf
//! count.

use super::device::{Gpu, PooledScratch};
use super::errors::scoped;
use super::passes::{
    binding, check_buffer, grid, mapped, max_binding, params_bytes, read_buffer, submit_and_map, write_params,
    PassTimer,
};
use super::pipelines::{LOG_WORKGROUP, PARAMS_BYTES, PARAMS_STRIDE, WORKGROUP};
use crate::backends::gpu::merkle_plan::{levels_by_size, merkle_passes, MerklePass, LARGE_LEVEL};
use crate::backends::gpu::resident::MerkleInner;
use crate::core::compress::Cv;
use crate::core::constants::flags;
use crate::tree::{Error, Result, Timings};
use std::time::Instant;

/// Levels one `merkle_pass` dispatch reduces at most: 512 nodes per workgroup down to one.
const MERKLE_SPAN: u32 = LOG_WORKGROUP + 1;
/// Nodes one workgroup of `merkle_pass` takes.
const GROUP_NODES: u64 = 2 * WORKGROUP as u64;
/// Nodes one workgroup of `merkle_pass4` (the bulk levels, four nodes an invocation) takes.
const GROUP_NODES4: u64 = 4 * WORKGROUP as u64;

/// Whether a pass runs `merkle_pass4`: a large level (see [`LARGE_LEVEL`]) reduced by at least
/// the two levels one invocation makes in registers.
/// Four nodes an invocation take less device time than two (docs/performance.md).
fn four_per_invocation(pass: &MerklePass) -> bool {
    pass.levels >= 2 && pass.count >= LARGE_LEVEL
}

/// What one Merkle call needs on the device besides the leaves, kept per device between calls
/// (level buffers, parameters, the root's readback, timestamps, and the bind groups that name
/// only these buffers), so that a call allocates nothing once warm.
pub(crate) struct MerkleScratch {
    pub(super) size_a: u64,
    pub(super) size_b: u64,
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

impl PooledScratch for MerkleScratch {
    const MAX_IDLE: usize = 2;
    fn bytes(&self) -> u64 {
        self.size_a + self.size_b
    }
}

/// Whether the last pass writes the root straight into the readback buffer (`STORAGE |
/// MAP_READ`, where the device has mappable storage, as the resident hash's pieces do), instead
/// of a level buffer that a copy then brings to it: one command less per call.
fn mapped_root(gpu: &Gpu) -> bool {
    gpu.mapped_pieces
}

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
            readback: if mapped_root(gpu) {
                gpu.storage_buffer(
                    "b3accel merkle root",
                    64,
                    ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
                )
            } else {
                read_buffer(gpu, "b3accel merkle root", 64)
            },
            timer: None,
            groups: Vec::new(),
        }
    }
}

/// Where a tree's inner nodes go, on this backend.
pub(super) type Inner<'a> = MerkleInner<'a, ::wgpu::Buffer>;

/// A Merkle parent of the merkle module's trees is the plain BLAKE3 hash of its pair.
pub(super) const MERKLE_FLAGS: u32 = flags::CHUNK_START | flags::CHUNK_END | flags::ROOT;

/// The root of the Merkle tree over the `n` leaves (32 bytes each) of `leaves` at byte `offset`,
/// each parent the compression of its pair with the IV and `flags` ([`MERKLE_FLAGS`] for the
/// merkle module's trees), and every inner node, level by level, where `inner` asks. `timings` gets the pass's device
/// time (`kernel`, timestamps where available), the host's reading of the results (`download`)
/// and the wall time (`total`).
pub(crate) fn merkle(
    gpu: &Gpu,
    leaves: &::wgpu::Buffer,
    offset: u64,
    n: u64,
    inner: Inner<'_>,
    flags: u32,
    timings: Option<&mut Timings>,
) -> Result<Cv> {
    let start = Instant::now();
    if n == 0 {
        return Err(Error::InvalidInput("a Merkle tree needs at least one leaf".to_string()));
    }
    let bytes = n.checked_mul(32).ok_or_else(|| Error::InvalidInput(format!("{n} leaves overflow")))?;
    check_buffer(gpu, "merkle", leaves, offset, bytes)?;
    match &inner {
        MerkleInner::None => {}
        MerkleInner::Host(h) => {
            if h.len() as u64 != n - 1 {
                return Err(Error::InvalidInput(format!(
                    "merkle: {n} leaves have {} inner nodes, but inner has room for {}",
                    n - 1,
                    h.len()
                )));
            }
        }
        MerkleInner::Device(b) => check_buffer(gpu, "merkle inner nodes", b, 0, (n - 1) * 32)?,
    }
    let bind_max = max_binding(gpu);
    if n >= 1 << 31 {
        return Err(Error::InvalidInput(format!("merkle: {n} leaves are more than the 2^31 - 1 supported")));
    }
    if !matches!(inner, MerkleInner::None) && (n - 1) * 32 > bind_max {
        return Err(Error::InvalidInput(format!(
            "merkle: the {} inner nodes of {n} leaves do not fit in one storage binding of this device ({bind_max} bytes)",
            n - 1
        )));
    }
    gpu.check_health()?;
    scoped(&gpu.device, gpu.id, || merkle_on_device(gpu, leaves, offset, n, inner, flags, timings, start))
}

#[allow(clippy::too_many_arguments)]
fn merkle_on_device(
    gpu: &Gpu,
    leaves: &::wgpu::Buffer,
    offset: u64,
    n: u64,
    inner: Inner<'_>,
    flags: u32,
    timings: Option<&mut Timings>,
    start: Instant,
) -> Result<Cv> {
    let plan = MerklePlan::new(gpu, n, offset, !matches!(inner, MerkleInner::None), flags)?;
    with_scratch(gpu, &plan, |scr| merkle_with(gpu, scr, leaves, n, &plan, inner, timings, start))
}

/// A Merkle reduction planned for a device: its passes, and every dispatch of them.
struct MerklePlan {
    passes: Vec<MerklePass>,
    dispatches: Vec<MerkleDispatch>,
    /// Whether every inner node is kept.
    keep: bool,
}

impl MerklePlan {
    /// The plan for `n` leaves at byte `offset` of their buffer, parents hashed with `flags`,
    /// every inner node kept where `keep`.
    fn new(gpu: &Gpu, n: u64, offset: u64, keep: bool, flags: u32) -> Result<MerklePlan> {
        // `merkle_span` levels per pass while the level is large, as far as a workgroup goes once
        // it is small, and more (up to MERKLE_SPAN) where a pass's output level would not fit in
        // one storage binding (each pass binds its whole output level).
        let max_out = max_binding(gpu) / 32;
        let passes = merkle_passes(n, |count| {
            let mut levels = levels_by_size(count, gpu.merkle_span, MERKLE_SPAN).clamp(1, MERKLE_SPAN);
            while levels < MERKLE_SPAN && count.div_ceil(1 << levels) > max_out {
                levels += 1;
            }
            levels
        });
        let per_binding = (max_binding(gpu) / 32 / GROUP_NODES4) * GROUP_NODES4;
        if per_binding == 0 {
            return Err(Error::Unavailable {
                device: gpu.id,
                reason: "storage bindings too small for a workgroup's Merkle nodes".into(),
            });
        }
        // Every dispatch: (pass, src byte offset, nodes, grid, params); pass 0 reads the leaves,
        // pass p > 0 the level buffer pass p - 1 wrote.
        let mut dispatches = Vec::new();
        for (p, pass) in passes.iter().enumerate() {
            let src_base = if p == 0 { offset } else { 0 };
            let wide = four_per_invocation(pass);
            let group_nodes = if wide { GROUP_NODES4 } else { GROUP_NODES };
            let mut first = 0u64;
            while first < pass.count {
                let local = per_binding.min(pass.count - first);
                let groups = local.div_ceil(group_nodes);
                let params = [
                    local as u32,
                    pass.count as u32,
                    (first / group_nodes) as u32,
                    groups as u32,
                    pass.levels,
                    u32::from(keep),
                    pass.inner_at as u32,
                    flags,
                ];
                dispatches.push((p, src_base + first * 32, local, grid(gpu, groups)?, params, wide));
                first += local;
            }
        }
        Ok(MerklePlan { passes, dispatches, keep })
    }
}

/// Runs `f` with this device's Merkle scratch, large enough for `plan`: level buffers in turn,
/// pass p writing `a` when p is even (pass p + 2 needs 2^span^2 times less room than pass p),
/// `b` when odd.
fn with_scratch<R>(gpu: &Gpu, plan: &MerklePlan, f: impl FnOnce(&mut MerkleScratch) -> Result<R>) -> Result<R> {
    let size_a = plan.passes[0].out * 32;
    let size_b = plan.passes.get(1).map_or(32, |p| p.out * 32);
    let params_cap = plan.dispatches.len() as u64;
    gpu.pool::<MerkleScratch>().with(
        |s| s.size_a >= size_a && s.size_b >= size_b && s.params_cap >= params_cap,
        || Ok(MerkleScratch::new(gpu, size_a, size_b, params_cap.max(16))),
        f,
    )
}

/// Records into `enc` the reduction of the `n >= 2` leaves at the start of `leaves`, each parent
/// the compression of its pair with the IV and `flags`, every inner node into `inner` (at least
/// `(n - 1) * 32` bytes, the layout of `merkle::level_sizes`); then runs `f` with the encoder,
/// which must submit it before it returns: the parameters the dispatches read live in scratch
/// that the next call may rewrite once `f` returns.
pub(crate) fn record_kept<R>(
    gpu: &Gpu,
    mut enc: ::wgpu::CommandEncoder,
    leaves: &::wgpu::Buffer,
    n: u64,
    inner: &::wgpu::Buffer,
    flags: u32,
    f: impl FnOnce(::wgpu::CommandEncoder) -> Result<R>,
) -> Result<R> {
    debug_assert!(n >= 2 && inner.size() >= (n - 1) * 32);
    let plan = MerklePlan::new(gpu, n, 0, true, flags)?;
    with_scratch(gpu, &plan, |scr| {
        record(gpu, scr, &mut enc, leaves, &plan, Some((inner, inner.size())), false);
        f(enc)
    })
}

/// Records `plan`'s dispatches over `leaves` into `enc`, in one compute pass (timed by the
/// scratch's timer where `timed`), with every inner node into `inner` (buffer, bytes bound) where the plan keeps
/// them; the last pass writes the root to node 0 of the scratch's readback buffer where
/// [`mapped_root`], else of its last level buffer. The parameters go through the queue, ahead
/// of the caller's submission.
#[allow(clippy::too_many_arguments)]
fn record(
    gpu: &Gpu,
    scr: &mut MerkleScratch,
    enc: &mut ::wgpu::CommandEncoder,
    leaves: &::wgpu::Buffer,
    plan: &MerklePlan,
    inner: Option<(&::wgpu::Buffer, u64)>,
    timed: bool,
) {
    let (passes, dispatches, keep) = (&plan.passes, &plan.dispatches, plan.keep);
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
        let dst = if p + 1 == passes.len() && mapped_root(gpu) {
            &scr.readback
        } else if p.is_multiple_of(2) {
            &scr.a
        } else {
            &scr.b
        };
        let (pieces, pieces_size) = inner.unwrap_or((&scr.dummy, scr.dummy.size()));
        gpu.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("b3accel merkle_pass"),
            layout: &gpu.pipes.merkle_layout,
            entries: &[
                ::wgpu::BindGroupEntry { binding: 0, resource: binding(src, src_at, local * 32) },
                ::wgpu::BindGroupEntry { binding: 1, resource: dst.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 2, resource: binding(pieces, 0, pieces_size) },
                ::wgpu::BindGroupEntry { binding: 5, resource: binding(&scr.params, 0, PARAMS_BYTES) },
            ],
        })
    };
    // The first pass's groups name the caller's buffer: made per call, never kept.
    let mut bind_groups = Vec::with_capacity(dispatches.len());
    for &(p, src_at, local, _, _, _) in dispatches {
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
    let timer = scr.timer.as_ref().filter(|_| timed);
    let mut pass = enc.begin_compute_pass(&::wgpu::ComputePassDescriptor {
        label: Some("b3accel merkle"),
        timestamp_writes: timer.map(PassTimer::writes),
    });
    let mut wide = None;
    for (i, (d, bg)) in dispatches.iter().zip(&bind_groups).enumerate() {
        if wide != Some(d.5) {
            pass.set_pipeline(if d.5 { &gpu.pipes.merkle4 } else { &gpu.pipes.merkle });
            wide = Some(d.5);
        }
        pass.set_bind_group(0, bg, &[(i as u64 * PARAMS_STRIDE) as u32]);
        pass.dispatch_workgroups(d.3 .0, d.3 .1, 1);
    }
}

/// (pass, source byte offset, nodes, grid, parameters, `merkle_pass4`).
type MerkleDispatch = (usize, u64, u64, (u32, u32), [u32; 8], bool);

#[allow(clippy::too_many_arguments)]
fn merkle_with(
    gpu: &Gpu,
    scr: &mut MerkleScratch,
    leaves: &::wgpu::Buffer,
    n: u64,
    plan: &MerklePlan,
    inner: Inner<'_>,
    timings: Option<&mut Timings>,
    start: Instant,
) -> Result<Cv> {
    let passes = &plan.passes;
    // Host inner nodes are written to a buffer of the call's own and copied back; a device
    // buffer is written in place (a single leaf has no inner node to write there).
    let own_inner = matches!(inner, MerkleInner::Host(_))
        .then(|| gpu.storage_buffer("b3accel merkle inner", ((n - 1) * 32).max(32), ::wgpu::BufferUsages::COPY_SRC));
    let inner_buf = match &inner {
        MerkleInner::Device(b) if n > 1 => Some((*b, (n - 1) * 32)),
        _ => own_inner.as_ref().map(|b| (b, b.size())),
    };
    if timings.is_some() && gpu.timestamps && scr.timer.is_none() {
        scr.timer = PassTimer::new(gpu, true);
    }
    let timed = timings.is_some() && scr.timer.is_some();
    let inner_rb =
        (own_inner.is_some() && n > 1).then(|| read_buffer(gpu, "b3accel merkle inner readback", (n - 1) * 32));
    let mut enc =
        gpu.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("b3accel merkle") });
    record(gpu, scr, &mut enc, leaves, plan, inner_buf, timed);
    let timer = scr.timer.as_ref().filter(|_| timed);
    if !mapped_root(gpu) {
        let root_buf = if (passes.len() - 1).is_multiple_of(2) { &scr.a } else { &scr.b };
        enc.copy_buffer_to_buffer(root_buf, 0, &scr.readback, 0, 32);
    }
    if let Some(t) = timer {
        t.finish(&mut enc, &scr.readback, 32);
    }
    if let (Some(rb), Some(ib)) = (&inner_rb, &own_inner) {
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
    if let (MerkleInner::Host(inner), Some(rb)) = (inner, &inner_rb) {
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
