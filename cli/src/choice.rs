//! The `--backend` option: what it names (`auto`, one device, a device list or `all`), opening
//! that once for the run, and which backend hashes each input (with `-v` and `-vv`, why).

use crate::{Fatal, Global};
use b3accel::spread::{Spread, SPREAD_MIN_BYTES};
use b3accel::{Backend, Cv, Device, DeviceInfo};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

/// What `--backend` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// One device, or `auto` (a device chosen for each input).
    One(Device),
    /// Several devices hashing each input together (`cpu,opencl:1`), each named once, in the
    /// order given.
    List(Vec<Device>),
    /// Every hardware device: the CPU and every GPU that is not a software one, each once.
    All,
}

/// Every form `--backend` accepts, for its error messages: the device names of the library's
/// table of backends, a list, or `all`.
fn forms() -> String {
    format!("--backend takes {}, a list such as cpu,opencl:0, or all", b3accel::device_names().join(", "))
}

impl FromStr for Choice {
    type Err = String;

    /// `all`, a device, or devices separated by commas. A list with an empty name (`cpu,,wgpu`),
    /// `auto` or `all` in it is refused; a device named twice is used once.
    fn from_str(s: &str) -> Result<Choice, String> {
        Self::parse(s).map_err(|e| format!("{e}; {}", forms()))
    }
}

impl Choice {
    fn parse(s: &str) -> Result<Choice, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Choice::All);
        }
        if !s.contains(',') {
            return s.parse().map(Choice::One).map_err(|e: b3accel::Error| e.to_string());
        }
        let mut list = Vec::new();
        for name in s.split(',').map(str::trim) {
            if name.is_empty() {
                return Err(format!("'{s}' has an empty device name (a list is written cpu,opencl:1)"));
            }
            if name.eq_ignore_ascii_case("all") {
                return Err(format!("'{s}': all stands alone (it names every hardware device)"));
            }
            let device: Device = name.parse().map_err(|e: b3accel::Error| e.to_string())?;
            if device == Device::Auto {
                return Err(format!("'{s}': auto chooses one device for each input, so it cannot be in a list"));
            }
            if !list.contains(&device) {
                list.push(device);
            }
        }
        Ok(Choice::List(list))
    }
}

/// A list's name in `--json` and in messages: `cpu+opencl:1`.
pub fn list_name(devices: &[Device]) -> String {
    devices.iter().map(Device::to_string).collect::<Vec<_>>().join("+")
}

impl Choice {
    /// The devices a list or `all` names on this machine (`None` for one device or `auto`). A
    /// device of the list that this machine or build lacks is its error, as `--backend DEVICE`
    /// gives it. A GPU named is checked against the devices its backend listed (by this process
    /// or, as recorded in the cache file, by an earlier one); where its backend has not been
    /// listed yet, or the record lacks it, that backend alone is listed now (and recorded). The
    /// library keeps the drivers' start-up chatter off standard error.
    pub fn devices(&self) -> Result<Option<Vec<Device>>, Fatal> {
        let list = match self {
            Choice::One(_) => return Ok(None),
            Choice::All => b3accel::spread::hardware_devices(),
            Choice::List(list) => {
                let unchecked: Vec<Device> =
                    list.iter().copied().filter(|&d| b3accel::auto::listed(d) != Some(true)).collect();
                check_now(&unchecked)?;
                list.clone()
            }
        };
        Ok(Some(list))
    }

