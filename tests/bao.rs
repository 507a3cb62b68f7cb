//! The bao module against its oracles, the `bao` 0.13 and `bao-tree` 0.17 crates: outboards in
//! both orders, combined encodings and slices byte for byte at awkward sizes and every group log
//! 0 to 6; decoding of ours and theirs; every corrupted byte of small encodings caught at the
//! block that holds it; and the same outboards on every backend this machine has.

mod common;
#[path = "support/bao_oracle.rs"]
mod oracle;

use b3accel::bao::{
    decode, decode_into, decode_outboard, decode_slice, encode_with, outboard_into, outboard_with, slice,
    slice_outboard, Block, Error, Order,
};
use b3accel::{backend, Backend, Device};
use bao_tree::io::outboard::{PostOrderMemOutboard, PreOrderMemOutboard};
use bao_tree::{BlockSize, ChunkRanges};
use common::{pattern, random_bytes, targets};
use oracle::{bao_tree_response, slice_chunks, CHUNK};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::io::{Cursor, Read};

fn cpu() -> std::sync::Arc<dyn Backend> {
    backend(Device::Cpu).unwrap()
}

/// Sizes around every boundary of groups of 2^k chunks: empty, one byte, a chunk +-1, a group
/// +-1, several groups and a partial one (a chunk count that is no power of two).
fn sizes(k: u8) -> Vec<u64> {
    let g = CHUNK << k;
    let mut s = vec![0, 1, 1023, 1024, 1025, 2047, 2049, g - 1, g, g + 1, 2 * g, 3 * g + 17, 5 * g - 1];
    s.sort();
    s.dedup();
    s
}

#[test]
fn outboards_and_encodings_match_bao_and_bao_tree() {
    let cpu = cpu();
    for k in 0..=6u8 {
        for size in sizes(k) {
            let data = random_bytes(size as usize, size + u64::from(k));
            let what = format!("size {size}, group log {k}");
            let expected = blake3::hash(&data);
            let (pre, hash) = outboard_with(&*cpu, &data, k, Order::Pre).unwrap();
            assert_eq!(hash, expected, "{what}");
            let (post, hash) = outboard_with(&*cpu, &data, k, Order::Post).unwrap();
            assert_eq!(hash, expected, "{what}");
            let oracle_pre = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
            let oracle_post = PostOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
            assert_eq!(oracle_pre.root, expected, "{what}");
            assert_eq!(pre.parents(), &oracle_pre.data[..], "pre-order outboard, {what}");
            assert_eq!(post.parents(), &oracle_post.data[..], "post-order outboard, {what}");
            assert_eq!(pre.to_bytes(), oracle_pre.clone().into_inner_with_prefix(), "{what}");
            assert_eq!(post.to_bytes(), oracle_post.into_inner_with_suffix(), "{what}");

            let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
            assert_eq!(hash, expected, "{what}");
            if k == 0 {
                assert_eq!(encoded, bao::encode::encode(&data).0, "{what}");
                assert_eq!(pre.to_bytes(), bao::encode::outboard(&data).0, "{what}");
            }
            assert_eq!(encoded, bao_tree_response(&data, &oracle_pre, &ChunkRanges::all()), "{what}");

            let mut out = Vec::new();
            assert_eq!(decode(&encoded[..], &hash, k, &mut out).unwrap(), size, "{what}");
            assert_eq!(out, data, "{what}");
            for ob in [&pre, &post] {
                let mut out = Vec::new();
                decode_outboard(&data[..], ob, &hash, &mut out).unwrap();
                assert_eq!(out, data, "{what}, {:?}", ob.order());
            }
        }
    }
}

/// Edge ranges of a content of `size` bytes in groups of 2^k chunks, then random ones.
fn ranges(size: u64, k: u8, rng: &mut StdRng) -> Vec<(u64, u64)> {
    let g = CHUNK << k;
    let mut r = vec![
        (0, 0),
        (0, 1),
        (0, size),
        (0, u64::MAX),
        (size.saturating_sub(1), 1),
        (size, 0),
        (size + 100, 10),
        (1023, 2),
        (1024, 1024),
        (g - 1, 2),
        (g, g),
        (g + 1, 3 * CHUNK),
        (u64::MAX - 5, 10),
    ];
    for _ in 0..6 {
        let start = rng.random_range(0..=size + 10);
        let len = rng.random_range(0..=size / 2 + 2);
        r.push((start, len));
    }
    r
}

