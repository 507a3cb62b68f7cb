//! Batches of equal-length messages on an OpenCL device (`many_one`, `many_chunks` and
//! `many_merge` in shaders/blake3.cl), from host memory (the [`Backend`](crate::Backend)
//! override) and from device buffers.
//!
//! Messages of one chunk or less take one work-item each and one dispatch; longer messages one
//! work-item per chunk, then one per message merging its chunks.

use super::backend::OpenClBackend;
use super::profile::{Prof, Stage};
use super::worker::Worker;
use crate::backends::gpu::policy::{plan_many, ManyPlan};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::merkle::hash_many_on;
use crate::tree::{hash_small, Domain, Error, Result};
use ocl::core::{self, ArgVal, CommandQueue, Event, Mem};

/// How many work-items one `many_chunks` dispatch has at most: `items` for messages of one chunk,
/// `scratch_items` for longer ones, whose chunk CVs go to scratch memory.
#[derive(Clone, Copy)]
struct ManyCaps {
    items: u64,
    scratch_items: u64,
}

/// 2^26 one-chunk messages per dispatch; 2^22 chunk CVs (128 MiB) of longer ones.
const MANY_CAPS: ManyCaps = ManyCaps { items: 1 << 26, scratch_items: 1 << 22 };

impl Worker {
    /// Enqueues on `queue` the hashing of `count` messages of `msg_len >= 1` bytes, the first
    /// being message `first_msg` of `data`, into nodes `out_at..` of `out`. Returns the last
    /// command's event.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_many(
        &mut self,
        queue: &CommandQueue,
        data: &Mem,
        msg_len: u64,
        first_msg: u64,
        count: u64,
        domain: Domain,
        out: &Mem,
        out_at: u64,
        caps: ManyCaps,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Event> {
        debug_assert!(msg_len >= 1 && count >= 1);
        let chunks = msg_len.div_ceil(CHUNK_LEN as u64);
        let chunks_arg = u32::try_from(chunks)
            .map_err(|_| Error::InvalidInput(format!("hash_many: messages of {msg_len} bytes are too long")))?;
        // The alignment every message (and so every block) starts at, given an aligned buffer.
        let align: u32 = match msg_len {
            l if l % 16 == 0 => 16,
            l if l % 4 == 0 => 4,
            _ => 1,
        };
        let per_dispatch = if chunks == 1 { caps.items } else { (caps.scratch_items / chunks).max(1) };
        let cvs = if chunks == 1 {
            None
        } else {
            let msgs = per_dispatch.min(count);
            Some(self.levels[0].get(self.device, &self.context, (msgs * chunks * 32) as usize)?)
        };
        let wg = self.many_wg as u64;
        let mut last = Event::null();
        let mut done = 0u64;
        while done < count {
            let msgs = per_dispatch.min(count - done);
            let items = msgs * chunks;
            let items_arg = items as u32;
            let (dst, dst_at) = match &cvs {
                Some(c) => (c, 0u64),
                None => (out, out_at + done),
            };
            let first = first_msg + done;
            // many_one for messages of one chunk; many_chunks, with one more argument (the chunk
            // count, fourth), for longer ones.
            let k = if chunks == 1 { &self.many_one } else { &self.many_chunks };
            let set = |i, v| core::set_kernel_arg(k, i, v);
            let at = |i: u32| if chunks == 1 { i } else { i + 1 };
            // SAFETY (key argument): as in `enqueue_merkle`.
            let key_arg = unsafe { ArgVal::from_raw(32, domain.key.as_ptr().cast(), false) };
            set(0, ArgVal::mem(data))
                .and_then(|_| set(1, ArgVal::scalar(&msg_len)))
                .and_then(|_| set(2, ArgVal::scalar(&first)))
                .and_then(|_| set(3, ArgVal::scalar(&items_arg)))
                .and_then(|_| if chunks == 1 { Ok(()) } else { set(4, ArgVal::scalar(&chunks_arg)) })
                .and_then(|_| set(at(4), ArgVal::scalar(&align)))
                .and_then(|_| set(at(5), key_arg))
                .and_then(|_| set(at(6), ArgVal::scalar(&domain.flags)))
                .and_then(|_| set(at(7), ArgVal::mem(dst)))
                .and_then(|_| set(at(8), ArgVal::scalar(&dst_at)))
                .map_err(|e| self.err("setting kernel arguments", e))?;
            let mut ev = Event::null();
            // SAFETY: every argument is set; the kernel checks its index against `items`, reads
            // messages `first..first + msgs` of `data` and writes `items` nodes of `dst` from
            // `dst_at`, which the callers size so.
            Prof::begin(prof);
            unsafe {
                core::enqueue_kernel(
                    queue,
                    k,
                    1,
                    None,
                    &[(items.div_ceil(wg) * wg) as usize, 1, 1],
                    Some([wg as usize, 1, 1]),
                    None::<&Event>,
                    Some(&mut ev),
                )
            }
            .map_err(|e| self.err("running the message kernel", e))?;
            Prof::push(prof, Stage::Kernel, &ev);
            last = ev;
            if let Some(c) = &cvs {
                let k = &self.many_merge;
                let set = |i, v| core::set_kernel_arg(k, i, v);
                let msgs_arg = msgs as u32;
                let at = out_at + done;
                // SAFETY (key argument): as above.
                let key_arg = unsafe { ArgVal::from_raw(32, domain.key.as_ptr().cast(), false) };
                set(0, ArgVal::mem(c))
                    .and_then(|_| set(1, ArgVal::scalar(&msgs_arg)))
                    .and_then(|_| set(2, ArgVal::scalar(&chunks_arg)))
                    .and_then(|_| set(3, key_arg))
                    .and_then(|_| set(4, ArgVal::scalar(&domain.flags)))
                    .and_then(|_| set(5, ArgVal::mem(out)))
                    .and_then(|_| set(6, ArgVal::scalar(&at)))
                    .map_err(|e| self.err("setting kernel arguments", e))?;
                let mut ev = Event::null();
                // SAFETY: as above; the kernel reads `msgs * chunks` CVs of `c` and writes `msgs`
                // nodes of `out` from `at`.
                unsafe {
                    core::enqueue_kernel(
                        queue,
                        &self.many_merge,
                        1,
                        None,
                        &[(msgs.div_ceil(wg) * wg) as usize, 1, 1],
                        Some([wg as usize, 1, 1]),
                        None::<&Event>,
                        Some(&mut ev),
                    )
                }
                .map_err(|e| self.err("running the merge kernel", e))?;
                Prof::push(prof, Stage::Kernel, &ev);
                last = ev;
            }
            core::flush(queue).map_err(|e| self.err("flushing the queue", e))?;
            done += msgs;
        }
        Ok(last)
    }
}