    /// As [`devices`](Self::devices), without waiting for drivers that the run's inputs may not
    /// need, where this machine's devices are not known yet (a fresh machine or cache): a list's
    /// GPUs whose backend has never been listed are not checked in this run, and `all` is the CPU
    /// alone, while the devices are listed and recorded after the run for later runs ([`finish`]). The second value says what was
    /// left for later, for `-v`.
    fn devices_beside(&self, recordable: bool) -> Result<(Option<Vec<Device>>, Later), Fatal> {
        match self {
            Choice::All if recordable && b3accel::auto::cached_gpus().is_none() => {
                record_in_background();
                Ok((Some(vec![Device::Cpu]), Later::Recording))
            }
            Choice::List(list) => {
                let (unknown, named): (Vec<Device>, Vec<Device>) =
                    list.iter().copied().partition(|&d| b3accel::auto::listed(d).is_none());
                // A name the record lacks (or a backend not built in) is checked now: it is most
                // likely a mistake, which gets its error before any input is hashed.
                check_now(&named.into_iter().filter(|&d| b3accel::auto::listed(d) != Some(true)).collect::<Vec<_>>())?;
                if unknown.is_empty() {
                    return Ok((Some(list.clone()), Later::Nothing));
                }
                *lock(&AFTER) = Some(After::Check(unknown.clone()));
                Ok((Some(list.clone()), Later::Checking(unknown)))
            }
            _ => Ok((self.devices()?, Later::Nothing)),
        }
    }

    /// The backend for the whole choice: `auto`'s, one device's, or one `Spread` over a list's
    /// devices (whose Merkle trees and batches of messages go to its first device).
    pub fn backend(&self) -> Result<Arc<dyn Backend>, Fatal> {
        match self {
            Choice::One(d) => Ok(b3accel::backend(*d)?),
            _ => Ok(Arc::new(Spread::new(&self.devices()?.unwrap_or_default())?)),
        }
    }
}

/// The `--backend` choice, opened for the run.
pub struct Devices {
    how: How,
    /// `-vv`: keep each input's reason.
    explain: bool,
    /// How many `-v`.
    verbose: u8,
}

enum How {
    /// `auto`: small inputs go to the CPU backend, others where `auto::choose` sends them; all
    /// of them to the CPU while the devices are `unlisted` (being listed for later runs).
    Auto { auto: Arc<dyn Backend>, cpu: Arc<dyn Backend>, unlisted: bool },
    /// One device.
    One(Arc<dyn Backend>),
    /// A list or `all`: one `Spread` for the run, which each input uses through a [`Tally`].
    Spread(Arc<Shared>),
}

/// What hashes one input.
pub struct Picked {
    pub backend: Arc<dyn Backend>,
    /// What hashed it, as `--json`'s `backend` names it: `cpu`, `opencl:0`, `cpu+opencl:1`.
    pub name: String,
    why: Option<String>,
    /// `-vv`.
    explain: bool,
    /// A list's bytes on each device.
    tally: Option<Arc<Tally>>,
    /// The GPU `auto` chose for this input (the Auto backend hashes it there, and on the CPU if
    /// that GPU fails).
    pub auto_gpu: Option<Device>,
}

impl Picked {
    /// With `-vv`, why the input went where it did; for a device list (from `-v` on), once it
    /// is hashed, how many bytes each device hashed and why each took part or not.
    pub fn why(&self) -> Option<String> {
        match &self.tally {
            Some(t) => self.explain.then(|| t.describe()),
            None => self.why.clone().filter(|_| self.explain),
        }
    }
}