#[test]
fn slices_match_bao_and_bao_tree_and_decode() {
    let cpu = cpu();
    let mut rng = StdRng::seed_from_u64(55);
    for k in 0..=6u8 {
        let g = CHUNK << k;
        for size in [0, 1, 3000, g + 1, 5 * g - 1, 9 * g + 555] {
            let data = pattern(size as usize);
            let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
            let (pre, _) = outboard_with(&*cpu, &data, k, Order::Pre).unwrap();
            let (post, _) = outboard_with(&*cpu, &data, k, Order::Post).unwrap();
            let oracle = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
            for (start, len) in ranges(size, k, &mut rng) {
                let what = format!("size {size}, group log {k}, slice {start}+{len}");
                let s = slice(&encoded, k, start, len).unwrap();
                if k == 0 {
                    let mut oracle = Vec::new();
                    bao::encode::SliceExtractor::new(Cursor::new(&encoded), start, len)
                        .read_to_end(&mut oracle)
                        .unwrap();
                    assert_eq!(s, oracle, "{what}");
                    let mut theirs = Vec::new();
                    bao::decode::SliceDecoder::new(&s[..], &hash, start, len).read_to_end(&mut theirs).unwrap();
                    let mut ours = Vec::new();
                    decode_slice(&s[..], &hash, k, start, len, &mut ours).unwrap();
                    assert_eq!(ours, theirs, "{what}");
                }
                assert_eq!(s, bao_tree_response(&data, &oracle, &slice_chunks(size, start, len)), "{what}");
                assert_eq!(slice_outboard(&data, &pre, start, len).unwrap(), s, "{what}, pre-order");
                assert_eq!(slice_outboard(&data, &post, start, len).unwrap(), s, "{what}, post-order");
                let mut out = Vec::new();
                let n = decode_slice(&s[..], &hash, k, start, len, &mut out).unwrap();
                let from = start.min(size) as usize;
                let to = start.saturating_add(len).min(size) as usize;
                assert_eq!(n as usize, to - from, "{what}");
                assert_eq!(out, &data[from..to], "{what}");
            }
        }
    }
}

#[test]
fn decodes_bao_encodings_and_refuses_the_wrong_hash() {
    let data = pattern(70_000);
    let (encoded, hash) = bao::encode::encode(&data);
    let mut out = Vec::new();
    decode(&encoded[..], &hash, 0, &mut out).unwrap();
    assert_eq!(out, data);
    let wrong = blake3::hash(b"something else");
    let mut out = Vec::new();
    let err = decode(&encoded[..], &wrong, 0, &mut out).unwrap_err();
    assert!(matches!(err, Error::Corrupt { block: Block::Parent, offset: 8, content: 0 }), "{err}");
    assert!(out.is_empty());
    let err = decode(&encoded[..100], &hash, 0, &mut Vec::new()).unwrap_err();
    assert!(matches!(err, Error::Truncated { offset: 100 }), "{err}");
}

/// The blocks of an encoding of `size` bytes in groups of 2^k chunks, in order: where each
/// starts in the encoding, its length, its kind and the first content byte it covers. Written
/// from the format's definition, apart from the library's walk.
fn blocks(size: u64, k: u8) -> Vec<(u64, u64, Block, u64)> {
    fn walk(start: u64, chunks: u64, size: u64, k: u8, at: &mut u64, out: &mut Vec<(u64, u64, Block, u64)>) {
        let content = start * CHUNK;
        if chunks <= 1 << k {
            let len = ((start + chunks) * CHUNK).min(size) - content;
            out.push((*at, len, Block::Data, content));
            *at += len;
            return;
        }
        out.push((*at, 64, Block::Parent, content));
        *at += 64;
        let mut left = 1;
        while left * 2 < chunks {
            left *= 2;
        }
        walk(start, left, size, k, at, out);
        walk(start + left, chunks - left, size, k, at, out);
    }
    let mut out = Vec::new();
    walk(0, size.div_ceil(CHUNK).max(1), size, k, &mut 8, &mut out);
    out
}

