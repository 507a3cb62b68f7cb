//! Files and readers: hashed whole ([`hash_file_on`], [`Input::hash_with`]) or fed to a
//! [`Hasher`] ([`Hasher::update_mmap`], [`Hasher::update_reader`], [`Input::update`]).
//!
//! How an input is read ([`ReadMode`]; by default, `Auto`):
//! - a regular file whose pages are in the page cache (all but a few: [`storage`](self#storage)
//!   says how that is asked) and that is 1 MiB or more is memory-mapped and hashed from the map
//!   in one call to the device; on Linux the pool's idle threads populate its pages while the
//!   hash runs and tear the page tables down in parallel after it (`b3accel FILE` outruns b3sum
//!   that way: docs/performance.md);
//! - a regular file that is not in memory is read from the front, in order: one read for a file
//!   of up to 4 MiB, else blocks of 8 MiB with a few reads in flight (two on a spinning disk or a
//!   network file system, more on an SSD: [`Storage`]), each block hashed on every core while
//!   the next ones are read, around the page cache where the file system allows (no copy out of
//!   it, and a file larger than memory evicts nothing). Memory stays bounded whatever the file's
//!   size, and the disk is read at its own speed instead of seeking for every page that many
//!   threads fault in a map;
//! - a smaller regular file (under 1 MiB in memory, under 16 KiB otherwise) is read whole into
//!   a buffer that each thread keeps, and hashed in one call: many small files cost no
//!   allocation, and a copy out of the page cache costs less than a map at that size;
//! - anything else (pipes, standard input, devices, any [`Read`]) is read in large buffers, at
//!   least 4 MiB or the device's batch, two of them in turn, so that all of each read goes to the
//!   device as soon as the next read shows that more follows.
//!
//! [`ReadMode::Map`] maps every regular file of 16 KiB or more (b3sum's default);
//! [`ReadMode::Stream`] reads every one from the front (b3sum's `--no-mmap`).
//!
//! A file must keep its size, modification time and change time until it has been read, mapped
//! or from the front: one that is truncated, grows or is rewritten meanwhile is an [`Error::Io`]
//! ([`io::ErrorKind::UnexpectedEof`] or [`io::ErrorKind::InvalidData`], saying what changed), never
//! the hash of bytes that were not the file's at any one time; a hasher it was added to
//! ([`Input::update`], [`Hasher::update_mmap`]) is left as it was before the call.
//!
//! A file that cannot be mapped (some file systems) is read instead. A directory is an error
//! ([`Error::Io`] with the system's "Is a directory"); so is a file that cannot be opened or read
//! (the system's error, for example `NotFound` or `PermissionDenied`). An empty file hashes as the
//! empty input.
//!
//! With a progress callback ([`FileOptions::progress`], [`Hasher::on_progress`]) the work is told
//! as it goes: every 32 MiB of a file in memory, every read buffer of a stream.

use super::blocks::read_in_order;
use super::mapped::with_pages;
use super::storage::{advise_sequential, cached_fraction, Disk, IN_MEMORY};
pub use super::storage::{ReadPlan, Storage};
use super::truncated;
use crate::api::hasher::Hasher;
use crate::dispatch::backend;
use crate::tree::{Backend, Device, Error, Mode, Output, OutputReader, Result};
use blake3::Hash;
use memmap2::{Mmap, MmapOptions};
use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// Regular files of at least this size are mapped with `ReadMode::Map` (as b3sum does).
const MMAP_MIN: u64 = 16 * 1024;
/// With `ReadMode::Auto`, a file in memory is mapped from this size on: below it, one copy out of
/// the page cache costs less than mapping and faulting.
const AUTO_MAP_MIN: u64 = 1 << 20;
/// Regular files (or ranges of them) up to this size that are not mapped are read whole into a
/// per-thread buffer and hashed in one call.
const READ_WHOLE_MAX: u64 = 4 << 20;
/// Streams are read in buffers of at least this size (of the device's batch, when larger).
const READ_MIN: usize = 4 << 20;
/// With a progress callback, inputs in memory go to the device in pieces of this size.
const PROGRESS_PIECE: usize = 32 << 20;