impl Devices {
    /// What hashes an input of `len` bytes (`None`: not known in advance, a stream).
    ///
    /// With `--backend auto` an input of known size goes where `b3accel::auto::choose` sends it
    /// (through the Auto backend, which falls back to the CPU where a GPU fails); one under
    /// `auto::GPU_MIN_BYTES` goes straight to the CPU backend (the first rule of `choose`),
    /// without a choice per call for every small file. A stream goes to the Auto
    /// backend, which chooses for each batch.
    pub fn pick(&self, len: Option<u64>) -> Picked {
        let explain = self.explain;
        let picked = |backend: Arc<dyn Backend>, device: Device, why| Picked {
            backend,
            name: device.to_string(),
            why,
            explain,
            tally: None,
            auto_gpu: None,
        };
        let (auto, cpu) = match &self.how {
            How::One(b) => return picked(b.clone(), b.info().device, None),
            How::Spread(shared) => {
                let name = list_name(shared.spread.devices());
                let tally = Arc::new(Tally { shared: shared.clone(), counted: Mutex::new(Counted::default()) });
                // A list says for each input who hashed it and why already at `-v`.
                let explain = self.verbose > 0;
                return Picked { backend: tally.clone(), name, why: None, explain, tally: Some(tally), auto_gpu: None };
            }
            How::Auto { cpu, unlisted: true, .. } => {
                return picked(cpu.clone(), Device::Cpu, self.explain.then(|| UNLISTED.to_string()))
            }
            How::Auto { auto, cpu, .. } => (auto, cpu),
        };
        match len {
            Some(n) if n < b3accel::auto::GPU_MIN_BYTES => {
                let why = self
                    .explain
                    .then(|| format!("under {} MiB, small inputs stay on the CPU", b3accel::auto::GPU_MIN_BYTES >> 20));
                picked(cpu.clone(), Device::Cpu, why)
            }
            Some(n) => {
                // Choosing may list (and open) GPUs: the library keeps their drivers' start-up
                // chatter off stderr.
                let choice = b3accel::auto::choose(n);
                if choice.device == Device::Cpu {
                    return picked(cpu.clone(), Device::Cpu, Some(choice.reason));
                }
                // The Auto backend hashes it: on the GPU it chose, and again on the CPU if that
                // GPU fails (`hash_input` then names the CPU, and `-v` says so).
                Picked { auto_gpu: Some(choice.device), ..picked(auto.clone(), choice.device, Some(choice.reason)) }
            }
            None => picked(
                auto.clone(),
                Device::Auto,
                self.explain.then(|| "a stream: the device is chosen for each batch".to_string()),
            ),
        }
    }
}

impl Devices {
    /// [`pick`](Self::pick) for an input read from its disk: `auto` takes the CPU, which hashes
    /// faster than one disk reads, so a GPU could only add its start-up and copies; a device or
    /// list the user named is kept.
    pub fn pick_from_disk(&self, len: Option<u64>) -> Picked {
        match &self.how {
            How::Auto { cpu, .. } => Picked {
                backend: cpu.clone(),
                name: Device::Cpu.to_string(),
                why: Some("read from its disk, which is slower than the CPU hashes".to_string()),
                explain: self.explain,
                tally: None,
                auto_gpu: None,
            },
            _ => self.pick(len),
        }
    }
}

/// Checks `devices` now (listing only their backends, which records them), failing with the
/// first one that is not there.
fn check_now(devices: &[Device]) -> Result<(), Fatal> {
    if devices.is_empty() {
        return Ok(());
    }
    for verdict in b3accel::check_devices(devices) {
        verdict?;
    }
    Ok(())
}

/// What a run left for later because this machine's devices were not known yet.
#[derive(Clone, Debug, PartialEq)]
enum Later {
    Nothing,
    /// The devices are being listed in the background, and recorded for later runs.
    Recording,
    /// These GPUs of a list are not checked in this run: their backend is listed after it.
    Checking(Vec<Device>),
}

