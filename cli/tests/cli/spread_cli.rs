//! `b3accel --backend LIST` and `--backend all`: several devices hashing each input together
//! (`b3accel::spread`), side by side with upstream `b3sum`, and what the device lists do in the
//! other places `--backend` is taken (`--check`, `--json`, `-v`, `devices`, `merkle`,
//! `subtree`).
//!
//! The list is the CPU and every GPU device this build finds (PoCL and lavapipe/llvmpipe in CI);
//! under `CI=true` a GPU backend that is built but finds no device fails (tests/common). One file
//! is larger than the size from which a list spreads its input (64 MiB), so that its pieces are
//! hashed on several devices and merged.

use crate::common;

use b3accel::{BackendKind, Device};
use common::cli::{assert_no_panic, data, os, run_in, same_ext, upstream, Dir, B3ACCEL};
use std::path::Path;
use std::process::Output;

const KEY: &[u8; 32] = b"whats the Elvish word for friend";

/// Larger than `spread::SPREAD_MIN_BYTES` (64 MiB), and not a power of two of chunks, nor whole
/// chunks.
const BIG: usize = (64 << 20) + 3 * 1024 + 7;

fn b3accel(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let out = run_in(Path::new(B3ACCEL), dir, &os(args), stdin);
    assert_no_panic(args, &out);
    out
}

/// The CPU and every GPU device found (none opened here), in `--backend` form: `cpu,opencl:0,
/// wgpu:0,wgpu:1`. Without a GPU device it is `cpu,cpu`, which is still a list (the CPU named
/// twice is used once).
fn every_device() -> Vec<Device> {
    let mut list = vec![Device::Cpu];
    list.extend(common::device_indices(BackendKind::OpenCl).into_iter().map(Device::OpenCl));
    list.extend(common::device_indices(BackendKind::Wgpu).into_iter().map(Device::Wgpu));
    if list.len() == 1 {
        eprintln!("\n*** WARNING: no GPU device: the device lists here are the CPU alone. ***\n");
        list.push(Device::Cpu);
    }
    list
}

fn arg(list: &[Device]) -> String {
    list.iter().map(Device::to_string).collect::<Vec<_>>().join(",")
}

/// What `--json` names a list: `cpu+opencl:0+wgpu:0`, each device once.
fn json_name(list: &[Device]) -> String {
    let mut once: Vec<Device> = Vec::new();
    for d in list {
        if !once.contains(d) {
            once.push(*d);
        }
    }
    once.iter().map(Device::to_string).collect::<Vec<_>>().join("+")
}

/// Files at the awkward sizes, and one of [`BIG`] bytes: their names.
fn files(dir: &Dir) -> Vec<String> {
    let k = 1024;
    let mut names = Vec::new();
    for n in
        [0, 1, 1023, 1024, 1025, 2049, 4097, 16 * k + 1, 64 * k + 1, (1 << 20) + 1, 3 * (1 << 20) + 16 * k - 1, BIG]
    {
        let name = format!("f{n}");
        dir.write(&name, &data(n, n as u64 + 3));
        names.push(name);
    }
    names
}

/// Runs b3accel with `ours` before `args` and b3sum with `args`: the same standard output and exit
/// status. Standard error is not compared: a GPU driver named explicitly may print its own
/// notices there (Mesa's EGL does).
fn same_stdout(dir: &Path, ours: &[&str], args: &[&str], stdin: &[u8]) {
    let Some(b3sum) = upstream(&format!("{ours:?} {args:?}")) else { return };
    let theirs = run_in(b3sum, dir, &os(args), stdin);
    let mut all = ours.to_vec();
    all.extend(args);
    let mine = b3accel(dir, &all, stdin);
    assert_eq!(
        String::from_utf8_lossy(&mine.stdout),
        String::from_utf8_lossy(&theirs.stdout),
        "{all:?}: stdout differs from b3sum\nb3accel stderr: {}",
        String::from_utf8_lossy(&mine.stderr)
    );
    assert_eq!(mine.status.code(), theirs.status.code(), "{all:?}: exit status");
}

