//! `b3accel bao`: bao_bin's commands give the library's bytes (which tests/bao.rs checks against
//! the `bao` and `bao-tree` crates) through files and standard streams, for chunk groups and
//! both outboard orders, on every device; corrupt input exits 1 with a message, having written
//! only content that verified; bad arguments are usage errors.

use crate::common;

use b3accel::bao::{self, Order};
use b3accel::Device;
use common::cli::{assert_no_panic, data, os, run_in, Dir, B3ACCEL};
use std::path::Path;
use std::process::Output;

fn b3accel(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let out = run_in(Path::new(B3ACCEL), dir, &os(args), stdin);
    assert_no_panic(args, &out);
    out
}

fn ok(dir: &Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = b3accel(dir, args, stdin);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The devices to encode on: the CPU and every GPU device this build finds.
fn devices() -> Vec<String> {
    let mut out = vec!["cpu".to_string()];
    for kind in [b3accel::BackendKind::OpenCl, b3accel::BackendKind::Wgpu] {
        for i in common::device_indices(kind) {
            out.push(match kind {
                b3accel::BackendKind::OpenCl => format!("opencl:{i}"),
                _ => format!("wgpu:{i}"),
            });
        }
    }
    out
}

#[test]
fn bao_encode_outboard_and_hash_give_the_librarys_bytes() {
    let dir = Dir::new("bao-encode");
    let content = data(70_000, 1);
    dir.write("in", &content);
    let hash = blake3::hash(&content);
    for k in [0u8, 4] {
        let kk = k.to_string();
        let kk = kk.as_str();
        let (encoded, _) = bao::encode_on(Device::Cpu, &content, k).unwrap();
        ok(dir.path(), &["bao", "encode", "--chunk-group-log", kk, "in", "enc"], b"");
        assert_eq!(std::fs::read(dir.path().join("enc")).unwrap(), encoded, "group log {k}");
        assert_eq!(ok(dir.path(), &["bao", "encode", "--chunk-group-log", kk, "-", "-"], &content), encoded);
        for (order, flag) in [(Order::Pre, None), (Order::Post, Some("--post-order"))] {
            let (ob, _) = bao::outboard_on(Device::Cpu, &content, k, order).unwrap();
            let mut args = vec!["bao", "encode", "--chunk-group-log", kk, "in", "--outboard", "ob"];
            args.extend(flag);
            ok(dir.path(), &args, b"");
            assert_eq!(std::fs::read(dir.path().join("ob")).unwrap(), ob.to_bytes(), "{order:?}, group log {k}");
        }
    }
    let line = format!("{}\n", hash.to_hex());
    assert_eq!(ok(dir.path(), &["bao", "hash", "in"], b""), line.as_bytes());
    assert_eq!(ok(dir.path(), &["bao", "hash"], &content), line.as_bytes());
    dir.write("empty", b"");
    let two = format!("{}  in\n{}  empty\n", hash.to_hex(), blake3::hash(b"").to_hex());
    assert_eq!(ok(dir.path(), &["bao", "hash", "in", "empty"], b""), two.as_bytes());
}

#[test]
fn bao_decode_slice_and_decode_slice_round_trip() {
    let dir = Dir::new("bao-decode");
    let content = data(100_000, 2);
    dir.write("in", &content);
    let hex = blake3::hash(&content).to_hex().to_string();
    let hex = hex.as_str();
    for k in [0u8, 2] {
        let kk = k.to_string();
        let kk = kk.as_str();
        let g = ["--chunk-group-log", kk];
        ok(dir.path(), &[&["bao", "encode"][..], &g, &["in", "enc"]].concat(), b"");
        let encoded = std::fs::read(dir.path().join("enc")).unwrap();
        assert_eq!(ok(dir.path(), &[&["bao", "decode"][..], &g, &[hex, "enc"]].concat(), b""), content);
        assert_eq!(ok(dir.path(), &[&["bao", "decode"][..], &g, &[hex]].concat(), &encoded), content);
        ok(dir.path(), &[&["bao", "decode"][..], &g, &[hex, "enc", "out"]].concat(), b"");
        assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), content);
        let range = ok(
            dir.path(),
            &[&["bao", "decode"][..], &g, &[hex, "enc", "--start", "3000", "--count", "5000"]].concat(),
            b"",
        );
        assert_eq!(range, &content[3000..8000]);
        let tail = ok(dir.path(), &[&["bao", "decode"][..], &g, &[hex, "enc", "--start", "99000"]].concat(), b"");
        assert_eq!(tail, &content[99_000..]);
        for post in [false, true] {
            let order = if post { &["--post-order"][..] } else { &[][..] };
            ok(dir.path(), &[&["bao", "encode"][..], &g, order, &["in", "--outboard", "ob"]].concat(), b"");
            let args = [&["bao", "decode"][..], &g, order, &[hex, "in", "--outboard", "ob"]].concat();
            assert_eq!(ok(dir.path(), &args, b""), content, "post-order {post}");
            let args = [&["bao", "slice"][..], &g, order, &["40000", "9000", "in", "--outboard", "ob"]].concat();
            let from_outboard = ok(dir.path(), &args, b"");
            assert_eq!(from_outboard, bao::slice(&encoded, k, 40_000, 9000).unwrap());
        }
        let s = ok(dir.path(), &[&["bao", "slice"][..], &g, &["40000", "9000", "enc"]].concat(), b"");
        assert_eq!(s, bao::slice(&encoded, k, 40_000, 9000).unwrap());
        dir.write("slice", &s);
        let back = ok(dir.path(), &[&["bao", "decode-slice"][..], &g, &[hex, "40000", "9000", "slice"]].concat(), b"");
        assert_eq!(back, &content[40_000..49_000]);
        let back = ok(dir.path(), &[&["bao", "decode-slice"][..], &g, &[hex, "40000", "9000"]].concat(), &s);
        assert_eq!(back, &content[40_000..49_000]);
    }
}