#[test]
fn every_corrupted_byte_is_caught_at_its_block() {
    let cpu = cpu();
    for (size, k) in [(5000u64, 0u8), (9000, 1), (3 * 1024, 0)] {
        let data = random_bytes(size as usize, 7);
        let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
        let layout = blocks(size, k);
        assert_eq!(layout.last().map(|b| b.0 + b.1), Some(encoded.len() as u64));
        for i in 0..encoded.len() {
            let mut bad = encoded.clone();
            bad[i] ^= 0x10;
            let mut out = Vec::new();
            let err = decode(&bad[..], &hash, k, &mut out).expect_err(&format!("byte {i} of size {size}"));
            if i < 8 {
                continue; // a changed size fails somewhere down the tree, or runs out of input
            }
            let &(start, _, block, content) =
                layout.iter().find(|b| b.0 <= i as u64 && (i as u64) < b.0 + b.1).expect("a block holds it");
            match err {
                Error::Corrupt { block: b, offset, content: c } => {
                    assert_eq!((b, offset, c), (block, start, content), "byte {i} of size {size}, group log {k}");
                }
                e => panic!("byte {i}: {e}"),
            }
            // Only content before the bad block was released, and it is the content.
            assert_eq!(out.len() as u64, content, "byte {i}");
            assert_eq!(out, &data[..content as usize]);
            // The in-memory decoder stops at the same block and leaves zeros after it.
            let mut whole = vec![0xee; size as usize];
            let err = decode_into(&bad, &hash, k, &mut whole).expect_err("a corrupt encoding");
            assert!(matches!(err, Error::Corrupt { block: b, offset, .. } if (b, offset) == (block, start)), "{err}");
            assert_eq!(&whole[..content as usize], &data[..content as usize], "byte {i}");
            assert!(whole[content as usize..].iter().all(|&b| b == 0), "byte {i}");
        }
    }
}

/// Encodings larger than the decoders' window (16 MiB of content): several windows below a top
/// decoded node by node, each checked at once. A corrupt parent or content block in any window,
/// or a stream cut short there, stops both decoders at the block a decode in order stops at, with
/// the content before it released and nothing after.
#[test]
fn decoding_past_the_window_stops_where_a_decode_in_order_does() {
    let cpu = cpu();
    for (size, k) in [((24u64 << 20) + 5000, 0u8), ((17 << 20) + 1, 4)] {
        let data = pattern(size as usize);
        let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
        let mut out = Vec::new();
        assert_eq!(decode(&encoded[..], &hash, k, &mut out).unwrap(), size);
        assert!(out == data, "size {size}, group log {k}");
        let mut whole = vec![0u8; size as usize];
        decode_into(&encoded, &hash, k, &mut whole).unwrap();
        assert!(whole == data, "in memory, size {size}, group log {k}");
        let layout = blocks(size, k);
        let mut rng = StdRng::seed_from_u64(size);
        let parents: Vec<_> = layout.iter().filter(|b| b.2 == Block::Parent).collect();
        let datas: Vec<_> = layout.iter().filter(|b| b.2 == Block::Data).collect();
        let mut picks = vec![layout[0], layout[layout.len() - 1], *datas[datas.len() / 2]];
        picks.extend((0..3).map(|_| *parents[rng.random_range(0..parents.len())]));
        picks.extend((0..3).map(|_| *datas[rng.random_range(0..datas.len())]));
        for (start, len, block, content) in picks {
            let what = format!("{block} at {start}, size {size}, group log {k}");
            let mut bad = encoded.clone();
            bad[(start + len / 2) as usize] ^= 1;
            let mut out = Vec::new();
            let err = decode(&bad[..], &hash, k, &mut out).unwrap_err();
            assert!(
                matches!(err, Error::Corrupt { block: b, offset, content: c } if (b, offset, c) == (block, start, content)),
                "{what}: {err}"
            );
            assert!(out.len() as u64 == content && out == data[..content as usize], "{what}");
            let err = decode_into(&bad, &hash, k, &mut whole).unwrap_err();
            assert!(
                matches!(err, Error::Corrupt { block: b, offset, .. } if (b, offset) == (block, start)),
                "{what}: {err}"
            );
            assert!(whole[..content as usize] == data[..content as usize], "{what}");
            assert!(whole[content as usize..].iter().all(|&b| b == 0), "{what}");
            // Cut inside the block: everything before it released, then the stream's end.
            let cut = (start + len / 2) as usize;
            let mut out = Vec::new();
            let err = decode(&encoded[..cut], &hash, k, &mut out).unwrap_err();
            assert!(matches!(err, Error::Truncated { offset } if offset == cut as u64), "cut {what}: {err}");
            assert!(out.len() as u64 == content && out == data[..content as usize], "cut {what}");
        }
    }
}

