//! A worker's segment buffers for streaming host inputs: device buffers, each fed from a pinned
//! staging buffer mapped once.

use super::device::OpenDevice;
use super::errors::cl_err;
use crate::tree::{Device, Error, Result};
use ocl::core::{self, CommandQueue, Event, MapFlags, Mem, MemFlags, MemMap};

/// A mapped staging buffer's host pointer.
pub(super) struct Mapped(pub(super) MemMap<u8>);

// SAFETY: the pointer is to pinned host memory owned by the slot's staging buffer, which lives as
// long as the `Mapped` does; only the worker holding it (one thread at a time, through the pool's
// mutex) writes through it.
unsafe impl Send for Mapped {}

pub(super) struct Slot {
    pub(super) device: Mem,
    pub(super) staging: Mem,
    pub(super) map: Mapped,
    /// The last upload from the staging buffer.
    pub(super) upload: Option<Event>,
    /// The last kernel that read the device buffer.
    pub(super) reader: Option<Event>,
}

/// A worker's segment buffers.
pub(crate) struct StreamBuffers {
    pub seg: usize,
    pub(super) slots: Vec<Slot>,
    queue: CommandQueue,
}

impl Drop for StreamBuffers {
    fn drop(&mut self) {
        for s in &self.slots {
            let _ =
                core::enqueue_unmap_mem_object(&self.queue, &s.staging, &s.map.0, None::<&Event>, None::<&mut Event>);
        }
        let _ = core::finish(&self.queue);
    }
}

impl StreamBuffers {
    /// `be.staging_slots` pairs of a device buffer and a mapped pinned staging buffer of `seg`
    /// bytes each, in `context`, mapped and touched on `transfer`.
    pub(super) fn new(
        device: Device,
        context: &core::Context,
        transfer: &CommandQueue,
        be: &OpenDevice,
        seg: usize,
    ) -> Result<StreamBuffers> {
        let oom = |detail: String| Error::OutOfMemory { device, detail };
        if seg as u64 > be.max_alloc_bytes {
            return Err(oom(format!(
                "a {seg}-byte segment buffer is over the backend's limit of {} bytes",
                be.max_alloc_bytes
            )));
        }
        if seg as u64 > be.limits.max_alloc {
            return Err(oom(format!(
                "a {seg}-byte segment buffer is over the device's largest allocation, {} bytes",
                be.limits.max_alloc
            )));
        }
        let count = be.staging_slots;
        let mut bufs = StreamBuffers { seg, slots: Vec::with_capacity(count), queue: transfer.clone() };
        for _ in 0..count {
            let alloc = |flags| {
                // SAFETY: a plain allocation with no host pointer.
                unsafe { core::create_buffer::<_, u8>(context, flags, seg, None) }
                    .map_err(|e| cl_err(device, "allocating a segment buffer", e))
            };
            let dev = alloc(MemFlags::READ_ONLY)?;
            let staging = alloc(MemFlags::READ_ONLY | MemFlags::ALLOC_HOST_PTR)?;
            // SAFETY: a blocking map of the whole buffer; it stays mapped until `drop` unmaps it.
            let map = unsafe {
                core::enqueue_map_buffer::<u8, _, _, _>(
                    transfer,
                    &staging,
                    true,
                    MapFlags::WRITE_INVALIDATE_REGION,
                    0,
                    seg,
                    None::<&Event>,
                    None::<&mut Event>,
                )
            }
            .map_err(|e| cl_err(device, "mapping a staging buffer", e))?;
            bufs.slots.push(Slot { device: dev, staging, map: Mapped(map), upload: None, reader: None });
            // Touch the device buffer so that a driver that allocates lazily fails here, where
            // a smaller segment can still be tried, and not in the middle of a hash.
            let zeros = [0u8; 16];
            let last = bufs.slots.last().expect("pushed above");
            // SAFETY: a blocking write of a local array.
            unsafe {
                core::enqueue_write_buffer(
                    transfer,
                    &last.device,
                    true,
                    seg.saturating_sub(16),
                    &zeros[..seg.min(16)],
                    None::<&Event>,
                    None::<&mut Event>,
                )
            }
            .map_err(|e| cl_err(device, "allocating a segment buffer", e))?;
        }
        Ok(bufs)
    }
}