/// The BLAKE3 hash of the file at `path`, computed on `device`: the file memory-mapped (with its
/// pages brought in and out in parallel, on Linux) or read, as the [module](self) describes.
///
/// ```
/// let path = std::env::temp_dir().join(format!("b3accel-doc-hash-file-{}", std::process::id()));
/// std::fs::write(&path, vec![7u8; 100_000])?;
/// let hash = b3accel::hash_file_on(b3accel::Device::Cpu, &path)?;
/// assert_eq!(hash, blake3::hash(&vec![7u8; 100_000]));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hash_file_on(device: Device, path: impl AsRef<Path>) -> Result<Hash> {
    let (output, _) = Input::open(path)?.root(backend(device)?, &Mode::Hash, &FileOptions::default())?;
    Ok(Hash::from_bytes(output.root_hash()))
}

/// How an [`Input`] is read.
///
/// ```
/// use b3accel::file::{FileOptions, ReadMode};
/// let options = FileOptions { read: ReadMode::Stream, ..Default::default() };
/// assert!(options.progress.is_none());
/// ```
#[derive(Clone, Copy)]
pub struct FileOptions<'a> {
    /// How regular files are read: mapped where they are in memory and read from the front where
    /// not (the default), or always one way.
    pub read: ReadMode,
    /// Called with the number of bytes hashed each time more is done: every 32 MiB of a mapped
    /// file, every read buffer of a stream, once for a small file.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

impl Default for FileOptions<'_> {
    fn default() -> Self {
        FileOptions { read: ReadMode::Auto, progress: None }
    }
}

impl fmt::Debug for FileOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileOptions").field("read", &self.read).field("progress", &self.progress.is_some()).finish()
    }
}

/// How regular files are read (see the [module](self)).
///
/// ```
/// use b3accel::file::ReadMode;
/// assert_eq!("stream".parse::<ReadMode>(), Ok(ReadMode::Stream));
/// assert_eq!(ReadMode::default(), ReadMode::Auto);
/// assert!("seek".parse::<ReadMode>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Mapped where the file's pages are in memory, read from the front where they are not.
    #[default]
    Auto,
    /// Mapped (16 KiB and more), as b3sum does by default.
    Map,
    /// Read from the front, as b3sum's `--no-mmap` does.
    Stream,
}

impl std::str::FromStr for ReadMode {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<ReadMode, String> {
        match s {
            "auto" => Ok(ReadMode::Auto),
            "map" => Ok(ReadMode::Map),
            "stream" => Ok(ReadMode::Stream),
            _ => Err(format!("'{s}' is not a way to read: auto, map or stream")),
        }
    }
}

/// An input to hash: a file opened (its size known before any of it is read, so that the device
/// can be chosen to fit it), or any reader; optionally only a byte range of it.
///
/// ```
/// use b3accel::file::{FileOptions, Input};
/// use b3accel::{backend, Device, Mode};
/// let path = std::env::temp_dir().join(format!("b3accel-doc-input-{}", std::process::id()));
/// std::fs::write(&path, b"hello world")?;
/// let input = Input::open(&path)?;
/// assert_eq!(input.size(), Some(11));
/// let (mut reader, bytes) = input.hash_with(backend(Device::Cpu)?, &Mode::Hash, &FileOptions::default())?;
/// let mut hash = [0u8; 32];
/// reader.fill(&mut hash);
/// assert_eq!((hash, bytes), (*blake3::hash(b"hello world").as_bytes(), 11));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Input<'a> {
    source: Source<'a>,
    /// Only bytes `start..start + len` of the source, where a range was asked for.
    range: Option<(u64, u64)>,
    /// Whether those bytes were found in the page cache, once asked ([`Input::from_disk`]), so
    /// that choosing a device and then reading ask the system once.
    in_memory: std::cell::Cell<Option<bool>>,
}

