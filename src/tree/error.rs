//! The crate's error type: every failure says what went wrong and on which device.

use super::device::Device;
use std::fmt;

/// What went wrong.
///
/// ```
/// use b3accel::{hash_on, Device, Error};
/// // Asking for a device that is not there is an error, never a panic.
/// match hash_on(Device::OpenCl(1000), b"abc") {
///     Err(e) => println!("{e}"),
///     Ok(_) => unreachable!("no machine has a thousand OpenCL devices"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The backend for this device was not compiled in (its cargo feature is off).
    NotBuilt {
        /// The device asked for.
        device: Device,
        /// The cargo feature that would build it.
        feature: &'static str,
    },
    /// The backend is compiled in but its runtime (driver, loader) is missing or failed.
    Unavailable {
        /// The device asked for.
        device: Device,
        /// What is missing, in the driver's words where it gave any.
        reason: String,
    },
    /// The backend works but has no device with this index.
    NoSuchDevice {
        /// The device asked for.
        device: Device,
        /// How many devices of that backend this machine has.
        available: usize,
    },
    /// The device ran out of memory and the input could not be split any further.
    OutOfMemory {
        /// The device.
        device: Device,
        /// The driver's message.
        detail: String,
    },
    /// A kernel failed to build; carries the compiler's log.
    KernelBuild {
        /// The device.
        device: Device,
        /// The build log.
        log: String,
    },
    /// Any other error reported by a device or its driver (a lost device, a failed dispatch).
    Device {
        /// The device.
        device: Device,
        /// The driver's message.
        detail: String,
    },
    /// An argument the function cannot accept (for example a malformed device name).
    InvalidInput(String),
    /// Pieces that do not cover an input as BLAKE3's tree requires (a gap, an overlap, a piece
    /// that is not a subtree where it lies; see
    /// [`hazmat::merge_pieces_root_xof`](crate::hazmat::merge_pieces_root_xof)).
    InvalidPiece {
        /// The index of the piece at fault, in the slice given.
        index: usize,
        /// The other piece involved, where there is one: the piece before a gap or an overlap.
        other: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// Reading input failed.
    Io(std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotBuilt { device, feature } => write!(
                f,
                "device {device}: this build has no {} backend (rebuild with `--features {feature}`)",
                device.backend_name()
            ),
            Error::Unavailable { device, reason } => write!(f, "device {device}: {reason}"),
            Error::NoSuchDevice { device, available } => match available {
                0 => write!(f, "device {device}: no {} device found", device.backend_name()),
                1 => write!(
                    f,
                    "device {device}: not found (this machine has 1 {} device, index 0)",
                    device.backend_name()
                ),
                n => write!(
                    f,
                    "device {device}: not found (this machine has {n} {} devices, 0 to {})",
                    device.backend_name(),
                    n - 1
                ),
            },
            Error::OutOfMemory { device, detail } => write!(f, "device {device}: out of memory: {detail}"),
            Error::KernelBuild { device, log } => write!(f, "device {device}: kernel build failed:\n{log}"),
            Error::Device { device, detail } => write!(f, "device {device}: {detail}"),
            Error::InvalidInput(msg) => f.write_str(msg),
            Error::InvalidPiece { index, other: None, reason } => write!(f, "piece {index}: {reason}"),
            Error::InvalidPiece { index, other: Some(other), reason } => {
                write!(f, "piece {index}: {reason} (piece {other})")
            }
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(e) => e,
            Error::OutOfMemory { .. } => std::io::Error::new(std::io::ErrorKind::OutOfMemory, e),
            other => std::io::Error::other(other),
        }
    }
}

/// The crate's result type.
///
/// ```
/// fn first_byte(data: &[u8]) -> b3accel::Result<u8> {
///     Ok(b3accel::hash_on(b3accel::Device::Cpu, data)?.as_bytes()[0])
/// }
/// assert_eq!(first_byte(b"").unwrap(), 0xaf);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
