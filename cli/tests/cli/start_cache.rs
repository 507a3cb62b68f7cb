//! Opening a GPU device from the cache files of compiled code, through the `b3accel` binary: with
//! `B3ACCEL_CACHE_DIR` pointing at a scratch directory, a first run builds the kernels (OpenCL
//! program binaries) or pipelines (wgpu, where the device has a pipeline cache) and writes the
//! cache files, a second run reads them, and both print upstream's hash lines. Files that are
//! truncated, flipped, empty, made for another key, or whole but refused by the driver are
//! ignored (the hash is still right) and rewritten valid; a file that is not b3accel's own
//! (garbage) is ignored and left as it is. `B3ACCEL_CACHE=off` reads and writes nothing. A wgpu
//! device without a pipeline cache writes nothing.
//!
//! `B3ACCEL_CACHE_DEBUG` makes each process report its cache reads and writes on standard error
//! (`b3accel cache: hit|miss|rejected|refused by the driver|wrote: PATH ...`); the tests read
//! those lines and the files themselves.
//!
//! Under `CI=true` a built backend without a device fails here (tests/common/mod.rs).
#![cfg(any(feature = "opencl", feature = "wgpu"))]

use crate::common;

use b3accel::BackendKind;
use common::cli::{b3accel_command, Dir};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The test inputs: a partial last chunk after a non-power-of-two number of chunks, and a few
/// chunks and one byte.
const SIZES: [usize; 2] = [65 * 1024 + 1, 3 * 1024 + 1];

/// The files of compiled code a GPU backend keeps: `{kind}-{hash}.bin`.
fn cache_files(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        name.starts_with(&format!("{kind}-")) && name.ends_with(".bin")
    });
    files.sort();
    files
}

/// Every entry of `dir` (none where it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

/// What the test knows of the cache file layout (src/core/cache.rs), read independently: the
/// key and the payload of a whole file whose length and BLAKE3 hash match, else `None`.
fn parse(bytes: &[u8]) -> Option<(String, Vec<u8>)> {
    let rest = bytes.strip_prefix(b"B3ACACHE")?;
    let (version, rest) = rest.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != 1 {
        return None;
    }
    let (key_len, rest) = rest.split_first_chunk::<4>()?;
    let key_len = u32::from_le_bytes(*key_len) as usize;
    let key = String::from_utf8(rest.get(..key_len)?.to_vec()).ok()?;
    let (len, rest) = rest[key_len..].split_first_chunk::<8>()?;
    let (hash, payload) = rest.split_first_chunk::<32>()?;
    (u64::from_le_bytes(*len) == payload.len() as u64 && blake3::hash(payload).as_bytes() == hash)
        .then(|| (key, payload.to_vec()))
}

/// A whole, valid file for `key` holding `payload`.
fn sealed(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = b"B3ACACHE".to_vec();
    out.extend(1u32.to_le_bytes());
    out.extend((key.len() as u32).to_le_bytes());
    out.extend(key.as_bytes());
    out.extend((payload.len() as u64).to_le_bytes());
    out.extend(blake3::hash(payload).as_bytes());
    out.extend(payload);
    out
}

/// The scratch directory of one device's test: the inputs, and `cache/` for the cache files.
struct Case {
    device: String,
    kind: &'static str,
    dir: Dir,
    names: Vec<String>,
    expected: String,
}

