//! The calibration cache of `Device::Auto` (`src/dispatch/auto.rs`, written through
//! `src/core/cache.rs`): many processes calibrating into one file at once leave one whole, valid
//! file and never show a reader a torn one; a file of garbage, of another format or of another
//! build is ignored, never trusted, and never a reason to fail; only b3accel's own files (empty,
//! or with its fingerprint) are replaced. The devices a listing finds are recorded there, so that
//! only the first run on a machine lists them: `auto` on a fresh cache hashes on the CPU while a
//! process of its own records them, and a device list on a fresh cache leaves its names to be
//! checked by later runs; a name that is not there then fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const B3ACCEL: &str = env!("CARGO_BIN_EXE_b3accel");
const CHILD_ROUNDS: usize = 150;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("b3accel-calibration-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether `text` is a calibration this build wrote: JSON with the current format, a fingerprint
/// of this version, the devices of every backend built in, and a CPU curve.
fn is_valid(text: &str) -> Result<(), String> {
    let v = is_record(text)?;
    if !v["measured"]["cpu"]["points"].is_array() || !v["measured"]["gpus"].is_array() {
        return Err(format!("no curves: {text}"));
    }
    Ok(())
}

/// The GPU backends built in, as the cache file names them.
fn built() -> Vec<&'static str> {
    let mut kinds = Vec::new();
    if cfg!(feature = "opencl") {
        kinds.push("opencl");
    }
    if cfg!(feature = "wgpu") {
        kinds.push("wgpu");
    }
    kinds
}

/// Whether `text` is a cache file of this build recording the devices of every backend built
/// in (calibrated or not); the file as JSON.
fn is_record(text: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text:?}"))?;
    let fingerprint = v["fingerprint"].as_str().ok_or("no fingerprint")?;
    if v["format"] != 3 || !fingerprint.starts_with(&format!("b3accel {} |", env!("CARGO_PKG_VERSION"))) {
        return Err(format!("not this build's cache file: {text}"));
    }
    if let Some(kind) = built().into_iter().find(|k| !v["listed"][k].is_array()) {
        return Err(format!("{kind}'s devices are not recorded: {text}"));
    }
    Ok(v)
}

