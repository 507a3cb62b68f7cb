//! The command line with a backend registered by the program that runs it (issue 53's
//! acceptance: a new backend is listed by `devices`, chosen by `--backend` and hashed on with no
//! file of the command line or the library naming it). This test program is that program: it
//! registers a backend, then runs as `b3accel` where `AS_B3ACCEL` is set (the runs it starts of
//! itself, and any process the command line starts of its own executable), else runs the checks.

#[path = "../../tests/support/counted_backend.rs"]
mod counted_backend;

use b3accel::BackendEntry;
use counted_backend::{list, open, DEVICES};
use std::process::{Command, ExitCode, Output};

const AS_B3ACCEL: &str = "AS_B3ACCEL";

fn main() -> ExitCode {
    b3accel::register_backend(BackendEntry::gpu("counted", list, open)).expect("registers");
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
        let line = text.lines().find(|l| l.starts_with(&format!("counted:{i} "))).expect("listed");
        assert!(line.contains(" ok ") && line.contains(&format!("counted device {i}")), "{line}");
    }
    // `--json` names its backend.
    let out = b3accel(&["devices", "--json", "--backend", "counted:1"]);
    assert!(out.status.success());
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((record["device"].as_str(), record["backend"].as_str()), (Some("counted:1"), Some("counted")));
    assert_eq!(record["self_test"], "ok");

    // `--backend` chooses it, alone or in a list, and the output is upstream's hash.
    for backend in ["counted:1", "counted", "cpu,counted:0"] {
        let out = b3accel(&["--backend", backend, path]);
        assert!(out.status.success(), "--backend {backend}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "--backend {backend}");
    }
    let out = b3accel(&["--json", "--backend", "counted:1", path]);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["backend"], "counted:1", "{record}");

    // A device it lacks fails the run; a name the table lacks is a usage error naming it.
    let out = b3accel(&["--backend", "counted:7", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = b3accel(&["--backend", "tpu", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("counted[:N]"));
    std::fs::remove_dir_all(&dir).unwrap();
}
