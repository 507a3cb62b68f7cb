//! The incremental hasher bound to a device.
//!
//! The hasher gathers input into batches of the backend's [`batch_len`](crate::Backend::batch_len)
//! and hands each batch over as soon as more input proves it is not the end; a large `update`
//! goes to the backend straight from the caller's slice. Its memory is one batch, whatever the
//! length of the input. With an input offset (the `hazmat` API) it hashes one subtree of a larger
//! input; files and readers are fed to it by the `file` module.

use crate::core::compress::Cv;
use crate::core::constants::flags::DERIVE_KEY_MATERIAL;
use crate::core::constants::CHUNK_LEN;
use crate::dispatch::{auto_backend, backend};
use crate::tree::{
    check_fits, check_input_offset, check_subtree, Backend, CvStack, Device, DeviceInfo, Domain, Error, Mode, Output,
    OutputReader, Result, MAX_SUBTREE,
};
use blake3::Hash;
use std::io;
use std::sync::Arc;
use zeroize::Zeroize;

/// An incremental BLAKE3 hasher whose bulk work runs on one device.
///
/// Any split of the input into `update` calls gives the same hash as one call with all of it.
///
/// ```
/// use b3accel::{Device, Hasher};
/// let mut h = Hasher::new_on(Device::Cpu)?;
/// h.update(b"hello ")?.update(b"world")?;
/// assert_eq!(h.finalize()?, blake3::hash(b"hello world"));
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone)]
pub struct Hasher {
    backend: Arc<dyn Backend>,
    domain: Domain,
    stack: CvStack,
    buf: Vec<u8>,
    batch: usize,
    count: u64,
    /// Where the input starts in a larger one (`hazmat::HasherExt::set_input_offset`); 0 for a
    /// whole input.
    offset: u64,
    progress: Option<Progress>,
    failed: bool,
}

/// A progress callback: told how many more bytes were hashed.
pub(crate) type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// The device, the mode's name and the count: never the key words, the chaining values or the
/// buffered input.
impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hasher")
            .field("device", &self.backend.info().device)
            .field("mode", &self.domain.mode_name())
            .field("count", &self.count)
            .field("input_offset", &self.offset)
            .finish_non_exhaustive()
    }
}

/// The key words are wiped, and in the key-derivation mode the buffered input too (it is key
/// material); the chaining-value stack wipes itself.
impl Drop for Hasher {
    fn drop(&mut self) {
        self.wipe_buffer();
        self.domain.zeroize();
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher::new()
    }
}

impl Hasher {
    /// A hasher on `Device::Auto`, which never fails.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update(b"abc").unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"abc"));
    /// ```
    pub fn new() -> Hasher {
        Hasher::on_backend(auto_backend(), Domain::HASH)
    }

    /// A hasher for the plain hash on `device`.
    ///
    /// ```
    /// let h = b3accel::Hasher::new_on(b3accel::Device::Cpu).unwrap();
    /// assert_eq!(h.count(), 0);
    /// ```
    pub fn new_on(device: Device) -> Result<Hasher> {
        Hasher::with_mode(device, &Mode::Hash)
    }

    /// A hasher for the keyed hash on `device`.
    ///
    /// ```
    /// let key = [7u8; 32];
    /// let mut h = b3accel::Hasher::new_keyed_on(b3accel::Device::Cpu, &key).unwrap();
    /// h.update(b"data").unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::keyed_hash(&key, b"data"));
    /// ```
    pub fn new_keyed_on(device: Device, key: &[u8; 32]) -> Result<Hasher> {
        Hasher::with_mode(device, &Mode::Keyed(*key))
    }

    /// A hasher for key derivation with `context` on `device`; the key material is what you `update` with.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new_derive_key_on(b3accel::Device::Cpu, "app 2026 session keys").unwrap();
    /// h.update(b"secret").unwrap();
    /// assert_eq!(*h.finalize().unwrap().as_bytes(), blake3::derive_key("app 2026 session keys", b"secret"));
    /// ```
    pub fn new_derive_key_on(device: Device, context: &str) -> Result<Hasher> {
        Hasher::with_mode(device, &Mode::DeriveKey(context.to_string()))
    }

    /// A hasher for any [`Mode`] on `device`.
    ///
    /// ```
    /// use b3accel::{Device, Hasher, Mode};
    /// let h = Hasher::with_mode(Device::Cpu, &Mode::Keyed([1; 32])).unwrap();
    /// assert_eq!(h.device(), Device::Cpu);
    /// ```
    pub fn with_mode(device: Device, mode: &Mode) -> Result<Hasher> {
        Ok(Hasher::on_backend(backend(device)?, mode.domain()))
    }

