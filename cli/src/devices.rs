//! `b3accel devices`: every backend compiled in, every device each one finds, and a self-test of
//! each device against the official BLAKE3 test vectors.

use crate::choice::{list_name, Choice};
use crate::output::Out;
use crate::{Fatal, Global, Outcome};
use b3accel::spread::{Joining, Spread};
use b3accel::{Backend, BackendKind, Device, DeviceInfo, Mode};
use std::process::ExitCode;

/// List every device this build can hash on, with a self-test of each
///
/// Prints each backend compiled into this build and each device it finds (kind, memory, compute
/// units), or why it has none, and hashes official BLAKE3 test vectors on every device in all
/// three modes. The exit status is 1 when any self-test fails. With `--backend DEVICE`, only
/// that device is listed and tested (exit status 1 when it is not there); with a list or `all`,
/// each of its devices, then all of them at once, the vectors cut into pieces they share. The
/// names in the first column are what `--backend` takes. With `-v`, each GPU device's optional
/// features follow its line: whether its driver has each one (timestamp queries, pipeline cache,
/// subgroups, 64-bit atomics) and which path b3accel takes on it; `--json` always has them.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// The official vectors' input: byte i is i % 251.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

const VECTOR_KEY: &[u8; 32] = b"whats the Elvish word for friend";
const VECTOR_CONTEXT: &str = "BLAKE3 2019-12-27 16:29:52 test vectors context";

/// (input length, hash, keyed hash, derived key): the first 32 bytes of the official test
/// vectors for these lengths. 1025 bytes is one full chunk handed to the device and a last chunk
/// of one byte; 102400 bytes is 100 chunks, several subtrees.
const VECTORS: [(usize, &str, &str, &str); 2] = [
    (
        1025,
        "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444",
        "357dc55de0c7e382c900fd6e320acc04146be01db6a8ce7210b7189bd664ea69",
        "effaa245f065fbf82ac186839a249707c3bddf6d3fdda22d1b95a3c970379bcb",
    ),
    (
        102400,
        "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085",
        "1c35d1a5811083fd7119f5d5d1ba027b4d01c0c6c49fb6ff2cf75393ea5db4a7",
        "4652cff7a3f385a6103b5c260fc1593e13c778dbe608efb092fe7ee69df6e9c6",
    ),
];

/// Hashes the vectors on `backend`; the first mismatch or error, if any.
fn self_test(backend: &dyn Backend) -> Result<(), String> {
    for (len, hash, keyed, derived) in VECTORS {
        let input = pattern(len);
        for (mode, name, expected) in [
            (Mode::Hash, "hash", hash),
            (Mode::Keyed(*VECTOR_KEY), "keyed_hash", keyed),
            (Mode::DeriveKey(VECTOR_CONTEXT.into()), "derive_key", derived),
        ] {
            let mut got = [0u8; 32];
            match b3accel::xof_reader_with(backend, &mode, &input) {
                Ok(mut reader) => reader.fill(&mut got),
                Err(e) => return Err(format!("{name} of the {len}-byte vector: {e}")),
            }
            let got = blake3::Hash::from_bytes(got);
            if got.to_hex().as_str() != expected {
                return Err(format!("{name} of the {len}-byte vector: expected {expected}, got {}", got.to_hex()));
            }
        }
    }
    Ok(())
}

/// [`self_test`] on `device`, opened (or why it does not open).
fn self_test_device(device: Device) -> Result<(), String> {
    let backend = b3accel::backend(device).map_err(|e| e.to_string())?;
    self_test(&*backend)
}

/// [`self_test`] on `devices` at once: every input spread over them, in pieces of 1 to 4 chunks,
/// so that each device hashes some of the 100-chunk vector.
fn self_test_together(devices: &[Device]) -> Result<(), String> {
    let spread = Spread::new(devices).map_err(|e| e.to_string())?;
    self_test(&spread.with_joining(Joining::Always).with_min_bytes(0).with_pieces(4 << 10, 1 << 10))
}

/// The machine's memory, for the CPU backend (which does not report any): Linux's
/// `/proc/meminfo`; elsewhere, where that file is not there, it is not shown.
fn system_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A backend this build has, or lacks, with its devices or why it has none.
struct BackendReport {
    backend: BackendKind,
    devices: Result<Vec<DeviceInfo>, String>,
}

/// The devices `--backend` names, each opened.
fn report_for(devices: &[Device]) -> Result<Vec<BackendReport>, Fatal> {
    let mut out = Vec::new();
    for &device in devices {
        let info = b3accel::backend(device)?.info().clone();
        out.push(BackendReport { backend: info.backend, devices: Ok(vec![info]) });
    }
    Ok(out)
}