#[test]
fn bao_refuses_corrupt_input_and_writes_only_verified_content() {
    let dir = Dir::new("bao-corrupt");
    let content = data(10_000, 3);
    let (mut encoded, hash) = bao::encode_on(Device::Cpu, &content, 0).unwrap();
    let hex = hash.to_hex().to_string();
    let hex = hex.as_str();
    // The last byte belongs to the last chunk (content 9216..10000): everything before it
    // verifies and is written, nothing of it.
    let last = encoded.len() - 1;
    encoded[last] ^= 1;
    dir.write("bad", &encoded);
    let out = b3accel(dir.path(), &["bao", "decode", hex, "bad"], b"");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hash mismatch"), "{stderr}");
    assert_eq!(out.stdout, &content[..9216], "only verified bytes");
    let out = b3accel(dir.path(), &["bao", "decode", hex, "bad", "out"], b"");
    assert_eq!(out.status.code(), Some(1));
    let written = std::fs::read(dir.path().join("out")).unwrap();
    assert_eq!(written, &content[..9216]);
    // A slice with a bad byte, and the wrong hash.
    let (good, _) = bao::encode_on(Device::Cpu, &content, 0).unwrap();
    let mut s = bao::slice(&good, 0, 2000, 10).unwrap();
    let last = s.len() - 1;
    s[last] ^= 1;
    let out = b3accel(dir.path(), &["bao", "decode-slice", hex, "2000", "10"], &s);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(1), 0));
    let wrong = blake3::hash(b"x").to_hex().to_string();
    let wrong = wrong.as_str();
    let out = b3accel(dir.path(), &["bao", "decode", wrong], &good);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(1), 0));
    let out = b3accel(dir.path(), &["bao", "decode", "nothex"], &good);
    assert_eq!(out.status.code(), Some(1));
    let out = b3accel(dir.path(), &["bao", "decode", hex], &good[..good.len() - 1]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bao_usage_errors() {
    let dir = Dir::new("bao-usage");
    dir.write("in", b"abc");
    for args in [
        &["bao", "encode", "--post-order", "in", "out"][..],
        &["bao", "encode", "in"],
        &["bao", "encode", "--chunk-group-log", "21", "in", "out"],
        &["bao", "slice", "x", "1"],
    ] {
        let out = b3accel(dir.path(), args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn bao_encodes_alike_on_every_device() {
    let dir = Dir::new("bao-devices");
    let content = data(300_000, 4);
    dir.write("in", &content);
    let (encoded, _) = bao::encode_on(Device::Cpu, &content, 0).unwrap();
    let (ob, _) = bao::outboard_on(Device::Cpu, &content, 4, Order::Post).unwrap();
    for device in devices() {
        ok(dir.path(), &["bao", "encode", "--backend", device.as_str(), "in", "enc"], b"");
        assert_eq!(std::fs::read(dir.path().join("enc")).unwrap(), encoded, "{device}");
        let args = [
            "bao",
            "encode",
            "--backend",
            device.as_str(),
            "--chunk-group-log",
            "4",
            "--post-order",
            "in",
            "--outboard",
            "ob",
        ];
        ok(dir.path(), &args, b"");
        assert_eq!(std::fs::read(dir.path().join("ob")).unwrap(), ob.to_bytes(), "{device}");
    }
}