    /// A hasher on a backend you hold (a [`CpuBackend`](crate::cpu::CpuBackend) at a chosen SIMD
    /// level, or your own [`Backend`] implementation).
    ///
    /// ```
    /// use b3accel::cpu::{CpuBackend, SimdLevel};
    /// use b3accel::{Hasher, Mode};
    /// use std::sync::Arc;
    /// let portable = Arc::new(CpuBackend::with_level(SimdLevel::Portable).unwrap());
    /// let mut h = Hasher::with_backend(portable, &Mode::Hash);
    /// h.update(&[9; 10_000]).unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(&[9; 10_000]));
    /// ```
    pub fn with_backend(backend: Arc<dyn Backend>, mode: &Mode) -> Hasher {
        Hasher::on_backend(backend, mode.domain())
    }

    /// A hasher on `backend` in the mode given by its key words and flags.
    pub(crate) fn on_backend(backend: Arc<dyn Backend>, domain: Domain) -> Hasher {
        let batch = backend.batch_len().max(CHUNK_LEN).next_power_of_two();
        // Key material is buffered in place from the start: a growing buffer would leave copies
        // of it in the allocations it outgrew, where no wipe reaches.
        let buf = if domain.flags & DERIVE_KEY_MATERIAL != 0 { Vec::with_capacity(batch) } else { Vec::new() };
        Hasher {
            backend,
            domain,
            stack: CvStack::new(),
            buf,
            batch,
            count: 0,
            offset: 0,
            progress: None,
            failed: false,
        }
    }

    /// The device this hasher runs on.
    ///
    /// ```
    /// assert_eq!(b3accel::Hasher::new().device(), b3accel::Device::Auto);
    /// ```
    pub fn device(&self) -> Device {
        self.backend.info().device
    }

    /// The device's description.
    ///
    /// ```
    /// println!("{}", b3accel::Hasher::new().device_info().name);
    /// ```
    pub fn device_info(&self) -> &DeviceInfo {
        self.backend.info()
    }

