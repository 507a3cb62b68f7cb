//! Reading a file from the front: blocks read in order by a few reader threads while the caller
//! hashes the blocks before them, in a bounded number of buffers.
//!
//! A disk serves a file fastest in order and in large reads; BLAKE3's tree lets each block be
//! hashed on every core as soon as it is in. So [`read_in_order`] keeps `depth` reads in flight
//! (each reader claims the next block, reads it whole with `pread`, and hands it over), and the
//! caller takes the blocks in file order, hashing one while the next ones are read. At most
//! `depth + 2` blocks are held, whatever the file's size. Every read also holds one of its
//! device's [`Permits`], so that files read side by side share the device's depth.
//!
//! Given a direct handle on the file (`O_DIRECT`, see [`open_direct`](super::storage::open_direct)),
//! the readers read through it into page-aligned buffers: the disk writes the bytes straight
//! where they are hashed and no core copies them out of the page cache. A read the handle
//! refuses (a file system that takes the flag but not the read) is read through `file`, as are
//! the reads after it.

use super::storage::{Permits, ReadPlan, DIRECT_ALIGN};
use crate::tree::{Error, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The readers' and the caller's shared state.
struct State {
    /// The next block to claim for reading.
    next: u64,
    /// Buffers free for a reader to fill.
    free: Vec<Buffer>,
    /// Buffers that may still be made.
    unmade: usize,
    /// Blocks read (or failed), by index, waiting for the caller.
    ready: BTreeMap<u64, io::Result<Buffer>>,
    /// Set when the caller stops early: the readers stop too.
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }
}

/// Stops the readers when the caller leaves, early or not.
struct StopOnDrop<'a>(&'a Shared);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.lock().stop = true;
        self.0.changed.notify_all();
    }
}

/// Calls `each(bytes, last)` on bytes `start..start + len` of `file`, in order, one block of
/// `plan.block` bytes at a time (`last` on the final one), while up to `plan.depth` reader
/// threads read the blocks after it, through `direct` where given. Every read holds one of
/// `permits`. A file that ends before `start + len` is an error ([`io::ErrorKind::UnexpectedEof`],
/// saying where it ended); so is a read error, or an error that `each` returns, which stops the
/// reading.
pub(crate) fn read_in_order(
    file: &File,
    direct: Option<&File>,
    start: u64,
    len: u64,
    plan: ReadPlan,
    permits: &Permits,
    mut each: impl FnMut(&[u8], bool) -> Result<()>,
) -> Result<()> {
    let block = plan.block as u64;
    let blocks = len.div_ceil(block);
    if blocks == 0 {
        return each(&[], true);
    }
    let readers = (plan.depth as u64).clamp(1, blocks) as usize;
    let shared = Shared {
        state: Mutex::new(State {
            next: 0,
            free: Vec::new(),
            unmade: (readers + 2).min(blocks as usize),
            ready: BTreeMap::new(),
            stop: false,
        }),
        changed: Condvar::new(),
    };
    let capacity = (block.min(len) as usize).next_multiple_of(DIRECT_ALIGN);
    let job = Job { file, direct, refused: AtomicBool::new(false), start, len, block, blocks, capacity };
    std::thread::scope(|s| {
        for _ in 0..readers {
            s.spawn(|| job.read_blocks(permits, &shared));
        }
        let _stop = StopOnDrop(&shared);
        for i in 0..blocks {
            let mut state = shared.lock();
            let bytes = loop {
                if let Some(bytes) = state.ready.remove(&i) {
                    break bytes;
                }
                state = shared.wait(state);
            };
            drop(state);
            let bytes = bytes.map_err(Error::Io)?;
            each(bytes.filled(), i + 1 == blocks)?;
            shared.lock().free.push(bytes);
            shared.changed.notify_all();
        }
        Ok(())
    })
}

/// What the readers read: `blocks` blocks of `block` bytes (the last one shorter) covering bytes
/// `start..start + len` of `file`, through `direct` while it takes the reads.
struct Job<'a> {
    file: &'a File,
    direct: Option<&'a File>,
    /// Set once `direct` refused a read: the rest goes through `file`.
    refused: AtomicBool,
    start: u64,
    len: u64,
    block: u64,
    blocks: u64,
    /// Bytes per buffer: a block, rounded up to a whole number of direct reads.
    capacity: usize,
}

