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
//! A file not in memory is read around the page cache (Linux's `O_DIRECT`) where its file system
//! takes it: the disk then writes each block straight into its buffer, sparing a copy out of the
//! page cache that costs as much CPU as hashing, and the reads in flight reach the disk as large
//! requests side by side rather than as the kernel's readahead (docs/performance.md, "Files not in
//! memory"). Where it does not (tmpfs, some FUSE file systems, an unaligned start), the blocks
//! are read through the page cache.

use super::storage::{Permits, ReadPlan};
use crate::tree::{Error, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The alignment of offsets, lengths and buffers that reads around the page cache need: the
/// largest logical block size of common disks.
const DIRECT_ALIGN: usize = 4096;

/// Buffers of direct reads start on a huge page (2 MiB) and ask for huge pages: a request of a
/// disk holds a limited number of contiguous pieces of memory (often 254), so a buffer of 4 KiB
/// pages caps each request at about 1 MiB, and a disk limited in requests a second (a spinning
/// one, or a throttled volume) at a quarter of what 4 MiB requests carry.
const DIRECT_BUFFER_ALIGN: usize = 2 << 20;

/// One block's buffer: `len` bytes from `at` in `bytes` (`at` aligns them for direct reads).
#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    at: usize,
    len: usize,
}

impl Buffer {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.at..self.at + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes[self.at..self.at + self.len]
    }
}

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
/// threads read the blocks after it; around the page cache where `direct` asks it and the file
/// system takes it (see the module's notes). Every read holds one of `permits`. A file that ends before
/// `start + len` is an error ([`io::ErrorKind::UnexpectedEof`], saying where it ended); so is a
/// read error, or an error that `each` returns, which stops the reading.
pub(crate) fn read_in_order(
    file: &File,
    start: u64,
    len: u64,
    plan: ReadPlan,
    permits: &Permits,
    direct: bool,
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
    let around_cache =
        if direct && start.is_multiple_of(DIRECT_ALIGN as u64) && block.is_multiple_of(DIRECT_ALIGN as u64) {
            open_direct(file)
        } else {
            None
        };
    let job = Job { file, around_cache: around_cache.as_ref(), start, len, block, blocks };
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
            each(bytes.as_slice(), i + 1 == blocks)?;
            shared.lock().free.push(bytes);
            shared.changed.notify_all();
        }
        Ok(())
    })
}

/// What the readers read: `blocks` blocks of `block` bytes (the last one shorter) covering bytes
/// `start..start + len` of `file`.
struct Job<'a> {
    file: &'a File,
    /// The same file opened to be read around the page cache, where that was asked and works.
    around_cache: Option<&'a File>,
    start: u64,
    len: u64,
    block: u64,
    blocks: u64,
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
        let _permit = permits.take();
        let mut got = None;
        let mut buffer = buffer.unwrap_or_default();
        if let Some(direct) = self.around_cache {
            // Whole aligned pages, up to or past the end of the file (the kernel stops there).
            buffer_of(&mut buffer, want.next_multiple_of(DIRECT_ALIGN), DIRECT_BUFFER_ALIGN)?;
            match read_direct_at(direct, buffer.as_mut_slice(), self.start + offset) {
                // A file system that opened the file for direct reads may still refuse them
                // (EINVAL, which the standard library reports as `InvalidInput`).
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {}
                read => got = Some(read?),
            }
        }
        let got = match got {
            Some(got) => got,
            None => {
                buffer_of(&mut buffer, want, 1)?;
                read_full_at(self.file, buffer.as_mut_slice(), self.start + offset)?
            }
        };
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
        buffer.len = want;
        Ok(buffer)
    }
}

/// Makes `buffer` hold `len` bytes from an offset aligned to `align` (huge pages asked for, where
/// that is a huge page).
fn buffer_of(buffer: &mut Buffer, len: usize, align: usize) -> io::Result<()> {
    let bytes = &mut buffer.bytes;
    if bytes.capacity() < len + align - 1 {
        bytes.clear();
        bytes.try_reserve_exact(len + align - 1).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        #[cfg(target_os = "linux")]
        if align == DIRECT_BUFFER_ALIGN {
            let at = bytes.as_ptr().align_offset(align);
            let huge = (bytes.capacity() - at) / align * align;
            // SAFETY: advice on memory this vector owns (its capacity, from an aligned offset);
            // it changes how the memory is backed, never its contents.
            unsafe { libc::madvise(bytes.as_mut_ptr().add(at).cast(), huge, libc::MADV_HUGEPAGE) };
        }
    }
    buffer.at = bytes.as_ptr().align_offset(align);
    if bytes.len() < buffer.at + len {
        bytes.resize(buffer.at + len, 0);
    }
    buffer.len = len;
    Ok(())
}

/// `file` opened again to be read around the page cache (`O_DIRECT`), where the system and its
/// file system take that; `None` elsewhere.
fn open_direct(file: &File) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        // The descriptor's own entry in /proc opens the file it holds, even one renamed or removed.
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT | libc::O_NOCTTY).open(path).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// Reads whole aligned pages into `buf` (aligned, a whole number of pages long) from `offset`
/// (aligned) of a file opened for direct reads, up to the file's end; returns the bytes read.
fn read_direct_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_at(file, &mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                // Only the file's end leaves a read short of a whole page.
                if !n.is_multiple_of(DIRECT_ALIGN) {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads into all of `buf` from `offset`, or up to the file's end; returns the bytes read.
/// Interrupted and short reads are retried.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_at(file, &mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
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

    fn collect(
        file: &File,
        start: u64,
        len: u64,
        block: usize,
        depth: usize,
        direct: bool,
    ) -> Result<(Vec<u8>, Vec<bool>)> {
        let permits = Permits::new(depth.max(1));
        let mut got = Vec::new();
        let mut lasts = Vec::new();
        read_in_order(file, start, len, ReadPlan { block, depth }, &permits, direct, |bytes, last| {
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
                    for direct in [false, true] {
                        let (got, lasts) = collect(&file, start, len, block, depth, direct).unwrap();
                        let at = format!("{start}+{len} {block} {depth} {direct}");
                        assert!(got == data[start as usize..(start + len) as usize], "{at}");
                        assert_eq!(lasts.iter().filter(|&&l| l).count(), 1);
                        assert_eq!(lasts.last(), Some(&true));
                    }
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_file_shorter_than_asked_is_an_error_saying_where_it_ended() {
        let (path, file) = temp_file("short", &[1u8; 10_000]);
        for direct in [false, true] {
            let err = collect(&file, 0, 20_000, 4096, 2, direct).unwrap_err();
            assert!(err.to_string().contains("ended at byte 10000"), "{err}");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_error_from_the_caller_stops_the_readers() {
        let (path, file) = temp_file("stop", &[2u8; 100_000]);
        let permits = Permits::new(3);
        let mut calls = 0;
        let err = read_in_order(&file, 0, 100_000, ReadPlan { block: 1024, depth: 3 }, &permits, false, |_, _| {
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
