//! `b3accel devices`: every backend compiled in, every device each one finds, and a self-test of
//! each device against the official BLAKE3 test vectors.

use crate::output::Out;
use crate::{Fatal, Global, Outcome};
use b3accel::{BackendKind, Device, DeviceInfo};
use std::process::ExitCode;

/// List every device this build can hash on, with a self-test of each
///
/// Prints each backend compiled into this build and each device it finds (kind, memory, compute
/// units), or why it has none, and hashes official BLAKE3 test vectors on every device in all
/// three modes. The exit status is 1 when any self-test fails. With `--backend DEVICE`, only
/// that device is listed and tested (exit status 1 when it is not there). The names in the first
/// column are what `--backend` takes. With `-v`, each GPU device's optional features follow
/// its line: whether its driver has each one (timestamp queries, pipeline cache, subgroups,
/// 64-bit atomics) and which path b3accel takes on it; `--json` always has them.
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

/// Hashes the vectors on `device`; the first mismatch or error, if any.
fn self_test(device: Device) -> Result<(), String> {
    for (len, hash, keyed, derived) in VECTORS {
        let input = pattern(len);
        let results = [
            ("hash", b3accel::hash_on(device, &input), hash),
            (
                "keyed_hash",
                b3accel::keyed_hash_on(device, VECTOR_KEY, &input),
                keyed,
            ),
            (
                "derive_key",
                b3accel::derive_key_on(device, VECTOR_CONTEXT, &input),
                derived,
            ),
        ];
        for (mode, got, expected) in results {
            match got {
                Ok(h) if h.to_hex().as_str() == expected => {}
                Ok(h) => {
                    return Err(format!(
                        "{mode} of the {len}-byte vector: expected {expected}, got {}",
                        h.to_hex()
                    ))
                }
                Err(e) => return Err(format!("{mode} of the {len}-byte vector: {e}")),
            }
        }
    }
    Ok(())
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

/// The one device `--backend` names.
fn report_for(device: Device) -> Result<Vec<BackendReport>, Fatal> {
    let backend = b3accel::backend(device)?;
    let info = backend.info().clone();
    Ok(vec![BackendReport {
        backend: info.backend,
        devices: Ok(vec![info]),
    }])
}

fn reports() -> Vec<BackendReport> {
    let cpu = b3accel::devices()
        .into_iter()
        .filter(|d| d.backend == BackendKind::Cpu)
        .collect();
    let mut out = vec![BackendReport {
        backend: BackendKind::Cpu,
        devices: Ok(cpu),
    }];
    let statuses = b3accel::backend_status();
    for (kind, feature) in [(BackendKind::OpenCl, "opencl"), (BackendKind::Wgpu, "wgpu")] {
        let devices = match statuses.iter().find(|s| s.backend == kind) {
            Some(s) => match &s.devices {
                Ok(list) if list.is_empty() => Err("no device found".to_string()),
                Ok(list) => Ok(list.clone()),
                Err(e) => Err(e.to_string()),
            },
            None => Err(format!(
                "not built into this binary (rebuild with `--features {feature}`)"
            )),
        };
        out.push(BackendReport {
            backend: kind,
            devices,
        });
    }
    out
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
    let reports = match global.backend {
        Device::Auto => reports(),
        device => report_for(device)?,
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
            let test = self_test(info.device);
            failed |= test.is_err();
            // The self-test opened the device (a device that does not open has none).
            let paths = b3accel::backend(info.device)
                .map(|b| b.feature_paths())
                .unwrap_or_default();
            let memory = info.memory_bytes.or(if info.backend == BackendKind::Cpu {
                system_memory()
            } else {
                None
            });
            if global.json {
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
                    "self_test": if test.is_ok() { "ok" } else { "FAILED" },
                    "self_test_error": test.as_ref().err(),
                    "features": paths.iter().map(|p| serde_json::json!({
                        "feature": p.feature, "available": p.available, "used": p.used, "path": p.path,
                    })).collect::<Vec<_>>(),
                });
                text.push_str(&format!("{obj}\n"));
            } else {
                text.push_str(&format!(
                    "{:<10} {:<15} {:>10} {:>6}  {:<10} {} ({}, {}){}\n",
                    info.device.to_string(),
                    info.kind.to_string(),
                    memory.map(human_bytes).unwrap_or_else(|| "-".into()),
                    info.compute_units
                        .map(|u| u.to_string())
                        .unwrap_or_else(|| "-".into()),
                    if test.is_ok() { "ok" } else { "FAILED" },
                    info.name,
                    info.api,
                    info.driver,
                    if info.is_software_gpu() {
                        " [software: never picked by auto]"
                    } else {
                        ""
                    },
                ));
                if let Err(e) = &test {
                    text.push_str(&format!("           self-test: {e}\n"));
                }
                if global.verbose > 0 {
                    for p in &paths {
                        text.push_str(&format!("           {p}\n"));
                    }
                }
            }
        }
    }
    let written = out.write(text.as_bytes()).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(Fatal(format!("write error: {e}")))
        }
        _ => {}
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
