//! The command line with a backend registered by the program that runs it (issue 53's
//! acceptance: a new backend is listed by `devices`, chosen by `--backend` and hashed on with no
//! file of the command line or the library naming it). This test program is that program: it
//! registers a backend, then runs as `b3accel` where `AS_B3ACCEL` is set (the runs it starts of
//! itself, and any process the command line starts of its own executable), else runs the checks.

use b3accel::{Backend, BackendEntry, BackendId, Cv, Device, DeviceInfo, DeviceKind, Error};
use std::process::{Command, ExitCode, Output};
use std::sync::Arc;

/// The test backend's devices.
const DEVICES: usize = 2;

/// A GPU backend whose "kernels" are the CPU backend's.
struct Borrowed {
    info: DeviceInfo,
    cpu: Arc<dyn Backend>,
}

impl Backend for Borrowed {
    fn info(&self) -> &DeviceInfo {
        &self.info
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
        self.cpu.chunk_subtrees_capped(input, first_chunk, max_chunks, key, flags, out)
    }

    fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) -> b3accel::Result<()> {
        self.cpu.hash_blocks(blocks, out)
    }
}

fn info(id: BackendId, index: usize) -> DeviceInfo {
    DeviceInfo {
        device: id.device(index),
        backend: id.into(),
        kind: DeviceKind::Cpu,
        name: format!("borrowed device {index}"),
        api: "test".into(),
        driver: "cli/tests/registered_backend.rs".into(),
        memory_bytes: None,
        compute_units: None,
    }
}

fn list(id: BackendId) -> b3accel::Result<Vec<DeviceInfo>> {
    Ok((0..DEVICES).map(|i| info(id, i)).collect())
}

fn open(id: BackendId, index: usize) -> b3accel::Result<Arc<dyn Backend>> {
    if index >= DEVICES {
        return Err(Error::NoSuchDevice { device: id.device(index), available: DEVICES });
    }
    Ok(Arc::new(Borrowed { info: info(id, index), cpu: b3accel::backend(Device::Cpu)? }))
}

const AS_B3ACCEL: &str = "AS_B3ACCEL";

fn main() -> ExitCode {
    b3accel::register_backend(BackendEntry::gpu("borrowed", list, open)).expect("registers");
    if std::env::var_os(AS_B3ACCEL).is_some() {
        return b3accel_cli::main();
    }
    checks();
    println!("registered_backend: every check passed");
    ExitCode::SUCCESS
}

/// This program run as `b3accel` with `args`, caches off.
fn b3accel(args: &[&str]) -> Output {
    let exe = std::env::current_exe().expect("the test program's path");
    let out = Command::new(exe).args(args).env(AS_B3ACCEL, "1").env("B3ACCEL_CACHE", "off").output().unwrap();
    eprintln!(
        "b3accel {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn checks() {
    let dir = std::env::temp_dir().join(format!("b3accel-registered-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input");
    let data: Vec<u8> = (0..(5 << 20) + 3).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let path = file.to_str().unwrap();
    let expected = format!("{}  {path}\n", blake3::hash(&data).to_hex());

    // `devices` lists the backend's devices after the built-in ones, each passing its self-test.
    let out = b3accel(&["devices"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for i in 0..DEVICES {
        let line = text.lines().find(|l| l.starts_with(&format!("borrowed:{i} "))).expect("listed");
        assert!(line.contains(" ok ") && line.contains(&format!("borrowed device {i}")), "{line}");
    }
    // `--json` names its backend.
    let out = b3accel(&["devices", "--json", "--backend", "borrowed:1"]);
    assert!(out.status.success());
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((record["device"].as_str(), record["backend"].as_str()), (Some("borrowed:1"), Some("borrowed")));
    assert_eq!(record["self_test"], "ok");

    // `--backend` chooses it, alone or in a list, and the output is upstream's hash.
    for backend in ["borrowed:1", "borrowed", "cpu,borrowed:0"] {
        let out = b3accel(&["--backend", backend, path]);
        assert!(out.status.success(), "--backend {backend}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "--backend {backend}");
    }
    let out = b3accel(&["--json", "--backend", "borrowed:1", path]);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["backend"], "borrowed:1", "{record}");

    // A device it lacks fails the run; a name the table lacks is a usage error naming it.
    let out = b3accel(&["--backend", "borrowed:7", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = b3accel(&["--backend", "tpu", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("borrowed[:N]"));
    std::fs::remove_dir_all(&dir).unwrap();
}
