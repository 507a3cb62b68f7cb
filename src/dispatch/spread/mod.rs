//! Every device at once: one input cut into subtree-aligned pieces that a list of devices hashes
//! together, their chaining values merged in order by the tree's rules.
//!
//! A list is never meant to be slower than its first device alone, so each call decides which of
//! the other devices take part, from what has been measured:
//! - the first device's rate at this size (this list's earlier calls, else Auto's calibration
//!   cache), and each other device's (its pieces in earlier calls, else the calibration);
//! - a device that is not open yet is opened (in the background) only where the first device is
//!   expected to need much longer than the device takes to open; with nothing measured, none is;
//! - for each input size (a power of two), the list remembers how fast its calls went with the
//!   other devices and without them, and keeps the better way (trying the other again now and
//!   then, since rates change as GPUs warm up or caches fill).
//!
//! A call where no other device takes part is the first device's own call on the whole input:
//! no piece, no thread, nothing the device does not pay alone. Where others take part, the first
//! device takes its expected share from the front in one call (sized for all its threads), the
//! others pull the rest as pieces from one queue (large first, smaller towards the end, so that
//! all finish together), and the first device joins that queue once its share is done. A device
//! takes a piece only if it would finish it before the others finish everything left; one whose
//! call fails drops out, its piece going back to the queue.

mod history;
mod pieces;
mod why;

use super::auto::cached_rate;
use super::registry::{backend, one_per_gpu, open_failure, opening, ready, start_opening};
use crate::core::compress::Cv;
use crate::core::constants::CHUNK_LEN;
use crate::tree::{
    check_subtree_args, check_subtree_top_args, merge_segments, subtree_count, top_by_subtrees, Backend, BackendKind,
    Device, DeviceInfo, DeviceKind, Domain, Error, Result,
};
use history::History;
use pieces::{lock, plan_pieces, Piece, Queue};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use why::Why;

/// By default, inputs smaller than this go to the first device alone: below it, no other device
/// has been measured to shorten a call ([`Spread::with_min_bytes`] changes it).
pub const SPREAD_MIN_BYTES: u64 = 64 << 20;
/// A GPU's open time where the calibration has none: about what a GPU takes to open
/// (docs/performance.md).
pub(crate) const GPU_OPEN_TIME: Duration = Duration::from_millis(500);
/// The largest piece by default (64 MiB): enough for a GPU's segment pipeline to fill.
pub const BIG_PIECE_BYTES: u64 = 64 << 20;
/// The smallest piece by default (4 MiB): the last pieces' size, so that the devices finish
/// within a few milliseconds of one another.
pub const SMALL_PIECE_BYTES: u64 = 4 << 20;
/// A device whose rate is not known yet is opened for a call only if the first device is
/// expected to need this many times the device's open time.
const UNKNOWN_OPEN_FACTOR: f64 = 3.0;
/// A device not open yet is opened only if the call is expected to end this much sooner with it.
const OPEN_GAIN: f64 = 0.9;
/// The first device leaves this share of its expected part to the queue, so that it can even
/// out what the others' rates were wrong about.
const FRONT_SLACK: f64 = 0.1;

/// Which of a list's devices take part in a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joining {
    /// Only where measurements say a device shortens the call (the default; see the
    /// [module docs](self)).
    Measured,
    /// Every device in every call that spreads, each opened at the first such call and joining
    /// once open: for tests and self-tests of the cut, whatever it costs.
    Always,
}

/// What a device list did with its last call that reached [`Spread::with_min_bytes`].
///
/// ```
/// use b3accel::spread::Spread;
/// use b3accel::Device;
/// let list = Spread::new(&[Device::Cpu])?.with_min_bytes(0);
/// b3accel::xof_reader_with(&list, &b3accel::Mode::Hash, &[0u8; 8192])?;
/// let report = list.last_call().expect("one call");
/// assert_eq!(report.shares, [(Device::Cpu, 8192)]);
/// # Ok::<(), b3accel::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallReport {
    /// How many such calls the list has made, this one included: tells two calls apart.
    pub call: u64,
    /// Bytes of full chunks each device hashed, in the list's order.
    pub shares: Vec<(Device, u64)>,
    /// For each device but the first: why it took part, or why not.
    pub reasons: Vec<(Device, String)>,
}

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
    last: Mutex<Option<Report>>,
    history: Mutex<History>,
    joining: Joining,
    /// Inputs smaller than this go to the first device alone.
    min_bytes: u64,
    /// The largest and the smallest piece, in chunks (powers of two).
    big_chunks: u64,
    small_chunks: u64,
    /// Where the list has the CPU: one small pool per other device, on which that device's
    /// calls run (their copies into staging use it), made on first use.
    copy_pools: OnceLock<Vec<Option<rayon::ThreadPool>>>,
}