enum Source<'a> {
    /// A regular file, `len` bytes long when it was opened, and what it was then.
    Regular { file: File, len: u64, opened: Identity },
    /// Anything else that reads.
    Stream(Box<dyn Read + 'a>),
}

impl fmt::Debug for Input<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.source {
            Source::Regular { .. } => "regular file",
            Source::Stream(_) => "stream",
        };
        f.debug_struct("Input").field("source", &kind).field("size", &self.size()).finish()
    }
}

/// The bytes of an input, ready to hash.
enum Content<'a> {
    /// A map of the whole input, of a file that must stay as it was `opened` while it is read.
    Mapped { map: Mmap, file: File, opened: Identity },
    /// A small part of a regular file, to read whole: `len` bytes from `start`; with `exact`,
    /// exactly those (a range), else to the end of the file as it is then. `from_disk`: not in
    /// memory, so the read takes one of its device's permits.
    Small { file: File, start: u64, len: u64, exact: bool, from_disk: bool },
    /// A large part of a regular file, to read from the front: exactly `len` bytes from `start`,
    /// of a file that must stay as it was `opened`. `from_disk`: not in memory, so read around the
    /// page cache where the file system takes it.
    Blocks { file: File, start: u64, len: u64, opened: Identity, from_disk: bool },
    /// A stream, at the input's first byte; with a limit, exactly that many bytes.
    Stream(Box<dyn Read + 'a>, Option<u64>),
}

impl Input<'static> {
    /// Opens the file at `path`. A directory, or a file that cannot be opened, is an error.
    ///
    /// ```
    /// let err = b3accel::file::Input::open(std::env::temp_dir()).unwrap_err();
    /// assert!(err.to_string().contains("directory"), "{err}");
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Input<'static>> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(Error::Io(is_a_directory()));
        }
        let source = match meta.is_file() {
            true => Source::Regular { file, len: meta.len(), opened: Identity::of_meta(&meta) },
            false => Source::Stream(Box::new(file)),
        };
        Ok(Input { source, range: None, in_memory: Default::default() })
    }
}

