//! BLAKE3 on every device a machine has, behind one small API.
//!
//! ```
//! use b3accel::{hash_on, Device};
//! let hash = hash_on(Device::Auto, b"hello world")?;
//! assert_eq!(hash, blake3::hash(b"hello world"));
//! println!("{hash}");
//! # Ok::<(), b3accel::Error>(())
//! ```
//!
//! Three backends implement one [`Backend`] trait:
//! - `cpu`: SIMD across chunks (SSE4.1, AVX2 or AVX-512, picked at run time; on other CPUs than
//!   x86, upstream `blake3`'s SIMD through its `hazmat` API; `B3ACCEL_CPU` chooses, see
//!   [`cpu::Kernel`]) and rayon across cores for large inputs;
//! - `opencl` (cargo feature `opencl`): OpenCL C kernels through the `ocl` crate;
//! - `wgpu` (cargo feature `wgpu`, on by default): WGSL compute shaders through `wgpu`.
//!
//! Every backend gives the same bytes as upstream BLAKE3 for every input length, all three modes
//! and any output length. The tree semantics (the partial last chunk, merging subtrees, the ROOT
//! flag, XOF output) are written once, in the crate's tree module; backends only turn runs of full
//! chunks into the chaining values of complete subtrees.
//!
//! [`Device::Auto`] never fails; [`devices`] lists what this machine has. GPU drivers' start-up
//! chatter is kept off standard error ([`stderr`] says how, and what a program that writes there
//! should do).
//!
//! Files: [`hash_file_on`], [`Hasher::update_mmap`] and [`Hasher::update_reader`] (the [`file`](mod@file)
//! module: memory-mapped with the pages brought in and out in parallel, or read in large
//! buffers).
//!
//! BLAKE3's tree as a tool ([`hazmat`], as upstream's, on every device): the chaining value of
//! any subtree of an input, and the merges that make the root from them, so that one input can be
//! hashed in pieces on many machines.
//!
//! Beyond single inputs: [`merkle_root`] and [`merkle_tree`] build binary Merkle trees of 32-byte
//! leaves with BLAKE3 as the 2-to-1 hash (read the [`merkle`] module's note on domain separation
//! before using its proofs), and [`hash_many`] / [`hash_each`] hash batches of independent
//! messages.
//!
//! Verified streaming: [`bao`] computes the outboards, combined encodings and slices of the `bao`
//! and `bao-tree` crates (chunk groups of any power of two of chunks, pre-order or post-order) on
//! any device, and decodes them, releasing no byte that has not verified.

//! # Where things are
//!
//! The source is in layers; each imports only from itself and the layers below it (a test,
//! `layers` in `tests/layers.rs`, keeps it so):
//! 1. `core/`: the constants and the compression function, with the instruction set chosen
//!    once per process;
//! 2. `tree/`: BLAKE3's tree, the modes, the output, Merkle level math, the [`Backend`] trait,
//!    [`Error`] and the device identity types;
//! 3. `backends/`: `cpu/`, `opencl/`, `wgpu/`, `gpu/` (what both GPU backends share) and
//!    [`stderr`];
//! 4. `dispatch/`: the registry that opens a [`Device`]'s backend, and [`auto`];
//! 5. this file and `api/`: the functions below, [`Hasher`], [`file`](mod@file), [`hazmat`] and the
//!    [`merkle`] API;
//! 6. users: the `b3accel` binary, the benches, examples and tests.

#![warn(missing_docs)]

mod api;
mod backends;
mod core;
mod dispatch;
mod tree;

