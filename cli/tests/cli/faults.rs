//! A GPU that fails mid-run (out of memory, a lost device), injected with `B3ACCEL_FAULT`
//! (`src/dispatch/fault.rs`) into every GPU device this machine has: `Device::Auto` runs the
//! failed call again on the CPU and returns the right bytes; a device asked for by name returns
//! the error; the command line prints no line for an input it failed to hash and exits 1; nothing
//! panics.
//!
//! The knob is read once per process, so each case runs in a child process (this test binary,
//! running one of its ignored `*_child` tests). On a machine without a hardware GPU, Auto never
//! chooses a GPU by itself: the parent gives the child a calibration file that names the injected
//! device as the fastest for large inputs, made by `b3accel bench --calibrate` (so that it
//! carries this build's fingerprint) and then edited. That is exactly what Auto acts on where a
//! hardware GPU was measured fastest; only the measurement is made up.

use crate::common;

use b3accel::{auto, BackendKind, Device, Error, Hasher, Mode};
use common::{upstream_xof, Scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

const B3ACCEL: &str = env!("CARGO_BIN_EXE_b3accel");
const KEY: [u8; 32] = *b"whats the Elvish word for friend";

/// Every GPU device of this build and machine (none, loudly, or a failure under CI=true, where a
/// built backend has none).
fn gpu_devices() -> Vec<Device> {
    let mut out = Vec::new();
    for status in b3accel::backend_status() {
        for i in common::device_indices(status.backend) {
            out.push(match status.backend {
                BackendKind::OpenCl => Device::OpenCl(i),
                _ => Device::Wgpu(i),
            });
        }
    }
    if out.is_empty() {
        common::expect::not_run("no GPU device: the fault-injection tests did NOT run");
    }
    out
}

/// A calibration file in `dir` under which Auto picks `device` for every input of 4 MiB or more.
fn calibration_naming(dir: &Path, device: Device) -> PathBuf {
    let path = dir.join(format!("calibration-{}.json", device.to_string().replace(':', "-")));
    let out = Command::new(B3ACCEL).args(["bench", "--calibrate"]).env("B3ACCEL_CALIBRATION", &path).output().unwrap();
    assert!(out.status.success(), "bench --calibrate: {}", String::from_utf8_lossy(&out.stderr));
    let mut cal: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let point = |size: u64| serde_json::json!([size, 1e15]);
    let name = "the injected device, calibrated fastest by this test";
    cal["measured"]["cpu"]["points"] = serde_json::json!([[4u64 << 20, 1e6], [512u64 << 20, 1e6]]);
    cal["measured"]["gpus"] = serde_json::json!([{
        "device": device.to_string(),
        "name": name,
        "points": [point(4 << 20), point(512 << 20)],
        "open_seconds": 0.0,
    }]);
    // A calibrated GPU is one the record lists as a hardware GPU.
    let kind = device.to_string().split(':').next().unwrap().to_string();
    let listed = cal["listed"][&kind].as_array_mut().expect("the backend's devices recorded");
    listed.retain(|d| d["device"] != device.to_string().as_str());
    listed.push(serde_json::json!({"device": device.to_string(), "name": name, "hardware": true}));
    std::fs::write(&path, serde_json::to_vec_pretty(&cal).unwrap()).unwrap();
    path
}

/// Runs this binary's ignored test `name` in a child process with `env`; returns its output
/// after checking that it ran and passed.
fn child(name: &str, env: &[(&str, String)]) -> String {
    // The test's full name in this program: this module's path without the crate's name.
    let full = format!("{}::{name}", module_path!().split_once("::").map_or("", |(_, m)| m));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", &full, "--include-ignored", "--nocapture", "--test-threads=1"]).env_remove("CI");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} with {env:?} failed:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run:\n{text}");
    text
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| ((i * 131 + i / 1024) % 251) as u8 ^ seed).collect()
}

fn env_device() -> Device {
    std::env::var("FAULT_TEST_DEVICE").expect("set by the parent").parse().unwrap()
}