/// A device that takes part in a call besides the first: its index in the call's members, its
/// expected rate, and, for one still opening, when it is expected to be ready.
struct Helper {
    k: usize,
    rate: Option<f64>,
    opens_in: Option<Duration>,
}

/// A call's report as kept: [`CallReport`] with the reasons not yet in words.
#[derive(Clone)]
struct Report {
    call: u64,
    shares: Vec<(Device, u64)>,
    reasons: Vec<(Device, Why)>,
}

/// Who takes part in one call, and why.
struct Plan {
    /// The devices the call can use (not failed before), the first one first.
    members: Vec<Device>,
    helpers: Vec<Helper>,
    /// The first device's expected rate at this size.
    front_rate: Option<f64>,
    reasons: Vec<(Device, Why)>,
    /// Whether a device takes part that has not hashed a piece for this list before: its first
    /// pieces pay one-time costs (staging buffers, its copy threads' start), so such a call's
    /// time does not say how fast the next call of its size would be.
    cold: bool,
}

impl std::fmt::Debug for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spread").field("devices", &self.devices).finish()
    }
}

impl Spread {
    /// The devices `devices` hashing together, the first one opened now (an error if it does
    /// not open); the others open in the background only where a call needs them (or at
    /// [`Spread::warm_up`]). A device named twice is used once; `Device::Auto` is not allowed
    /// in a list.
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
            last: Mutex::new(None),
            history: Mutex::new(History::default()),
            joining: Joining::Measured,
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

    /// Which devices take part in a call (default [`Joining::Measured`]).
    ///
    /// ```
    /// use b3accel::spread::{Joining, Spread};
    /// let s = Spread::new(&[b3accel::Device::Cpu])?.with_joining(Joining::Always);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn with_joining(mut self, joining: Joining) -> Spread {
        self.joining = joining;
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
    /// returns at once: a program that hashes many large inputs calls this first, so that the
    /// devices are open (and can be measured) by the time calls could use them.
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

