//! Waiting for a wgpu device: map callbacks that only record, and polling before blocking.

use super::device::{lock, Gpu};
use crate::tree::{Error, Result};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest wait for the device before a call gives up with an error.
const WAIT_LIMIT: Duration = Duration::from_secs(300);
/// How long [`Gpu::wait`] polls the device without blocking before it sleeps in the driver.
///
/// A blocking wait (`PollType::Wait`) sleeps in the driver and the kernel, and the host notices
/// a finished submission late (later the longer it slept) and runs the next call's host work
/// more slowly; polling (`PollType::Poll`, yielding the thread in between) makes device-resident
/// calls faster (docs/performance.md). It costs one CPU core (yielding to any other thread)
/// while a call waits, for at most this long, which covers a whole 4 GiB segment's kernels on a
/// fast GPU (docs/performance.md); longer waits then block.
const SPIN_LIMIT: Duration = Duration::from_millis(4);

/// A pending `map_async`: set by wgpu's callback, which only stores the outcome.
#[derive(Clone, Default)]
pub(crate) struct MapTicket(Arc<Mutex<Option<bool>>>);

impl MapTicket {
    pub(super) fn begin(buffer: &::wgpu::Buffer, mode: ::wgpu::MapMode) -> MapTicket {
        let t = MapTicket::default();
        let slot = t.0.clone();
        buffer.map_async(mode, .., move |r| {
            *lock(&slot) = Some(r.is_ok());
        });
        t
    }
    /// Done once the device has finished all work submitted to `queue` so far.
    pub(super) fn work_done(queue: &::wgpu::Queue) -> MapTicket {
        let t = MapTicket::default();
        let slot = t.0.clone();
        queue.on_submitted_work_done(move || {
            *lock(&slot) = Some(true);
        });
        t
    }
    pub(super) fn state(&self) -> Option<bool> {
        *lock(&self.0)
    }
}

impl Gpu {
    /// Waits until `done()` (a map callback has run), polling the device.
    pub(super) fn wait(&self, index: &::wgpu::SubmissionIndex, ticket: &MapTicket) -> Result<()> {
        let start = Instant::now();
        // First poll without blocking, for up to SPIN_LIMIT (see there).
        while ticket.state().is_none() && start.elapsed() < SPIN_LIMIT {
            if let Err(e) = self.device.poll(::wgpu::PollType::Poll) {
                return Err(Error::Device { device: self.id, detail: format!("polling the device failed: {e}") });
            }
            std::thread::yield_now();
        }
        loop {
            match ticket.state() {
                Some(true) => return Ok(()),
                Some(false) => {
                    self.check_health()?;
                    return Err(Error::Device {
                        device: self.id,
                        detail: "mapping a buffer for the host failed (device lost or out of memory?)".into(),
                    });
                }
                None => {}
            }
            self.check_health()?;
            match self.device.poll(::wgpu::PollType::Wait {
                submission_index: Some(index.clone()),
                timeout: Some(Duration::from_millis(500)),
            }) {
                Ok(_) | Err(::wgpu::PollError::Timeout) => {}
                Err(e) => {
                    return Err(Error::Device {
                        device: self.id,
                        detail: format!("waiting for the device failed: {e}"),
                    })
                }
            }
            if ticket.state().is_none() {
                if start.elapsed() > WAIT_LIMIT {
                    return Err(Error::Device {
                        device: self.id,
                        detail: format!("the device did not finish within {WAIT_LIMIT:?}"),
                    });
                }
                // Another thread's poll may be delivering our callback right now.
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
}