#[test]
fn auto_falls_back_to_the_cpu_when_a_gpu_fails() {
    let dir = Scratch::new("faults-auto");
    for device in gpu_devices() {
        let cal = calibration_naming(dir.path(), device);
        // Failing from the first call, failing after two good ones, and never (the control).
        for (after, failure) in [(0, "oom"), (2, "lost"), (1_000_000, "lost")] {
            let env = [
                ("B3ACCEL_FAULT", format!("{device}:{after}:{failure}")),
                ("B3ACCEL_CALIBRATION", cal.display().to_string()),
                ("FAULT_TEST_DEVICE", device.to_string()),
                ("FAULT_TEST_FAILS", (after < 1_000_000).to_string()),
            ];
            let text = child("auto_fallback_child", &env);
            let said = text.lines().find(|l| l.contains("Auto went on") || l.contains("no call failed")).unwrap_or("");
            eprintln!("{device}, {failure} after {after} calls: {said}");
        }
    }
}

#[test]
#[ignore = "run by auto_falls_back_to_the_cpu_when_a_gpu_fails in a process with B3ACCEL_FAULT set"]
fn auto_fallback_child() {
    let device = env_device();
    let fails: bool = std::env::var("FAULT_TEST_FAILS").unwrap().parse().unwrap();
    assert_eq!(
        auto::choose(8 << 20).device,
        device,
        "the calibration names {device}: {}",
        auto::choose(8 << 20).reason
    );
    let big = data((8 << 20) + 1025, 1);
    for mode in [Mode::Hash, Mode::Keyed(KEY), Mode::DeriveKey("b3accel fault tests".into())] {
        let mut got = vec![0u8; 100];
        b3accel::hash_xof_on(Device::Auto, &mode, &big, 0, &mut got).unwrap();
        assert_eq!(got, upstream_xof(&mode, &big, 0, 100), "one-shot, {mode:?}");
        let mut h = Hasher::with_mode(Device::Auto, &mode).unwrap();
        for piece in big.chunks(5 << 20) {
            h.update(piece).unwrap();
        }
        h.finalize_xof().unwrap().fill(&mut got);
        assert_eq!(got, upstream_xof(&mode, &big, 0, 100), "Hasher, {mode:?}");
    }
    let leaves: Vec<[u8; 32]> = (0..(1u32 << 17) + 5).map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes()).collect();
    assert_eq!(*b3accel::merkle_root(Device::Auto, &leaves).unwrap().as_bytes(), common::merkle_root(&leaves));
    let msgs = data(64 * 70_000, 2);
    let hashes = b3accel::hash_many(Device::Auto, &msgs, 64).unwrap();
    for (m, h) in msgs.chunks(64).zip(&hashes) {
        assert_eq!(*h, blake3::hash(m));
    }
    let failed = auto::failed_devices();
    if fails {
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].0, device);
        assert!(failed[0].1.contains("B3ACCEL_FAULT"), "{}", failed[0].1);
        assert_eq!(auto::choose(8 << 20).device, Device::Cpu, "a failed GPU is not chosen again");
        println!("{device} failed and Auto went on on the CPU: {}", failed[0].1);
    } else {
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(auto::choose(8 << 20).device, device);
        println!("{device}: no call failed, and Auto kept choosing it");
    }
}

#[test]
fn a_device_asked_for_by_name_returns_the_error() {
    for (n, device) in gpu_devices().into_iter().enumerate() {
        let failure = if n % 2 == 0 { "oom" } else { "lost" };
        let env = [
            ("B3ACCEL_FAULT", format!("{device}:1:{failure}")),
            ("FAULT_TEST_DEVICE", device.to_string()),
            ("FAULT_TEST_KIND", failure.to_string()),
        ];
        child("named_device_child", &env);
    }
}

