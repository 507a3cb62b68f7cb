//! Hashing data that already lies in a device buffer: the kernels read it where it is, and only
//! the last chunk (at most 1024 bytes) and the subtree CVs come back to the host, where the tree
//! module finishes the root (or, for a subtree of a larger input, its chaining value).

use super::backend::OpenClBackend;
use super::profile::{Prof, Profile, Stage};
use super::worker::Run;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::subtree;
use crate::tree::{
    check_subtree, hash_resident, last_chunk_len, ChainingValue, Domain, Error, Mode, Output, OutputReader, Result,
    Timed,
};
use blake3::Hash;
use ocl::core::{self, Event};
use std::time::Instant;

impl OpenClBackend {
    /// The hash of a whole device buffer in `mode`, computed where the data lies.
    ///
    /// The buffer must belong to this backend's [`context`](Self::context). Commands that write
    /// it must be complete, or enqueued on [`queue`](Self::queue): the hash waits for everything
    /// enqueued there before it.
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let data = vec![3u8; 64 << 20];
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// let key = [1u8; 32];
    /// assert_eq!(gpu.hash_buffer(&buf, &Mode::Keyed(key))?, blake3::keyed_hash(&key, &data));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_buffer(&self, buffer: &ocl::Buffer<u8>, mode: &Mode) -> Result<Hash> {
        self.hash_whole_buffer(buffer, mode, None)
    }

    /// An output reader (any output length, any position) over the first `len` bytes of a device
    /// buffer in `mode`, computed where the data lies. The same rules as
    /// [`hash_buffer`](Self::hash_buffer) apply.
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let data = vec![3u8; 5000];
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// let mode = Mode::DeriveKey("example 2026 device keys".into());
    /// let mut key = [0u8; 32];
    /// gpu.buffer_reader(&buf, 4000, &mode)?.fill(&mut key);
    /// assert_eq!(key, blake3::derive_key("example 2026 device keys", &data[..4000]));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn buffer_reader(&self, buffer: &ocl::Buffer<u8>, len: u64, mode: &Mode) -> Result<OutputReader> {
        Ok(OutputReader::new(self.resident(buffer, 0, len, 0, mode.domain(), None)?))
    }

    /// [`hash_buffer`](Self::hash_buffer), reporting the kernels' time and the download of the
    /// last chunk and the CVs (from profiling events), and the wall time of the whole call.
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(1 << 30).build().unwrap();
    /// let t = gpu.hash_buffer_timed(&buf, &Mode::Hash)?;
    /// println!("{:.2} TB/s in the kernels", (1u64 << 30) as f64 / t.kernel.as_secs_f64() / 1e12);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_buffer_timed(&self, buffer: &ocl::Buffer<u8>, mode: &Mode) -> Result<Timed<Hash>> {
        let start = Instant::now();
        let mut prof = Prof::default();
        let hash = self.hash_whole_buffer(buffer, mode, Some(&mut prof))?;
        Ok(prof.timed(hash, start))
    }

    /// [`hash_buffer`](Self::hash_buffer), reporting where the wall time of the call went:
    /// before the first command, the command's wait to start on the device, the device's span
    /// from the first command's start to the last one's end (kernels and the gaps between
    /// commands), and after the device finished (the host noticing, and the root on the host).
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(1 << 30).build().unwrap();
    /// let (_hash, p) = gpu.hash_buffer_profiled(&buf, &Mode::Hash)?;
    /// println!("kernels {:?} of {:?}; {:?} after the device finished", p.kernel, p.total, p.after_device);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_buffer_profiled(&self, buffer: &ocl::Buffer<u8>, mode: &Mode) -> Result<(Hash, Profile)> {
        let start = Instant::now();
        let mut prof = Prof::default();
        let hash = self.hash_whole_buffer(buffer, mode, Some(&mut prof))?;
        Ok((hash, prof.profile(start, Instant::now())))
    }

    /// The hash of all of `buffer`, its commands' events into `prof` if asked: the one
    /// implementation of [`hash_buffer`](Self::hash_buffer) and its timed forms.
    fn hash_whole_buffer(&self, buffer: &ocl::Buffer<u8>, mode: &Mode, prof: Option<&mut Prof>) -> Result<Hash> {
        let output = self.resident(buffer, 0, buffer.len() as u64, 0, mode.domain(), prof)?;
        Ok(Hash::from_bytes(output.root_hash()))
    }

    /// The chaining value of the `len` bytes of a device buffer that start at byte `at` of the
    /// buffer, as the subtree that starts at byte `input_offset` of a larger input (see
    /// [`hazmat`](crate::hazmat)), computed where the data lies: a piece of an input to merge
    /// with [`merge_subtrees_non_root`](crate::hazmat::merge_subtrees_non_root) and friends or
    /// [`merge_pieces_root`](crate::hazmat::merge_pieces_root).
    ///
    /// `at` must be a multiple of [`CHUNK_LEN`](crate::CHUNK_LEN) (the kernels read whole chunks),
    /// the bytes must lie inside the buffer, and `input_offset` and `len` must form a subtree
    /// ([`check_subtree`](crate::hazmat::check_subtree)); anything else is an error. The buffer
    /// rules of [`hash_buffer`](Self::hash_buffer) apply.
    ///
    /// ```no_run
    /// use b3accel::hazmat::{merge_pieces_root, Mode, Piece};
    /// use b3accel::opencl::OpenClBackend;
    /// let gpu = OpenClBackend::open(0)?;
    /// let data = vec![3u8; (8 << 20) + 5];
    /// let buf = ocl::Buffer::<u8>::builder()
    ///     .queue(gpu.queue().clone())
    ///     .len(data.len())
    ///     .copy_host_slice(&data)
    ///     .build()
    ///     .unwrap();
    /// // Two pieces of the buffer, merged into the hash of the whole.
    /// let half = 4 << 20;
    /// let rest = data.len() as u64 - half;
    /// let pieces = [
    ///     Piece { offset: 0, len: half, cv: gpu.subtree_cv(&buf, 0, half, 0, Mode::Hash)? },
    ///     Piece { offset: half, len: rest, cv: gpu.subtree_cv(&buf, half, rest, half, Mode::Hash)? },
    /// ];
    /// assert_eq!(merge_pieces_root(&pieces, Mode::Hash)?, blake3::hash(&data));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn subtree_cv(
        &self,
        buffer: &ocl::Buffer<u8>,
        at: u64,
        len: u64,
        input_offset: u64,
        mode: subtree::Mode,
    ) -> Result<ChainingValue> {
        check_subtree(input_offset, len)?;
        if !at.is_multiple_of(CHUNK_LEN as u64) {
            return Err(Error::InvalidInput(format!(
                "{}: byte {at} of the buffer is not a multiple of the chunk length ({CHUNK_LEN})",
                self.dev.info.device
            )));
        }
        let start = input_offset / CHUNK_LEN as u64;
        Ok(self.resident(buffer, at, len, start, mode.domain(), None)?.chaining_value())
    }

    /// Checks that `mem` belongs to this backend's context.
    pub(crate) fn check_context(&self, mem: &core::Mem) -> Result<()> {
        let device = self.dev.info.device;
        match core::get_mem_object_info(mem, core::MemInfo::Context) {
            Ok(core::MemInfoResult::Context(c)) if c == *self.dev.context.as_core() => Ok(()),
            Ok(_) => Err(Error::InvalidInput(format!(
                "{device}: the buffer belongs to another OpenCL context; create it in the backend's context()"
            ))),
            Err(e) => Err(self.domain_err("inspecting the buffer", e)),
        }
    }

    /// The top node of the `len` bytes at byte `at` of `buffer` (a multiple of `CHUNK_LEN`), the
    /// subtree that starts at chunk `start` of the input (0: the whole input, whose top node is
    /// the root).
    fn resident(
        &self,
        buffer: &ocl::Buffer<u8>,
        at: u64,
        len: u64,
        start: u64,
        domain: Domain,
        prof: Option<&mut Prof>,
    ) -> Result<Output> {
        let device = self.dev.info.device;
        debug_assert!(at.is_multiple_of(CHUNK_LEN as u64));
        if at.checked_add(len).is_none_or(|end| end > buffer.len() as u64) {
            return Err(Error::InvalidInput(format!(
                "{device}: cannot hash {len} bytes from byte {at} of a {}-byte buffer",
                buffer.len()
            )));
        }
        let mem = buffer.as_core();
        self.check_context(mem)?;
        // Everything goes on the backend's own in-order queue: after whatever the caller enqueued
        // there (writes of the buffer), with no marker or cross-queue wait in between.
        let queue = self.dev.queue.as_core();
        let last_len = last_chunk_len(len) as usize;
        let full_chunks = (len - last_len as u64) / CHUNK_LEN as u64;
        let mut prof = prof;
        self.with_worker(|w| {
            // Everything on one in-order queue, ending in one read that brings back the subtree
            // CVs and the last chunk together.
            let first_chunk = at / CHUNK_LEN as u64;
            let tail_at = (at + len - last_len as u64) as usize;
            let mut last = vec![0u8; last_len];
            let mut whole: Vec<Cv> = vec![[0; 32]; full_chunks.count_ones() as usize];
            if full_chunks > 0 {
                let run = Run { data: mem, chunk_offset: first_chunk, n: full_chunks, counter: start, domain };
                let done =
                    w.enqueue_subtrees_on(queue, &self.dev, run, None, 0, Some((tail_at, last_len)), false, &mut prof)?;
                w.wait(&done.read)?;
                w.take_pieces(0, full_chunks, &mut whole);
                last.copy_from_slice(w.tail(0, last_len));
            } else if last_len > 0 {
                let mut ev = Event::null();
                // SAFETY: a blocking read into a local vector of the right length.
                unsafe {
                    core::enqueue_read_buffer(queue, mem, true, tail_at, &mut last[..], None::<&Event>, Some(&mut ev))
                }
                .map_err(|e| w.err("reading the last chunk", e))?;
                Prof::push(&mut prof, Stage::Download, &ev);
            }
            hash_resident(start, len, &last, domain, |offset, n, first, out| {
                if (offset, n, first) == (0, full_chunks, start) {
                    // The run dispatched above: a fresh stack takes all full chunks at once.
                    out.copy_from_slice(&whole);
                    return Ok(());
                }
                let run = Run { data: mem, chunk_offset: first_chunk + offset, n, counter: first, domain };
                let done = w.enqueue_subtrees_on(queue, &self.dev, run, None, 0, None, false, &mut prof)?;
                w.wait(&done.read)?;
                w.take_pieces(0, n, out);
                Ok(())
            })
        })
    }
}
