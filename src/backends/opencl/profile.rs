//! Profiling: the driver's events of one call, summed into a [`Timed`] value with the call's
//! breakdown in its `detail`.

use crate::tree::{Result, Timed, Timings};
use ocl::core::{self, Event};
use std::time::{Duration, Instant};

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

    /// Where the wall time of a call that started at `start` and ended at `end` went, from the
    /// events' timestamps and the host's clock: the host's work up to the first command's
    /// enqueuing, the driver call that enqueued it, its wait from queuing to its start on the
    /// device, the device's span from the first command's start to the last one's end (kernels
    /// and the gaps between commands), and what follows until the return (the host noticing, and
    /// its own finishing). The driver stamps the first command as queued somewhere inside the
    /// enqueuing call, and the last part relates the device's clock to the host's at the end of
    /// that call, so the enqueuing, the launch and the last part overlap by up to the enqueuing
    /// call's length. Empty where the driver gave no timestamps. Only once every event is
    /// complete.
    fn detail(&self, start: Instant, end: Instant) -> Vec<(&'static str, Duration)> {
        let ns = Duration::from_nanos;
        let first = self.events.first().map(|(_, e)| e);
        let queued = first.and_then(|e| stamp(e, core::ProfilingInfo::Queued));
        let started = self.events.iter().filter_map(|(_, e)| stamp(e, core::ProfilingInfo::Start)).min();
        let ended = self.events.iter().filter_map(|(_, e)| stamp(e, core::ProfilingInfo::End)).max();
        let (Some(q), Some(s), Some(e), Some(host)) = (queued, started, ended, self.first_enqueued) else {
            return Vec::new();
        };
        let began = self.enqueuing.unwrap_or(host);
        // The host's clock when the device finished: the first command's queuing plus the
        // device's time from then to its last command's end.
        let finished = host + ns(e.saturating_sub(q));
        vec![
            ("before device", began.saturating_duration_since(start)),
            ("enqueue", host.saturating_duration_since(began)),
            ("launch", ns(s.saturating_sub(q))),
            ("device span", ns(e.saturating_sub(s))),
            ("after device", end.saturating_duration_since(finished)),
        ]
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn truncate(&mut self, len: usize) {
        self.events.truncate(len);
    }

    /// `value` with the upload, kernel and download time, each summed over its commands, the
    /// wall time since `start` and the call's [`detail`](Self::detail). Only once every event is
    /// complete.
    pub fn timed<T>(&self, value: T, start: Instant) -> Timed<T> {
        let end = Instant::now();
        let mut t = self.timings();
        t.total = end.saturating_duration_since(start);
        t.detail = self.detail(start, end);
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

/// Runs `f` with its commands' events collected, and returns its value with their times (see
/// [`Prof::timed`]).
pub(crate) fn profiled<T>(f: impl FnOnce(&mut Option<&mut Prof>) -> Result<T>) -> Result<Timed<T>> {
    let start = Instant::now();
    let mut prof = Prof::default();
    let value = f(&mut Some(&mut prof))?;
    Ok(prof.timed(value, start))
}