#[test]
#[ignore = "run by a_device_asked_for_by_name_returns_the_error in a process with B3ACCEL_FAULT set"]
fn named_device_child() {
    let device = env_device();
    let oom = std::env::var("FAULT_TEST_KIND").unwrap() == "oom";
    let check = |e: Error| match e {
        Error::OutOfMemory { device: d, detail } if oom => assert!(d == device && detail.contains("B3ACCEL_FAULT")),
        Error::Device { device: d, detail } if !oom => assert!(d == device && detail.starts_with("device lost")),
        other => panic!("{device}: expected the injected error, got {other:?}"),
    };
    let input = data(3 * 1024 + 5, 3);
    // The first call is a good one.
    assert_eq!(b3accel::hash_on(device, &input).unwrap(), blake3::hash(&input));
    check(b3accel::hash_on(device, &input).unwrap_err());
    check(b3accel::keyed_hash_on(device, &KEY, &input).unwrap_err());
    let mut h = Hasher::new_on(device).unwrap();
    check(h.update(&data(40 << 20, 4)).unwrap_err());
    assert!(matches!(h.update(b"more"), Err(Error::InvalidInput(_))), "a failed hasher says so until reset");
    let leaves = vec![[7u8; 32]; 1000];
    check(b3accel::merkle_root(device, &leaves).unwrap_err());
    check(b3accel::hash_many(device, &data(64 * 100, 5), 64).unwrap_err());
    // Other devices are not affected.
    assert_eq!(b3accel::hash_on(Device::Cpu, &input).unwrap(), blake3::hash(&input));
    assert_eq!(b3accel::hash_on(Device::Auto, &input).unwrap(), blake3::hash(&input));
}

#[test]
fn a_malformed_setting_is_an_error_not_a_silent_pass() {
    let Some(device) = gpu_devices().first().copied() else { return };
    for bad in [format!("{device}:x:oom"), format!("{device}:1:fire"), "cpu:1:oom".to_string()] {
        child("malformed_child", &[("B3ACCEL_FAULT", bad), ("FAULT_TEST_DEVICE", device.to_string())]);
    }
}

#[test]
#[ignore = "run by a_malformed_setting_is_an_error_not_a_silent_pass"]
fn malformed_child() {
    let device = env_device();
    match b3accel::backend(device) {
        Err(Error::InvalidInput(msg)) => assert!(msg.contains("B3ACCEL_FAULT"), "{msg}"),
        Err(other) => panic!("expected an error about B3ACCEL_FAULT, got {other}"),
        Ok(_) => panic!("{device} opened despite a malformed B3ACCEL_FAULT"),
    }
    let input = data(5 << 20, 6);
    assert_eq!(b3accel::hash_on(Device::Cpu, &input).unwrap(), blake3::hash(&input));
    assert_eq!(b3accel::hash_on(Device::Auto, &input).unwrap(), blake3::hash(&input));
}