impl<'a> Input<'a> {
    /// Any reader as an input (standard input, a pipe, a socket, a decompressor...): read in large
    /// buffers.
    ///
    /// ```
    /// use b3accel::file::{FileOptions, Input};
    /// let input = b3accel::file::Input::from_reader(&b"abc"[..]);
    /// assert_eq!(input.size(), None);
    /// let cpu = b3accel::backend(b3accel::Device::Cpu)?;
    /// let (mut r, n) = input.hash_with(cpu, &b3accel::Mode::Hash, &FileOptions::default())?;
    /// let mut hash = [0u8; 32];
    /// r.fill(&mut hash);
    /// assert_eq!((hash, n), (*blake3::hash(b"abc").as_bytes(), 3));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn from_reader(reader: impl Read + 'a) -> Input<'a> {
        Input { source: Source::Stream(Box::new(reader)), range: None, in_memory: Default::default() }
    }

    /// How many bytes the input holds, where that is known before reading: a regular file's size
    /// (when it was opened), a range's length. `None` for streams.
    ///
    /// ```
    /// let input = b3accel::file::Input::from_reader(std::io::empty()).range(10, 20)?;
    /// assert_eq!(input.size(), Some(20));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn size(&self) -> Option<u64> {
        match (&self.source, self.range) {
            (_, Some((_, len))) => Some(len),
            (Source::Regular { len, .. }, None) => Some(*len),
            (Source::Stream(_), None) => None,
        }
    }

    /// Whether hashing the input with `read` reads it from its disk rather than from memory: a
    /// regular file of 16 KiB or more whose pages are not (nearly all) in the page cache, unless
    /// `read` maps it anyway. A caller can choose its device by it: one disk is read more slowly
    /// than the CPU hashes.
    ///
    /// ```
    /// use b3accel::file::{Input, ReadMode};
    /// let path = std::env::temp_dir().join(format!("b3accel-doc-from-disk-{}", std::process::id()));
    /// std::fs::write(&path, vec![0u8; 100_000])?; // just written: in the page cache
    /// assert!(!Input::open(&path)?.from_disk(ReadMode::Auto));
    /// assert!(!Input::from_reader(&b"abc"[..]).from_disk(ReadMode::Stream));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_disk(&self, read: ReadMode) -> bool {
        let Source::Regular { file, len, .. } = &self.source else { return false };
        let (start, len) = self.range.unwrap_or((0, *len));
        len >= MMAP_MIN && read != ReadMode::Map && !self.resident(file, start, len)
    }

    /// Whether bytes `start..start + len` of `file` (this input's) are in memory: asked once.
    fn resident(&self, file: &File, start: u64, len: u64) -> bool {
        let known = self.in_memory.get().unwrap_or_else(|| in_memory(file, start, len));
        self.in_memory.set(Some(known));
        known
    }

    /// Only bytes `offset..offset + len` of the input (of the range it already is, if any). For a
    /// regular file a range past its end is an error here; for a stream, when reading (a stream
    /// that ends early is an error, and the bytes before `offset` are read and dropped).
    ///
    /// ```
    /// use b3accel::file::Input;
    /// let path = std::env::temp_dir().join(format!("b3accel-doc-range-{}", std::process::id()));
    /// std::fs::write(&path, vec![1u8; 5000])?;
    /// assert!(Input::open(&path)?.range(4096, 904).is_ok());
    /// assert!(Input::open(&path)?.range(4096, 905).is_err());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range(self, offset: u64, len: u64) -> Result<Input<'a>> {
        let end = offset.checked_add(len);
        let (base, room) = match (&self.source, self.range) {
            (_, Some((start, within))) => (start, Some(within)),
            (Source::Regular { len: size, .. }, None) => (0, Some(*size)),
            (Source::Stream(_), None) => (0, None),
        };
        match (end, room) {
            (None, _) => Err(Error::InvalidInput(format!(
                "{len} bytes at offset {offset} run past the longest input, 2^64 - 1 bytes"
            ))),
            (Some(end), Some(room)) if end > room => {
                Err(Error::InvalidInput(format!("bytes {offset}..{end} lie past the end of the input ({room} bytes)")))
            }
            _ => Ok(Input { range: Some((base + offset, len)), in_memory: Default::default(), ..self }),
        }
    }

    /// Hashes the whole input (the range, if any) on `backend` in `mode`: its output reader (the
    /// hash is its first 32 bytes) and the number of bytes hashed. Everything the input holds goes
    /// to the device in one call where it lies in memory (a map, a small file read whole).
    ///
    /// ```
    /// use b3accel::file::{FileOptions, Input};
    /// let key = [9u8; 32];
    /// let cpu = b3accel::backend(b3accel::Device::Cpu)?;
    /// let input = Input::from_reader(&[5u8; 70_000][..]);
    /// let (mut r, _) = input.hash_with(cpu, &b3accel::Mode::Keyed(key), &FileOptions::default())?;
    /// let mut mac = [0u8; 32];
    /// r.fill(&mut mac);
    /// assert_eq!(mac, *blake3::keyed_hash(&key, &[5u8; 70_000]).as_bytes());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn hash_with(
        self,
        backend: Arc<dyn Backend>,
        mode: &Mode,
        options: &FileOptions,
    ) -> Result<(OutputReader, u64)> {
        let (output, bytes) = self.root(backend, mode, options)?;
        Ok((OutputReader::new(output), bytes))
    }

    /// The root node and the number of bytes, for [`hash_with`](Self::hash_with).
    fn root(self, backend: Arc<dyn Backend>, mode: &Mode, options: &FileOptions) -> Result<(Output, u64)> {
        let mut hasher = Hasher::with_backend(backend, mode);
        let output = self.feed(&mut hasher, options, |h, last| h.finish_with(last))?;
        Ok((output, hasher.count()))
    }

    /// Adds the whole input (the range, if any) to `hasher`, as [`Hasher::update`] does (more
    /// input may follow), and returns the number of bytes added. The hasher's own progress
    /// callback is not called: `options.progress` is.
    ///
    /// ```
    /// use b3accel::file::{FileOptions, Input};
    /// use b3accel::hazmat::HasherExt;
    /// let data = vec![3u8; 10_000];
    /// // Bytes 8192..10000 of the input, as a subtree.
    /// let mut h = b3accel::Hasher::new();
    /// h.set_input_offset(8192)?;
    /// Input::from_reader(&data[..]).range(8192, 1808)?.update(&mut h, &FileOptions::default())?;
    /// let mut upstream = blake3::Hasher::new();
    /// blake3::hazmat::HasherExt::set_input_offset(&mut upstream, 8192);
    /// upstream.update(&data[8192..]);
    /// assert_eq!(h.finalize_non_root()?, blake3::hazmat::HasherExt::finalize_non_root(&upstream));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn update(self, hasher: &mut Hasher, options: &FileOptions) -> Result<u64> {
        let before = hasher.count();
        // A regular file that fails part-way (it changed, a read failed) adds nothing: the
        // hasher goes back to what it was. A stream cannot be read again, so what it gave stays.
        let saved = matches!(self.source, Source::Regular { .. }).then(|| hasher.clone());
        if let Err(e) = self.feed(hasher, options, |h, last| h.feed(last, false)) {
            if let Some(saved) = saved {
                *hasher = saved;
            }
            return Err(e);
        }
        Ok(hasher.count() - before)
    }

    /// Runs `f` over all of the input's bytes (the range, if any) in memory: a regular file
    /// mapped (its pages brought in and out in parallel, on Linux) where it can be, else read.
    ///
    /// ```
    /// let input = b3accel::file::Input::from_reader(&b"some bytes"[..]);
    /// assert_eq!(input.with_bytes(|bytes| bytes.len())?, 10);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn with_bytes<R: Send>(self, f: impl FnOnce(&[u8]) -> R + Send) -> Result<R> {
        match self.content(ReadMode::Auto)? {
            Content::Mapped { map, file, opened } => from_map(&map, &file, &opened, f),
            Content::Small { file, start, len, exact, from_disk } => {
                read_whole(file, start, len, exact, from_disk, |bytes| Ok(f(bytes)))
            }
            Content::Blocks { file, start, len, opened, from_disk } => {
                let mut bytes = Vec::new();
                let want = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
                bytes.try_reserve_exact(want).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
                from_the_front(&file, start, len, &opened, from_disk, |block, _| {
                    bytes.extend_from_slice(block);
                    Ok(())
                })?;
                Ok(f(&bytes))
            }
            Content::Stream(reader, limit) => {
                let mut bytes = Vec::new();
                reader.take(limit.unwrap_or(u64::MAX)).read_to_end(&mut bytes)?;
                if let Some(limit) = limit {
                    check_ended(bytes.len() as u64, limit)?;
                }
                Ok(f(&bytes))
            }
        }
    }

    /// Where the input's bytes are to be had: mapped (as `read` says, where that works), read
    /// whole, read from the front, or streamed.
    fn content(self, read: ReadMode) -> Result<Content<'a>> {
        let asked = self.in_memory.get();
        match self.source {
            Source::Regular { file, len, opened } => {
                let (start, len, exact) = match self.range {
                    Some((start, len)) => (start, len, true),
                    None => (0, len, false),
                };
                // Whether the file's pages are in memory matters from the size on at which a
                // map pays; smaller files are one read either way.
                let cached =
                    len < MMAP_MIN || read == ReadMode::Map || asked.unwrap_or_else(|| in_memory(&file, start, len));
                let map_min = if read == ReadMode::Map { MMAP_MIN } else { AUTO_MAP_MIN };
                if len >= map_min && cached && read != ReadMode::Stream {
                    if let Some(map) = map(&file, start, len, exact) {
                        return Ok(Content::Mapped { map, file, opened });
                    }
                }
                if len <= READ_WHOLE_MAX {
                    return Ok(Content::Small { file, start, len, exact, from_disk: !cached });
                }
                Ok(Content::Blocks { file, start, len, opened, from_disk: !cached })
            }
            Source::Stream(mut reader) => {
                let Some((start, len)) = self.range else {
                    return Ok(Content::Stream(reader, None));
                };
                let skipped = io::copy(&mut reader.by_ref().take(start), &mut io::sink())?;
                if skipped < start {
                    return Err(Error::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the input ended after {skipped} bytes, before offset {start}"),
                    )));
                }
                Ok(Content::Stream(reader, Some(len)))
            }
        }
    }

    /// Feeds the input to `hasher`: everything but its last piece as input that more follows,
    /// the last piece through `last` (which adds it as the end, or finishes the root from it).
    fn feed<T: Send>(
        self,
        hasher: &mut Hasher,
        options: &FileOptions,
        last: impl FnOnce(&mut Hasher, &[u8]) -> Result<T> + Send,
    ) -> Result<T> {
        let progress = options.progress;
        match self.content(options.read)? {
            Content::Mapped { map, file, opened } => {
                from_map(&map, &file, &opened, |bytes| in_pieces(hasher, bytes, progress, last))?
            }
            Content::Small { file, start, len, exact, from_disk } => {
                read_whole(file, start, len, exact, from_disk, |bytes| in_pieces(hasher, bytes, progress, last))
            }
            Content::Blocks { file, start, len, opened, from_disk } => {
                let mut last = Some(last);
                let mut out = None;
                from_the_front(&file, start, len, &opened, from_disk, |block, is_last| {
                    if !is_last {
                        hasher.feed(block, true)?;
                    } else if let Some(last) = last.take() {
                        out = Some(last(hasher, block)?);
                    }
                    tell(progress, block.len());
                    Ok(())
                })?;
                out.ok_or_else(|| Error::InvalidInput("the file had no last block".into()))
            }
            Content::Stream(reader, limit) => stream(hasher, reader, limit, progress, last),
        }
    }
}