    /// How many bytes each device hashed in the last call that reached
    /// [`with_min_bytes`](Self::with_min_bytes) (empty before any): see [`last_call`](Self::last_call).
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// assert!(s.last_shares().is_empty());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn last_shares(&self) -> Vec<(Device, u64)> {
        lock(&self.last).as_ref().map(|r| r.shares.clone()).unwrap_or_default()
    }

    /// What the last call that reached [`with_min_bytes`](Self::with_min_bytes) did: each
    /// device's share and why each device but the first took part or not (`b3accel -v` and
    /// `b3accel bench` show it). `None` before any such call.
    ///
    /// ```
    /// let s = b3accel::spread::Spread::new(&[b3accel::Device::Cpu])?;
    /// assert!(s.last_call().is_none());
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn last_call(&self) -> Option<CallReport> {
        let last = lock(&self.last);
        let r = last.as_ref()?;
        Some(CallReport {
            call: r.call,
            shares: r.shares.clone(),
            reasons: r.reasons.iter().map(|(d, why)| (*d, why.to_string())).collect(),
        })
    }

    /// How many calls have reached [`with_min_bytes`](Self::with_min_bytes) so far: a caller
    /// compares it before and after its call to know whether [`last_call`](Self::last_call)
    /// reports that call.
    ///
    /// ```
    /// use b3accel::spread::Spread;
    /// let list = Spread::new(&[b3accel::Device::Cpu])?.with_min_bytes(0);
    /// b3accel::xof_reader_with(&list, &b3accel::Mode::Hash, &[1u8; 8192])?;
    /// assert_eq!(list.calls(), 1);
    /// # Ok::<(), b3accel::Error>(())
    /// ```
    pub fn calls(&self) -> u64 {
        lock(&self.history).calls
    }

    /// The pool device `d` (not the first) runs its calls on, if it has one of its own (see
    /// [`copy_threads`]).
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

    /// The backend of member `d`: the first device's, or one opened since.
    fn opened(&self, d: Device) -> Option<Arc<dyn Backend>> {
        if d == self.devices[0] {
            Some(self.first.clone())
        } else {
            ready(d)
        }
    }

    /// Decides who takes part in a call of `bytes` bytes (see the [module docs](self)), and
    /// starts opening the devices that should.
    fn plan(&self, bytes: u64) -> Plan {
        let members = self.members();
        let history = lock(&self.history);
        let record = history.sizes.get(&size_class(bytes)).copied().unwrap_or_default();
        let rate_of = |d: Device| history.rates.get(&d).copied().or_else(|| cached_rate(d, bytes).map(|r| r.0));
        let front_rate = record.alone.or_else(|| rate_of(members[0]));
        let mut plan = Plan { members: Vec::new(), helpers: Vec::new(), front_rate, reasons: Vec::new(), cold: false };
        for (k, &d) in members.iter().enumerate().skip(1) {
            if let Some(e) = open_failure(d) {
                plan.reasons.push((d, Why::FailedToOpen(e)));
                continue;
            }
            let rate = rate_of(d);
            if self.joining == Joining::Always {
                if ready(d).is_none() {
                    start_opening(d);
                }
                plan.helpers.push(Helper { k, rate, opens_in: ready(d).is_none().then_some(Duration::ZERO) });
                plan.reasons.push((d, Why::Always));
                continue;
            }
            let alone = front_rate.map(|c| Duration::from_secs_f64(bytes as f64 / c.max(1.0)));
            if ready(d).is_some() {
                match (front_rate, rate) {
                    (Some(c), Some(g))
                        if (self.small_chunks * CHUNK_LEN as u64) as f64 / g > bytes as f64 / (c + g) =>
                    {
                        plan.reasons.push((d, Why::TooSlow { rate: g, first: members[0], first_rate: c }));
                    }
                    (_, Some(g)) => {
                        plan.helpers.push(Helper { k, rate: Some(g), opens_in: None });
                        plan.reasons.push((d, Why::Measured(g)));
                    }
                    (_, None) => {
                        plan.helpers.push(Helper { k, rate: None, opens_in: None });
                        plan.reasons.push((d, Why::ToMeasure));
                    }
                }
                continue;
            }
            // Not open: worth opening only if the call lasts long enough for it to help.
            let open_time = cached_rate(d, bytes).map_or(GPU_OPEN_TIME, |r| r.1).max(Duration::from_millis(1));
            let (Some(c), Some(t_alone)) = (front_rate, alone) else {
                plan.reasons.push((d, Why::FirstNotMeasured(members[0])));
                continue;
            };
            let worth = match rate {
                Some(g) => {
                    let o = open_time.as_secs_f64();
                    let with = o + (bytes as f64 - c * o).max(0.0) / (c + g);
                    with < OPEN_GAIN * t_alone.as_secs_f64()
                }
                None => t_alone.as_secs_f64() >= UNKNOWN_OPEN_FACTOR * open_time.as_secs_f64(),
            };
            if worth || opening(d) {
                start_opening(d);
                plan.helpers.push(Helper { k, rate, opens_in: Some(open_time) });
                plan.reasons.push((d, Why::Opened { first: members[0], alone: t_alone }));
            } else {
                plan.reasons.push((d, Why::NotWorthOpening { open_time, first: members[0], alone: t_alone }));
            }
        }
        if self.joining == Joining::Measured
            && !plan.helpers.is_empty()
            && plan.helpers.iter().all(|h| h.opens_in.is_none())
            && record.alone_is_better(bytes)
        {
            let why = match (record.alone, record.together) {
                (Some(alone), Some(together)) if together < alone => Why::FasterAlone { alone, together },
                _ => Why::MeasuringAlone(members[0]),
            };
            for h in plan.helpers.drain(..) {
                let d = members[h.k];
                if let Some(r) = plan.reasons.iter_mut().find(|r| r.0 == d) {
                    r.1 = why.clone();
                }
            }
        }
        plan.cold = plan.helpers.iter().any(|h| !history.rates.contains_key(&members[h.k]));
        plan.members = members;
        plan
    }

    /// The backend of the call's first member.
    fn front(&self, plan: &Plan) -> Result<Arc<dyn Backend>> {
        self.opened(plan.members[0]).ok_or_else(|| Error::InvalidInput("internal: first device not open".into()))
    }

    /// Records a call of `bytes` bytes that the first device made alone.
    fn record_alone(&self, plan: Plan, bytes: u64, took: Duration) {
        let mut shares: Vec<(Device, u64)> = plan.members.iter().map(|&d| (d, 0)).collect();
        shares[0].1 = bytes;
        self.record(bytes, took, false, true, Report { call: 0, shares, reasons: plan.reasons });
    }

    /// Records how a call of `bytes` bytes went, `together` or by the first device alone; the
    /// call's rate counts only if it was `warm` (see [`Plan::cold`]).
    fn record(&self, bytes: u64, took: Duration, together: bool, warm: bool, report: Report) {
        let rate = bytes as f64 / took.as_secs_f64().max(1e-9);
        let mut history = lock(&self.history);
        history.calls += 1;
        let call = history.calls;
        if !warm {
            drop(history);
            *lock(&self.last) = Some(Report { call, ..report });
            return;
        }
        let record = history.sizes.entry(size_class(bytes)).or_default();
        let slower_way = match (record.alone, record.together) {
            (Some(a), Some(t)) => Some((t < a) == together),
            _ => None,
        };
        record.since_retry = if slower_way == Some(true) { 0 } else { record.since_retry + 1 };
        let slot = if together { &mut record.together } else { &mut record.alone };
        *slot = Some(slot.map_or(rate, |r| 0.5 * r + 0.5 * rate));
        drop(history);
        *lock(&self.last) = Some(Report { call, ..report });
    }

    /// Hashes `input` (full chunks from `first_chunk`, aligned as `chunk_subtrees_capped`
    /// requires) into the subtrees of at most `max_chunks` chunks, with the devices the plan
    /// chose besides the first.
    fn spread(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        domain: Domain,
        out: &mut [Cv],
        plan: Plan,
    ) -> Result<Report> {
        let members = &plan.members[..];
        let n = (input.len() / CHUNK_LEN) as u64;
        let front_chunks = if self.joining == Joining::Always { 0 } else { self.front_share(n, &plan) };
        // The first device's share: one piece per max_chunks block, taken in one go.
        let mut pieces: Vec<Piece> = Vec::new();
        let mut at = 0;
        while at < front_chunks {
            let chunks = (front_chunks - at).min(max_chunks - at % max_chunks);
            pieces.push(Piece { start: at, chunks });
            at += chunks;
        }
        let reserved = pieces.len();
        let devices = plan.helpers.len() + 1;
        pieces.extend(plan_pieces(at, n, max_chunks, devices, self.big_chunks, self.small_chunks));

        let mut rates: Vec<Option<f64>> = vec![None; members.len()];
        rates[0] = plan.front_rate;
        let mut active = vec![false; members.len()];
        active[0] = true;
        for h in &plan.helpers {
            rates[h.k] = h.rate;
            active[h.k] = true;
        }
        let queue = Queue::new(&pieces, reserved, rates, active);
        let results: Vec<OnceLock<Vec<Cv>>> = (0..pieces.len()).map(|_| OnceLock::new()).collect();
        let errors: Mutex<Vec<(Device, Error)>> = Mutex::new(Vec::new());
        let hash_piece = |b: &dyn Backend, i: usize| -> Result<()> {
            let p = pieces[i];
            let bytes = &input[p.start as usize * CHUNK_LEN..(p.start + p.chunks) as usize * CHUNK_LEN];
            let mut cvs = vec![[0u8; 32]; subtree_count(p.chunks, max_chunks)];
            b.chunk_subtrees(bytes, first_chunk + p.start, &domain.key, domain.flags, &mut cvs)?;
            let _ = results[i].set(cvs);
            Ok(())
        };
        // One device's loop: take a piece, hash it; stop when the queue says so or at this
        // device's first error (its piece goes back to the queue).
        let work = |k: usize, b: &dyn Backend| {
            while let Some(i) = queue.take(k) {
                let t = Instant::now();
                match hash_piece(b, i) {
                    Ok(()) => queue.done(k, i, t.elapsed()),
                    Err(e) => {
                        queue.fail(k, i);
                        lock(&errors).push((members[k], e));
                        return;
                    }
                }
            }
        };

        let front = self.front(&plan)?;
        std::thread::scope(|s| {
            for h in &plan.helpers {
                let (k, d) = (h.k, members[h.k]);
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
            work(0, &*front);
        });

        let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
        lock(&self.failed).extend(errors.iter().map(|(d, _)| *d));
        let mut reasons = plan.reasons;
        for (d, why) in &mut reasons {
            if let Some(e) = open_failure(*d) {
                *why = Why::FailedToOpen(e);
            } else if let Some((_, e)) = errors.iter().find(|(f, _)| f == d) {
                *why = Why::FailedInCall(e.to_string());
            }
        }
        let state = queue.state.into_inner().unwrap_or_else(|p| p.into_inner());
        // Pieces given back by a failed device after the others had stopped: the first device
        // that still works hashes them now.
        let left: Vec<usize> = state.retry.iter().copied().chain(state.front..state.back).collect();
        if !left.is_empty() {
            let healthy = members.iter().filter(|d| !errors.iter().any(|(f, _)| f == *d)).find_map(|&d| self.opened(d));
            let Some(b) = healthy else {
                let (_, e) = errors.into_iter().next().expect("only a failure leaves pieces behind");
                return Err(e);
            };
            for i in left {
                hash_piece(&*b, i)?;
            }
        }
        {
            let mut history = lock(&self.history);
            for (k, (d, r)) in members.iter().zip(&state.measured).enumerate() {
                if let Some(r) = r {
                    // The first device's rate on a share is what the whole call would get alone.
                    if k > 0 {
                        history.rates.insert(*d, *r);
                    }
                }
            }
        }
        let done: Vec<(u64, Vec<Cv>)> = pieces
            .iter()
            .zip(results)
            .map(|(p, r)| (p.chunks, r.into_inner().expect("every piece was hashed")))
            .collect();
        merge_segments(&done, max_chunks, domain, out)?;
        Ok(Report { call: 0, shares: members.iter().zip(&state.shares).map(|(d, s)| (*d, *s)).collect(), reasons })
    }

    /// How many of `n` chunks the first device takes from the front in one go: its expected
    /// share, less [`FRONT_SLACK`], rounded down to whole small pieces.
    fn front_share(&self, n: u64, plan: &Plan) -> u64 {
        let bytes = (n * CHUNK_LEN as u64) as f64;
        // A device with no rate yet is taken to be a quarter of the first device's speed.
        let c = plan.front_rate.unwrap_or(1e9);
        let rate = |h: &Helper| h.rate.unwrap_or(c / 4.0);
        let open: f64 = plan.helpers.iter().filter(|h| h.opens_in.is_none()).map(rate).sum();
        let mut time = bytes / (c + open);
        // Devices still opening add their speed from when they are ready.
        let (late_rate, late_bytes) = plan
            .helpers
            .iter()
            .filter_map(|h| h.opens_in.map(|o| (rate(h), rate(h) * o.as_secs_f64())))
            .fold((0.0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1));
        if late_rate > 0.0 {
            time = time.min((bytes + late_bytes) / (c + open + late_rate));
        }
        let share = (c * time * (1.0 - FRONT_SLACK) / CHUNK_LEN as f64) as u64;
        (share / self.small_chunks * self.small_chunks).min(n)
    }
}

