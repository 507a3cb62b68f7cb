//! Every device at once: one input cut into subtree-aligned pieces that the CPU and each GPU pull
//! from one shared queue, their chaining values merged in order by the tree's rules.
//!
//! Each device works through pieces one at a time (a GPU streams each piece through its own
//! pipeline), so faster devices simply take more of them. Pieces are large while much is left
//! (a GPU's pipeline needs tens of MiB to fill) and shrink towards the end, so that the devices
//! finish together: a call cannot return while any device still reads the caller's memory, so a
//! slow device is kept from holding the end back by never giving it a large piece late. A device
//! whose call fails drops out; its piece goes back to the queue for the others (the call fails
//! only when every device has failed).
//!
//! GPUs open in the background at the first call that spreads (or at [`Spread::warm_up`]); those
//! still opening when a call starts join it as soon as they are ready, and the CPU starts at once.
//!
//! A GPU hashing host memory copies it into staging buffers it can read, and on the GPU machine
//! that copy costs a core about as much per byte as hashing it does. So when the list has the CPU,
//! each GPU copies on a small pool of its own ([`copy_threads`] threads) instead of the CPU
//! backend's: with the shared pool, `cpu+opencl:1+wgpu:0` hashed 1 GiB at 35.6 GB/s on the H200
//! against 51.6 for the CPU alone, the CPU's own share falling to a third of its speed. An OpenCL
//! GPU on such a small pool wraps the caller's memory in place instead of copying it (see
//! `OpenClOptions::host_ptr_uploads`): its driver's copy is slower than sixteen threads' but
//! takes no core from the CPU's share (1 GiB: 0.92-0.97x the CPU alone, against 0.68-0.85x
//! staged; 4 GiB: 1.05-1.15x against 0.85-0.87x).

use super::auto::{cached_cpu_rate, cached_gpus};
use super::registry::{backend, one_per_gpu, opening, ready, start_opening};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{
    check_subtree_args, merge_segments, Backend, BackendKind, Device, DeviceInfo, DeviceKind, Domain, Error, Result,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// By default, inputs smaller than this go to the first device alone: below it, starting the
/// other devices' pipelines costs more than they add ([`Spread::with_min_bytes`] changes it).
pub const SPREAD_MIN_BYTES: u64 = 64 << 20;
/// About how long a GPU takes to open (driver, context, kernels from the cache): a call that the
/// list's first device is expected to finish sooner starts no GPU. On the GPU machine (NVIDIA
/// H200, warm caches) OpenCL opened in 0.37-0.41 s and Vulkan in 0.31-0.35 s; a one-shot
/// `b3accel --backend all` that started the driver while the CPU hashed took 39-48 ms for a
/// 64 MiB file, 133-205 ms for 1 GiB and 242-363 ms for 5 GiB against 8-9, 33-41 and 127-132
/// ms on the CPU alone, the GPU taking no share (session 12, run 30).
pub(crate) const GPU_OPEN_TIME: Duration = Duration::from_millis(300);
/// The largest piece by default (64 MiB): enough for a GPU's segment pipeline to fill.
pub const BIG_PIECE_BYTES: u64 = 64 << 20;
/// The smallest piece by default (4 MiB): the last pieces' size, so that the devices finish
/// within a few milliseconds of one another.
pub const SMALL_PIECE_BYTES: u64 = 4 << 20;

/// Several devices hashing one input together (see the [module docs](self)).
///
/// It is a [`Backend`]: hash with it through [`xof_reader_with`](crate::xof_reader_with),
/// [`Hasher::with_backend`](crate::Hasher::with_backend) or
/// [`hash_on_devices`](crate::hash_on_devices). Merkle trees and batches of messages go to the
/// first device.
///
/// ```
/// use b3accel::spread::Spread;
/// use b3accel::{xof_reader_with, Device, Mode};
/// let both = Spread::new(&[Device::Cpu, Device::Cpu])?;
/// let data = vec![9u8; 3 << 20];
/// let mut out = [0u8; 32];
/// xof_reader_with(&both, &Mode::Hash, &data)?.fill(&mut out);
/// assert_eq!(out, *blake3::hash(&data).as_bytes());
/// # Ok::<(), b3accel::Error>(())
/// ```
pub struct Spread {
    devices: Vec<Device>,
    /// The first device's backend, opened: what small inputs and everything but chunk subtrees
    /// use.
    first: Arc<dyn Backend>,
    info: DeviceInfo,
    /// Devices that failed in an earlier call: left out of later ones.
    failed: Mutex<Vec<Device>>,
    /// Bytes each device hashed in the last spread call, for `b3accel -v` and the bench.
    last_shares: Mutex<Vec<(Device, u64)>>,
    /// Each device's rate (bytes per second) as measured in earlier calls: where a call starts.
    rates: Mutex<HashMap<Device, f64>>,
    /// Inputs smaller than this go to the first device alone.
    min_bytes: u64,
    /// The largest and the smallest piece, in chunks (powers of two).
    big_chunks: u64,
    small_chunks: u64,
    /// Where the list has the CPU: one small pool per other device, on which that device's
    /// calls run (their copies into staging use it), made on first use.
    copy_pools: OnceLock<Vec<Option<rayon::ThreadPool>>>,
}

impl std::fmt::Debug for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spread").field("devices", &self.devices).finish()
    }
}