impl Job<'_> {
    /// One reader: claims the next block while there is a buffer for it, reads it whole, hands it
    /// over; until every block is claimed or the caller stops.
    fn read_blocks(&self, permits: &Permits, shared: &Shared) {
        loop {
            let (i, buffer) = {
                let mut state = shared.lock();
                let buffer = loop {
                    if state.stop || state.next == self.blocks {
                        return;
                    }
                    if let Some(buffer) = state.free.pop() {
                        break Some(buffer);
                    }
                    if state.unmade > 0 {
                        state.unmade -= 1;
                        break None;
                    }
                    state = shared.wait(state);
                };
                state.next += 1;
                (state.next - 1, buffer)
            };
            let read = self.read_block(i, buffer, permits);
            shared.lock().ready.insert(i, read);
            shared.changed.notify_all();
        }
    }

    /// Block `i`, read into `buffer` (or a new one) while holding a permit.
    fn read_block(&self, i: u64, buffer: Option<Buffer>, permits: &Permits) -> io::Result<Buffer> {
        let offset = i * self.block;
        let want = self.block.min(self.len - offset) as usize;
        let mut buffer = match buffer {
            Some(buffer) => buffer,
            None => Buffer::new(self.capacity)?,
        };
        let _permit = permits.take();
        let got = self.read_into(buffer.room(), want, self.start + offset)?;
        buffer.len = want;
        if got < want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the file ended at byte {}, before byte {} (it changed while being read)",
                    self.start + offset + got as u64,
                    self.start + self.len
                ),
            ));
        }
        Ok(buffer)
    }

    /// Reads bytes from `at` into `room` until `want` of them are in or the file ends; returns
    /// how many are in (more than `want` where a direct read rounded up went past them). A read
    /// goes through the direct handle while it is aligned and the handle has refused none.
    fn read_into(&self, room: &mut [u8], want: usize, at: u64) -> io::Result<usize> {
        let mut filled = 0;
        while filled < want {
            let offset = at + filled as u64;
            let aligned = filled.is_multiple_of(DIRECT_ALIGN) && offset.is_multiple_of(DIRECT_ALIGN as u64);
            let direct = self.direct.filter(|_| aligned && !self.refused.load(Ordering::Relaxed));
            let read = match direct {
                Some(direct) => read_at(direct, &mut room[filled..want.next_multiple_of(DIRECT_ALIGN)], offset),
                None => read_at(self.file, &mut room[filled..want], offset),
            };
            match read {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if direct.is_some() && e.kind() == io::ErrorKind::InvalidInput => {
                    self.refused.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}

/// A block's buffer: `capacity` bytes starting at a [`DIRECT_ALIGN`] boundary, as direct reads
/// need, of which the first `len` hold the block.
struct Buffer {
    bytes: Vec<u8>,
    at: usize,
    len: usize,
}

impl Buffer {
    fn new(capacity: usize) -> io::Result<Buffer> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(capacity + DIRECT_ALIGN).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        bytes.resize(capacity + DIRECT_ALIGN, 0);
        let at = bytes.as_ptr().align_offset(DIRECT_ALIGN);
        Ok(Buffer { bytes, at, len: 0 })
    }

    /// All of the buffer's aligned bytes, to read into.
    fn room(&mut self) -> &mut [u8] {
        let end = self.bytes.len() - DIRECT_ALIGN + self.at;
        &mut self.bytes[self.at..end]
    }

    /// The block's bytes.
    fn filled(&self) -> &[u8] {
        &self.bytes[self.at..self.at + self.len]
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_file(name: &str, data: &[u8]) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("b3accel-blocks-{name}-{}", std::process::id()));
        std::fs::File::create(&path).unwrap().write_all(data).unwrap();
        let file = File::open(&path).unwrap();
        (path, file)
    }

    fn collect(file: &File, start: u64, len: u64, block: usize, depth: usize) -> Result<(Vec<u8>, Vec<bool>)> {
        let permits = Permits::new(depth.max(1));
        let mut got = Vec::new();
        let mut lasts = Vec::new();
        read_in_order(file, None, start, len, ReadPlan { block, depth }, &permits, |bytes, last| {
            got.extend_from_slice(bytes);
            lasts.push(last);
            Ok(())
        })?;
        Ok((got, lasts))
    }

    #[test]
    fn every_byte_in_order_at_any_depth_block_and_offset() {
        let data: Vec<u8> = (0..300_001u32).map(|i| (i * 7 + (i >> 9)) as u8).collect();
        let (path, file) = temp_file("order", &data);
        for (start, len) in [(0, 300_001), (1, 300_000), (4096, 100_000), (299_999, 2), (7, 0)] {
            for block in [1024, 4096, 65_536, 1 << 20] {
                for depth in [1, 2, 5] {
                    let (got, lasts) = collect(&file, start, len, block, depth).unwrap();
                    assert!(got == data[start as usize..(start + len) as usize], "{start}+{len} {block} {depth}");
                    assert_eq!(lasts.iter().filter(|&&l| l).count(), 1);
                    assert_eq!(lasts.last(), Some(&true));
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// Through a direct handle (where this file system gives one): the same bytes at any offset,
    /// aligned or not, any block size and depth, and a range that ends before the file does.
    #[test]
    fn direct_reads_give_every_byte_in_order() {
        let data: Vec<u8> = (0..3 * 65_536 + 777u32).map(|i| (i * 13 + (i >> 11)) as u8).collect();
        let (path, file) = temp_file("direct", &data);
        let direct = super::super::storage::open_direct(&file);
        let whole = data.len() as u64;
        for (start, len) in [(0, whole), (0, 65_536), (4096, whole - 4096), (4096, 5000), (1, whole - 1), (0, 0)] {
            for block in [4096, 65_536, 1 << 20] {
                for depth in [1, 3] {
                    let permits = Permits::new(depth);
                    let mut got = Vec::new();
                    let plan = ReadPlan { block, depth };
                    read_in_order(&file, direct.as_ref(), start, len, plan, &permits, |bytes, _| {
                        got.extend_from_slice(bytes);
                        Ok(())
                    })
                    .unwrap();
                    assert!(got == data[start as usize..(start + len) as usize], "{start}+{len} {block} {depth}");
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_file_shorter_than_asked_is_an_error_saying_where_it_ended() {
        let (path, file) = temp_file("short", &[1u8; 10_000]);
        let err = collect(&file, 0, 20_000, 4096, 2).unwrap_err();
        assert!(err.to_string().contains("ended at byte 10000"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_error_from_the_caller_stops_the_readers() {
        let (path, file) = temp_file("stop", &[2u8; 100_000]);
        let permits = Permits::new(3);
        let mut calls = 0;
        let err = read_in_order(&file, None, 0, 100_000, ReadPlan { block: 1024, depth: 3 }, &permits, |_, _| {
            calls += 1;
            if calls == 3 {
                return Err(Error::InvalidInput("enough".into()));
            }
            Ok(())
        })
        .unwrap_err();
        assert!(err.to_string().contains("enough"));
        assert_eq!(calls, 3);
        std::fs::remove_file(&path).unwrap();
    }
}
