//! The driver's pipeline cache kept between processes, where the device has one
//! (`Features::PIPELINE_CACHE`: Vulkan): one cache per device, made from the file the last
//! process wrote for the same adapter, driver and shader source, handed to every compute
//! pipeline, and written back once the pipelines are built if the driver's data changed. The
//! file's own header is checked (`gpu::cache_file`) before any byte reaches the driver;
//! the driver in turn ignores data it cannot use (`fallback: true`). Elsewhere nothing changes.

use super::pipelines::SHADER_SOURCE;
use crate::backends::gpu::cache_file::CacheFile;
use crate::core::cache;
use std::path::Path;

/// Whether devices should be opened with `Features::PIPELINE_CACHE` (where the adapter has it):
/// only when caches are on and there is a cache directory to keep one in.
pub(super) fn wanted() -> bool {
    cache::enabled() && cache::dir().is_some()
}

/// A device's pipeline cache and the file it came from and goes back to.
pub(crate) struct DiskCache {
    cache: ::wgpu::PipelineCache,
    file: CacheFile,
    /// What the file held (validated), to write back only a change.
    loaded: Option<Vec<u8>>,
}

impl DiskCache {
    /// The pipeline cache for `device`: `None` where it was opened without
    /// `Features::PIPELINE_CACHE`, wgpu keeps no cache for its backend, or caches are off.
    pub(super) fn open(device: &::wgpu::Device) -> Option<DiskCache> {
        if !device.features().contains(::wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let info = device.adapter_info();
        let adapter = ::wgpu::util::pipeline_cache_key(&info)?;
        let shader = blake3::hash(SHADER_SOURCE.as_bytes()).to_hex();
        let key = format!(
            "b3accel wgpu pipelines | {adapter} | {} | {:?} | driver: {} {} | shader: {shader}",
            info.name, info.backend, info.driver, info.driver_info
        );
        let file = CacheFile::new("wgpu", key)?;
        let loaded = file.load();
        // SAFETY: `loaded` is exactly what `PipelineCache::get_data` returned to `save` for an
        // adapter with this `pipeline_cache_key` (and the same name and driver): the file's
        // header names that key and carries the data's length and BLAKE3 hash, checked by
        // `CacheFile::load`; anything else was dropped there. With `fallback: true` the driver
        // still starts an empty cache if it cannot use the data.
        let cache = unsafe {
            device.create_pipeline_cache(&::wgpu::PipelineCacheDescriptor {
                label: Some("b3accel pipelines"),
                data: loaded.as_deref(),
                fallback: true,
            })
        };
        Some(DiskCache { cache, file, loaded })
    }

    /// The cache every compute pipeline of the device is built with.
    pub(super) fn cache(&self) -> &::wgpu::PipelineCache {
        &self.cache
    }

    /// The file the cache is kept in.
    pub(super) fn path(&self) -> &Path {
        self.file.path()
    }

    /// After the pipelines are built: writes the driver's data back if it differs from what the
    /// file held (new pipelines, or a missing, stale or damaged file).
    pub(super) fn save(&self) {
        if let Some(data) = self.cache.get_data() {
            if self.loaded.as_deref() != Some(&data[..]) {
                self.file.store(&data);
            }
        }
    }
}