impl Hasher {
    /// Adds the contents of the file at `path`, memory-mapped where that pays (1 MiB and more)
    /// and works, else read in large buffers (see the [`file`](mod@crate::file) module). On Linux the
    /// map's pages are populated by the rayon pool's idle threads while the hash runs and torn
    /// down in parallel after it. A directory or an unreadable file is an error, with nothing
    /// added. The progress callback ([`on_progress`](Self::on_progress)) is told every 32 MiB.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("b3accel-doc-update-mmap-{}", std::process::id()));
    /// std::fs::write(&path, vec![1u8; 50_000])?;
    /// let mut h = b3accel::Hasher::new_on(b3accel::Device::Cpu)?;
    /// h.update(b"prefix")?.update_mmap(&path)?;
    /// assert_eq!(h.finalize()?, blake3::hash(&[&b"prefix"[..], &[1u8; 50_000]].concat()));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update_mmap(&mut self, path: impl AsRef<Path>) -> Result<&mut Self> {
        let progress = self.progress();
        let options =
            FileOptions { read: ReadMode::Auto, progress: progress.as_deref().map(|p| p as &(dyn Fn(u64) + Sync)) };
        Input::open(path)?.update(self, &options)?;
        Ok(self)
    }

    /// Adds everything `reader` gives until its end, read in large buffers (at least 4 MiB, two in
    /// turn, so that each read goes to the device whole once the next shows that more follows).
    /// A read error is returned as [`Error::Io`]; what was read before it stays added. The
    /// progress callback ([`on_progress`](Self::on_progress)) is told after every buffer.
    ///
    /// ```
    /// let mut h = b3accel::Hasher::new();
    /// h.update_reader(std::io::repeat(7).take(100_000))?;
    /// # use std::io::Read;
    /// assert_eq!(h.finalize()?, blake3::hash(&[7u8; 100_000]));
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn update_reader(&mut self, reader: impl Read) -> Result<&mut Self> {
        let progress = self.progress();
        let progress = progress.as_deref().map(|p| p as &(dyn Fn(u64) + Sync));
        stream(self, reader, None, progress, |h, last| h.feed(last, false))?;
        Ok(self)
    }
}

