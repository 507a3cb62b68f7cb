//! Where a file's bytes come from, and how to read them: from memory (its pages are in the page
//! cache) or from a disk, and what kind of disk. The `file` module asks this before it reads.
//!
//! - [`cached_fraction`]: how much of a byte range is in the page cache (Linux's `cachestat`, or
//!   `mincore` on a map where the kernel predates it). A file in memory is mapped and hashed on
//!   every core; one that is not is read from the front (`blocks`), since many threads faulting
//!   a cold map at scattered offsets make a disk seek for every fault.
//! - [`Storage::of`]: the kind of storage a file lives on (sysfs `queue/rotational` of its disk,
//!   through partitions, device-mapper and md to the disks below; the file system's type for
//!   network, FUSE and memory file systems), and [`Storage::plan`], how deep to read it: a
//!   spinning disk or a network file system wants its reads in order, few at a time; an SSD
//!   keeps more of them busy.
//! - [`Permits`]: the reads in flight on one device, shared by every file read in this process,
//!   so that many files hashed in parallel never make more reads at once than the device wants.

use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// The share of a range's pages that must be in memory for a file to count as in memory. Faulting
/// in the few pages left is cheaper than reading the whole range again (docs/performance.md).
pub(crate) const IN_MEMORY: f64 = 31.0 / 32.0;

/// Blocks read from the front are this large: whole subtrees (8192 chunks) of the file, large
/// enough that a disk reads each one at its full speed.
pub(crate) const BLOCK: usize = 8 << 20;

/// What a file is stored on, as far as reading it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A spinning disk (or a device that says it is one): every seek costs milliseconds.
    Rotational,
    /// An SSD or NVMe drive: no seek to pay, deep queues.
    Solid,
    /// A virtual machine's disk (virtio, Xen): its rotational flag is the hypervisor's default, not
    /// the medium's, and the volume behind it serves many reads at once, as an SSD does.
    Virtual,
    /// A network or FUSE file system: each request pays a round trip; reads in order.
    Network,
    /// A memory file system (tmpfs, ramfs): every page is in memory.
    Memory,
    /// Nothing said which: a middle course.
    Unknown,
}

/// How a file that is not in memory is read: blocks of `block` bytes from the front, with at most
/// `depth` reads in flight on its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    /// Bytes per read.
    pub block: usize,
    /// Reads in flight at once on the device.
    pub depth: usize,
}

impl Storage {
    /// The kind of storage `file` is on; [`Storage::Unknown`] where nothing tells (other systems,
    /// file systems whose device sysfs does not know, such as btrfs's anonymous devices).
    ///
    /// ```
    /// let file = std::fs::File::open(std::env::current_exe()?)?;
    /// let storage = b3accel::file::Storage::of(&file);
    /// assert!(storage.plan().depth >= 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn of(file: &File) -> Storage {
        #[cfg(target_os = "linux")]
        {
            linux::storage_of(file)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = file;
            Storage::Unknown
        }
    }

    /// How to read a file on this storage: blocks of [`BLOCK`] bytes, two reads in flight on a
    /// spinning disk or a network file system (one being read while the next is asked for, in
    /// order), eight on an SSD or a virtual machine's disk, four where the kind is unknown.
    ///
    /// ```
    /// use b3accel::file::Storage;
    /// assert_eq!(Storage::Rotational.plan().depth, 2);
    /// assert!(Storage::Solid.plan().depth > Storage::Rotational.plan().depth);
    /// ```
    pub fn plan(self) -> ReadPlan {
        let depth = match self {
            Storage::Rotational | Storage::Network => 2,
            Storage::Solid | Storage::Virtual => 8,
            Storage::Memory | Storage::Unknown => 4,
        };
        ReadPlan { block: BLOCK, depth }
    }
}

/// The share (0 to 1) of bytes `start..start + len` of `file` whose pages are in the page cache,
/// or `None` where the system cannot tell (then the file is taken as not in memory only if
/// the caller has another reason to think so).
pub(crate) fn cached_fraction(file: &File, start: u64, len: u64) -> Option<f64> {
    if len == 0 {
        return Some(1.0);
    }
    #[cfg(target_os = "linux")]
    {
        linux::cached_pages(file, start, len).map(|(cached, total)| cached as f64 / total.max(1) as f64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, start);
        None
    }
}

