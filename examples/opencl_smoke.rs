use b3accel::opencl::{OpenClBackend, OpenClOptions};
use b3accel::{xof_reader_with, Backend, Mode};
fn main() {
    let list = b3accel::opencl::enumerate().unwrap();
    println!("{list:#?}");
    let gpu = OpenClBackend::with_options(
        0,
        &OpenClOptions {
            segment_bytes: Some(8192),
            staged_loads: Some(true),
            chunk_work_group: Some(4),
            parent_work_group: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    println!("{gpu:?}");
    for len in [
        1025usize,
        2048,
        2049,
        5000,
        64 * 1024 + 1,
        1 << 20,
        (1 << 20) + 3 * 1024 + 17,
    ] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut out = [0u8; 32];
        xof_reader_with(&gpu, &Mode::Hash, &data)
            .unwrap()
            .fill(&mut out);
        println!("{len}: {}", out == *blake3::hash(&data).as_bytes());
        let (h, t) = gpu.hash_timed(&data, &Mode::Hash).unwrap();
        println!("  timed {} {:?}", h == blake3::hash(&data), t);
    }
    let blocks = [[7u8; 64]; 3];
    let mut o = [[0u8; 32]; 3];
    gpu.hash_blocks(&blocks, &mut o).unwrap();
    println!("blocks {}", o[2] == *blake3::hash(&[7u8; 64]).as_bytes());
}
