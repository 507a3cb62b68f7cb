//! Hashing data that already lies in a device buffer: the kernels read it where it is, and only
//! the last chunk (at most 1024 bytes) and the subtree CVs come back to the host, where the tree
//! module finishes the root.

use super::backend::OpenClBackend;
use super::profile::{Prof, Profile, Stage};
use super::worker::Run;
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{hash_resident, last_chunk_len, Domain, Error, Mode, Output, OutputReader, Result, Timings};
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
        let output = self.resident(buffer, buffer.len() as u64, mode.domain(), None)?;
        Ok(Hash::from_bytes(output.root_hash()))
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
        Ok(OutputReader::new(self.resident(buffer, len, mode.domain(), None)?))
    }

    /// [`hash_buffer`](Self::hash_buffer), reporting the kernels' time and the download of the
    /// last chunk and the CVs (from profiling events), and the wall time of the whole call.
    ///
    /// ```no_run
    /// use b3accel::{opencl::OpenClBackend, Mode};
    /// let gpu = OpenClBackend::open(0)?;
    /// let buf = ocl::Buffer::<u8>::builder().context(gpu.context()).len(1 << 30).build().unwrap();
    /// let (_hash, t) = gpu.hash_buffer_timed(&buf, &Mode::Hash)?;
    /// println!("{:.2} TB/s in the kernels", (1u64 << 30) as f64 / t.kernel.as_secs_f64() / 1e12);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_buffer_timed(&self, buffer: &ocl::Buffer<u8>, mode: &Mode) -> Result<(Hash, Timings)> {
        let start = Instant::now();
        let mut prof = Prof::default();
        let output = self.resident(buffer, buffer.len() as u64, mode.domain(), Some(&mut prof))?;
        let mut timings = prof.timings();
        timings.total = start.elapsed();
        Ok((Hash::from_bytes(output.root_hash()), timings))
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
        let output = self.resident(buffer, buffer.len() as u64, mode.domain(), Some(&mut prof))?;
        let hash = Hash::from_bytes(output.root_hash());
        Ok((hash, prof.profile(start, Instant::now())))
    }

    /// Checks that `mem` belongs to this backend's context.
    pub(crate) fn check_context(&self, mem: &core::Mem) -> Result<()> {
        let device = self.info.device;
        match core::get_mem_object_info(mem, core::MemInfo::Context) {
            Ok(core::MemInfoResult::Context(c)) if c == *self.context.as_core() => Ok(()),
            Ok(_) => Err(Error::InvalidInput(format!(
                "{device}: the buffer belongs to another OpenCL context; create it in the backend's context()"
            ))),
            Err(e) => Err(self.domain_err("inspecting the buffer", e)),
        }
    }

    fn resident(&self, buffer: &ocl::Buffer<u8>, len: u64, domain: Domain, prof: Option<&mut Prof>) -> Result<Output> {
        let device = self.info.device;
        if len > buffer.len() as u64 {
            return Err(Error::InvalidInput(format!(
                "{device}: cannot hash {len} bytes of a {}-byte buffer",
                buffer.len()
            )));
        }
        let mem = buffer.as_core();
        self.check_context(mem)?;
        // Everything goes on the backend's own in-order queue: after whatever the caller enqueued
        // there (writes of the buffer), with no marker or cross-queue wait in between.
        let queue = self.queue.as_core();
        let last_len = last_chunk_len(len) as usize;
        let full_chunks = (len - last_len as u64) / CHUNK_LEN as u64;
        let mut prof = prof;
        self.with_worker(|w| {
            // Everything on one in-order queue, ending in one read that brings back the subtree
            // CVs and the last chunk together.
            let tail_at = (len - last_len as u64) as usize;
            let mut last = vec![0u8; last_len];
            let mut whole: Vec<Cv> = vec![[0; 32]; full_chunks.count_ones() as usize];
            if full_chunks > 0 {
                let run = Run { data: mem, chunk_offset: 0, n: full_chunks, counter: 0, domain };
                let done =
                    w.enqueue_subtrees_on(queue, self, run, None, 0, Some((tail_at, last_len)), false, &mut prof)?;
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
            hash_resident(0, len, &last, domain, |offset, n, first, out| {
                if (offset, n, first) == (0, full_chunks, 0) {
                    // The run dispatched above: a fresh stack takes all full chunks at once.
                    out.copy_from_slice(&whole);
                    return Ok(());
                }
                let run = Run { data: mem, chunk_offset: offset, n, counter: first, domain };
                let done = w.enqueue_subtrees_on(queue, self, run, None, 0, None, false, &mut prof)?;
                w.wait(&done.read)?;
                w.take_pieces(0, n, out);
                Ok(())
            })
        })
    }
}