    /// Bytes hashed so far.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update(&[0; 5000]).unwrap();
    /// assert_eq!(h.count(), 5000);
    /// ```
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds input. An error (a device failure) leaves the hasher unusable until
    /// [`reset`](Self::reset). With an input offset
    /// ([`set_input_offset`](crate::hazmat::HasherExt::set_input_offset)), input that would go
    /// past the largest subtree that can start there is refused before any of it is hashed (the
    /// hasher stays usable).
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// for piece in [&b"one "[..], b"two ", b"three"] {
    ///     h.update(piece).unwrap();
    /// }
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"one two three"));
    /// ```
    pub fn update(&mut self, data: &[u8]) -> Result<&mut Self> {
        self.feed(data, false)?;
        if let Some(progress) = &self.progress {
            progress(data.len() as u64);
        }
        Ok(self)
    }

    /// Calls `callback` with the number of bytes hashed each time input is taken in: once per
    /// [`update`](Self::update), and as they go for [`update_mmap`](Self::update_mmap) (every 32
    /// MiB of a mapped file) and [`update_reader`](Self::update_reader) (every read buffer), so
    /// that a progress bar moves during a long input. The callback stays through
    /// [`reset`](Self::reset) and is shared by clones.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// let done = Arc::new(AtomicU64::new(0));
    /// let seen = done.clone();
    /// let mut h = b3accel::Hasher::new();
    /// h.on_progress(move |n| {
    ///     seen.fetch_add(n, Ordering::Relaxed);
    /// });
    /// h.update(&[0; 5000])?.update_reader(&[1u8; 3000][..])?;
    /// assert_eq!(done.load(Ordering::Relaxed), 8000);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn on_progress(&mut self, callback: impl Fn(u64) + Send + Sync + 'static) -> &mut Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// The progress callback, if any.
    pub(crate) fn progress(&self) -> Option<Progress> {
        self.progress.clone()
    }

    /// How many bytes the hasher gathers before it hands them to the device.
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Adds input without telling the progress callback: `more_follows` says that more input is
    /// known to follow `data`, so that all of it can go to the device now (none of it can be the
    /// end); otherwise a partial last chunk stays here until more input or the end completes it.
    pub(crate) fn feed(&mut self, data: &[u8], more_follows: bool) -> Result<()> {
        self.check_usable()?;
        self.check_room(data.len() as u64)?;
        match self.absorb(data, more_follows) {
            Ok(()) => {
                self.count += data.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn absorb(&mut self, mut data: &[u8], more_follows: bool) -> Result<()> {
        let backend = &*self.backend;
        while !data.is_empty() {
            if self.buf.is_empty() && data.len() >= self.batch.max(2 * CHUNK_LEN) {
                // Every whole chunk straight from the caller's slice in one call; only a partial
                // last chunk is copied into the buffer. Chunks that would end the input as the
                // one complete subtree that is all of it go as its two halves, as upstream's
                // hasher keeps them: if nothing follows, the root is their parent, whose ROOT
                // flag needs the two CVs.
                let n = data.len() / CHUNK_LEN * CHUNK_LEN;
                let chunks = (n / CHUNK_LEN) as u64;
                let whole = !more_follows && n == data.len() && self.stack.is_empty();
                let max = if whole && chunks.is_power_of_two() { chunks / 2 } else { MAX_SUBTREE };
                self.stack.commit_chunks(backend, &data[..n], max, self.domain)?;
                data = &data[n..];
                continue;
            }
            if self.buf.len() == self.batch {
                // A full batch followed by more input: it cannot hold the end.
                self.stack.commit_chunks(backend, &self.buf, MAX_SUBTREE, self.domain)?;
                self.buf.clear();
            }
            let take = (self.batch - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if more_follows && self.buf.len() == self.batch {
            self.stack.commit_chunks(backend, &self.buf, MAX_SUBTREE, self.domain)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Zeroizes the buffered input where it is key material (the key-derivation mode).
    fn wipe_buffer(&mut self) {
        if self.domain.flags & DERIVE_KEY_MATERIAL != 0 {
            self.buf.zeroize();
        }
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::InvalidInput(
                "this hasher failed earlier on its device; call reset() before using it again".into(),
            ));
        }
        Ok(())
    }

    /// Checks that `more` bytes still fit in the subtree that starts at the input offset.
    fn check_room(&self, more: u64) -> Result<()> {
        if self.offset == 0 {
            return Ok(());
        }
        match self.count.checked_add(more) {
            Some(total) => check_fits(self.offset, total),
            None => Err(Error::InvalidInput("more than 2^64 bytes of input".into())),
        }
    }

    /// The top node of everything added so far (the root, at input offset 0); the hasher itself
    /// is unchanged.
    fn top(&self) -> Result<Output> {
        self.check_usable()?;
        self.stack.clone().finish(&*self.backend, &self.buf, self.domain)
    }

    /// The root node of everything added so far.
    fn root(&self) -> Result<Output> {
        if self.offset != 0 {
            return Err(Error::InvalidInput(format!(
                "this hasher hashes a subtree at input offset {}, which has no root: finalize it with \
                 finalize_non_root and merge the chaining values",
                self.offset
            )));
        }
        self.top()
    }

    /// The root node of everything added so far followed by `tail`, which ends the input; `tail`
    /// goes to the device from where it lies when nothing is waiting here. For one-shot callers,
    /// which drop the hasher after.
    pub(crate) fn finish_with(&mut self, tail: &[u8]) -> Result<Output> {
        if !self.buf.is_empty() || self.offset != 0 {
            self.feed(tail, false)?;
            return self.root();
        }
        self.check_usable()?;
        let out = self.stack.clone().finish(&*self.backend, tail, self.domain)?;
        self.count += tail.len() as u64;
        Ok(out)
    }

    /// Sets the input offset (see `hazmat::HasherExt::set_input_offset`).
    pub(crate) fn set_offset(&mut self, offset: u64) -> Result<()> {
        if self.count != 0 {
            return Err(Error::InvalidInput(format!(
                "set_input_offset after {} bytes of input: the offset comes first",
                self.count
            )));
        }
        let start = check_input_offset(offset)?;
        self.stack = CvStack::at(start);
        self.offset = offset;
        Ok(())
    }

    /// The input offset.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The chaining value of the subtree hashed so far (see `hazmat::HasherExt::finalize_non_root`).
    pub(crate) fn non_root(&self) -> Result<Cv> {
        check_subtree(self.offset, self.count)?;
        Ok(self.top()?.chaining_value())
    }

    /// The hash of everything added so far. More input may follow. A hasher with a nonzero input
    /// offset hashes a subtree, which has no root: that is an error here (use
    /// [`finalize_non_root`](crate::hazmat::HasherExt::finalize_non_root)).
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update(b"a").unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"a"));
    /// h.update(b"b").unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"ab"));
    /// ```
    pub fn finalize(&self) -> Result<Hash> {
        Ok(Hash::from_bytes(self.root()?.root_hash()))
    }

    /// An output reader for any number of output bytes (BLAKE3's extendable output). As for
    /// [`finalize`](Self::finalize), an error with a nonzero input offset.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update(b"xof").unwrap();
    /// let mut out = [0u8; 100];
    /// h.finalize_xof().unwrap().fill(&mut out);
    /// assert_eq!(out[..32], *blake3::hash(b"xof").as_bytes());
    /// ```
    pub fn finalize_xof(&self) -> Result<OutputReader> {
        Ok(OutputReader::new(self.root()?))
    }

    /// Forgets all input, and the input offset; the device, the mode and the progress callback
    /// stay.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update(b"junk").unwrap();
    /// h.reset().update(b"abc").unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"abc"));
    /// ```
    pub fn reset(&mut self) -> &mut Self {
        self.stack = CvStack::new();
        self.wipe_buffer();
        self.buf.clear();
        self.count = 0;
        self.offset = 0;
        self.failed = false;
        self
    }
}

impl io::Write for Hasher {
    /// ```
    /// use std::io::Write;
    /// let mut h = b3accel::Hasher::new();
    /// write!(h, "{}", 42).unwrap();
    /// assert_eq!(h.finalize().unwrap(), blake3::hash(b"42"));
    /// ```
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.update(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
