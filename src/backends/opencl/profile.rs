//! Profiling: the driver's events of one call, summed into [`Timed`] or broken down into a
//! [`Profile`] of where the wall time went.

use crate::tree::{Timed, Timings};
use ocl::core::{self, Event};
use std::time::{Duration, Instant};

/// Where the wall time of one call on device-resident data went, from the driver's profiling
/// events and the host's clock (the `*_profiled` methods of [`OpenClBackend`](super::OpenClBackend)). The parts of
/// `total` are `before_device` (the host's work up to the first command), `enqueue` (the driver
/// call that enqueued it), `launch` (from its queuing to its start on the device), `device_span`
/// (from the first command's start to the last one's end: the kernels, and the gaps between
/// commands) and `after_device` (from the device's last command to the return: the host noticing,
/// and its own finishing). The driver stamps the first command as queued somewhere inside the
/// enqueuing call, and the last part relates the device's clock to the host's at the end of that
/// call, so `enqueue`, `launch` and `after_device` overlap by up to the enqueuing call's length.
///
/// ```
/// let p = b3accel::opencl::Profile::default();
/// assert_eq!(p.kernel, std::time::Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Host-to-device copies, summed.
    pub upload: Duration,
    /// Kernel execution, summed over dispatches.
    pub kernel: Duration,
    /// Device-to-host copies, summed.
    pub download: Duration,
    /// Wall time of the whole call.
    pub total: Duration,
    /// From the call's start to the first command's enqueuing: the host's own work.
    pub before_device: Duration,
    /// The driver call that enqueued the first command.
    pub enqueue: Duration,
    /// From the first command's queuing to its start on the device.
    pub launch: Duration,
    /// From the first command's start to the last command's end, on the device.
    pub device_span: Duration,
    /// From the last command's end to the call's return.
    pub after_device: Duration,
    /// How many commands the call enqueued.
    pub commands: usize,
}

/// What a profiling event measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Upload,
    Kernel,
    Download,
}

/// Profiling events collected during one call, summed into [`Timed`] once they are complete.
#[derive(Default)]
pub(crate) struct Prof {
    events: Vec<(Stage, Event)>,
    /// When the first command's enqueuing began and ended, on the host's clock.
    enqueuing: Option<Instant>,
    first_enqueued: Option<Instant>,
}

/// A profiling timestamp of an event, in nanoseconds of the device's clock.
fn stamp(ev: &Event, what: core::ProfilingInfo) -> Option<u64> {
    match core::get_event_profiling_info(ev, what) {
        Ok(
            core::ProfilingInfoResult::Start(v)
            | core::ProfilingInfoResult::End(v)
            | core::ProfilingInfoResult::Queued(v)
            | core::ProfilingInfoResult::Submit(v),
        ) => Some(v),
        _ => None,
    }
}

impl Prof {
    /// Marks the start of an enqueuing call (only the first one counts).
    pub fn begin(prof: &mut Option<&mut Prof>) {
        if let Some(p) = prof {
            p.enqueuing.get_or_insert_with(Instant::now);
        }
    }

    pub fn push(prof: &mut Option<&mut Prof>, stage: Stage, event: &Event) {
        if let Some(p) = prof {
            p.first_enqueued.get_or_insert_with(Instant::now);
            p.events.push((stage, event.clone()));
        }
    }

    /// Where the wall time of a call went that started at `start` and ended at `end`, from the
    /// events' timestamps. Only call once every event is complete.
    pub fn profile(&self, start: Instant, end: Instant) -> Profile {
        let t = self.timings();
        let ns = Duration::from_nanos;
        let mut p = Profile {
            upload: t.upload,
            kernel: t.kernel,
            download: t.download,
            total: end.saturating_duration_since(start),
            commands: self.events.len(),
            ..Profile::default()
        };
        let first = self.events.first().map(|(_, e)| e);
        let queued = first.and_then(|e| stamp(e, core::ProfilingInfo::Queued));
        let started = self.events.iter().filter_map(|(_, e)| stamp(e, core::ProfilingInfo::Start)).min();
        let ended = self.events.iter().filter_map(|(_, e)| stamp(e, core::ProfilingInfo::End)).max();
        if let (Some(q), Some(s), Some(e), Some(host)) = (queued, started, ended, self.first_enqueued) {
            let began = self.enqueuing.unwrap_or(host);
            p.before_device = began.saturating_duration_since(start);
            p.enqueue = host.saturating_duration_since(began);
            p.launch = ns(s.saturating_sub(q));
            p.device_span = ns(e.saturating_sub(s));
            // The host's clock when the device finished: the first command's queuing plus the
            // device's time from then to its last command's end.
            let finished = host + ns(e.saturating_sub(q));
            p.after_device = end.saturating_duration_since(finished);
        }
        p
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn truncate(&mut self, len: usize) {
        self.events.truncate(len);
    }

    /// `value` with the upload, kernel and download time, each summed over its commands, and the
    /// wall time since `start`. Only call once every event is complete.
    pub fn timed<T>(&self, value: T, start: Instant) -> Timed<T> {
        let mut t = self.timings();
        t.total = start.elapsed();
        t.with(value)
    }

    /// Upload, kernel and download time, each summed over its commands.
    fn timings(&self) -> Timings {
        let mut t = Timings::default();
        for (stage, ev) in &self.events {
            if let (Some(a), Some(b)) = (stamp(ev, core::ProfilingInfo::Start), stamp(ev, core::ProfilingInfo::End)) {
                let d = Duration::from_nanos(b.saturating_sub(a));
                match stage {
                    Stage::Upload => t.upload += d,
                    Stage::Kernel => t.kernel += d,
                    Stage::Download => t.download += d,
                }
            }
        }
        t
    }
}