/// Whether what a listing finds can be recorded for later runs: the cache file is on, what is at
/// its path (if anything) is one of b3accel's own files, and its directory is there (made here
/// if need be) and writable. Where it is not, nothing is left to list in the background: each
/// run would start one in vain.
fn recordable() -> bool {
    let Some(file) = b3accel::auto::cache_file() else { return false };
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if b3accel::auto::cache_file_problem().is_some() || std::fs::create_dir_all(&dir).is_err() {
        return false;
    }
    #[cfg(unix)]
    let writable = {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
        // SAFETY: a valid NUL-terminated path; access only reads it.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    #[cfg(not(unix))]
    let writable = true;
    writable
}

/// Opens what `--backend` names (an error when a device is not there), saying with `-v` what it
/// is and why.
///
/// A run never waits for the drivers to list devices that its inputs may not need: where this
/// machine's devices are not known yet (nothing listed or recorded), `auto` hashes on the CPU and
/// `all` is the CPU alone while a process of this program lists and records the devices for
/// later runs ([`finish`]); a list's GPUs whose backend was never listed are checked by later
/// runs, not this one.
pub fn open(global: &Global) -> Result<Devices, Fatal> {
    let verbose = global.verbose > 0;
    let threads = rayon::current_num_threads();
    let recordable = recordable();
    // Auto and lists use the calibration cache: say once where it cannot be kept.
    if verbose && !matches!(global.backend, Choice::One(d) if d != Device::Auto) {
        if let Some(why) = b3accel::auto::cache_file_problem() {
            crate::warn(format_args!("{why}: devices and calibration are not cached"));
        }
    }
    let (list, later) = global.backend.devices_beside(recordable)?;
    let how = match (&global.backend, list) {
        (Choice::One(Device::Auto), _) => {
            let auto = b3accel::backend(Device::Auto)?;
            // Nothing known of the devices yet: this run hashes on the CPU, and a process of its
            // own lists them for later runs (without a record to keep, Auto lists them here, on
            // the first input large enough for a GPU).
            let unlisted = recordable && b3accel::auto::cached_devices().is_none();
            if unlisted {
                record_in_background();
            }
            if verbose {
                crate::warn(format_args!(
                    "--backend auto: inputs under {} MiB are hashed on the CPU ({}, {}), larger ones on \
                     the device measured fastest at their size; {threads} thread(s){}",
                    b3accel::auto::GPU_MIN_BYTES >> 20,
                    auto.info().name,
                    b3accel::cpu::CpuBackend::new().kernel(),
                    if global.verbose > 1 { "" } else { " (-vv names each input's device)" },
                ));
                if unlisted {
                    crate::warn(UNLISTED);
                }
            }
            How::Auto { auto, cpu: b3accel::backend(Device::Cpu)?, unlisted }
        }
        (Choice::One(d), _) => {
            let backend = b3accel::backend(*d)?;
            if verbose {
                let info = backend.info();
                crate::warn(format_args!(
                    "hashing on {} ({}, {}), as --backend asks; {threads} thread(s)",
                    info.device, info.name, info.api
                ));
            }
            How::One(backend)
        }
        (choice, list) => {
            let list = list.unwrap_or_default();
            let spread = Spread::new(&list)?;
            if verbose {
                crate::warn(spread_note(choice, &spread, threads, global.verbose > 1));
                match &later {
                    Later::Nothing => {}
                    Later::Recording => {
                        crate::warn(format_args!("{UNLISTED}; --backend all is the CPU alone in this run"))
                    }
                    Later::Checking(gpus) => crate::warn(format_args!(
                        "{} {} not checked in this run: {} backend has not been listed on this machine yet",
                        gpus.iter().map(Device::to_string).collect::<Vec<_>>().join(", "),
                        if gpus.len() == 1 { "is" } else { "are" },
                        if gpus.len() == 1 { "its" } else { "their" },
                    )),
                }
            }
            How::Spread(Arc::new(Shared { spread }))
        }
    };
    Ok(Devices { how, explain: global.verbose > 1, verbose: global.verbose })
}

/// `auto`'s and `all`'s words while the devices are being listed for later runs.
const UNLISTED: &str = "this machine's devices are not known yet: they are being listed in the background and \
                        recorded for later runs, and the CPU hashes meanwhile (`b3accel devices` lists them now)";

/// Set in the environment of a process of this program that lists devices for another one
/// ([`serve_listing`]): empty to list and record every backend's devices for later runs, else the
/// devices to check, separated by commas.
const LIST_ENV: &str = "B3ACCEL_LIST_DEVICES";

/// What the run leaves to a process of this program, started once its inputs are done
/// ([`finish`]): listing every backend's devices, or only the backends of the devices named.
enum After {
    Record,
    Check(Vec<Device>),
}

/// The listing this run leaves for later, if any.
static AFTER: Mutex<Option<After>> = Mutex::new(None);

/// Leaves listing and recording every device to a process of this program started at the end of
/// the run ([`finish`]): listing takes a few hundred milliseconds of CPU on a machine with GPU
/// drivers, which no input of this run waits for or shares its cores with. The cache directory
/// is made before ([`recordable`]), so that the listing process need not make one after this
/// process has gone.
fn record_in_background() {
    lock(&AFTER).get_or_insert(After::Record);
}

/// Starts the listing the run left for later ([`record_in_background`], a list's devices whose
/// backend was never listed) in a process of this program at the lowest priority, which records
/// what it finds and is not waited for. A list's devices are then not checked in this run (`-v`
/// says so), and later runs check the names against the record before any input. If the process
/// cannot be started, a later run tries again.
pub fn finish() {
    let Some(after) = lock(&AFTER).take() else { return };
    let names = match after {
        After::Record => String::new(),
        After::Check(devices) => devices.iter().map(Device::to_string).collect::<Vec<_>>().join(","),
    };
    if let Ok(exe) = std::env::current_exe() {
        // Dropping the handle neither waits for the process nor ends it.
        let _ = Command::new(exe)
            .env(LIST_ENV, &names)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
}

/// In a process started to list devices for another ([`LIST_ENV`] set): lists them at the lowest
/// priority and ends the process; otherwise returns at once. Recording every device (the variable
/// empty) runs only where the record is still missing and its directory there; checking devices
/// lists their backends, which records them.
pub fn serve_listing() {
    let Some(asked) = std::env::var_os(LIST_ENV) else { return };
    let asked = asked.to_string_lossy().into_owned();
    // The lowest priority: the run that started this one hashes meanwhile and does not wait.
    #[cfg(unix)]
    // SAFETY: a plain system call on this process; a failure leaves its priority as it was.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
    if asked.is_empty() {
        let dir_there =
            b3accel::auto::cache_file().as_deref().and_then(std::path::Path::parent).is_some_and(|d| d.is_dir());
        if dir_there && b3accel::auto::cached_devices().is_none() {
            b3accel::backend_status();
        }
        std::process::exit(0);
    }
    let devices: Vec<Device> = asked.split(',').filter_map(|n| n.parse().ok()).collect();
    // Listing the devices' backends records them.
    let _ = b3accel::check_devices(&devices);
    std::process::exit(0);
}

/// The `-v` note for a list or `all`.
fn spread_note(choice: &Choice, spread: &Spread, threads: usize, each: bool) -> String {
    let devices = spread.devices();
    let first = spread.devices()[0];
    let asked = if *choice == Choice::All { "--backend all (every hardware device)" } else { "--backend asks" };
    if devices.len() == 1 {
        let note = if *choice == Choice::All { "; no hardware GPU here, so the CPU alone" } else { "" };
        return format!("hashing on {first} ({}), as {asked}{note}; {threads} thread(s)", spread.info().name);
    }
    format!(
        "hashing on {}, as {asked}: an input of {} MiB or more is shared with the other devices \
         where measurements say they make it faster (a GPU is opened only where it can pay for its \
         opening), anything else goes to {first} alone; {threads} thread(s){}",
        devices.iter().map(Device::to_string).collect::<Vec<_>>().join(", "),
        SPREAD_MIN_BYTES >> 20,
        if each { "" } else { " (-vv gives each input's shares and why each device took part or not)" },
    )
}

/// A list's `Spread`, shared by the run's inputs.
struct Shared {
    spread: Spread,
}

/// One input's use of the run's `Spread`, which also adds up how many bytes each device hashed
/// (for `-v`). Inputs' calls run side by side, as on one device.
struct Tally {
    shared: Arc<Shared>,
    counted: Mutex<Counted>,
}

#[derive(Default)]
struct Counted {
    /// Bytes of full chunks on each device.
    shares: Vec<(Device, u64)>,
    /// Whether any call was large enough to spread.
    spread: bool,
    /// Why each device but the first took part in the last such call, or not.
    reasons: Vec<(Device, String)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tally {
    fn spread(&self) -> &Spread {
        &self.shared.spread
    }

    /// Runs one call of `len` bytes on the `Spread` and counts who hashed them: the report of
    /// the list's call if no other input's call came between, else the first device's (calls of
    /// several inputs run at once, as on one device: only `-v`'s shares can blur).
    fn count(&self, len: usize, call: impl FnOnce(&Spread) -> b3accel::Result<()>) -> b3accel::Result<()> {
        let spread = self.spread();
        let first = spread.devices()[0];
        let before = spread.calls();
        call(spread)?;
        match (spread.calls() == before + 1).then(|| spread.last_call()).flatten() {
            Some(report) if spread.devices().len() > 1 => self.add(&report.shares, Some(report.reasons)),
            _ => self.add(&[(first, len as u64)], None),
        }
        Ok(())
    }

    fn add(&self, shares: &[(Device, u64)], reasons: Option<Vec<(Device, String)>>) {
        let mut c = lock(&self.counted);
        if let Some(reasons) = reasons {
            c.spread = true;
            c.reasons = reasons;
        }
        for &(d, bytes) in shares {
            match c.shares.iter_mut().find(|s| s.0 == d) {
                Some(s) => s.1 += bytes,
                None => c.shares.push((d, bytes)),
            }
        }
    }

    /// `-vv`'s line: each device's share of the input, or why it was not spread.
    fn describe(&self) -> String {
        let c = lock(&self.counted);
        let first = self.spread().devices()[0];
        if self.spread().devices().len() < 2 {
            return format!("one device: {first}");
        }
        if !c.spread {
            return format!("not spread (too small), on {first} alone");
        }
        let total: u64 = c.shares.iter().map(|s| s.1).sum::<u64>().max(1);
        let each: Vec<String> = self
            .spread()
            .devices()
            .iter()
            .map(|d| {
                let bytes = c.shares.iter().find(|s| s.0 == *d).map_or(0, |s| s.1);
                format!("{d} {:.1}% ({:.1} MiB)", 100.0 * bytes as f64 / total as f64, bytes as f64 / (1 << 20) as f64)
            })
            .collect();
        let why: Vec<String> = c.reasons.iter().map(|(d, r)| format!("{d} {r}")).collect();
        format!("shares {}; {}", each.join(", "), why.join("; "))
    }
}

impl Backend for Tally {
    fn info(&self) -> &DeviceInfo {
        self.spread().info()
    }

    fn batch_len(&self) -> usize {
        self.spread().batch_len()
    }

    fn chunk_subtrees_capped(
        &self,
        input: &[u8],
        first_chunk: u64,
        max_chunks: u64,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> b3accel::Result<()> {
        self.count(input.len(), |s| s.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out))
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> b3accel::Result<()> {
        self.spread().hash_blocks(blocks, out)
    }

    fn merkle(&self, leaves: &[Cv], inner: Option<&mut [Cv]>) -> b3accel::Result<Cv> {
        self.spread().merkle(leaves, inner)
    }

    fn hash_many(
        &self,
        data: &[u8],
        msg_len: usize,
        key: &[u32; 8],
        flags: u32,
        out: &mut [Cv],
    ) -> b3accel::Result<()> {
        self.spread().hash_many(data, msg_len, key, flags, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices_lists_and_all() {
        assert_eq!("auto".parse(), Ok(Choice::One(Device::Auto)));
        assert_eq!("opencl:1".parse(), Ok(Choice::One(Device::OpenCl(1))));
        assert_eq!("ALL".parse(), Ok(Choice::All));
        assert_eq!(" all ".parse(), Ok(Choice::All));
        assert_eq!("cpu,opencl:1".parse(), Ok(Choice::List(vec![Device::Cpu, Device::OpenCl(1)])));
        assert_eq!(
            "wgpu, cpu,wgpu:0,OPENCL".parse(),
            Ok(Choice::List(vec![Device::Wgpu(0), Device::Cpu, Device::OpenCl(0)]))
        );
        // A one-device list is still a list (hashed through a Spread of one).
        assert_eq!("cpu,cpu".parse(), Ok(Choice::List(vec![Device::Cpu])));
        for bad in
            ["cpu,,wgpu", "cpu,", ",cpu", ",", "auto,cpu", "cpu,auto", "cpu,all", "all,cpu", "cpu,tpu", "cpu,opencl:x"]
        {
            let e = bad.parse::<Choice>().expect_err(bad);
            assert!(e.contains(bad) || e.contains("invalid device"), "{bad}: {e}");
            assert!(e.ends_with(&forms()), "{bad}: {e}");
        }
        assert_eq!(list_name(&[Device::Cpu, Device::OpenCl(1)]), "cpu+opencl:1");
    }
}