/// Every device at once prints byte for byte what b3sum prints, in every mode, for files below
/// and above the size from which the input is spread, and for standard input; `all` too, with
/// standard error as b3sum's (empty).
#[test]
fn device_lists_and_all_match_b3sum() {
    let dir = Dir::new("spread-sizes");
    let names = files(&dir);
    let files: Vec<&str> = names.iter().map(String::as_str).collect();
    let devices = every_device();
    let list = arg(&devices);
    let modes: &[(&[&str], &[u8])] = &[
        (&[], b""),
        (&["--length", "131", "--seek", "1000"], b""),
        (&["--derive-key", "b3accel spread cli tests"], b""),
        (&["--keyed"], KEY),
        (&["--num-threads", "1", "--tag"], b""),
    ];
    for (mode, stdin) in modes {
        let mut args = mode.to_vec();
        args.extend(&files);
        same_stdout(dir.path(), &["--backend", &list], &args, stdin);
    }
    // Standard input: the big input through the incremental hasher's batches.
    let big_name = format!("f{BIG}");
    let big_bytes = std::fs::read(dir.path().join(&big_name)).unwrap();
    same_stdout(dir.path(), &["--backend", &list], &["-"], &big_bytes);
    // --check of b3sum's own lines, every line read back on every device at once.
    if let Some(b3sum) = upstream("check with a device list") {
        let sums = run_in(b3sum, dir.path(), &os(&files), b"");
        dir.write("sums.b3", &sums.stdout);
        same_stdout(dir.path(), &["--backend", &list], &["--check", "sums.b3"], b"");
    }
    // `all`: every hardware device (on a machine without one, the CPU alone), and nothing on
    // standard error, as b3sum.
    same_ext(dir.path(), &["--backend", "all"], &os(&files), b"");
    let mut derived = vec!["--derive-key", "ctx"];
    derived.extend(&files);
    same_ext(dir.path(), &["--backend", "all"], &os(&derived), b"");
    same_ext(dir.path(), &["--backend", "all"], &os(&["-"]), &big_bytes);

    // -vv: a line per input once it is hashed: the small one on the first device, the big one
    // spread, each device's share given (they add up to the whole).
    let (small, big) = ("f1025".to_string(), format!("f{BIG}"));
    let out = b3accel(dir.path(), &["-vv", "--backend", &list, &small, &big], b"");
    assert_eq!(out.status.code(), Some(0));
    let stdout: String = [&small, &big]
        .iter()
        .map(|n| format!("{}  {n}\n", blake3::hash(&std::fs::read(dir.path().join(n)).unwrap()).to_hex()))
        .collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = json_name(&devices);
    let line = |n: &str| {
        let start = format!("b3accel: {n}: hashed on {name}: ");
        stderr.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("{start}: {stderr}")).to_string()
    };
    let (small, big) = (line(&small), line(&big));
    if name.contains('+') {
        assert!(small.ends_with("not spread (too small), on cpu alone"), "{small}");
        let shares = big.split_once(": shares ").unwrap_or_else(|| panic!("{big}")).1;
        let mut percent = 0.0;
        for (share, device) in shares.split(", ").zip(name.split('+')) {
            assert!(share.starts_with(&format!("{device} ")), "{big}");
            percent += share.split(' ').nth(1).and_then(|p| p.strip_suffix('%')).unwrap().parse::<f64>().unwrap();
        }
        assert!((percent - 100.0).abs() < 0.5, "{big}");
    }

    // `subtree`: the big file's first 64 MiB, a piece hashed through the list.
    let length = (64u64 << 20).to_string();
    let out =
        b3accel(dir.path(), &["subtree", "--backend", &list, "--offset", "0", "--length", &length, &big_name], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let want = common::upstream_cv(&b3accel::Mode::Hash, 0, &big_bytes[..64 << 20]);
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{hex}  {big_name}\n"));
}

/// A list that names no device, `auto` or `all` among devices, or a name that is no device is a
/// usage error (exit status 2, as clap's); a device this machine or build lacks is a device error
/// (exit status 1, `b3accel: device ...`), as for `--backend DEVICE`. Nothing is printed on
/// standard output, and the subcommands refuse them alike.
/// What every `--backend` error says it takes.
const EVERY_FORM: &str = "--backend takes auto, cpu, opencl[:N], wgpu[:N], a list such as cpu,opencl:0, or all";