/// The power of two at or below `bytes`: calls of one such size share a record.
fn size_class(bytes: u64) -> u32 {
    bytes.max(1).ilog2()
}

/// How many threads a GPU in a list with the CPU copies host memory with: an eighth of the
/// machine's, 1 to 4. A GPU copying on the CPU backend's own pool took cores from the CPU's
/// share of the input (docs/performance.md).
///
/// ```
/// assert!((1..=4).contains(&b3accel::spread::copy_threads()));
/// ```
pub fn copy_threads() -> usize {
    (rayon::current_num_threads() / 8).clamp(1, 4)
}

/// Every hardware device of this machine: the CPU, then each GPU that is not a software one,
/// each physical GPU once. A GPU that both OpenCL and wgpu list (the same name on both) is
/// taken through OpenCL, whose host path measured faster on NVIDIA (docs/performance.md).
/// Where Auto's calibration cache is there, its GPUs are taken from it and no driver is asked.
///
/// ```
/// assert_eq!(b3accel::spread::hardware_devices()[0], b3accel::Device::Cpu);
/// ```
pub fn hardware_devices() -> Vec<Device> {
    if let Some(gpus) = super::auto::cached_gpus() {
        return std::iter::once(Device::Cpu).chain(gpus).collect();
    }
    let found: Vec<DeviceInfo> = super::registry::devices()
        .into_iter()
        .filter(|d| d.backend == BackendKind::Cpu || !d.is_software_gpu())
        .collect();
    one_per_gpu(&found)
}

