//! Secrets stay secret: every public type that can hold a key, a derived context key, a keyed or
//! key-derivation chaining value or key material is formatted (`{:?}`, `{:#?}`) and searched for
//! each secret in every rendering a careless `Debug` could give it: hex (both cases), a decimal
//! byte list, little-endian u32 words (decimal, hex, as a list) and the text itself.

use b3accel::{backend, flags, xof_reader_on, Backend, Device, Hasher, Mode, OutputReader, IV};
use std::io::{Seek, SeekFrom};
use std::sync::Arc;

const KEY: [u8; 32] = *b"whats the Elvish word for friend";
const CONTEXT: &str = "b3accel 2026-11-24 debug-form context";
const MATERIAL: &[u8] = b"the key material, which is secret too; long enough to be distinctive";

/// Every way a formatter could show `secret` (or a 4-byte piece of it): hex in both cases, a
/// decimal or hex byte list, little-endian u32 words (alone, as a list, in decimal and hex), and
/// the text where the secret is text.
fn renderings(secret: &[u8]) -> Vec<String> {
    let text = secret.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut out = vec![hex(secret), hex(secret).to_uppercase(), format!("{secret:?}"), format!("{secret:x?}")];
    for window in secret.windows(4).step_by(2) {
        let list = format!("{window:?}");
        out.push(list[1..list.len() - 1].to_string());
        out.push(hex(window));
        out.push(hex(window).to_uppercase());
        if text {
            out.push(String::from_utf8_lossy(window).into_owned());
        }
    }
    if text {
        out.push(String::from_utf8_lossy(secret).into_owned());
    }
    if secret.len().is_multiple_of(4) {
        let words: Vec<u32> = secret.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        out.push(format!("{words:?}"));
        out.push(format!("{words:x?}"));
        for w in &words {
            out.extend([w.to_string(), format!("{w:x}"), format!("{w:X}"), format!("{w:08x}")]);
        }
    }
    // Shorter strings than this turn up by chance (a small word in decimal).
    out.retain(|r| r.len() >= 4);
    out
}

/// The secrets of this test: the key, its words, the derived context key, keyed and derive-mode
/// chaining values, the key material.
fn secrets() -> Vec<(&'static str, Vec<u8>)> {
    let cpu = backend(Device::Cpu).unwrap();
    let key_words: [u32; 8] = std::array::from_fn(|i| u32::from_le_bytes(KEY[4 * i..4 * i + 4].try_into().unwrap()));
    // The derived context key: the context hashed in the DERIVE_KEY_CONTEXT mode.
    let mut context_key = [[0u8; 32]; 1];
    cpu.hash_many(CONTEXT.as_bytes(), CONTEXT.len(), &IV, flags::DERIVE_KEY_CONTEXT, &mut context_key).unwrap();
    let context_words: [u32; 8] =
        std::array::from_fn(|i| u32::from_le_bytes(context_key[0][4 * i..4 * i + 4].try_into().unwrap()));
    let data = input();
    let cv = |words: &[u32; 8], flags: u32, chunk: u64| {
        let mut out = [[0u8; 32]; 1];
        let at = chunk as usize * 1024;
        cpu.chunk_subtrees(&data[at..at + 1024], chunk, words, flags, &mut out).unwrap();
        out[0].to_vec()
    };
    vec![
        ("the key", KEY.to_vec()),
        ("the derived context key", context_key[0].to_vec()),
        ("keyed chunk 0 CV", cv(&key_words, flags::KEYED_HASH, 0)),
        ("keyed chunk 1 CV", cv(&key_words, flags::KEYED_HASH, 1)),
        ("derive-mode chunk 0 CV", cv(&context_words, flags::DERIVE_KEY_MATERIAL, 0)),
        ("derive-mode chunk 1 CV", cv(&context_words, flags::DERIVE_KEY_MATERIAL, 1)),
        ("the key material", MATERIAL.to_vec()),
    ]
}