#[test]
fn bad_device_lists_are_errors() {
    let dir = Dir::new("spread-bad");
    dir.write("a", b"abc");
    for list in
        ["cpu,,wgpu", "cpu,", ",cpu", ",", "auto,cpu", "cpu,auto", "cpu,all", "all,cpu", "cpu,tpu", "cpu,opencl:x"]
    {
        for args in
            [&["--backend", list, "a"][..], &["devices", "--backend", list], &["merkle", "--backend", list, "a"]]
        {
            let out = b3accel(dir.path(), args, b"");
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert!(out.stdout.is_empty(), "{args:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("invalid value") && stderr.contains(list), "{args:?}: {stderr}");
            assert!(stderr.contains(EVERY_FORM), "{args:?}: {stderr}");
        }
    }
    // A single name that is no device names every accepted form too.
    let out = b3accel(dir.path(), &["--backend", "gpu", "a"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(EVERY_FORM), "{}", String::from_utf8_lossy(&out.stderr));
    let built = b3accel::backend_status();
    // With the backends recorded (`devices` lists and records them), a name the record lacks
    // fails before any input is hashed (a fresh cache: calibration.rs).
    assert!(b3accel(dir.path(), &["devices"], b"").status.success());
    for device in ["opencl:999", "wgpu:999"] {
        assert_eq!(b3accel(dir.path(), &["--backend", &format!("cpu,{device}"), "a"], b"").status.code(), Some(1));
    }
    for (device, kind) in [("opencl:999", BackendKind::OpenCl), ("wgpu:999", BackendKind::Wgpu)] {
        let list = format!("cpu,{device}");
        for args in [&["--backend", &list, "a"][..], &["--backend", &list, "-c", "a"], &["devices", "--backend", &list]]
        {
            let out = b3accel(dir.path(), args, b"");
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            assert!(out.stdout.is_empty(), "{args:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.lines().any(|l| l.starts_with(&format!("b3accel: device {device}"))), "{args:?}: {stderr}");
            if !built.iter().any(|s| s.backend == kind) {
                assert!(stderr.contains("--features"), "{args:?}: {stderr}");
            }
        }
    }
}

/// `-v` names the devices and each input's shares, with why each device took part or not, on
/// standard error only; `--json` names the list.
#[test]
fn verbose_and_json_name_the_devices() {
    let dir = Dir::new("spread-verbose");
    dir.write("small", &data(5000, 1));
    let devices = every_device();
    let list = arg(&devices);
    let name = json_name(&devices);
    let line = format!("{}  small\n", blake3::hash(&data(5000, 1)).to_hex());
    let out = b3accel(dir.path(), &["-v", "--backend", &list, "small"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), line);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let note = stderr.lines().find(|l| l.starts_with("b3accel: hashing on ")).unwrap_or_else(|| panic!("{stderr}"));
    if json_name(&devices).contains('+') {
        let named = devices.iter().map(Device::to_string).collect::<Vec<_>>().join(", ");
        assert!(note.contains(&format!("hashing on {named}, as --backend asks")), "{note}");
    }

    // --json: the list, by the name of its devices joined with `+`.
    let out = b3accel(dir.path(), &["--json", "--backend", &list, "small", "small"], b"");
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let obj: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(obj["backend"], name.as_str(), "{line}");
    }
    let out = b3accel(dir.path(), &["--json", "--backend", "all", "small"], b"");
    let obj: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    let all: Vec<String> = b3accel::spread::hardware_devices().iter().map(Device::to_string).collect();
    assert_eq!(obj["backend"], all.join("+").as_str());
    let out = b3accel(dir.path(), &["-v", "--backend", "all", "small"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), line);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend all (every hardware device)"));
}

/// `devices --backend LIST` lists and self-tests each device of the list, then all of them at
/// once; `devices --backend all` every hardware device.
#[test]
fn devices_subcommand_with_a_list() {
    let dir = Dir::new("spread-devices");
    let devices = every_device();
    let out = b3accel(dir.path(), &["devices", "--backend", &arg(&devices)], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let name = json_name(&devices);
    let once: Vec<&str> = name.split('+').collect();
    let rows: Vec<&str> = text.lines().skip(1).filter(|l| !l.starts_with(' ')).collect();
    for (row, device) in rows.iter().zip(&once) {
        assert!(row.starts_with(&format!("{device} ")) && row.contains(" ok "), "{text}");
    }
    if once.len() > 1 {
        assert_eq!(rows.len(), once.len() + 1, "{text}");
        let together = rows.last().unwrap();
        assert!(together.starts_with(&format!("{name} ")) && together.contains(" ok "), "{text}");
    } else {
        assert_eq!(rows.len(), 1, "{text}");
    }
    let out = b3accel(dir.path(), &["devices", "--json", "--backend", &arg(&devices)], b"");
    let objs: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(objs.iter().all(|o| o["self_test"] == "ok"), "{objs:?}");
    assert_eq!(objs.len(), if once.len() > 1 { once.len() + 1 } else { 1 });

    let out = b3accel(dir.path(), &["devices", "--backend", "all"], b"");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let all = b3accel::spread::hardware_devices();
    for d in &all {
        assert!(text.lines().any(|l| l.starts_with(&format!("{d} ")) && l.contains(" ok ")), "{d}: {text}");
    }
    assert!(text.lines().next().unwrap().starts_with("DEVICE"), "{text}");
}

/// `merkle` takes lists too: its work goes to the list's first device.
#[test]
fn merkle_with_a_list() {
    let dir = Dir::new("spread-merkle");
    let list = arg(&every_device());
    let leaves = data(32 * 1000 + 32 * 37, 5);
    dir.write("leaves", &leaves);
    let cpu = b3accel(dir.path(), &["merkle", "--backend", "cpu", "leaves"], b"");
    assert_eq!(cpu.status.code(), Some(0));
    for backend in [list.as_str(), "all"] {
        let out = b3accel(dir.path(), &["merkle", "--backend", backend, "leaves"], b"");
        assert_eq!(out.stdout, cpu.stdout, "merkle --backend {backend}");
    }
}