/// The list of `devices` shared by every call in this process that names the same devices, so
/// that what one call measures serves the next ([`hash_on_devices`](crate::hash_on_devices)).
pub(crate) fn shared(devices: &[Device]) -> Result<Arc<Spread>> {
    static LISTS: OnceLock<Mutex<HashMap<Vec<Device>, Arc<Spread>>>> = OnceLock::new();
    let lists = LISTS.get_or_init(Default::default);
    if let Some(s) = lock(lists).get(devices) {
        return Ok(s.clone());
    }
    let s = Arc::new(Spread::new(devices)?);
    Ok(lock(lists).entry(devices.to_vec()).or_insert(s).clone())
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
        let bytes = input.len() as u64;
        if bytes < self.min_bytes {
            return self.first.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out);
        }
        let plan = self.plan(bytes);
        let t = Instant::now();
        if plan.helpers.is_empty() {
            // The first device's own call, as it would be made without the list.
            self.front(&plan)?.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out)?;
            self.record_alone(plan, bytes, t.elapsed());
            return Ok(());
        }
        let warm = !plan.cold;
        let report = self.spread(input, first_chunk, max_chunks, Domain { key: *key, flags }, out, plan)?;
        self.record(bytes, t.elapsed(), true, warm, report);
        Ok(())
    }

    /// The first device's own subtree top (the CPU's keeps the last levels in registers) where
    /// no other device takes part; else the halves go through the list.
    fn subtree_top(&self, input: &[u8], first_chunk: u64, key: &[u32; 8], flags: u32, top_flags: u32) -> Result<Cv> {
        let bytes = input.len() as u64;
        if bytes < self.min_bytes || self.devices.len() < 2 {
            return self.first.subtree_top(input, first_chunk, key, flags, top_flags);
        }
        let plan = self.plan(bytes);
        if !plan.helpers.is_empty() {
            let n = check_subtree_top_args(input, first_chunk)?;
            return top_by_subtrees(self, input, first_chunk, n, key, flags, top_flags);
        }
        let t = Instant::now();
        let cv = self.front(&plan)?.subtree_top(input, first_chunk, key, flags, top_flags)?;
        self.record_alone(plan, bytes, t.elapsed());
        Ok(cv)
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
        for (from, n, max, devices) in [
            (0, 1u64 << 20, MAX_SUBTREE, 2),
            (0, (1 << 20) + 12345, MAX_SUBTREE, 3),
            (0, 300_000, 1 << 16, 2),
            (3 << 12, (1 << 20) + 12345, MAX_SUBTREE, 2),
        ] {
            let p = plan_pieces(from, n, max, devices, BIG, SMALL);
            assert_eq!(p.iter().map(|p| p.chunks).sum::<u64>(), n - from);
            let mut at = from;
            for (i, piece) in p.iter().enumerate() {
                assert_eq!(piece.start, at);
                at += piece.chunks;
                assert!(piece.chunks <= max && piece.chunks <= BIG);
                if i + 1 < p.len() {
                    assert!(piece.chunks.is_power_of_two() && piece.start % piece.chunks == 0, "{piece:?}");
                }
            }
            assert!(p.last().unwrap().chunks <= SMALL, "{n}: {:?}", p.last());
            assert!(p[0].chunks >= SMALL);
        }
    }

    #[test]
    fn a_list_calls_the_first_device_alone_when_nothing_is_measured() {
        // No other device is open, and no rate says one would pay for its opening.
        let list = Spread::new(&[Device::Cpu, Device::Wgpu(usize::MAX - 1)]);
        // The second device does not exist, yet naming it costs nothing until a call needs it.
        let list = list.expect("only the first device opens").with_min_bytes(0);
        let data = vec![1u8; 64 * CHUNK_LEN];
        let mut out = [[0u8; 32]; 1];
        list.chunk_subtrees(&data, 0, &crate::core::constants::IV, 0, &mut out).unwrap();
        let report = list.last_call().unwrap();
        assert_eq!(report.shares, [(Device::Cpu, data.len() as u64), (Device::Wgpu(usize::MAX - 1), 0)]);
        assert!(report.reasons[0].1.starts_with("not opened"), "{:?}", report.reasons);
    }
}
