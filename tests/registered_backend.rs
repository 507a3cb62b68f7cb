//! A backend defined here, outside the crate, and registered through the table of backends
//! (`b3accel::register_backend`): `devices()` lists it, `"counted:N".parse::<Device>()` names
//! it, `hash_on` and device lists hash on it and give upstream's hash, with no file of the
//! crate naming it.

#[path = "support/counted_backend.rs"]
mod counted_backend;

use b3accel::{BackendEntry, BackendId, BackendKind, Device, Error};
use counted_backend::{list, open, CALLS, DEVICES};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// The test backend's id, registered once for the whole test program.
fn counted() -> BackendId {
    static ID: OnceLock<BackendId> = OnceLock::new();
    *ID.get_or_init(|| b3accel::register_backend(BackendEntry::gpu("counted", list, open)).expect("registers"))
}

#[test]
fn the_table_has_it_after_the_built_in_backends() {
    let id = counted();
    let table = b3accel::backends();
    let names: Vec<&str> = table.iter().map(|b| b.name()).collect();
    assert_eq!(names, ["cpu", "opencl", "wgpu", "counted"]);
    let entry = table.last().unwrap();
    assert!(entry.is_gpu() && entry.is_built() && entry.feature().is_none());
    assert_eq!(entry.id(), id);
    assert_eq!(b3accel::device_names().last().unwrap(), "counted[:N]");
}

#[test]
fn devices_lists_it_and_backend_status_reports_it() {
    let id = counted();
    let listed: Vec<Device> = b3accel::devices().iter().map(|d| d.device).collect();
    assert_eq!(listed[0], Device::Cpu);
    assert_eq!(listed[listed.len() - DEVICES..], [id.device(0), id.device(1)]);
    let status = b3accel::backend_status().into_iter().find(|s| s.backend == BackendKind::Registered(id)).unwrap();
    assert_eq!(status.devices.unwrap().len(), DEVICES);
    let verdicts = b3accel::check_devices(&[id.device(1), id.device(DEVICES)]);
    assert!(verdicts[0].is_ok());
    assert!(matches!(verdicts[1], Err(Error::NoSuchDevice { available: DEVICES, .. })), "{:?}", verdicts[1]);
}

#[test]
fn a_name_picks_it() {
    let id = counted();
    let one: Device = "counted:1".parse().unwrap();
    assert_eq!(one, Device::Registered(id, 1));
    assert_eq!(" COUNTED ".parse::<Device>().unwrap(), id.device(0));
    assert_eq!(one.to_string(), "counted:1");
    assert_eq!((one.backend_name(), one.index(), one.is_gpu()), ("counted", Some(1), true));
    assert_eq!(one.backend_id(), Some(id));
    let err = "tpu".parse::<Device>().unwrap_err().to_string();
    assert!(err.ends_with("expected auto, cpu, opencl[:N], wgpu[:N] or counted[:N]"), "{err}");
    assert!("counted:x".parse::<Device>().is_err());
}

#[test]
fn hashing_on_it_gives_upstreams_hash() {
    let id = counted();
    let key = *b"whats the Elvish word for friend";
    for len in [0, 1, 1024, 1025, 100 * 1024 + 7, 3 << 20] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let before = CALLS.load(Ordering::Relaxed);
        for index in 0..DEVICES {
            let device = id.device(index);
            assert_eq!(b3accel::hash_on(device, &data).unwrap(), blake3::hash(&data), "{device}, {len} bytes");
            assert_eq!(b3accel::keyed_hash_on(device, &key, &data).unwrap(), blake3::keyed_hash(&key, &data));
        }
        if len > 64 * 1024 {
            assert!(CALLS.load(Ordering::Relaxed) > before, "{len} bytes did not reach the counted backend");
        }
    }
}

#[test]
fn a_device_list_takes_it() {
    let id = counted();
    let data: Vec<u8> = (0..(5 << 20)).map(|i| (i % 251) as u8).collect();
    let list = [id.device(1), Device::Cpu];
    let before = CALLS.load(Ordering::Relaxed);
    assert_eq!(b3accel::hash_on_devices(&list, &data).unwrap(), blake3::hash(&data));
    // The list's first device always opens and hashes.
    assert!(CALLS.load(Ordering::Relaxed) > before);
}

#[test]
fn a_device_it_lacks_is_an_error_not_a_panic() {
    let id = counted();
    match b3accel::hash_on(id.device(DEVICES), b"abc") {
        Err(Error::NoSuchDevice { available: DEVICES, .. }) => {}
        other => panic!("expected no such device, got {other:?}"),
    }
}

#[test]
fn registering_a_taken_or_malformed_name_is_refused() {
    counted();
    for name in ["counted", "cpu", "wgpu", "opencl", "auto", "all", "", "Upper", "9lives", "sp ace", "a:b"] {
        let err = b3accel::register_backend(BackendEntry::gpu(name, list, open)).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{name}: {err}");
        assert!(err.to_string().contains("cannot register"), "{name}: {err}");
    }
    let long: &'static str = Box::leak("x".repeat(33).into_boxed_str());
    assert!(b3accel::register_backend(BackendEntry::cpu(long, list, open)).is_err());
}