/// Each backend of the table ([`b3accel::backends`]), in its order, with its devices.
fn reports() -> Vec<BackendReport> {
    let cpu = b3accel::devices().into_iter().filter(|d| d.backend == BackendKind::Cpu).collect();
    let mut out = vec![BackendReport { backend: BackendKind::Cpu, devices: Ok(cpu) }];
    let statuses = b3accel::backend_status();
    for entry in b3accel::backends().iter().filter(|e| BackendKind::from(e.id()) != BackendKind::Cpu) {
        let devices = match statuses.iter().find(|s| s.backend.id() == entry.id()) {
            Some(s) => match &s.devices {
                Ok(list) if list.is_empty() => Err("no device found".to_string()),
                Ok(list) => Ok(list.clone()),
                Err(e) => Err(e.to_string()),
            },
            None => Err(match entry.feature() {
                Some(feature) => format!("not built into this binary (rebuild with `--features {feature}`)"),
                None => "not built into this binary".to_string(),
            }),
        };
        out.push(BackendReport { backend: entry.id().into(), devices });
    }
    out
}

/// One tested row: with `json`, `obj` and the self-test's outcome as one JSON line; otherwise the
/// columns (device, kind, memory, units), the outcome and `name`, and a failure's reason on a
/// line of its own.
fn push_tested(
    text: &mut String,
    json: bool,
    mut obj: serde_json::Value,
    columns: [String; 4],
    name: &str,
    test: &Result<(), String>,
) {
    let verdict = if test.is_ok() { "ok" } else { "FAILED" };
    if json {
        obj["self_test"] = verdict.into();
        obj["self_test_error"] = test.clone().err().into();
        text.push_str(&format!("{obj}\n"));
        return;
    }
    let [device, kind, memory, units] = columns;
    text.push_str(&format!("{device:<10} {kind:<15} {memory:>10} {units:>6}  {verdict:<10} {name}\n"));
    if let Err(e) = test {
        text.push_str(&format!("           self-test: {e}\n"));
    }
}

pub fn run(_args: Args, global: &Global) -> Outcome {
    let mut out = Out::new();
    let mut failed = false;
    let mut text = String::new();
    if !global.json {
        text.push_str(&format!(
            "{:<10} {:<15} {:>10} {:>6}  {:<10} {}\n",
            "DEVICE", "KIND", "MEMORY", "UNITS", "SELF-TEST", "NAME (API, DRIVER)"
        ));
    }
    // A list's devices (all of them tested together after each alone).
    let list = global.backend.devices()?;
    let reports = match (&global.backend, &list) {
        (Choice::One(Device::Auto), _) => reports(),
        (Choice::One(device), _) => report_for(&[*device])?,
        (_, list) => report_for(list.as_deref().unwrap_or_default())?,
    };
    for report in reports {
        let devices = match report.devices {
            Ok(d) => d,
            Err(why) => {
                if global.json {
                    let obj = serde_json::json!({
                        "backend": report.backend.to_string(), "available": false, "reason": why,
                    });
                    text.push_str(&format!("{obj}\n"));
                } else {
                    text.push_str(&format!("{:<10} {why}\n", report.backend.to_string()));
                }
                continue;
            }
        };
        for info in devices {
            let test = self_test_device(info.device);
            failed |= test.is_err();
            // The self-test opened the device (a device that does not open has none).
            let paths = b3accel::backend(info.device).map(|b| b.feature_paths()).unwrap_or_default();
            let memory = info.memory_bytes.or(if info.backend == BackendKind::Cpu { system_memory() } else { None });
            let obj = serde_json::json!({
                "device": info.device.to_string(),
                "backend": info.backend.to_string(),
                "kind": info.kind.to_string(),
                "name": info.name,
                "api": info.api,
                "driver": info.driver,
                "memory_bytes": memory,
                "compute_units": info.compute_units,
                "software_gpu": info.is_software_gpu(),
                "features": paths.iter().map(|p| serde_json::json!({
                    "feature": p.feature, "available": p.available, "used": p.used, "path": p.path,
                })).collect::<Vec<_>>(),
            });
            let columns = [
                info.device.to_string(),
                info.kind.to_string(),
                memory.map(human_bytes).unwrap_or_else(|| "-".into()),
                info.compute_units.map(|u| u.to_string()).unwrap_or_else(|| "-".into()),
            ];
            let software = if info.is_software_gpu() { " [software: never picked by auto]" } else { "" };
            let name = format!("{} ({}, {}){software}", info.name, info.api, info.driver);
            push_tested(&mut text, global.json, obj, columns, &name, &test);
            if global.verbose > 0 && !global.json {
                for p in &paths {
                    text.push_str(&format!("           {p}\n"));
                }
            }
        }
    }
    if let Some(list) = list.filter(|l| l.len() > 1) {
        let test = self_test_together(&list);
        failed |= test.is_err();
        let name = list_name(&list);
        let obj = serde_json::json!({
            "device": name,
            "devices": list.iter().map(Device::to_string).collect::<Vec<_>>(),
            "together": true,
        });
        let columns = [name, "together".into(), "-".into(), "-".into()];
        let what = "all of them at once (b3accel::spread), in pieces of 1 to 4 KiB";
        push_tested(&mut text, global.json, obj, columns, what, &test);
    }
    let written = out.write(text.as_bytes()).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(Fatal(format!("write error: {e}"))),
        _ => {}
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