fn b3accel(dir: &Path, args: &[&str], env: &[(&str, String)]) -> std::process::Output {
    let mut cmd = Command::new(B3ACCEL);
    cmd.args(args).current_dir(dir).env("B3ACCEL_CALIBRATION", dir.join("default-calibration.json"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && out.status.code().is_some_and(|c| c <= 2), "{args:?}: {stderr}");
    out
}

#[test]
fn the_command_line_prints_no_line_for_a_failed_input_and_exits_1() {
    let Some(device) = gpu_devices().first().copied() else { return };
    let dir = Scratch::new("faults-cli");
    let small: Vec<Vec<u8>> = (0..3).map(|i| data(3 * 1024 + i, i as u8)).collect();
    for (i, d) in small.iter().enumerate() {
        std::fs::write(dir.path().join(format!("s{i}")), d).unwrap();
    }
    let dev = device.to_string();
    let line = |i: usize, bytes: &[u8]| format!("{}  s{i}\n", blake3::hash(bytes).to_hex());

    // Named device, failing after one call: s0 is hashed, s1 and s2 are not (one thread, so in
    // order), and only s0's line is printed.
    for failure in ["oom", "lost"] {
        let env = [("B3ACCEL_FAULT", format!("{dev}:1:{failure}"))];
        let out = b3accel(dir.path(), &["--backend", &dev, "--num-threads", "1", "s0", "s1", "s2"], &env);
        assert_eq!(String::from_utf8_lossy(&out.stdout), line(0, &small[0]), "{failure}");
        assert_eq!(out.status.code(), Some(1), "{failure}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for name in ["s1", "s2"] {
            assert!(stderr.lines().any(|l| l.starts_with(&format!("b3accel: {name}: device {dev}"))), "{stderr}");
        }
        // --check: the failed inputs are not OK, and the status says so.
        let sums: String = (0..3).map(|i| line(i, &small[i])).collect();
        std::fs::write(dir.path().join("sums"), sums).unwrap();
        let out = b3accel(dir.path(), &["--backend", &dev, "--num-threads", "1", "-c", "sums"], &env);
        assert_eq!(out.status.code(), Some(1));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("s0: OK\n") && !stdout.contains("s1: OK") && !stdout.contains("s2: OK"), "{stdout}");
        // merkle, on the failing device: an error, exit 1.
        let out = b3accel(
            dir.path(),
            &["merkle", "--backend", &dev, "s0"],
            &[("B3ACCEL_FAULT", format!("{dev}:0:{failure}"))],
        );
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    }

    // Auto, with the calibration naming the device, which fails at once: every line is right, and
    // stderr is silent unless -v asks.
    let cal = calibration_naming(dir.path(), device);
    let big: Vec<Vec<u8>> = (0..2).map(|i| data((5 << 20) + 7 * i, 9 + i as u8)).collect();
    for (i, d) in big.iter().enumerate() {
        std::fs::write(dir.path().join(format!("b{i}")), d).unwrap();
    }
    let want: String = big.iter().enumerate().map(|(i, d)| format!("{}  b{i}\n", blake3::hash(d).to_hex())).collect();
    let env = [("B3ACCEL_FAULT", format!("{dev}:0:lost")), ("B3ACCEL_CALIBRATION", cal.display().to_string())];
    let out = b3accel(dir.path(), &["b0", "b1"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = b3accel(dir.path(), &["-vv", "--num-threads", "1", "b0", "b1"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("--backend auto: {dev} failed (device {dev}: device lost")), "{stderr}");
    assert!(stderr.contains(&format!("b0: hashed on cpu: {dev} failed")), "{stderr}");
    assert!(stderr.contains("b1: hashed on cpu: every hardware GPU of this machine failed"), "{stderr}");
    // The control: no fault, and Auto hashes on the device it was told is fastest.
    let env = [("B3ACCEL_CALIBRATION", cal.display().to_string())];
    let out = b3accel(dir.path(), &["-vv", "--num-threads", "1", "b0", "b1"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("b0: hashed on {dev}")));
}

/// A device list whose GPU fails mid-hash (from its first piece, or after three): the CPU
/// finishes the input, every hash is upstream's, and later calls go on without the GPU.
#[test]
fn a_list_finishes_on_the_others_when_a_gpu_fails() {
    for device in gpu_devices() {
        for (after, failure) in [(0, "oom"), (3, "lost")] {
            let env =
                [("B3ACCEL_FAULT", format!("{device}:{after}:{failure}")), ("FAULT_TEST_DEVICE", device.to_string())];
            child("list_fault_child", &env);
            eprintln!("cpu + {device}, {failure} after {after} pieces: every hash right");
        }
    }
}

#[test]
#[ignore = "run by a_list_finishes_on_the_others_when_a_gpu_fails in a process with B3ACCEL_FAULT set"]
fn list_fault_child() {
    use b3accel::spread::{Joining, Spread};
    let device = env_device();
    // Every device in every call, so that the GPU takes pieces until its fault comes.
    let spread = Spread::new(&[Device::Cpu, device])
        .unwrap()
        .with_joining(Joining::Always)
        .with_min_bytes(0)
        .with_pieces(64 << 10, 16 << 10);
    // The GPU is open before the first call, so that it takes pieces from the start.
    spread.warm_up();
    b3accel::settle();
    let big = data((8 << 20) + 1025, 3);
    for round in 0..4 {
        for mode in [Mode::Hash, Mode::Keyed(KEY)] {
            let mut got = vec![0u8; 64];
            b3accel::xof_reader_with(&spread, &mode, &big).unwrap().fill(&mut got);
            assert_eq!(got, upstream_xof(&mode, &big, 0, 64), "round {round}, {mode:?}");
        }
    }
    let shares = spread.last_shares();
    assert!(shares.iter().any(|&(d, bytes)| d == Device::Cpu && bytes > 0), "{shares:?}");
}
