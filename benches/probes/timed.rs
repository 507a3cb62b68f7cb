//! What the probes do with the `Timed` values of the GPU backends' `Resident` calls: the median of
//! each part over many calls, and one line of a call's breakdown.

// Each probe that includes this module uses what it needs of it.
#![allow(dead_code)]

use b3accel::Timings;
use std::time::Duration;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Each part of `runs` (one backend's calls, so the same `detail` names in each), its median.
pub fn median_timings(runs: &[Timings]) -> Timings {
    let part = |f: &dyn Fn(&Timings) -> Duration| median(runs.iter().map(f).collect());
    let names: Vec<&'static str> =
        runs.first().map(|t| t.detail.iter().map(|&(name, _)| name).collect()).unwrap_or_default();
    Timings {
        upload: part(&|t| t.upload),
        kernel: part(&|t| t.kernel),
        download: part(&|t| t.download),
        total: part(&|t| t.total),
        detail: names.into_iter().map(|name| (name, part(&|t| t.part(name).unwrap_or_default()))).collect(),
        ..Default::default()
    }
}

/// The call's breakdown (`detail`) in microseconds, and its wall time.
pub fn detail_line(t: &Timings) -> String {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let parts: Vec<String> = t.detail.iter().map(|&(name, d)| format!("{name} {:.1}", us(d))).collect();
    format!("{} | total {:.1} us", parts.join(", "), us(t.total))
}