pub use crate::api::bao;
pub use crate::api::file::{self, hash_file_on};
pub use crate::api::hasher::Hasher;
pub use crate::api::hazmat;
pub use crate::api::merkle;
pub use crate::api::merkle::{hash_each, hash_many, merkle_root, merkle_tree, MerkleTree, Proof};
pub use crate::backends::cpu;
#[cfg(any(feature = "opencl", feature = "wgpu"))]
pub use crate::backends::gpu::resident::{MerkleInner, OutboardDest, Resident};
#[cfg(feature = "opencl")]
pub use crate::backends::opencl;
pub use crate::backends::stderr;
#[cfg(feature = "wgpu")]
pub use crate::backends::wgpu;
pub use crate::core::compress::Cv;
pub use crate::core::constants::{flags, BLOCK_LEN, CHUNK_LEN, IV, KEY_LEN, OUT_LEN};
pub use crate::dispatch::auto;
pub use crate::dispatch::spread;
pub use crate::dispatch::{
    backend, backend_status, backends, check_devices, device_names, devices, opening_in_background, register_backend,
    settle, BackendEntry, BackendStatus, ListFn, OpenFn,
};
pub use crate::tree::{
    subtree_count, Backend, BackendId, BackendKind, Device, DeviceInfo, DeviceKind, Error, FeaturePath, Mode,
    OutputReader, Result, Timed, Timings,
};
pub use blake3::Hash;

use crate::dispatch::cpu_backend;
use crate::tree::{chunk_output, hash_all, hash_small, root_hash_all, Domain, Output};

/// Whether `data` is hashed by the tree module alone: inputs of one chunk or less need no backend
/// on the CPU (or on Auto, which keeps small inputs on the CPU), so the smallest inputs pay
/// nothing for dispatch.
fn small_on_cpu(device: Device, data: &[u8]) -> bool {
    data.len() <= CHUNK_LEN && matches!(device, Device::Auto | Device::Cpu)
}

/// Whether `data` goes straight to the CPU backend: on the CPU, or on Auto when it is smaller than
/// anything Auto sends to a GPU (asking Auto would only cost a dispatch).
fn cpu_only(device: Device, data: &[u8]) -> bool {
    device == Device::Cpu || (device == Device::Auto && (data.len() as u64) < auto::GPU_MIN_BYTES)
}

/// The root node of `data` hashed on `device`.
fn root_on(device: Device, data: &[u8], domain: Domain) -> Result<Output> {
    if small_on_cpu(device, data) {
        return Ok(chunk_output(data, 0, domain));
    }
    if cpu_only(device, data) {
        return hash_all(&**cpu_backend(), data, domain);
    }
    hash_all(&*backend(device)?, data, domain)
}

/// The 32-byte hash of `data` on `device`. A small input on the CPU is hashed by
/// the tree's `hash_small`, its root compression's input never passing through an [`Output`] in
/// memory: for 64 bytes that round trip was a third of the time.
#[inline]
fn root_hash_on(device: Device, data: &[u8], domain: Domain) -> Result<Hash> {
    if small_on_cpu(device, data) {
        return Ok(Hash::from_bytes(hash_small(data, domain)));
    }
    if cpu_only(device, data) {
        return Ok(Hash::from_bytes(root_hash_all(&**cpu_backend(), data, domain)?));
    }
    Ok(Hash::from_bytes(root_on(device, data, domain)?.root_hash()))
}

/// The BLAKE3 hash of `data`, computed on `device`.
///
/// ```
/// use b3accel::{hash_on, Device};
/// let data = vec![0xAB; 3 * 1024 * 1024 + 5];
/// assert_eq!(hash_on(Device::Cpu, &data).unwrap(), blake3::hash(&data));
/// ```
pub fn hash_on(device: Device, data: &[u8]) -> Result<Hash> {
    root_hash_on(device, data, Domain::HASH)
}

/// The BLAKE3 hash of `data`, computed by several devices together (see [`spread`]): the first
/// device opens now, the others only where measurements say they shorten the call. Calls that
/// name the same devices share one [`spread::Spread`], so that what one measures serves the next.
///
/// ```
/// use b3accel::{hash_on_devices, Device};
/// let data = vec![3u8; 3 << 20];
/// assert_eq!(hash_on_devices(&[Device::Cpu], &data)?, blake3::hash(&data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_on_devices(devices: &[Device], data: &[u8]) -> Result<Hash> {
    let spread = crate::dispatch::spread::shared(devices)?;
    Ok(Hash::from_bytes(root_hash_all(&*spread, data, Domain::HASH)?))
}