#[test]
fn corrupt_outboards_and_slices_are_refused() {
    let cpu = cpu();
    let data = random_bytes(20_000, 3);
    for order in [Order::Pre, Order::Post] {
        let (ob, hash) = outboard_with(&*cpu, &data, 1, order).unwrap();
        let file = ob.to_bytes();
        for i in 0..ob.parents().len() {
            let mut bad = file.clone();
            bad[i + if order == Order::Pre { 8 } else { 0 }] ^= 1;
            let bad = b3accel::bao::Outboard::from_bytes(&bad, 1, order).unwrap();
            let mut out = Vec::new();
            let err = decode_outboard(&data[..], &bad, &hash, &mut out).unwrap_err();
            assert!(matches!(err, Error::Corrupt { block: Block::Parent, .. }), "{order:?} byte {i}: {err}");
        }
        let mut bad_data = data.clone();
        bad_data[15_000] ^= 1;
        let err = decode_outboard(&bad_data[..], &ob, &hash, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Error::Corrupt { block: Block::Data, offset: 14_336, .. }), "{err}");
    }
    for k in [0u8, 2] {
        let (encoded, hash) = encode_with(&*cpu, &data, k).unwrap();
        let s = slice(&encoded, k, 6000, 3000).unwrap();
        for i in 8..s.len() {
            let mut bad = s.clone();
            bad[i] ^= 4;
            let mut out = Vec::new();
            assert!(decode_slice(&bad[..], &hash, k, 6000, 3000, &mut out).is_err(), "slice byte {i}");
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let cpu = cpu();
    assert!(matches!(encode_with(&*cpu, b"abc", 21), Err(Error::Invalid(_))));
    assert!(matches!(slice(&[1, 2], 0, 0, 1), Err(Error::Truncated { .. })));
    let (encoded, _) = encode_with(&*cpu, &[0u8; 3000], 0).unwrap();
    assert!(matches!(slice(&encoded[..encoded.len() - 1], 0, 0, 1), Err(Error::Truncated { .. })));
    let (ob, _) = outboard_with(&*cpu, &[0u8; 3000], 0, Order::Pre).unwrap();
    assert!(matches!(slice_outboard(&[0u8; 2999], &ob, 0, 1), Err(Error::Invalid(_))));
    assert!(b3accel::bao::Outboard::from_bytes(&ob.to_bytes()[..70], 0, Order::Pre).is_err());
    // decode_into's buffer must hold exactly the content; a short encoding ends where it does,
    // the verified first chunk released and zeros after it.
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8 + 1).collect();
    let (encoded, hash) = encode_with(&*cpu, &data, 0).unwrap();
    for len in [0, 2999, 3001] {
        let mut out = vec![7u8; len];
        assert!(matches!(decode_into(&encoded, &hash, 0, &mut out), Err(Error::Invalid(_))), "{len}");
        assert!(out.iter().all(|&b| b == 7), "nothing written into a buffer of {len}");
    }
    // outboard_into's buffer must hold exactly the parents (two for 3000 bytes at group log 0).
    for len in [0, 127, 129] {
        let mut parents = vec![7u8; len];
        assert!(matches!(outboard_into(&*cpu, &data, 0, Order::Post, &mut parents), Err(Error::Invalid(_))));
        assert!(parents.iter().all(|&b| b == 7), "nothing written into a buffer of {len}");
    }
    let mut out = vec![7u8; 3000];
    let err = decode_into(&encoded[..2000], &hash, 0, &mut out).unwrap_err();
    assert!(matches!(err, Error::Truncated { offset: 2000 }), "{err}");
    assert!(out[..1024] == data[..1024] && out[1024..].iter().all(|&b| b == 0));
}

/// A size header so large that the encoding's offsets would overflow 64 bits (a corrupt one) is
/// an error of everything that reads one, never a panic.
#[test]
fn an_impossible_size_header_is_an_error() {
    let (mut encoded, hash) = encode_with(&*cpu(), &[7u8; 5000], 0).unwrap();
    for size in [u64::MAX, u64::MAX - 1023, u64::MAX - 8] {
        encoded[..8].copy_from_slice(&size.to_le_bytes());
        for k in [0u8, 4, 20] {
            let what = format!("size {size}, group log {k}");
            assert!(matches!(decode(&encoded[..], &hash, k, &mut Vec::new()), Err(Error::Invalid(_))), "{what}");
            let err = decode_slice(&encoded[..], &hash, k, 100, 10, &mut Vec::new());
            assert!(matches!(err, Err(Error::Invalid(_))), "{what}");
            assert!(matches!(slice(&encoded, k, 100, 10), Err(Error::Invalid(_))), "{what}");
            let mut out = vec![0u8; 5000];
            assert!(decode_into(&encoded, &hash, k, &mut out).is_err(), "{what}");
            for order in [Order::Pre, Order::Post] {
                let file = [&size.to_le_bytes()[..], &[0u8; 256]].concat();
                assert!(b3accel::bao::Outboard::from_bytes(&file, k, order).is_err(), "{what}, {order:?}");
            }
        }
    }
}

