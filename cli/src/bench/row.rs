//! One measured figure of `b3accel bench` ([`Row`]), and the input bytes and size labels the
//! figures are measured on.

use b3accel::Device;

/// One figure.
#[derive(Clone, Debug)]
pub(super) struct Row {
    /// What was measured: "hash", "merkle" or "hash_many".
    pub(super) test: &'static str,
    /// The series: "upstream hash", "cpu", "opencl:0 host", ...
    pub(super) series: String,
    /// Input bytes (for merkle: leaves x 32; for hash_many: messages x length).
    pub(super) bytes: u64,
    /// A label for the size column (leaf or message counts for merkle and hash_many).
    pub(super) label: String,
    /// Median seconds per call.
    pub(super) seconds: f64,
    /// Upload, kernel and download seconds (GPU host rows that report them).
    pub(super) parts: Option<[f64; 3]>,
    /// Bytes each device hashed in the last call (device-list rows that spread).
    pub(super) shares: Option<Vec<(Device, u64)>>,
}

impl Row {
    /// A figure with no parts and no shares.
    pub(super) fn new(test: &'static str, series: String, bytes: u64, label: String, seconds: f64) -> Row {
        Row { test, series, bytes, label, seconds, parts: None, shares: None }
    }

    pub(super) fn gbps(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }
}

/// The bench's input, written by all the pool's threads: each page is then placed near a thread
/// that first touched it, as for data that a multi-threaded program produced, instead of all on
/// the memory node of one thread, which slows a GPU's upload from it by about a quarter
/// (docs/performance.md).
pub(super) fn input_data(len: usize) -> Vec<u8> {
    use rayon::prelude::*;
    let mut data = vec![0u8; len];
    data.par_chunks_mut(1 << 20).enumerate().for_each(|(k, piece)| {
        for (i, b) in piece.iter_mut().enumerate() {
            *b = (((k << 20) + i) % 251) as u8;
        }
    });
    data
}

pub(super) fn size_label(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}