/// The device a file lives on, as this process reads it: the plan for reading it, and the
/// permits that bound the reads in flight on it.
pub(crate) struct Disk {
    pub(crate) plan: ReadPlan,
    pub(crate) permits: Permits,
}

impl Disk {
    /// The device `file` lives on, looked up at its first file and kept for the process.
    pub(crate) fn of(file: &File) -> Arc<Disk> {
        static DISKS: OnceLock<Mutex<HashMap<u64, Arc<Disk>>>> = OnceLock::new();
        let id = device_id(file);
        let mut disks = DISKS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        disks
            .entry(id)
            .or_insert_with(|| {
                let plan = Storage::of(file).plan();
                Arc::new(Disk { plan, permits: Permits::new(plan.depth) })
            })
            .clone()
    }
}

/// Reads in flight on one device: a counting semaphore shared by every read of this process.
pub(crate) struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

/// One read's permit, given back when dropped.
pub(crate) struct Permit<'a>(&'a Permits);

impl Permits {
    pub(crate) fn new(count: usize) -> Permits {
        Permits { free: Mutex::new(count), freed: Condvar::new() }
    }

    /// Waits for a permit.
    pub(crate) fn take(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// The device a file lives on (`st_dev`), or 0 where the system does not say.
fn device_id(file: &File) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().map(|m| m.dev()).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        0
    }
}

