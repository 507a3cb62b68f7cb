//! The extendable output at and past byte 2^64 - 1 of the stream, against upstream `blake3`: the
//! reader, its `Read` and `Seek` forms and `hash_xof_on` go on counting blocks where the byte
//! position no longer fits a `u64`, as upstream's reader does, and never start the stream again.

use b3accel::{hash_xof_on, Device, Hasher, Mode};
use proptest::prelude::*;
use std::io::{Read, Seek, SeekFrom};

const KEY: [u8; 32] = *b"whats the Elvish word for friend";

fn mode(which: u8) -> Mode {
    match which % 3 {
        0 => Mode::Hash,
        1 => Mode::Keyed(KEY),
        _ => Mode::DeriveKey("b3accel 2026-11-28 xof end".into()),
    }
}

fn upstream_reader(mode: &Mode, data: &[u8]) -> blake3::OutputReader {
    let mut h = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(k) => blake3::Hasher::new_keyed(k),
        Mode::DeriveKey(c) => blake3::Hasher::new_derive_key(c),
    };
    h.update(data).finalize_xof()
}

fn reader(mode: &Mode, data: &[u8]) -> b3accel::OutputReader {
    let mut h = Hasher::with_mode(Device::Cpu, mode).unwrap();
    h.update(data).unwrap();
    h.finalize_xof().unwrap()
}

/// `len` bytes of upstream's stream from `seek`, read in one call.
fn upstream_bytes(mode: &Mode, data: &[u8], seek: u64, len: usize) -> Vec<u8> {
    let mut r = upstream_reader(mode, data);
    r.set_position(seek);
    let mut out = vec![0u8; len];
    r.fill(&mut out);
    out
}

#[test]
fn the_last_byte_below_2_64_and_the_blocks_after_it() {
    let data = b"abc";
    for seek in [u64::MAX, u64::MAX - 1, u64::MAX - 63, u64::MAX - 64, u64::MAX - 200] {
        let expected = upstream_bytes(&Mode::Hash, data, seek, 1000);
        let mut got = vec![0u8; 1000];
        let mut r = reader(&Mode::Hash, data);
        r.set_position(seek);
        r.fill(&mut got);
        assert_eq!(got, expected, "fill from {seek}");
        hash_xof_on(Device::Cpu, &Mode::Hash, data, seek, &mut got).unwrap();
        assert_eq!(got, expected, "hash_xof_on from {seek}");
        let mut r = reader(&Mode::Hash, data);
        r.seek(SeekFrom::Start(seek)).unwrap();
        r.read_exact(&mut got).unwrap();
        assert_eq!(got, expected, "read from {seek}");
    }
    // Past 2^64 the stream is not its beginning again.
    let start = upstream_bytes(&Mode::Hash, data, 0, 64);
    let after = upstream_bytes(&Mode::Hash, data, u64::MAX, 65);
    assert_ne!(after[1..], start[..]);
}

#[test]
fn the_position_past_2_64_is_given_modulo_2_64_and_seeks_from_it_are_exact() {
    let data = b"abc";
    let mut r = reader(&Mode::Hash, data);
    r.set_position(u64::MAX - 1);
    r.fill(&mut [0u8; 5]);
    // Byte 2^64 + 3 of the stream: its position, modulo 2^64, as upstream gives it.
    assert_eq!(r.position(), 3);
    assert_eq!(format!("{r:?}"), format!("OutputReader {{ position: {}, .. }}", (1u128 << 64) + 3));
    // A seek relative to it that lands below 2^64 lands exactly there.
    assert_eq!(r.seek(SeekFrom::Current(-6)).unwrap(), u64::MAX - 2);
    let mut got = [0u8; 4];
    r.read_exact(&mut got).unwrap();
    assert_eq!(got[..], upstream_bytes(&Mode::Hash, data, u64::MAX - 2, 4)[..]);
    // One that lands at or past 2^64 is an error, and the reader stays where it was.
    let before = format!("{r:?}");
    assert!(r.stream_position().is_err());
    assert!(r.seek(SeekFrom::Current(i64::MAX)).is_err());
    assert_eq!(format!("{r:?}"), before);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any input, mode, start within 4 KiB of 2^64 and pattern of reads (fill, `Read`, and
    /// `hash_xof_on` for the whole span) gives upstream's bytes.
    #[test]
    fn reads_across_2_64_match_upstream(
        len in prop_oneof![0usize..130, 1000usize..3000],
        which in 0u8..3,
        back in 0u64..4096,
        pieces in prop::collection::vec(0usize..300, 1..12),
        use_read in any::<bool>(),
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mode = mode(which);
        let seek = u64::MAX - back;
        let total: usize = pieces.iter().sum();
        let expected = upstream_bytes(&mode, &data, seek, total);
        let mut r = reader(&mode, &data);
        r.set_position(seek);
        let mut got = Vec::with_capacity(total);
        for &n in &pieces {
            let mut piece = vec![0u8; n];
            if use_read {
                r.read_exact(&mut piece).unwrap();
            } else {
                r.fill(&mut piece);
            }
            got.extend_from_slice(&piece);
        }
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(r.position(), seek.wrapping_add(total as u64));
        let mut whole = vec![0u8; total];
        hash_xof_on(Device::Cpu, &mode, &data, seek, &mut whole).unwrap();
        prop_assert_eq!(&whole, &expected);
    }
}
