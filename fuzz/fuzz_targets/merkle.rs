//! libFuzzer target: Merkle roots of any leaves and `hash_many` of any messages on the CPU
//! backend, against their definitions over upstream `blake3`.
#![no_main]

use b3accel::Device;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&[msg_len], data)) = input.split_first_chunk::<1>() else { return };
    // Leaves: the input in 32-byte pieces (and a few hundred more derived from it).
    let mut leaves: Vec<[u8; 32]> = data.chunks_exact(32).map(|c| c.try_into().unwrap()).collect();
    let extra = data.first().map_or(0, |&b| b as u32 * 3);
    leaves.extend((0..extra).map(|i| *blake3::hash(&[&i.to_le_bytes()[..], data].concat()).as_bytes()));
    if !leaves.is_empty() {
        let mut level = leaves.clone();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|p| if let [l, r] = p { *blake3::hash(&[*l, *r].concat()).as_bytes() } else { p[0] })
                .collect();
        }
        assert_eq!(*b3accel::merkle_root(Device::Cpu, &leaves).unwrap().as_bytes(), level[0]);
    }
    let msg_len = 1 + msg_len as usize * 9;
    let whole = data.len() / msg_len * msg_len;
    let got = b3accel::hash_many(Device::Cpu, &data[..whole], msg_len).unwrap();
    for (h, m) in got.iter().zip(data[..whole].chunks(msg_len)) {
        assert_eq!(*h, blake3::hash(m));
    }
});