/// Two full chunks and a partial third: the stack holds chunk CVs, the root is a parent node.
fn input() -> Vec<u8> {
    (0..2 * 1024 + 100).map(|i| (i * 7 % 251) as u8).collect()
}

fn assert_hidden(what: &str, text: &str, secrets: &[(&str, Vec<u8>)]) {
    for (name, secret) in secrets {
        for r in renderings(secret) {
            assert!(!text.contains(&r), "{what} shows {name} (as {r:?}):\n{text}");
        }
    }
}

fn check<T: std::fmt::Debug>(what: &str, value: &T, secrets: &[(&str, Vec<u8>)]) -> usize {
    let forms = [format!("{value:?}"), format!("{value:#?}")];
    for form in &forms {
        assert_hidden(what, form, secrets);
    }
    forms.len()
}

#[test]
fn no_debug_form_shows_a_secret() {
    let secrets = secrets();
    let data = input();
    let mut formatted = 0;
    let modes = [Mode::Keyed(KEY), Mode::DeriveKey(CONTEXT.into())];
    for mode in &modes {
        formatted += check("Mode", mode, &secrets);
    }
    formatted += check("Some(Mode)", &Some(Mode::Keyed(KEY)), &secrets);

    let cpu: Arc<dyn Backend> = backend(Device::Cpu).unwrap();
    let mut hashers = vec![
        Hasher::new_keyed_on(Device::Cpu, &KEY).unwrap(),
        Hasher::new_keyed_on(Device::Auto, &KEY).unwrap(),
        Hasher::new_derive_key_on(Device::Cpu, CONTEXT).unwrap(),
        Hasher::with_backend(cpu.clone(), &Mode::Keyed(KEY)),
    ];
    for h in &mut hashers {
        formatted += check("a fresh Hasher", h, &secrets);
        h.update(&data).unwrap();
        formatted += check("a Hasher after input", h, &secrets);
    }
    let mut material = Hasher::new_derive_key_on(Device::Cpu, CONTEXT).unwrap();
    material.update(MATERIAL).unwrap();
    formatted += check("a derive-key Hasher holding key material", &material, &secrets);

    let mut readers: Vec<OutputReader> = Vec::new();
    for h in &hashers {
        readers.push(h.finalize_xof().unwrap());
    }
    readers.push(material.finalize_xof().unwrap());
    for mode in &modes {
        for (dev, bytes) in [(Device::Cpu, &data[..]), (Device::Cpu, &data[..40]), (Device::Auto, MATERIAL)] {
            readers.push(xof_reader_on(dev, mode, bytes).unwrap());
        }
        readers.push(b3accel::xof_reader_with(&*cpu, mode, &data).unwrap());
    }
    for mut r in readers {
        formatted += check("an OutputReader", &r, &secrets);
        r.seek(SeekFrom::Start(1 << 38)).unwrap();
        r.fill(&mut [0u8; 100]);
        formatted += check("an OutputReader after a seek and a read", &r, &secrets);
    }
    // The secrets were real: they do show where they are printed on purpose.
    for (name, secret) in &secrets {
        let shown = format!("{secret:?} {}", String::from_utf8_lossy(secret));
        assert!(renderings(secret).iter().any(|r| shown.contains(r)), "{name}: the search finds nothing");
    }
    eprintln!("{formatted} renderings searched for {} secrets", secrets.len());
}

#[test]
fn keyed_modes_compare_by_key() {
    let mut other = KEY;
    other[31] ^= 1;
    assert_eq!(Mode::Keyed(KEY), Mode::Keyed(KEY));
    assert_ne!(Mode::Keyed(KEY), Mode::Keyed(other));
    assert_ne!(Mode::Keyed(KEY), Mode::Hash);
    assert_eq!(Mode::DeriveKey("a".into()), Mode::DeriveKey("a".into()));
    assert_ne!(Mode::DeriveKey("a".into()), Mode::DeriveKey("b".into()));
}
