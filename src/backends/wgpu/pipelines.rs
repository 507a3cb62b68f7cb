//! The shader module and its compute pipelines, built once per device.

use super::options::{Loads, ShaderChecks};
use crate::backends::gpu::layout;

/// The WGSL source: build.rs's generated prelude (BLAKE3's constants from src/core/constants.rs), then
/// shaders/blake3.wgsl. build.rs validated exactly this text with naga.
pub(crate) const SHADER_SOURCE: &str =
    concat!(include_str!(concat!(env!("OUT_DIR"), "/constants.wgsl")), include_str!("../../../shaders/blake3.wgsl"));

/// Invocations per workgroup, and items one workgroup reduces (`WG` in the shader).
pub(crate) const WORKGROUP: u32 = 256;
/// log2(WORKGROUP) (`LOG_WG` in the shader): one pass reduces 2^8 items to one.
pub(crate) const LOG_WORKGROUP: u32 = 8;
/// Workgroup memory of the direct chunk pass and the reduce pass: one CV per invocation.
pub(crate) const WORKGROUP_BYTES: u32 = WORKGROUP * 32;
/// Workgroup memory of the staged chunk pass: the CVs plus one padded block per invocation.
pub(crate) const STAGED_WORKGROUP_BYTES: u32 = WORKGROUP_BYTES + 16 * (WORKGROUP + 1) * 4;
/// Bytes of `Params` in the shader, and the stride between per-pass parameter blocks (the
/// largest `min_uniform_buffer_offset_alignment` WebGPU allows).
pub(crate) const PARAMS_BYTES: u64 = 64;
pub(crate) const PARAMS_STRIDE: u64 = 256;
/// Bytes of one segment's pieces (`gpu::layout`), as wgpu's sizes and offsets count them.
pub(crate) const PIECES_BYTES: u64 = layout::PIECES_BYTES as u64;

/// One pass's parameters, laid out as the shader's `Params`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Params {
    pub key: [u32; 8],
    pub counter: u64,
    pub n_items: u32,
    pub flags: u32,
    pub piece_slot: u32,
    /// copy_tail: the tail's first word in its binding. A chunk pass: 16-byte words of the
    /// input's last chunk that follow its chunks in `src`, copied after the segment's pieces
    /// (0: none; `copy_last_chunk` in the shader).
    pub src_word: u32,
    /// Levels a workgroup reduces (`levels` in the shader; LOG_WORKGROUP + 1 in a segment's last
    /// pass).
    pub levels: u32,
    /// Each workgroup takes WORKGROUP >> group_shift items (0 but in a chunk pass over a small
    /// input; see `segment::chunk_group_shift`).
    pub group_shift: u32,
}

/// Everything but the key words, which may be secret.
impl std::fmt::Debug for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Params")
            .field("counter", &self.counter)
            .field("n_items", &self.n_items)
            .field("flags", &self.flags)
            .field("piece_slot", &self.piece_slot)
            .field("src_word", &self.src_word)
            .field("levels", &self.levels)
            .field("group_shift", &self.group_shift)
            .finish_non_exhaustive()
    }
}