impl OpenClBackend {
    /// The messages of a resident `hash_many` (`count` of `msg_len` bytes from byte `offset` of
    /// `data`), checked, as a buffer of their own.
    fn messages(&self, data: &ocl::Buffer<u8>, offset: u64, count: usize, msg_len: usize) -> Result<Mem> {
        let bytes = (count as u64)
            .checked_mul(msg_len as u64)
            .ok_or_else(|| Error::InvalidInput(format!("hash_many: {count} messages of {msg_len} bytes overflow")))?;
        self.region("hash_many messages", data, offset, bytes)
    }

    /// [`Resident::hash_many_into`](crate::Resident::hash_many_into) on the backend's own queue.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn many_into(
        &self,
        data: &ocl::Buffer<u8>,
        offset: u64,
        count: usize,
        msg_len: usize,
        domain: Domain,
        out: &ocl::Buffer<u8>,
        out_offset: u64,
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let device = self.dev.info.device;
        let messages = self.messages(data, offset, count, msg_len)?;
        if !out_offset.is_multiple_of(32) {
            return Err(Error::InvalidInput(format!(
                "{device}: hash_many_into: output offset {out_offset} is not a multiple of 32 bytes"
            )));
        }
        if (count as u64)
            .checked_mul(32)
            .and_then(|b| b.checked_add(out_offset))
            .is_none_or(|end| end > out.len() as u64)
        {
            return Err(Error::InvalidInput(format!(
                "{device}: {count} hashes at byte {out_offset} do not fit in a {}-byte output buffer",
                out.len()
            )));
        }
        self.check_context(out.as_core())?;
        if count == 0 {
            return Ok(());
        }
        self.with_worker(|w| {
            let queue = w.main.clone();
            let last =
                self.many_on(w, &queue, &messages, msg_len, count, domain, out.as_core(), out_offset / 32, prof)?;
            w.wait(&last)?;
            w.trim();
            Ok(())
        })
    }

    /// [`Resident::hash_many`](crate::Resident::hash_many) on the backend's own queue: the
    /// hashes into scratch memory on the device, then one read into `out`.
    pub(super) fn many_to_host(
        &self,
        data: &ocl::Buffer<u8>,
        offset: u64,
        msg_len: usize,
        domain: Domain,
        out: &mut [Cv],
        prof: &mut Option<&mut Prof>,
    ) -> Result<()> {
        let messages = self.messages(data, offset, out.len(), msg_len)?;
        if out.is_empty() {
            return Ok(());
        }
        if msg_len == 0 {
            // Every message is the empty one.
            out.fill(hash_small(&[], domain));
            return Ok(());
        }
        self.with_worker(|w| {
            let queue = w.main.clone();
            let hashes = w.output.get(self.dev.info.device, &w.context, out.len() * 32)?;
            self.many_on(w, &queue, &messages, msg_len, out.len(), domain, &hashes, 0, prof)?;
            w.read_into(&queue, &hashes, out.as_flattened_mut(), prof)?;
            w.trim();
            Ok(())
        })
    }

    /// Enqueues on `queue` the hashing of the `count >= 1` messages of `msg_len` bytes at the
    /// start of `data` into nodes `out_at..` of `out`. Returns the last command's event.
    #[allow(clippy::too_many_arguments)]
    fn many_on(
        &self,
        w: &mut Worker,
        queue: &CommandQueue,
        data: &Mem,
        msg_len: usize,
        count: usize,
        domain: Domain,
        out: &Mem,
        out_at: u64,
        prof: &mut Option<&mut Prof>,
    ) -> Result<Event> {
        if msg_len > 0 {
            let (n, len) = (count as u64, msg_len as u64);
            return w.enqueue_many(queue, data, len, 0, n, domain, out, out_at, MANY_CAPS, prof);
        }
        // Every message is the empty one: its hash, written count times.
        let hash = hash_small(&[], domain);
        // The 32 bytes as four little-endian 64-bit words: a 32-byte pattern type.
        let words: [u64; 4] =
            std::array::from_fn(|i| u64::from_le_bytes(hash[8 * i..8 * i + 8].try_into().expect("8 bytes")));
        let pattern = core::Ulong4::from(words);
        let mut ev = Event::null();
        Prof::begin(prof);
        core::enqueue_fill_buffer(
            queue,
            out,
            pattern,
            out_at as usize,
            count,
            None::<&Event>,
            Some(&mut ev),
            Some(&self.dev.queue.device_version()),
        )
        .map_err(|e| w.err("filling the output", e))?;
        Prof::push(prof, Stage::Kernel, &ev);
        core::flush(queue).map_err(|e| w.err("flushing the queue", e))?;
        Ok(ev)
    }

    /// [`Backend::hash_many`](crate::Backend::hash_many) on an OpenCL device: batches of messages of
    /// up to 64 chunks are uploaded and hashed by the `many_*` kernels; longer messages go one at a
    /// time through the chunk kernels (the host policy of `gpu::policy`).
    pub(super) fn hash_many_host(&self, data: &[u8], msg_len: usize, domain: Domain, out: &mut [Cv]) -> Result<()> {
        let per_batch = match plan_many(data, msg_len, domain, out)? {
            ManyPlan::Done => return Ok(()),
            ManyPlan::OneAtATime => return hash_many_on(self, data, msg_len, &domain.key, domain.flags, out),
            ManyPlan::Batches(per_batch) => per_batch,
        };
        self.with_worker(|w| {
            let queue = w.compute.clone();
            for (i, hashes) in out.chunks_mut(per_batch).enumerate() {
                let start = i * per_batch * msg_len;
                let msgs = &data[start..start + hashes.len() * msg_len];
                let input = w.input.get(self.dev.info.device, &w.context, msgs.len())?;
                let output = w.output.get(self.dev.info.device, &w.context, hashes.len() * 32)?;
                // SAFETY: a blocking write: `msgs` is read before the call returns.
                unsafe {
                    core::enqueue_write_buffer(&queue, &input, true, 0, msgs, None::<&Event>, None::<&mut Event>)
                }
                .map_err(|e| w.err("uploading messages", e))?;
                let (n, len) = (hashes.len() as u64, msg_len as u64);
                w.enqueue_many(&queue, &input, len, 0, n, domain, &output, 0, MANY_CAPS, &mut None)?;
                w.read_into(&queue, &output, hashes.as_flattened_mut(), &mut None)?;
            }
            w.trim();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::CpuBackend;
    use crate::tree::Backend;

    /// Many dispatches per call, with tiny caps: every dispatch's messages and outputs must land
    /// at the right offsets, for one-chunk and longer messages.
    #[test]
    fn many_dispatches_per_call_land_at_their_offsets() {
        let list = super::super::enumerate().unwrap_or_default();
        let expected = crate::core::expect::expected_count("opencl");
        if list.len() < expected.max(1) {
            crate::core::expect::missing(
                &format!("opencl:{}", expected.max(1)),
                "many_dispatches_per_call_land_at_their_offsets",
            );
            assert!(!crate::core::expect::ci(), "CI=true: the OpenCL backend is built, so it must have a device");
            return;
        }
        let domain = Domain::keyed(&[7; 32]);
        for (i, info) in list.iter().enumerate() {
            let be = OpenClBackend::open(i).unwrap();
            for (msg_len, count) in [(64usize, 23usize), (5, 31), (1500, 9), (3000, 7)] {
                let data: Vec<u8> = (0..msg_len * count).map(|k| (k * 31 % 251) as u8).collect();
                let mut want = vec![[0u8; 32]; count];
                CpuBackend::new().hash_many(&data, msg_len, &domain.key, domain.flags, &mut want).unwrap();
                let caps = ManyCaps { items: 5, scratch_items: 7 };
                let got = be
                    .with_worker(|w| {
                        let queue = w.compute.clone();
                        let input = w.input.get(w.device, &w.context, data.len())?;
                        let output = w.output.get(w.device, &w.context, (count + 3) * 32)?;
                        // SAFETY: blocking write and read of local vectors.
                        unsafe {
                            core::enqueue_write_buffer(
                                &queue,
                                &input,
                                true,
                                0,
                                &data,
                                None::<&Event>,
                                None::<&mut Event>,
                            )
                        }
                        .unwrap();
                        // Messages 2.. of the buffer, to nodes 3.. of the output.
                        let (n, len) = ((count - 2) as u64, msg_len as u64);
                        let last = w.enqueue_many(&queue, &input, len, 2, n, domain, &output, 3, caps, &mut None)?;
                        w.wait(&last)?;
                        let mut out = vec![[0u8; 32]; count + 1];
                        w.read_into(&queue, &output, out.as_flattened_mut(), &mut None)?;
                        Ok(out)
                    })
                    .unwrap();
                assert_eq!(got[3..], want[2..], "{}: {count} x {msg_len} bytes", info.name);
            }
        }
    }
}
