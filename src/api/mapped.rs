//! Mapped files: their pages mapped in alongside the hash, and unmapped in parallel after it. The
//! `file` module maps files and hashes them through [`with_pages`].
//!
//! Hashing a file in the page cache through a map costs the kernel two things besides the hash:
//! mapping the pages in (some 16,000 page faults per GiB when the hash touches them first) and
//! tearing the page tables down again (at `munmap`, or at the process's exit). Both are per-page
//! work that several threads can do at once, but that one thread does when left alone: tearing
//! down a map takes one core about as long as a many-core machine takes to hash the file
//! (docs/performance.md). So, on Linux, with more than one thread in the current rayon pool:
//! - pages are populated (`MADV_POPULATE_READ`, Linux 5.14 and later) in pieces by the pool's
//!   idle threads while the hash runs, the hash starting at once at the front of the file;
//! - after the hash, the pool's threads drop the pieces' page-table entries (`MADV_DONTNEED`)
//!   side by side, so that the `munmap` that follows has nothing left to do.
//!
//! With a pool of one thread (the CLI's `--num-threads 1`) a second thread populates ahead of the
//! hash, which goes through the file in order; the map is torn down as usual.
//!
//! Where the advice is not there (other systems, old kernels) or fails, nothing changes: pages are
//! faulted in by the hash and torn down by `munmap`.
//!
//! This makes the whole process on a large page-cached file faster than b3sum's
//! (docs/performance.md).

use memmap2::Mmap;

/// The smallest piece: one page table's worth (2 MiB), so that two threads never share one page
/// table's lock.
#[cfg(target_os = "linux")]
const PIECE_MIN: usize = 2 << 20;

/// The largest piece.
#[cfg(target_os = "linux")]
const PIECE_MAX: usize = 64 << 20;

/// Runs `work` over the whole map, with the map's pages populated alongside it and unmapped in
/// parallel after it (see the module's documentation).
pub(crate) fn with_pages<T: Send>(map: &Mmap, work: impl FnOnce(&[u8]) -> T + Send) -> T {
    #[cfg(target_os = "linux")]
    {
        let threads = rayon::current_num_threads();
        let piece = piece_len(map.len(), threads);
        let pieces = || (0..map.len()).step_by(piece).map(move |start| (start, piece.min(map.len() - start)));
        let populate = |(start, len): (usize, usize)| {
            let _ = map.advise_range(memmap2::Advice::PopulateRead, start, len);
        };
        if threads == 1 {
            return std::thread::scope(|s| {
                s.spawn(|| pieces().for_each(populate));
                work(map)
            });
        }
        // `work` starts on this thread at the front of the file. Idle threads take the populate
        // tasks, oldest (front) first, until the hash's own work reaches them.
        let out = rayon::scope(|s| {
            for range in pieces() {
                s.spawn(move |_| populate(range));
            }
            work(map)
        });
        if map.len() > piece {
            use rayon::prelude::*;
            (0..map.len()).into_par_iter().step_by(piece).for_each(|start| {
                let len = piece.min(map.len() - start);
                // SAFETY: the map is a read-only map of a file. Dropping its page-table entries
                // loses nothing: the pages stay in the page cache, and a later read of the range
                // would map them in again. The map is dropped straight after.
                let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
            });
        }
        out
    }
    #[cfg(not(target_os = "linux"))]
    work(map)
}

/// Pieces of about half of a thread's share of the file, whole page tables, 2-64 MiB.
#[cfg(target_os = "linux")]
fn piece_len(len: usize, threads: usize) -> usize {
    (len / (2 * threads)).clamp(PIECE_MIN, PIECE_MAX).next_multiple_of(PIECE_MIN)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_whole_page_tables_within_bounds() {
        for (len, threads, want) in [
            (0, 16, PIECE_MIN),
            (1 << 20, 2, PIECE_MIN),
            (64 << 20, 16, PIECE_MIN),
            (256 << 20, 16, 8 << 20),
            (1 << 30, 16, 32 << 20),
            (1 << 30, 2, PIECE_MAX),
            ((100 << 20) + 1, 4, 14 << 20),
        ] {
            assert_eq!(piece_len(len, threads), want, "len {len}, {threads} threads");
        }
    }

    #[test]
    fn work_sees_the_whole_map_on_any_pool() {
        let mut file = unlinked_temp_file();
        let data: Vec<u8> = (0..(5 << 20) + 123).map(|i: u32| (i * 31 + (i >> 11)) as u8).collect();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let map = unsafe { Mmap::map(&file) }.unwrap();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let sum = pool.install(|| with_pages(&map, |b| b.iter().map(|&x| x as u64).sum::<u64>()));
            assert_eq!(sum, data.iter().map(|&x| x as u64).sum::<u64>(), "{threads} threads");
            // After the parallel teardown the map still reads the file (pages are mapped back in).
            assert_eq!(&map[..], &data[..]);
        }
    }

    fn unlinked_temp_file() -> std::fs::File {
        let path = std::env::temp_dir().join(format!("b3accel-mapped-{}", std::process::id()));
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