impl Spread {
    /// The devices `devices` hashing together, the first one opened now (an error if it does
    /// not open); the others open in the background when the first input large enough to spread
    /// arrives (or at [`Spread::warm_up`]), and join calls once ready. A device named
    /// twice is used once; `Device::Auto` is not allowed in a list.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// assert_eq!(s.devices(), [b3accel::Device::Cpu]);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn new(devices: &[Device]) -> Result<Spread> {
        let mut list: Vec<Device> = Vec::new();
        for &d in devices {
            if d == Device::Auto {
                return Err(Error::InvalidInput("a device list names devices, not auto".into()));
            }
            if !list.contains(&d) {
                list.push(d);
            }
        }
        let Some(&head) = list.first() else {
            return Err(Error::InvalidInput("a device list needs at least one device".into()));
        };
        let first = backend(head)?;
        let mut info = first.info().clone();
        if list.len() > 1 {
            let names: Vec<String> = list.iter().map(|d| d.to_string()).collect();
            info.name = format!("{} ({})", names.join(" + "), info.name);
            info.api = "every device at once".into();
            info.kind = DeviceKind::Other;
        }
        Ok(Spread {
            devices: list,
            first,
            info,
            failed: Mutex::new(Vec::new()),
            last_shares: Mutex::new(Vec::new()),
            rates: Mutex::new(HashMap::new()),
            min_bytes: SPREAD_MIN_BYTES,
            big_chunks: BIG_PIECE_BYTES / CHUNK_LEN as u64,
            small_chunks: SMALL_PIECE_BYTES / CHUNK_LEN as u64,
            copy_pools: OnceLock::new(),
        })
    }

    /// Spreads inputs of at least `bytes` (default [`SPREAD_MIN_BYTES`]); smaller ones go to the
    /// first device alone.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?.with_min_bytes(1 << 20);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn with_min_bytes(mut self, bytes: u64) -> Spread {
        self.min_bytes = bytes;
        self
    }

    /// Cuts inputs into pieces of at most `big` bytes while much is left, down to `small` bytes
    /// at the end (defaults [`BIG_PIECE_BYTES`] and [`SMALL_PIECE_BYTES`]); each is rounded down
    /// to a power of two of chunks, at least one chunk, `small` at most `big`.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?.with_pieces(16 << 20, 1 << 20);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn with_pieces(mut self, big: u64, small: u64) -> Spread {
        let chunks = |b: u64| 1u64 << (b / CHUNK_LEN as u64).max(1).ilog2();
        self.big_chunks = chunks(big);
        self.small_chunks = chunks(small).min(self.big_chunks);
        self
    }

    /// Every hardware device of this machine: the CPU and each GPU that is not a software one
    /// (PoCL, llvmpipe, lavapipe), each physical GPU once ([`hardware_devices`]); listing them
    /// starts no device.
    ///
    /// ```
    /// let all = b3accel::spread::hardware_devices();
    /// assert_eq!(all[0], b3accel::Device::Cpu);
    /// ```
    pub fn all() -> Result<Spread> {
        Spread::new(&hardware_devices())
    }

    /// The devices, in the order given.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// assert_eq!(s.devices().len(), 1);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Starts opening every device of the list that is not open yet, in the background, and
    /// returns at once: a program that knows a large input is coming calls this first, so that
    /// the GPUs are ready by the time it arrives.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// s.warm_up();
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn warm_up(&self) {
        for &d in &self.devices {
            start_opening(d);
        }
    }

    /// How many bytes each device hashed in the last call that spread its input (empty before
    /// any): `b3accel -v` and `b3accel bench` show it.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// assert!(s.last_shares().is_empty());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn last_shares(&self) -> Vec<(Device, u64)> {
        lock(&self.last_shares).clone()
    }

    /// The pool device `d` (not the first) runs its calls on, if it has one of its own (see the
    /// [module docs](self)).
    fn copy_pool(&self, d: Device) -> Option<&rayon::ThreadPool> {
        let pools = self.copy_pools.get_or_init(|| {
            let with_cpu = self.devices.contains(&Device::Cpu);
            self.devices
                .iter()
                .map(|&d| {
                    (with_cpu && d != Device::Cpu)
                        .then(|| rayon::ThreadPoolBuilder::new().num_threads(copy_threads()).build().ok())
                        .flatten()
                })
                .collect()
        });
        let i = self.devices.iter().position(|&x| x == d)?;
        pools[i].as_ref()
    }

    /// The devices a call can use now or once they open: not failed before.
    fn members(&self) -> Vec<Device> {
        let failed = lock(&self.failed);
        self.devices.iter().copied().filter(|d| !failed.contains(d)).collect()
    }

    /// Hashes `input` (full chunks from `first_chunk`, aligned as `chunk_subtrees_capped`
    /// requires) into the subtrees of at most `max_chunks` chunks, spread over the devices.
    fn spread(&self, input: &[u8], first_chunk: u64, max_chunks: u64, domain: Domain, out: &mut [Cv]) -> Result<()> {
        let n = (input.len() / CHUNK_LEN) as u64;
        let members = self.members();
        // The other devices open now (if not open yet), in the background: a list used only for
        // small inputs never starts a GPU (nor waits for one in `settle`), and neither does a call
        // that the first device alone is expected to finish before a GPU could open.
        let known = lock(&self.rates).clone();
        let first_rate = known.get(&members[0]).copied().or_else(|| {
            // Nothing measured by this list yet: the CPU's rate from Auto's calibration cache.
            (members[0] == Device::Cpu).then(|| cached_cpu_rate(input.len() as u64)).flatten()
        });
        let alone = first_rate.map(|r| Duration::from_secs_f64(input.len() as f64 / r.max(1.0)));
        if alone.is_none_or(|t| t >= GPU_OPEN_TIME) {
            for &d in &members[1..] {
                start_opening(d);
            }
        }
        let pieces = plan_pieces(n, max_chunks, members.len(), self.big_chunks, self.small_chunks);
        let queue = Queue::new(&pieces, members.iter().map(|d| known.get(d).copied()).collect());
        let results: Vec<OnceLock<Vec<Cv>>> = (0..pieces.len()).map(|_| OnceLock::new()).collect();
        let errors: Mutex<Vec<(Device, Error)>> = Mutex::new(Vec::new());

        // One device's loop: take a piece, hash it, store its CVs; stop when the queue says so
        // or at this device's first error (its piece goes back to the queue).
        let work = |k: usize, b: &dyn Backend| {
            while let Some(i) = queue.take(k) {
                let p = pieces[i];
                let bytes = &input[p.start as usize * CHUNK_LEN..(p.start + p.chunks) as usize * CHUNK_LEN];
                let mut cvs = vec![[0u8; 32]; p.chunks.count_ones() as usize];
                let t = Instant::now();
                match b.chunk_subtrees(bytes, first_chunk + p.start, &domain.key, domain.flags, &mut cvs) {
                    Ok(()) => {
                        let _ = results[i].set(cvs);
                        queue.done(k, i, t.elapsed());
                    }
                    Err(e) => {
                        queue.fail(k, i);
                        lock(&errors).push((members[k], e));
                        return;
                    }
                }
            }
        };

        std::thread::scope(|s| {
            for (k, &d) in members.iter().enumerate().skip(1) {
                let (work, queue) = (&work, &queue);
                s.spawn(move || {
                    // A device still opening joins once it is ready, if work is left.
                    loop {
                        if let Some(b) = ready(d) {
                            return match self.copy_pool(d) {
                                Some(pool) => pool.install(|| work(k, &*b)),
                                None => work(k, &*b),
                            };
                        }
                        if queue.is_empty() || !opening(d) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
            }
            work(0, &*self.first);
        });

        let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
        lock(&self.failed).extend(errors.iter().map(|(d, _)| *d));
        let state = queue.state.into_inner().unwrap_or_else(|p| p.into_inner());
        // Pieces given back by a failed device after the others had stopped: the first device
        // that still works hashes them now.
        let left: Vec<usize> = state.retry.iter().copied().chain(state.front..state.back).collect();
        if !left.is_empty() {
            let healthy = std::iter::once(self.first.clone())
                .chain(members.iter().skip(1).filter_map(|&d| ready(d)))
                .find(|b| !errors.iter().any(|(d, _)| *d == b.info().device));
            let Some(b) = healthy else {
                let (_, e) = errors.into_iter().next().expect("only a failure leaves pieces behind");
                return Err(e);
            };
            for i in left {
                let p = pieces[i];
                let bytes = &input[p.start as usize * CHUNK_LEN..(p.start + p.chunks) as usize * CHUNK_LEN];
                let mut cvs = vec![[0u8; 32]; p.chunks.count_ones() as usize];
                b.chunk_subtrees(bytes, first_chunk + p.start, &domain.key, domain.flags, &mut cvs)?;
                let _ = results[i].set(cvs);
            }
        }
        {
            let mut rates = lock(&self.rates);
            for (d, r) in members.iter().zip(&state.rates) {
                if let Some(r) = r {
                    rates.insert(*d, *r);
                }
            }
        }
        *lock(&self.last_shares) = members.iter().zip(&state.shares).map(|(d, s)| (*d, *s)).collect();
        let done: Vec<(u64, Vec<Cv>)> = pieces
            .iter()
            .zip(results)
            .map(|(p, r)| (p.chunks, r.into_inner().expect("every piece was hashed")))
            .collect();
        merge_segments(&done, max_chunks, domain, out)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pieces of one call still to hash and the devices' measured rates.
///
/// A device with no rate yet (the first piece it ever takes) takes the last piece, the smallest;
/// one with a rate takes the front piece if it would finish it no later than the other devices
/// would finish everything left, that piece included, or else the back piece under the same rule,
/// or else stops: the others end sooner without it. So the fastest device always takes the last
/// piece, and no device takes a piece it would still be hashing after the others are done.
struct Queue<'a> {
    pieces: &'a [Piece],
    state: Mutex<QueueState>,
}

struct QueueState {
    front: usize,
    back: usize,
    /// Pieces a failed device gave back: taken before any other.
    retry: Vec<usize>,
    /// Bytes per second each device hashed pieces at (this call, or earlier ones).
    rates: Vec<Option<f64>>,
    /// Whether each device may still take pieces (not failed, not stopped).
    active: Vec<bool>,
    /// Bytes each device hashed in this call.
    shares: Vec<u64>,
}

impl<'a> Queue<'a> {
    fn new(pieces: &'a [Piece], rates: Vec<Option<f64>>) -> Queue<'a> {
        let devices = rates.len();
        let state = QueueState {
            front: 0,
            back: pieces.len(),
            retry: Vec::new(),
            rates,
            active: vec![true; devices],
            shares: vec![0; devices],
        };
        Queue { pieces, state: Mutex::new(state) }
    }

    fn bytes(&self, i: usize) -> f64 {
        (self.pieces[i].chunks * CHUNK_LEN as u64) as f64
    }

    fn is_empty(&self) -> bool {
        let st = lock(&self.state);
        st.front >= st.back && st.retry.is_empty()
    }

    /// The next piece for device `k`, or `None` when it should stop (see [`Queue`]).
    fn take(&self, k: usize) -> Option<usize> {
        let mut st = lock(&self.state);
        if !st.active[k] {
            return None;
        }
        if let Some(i) = st.retry.pop() {
            return Some(i);
        }
        if st.front >= st.back {
            return None;
        }
        let Some(rate) = st.rates[k] else {
            st.back -= 1;
            return Some(st.back);
        };
        let left: f64 = (st.front..st.back).map(|i| self.bytes(i)).sum();
        let others: f64 = (0..st.rates.len()).filter(|&j| j != k && st.active[j]).filter_map(|j| st.rates[j]).sum();
        // Would device k finish piece i no later than the others would finish all that is left?
        let worth = |i: usize| others <= 0.0 || self.bytes(i) / rate <= left / others;
        if worth(st.front) {
            st.front += 1;
            Some(st.front - 1)
        } else if worth(st.back - 1) {
            st.back -= 1;
            Some(st.back)
        } else {
            st.active[k] = false;
            None
        }
    }

    /// Device `k` hashed piece `i` in `took`.
    fn done(&self, k: usize, i: usize, took: Duration) {
        let bytes = self.bytes(i);
        let mut st = lock(&self.state);
        st.shares[k] += bytes as u64;
        let rate = bytes / took.as_secs_f64().max(1e-9);
        // The latest piece counts most: a device's rate changes as its pipeline warms up.
        st.rates[k] = Some(match st.rates[k] {
            Some(r) => 0.5 * r + 0.5 * rate,
            None => rate,
        });
    }

    /// Device `k` failed on piece `i`: the piece goes back, the device stops.
    fn fail(&self, k: usize, i: usize) {
        let mut st = lock(&self.state);
        st.retry.push(i);
        st.active[k] = false;
    }
}

/// A piece of the input: `chunks` chunks from chunk `start` of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    start: u64,
    chunks: u64,
}

/// The pieces a run of `n` chunks is cut into for `devices` devices: each a power of two of
/// chunks (but the last) at a multiple of its size and no larger than `max_chunks`, so each is
/// one complete subtree; `big` chunks while much is left, then smaller, down to `small`, so that
/// the last pieces are small.
fn plan_pieces(n: u64, max_chunks: u64, devices: usize, big: u64, small: u64) -> Vec<Piece> {
    let big = big.min(max_chunks);
    let small = small.min(big);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let left = n - start;
        // About a quarter of what is left per device, within [small, big], and no larger than
        // the alignment of `start` allows.
        let want = (left / (4 * devices.max(1) as u64)).clamp(small, big);
        let mut size = 1u64 << want.ilog2();
        if start > 0 {
            size = size.min(1 << start.trailing_zeros());
        }
        let chunks = size.min(left);
        out.push(Piece { start, chunks });
        start += chunks;
    }
    out
}

/// How many threads a GPU in a list with the CPU copies host memory with: an eighth of the
/// machine's, 1 to 4 (2 on the GPU machine's 16 cores).
///
/// ```
/// assert!((1..=4).contains(&b3accel::spread::copy_threads()));
/// ```
pub fn copy_threads() -> usize {
    (rayon::current_num_threads() / 8).clamp(1, 4)
}

/// Every hardware device of this machine: the CPU, then each GPU that is not a software one,
/// each physical GPU once. A GPU that both OpenCL and wgpu list (the same name on both) is
/// taken through OpenCL, whose host path measured faster on NVIDIA (1 GiB from host memory on
/// the H200: 47.7 GB/s against 29.7). Listing GPUs initialises their drivers' listings (not the
/// devices themselves).
///
/// ```
/// assert_eq!(b3accel::spread::hardware_devices()[0], b3accel::Device::Cpu);
/// ```
pub fn hardware_devices() -> Vec<Device> {
    // Auto's calibration cache names them already (its GPUs are these, each measured): no
    // driver need list its devices, which took 0.4-0.5 s of a one-shot `b3accel --backend all
    // FILE` on the GPU machine (NVIDIA's OpenCL and Vulkan drivers starting up).
    if let Some(gpus) = cached_gpus() {
        return std::iter::once(Device::Cpu).chain(gpus).collect();
    }
    let found: Vec<DeviceInfo> = super::registry::devices()
        .into_iter()
        .filter(|d| d.backend == BackendKind::Cpu || !d.is_software_gpu())
        .collect();
    one_per_gpu(&found)
}

impl Backend for Spread {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Large batches, so that an incremental hasher's input can be spread too.
    fn batch_len(&self) -> usize {
        if self.devices.len() > 1 {
            256 << 20
        } else {
            self.first.batch_len()
        }
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> Result<()> {
        check_subtree_args(input, first_chunk, max_chunks, out)?;
        if (input.len() as u64) < self.min_bytes || self.members().len() < 2 {
            return self.first.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out);
        }
        self.spread(input, first_chunk, max_chunks, Domain { key: *key, flags }, out)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> Result<()> {
        self.first.hash_blocks(blocks, out)
    }

    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> Result<Cv> {
        self.first.merkle(leaves, inner)
    }

    fn hash_many(&self, data: &[u8], msg_len: usize, key: &[u32; 8], flags: u32, out: &mut [Cv]) -> Result<()> {
        self.first.hash_many(data, msg_len, key, flags, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::MAX_SUBTREE;

    #[test]
    fn pieces_are_aligned_complete_subtrees_that_shrink_at_the_end() {
        const BIG: u64 = 1 << 16;
        const SMALL: u64 = 1 << 12;
        for (n, max, devices) in
            [(1u64 << 20, MAX_SUBTREE, 2), ((1 << 20) + 12345, MAX_SUBTREE, 3), (300_000, 1 << 16, 2)]
        {
            let p = plan_pieces(n, max, devices, BIG, SMALL);
            assert_eq!(p.iter().map(|p| p.chunks).sum::<u64>(), n);
            let mut at = 0;
            for (i, piece) in p.iter().enumerate() {
                assert_eq!(piece.start, at);
                at += piece.chunks;
                assert!(piece.chunks <= max && piece.chunks <= BIG);
                if i + 1 < p.len() {
                    assert!(piece.chunks.is_power_of_two() && piece.start % piece.chunks == 0, "{piece:?}");
                }
            }
            assert!(p.last().unwrap().chunks <= SMALL, "{n}: {:?}", p.last());
            // Large first, never growing again.
            assert!(p.windows(2).all(|w| w[1].chunks <= w[0].chunks), "{p:?}");
            assert!(p[0].chunks >= SMALL);
        }
    }
}