impl Case {
    fn new(device: String, kind: &'static str) -> Case {
        let dir = Dir::new(&format!("start-cache-{}", device.replace(':', "-")));
        let mut names = Vec::new();
        let mut expected = String::new();
        for (i, &len) in SIZES.iter().enumerate() {
            let data = common::random_bytes(len, 16 + i as u64);
            let name = format!("input{i}");
            dir.write(&name, &data);
            expected.push_str(&format!("{}  {name}\n", blake3::hash(&data).to_hex()));
            names.push(name);
        }
        Case { device, kind, dir, names, expected }
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// Hashes the inputs on the device with `env` set, asserts upstream's lines, and returns the
    /// cache lines of standard error.
    fn run(&self, env: &[(&str, &str)]) -> Vec<String> {
        let mut cmd = b3accel_command();
        cmd.current_dir(self.dir.path())
            .args(["--backend", &self.device])
            .args(&self.names)
            .env("B3ACCEL_CACHE_DIR", self.cache_dir())
            .env("B3ACCEL_CACHE_DEBUG", "1")
            .env_remove("B3ACCEL_CACHE")
            .envs(env.iter().copied());
        let out = common::run_with_input(cmd, b"", Duration::from_secs(300));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{} with {env:?}: {:?}\n{stderr}", self.device, out.status);
        assert_eq!(String::from_utf8_lossy(&out.stdout), self.expected, "{} with {env:?}\n{stderr}", self.device);
        stderr.lines().filter(|l| l.starts_with("b3accel cache:")).map(str::to_string).collect()
    }

    fn files(&self) -> Vec<PathBuf> {
        cache_files(&self.cache_dir(), self.kind)
    }

    /// The files' keys and payloads, each asserted whole and valid, and nothing else in the
    /// directory (no temporary file left behind).
    fn valid_files(&self) -> Vec<(String, Vec<u8>)> {
        let files = self.files();
        assert_eq!(entries(&self.cache_dir()).len(), files.len(), "{}: {:?}", self.device, entries(&self.cache_dir()));
        files
            .iter()
            .map(|f| {
                parse(&std::fs::read(f).unwrap())
                    .unwrap_or_else(|| panic!("{}: {} is not a whole, valid cache file", self.device, f.display()))
            })
            .collect()
    }
}

/// What a damage makes of a cache file's bytes, given the key it was made for.
type Damage = fn(&[u8], &str) -> Vec<u8>;

fn count(lines: &[String], what: &str) -> usize {
    lines.iter().filter(|l| l.starts_with(&format!("b3accel cache: {what}:"))).count()
}

/// The whole cycle on a device that keeps cache files of `kind`: write, read, damage, off.
/// `rewrites_on_hit`: whether a run that read valid files may still write them (a driver's
/// pipeline cache may change as it is used; an OpenCL binary never is).
fn cycle(case: &Case, rewrites_on_hit: bool) {
    let device = &case.device;

    // First run: a miss, then the files are written.
    let first = case.run(&[]);
    assert!(count(&first, "miss") >= 1 && count(&first, "wrote") >= 1, "{device}: {first:#?}");
    let written = case.valid_files();
    assert!(!written.is_empty(), "{device}: no cache file written");
    let bytes: Vec<Vec<u8>> = case.files().iter().map(|f| std::fs::read(f).unwrap()).collect();

    // Second run: every file is read; an OpenCL binary is not written again.
    let second = case.run(&[]);
    assert_eq!(count(&second, "hit"), written.len(), "{device}: {second:#?}");
    assert_eq!(count(&second, "miss") + count(&second, "rejected"), 0, "{device}: {second:#?}");
    if !rewrites_on_hit {
        assert_eq!(count(&second, "wrote"), 0, "{device}: {second:#?}");
        let again: Vec<Vec<u8>> = case.files().iter().map(|f| std::fs::read(f).unwrap()).collect();
        assert_eq!(again, bytes, "{device}: the files changed on a hit");
    }

    // Damaged files: each is ignored, the hash is still right, and the file is rewritten valid
    // for the same key.
    let damages: [(&str, &str, Damage); 5] = [
        ("truncated", "rejected", |b, _| b[..b.len() / 2].to_vec()),
        ("flipped", "rejected", |b, _| {
            let mut b = b.to_vec();
            let (mid, last) = (b.len() / 2, b.len() - 1);
            b[mid] ^= 0x40;
            b[last] ^= 0x01;
            b
        }),
        ("empty", "rejected", |_, _| Vec::new()),
        ("foreign", "rejected", |b, key| sealed(&format!("{key} on another machine"), &parse(b).unwrap().1)),
        // Whole and made for this key, but not the driver's data: the driver must refuse it
        // (OpenCL: a payload of an empty build log and a binary that is not one; wgpu: data
        // without the driver's header), and the file is rebuilt.
        ("refused", "hit", |_, key| {
            let mut payload = 0u64.to_le_bytes().to_vec();
            payload.extend_from_slice(b"this is not a program binary or a pipeline cache");
            sealed(key, &payload)
        }),
    ];
    for (what, seen, damage) in damages {
        for (f, (key, _)) in case.files().iter().zip(&written) {
            std::fs::write(f, damage(&std::fs::read(f).unwrap(), key)).unwrap();
        }
        let lines = case.run(&[]);
        assert_eq!(count(&lines, seen), written.len(), "{device}, {what} files: {lines:#?}");
        assert!(count(&lines, "wrote") >= written.len(), "{device}, {what} files not rewritten: {lines:#?}");
        let now = case.valid_files();
        assert_eq!(
            now.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            written.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            "{device}, {what}: rewritten for other keys"
        );
        assert!(now.iter().all(|(_, p)| !p.is_empty()), "{device}, {what}: empty payload");
    }
    // Garbage (not a file b3accel wrote) is ignored and never replaced: the hash is still right.
    for f in case.files() {
        std::fs::write(&f, common::random_bytes(4096, 99)).unwrap();
    }
    let lines = case.run(&[]);
    assert_eq!(count(&lines, "rejected"), written.len(), "{device}, garbage files: {lines:#?}");
    assert_eq!(count(&lines, "wrote"), 0, "{device}, garbage files replaced: {lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("b3accel cache: not written:") && l.contains("is not a b3accel cache file")),
        "{device}, garbage files: {lines:#?}"
    );
    for f in case.files() {
        assert_eq!(std::fs::read(&f).unwrap(), common::random_bytes(4096, 99), "{device}: {} replaced", f.display());
        std::fs::write(&f, b"").unwrap();
    }
    // Emptied, they are rewritten; and the rewritten files are read as before.
    case.run(&[]);
    assert_eq!(case.valid_files().len(), written.len(), "{device}");
    let after = case.run(&[]);
    assert_eq!(count(&after, "hit"), written.len(), "{device}: {after:#?}");
    assert_eq!(count(&after, "rejected") + count(&after, "refused by the driver"), 0, "{device}: {after:#?}");

    // B3ACCEL_CACHE=off: the files there are not read, and an empty directory stays empty.
    let before: Vec<Vec<u8>> = case.files().iter().map(|f| std::fs::read(f).unwrap()).collect();
    let off = case.run(&[("B3ACCEL_CACHE", "off")]);
    assert!(off.is_empty(), "{device}: B3ACCEL_CACHE=off still used the cache: {off:#?}");
    let unchanged: Vec<Vec<u8>> = case.files().iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(unchanged, before, "{device}: B3ACCEL_CACHE=off changed the files");
    std::fs::remove_dir_all(case.cache_dir()).unwrap();
    let off = case.run(&[("B3ACCEL_CACHE", "OFF")]);
    assert!(off.is_empty() && entries(&case.cache_dir()).is_empty(), "{device}: {off:#?}");
}

#[cfg(feature = "opencl")]
#[test]
fn opencl_program_binaries_are_cached_checked_and_rebuilt() {
    for i in common::device_indices(BackendKind::OpenCl) {
        let case = Case::new(format!("opencl:{i}"), "opencl");
        cycle(&case, false);
    }
}

/// Whether wgpu device `device` has a pipeline cache, as `b3accel devices --json` reports it
/// (asked with caches off, so that asking writes nothing).
#[cfg(feature = "wgpu")]
fn has_pipeline_cache(device: &str) -> bool {
    let out = b3accel_command()
        .args(["devices", "--json", "--backend", device])
        .env("B3ACCEL_CACHE", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "devices --backend {device}: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cache = v["features"].as_array().unwrap().iter().find(|f| f["feature"] == "pipeline cache").unwrap();
    assert_eq!(cache["used"], false, "{device}: a pipeline cache used with B3ACCEL_CACHE=off: {cache}");
    cache["available"].as_bool().unwrap()
}

#[cfg(feature = "wgpu")]
#[test]
fn wgpu_pipeline_caches_are_kept_where_the_device_has_one() {
    let devices = common::device_indices(BackendKind::Wgpu);
    let mut with_cache = 0;
    for i in devices {
        let device = format!("wgpu:{i}");
        let case = Case::new(device.clone(), "wgpu");
        if has_pipeline_cache(&device) {
            with_cache += 1;
            cycle(&case, true);
            // devices -v names the file it keeps.
            let out = b3accel_command()
                .args(["devices", "-v", "--backend", &device])
                .env("B3ACCEL_CACHE_DIR", case.cache_dir())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let file = case.files().pop().expect("devices -v wrote the cache file");
            let line = format!("pipeline cache: yes (used: the compiled pipelines are kept in {})", file.display());
            assert!(text.contains(&line), "{device}: no '{line}' in\n{text}");
        } else {
            // Nothing changes: no cache file, nothing read or written.
            for _ in 0..2 {
                let lines = case.run(&[]);
                assert!(lines.is_empty(), "{device} has no pipeline cache but used one: {lines:#?}");
            }
            assert!(entries(&case.cache_dir()).is_empty(), "{device}: {:?}", entries(&case.cache_dir()));
        }
    }
    if with_cache == 0 {
        eprintln!("\n*** NOTE: no wgpu device here has a pipeline cache: only the no-cache path ran ***\n");
    }
}