/// The error a directory gives where a file is wanted: the system's own, where there is one.
fn is_a_directory() -> io::Error {
    #[cfg(unix)]
    {
        io::Error::from_raw_os_error(libc::EISDIR)
    }
    #[cfg(not(unix))]
    {
        io::Error::new(io::ErrorKind::IsADirectory, "Is a directory")
    }
}

/// A map of `len` bytes of `file` from `start` (with `exact`; else of the whole file as it is
/// now), or `None` where mapping fails (the caller reads instead).
fn map(file: &File, start: u64, len: u64, exact: bool) -> Option<Mmap> {
    let mut options = MmapOptions::new();
    if exact {
        options.offset(start).len(usize::try_from(len).ok()?);
    }
    // SAFETY: the map is only read, and only as bytes to hash. A file truncated by another
    // process while it is read raises SIGBUS, which `truncated::guard` turns into an error.
    unsafe { options.map(file) }.ok()
}

/// Whether (nearly) all of bytes `start..start + len` of `file` are in the page cache; where the
/// system cannot tell, as before there was a choice: yes.
fn in_memory(file: &File, start: u64, len: u64) -> bool {
    cached_fraction(file, start, len).is_none_or(|f| f >= IN_MEMORY)
}

/// What a file's contents were, as far as a reader can cheaply see: compared before and after
/// reading it from the front.
#[derive(PartialEq, Eq)]
struct Identity {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Identity {
    fn of_meta(meta: &std::fs::Metadata) -> Identity {
        Identity {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            changed: {
                use std::os::unix::fs::MetadataExt;
                (meta.ctime(), meta.ctime_nsec())
            },
        }
    }
}

/// Reads bytes `start..start + len` of `file` from the front, as the device it lives on wants
/// (see the `blocks` module; around the page cache if `from_disk`), calling `each(block, last)`
/// on each block in order; then checks that the file is still as it was when `opened`.
fn from_the_front(
    file: &File,
    start: u64,
    len: u64,
    opened: &Identity,
    from_disk: bool,
    each: impl FnMut(&[u8], bool) -> Result<()>,
) -> Result<()> {
    let disk = Disk::of(file);
    advise_sequential(file, start, len);
    read_in_order(file, start, len, disk.plan, &disk.permits, from_disk, each)?;
    unchanged(file, opened)
}

/// Runs `f` over the bytes of `map`, a map of `file`, which must still be as it was when
/// `opened` once `f` is done: a map whose file was truncated reads zeros where the bytes were
/// (or, past its last page, raises SIGBUS, which the guard turns into an error).
fn from_map<T: Send>(map: &Mmap, file: &File, opened: &Identity, f: impl FnOnce(&[u8]) -> T + Send) -> Result<T> {
    let out = truncated::guard(map, || with_pages(map, f))?;
    unchanged(file, opened)?;
    Ok(out)
}

/// Whether `file` is still as it was when `opened`: an error ([`io::ErrorKind::InvalidData`])
/// saying so if its size, modification time or change time moved while it was read.
fn unchanged(file: &File, opened: &Identity) -> Result<()> {
    if Identity::of_meta(&file.metadata()?) != *opened {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "the file changed while it was being read (its size, modification time or change time is not what it was)",
        )));
    }
    Ok(())
}

