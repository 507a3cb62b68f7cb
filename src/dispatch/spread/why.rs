//! Why a device took part in a call or not, as a list's reports tell it.

use crate::tree::Device;
use std::time::Duration;

/// Why a device took part in a call or not: kept as numbers, put in words only when a report is
/// asked for (formatting them cost small calls more than deciding).
#[derive(Clone, Debug)]
pub(super) enum Why {
    FailedToOpen(String),
    FailedInCall(String),
    Always,
    /// Rates (bytes per second) of the device and of the first device.
    TooSlow {
        rate: f64,
        first: Device,
        first_rate: f64,
    },
    Measured(f64),
    ToMeasure,
    FirstNotMeasured(Device),
    Opened {
        first: Device,
        alone: Duration,
    },
    NotWorthOpening {
        open_time: Duration,
        first: Device,
        alone: Duration,
    },
    /// Rates of the calls of this size without the others and with them.
    FasterAlone {
        alone: f64,
        together: f64,
    },
    MeasuringAlone(Device),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gb = |r: &f64| r / 1e9;
        match self {
            Why::FailedToOpen(e) => write!(f, "failed to open: {e}"),
            Why::FailedInCall(e) => write!(f, "failed, its pieces hashed by the others: {e}"),
            Why::Always => write!(f, "every device takes part (Joining::Always)"),
            Why::TooSlow { rate, first, first_rate } => write!(
                f,
                "left out: at {:.1} GB/s it would not finish a piece before {first} finishes the input at {:.1} GB/s",
                gb(rate),
                gb(first_rate)
            ),
            Why::Measured(rate) => write!(f, "took part, measured at {:.1} GB/s", gb(rate)),
            Why::ToMeasure => write!(f, "took part to be measured (no rate known yet)"),
            Why::FirstNotMeasured(first) => write!(
                f,
                "not opened: {first}'s speed is not measured yet (`b3accel bench --calibrate` measures every device)"
            ),
            Why::Opened { first, alone } => write!(f, "opened, as {first} alone would need {alone:.0?}"),
            Why::NotWorthOpening { open_time, first, alone } => {
                write!(f, "not opened: it takes about {open_time:.1?} to open, and {first} alone needs {alone:.1?}")
            }
            Why::FasterAlone { alone, together } => write!(
                f,
                "left out: calls of this size were faster without the others ({:.1} GB/s against {:.1})",
                gb(alone),
                gb(together)
            ),
            Why::MeasuringAlone(first) => write!(f, "left out: {first} alone is being measured at this size"),
        }
    }
}