/// The cache file at `path` once it records every backend's devices (written by a process that
/// `b3accel` left running), waiting up to a minute for it.
fn wait_for_record(path: &Path) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        match is_record(&text) {
            Ok(v) => return v,
            Err(e) if start.elapsed() > std::time::Duration::from_secs(60) => panic!("no record after a minute: {e}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// Eight processes, each calibrating into the same file again and again and reading it between
/// their writes, while the others write: every read finds a whole, valid file, and one valid
/// file is left, with no temporary file beside it.
#[test]
fn eight_processes_calibrating_at_once_leave_one_valid_file() {
    let dir = scratch("storm");
    let file = dir.join("calibration.json");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(&exe)
                .args(["calibrate_and_read_child", "--include-ignored", "--nocapture", "--test-threads=1"])
                .env("B3ACCEL_CALIBRATION", &file)
                .env_remove("CI")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "a calibrating process failed:\n{text}");
        assert!(text.contains("1 passed"), "the child test did not run:\n{text}");
        assert!(text.contains(" whole reads"), "{text}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    is_valid(&text).unwrap();
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["calibration.json"], "temporary files left behind");
    remove_scratch(&dir);
}

#[test]
#[ignore = "run by eight_processes_calibrating_at_once_leave_one_valid_file, eight at a time"]
fn calibrate_and_read_child() {
    let file = PathBuf::from(std::env::var_os("B3ACCEL_CALIBRATION").expect("the parent names the file"));
    let mut reads = 0;
    let mut rounds = CHILD_ROUNDS;
    let mut round = 0;
    while round < rounds {
        let cal = b3accel::auto::recalibrate();
        if !cal.gpus.is_empty() {
            // A machine with a hardware GPU measures it each time (seconds): a few rounds do.
            rounds = rounds.min(3);
        }
        assert!(cal.source.contains("cached in"), "round {round}: not written: {}", cal.source);
        // Another process may have replaced it since; whatever is there must be whole.
        let text = std::fs::read_to_string(&file).unwrap();
        is_valid(&text).unwrap_or_else(|e| panic!("round {round}: a reader saw a broken file: {e}"));
        reads += 1;
        round += 1;
    }
    println!("{rounds} writes, {reads} whole reads");
}

/// Runs `b3accel` on a 5 MiB file (large enough for Auto to consult its calibration) with the
/// calibration file `cal`, and checks the hash line.
fn hash_with_calibration(dir: &Path, cal: &Path) {
    let data: Vec<u8> = (0..(5 << 20) + 3).map(|i: usize| (i % 241) as u8).collect();
    std::fs::write(dir.join("big"), &data).unwrap();
    let out = Command::new(B3ACCEL).arg("big").current_dir(dir).env("B3ACCEL_CALIBRATION", cal).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}  big\n", blake3::hash(&data).to_hex()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// b3accel's own files that no longer serve (empty, another build) are ignored and replaced by a
/// valid calibration; a file that is not b3accel's is ignored and left exactly as it was.
#[test]
fn garbage_foreign_and_torn_files_are_ignored_and_only_ours_replaced() {
    let dir = scratch("garbage");
    let cal = dir.join("calibration.json");
    let foreign_format = r#"{"format": 99, "fingerprint": "x", "cpu": {}, "gpus": []}"#.to_string();
    let foreign_build = serde_json::json!({
        "format": 1,
        "fingerprint": "b3accel 0.0.0 | another machine",
        "cpu": {"device": "cpu", "name": "x", "points": []},
        "gpus": [{"device": "opencl:0", "name": "a GPU from elsewhere", "points": [[4194304, 1e15]]}],
    })
    .to_string();
    let ours: Vec<(&str, Vec<u8>)> = vec![("empty", Vec::new()), ("another build", foreign_build.into_bytes())];
    for (what, bytes) in ours {
        std::fs::write(&cal, &bytes).unwrap();
        hash_with_calibration(&dir, &cal);
        // Nothing known: the run hashed on the CPU and left a process recording the devices.
        wait_for_record(&cal);
        // The next run calibrates, where it has a hardware GPU to measure.
        hash_with_calibration(&dir, &cal);
        let text = std::fs::read_to_string(&cal).unwrap();
        let v = is_record(&text).unwrap_or_else(|e| panic!("{what}: not replaced by a valid record: {e}"));
        let hardware =
            built().iter().flat_map(|k| v["listed"][k].as_array().unwrap().clone()).any(|d| d["hardware"] == true);
        if hardware {
            is_valid(&text).unwrap_or_else(|e| panic!("{what}: not replaced by a valid calibration: {e}"));
        }
    }
    let not_ours: Vec<(&str, Vec<u8>)> = vec![
        ("binary garbage", (0..5000u32).map(|i| (i * 37 % 256) as u8).collect()),
        ("torn JSON", br#"{"format": 1, "fingerprint": "b3accel"#.to_vec()),
        ("JSON of another shape", b"[1, 2, 3]".to_vec()),
        ("another program's JSON", foreign_format.into_bytes()),
        ("far too large", vec![b' '; 3 << 20]),
    ];
    for (what, bytes) in not_ours {
        std::fs::write(&cal, &bytes).unwrap();
        hash_with_calibration(&dir, &cal);
        assert!(std::fs::read(&cal).unwrap() == bytes, "{what}: a file that is not b3accel's was changed");
    }
    // A directory where the file should be: nothing can be cached, hashing still works.
    let blocked = dir.join("blocked");
    std::fs::create_dir_all(blocked.join("inner")).unwrap();
    hash_with_calibration(&dir, &blocked);
    remove_scratch(&dir);
}

/// Runs `b3accel` on `dir/big` (5 MiB and 3 bytes: large enough for Auto to calibrate) with
/// `B3ACCEL_CALIBRATION` set to `cal`, and checks the line; a run that has not ended in a minute
/// (blocked on a FIFO) fails.
#[cfg(unix)]
fn hash_promptly_with_calibration(dir: &Path, cal: &std::ffi::OsStr) {
    let data: Vec<u8> = (0..(5 << 20) + 3).map(|i: usize| (i % 241) as u8).collect();
    std::fs::write(dir.join("big"), &data).unwrap();
    let mut child = Command::new(B3ACCEL)
        .arg("big")
        .current_dir(dir)
        .env("B3ACCEL_CALIBRATION", cal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("B3ACCEL_CALIBRATION={cal:?}: still running after a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}  big\n", blake3::hash(&data).to_hex()), "{cal:?}");
    assert!(out.status.success(), "{cal:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A calibration path that names anything but a regular file (a symbolic link to the user's
/// file, to nothing or to a device, a FIFO, a device, a directory) is neither read through
/// blocking nor replaced nor written through; `off` turns the cache off (no file named `off`).
#[cfg(unix)]
#[test]
fn a_calibration_path_that_is_not_a_regular_file_is_left_alone() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let dir = scratch("not-regular");
    let users = dir.join("users-file");
    std::fs::write(&users, b"the user's own words").unwrap();
    symlink(&users, dir.join("to-file")).unwrap();
    symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
    symlink("/dev/null", dir.join("to-device")).unwrap();
    let fifo = std::ffi::CString::new(dir.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::create_dir(dir.join("dir")).unwrap();
    let kinds = |dir: &Path| {
        let mut v: Vec<(std::ffi::OsString, std::fs::FileType)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name() != "big")
            .map(|e| (e.file_name(), e.file_type().unwrap()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let before = kinds(&dir);
    for name in ["to-file", "dangling", "to-device", "fifo", "dir"] {
        hash_promptly_with_calibration(&dir, dir.join(name).as_os_str());
        assert_eq!(kinds(&dir), before, "{name}: the directory changed");
    }
    assert_eq!(std::fs::read(&users).unwrap(), b"the user's own words");
    assert!(!dir.join("nowhere").exists());
    hash_promptly_with_calibration(&dir, "/dev/null".as_ref());
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    for off in ["off", "OFF"] {
        hash_promptly_with_calibration(&dir, off.as_ref());
        assert!(!dir.join(off).exists(), "B3ACCEL_CALIBRATION={off} made a file");
    }
    remove_scratch(&dir);
}

/// `--backend all` takes the hardware GPUs from a valid calibration cache instead of listing
/// every driver's devices (0.4-0.5 s on the GPU machine): a cache naming a GPU this machine does
/// not have shows in the `-v` note, and the input is still hashed right (a GPU that does not open
/// never joins; the CPU hashes it all). Without a usable cache, `all` lists as before.
#[test]
fn all_takes_its_gpus_from_the_calibration_cache() {
    let dir = scratch("all");
    let cal = dir.join("calibration.json");
    // This build's own calibration file (made on this machine), with a GPU added to it.
    let out = Command::new(B3ACCEL).args(["bench", "--calibrate"]).env("B3ACCEL_CALIBRATION", &cal).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    if !cfg!(feature = "opencl") {
        return;
    }
    let absent = serde_json::json!({
        "device": "opencl:97", "name": "a GPU that is not here", "points": [[4194304, 1.0]], "open_seconds": 0.5
    });
    v["measured"]["gpus"].as_array_mut().unwrap().push(absent);
    let listed = serde_json::json!({"device": "opencl:97", "name": "a GPU that is not here", "hardware": true});
    v["listed"]["opencl"].as_array_mut().unwrap().push(listed);
    std::fs::write(&cal, v.to_string()).unwrap();
    let data: Vec<u8> = (0..(70 << 20) + 5).map(|i: usize| (i % 239) as u8).collect();
    std::fs::write(dir.join("f"), &data).unwrap();
    let run = |cal: &Path| {
        let out = Command::new(B3ACCEL)
            .args(["-v", "--backend", "all", "f"])
            .current_dir(&dir)
            .env("B3ACCEL_CALIBRATION", cal)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}  f\n", blake3::hash(&data).to_hex()));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let note = run(&cal);
    assert!(note.contains("opencl:97"), "the cached GPU is not in the note: {note}");
    let listed = run(&dir.join("no-such-dir").join("calibration.json"));
    assert!(!listed.contains("opencl:97"), "listed devices name the cached GPU: {listed}");
    remove_scratch(&dir);
}

/// A list call that the CPU is expected to finish before a GPU could open (its rate from the
/// calibration cache) starts no GPU; one it is not expected to finish that soon starts them in
/// the background, as before. Run in child processes, each with its own calibration file: one
/// that makes the CPU a million times faster than any real one, one that makes it crawl.
#[test]
fn a_list_starts_no_gpu_for_a_call_the_cpu_finishes_first() {
    let dir = scratch("start");
    let out = Command::new(B3ACCEL)
        .args(["bench", "--calibrate"])
        .env("B3ACCEL_CALIBRATION", dir.join("made.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let made: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("made.json")).unwrap()).unwrap();
    let exe = std::env::current_exe().unwrap();
    for (what, rate, expect_opening) in [("fast", 1e15, false), ("slow", 1e3, true)] {
        let mut cal = made.clone();
        cal["measured"]["cpu"]["points"] = serde_json::json!([[4194304, rate], [536870912, rate]]);
        let file = dir.join(format!("{what}.json"));
        std::fs::write(&file, cal.to_string()).unwrap();
        let out = Command::new(&exe)
            .args(["list_start_child", "--include-ignored", "--nocapture", "--test-threads=1"])
            .env("B3ACCEL_CALIBRATION", &file)
            .env("LIST_START_EXPECT_OPENING", expect_opening.to_string())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what} CPU:\n{text}");
        assert!(text.contains("1 passed"), "the child test did not run:\n{text}");
        if !text.contains("opening checked") {
            assert!(std::env::var("CI").is_err(), "no GPU device to check with, under CI:\n{text}");
            eprintln!("NO GPU DEVICE: the list's start rule was not checked");
        }
    }
    remove_scratch(&dir);
}

#[test]
#[ignore = "run by a_list_starts_no_gpu_for_a_call_the_cpu_finishes_first, with its calibration file"]
fn list_start_child() {
    use b3accel::spread::Spread;
    use b3accel::{Device, Mode};
    let Some(gpu) = b3accel::devices().into_iter().map(|d| d.device).find(|&d| d != Device::Cpu) else {
        return;
    };
    let started: bool = std::env::var("LIST_START_EXPECT_OPENING").unwrap().parse().unwrap();
    let list = Spread::new(&[Device::Cpu, gpu]).unwrap().with_min_bytes(0).with_pieces(16 << 10, 16 << 10);
    let hash = |len: usize| {
        let data: Vec<u8> = (0..len).map(|i: usize| (i % 233) as u8).collect();
        let mut out = [0u8; 32];
        b3accel::xof_reader_with(&list, &Mode::Hash, &data).unwrap().fill(&mut out);
        assert_eq!(out, *blake3::hash(&data).as_bytes());
    };
    // The first call decides whether the GPU starts opening (by the calibrated CPU rate); wait
    // for it to be open, if it was started.
    hash((1 << 20) + 9);
    b3accel::settle();
    // A second call of 1024 small pieces: an open GPU takes some of them (as in
    // tests/spread.rs); one never started takes none. The list now knows the CPU's real rate,
    // which is far over what 16 MiB needs to stay under the GPU's opening time.
    hash((16 << 20) + 3);
    let gpu_bytes = list.last_shares().iter().find(|s| s.0 == gpu).map_or(0, |s| s.1);
    assert_eq!(gpu_bytes > 0, started, "{gpu} hashed {gpu_bytes} bytes: {:?}", list.last_shares());
    b3accel::settle();
    println!("opening checked with {gpu}");
}

/// Runs `b3accel ARGS` in `dir` with the cache file `cal`; checks that it did not crash.
fn b3accel_with(dir: &Path, cal: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(B3ACCEL).args(args).current_dir(dir).env("B3ACCEL_CALIBRATION", cal).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 2), "{args:?} crashed: {out:?}");
    out
}

/// A device of the first GPU backend built in that lists one (by the library, in this process),
/// as `--backend` names it.
fn some_gpu() -> Option<String> {
    b3accel::backend_status().into_iter().find_map(|s| Some(s.devices.ok()?.first()?.device.to_string()))
}

/// The cache file at `path` once it records the devices of the built backends that `list` names
/// (written by the process a list run starts to check them), waiting up to a minute for it.
fn wait_for_named(path: &Path, list: &str) {
    let start = std::time::Instant::now();
    let kinds: Vec<&str> = built().into_iter().filter(|k| list.split(',').any(|d| d.starts_with(k))).collect();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if kinds.iter().all(|k| v["listed"][k].is_array()) {
            return;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "{list}: not recorded after a minute: {text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A device list that names a device this machine or build lacks fails with the library's
/// words for it (exit status 1) once the cache file records the devices (checked before any
/// input). On a fresh cache a list that starts with the CPU says (with `-v`) the names are not
/// checked in this run and succeeds with the right lines (no input waits for drivers it does not need), and records
/// the backends the list names after it; one that starts with the missing GPU fails on opening
/// it. Run again with that record.
#[test]
fn a_list_naming_a_device_that_is_not_there_is_unchecked_on_a_fresh_cache_and_fails_once_recorded() {
    let dir = scratch("bad-names");
    let data: Vec<u8> = (0..(5 << 20) + 11).map(|i: usize| (i % 239) as u8).collect();
    std::fs::write(dir.join("f"), &data).unwrap();
    let line = format!("{}  f\n", blake3::hash(&data).to_hex());
    for (n, bad) in ["cpu,opencl:999", "cpu,wgpu:7", "wgpu:7,cpu", "cpu,wgpu:99,opencl:999"].into_iter().enumerate() {
        let cal = dir.join(format!("cal-{n}.json"));
        let named = |l: &str| {
            bad.split(',').skip_while(|d| *d == "cpu").any(|d| l.starts_with(&format!("b3accel: device {d}")))
        };
        let warmed = |what: &str| {
            let out = b3accel_with(&dir, &cal, &["--backend", bad, "f"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{bad}, {what}: {stderr}");
            assert!(stderr.lines().any(named), "{bad}, {what}: {stderr}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.is_empty() || stdout == line, "{bad}, {what}: {stdout}");
        };
        let out = b3accel_with(&dir, &cal, &["-v", "--backend", bad, "f"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let unchecked =
            |l: &str| l.contains("not checked in this run") && bad.split(',').all(|d| d == "cpu" || l.contains(d));
        if bad.starts_with("cpu") {
            // The CPU hashes; the GPUs named after it are not waited for.
            assert_eq!(out.status.code(), Some(0), "{bad}, fresh cache: {stderr}");
            assert!(stderr.lines().any(unchecked), "{bad}, fresh cache: succeeded without saying so: {stderr}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), line, "{bad}, fresh cache");
        } else {
            // The list's first device takes small inputs: opening it is the error.
            assert_eq!(out.status.code(), Some(1), "{bad}, fresh cache: {stderr}");
            assert!(stderr.lines().any(named), "{bad}, fresh cache: {stderr}");
            assert!(!stderr.lines().any(unchecked), "{bad}, fresh cache: {stderr}");
        }
        wait_for_named(&cal, bad);
        warmed("the backends it names recorded by the run before");
        // Auto records every backend's devices (in a process it leaves behind).
        let out = b3accel_with(&dir, &cal, &["f"]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), line);
        wait_for_record(&cal);
        warmed("every backend recorded");
        // The devices subcommand refuses it alike.
        let out = b3accel_with(&dir, &cal, &["devices", "--backend", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", String::from_utf8_lossy(&out.stderr));
    }
    remove_scratch(&dir);
}

/// A device list records what it lists (only the backends it names), as Auto does; a later list
/// run takes the devices from the record and asks no driver: a device added to the record by hand
/// is taken as it is (a listing would have found it absent), and the file is not rewritten.
#[test]
fn a_list_records_its_devices_and_a_later_list_lists_nothing() {
    let Some(gpu) = some_gpu() else {
        assert!(std::env::var("CI").is_err(), "no GPU device to list under CI");
        eprintln!("NO GPU DEVICE: the list's record was not checked");
        return;
    };
    let dir = scratch("list-record");
    let cal = dir.join("cal.json");
    let data: Vec<u8> = (0..(3 << 20) + 5).map(|i: usize| (i % 233) as u8).collect();
    std::fs::write(dir.join("f"), &data).unwrap();
    let line = format!("{}  f\n", blake3::hash(&data).to_hex());
    let list = format!("cpu,{gpu}");
    let kind = gpu.split(':').next().unwrap();
    let out = b3accel_with(&dir, &cal, &["--backend", &list, "f"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), line);
    // Its check recorded what it listed: this backend, and no other.
    wait_for_named(&cal, &list);
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    let recorded = v["listed"][kind].as_array().unwrap_or_else(|| panic!("{kind} not recorded: {v}"));
    assert!(recorded.iter().any(|d| d["device"] == gpu.as_str()), "{gpu} not recorded: {v}");
    for other in built().into_iter().filter(|k| *k != kind) {
        assert!(v["listed"][other].is_null(), "{other} was listed for a list that does not name it: {v}");
    }
    // A device only the record knows of.
    let ghost = format!("{kind}:97");
    v["listed"][kind]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"device": ghost, "name": "ghost", "hardware": false}));
    let text = serde_json::to_string_pretty(&v).unwrap();
    std::fs::write(&cal, &text).unwrap();
    let ghost_list = format!("cpu,{gpu},{ghost}");
    for args in
        [&["--backend", &list, "f"][..], &["--backend", &ghost_list, "f"], &["-v", "--backend", &ghost_list, "f"]]
    {
        let out = b3accel_with(&dir, &cal, args);
        assert!(out.status.success(), "{args:?}: listed again? {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), line, "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("not checked in this run"), "{args:?}");
        assert_eq!(std::fs::read_to_string(&cal).unwrap(), text, "{args:?}: the record was rewritten");
    }
    remove_scratch(&dir);
}

/// `auto` on a fresh cache hashes at once on the CPU, with right lines, and leaves a process
/// that records every backend's devices; the next run takes them from the record.
#[test]
fn auto_on_a_fresh_cache_hashes_on_the_cpu_and_records_the_devices() {
    let dir = scratch("auto-fresh");
    let cal = dir.join("cal.json");
    let data: Vec<u8> = (0..(6 << 20) + 1).map(|i: usize| (i % 227) as u8).collect();
    std::fs::write(dir.join("f"), &data).unwrap();
    let line = format!("{}  f\n", blake3::hash(&data).to_hex());
    let out = b3accel_with(&dir, &cal, &["-vv", "f", "-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{line}{}  -\n", blake3::hash(b"").to_hex()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !built().is_empty() {
        assert!(stderr.contains("f: hashed on cpu: this machine's devices are not known yet"), "{stderr}");
    }
    let v = wait_for_record(&cal);
    let out = b3accel_with(&dir, &cal, &["-vv", "f"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), line);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not known yet"), "{v}");
    remove_scratch(&dir);
}

/// Removes a test's directory. A run on a fresh cache records the devices it listed from a child
/// at the lowest priority, after its output: that child may still be writing there for a while.
fn remove_scratch(dir: &Path) {
    let removed = (0..100).any(|_| {
        std::fs::remove_dir_all(dir).is_ok() || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            false
        }
    });
    assert!(removed, "{} could not be removed", dir.display());
}
