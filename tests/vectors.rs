//! BLAKE3's official test vectors (tests/data/test_vectors.json), in all three modes with the full
//! 131-byte output, on every backend and at every CPU SIMD level, one-shot and incrementally.

mod common;

use b3accel::{xof_reader_with, Hasher, Mode};
use common::{pattern, targets};
use serde_json::Value;

struct Case {
    input_len: usize,
    outputs: [(Mode, Vec<u8>); 3],
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn cases() -> Vec<Case> {
    // Compiled in, so that a test binary run on another machine carries its vectors.
    let json: Value = serde_json::from_str(include_str!("data/test_vectors.json")).unwrap();
    let key: [u8; 32] = json["key"].as_str().unwrap().as_bytes().try_into().unwrap();
    let context = json["context_string"].as_str().unwrap().to_string();
    let cases: Vec<Case> = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            input_len: c["input_len"].as_u64().unwrap() as usize,
            outputs: [
                (Mode::Hash, hex(c["hash"].as_str().unwrap())),
                (Mode::Keyed(key), hex(c["keyed_hash"].as_str().unwrap())),
                (Mode::DeriveKey(context.clone()), hex(c["derive_key"].as_str().unwrap())),
            ],
        })
        .collect();
    assert_eq!(cases.len(), 35, "the official file has 35 cases");
    cases
}

#[test]
fn official_vectors_on_every_backend() {
    let cases = cases();
    let targets = targets();
    for t in &targets {
        for case in &cases {
            let input = pattern(case.input_len);
            for (mode, expected) in &case.outputs {
                assert_eq!(expected.len(), 131);
                // One shot: the whole input in one backend call.
                let mut out = vec![0u8; expected.len()];
                xof_reader_with(&*t.backend, mode, &input).unwrap().fill(&mut out);
                assert_eq!(&out, expected, "{}: one-shot, len {}, {mode:?}", t.name, case.input_len);
                // Incremental, in uneven pieces, and every suffix through a seek.
                let mut h = Hasher::with_backend(t.backend.clone(), mode);
                for piece in input.chunks(1000) {
                    h.update(piece).unwrap();
                }
                let mut reader = h.finalize_xof().unwrap();
                for seek in [0usize, 1, 63, 64, 65, 100, 130] {
                    let mut tail = vec![0u8; expected.len() - seek];
                    reader.set_position(seek as u64);
                    reader.fill(&mut tail);
                    assert_eq!(tail, expected[seek..], "{}: incremental, len {}, seek {seek}", t.name, case.input_len);
                }
                assert_eq!(h.finalize().unwrap().as_bytes(), &expected[..32]);
            }
        }
        eprintln!("vectors: {} ok ({} cases x 3 modes)", t.name, cases.len());
    }
}

#[test]
fn public_functions_match_vectors() {
    let cases = cases();
    for case in &cases {
        let input = pattern(case.input_len);
        let [(_, h), (Mode::Keyed(key), k), (Mode::DeriveKey(ctx), d)] = &case.outputs else { unreachable!() };
        let dev = b3accel::Device::Auto;
        assert_eq!(b3accel::hash_on(dev, &input).unwrap().as_bytes(), &h[..32]);
        assert_eq!(b3accel::keyed_hash_on(dev, key, &input).unwrap().as_bytes(), &k[..32]);
        assert_eq!(b3accel::derive_key_on(dev, ctx, &input).unwrap().as_bytes(), &d[..32]);
        let mut out = vec![0u8; 131];
        b3accel::hash_xof_on(dev, &Mode::Hash, &input, 0, &mut out).unwrap();
        assert_eq!(&out, h);
    }
}