impl Params {
    pub fn bytes(&self) -> [u8; PARAMS_BYTES as usize] {
        let words: [u32; 16] = [
            self.key[0],
            self.key[1],
            self.key[2],
            self.key[3],
            self.key[4],
            self.key[5],
            self.key[6],
            self.key[7],
            self.counter as u32,
            (self.counter >> 32) as u32,
            self.n_items,
            self.flags,
            self.piece_slot,
            self.src_word,
            self.levels,
            self.group_shift,
        ];
        let mut out = [0u8; PARAMS_BYTES as usize];
        for (o, w) in out.chunks_exact_mut(4).zip(words) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The compiled pipelines of one device.
pub(crate) struct Pipelines {
    /// Layout of the hashing passes: src, dst, pieces, params (dynamic offset).
    pub layout: ::wgpu::BindGroupLayout,
    /// Layout of `copy_tail`: dst, params (dynamic offset), tail_src.
    pub tail_layout: ::wgpu::BindGroupLayout,
    pub chunk: ::wgpu::ComputePipeline,
    pub reduce: ::wgpu::ComputePipeline,
    pub blocks: ::wgpu::ComputePipeline,
    pub tail: ::wgpu::ComputePipeline,
    /// Layout of `merkle_pass`: src (nodes), dst (the next level), pieces (inner nodes), Merkle
    /// params (binding 5, dynamic offset).
    pub merkle_layout: ::wgpu::BindGroupLayout,
    pub merkle: ::wgpu::ComputePipeline,
    /// `merkle_pass4`: the bulk levels, four nodes an invocation.
    pub merkle4: ::wgpu::ComputePipeline,
    /// Layout of `many_chunks`: dst (hashes or chunk CVs), tail_src (messages as words), many
    /// params (binding 6, dynamic offset).
    pub many_layout: ::wgpu::BindGroupLayout,
    pub many: ::wgpu::ComputePipeline,
    /// Layout of `many_vec4`: src (messages as vec4s), dst, many params (binding 6).
    pub many4_layout: ::wgpu::BindGroupLayout,
    pub many4: ::wgpu::ComputePipeline,
    /// Layout of `bao_place`: src (group CVs), dst (the outboard), pieces (inner nodes), bao
    /// params (binding 7, dynamic offset).
    pub bao_layout: ::wgpu::BindGroupLayout,
    pub bao_place: ::wgpu::ComputePipeline,
    /// Layout of `bao_fold`: src (pieces), dst (group CVs), tail_src (the partial chunk), bao
    /// params (binding 7, dynamic offset).
    pub fold_layout: ::wgpu::BindGroupLayout,
    pub bao_fold: ::wgpu::ComputePipeline,
    pub loads: Loads,
    pub checks: ShaderChecks,
}

fn storage(binding: u32, read_only: bool) -> ::wgpu::BindGroupLayoutEntry {
    ::wgpu::BindGroupLayoutEntry {
        binding,
        visibility: ::wgpu::ShaderStages::COMPUTE,
        ty: ::wgpu::BindingType::Buffer {
            ty: ::wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

fn params_entry() -> ::wgpu::BindGroupLayoutEntry {
    uniform_entry(3)
}

fn uniform_entry(binding: u32) -> ::wgpu::BindGroupLayoutEntry {
    ::wgpu::BindGroupLayoutEntry {
        binding,
        visibility: ::wgpu::ShaderStages::COMPUTE,
        ty: ::wgpu::BindingType::Buffer {
            ty: ::wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: ::wgpu::BufferSize::new(PARAMS_BYTES),
        },
        count: None,
    }
}

impl Pipelines {
    /// Compiles the shader and builds the pipelines on `device`, through the driver's pipeline
    /// cache `cache` where there is one. Errors (a driver that rejects the shader) surface
    /// through the caller's error scope.
    pub fn new(
        device: &::wgpu::Device,
        loads: Loads,
        checks: ShaderChecks,
        cache: Option<&::wgpu::PipelineCache>,
    ) -> Pipelines {
        let desc = ::wgpu::ShaderModuleDescriptor {
            label: Some("blake3.wgsl"),
            source: ::wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        };
        let module = match checks {
            ShaderChecks::BoundsChecked => device.create_shader_module(desc),
            // SAFETY: every storage access of blake3.wgsl is in bounds by construction, which is
            // what `ShaderRuntimeChecks::unchecked()` asks of the caller: the host binds exactly
            // `n_items` chunks (1024 bytes) or CVs (32 bytes) as `src` and only invocations with
            // an item index below `n_items` read it; `dst` holds one CV per full workgroup and
            // only full workgroups write it; `pieces` holds 64 slots and slot = the levels of the earlier passes + bit
            // stays below 64 because a segment has fewer than 2^32 chunks; a chunk pass with
            // `src_word` > 0 has `src` bound to `src_word` more 16-byte words and `pieces` to
            // `src_word` more after its 64 slots (`Gpu::prepare_segment`); `tail_src` is bound
            // to at least `src_word + n_items` words; workgroup arrays are indexed below their
            // constant sizes (`lid < WG`, `w < 16`). Loops have constant or uniform bounds.
            // `merkle_pass` and `merkle_pass4` read nodes below `n_local` of `src` (bound to exactly that many),
            // writes `dst` below ceil(n_total / 2^levels) and, with `keep`, `pieces` below
            // n_total - 1 + inner_at (the host binds the whole inner buffer); its workgroup slots
            // are below WG. `many_chunks` reads `tail_src` only below `n_words` (checked in the
            // shader) and writes `dst` below `n_items` CVs (bound to that many); `many_vec4` reads `src`
            // only below the bound messages' bytes / 16 (see the shader) and writes as `many_chunks`.
            // `bao_place` reads nodes below n of `src` and below n - 1 of `pieces`, writes `pieces`
            // below n + 1 (the host binds inner buffers of n + 1 nodes) and `dst` below n - 1 pairs;
            // `bao_fold` reads `src` slots below 32 (bound to all 64), `tail_src` below
            // ceil(partial_len / 4) words (bound to that many) and writes node `group` of `dst`.
            ShaderChecks::Trusted => unsafe {
                device.create_shader_module_trusted(desc, ::wgpu::ShaderRuntimeChecks::unchecked())
            },
        };
        let layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel passes"),
            entries: &[storage(0, true), storage(1, false), storage(2, false), params_entry()],
        });
        let tail_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel copy_tail"),
            entries: &[storage(1, false), params_entry(), storage(4, true)],
        });
        let merkle_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel merkle_pass"),
            entries: &[storage(0, true), storage(1, false), storage(2, false), uniform_entry(5)],
        });
        let many_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel many_chunks"),
            entries: &[storage(1, false), storage(4, true), uniform_entry(6)],
        });
        let many4_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel many_vec4"),
            entries: &[storage(0, true), storage(1, false), uniform_entry(6)],
        });
        let bao_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel bao_place"),
            entries: &[storage(0, true), storage(1, false), storage(2, false), uniform_entry(7)],
        });
        let fold_layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
            label: Some("b3accel bao_fold"),
            entries: &[storage(0, true), storage(1, false), storage(4, true), uniform_entry(7)],
        });
        let make = |bgl: &::wgpu::BindGroupLayout, entry: &str| {
            let pl = device.create_pipeline_layout(&::wgpu::PipelineLayoutDescriptor {
                label: Some(entry),
                bind_group_layouts: &[Some(bgl)],
                immediate_size: 0,
            });
            device.create_compute_pipeline(&::wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(entry),
                compilation_options: ::wgpu::PipelineCompilationOptions {
                    constants: &[],
                    // No pass reads workgroup memory it did not write in the same dispatch
                    // (the staged pass's idle lanes read stale words but never store them).
                    zero_initialize_workgroup_memory: false,
                },
                cache,
            })
        };
        let chunk_entry = match loads {
            Loads::Direct => "chunk_pass",
            Loads::Staged => "chunk_pass_staged",
        };
        Pipelines {
            chunk: make(&layout, chunk_entry),
            reduce: make(&layout, "reduce_pass"),
            blocks: make(&layout, "hash_blocks"),
            tail: make(&tail_layout, "copy_tail"),
            merkle: make(&merkle_layout, "merkle_pass"),
            merkle4: make(&merkle_layout, "merkle_pass4"),
            many: make(&many_layout, "many_chunks"),
            many4: make(&many4_layout, "many_vec4"),
            many4_layout,
            bao_place: make(&bao_layout, "bao_place"),
            bao_layout,
            bao_fold: make(&fold_layout, "bao_fold"),
            fold_layout,
            merkle_layout,
            many_layout,
            layout,
            tail_layout,
            loads,
            checks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shader_constants_match_the_host() {
        assert!(SHADER_SOURCE.contains(&format!("const WG: u32 = {WORKGROUP}u;")));
        assert!(SHADER_SOURCE.contains(&format!("const LOG_WG: u32 = {LOG_WORKGROUP}u;")));
        assert!(SHADER_SOURCE.contains(&format!("const STAGE_ROW: u32 = {}u;", WORKGROUP + 1)));
        assert_eq!(1 << LOG_WORKGROUP, WORKGROUP);
        assert!(SHADER_SOURCE.contains("@workgroup_size(256)"));
        assert!(!SHADER_SOURCE.contains(&format!("@workgroup_size({})", WORKGROUP / 2)));
    }
}
