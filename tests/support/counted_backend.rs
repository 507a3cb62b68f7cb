//! A backend defined outside the crate, for the tests of the table of backends
//! (tests/registered_backend.rs, cli/tests/registered_backend.rs): a GPU backend whose "kernels"
//! are the CPU backend's, every call counted, so that a hash can be shown to have gone through it.
//! The tests register it as `counted` (`BackendEntry::gpu("counted", list, open)`).

use b3accel::{Backend, BackendId, Cv, Device, DeviceInfo, DeviceKind, Error};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The test backend's devices.
pub const DEVICES: usize = 2;

/// Calls that reached the test backend's devices, all of them together.
pub static CALLS: AtomicU64 = AtomicU64::new(0);

struct Counted {
    info: DeviceInfo,
    cpu: Arc<dyn Backend>,
}

impl Backend for Counted {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> b3accel::Result<()> {
        CALLS.fetch_add(1, Ordering::Relaxed);
        self.cpu.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> b3accel::Result<()> {
        CALLS.fetch_add(1, Ordering::Relaxed);
        self.cpu.hash_blocks(blocks, out)
    }
}

fn info(id: BackendId, index: usize) -> DeviceInfo {
    DeviceInfo {
        device: id.device(index),
        backend: id.into(),
        // A GPU API in software on the CPU, as PoCL and lavapipe are: Auto never picks it.
        kind: DeviceKind::Cpu,
        name: format!("counted device {index}"),
        api: "test".into(),
        driver: "tests/support/counted_backend.rs".into(),
        memory_bytes: None,
        compute_units: None,
    }
}

/// The backend's devices, as the table of backends lists them.
pub fn list(id: BackendId) -> b3accel::Result<Vec<DeviceInfo>> {
    Ok((0..DEVICES).map(|i| info(id, i)).collect())
}

/// Opens device `index`.
pub fn open(id: BackendId, index: usize) -> b3accel::Result<Arc<dyn Backend>> {
    if index >= DEVICES {
        return Err(Error::NoSuchDevice { device: id.device(index), available: DEVICES });
    }
    Ok(Arc::new(Counted { info: info(id, index), cpu: b3accel::backend(Device::Cpu)? }))
}
