//! Every device at once (`b3accel::spread`): the CPU and every GPU this machine has (PoCL and
//! lavapipe/llvmpipe in CI) hash one input together, bit-exact with upstream, whatever the cut.

mod common;

use b3accel::spread::{Joining, Spread};
use b3accel::{xof_reader_with, Device, Hasher, Mode};
use common::pattern;
use std::sync::Arc;

/// The CPU and every GPU device found, each opened now so that it takes part from the first
/// piece (a device still opening joins later, which would make the shares below a race).
fn all_devices() -> Vec<Device> {
    let mut list = vec![Device::Cpu];
    for t in common::gpu_targets() {
        list.push(t.backend.info().device);
    }
    list
}

fn modes() -> [Mode; 3] {
    [Mode::Hash, Mode::Keyed(*b"whats the Elvish word for friend"), Mode::DeriveKey("b3accel spread tests".into())]
}

fn upstream(mode: &Mode, data: &[u8], seek: u64, len: usize) -> Vec<u8> {
    let mut h = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    };
    h.update(data);
    let mut r = h.finalize_xof();
    r.set_position(seek);
    let mut out = vec![0u8; len];
    r.fill(&mut out);
    out
}

/// Small pieces (8 chunks, down to 2), and every input spread: the cut, the merge and the tail of
/// each input at the awkward sizes, on every device at once.
#[test]
fn every_device_at_once_matches_upstream_at_awkward_sizes() {
    let devices = all_devices();
    let spread =
        Spread::new(&devices).unwrap().with_joining(Joining::Always).with_min_bytes(0).with_pieces(8 << 10, 2 << 10);
    assert_eq!(spread.devices(), devices);
    let k = 1024;
    for len in [0, 1, 1023, 1024, 1025, 2048, 2049, 7 * k, 8 * k, 8 * k + 1, 31 * k + 5, 64 * k, 100 * k + 3, 257 * k] {
        let data = pattern(len);
        for mode in modes() {
            for (seek, out_len) in [(0u64, 32usize), (1000, 131)] {
                let mut got = vec![0u8; out_len];
                let mut r = xof_reader_with(&spread, &mode, &data).unwrap();
                r.set_position(seek);
                r.fill(&mut got);
                assert_eq!(got, upstream(&mode, &data, seek, out_len), "{len} bytes, {mode:?}, seek {seek}");
            }
        }
    }
}

/// With many more pieces than devices, every device hashes some of them, and the shares add up
/// to the input's full chunks.
#[test]
fn every_device_takes_a_share() {
    let devices = all_devices();
    let spread =
        Spread::new(&devices).unwrap().with_joining(Joining::Always).with_min_bytes(0).with_pieces(16 << 10, 16 << 10);
    // 32 MiB + 1 byte: 2048 pieces of 16 chunks, and a last chunk of 1 byte. (With 4 MiB, the
    // 16 cores of the GPU machine hashed every piece before a GPU's first pull.)
    let data = pattern((32 << 20) + 1);
    let mut out = [0u8; 32];
    xof_reader_with(&spread, &Mode::Hash, &data).unwrap().fill(&mut out);
    assert_eq!(out, *blake3::hash(&data).as_bytes());
    let shares = spread.last_shares();
    if devices.len() == 1 {
        // A build without GPU backends: a list of one device hashes all of it alone.
        assert_eq!(shares, [(Device::Cpu, 32 << 20)], "a one-device list spread");
        return;
    }
    assert_eq!(shares.iter().map(|s| s.0).collect::<Vec<_>>(), devices);
    assert_eq!(shares.iter().map(|s| s.1).sum::<u64>(), 32 << 20, "{shares:?}");
    // The CPU is far faster than a software GPU here, so a GPU may hash few pieces; each must
    // have taken at least one (it is open and pulls from the queue from the start).
    for (d, bytes) in &shares {
        assert!(*bytes > 0, "{d} hashed nothing: {shares:?}");
    }
}