/// Asks the kernel to read `file` ahead in order (the readahead window doubled), where it can.
pub(crate) fn advise_sequential(file: &File, start: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(start), Ok(len)) = (i64::try_from(start), i64::try_from(len)) else { return };
        // SAFETY: advice on an open file descriptor; no memory is passed.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), start, len, libc::POSIX_FADV_SEQUENTIAL) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, start, len);
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Storage;
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    /// File system magic numbers (`statfs.f_type`) of network and FUSE file systems.
    const NETWORK: [u32; 10] = [
        0x6969,      // NFS
        0x517B,      // SMB
        0xFF53_4D42, // CIFS
        0xFE53_4D42, // SMB2
        0x6573_5546, // FUSE
        0x00C3_6400, // Ceph
        0x5346_414F, // AFS
        0x0102_1997, // 9p
        0x0BD0_0BD0, // Lustre
        0x0116_1970, // GFS2
    ];
    /// Memory file systems: tmpfs, ramfs.
    const MEMORY: [u32; 2] = [0x0102_1994, 0x8584_58F6];

    pub(super) fn storage_of(file: &File) -> Storage {
        // SAFETY: statfs is plain data that fstatfs fills in.
        let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: an open descriptor and a pointer to a statfs of the right type.
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } == 0 {
            let kind = fs.f_type as u32;
            if NETWORK.contains(&kind) {
                return Storage::Network;
            }
            if MEMORY.contains(&kind) {
                return Storage::Memory;
            }
        }
        block_node(file).and_then(|node| medium(&node, 0)).unwrap_or(Storage::Unknown)
    }

    /// The sysfs node of the block device `file` lives on (`/sys/dev/block/MAJ:MIN`, resolved).
    fn block_node(file: &File) -> Option<PathBuf> {
        let dev = file.metadata().ok()?.dev();
        std::fs::canonicalize(format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev))).ok()
    }

    /// The disk of the block device at sysfs `node`: a partition's parent, else the node itself.
    fn disk_of(node: &Path) -> Option<&Path> {
        if node.join("partition").exists() {
            node.parent()
        } else {
            Some(node)
        }
    }

    /// Disk drivers of virtual machines, whose `queue/rotational` says nothing of the medium
    /// (virtio's reads 1 unless the hypervisor is told otherwise).
    const VIRTUAL_DRIVERS: [&str; 2] = ["virtio_blk", "vbd"];

    /// What the block device at sysfs `node` is stored on: a partition asks its disk, a
    /// device-mapper or md device the devices below it (spinning if any of them does, else
    /// virtual if any is); a disk its driver, then `queue/rotational`.
    pub(super) fn medium(node: &Path, depth: u32) -> Option<Storage> {
        if depth > 8 {
            return None;
        }
        let disk = disk_of(node)?;
        let below: Vec<PathBuf> = std::fs::read_dir(disk.join("slaves"))
            .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        if !below.is_empty() {
            let kinds: Vec<Storage> = below
                .iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .filter_map(|p| medium(&p, depth + 1))
                .collect();
            return [Storage::Rotational, Storage::Virtual, Storage::Solid].into_iter().find(|k| kinds.contains(k));
        }
        let driver = std::fs::read_link(disk.join("device/driver")).ok();
        if driver.is_some_and(|d| d.file_name().is_some_and(|n| VIRTUAL_DRIVERS.iter().any(|v| n == *v))) {
            return Some(Storage::Virtual);
        }
        match std::fs::read_to_string(disk.join("queue/rotational")).ok()?.trim() {
            "1" => Some(Storage::Rotational),
            "0" => Some(Storage::Solid),
            _ => None,
        }
    }

    /// `cachestat(2)`'s system call number (the same on every architecture; Linux 6.5 and later).
    const SYS_CACHESTAT: libc::c_long = 451;

    #[repr(C)]
    struct CachestatRange {
        off: u64,
        len: u64,
    }

    #[repr(C)]
    #[derive(Default)]
    struct Cachestat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }

    /// Pages of bytes `start..start + len` of `file` in the page cache, and pages in all.
    pub(super) fn cached_pages(file: &File, start: u64, len: u64) -> Option<(u64, u64)> {
        // SAFETY: sysconf has no preconditions.
        let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|&p| p > 0)?;
        let first = start / page;
        let total = (start + len).div_ceil(page) - first;
        let range = CachestatRange { off: first * page, len: total * page };
        let mut stat = Cachestat::default();
        // SAFETY: an open descriptor, a range and a result struct of the layout the kernel
        // expects, flags 0.
        let rc = unsafe {
            libc::syscall(SYS_CACHESTAT, file.as_raw_fd() as libc::c_uint, &range, &mut stat, 0 as libc::c_uint)
        };
        if rc == 0 {
            return Some((stat.nr_cache.min(total), total));
        }
        mincore_pages(file, first * page, total, page)
    }

    /// [`cached_pages`] through `mincore` on a map of the range, a window at a time.
    pub(super) fn mincore_pages(file: &File, start: u64, pages: u64, page: u64) -> Option<(u64, u64)> {
        const WINDOW: u64 = 1 << 18; // pages per map: 1 GiB of 4 KiB pages, a 256 KiB vector
        let mut cached = 0;
        let mut vec = Vec::new();
        let mut done = 0;
        while done < pages {
            let n = WINDOW.min(pages - done);
            let offset = start + done * page;
            // SAFETY: the map is never read from here; mincore only asks which of its pages are
            // resident.
            let map =
                unsafe { memmap2::MmapOptions::new().offset(offset).len(usize::try_from(n * page).ok()?).map(file) }
                    .ok()?;
            vec.resize(n as usize, 0u8);
            // SAFETY: the map is `n` pages long and `vec` holds one byte per page.
            let rc = unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, map.len(), vec.as_mut_ptr()) };
            if rc != 0 {
                return None;
            }
            cached += vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
            done += n;
        }
        Some((cached, pages))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_disks_and_network_read_in_order_solid_state_deeper() {
        assert_eq!(Storage::Rotational.plan(), ReadPlan { block: BLOCK, depth: 2 });
        assert_eq!(Storage::Network.plan(), ReadPlan { block: BLOCK, depth: 2 });
        assert_eq!(Storage::Solid.plan(), ReadPlan { block: BLOCK, depth: 8 });
        assert_eq!(Storage::Virtual.plan(), ReadPlan { block: BLOCK, depth: 8 });
        assert_eq!(Storage::Unknown.plan().depth, 4);
        // Blocks are whole subtrees of the file.
        assert!(BLOCK.is_power_of_two() && BLOCK >= crate::core::constants::CHUNK_LEN);
    }

    #[test]
    fn permits_bound_the_reads_in_flight() {
        let permits = Arc::new(Permits::new(2));
        let in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..6 {
                let (permits, in_flight, most) = (permits.clone(), in_flight.clone(), most.clone());
                s.spawn(move || {
                    for _ in 0..20 {
                        let _permit = permits.take();
                        let now = in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                        std::thread::yield_now();
                        in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        let most = most.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} reads in flight");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_just_written_is_in_memory_and_its_storage_is_known_or_unknown() {
        let path = std::env::temp_dir().join(format!("b3accel-storage-{}", std::process::id()));
        std::fs::write(&path, vec![5u8; 1 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        // Written through the page cache: every page is there (nothing evicts 1 MiB this soon).
        assert_eq!(cached_fraction(&file, 0, 1 << 20), Some(1.0));
        assert_eq!(cached_fraction(&file, 12345, 0), Some(1.0));
        // Whatever the test machine's disk is, asking never fails.
        let _ = Storage::of(&file);
        std::fs::remove_file(&path).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn pages_dropped_from_the_cache_are_counted_out() {
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("b3accel-storage-cold-{}", std::process::id()));
        std::fs::write(&path, vec![6u8; 4 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: advice on an open descriptor.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let fraction = cached_fraction(&file, 0, 4 << 20).unwrap();
        // tmpfs keeps its pages whatever the advice; a disk-backed file drops them.
        if Storage::of(&file) != Storage::Memory {
            assert!(fraction < IN_MEMORY, "{fraction} of the pages still cached");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn mincore_agrees_with_cachestat() {
        let path = std::env::temp_dir().join(format!("b3accel-storage-mincore-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 3 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(linux::cached_pages(&file, 0, 3 << 20), Some((768, 768)));
        assert_eq!(linux::mincore_pages(&file, 0, 768, 4096), Some((768, 768)));
        std::fs::remove_file(&path).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn partitions_and_mapped_devices_ask_the_disks_below_them() {
        let root = std::env::temp_dir().join(format!("b3accel-sysfs-{}", std::process::id()));
        let node = |name: &str, rotational: Option<&str>| {
            let dir = root.join(name);
            std::fs::create_dir_all(dir.join("queue")).unwrap();
            if let Some(r) = rotational {
                std::fs::write(dir.join("queue/rotational"), format!("{r}\n")).unwrap();
            }
            dir
        };
        let spinning = node("sda", Some("1"));
        let solid = node("nvme0n1", Some("0"));
        // A virtio disk says it spins; its driver says it is virtual.
        let virtio = node("vda", Some("1"));
        std::fs::create_dir_all(root.join("drivers/virtio_blk")).unwrap();
        std::fs::create_dir_all(virtio.join("device")).unwrap();
        std::os::unix::fs::symlink(root.join("drivers/virtio_blk"), virtio.join("device/driver")).unwrap();
        let lvm = node("dm-1", None);
        std::fs::create_dir_all(lvm.join("slaves")).unwrap();
        std::os::unix::fs::symlink(&virtio, lvm.join("slaves/vda")).unwrap();
        std::os::unix::fs::symlink(&solid, lvm.join("slaves/nvme0n1")).unwrap();
        let part = spinning.join("sda1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        let mirror = node("md0", None);
        std::fs::create_dir_all(mirror.join("slaves")).unwrap();
        std::os::unix::fs::symlink(&solid, mirror.join("slaves/nvme0n1")).unwrap();
        let mapped = node("dm-0", None);
        std::fs::create_dir_all(mapped.join("slaves")).unwrap();
        std::os::unix::fs::symlink(&mirror, mapped.join("slaves/md0")).unwrap();
        std::os::unix::fs::symlink(&part, mapped.join("slaves/sda1")).unwrap();
        assert_eq!(linux::medium(&spinning, 0), Some(Storage::Rotational));
        assert_eq!(linux::medium(&part, 0), Some(Storage::Rotational), "a partition is its disk");
        assert_eq!(linux::medium(&mirror, 0), Some(Storage::Solid), "md over an SSD");
        assert_eq!(linux::medium(&mapped, 0), Some(Storage::Rotational), "spinning if any device below spins");
        assert_eq!(linux::medium(&virtio, 0), Some(Storage::Virtual));
        assert_eq!(linux::medium(&lvm, 0), Some(Storage::Virtual), "virtual over solid: virtual");
        assert_eq!(linux::medium(&root.join("missing"), 0), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