#[test]
fn every_backend_gives_the_same_outboards() {
    // Past 64 chunks (a GPU work-group) and a partial last group; small, as software GPUs are slow.
    let data = pattern(65 * 1024 + 77);
    let cpu = cpu();
    for k in [0u8, 4] {
        let (pre, hash) = outboard_with(&*cpu, &data, k, Order::Pre).unwrap();
        let (encoded, _) = encode_with(&*cpu, &data, k).unwrap();
        for t in targets() {
            for len in [4096 + 1, data.len()] {
                let d = &data[..len];
                let (ob, h) = outboard_with(&*t.backend, d, k, Order::Post).unwrap();
                let (cpu_ob, cpu_h) = outboard_with(&*cpu, d, k, Order::Post).unwrap();
                assert_eq!((ob, h), (cpu_ob, cpu_h), "{} len {len} group log {k}", t.name);
            }
            let (ob, h) = outboard_with(&*t.backend, &data, k, Order::Pre).unwrap();
            assert_eq!((&ob, h), (&pre, hash), "{} group log {k}", t.name);
            assert_eq!(encode_with(&*t.backend, &data, k).unwrap().0, encoded, "{}", t.name);
        }
    }
}

/// A large input in small groups: tens of thousands of groups in one call to the CPU backend,
/// on the pool and on one thread (whose calls once nested once per group, past the stack), with
/// bytes equal to the oracles'.
#[test]
fn many_groups_in_one_call_match_the_oracles() {
    let data = pattern((32 << 20) + 5);
    let pre_k0 = bao::encode::outboard(&data).0;
    let pre_k4 = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(4)).into_inner_with_prefix();
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for (k, want) in [(0u8, &pre_k0), (4, &pre_k4)] {
        let (ob, hash) = outboard_with(&*cpu(), &data, k, Order::Pre).unwrap();
        assert_eq!(hash, blake3::hash(&data), "group log {k}");
        assert!(ob.to_bytes() == *want, "group log {k}, the pool");
        let (ob, _) = one_thread.install(|| outboard_with(&*cpu(), &data, k, Order::Pre)).unwrap();
        assert!(ob.to_bytes() == *want, "group log {k}, one thread");
    }
}

/// Large inputs, where GPU backends hash on the device rather than handing small inputs back to
/// the CPU: every backend's outboards in both orders and its encoding equal to bao's (group log 0)
/// and bao-tree's (group log 4), at 4 MiB and a partial chunk (a chunk count that is no power of
/// two) on every CPU kernel and GPU, software ones included (the chunk groups are capped subtrees
/// of the same dispatches as a plain hash), and at 64 MiB and a few chunks more (tens of
/// work-groups, a partial last group) on hardware GPUs.
#[test]
fn large_inputs_match_the_oracles_on_every_backend() {
    let targets = targets();
    for size in [(4 << 20) + 1025, (64 << 20) + 3 * 1024 + 5] {
        let hardware_gpu = |i: &b3accel::DeviceInfo| i.device.is_gpu() && !i.is_software_gpu();
        let on: Vec<_> = targets.iter().filter(|t| size < (64 << 20) || hardware_gpu(t.backend.info())).collect();
        if on.is_empty() {
            continue;
        }
        let data = pattern(size);
        for k in [0u8, 4] {
            let pre_oracle = PreOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
            let post_oracle = PostOrderMemOutboard::create(&data, BlockSize::from_chunk_log(k));
            let encoded_oracle = bao_tree_response(&data, &pre_oracle, &ChunkRanges::all());
            let bao_outboard = (k == 0).then(|| bao::encode::outboard(&data).0);
            for t in &on {
                let what = format!("{}, size {size}, group log {k}", t.name);
                let (pre, hash) = outboard_with(&*t.backend, &data, k, Order::Pre).unwrap();
                assert_eq!(hash, pre_oracle.root, "{what}");
                assert!(pre.parents() == &pre_oracle.data[..], "pre-order outboard, {what}");
                let (post, _) = outboard_with(&*t.backend, &data, k, Order::Post).unwrap();
                assert!(post.parents() == &post_oracle.data[..], "post-order outboard, {what}");
                let (encoded, _) = encode_with(&*t.backend, &data, k).unwrap();
                assert!(encoded == encoded_oracle, "encoding, {what}");
                if let Some(bao_outboard) = &bao_outboard {
                    assert!(pre.to_bytes() == *bao_outboard, "bao's outboard, {what}");
                }
            }
        }
    }
}