/// Tells the progress callback, if any, of `n` more bytes.
fn tell(progress: Option<&(dyn Fn(u64) + Sync)>, n: usize) {
    if let Some(progress) = progress {
        progress(n as u64);
    }
}

/// Feeds `bytes` to `hasher`, the last piece through `last`: in one piece, or, with a progress
/// callback, in pieces of [`PROGRESS_PIECE`] bytes with the callback told after each.
fn in_pieces<T>(
    hasher: &mut Hasher,
    bytes: &[u8],
    progress: Option<&(dyn Fn(u64) + Sync)>,
    last: impl FnOnce(&mut Hasher, &[u8]) -> Result<T>,
) -> Result<T> {
    let split = match progress {
        Some(_) => bytes.len().saturating_sub(1) / PROGRESS_PIECE * PROGRESS_PIECE,
        None => 0,
    };
    for piece in bytes[..split].chunks(PROGRESS_PIECE) {
        hasher.feed(piece, true)?;
        tell(progress, piece.len());
    }
    let out = last(hasher, &bytes[split..])?;
    tell(progress, bytes.len() - split);
    Ok(out)
}

thread_local! {
    /// Each thread's buffer for small files read whole (kept between files, up to
    /// [`READ_WHOLE_MAX`] bytes).
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads `len` bytes of `file` from `start` into this thread's buffer (with `exact`: exactly
/// those, an early end being an error; else up to the end of the file, however long it is by
/// now) and runs `f` over them. With `from_disk`, the read holds one of its device's permits.
fn read_whole<T>(
    mut file: File,
    start: u64,
    len: u64,
    exact: bool,
    from_disk: bool,
    f: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    // The buffer is taken out while in use: a nested call on this thread (rayon may run another
    // task here while the hash waits) finds none and makes its own.
    let mut buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    if start > 0 {
        file.seek(SeekFrom::Start(start))?;
    }
    let disk = from_disk.then(|| Disk::of(&file));
    let permit = disk.as_ref().map(|disk| disk.permits.take());
    // Without `exact`, room for one byte more than the size, so that a single short read shows
    // the end: read, read (0), as b3sum does, with no size probing.
    let want = len as usize + usize::from(!exact);
    buf.clear();
    buf.resize(want, 0);
    let filled = read_full(&mut file, &mut buf)?;
    drop(permit);
    buf.truncate(filled);
    if exact {
        check_ended(filled as u64, len)?;
    } else if filled == want {
        // The file grew since it was opened: take the rest too.
        file.read_to_end(&mut buf)?;
    }
    let out = f(&buf);
    if buf.capacity() <= READ_WHOLE_MAX as usize + 1 {
        BUF.with(|b| *b.borrow_mut() = buf);
    }
    out
}

/// An error if an input ended after `got` of the `want` bytes asked for.
fn check_ended(got: u64, want: u64) -> Result<()> {
    if got < want {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the input ended after {got} of the {want} bytes asked for"),
        )));
    }
    Ok(())
}