/// The keyed BLAKE3 hash (MAC) of `data` under `key`, computed on `device`.
///
/// ```
/// use b3accel::{keyed_hash_on, Device};
/// let key = *b"whats the Elvish word for friend";
/// assert_eq!(keyed_hash_on(Device::Cpu, &key, b"msg").unwrap(), blake3::keyed_hash(&key, b"msg"));
/// ```
pub fn keyed_hash_on(device: Device, key: &[u8; KEY_LEN], data: &[u8]) -> Result<Hash> {
    root_hash_on(device, data, Domain::keyed(key))
}

/// A 32-byte key derived from `key_material` with the `context` string, computed on `device`.
/// The context should be hard-coded, globally unique and application-specific.
///
/// ```
/// use b3accel::{derive_key_on, Device};
/// let k = derive_key_on(Device::Cpu, "example.com 2026-11-21 file keys", b"secret").unwrap();
/// assert_eq!(*k.as_bytes(), blake3::derive_key("example.com 2026-11-21 file keys", b"secret"));
/// ```
pub fn derive_key_on(device: Device, context: &str, key_material: &[u8]) -> Result<Hash> {
    root_hash_on(device, key_material, Domain::derive_key(context))
}

/// BLAKE3's extendable output: fills `out` with the output stream of `data` in `mode`, starting at
/// byte `seek` of the stream.
///
/// ```
/// use b3accel::{hash_xof_on, Device, Mode};
/// let mut out = [0u8; 50];
/// hash_xof_on(Device::Cpu, &Mode::Hash, b"abc", 14, &mut out).unwrap();
/// let mut expected = [0u8; 64];
/// blake3::Hasher::new().update(b"abc").finalize_xof().fill(&mut expected);
/// assert_eq!(out, expected[14..]);
/// ```
pub fn hash_xof_on(device: Device, mode: &Mode, data: &[u8], seek: u64, out: &mut [u8]) -> Result<()> {
    root_on(device, data, mode.domain())?.root_bytes(seek, out);
    Ok(())
}

/// An output reader over `data`'s extendable output in `mode`, computed on `device`.
///
/// ```
/// use b3accel::{xof_reader_on, Device, Mode};
/// let mut r = xof_reader_on(Device::Cpu, &Mode::Hash, b"abc").unwrap();
/// let mut out = [0u8; 32];
/// r.fill(&mut out);
/// assert_eq!(out, *blake3::hash(b"abc").as_bytes());
/// ```
pub fn xof_reader_on(device: Device, mode: &Mode, data: &[u8]) -> Result<OutputReader> {
    Ok(OutputReader::new(root_on(device, data, mode.domain())?))
}

/// An output reader over `data`'s extendable output in `mode`, computed on a backend you hold.
/// The whole input goes to the backend in one call.
///
/// ```
/// use b3accel::cpu::{CpuBackend, SimdLevel};
/// use b3accel::{xof_reader_with, Mode};
/// let sse = CpuBackend::with_level(SimdLevel::Portable).unwrap();
/// let data = vec![1u8; 50_000];
/// let mut out = [0u8; 32];
/// xof_reader_with(&sse, &Mode::Hash, &data).unwrap().fill(&mut out);
/// assert_eq!(out, *blake3::hash(&data).as_bytes());
/// ```
pub fn xof_reader_with(backend: &dyn Backend, mode: &Mode, data: &[u8]) -> Result<OutputReader> {
    Ok(OutputReader::new(hash_all(backend, data, mode.domain())?))
}

/// The 32-byte hash of `data` in `mode`, computed on a backend you hold (a
/// [`spread::Spread`] included): the whole input goes to the backend in one call, and a
/// power-of-two input keeps the backend's own top levels ([`Backend::subtree_top`]).
///
/// ```
/// use b3accel::spread::Spread;
/// use b3accel::{hash_with, Device, Mode};
/// let list = Spread::new(&[Device::Cpu])?;
/// let data = vec![5u8; 1 << 20];
/// assert_eq!(hash_with(&list, &Mode::Hash, &data)?, blake3::hash(&data));
/// # Ok::<(), b3accel::Error>(())
/// ```
pub fn hash_with(backend: &dyn Backend, mode: &Mode, data: &[u8]) -> Result<Hash> {
    Ok(Hash::from_bytes(root_hash_all(backend, data, mode.domain())?))
}

/// The README's Rust examples, compiled and run as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The same for docs/library.md.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
struct LibraryDoctests;