/// An incremental hasher over the devices: any split of the input gives upstream's hash.
#[test]
fn hasher_over_every_device() {
    let spread = Arc::new(
        Spread::new(&all_devices())
            .unwrap()
            .with_joining(Joining::Always)
            .with_min_bytes(0)
            .with_pieces(4 << 10, 1 << 10),
    );
    let data = pattern(300 * 1024 + 77);
    for mode in modes() {
        let mut h = Hasher::with_backend(spread.clone(), &mode);
        for piece in data.chunks(65_537) {
            h.update(piece).unwrap();
        }
        let mut out = [0u8; 32];
        h.finalize_xof().unwrap().fill(&mut out);
        assert_eq!(out[..], upstream(&mode, &data, 0, 32)[..], "{mode:?}");
    }
}

/// Lists that name no device, `auto`, or a device that is not there are errors; a device named
/// twice is used once.
#[test]
fn bad_lists_are_errors() {
    assert!(Spread::new(&[]).is_err());
    assert!(Spread::new(&[Device::Auto]).is_err());
    assert!(Spread::new(&[Device::Wgpu(999), Device::Cpu]).is_err());
    let s = Spread::new(&[Device::Cpu, Device::Cpu]).unwrap();
    assert_eq!(s.devices(), [Device::Cpu]);
    let data = pattern(5000);
    assert_eq!(b3accel::hash_on_devices(&[Device::Cpu], &data).unwrap(), blake3::hash(&data));
}

/// Under the default rule a device joins only where measurements say it helps: an open device
/// with no rate takes part to be measured (a first call that pays its one-time costs, then one
/// that counts), and the next call of that size runs on the first device alone, so that the
/// list knows both ways.
#[test]
fn a_measured_list_tries_a_device_then_measures_the_first_alone() {
    let devices = all_devices();
    let Some(&gpu) = devices.get(1) else {
        eprintln!("no GPU device: nothing to join a list");
        return;
    };
    let list = Spread::new(&[Device::Cpu, gpu]).unwrap().with_min_bytes(0).with_pieces(64 << 10, 16 << 10);
    let data = pattern((4 << 20) + 5);
    let hash = || {
        let mut out = [0u8; 32];
        xof_reader_with(&list, &Mode::Hash, &data).unwrap().fill(&mut out);
        assert_eq!(out, *blake3::hash(&data).as_bytes());
        list.last_call().expect("the call reached the list's minimum")
    };
    let first = hash();
    assert!(first.reasons[0].1.contains("to be measured"), "{first:?}");
    let warm = hash();
    assert!(warm.reasons[0].1.contains("took part, measured at"), "{warm:?}");
    let second = hash();
    assert!(second.reasons[0].1.contains("alone is being measured"), "{second:?}");
    assert_eq!(second.shares[1], (gpu, 0));
    assert_eq!(second.call, first.call + 2);
    for _ in 0..4 {
        let later = hash();
        assert_eq!(later.shares.iter().map(|s| s.1).sum::<u64>(), 4 << 20, "{later:?}");
    }
}

/// A list whose other devices are not open hashes on its first device alone: nothing measured
/// says a GPU would pay for its opening, so none is started.
#[test]
fn a_measured_list_opens_nothing_without_measurements() {
    let devices = all_devices();
    let Some(&gpu) = devices.get(1) else {
        eprintln!("no GPU device: nothing to open");
        return;
    };
    // A child process: this one has opened its devices for the other tests.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "unopened_list_child", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env("B3ACCEL_CACHE", "off")
        .env("UNOPENED_LIST_GPU", gpu.to_string())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[test]
#[ignore = "run by a_measured_list_opens_nothing_without_measurements, in a process with no device open"]
fn unopened_list_child() {
    let gpu: Device = std::env::var("UNOPENED_LIST_GPU").unwrap().parse().unwrap();
    let data = pattern((64 << 20) + 3);
    assert_eq!(b3accel::hash_on_devices(&[Device::Cpu, gpu], &data).unwrap(), blake3::hash(&data));
    assert!(!b3accel::opening_in_background(), "{gpu} was started");
    let list = Spread::new(&[Device::Cpu, gpu]).unwrap();
    let mut out = [0u8; 32];
    xof_reader_with(&list, &Mode::Hash, &data).unwrap().fill(&mut out);
    let report = list.last_call().unwrap();
    assert_eq!(report.shares, [(Device::Cpu, 64 << 20), (gpu, 0)]);
    assert!(report.reasons[0].1.starts_with("not opened"), "{report:?}");
    assert!(!b3accel::opening_in_background(), "{gpu} was started");
}