/// Reads until `buf` is full or the reader ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Feeds everything `reader` gives (with `limit`: exactly that many bytes, an early end being an
/// error) to `hasher`, the last read through `last`. Two buffers of at least [`READ_MIN`] bytes
/// (a multiple of the hasher's batch) take the reads in turn: a full one goes to the device
/// whole, from where it lies, once the next read shows that more follows.
fn stream<T>(
    hasher: &mut Hasher,
    reader: impl Read,
    limit: Option<u64>,
    progress: Option<&(dyn Fn(u64) + Sync)>,
    last: impl FnOnce(&mut Hasher, &[u8]) -> Result<T>,
) -> Result<T> {
    let mut reader = reader.take(limit.unwrap_or(u64::MAX));
    let size = hasher.batch().max(READ_MIN);
    let mut current = vec![0u8; size];
    let mut next = Vec::new();
    let mut n = read_full(&mut reader, &mut current)?;
    let mut total = n as u64;
    while n == size {
        if next.is_empty() {
            next = vec![0u8; size];
        }
        let m = read_full(&mut reader, &mut next)?;
        if m == 0 {
            break;
        }
        hasher.feed(&current, true)?;
        tell(progress, size);
        std::mem::swap(&mut current, &mut next);
        n = m;
        total += m as u64;
    }
    if let Some(limit) = limit {
        check_ended(total, limit)?;
    }
    let out = last(hasher, &current[..n])?;
    tell(progress, n);
    Ok(out)
}
