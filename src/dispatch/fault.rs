//! `B3ACCEL_FAULT`: a testing aid that makes one GPU device fail, so that what happens when a
//! real one runs out of memory or is lost mid-run can be tested on any machine, from a test or
//! from a script running the `b3accel` binary.
//!
//! `B3ACCEL_FAULT=<device>:<k>:<oom|lost>` (for example `opencl:0:2:lost`): the backend opened
//! for that device answers its first `k` calls as usual and fails every later one, with
//! [`Error::OutOfMemory`] (`oom`) or a device-lost [`Error::Device`] (`lost`). A call is one
//! call of a [`Backend`] method (a hash of host memory is one or a few, a `Hasher` makes one per
//! batch). Only GPU devices can be made to fail. A malformed value makes every GPU device fail
//! to open with an error that quotes it, so that a typo cannot pass for a passing test.

use crate::core::compress::Cv;
use crate::tree::{Backend, Device, DeviceInfo, Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The environment variable.
pub(crate) const FAULT_ENV: &str = "B3ACCEL_FAULT";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    OutOfMemory,
    Lost,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fault {
    device: Device,
    after: u64,
    failure: Failure,
}

fn parse(value: &str) -> std::result::Result<Fault, String> {
    let bad = |why: &str| format!("{FAULT_ENV}={value:?}: {why} (expected <device>:<calls>:<oom|lost>)");
    let mut parts = value.rsplitn(3, ':');
    let (failure, after, device) = match (parts.next(), parts.next(), parts.next()) {
        (Some(f), Some(a), Some(d)) => (f, a, d),
        _ => return Err(bad("too few fields")),
    };
    let failure = match failure.trim().to_ascii_lowercase().as_str() {
        "oom" => Failure::OutOfMemory,
        "lost" => Failure::Lost,
        _ => return Err(bad("the failure must be oom or lost")),
    };
    let after = after.trim().parse::<u64>().map_err(|_| bad("the number of calls is not a number"))?;
    let device = device.parse::<Device>().map_err(|e| bad(&e.to_string()))?;
    if !device.is_gpu() {
        return Err(bad("only a device of a GPU backend (such as opencl:N or wgpu:N) can be made to fail"));
    }
    Ok(Fault { device, after, failure })
}

/// The knob's setting, read once per process.
fn setting() -> &'static std::result::Result<Option<Fault>, String> {
    static SETTING: OnceLock<std::result::Result<Option<Fault>, String>> = OnceLock::new();
    SETTING.get_or_init(|| match std::env::var(FAULT_ENV) {
        Ok(v) if !v.trim().is_empty() => parse(v.trim()).map(Some),
        _ => Ok(None),
    })
}

/// The backend just opened for `device`, made to fail as the knob says where it names this
/// device; an error for every GPU device where the knob is malformed.
pub(crate) fn wrap(device: Device, opened: Arc<dyn Backend>) -> Result<Arc<dyn Backend>> {
    match setting() {
        Err(msg) => Err(Error::InvalidInput(msg.clone())),
        Ok(Some(fault)) if fault.device == device => {
            Ok(Arc::new(Faulty { inner: opened, fault: *fault, calls: AtomicU64::new(0) }))
        }
        Ok(_) => Ok(opened),
    }
}

/// A backend that fails after a number of calls.
struct Faulty {
    inner: Arc<dyn Backend>,
    fault: Fault,
    calls: AtomicU64,
}

impl Faulty {
    /// Counts a call; an error once more than `after` calls were made.
    fn call(&self) -> Result<()> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= self.fault.after {
            return Ok(());
        }
        let detail = format!("injected by {FAULT_ENV} at call {n} (after {} good calls)", self.fault.after);
        let device = self.fault.device;
        Err(match self.fault.failure {
            Failure::OutOfMemory => Error::OutOfMemory { device, detail },
            Failure::Lost => Error::Device { device, detail: format!("device lost: {detail}") },
        })
    }
}

impl Backend for Faulty {
    fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    fn batch_len(&self) -> usize {
        self.inner.batch_len()
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        self.call()?;
        self.inner.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        self.call()?;
        self.inner.hash_blocks(blocks, out)
    }

    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        self.call()?;
        self.inner.merkle(leaves, inner)
    }

    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        self.call()?;
        self.inner.hash_many(data, msg_len, key, flags, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::CpuBackend;
    use crate::core::constants::IV;

    #[test]
    fn settings_parse_or_say_why_not() {
        assert_eq!(parse("opencl:0:2:lost"), Ok(Fault { device: Device::OpenCl(0), after: 2, failure: Failure::Lost }));
        assert_eq!(
            parse("WGPU:1:0:OOM"),
            Ok(Fault { device: Device::Wgpu(1), after: 0, failure: Failure::OutOfMemory })
        );
        assert_eq!(
            parse("opencl:5:oom"),
            Ok(Fault { device: Device::OpenCl(0), after: 5, failure: Failure::OutOfMemory })
        );
        for bad in ["", "opencl", "opencl:0:x:oom", "opencl:0:1:fire", "cpu:1:oom", "auto:1:lost", "tpu:0:1:oom"] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains(FAULT_ENV) && err.contains("expected <device>"), "{err}");
        }
    }

    #[test]
    fn fails_after_k_calls_and_on_every_call_after() {
        let fault = Fault { device: Device::Wgpu(3), after: 2, failure: Failure::OutOfMemory };
        let f = Faulty { inner: Arc::new(CpuBackend::new()), fault, calls: AtomicU64::new(0) };
        let data = [1u8; 1024];
        let mut out = [[0u8; 32]; 1];
        for _ in 0..2 {
            f.chunk_subtrees(&data, 0, &IV, 0, &mut out).unwrap();
        }
        for _ in 0..3 {
            match f.hash_blocks(&[[0; 64]], &mut out) {
                Err(Error::OutOfMemory { device: Device::Wgpu(3), detail }) => assert!(detail.contains(FAULT_ENV)),
                other => panic!("expected an injected out-of-memory error, got {other:?}"),
            }
        }
        let lost = Faulty { fault: Fault { failure: Failure::Lost, after: 0, ..fault }, ..f };
        match lost.merkle(&[[0; 32]], None) {
            Err(Error::Device { detail, .. }) => assert!(detail.starts_with("device lost"), "{detail}"),
            other => panic!("expected an injected lost device, got {other:?}"),
        }
    }
}
