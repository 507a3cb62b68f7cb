//! `b3accel bench`'s bao rows: outboards and verified decoding of 1 and 64 MiB against the plain
//! hash of the same bytes, the ceiling of a pass that also keeps every parent. (The criterion
//! bench `benches/bao.rs` adds the `bao` and `bao-tree` crates.)

use super::gpus::Gpu;
use super::row::{size_label, Row};
use super::timing::{time, time_interleaved};
use b3accel::bao::{decode_into, encode_on, outboard_into, outboard_on, Order};
use b3accel::Device;
use std::time::Duration;

/// Largest input a software GPU (PoCL, lavapipe, llvmpipe) is given here.
const SOFTWARE_GPU_MAX: usize = 1 << 20;

/// Adds the bao rows for the sizes up to `max` bytes of `data`.
pub(super) fn bench_bao(rows: &mut Vec<Row>, data: &[u8], gpus: &[Gpu], budget: Duration, one_thread: &rayon::ThreadPool) {
    for size in [1usize << 20, 64 << 20].into_iter().filter(|&s| s <= data.len()) {
        let input = &data[..size];
        let label = size_label(size as u64);
        let mut push = |series: String, r: Result<f64, String>| match r {
            Ok(seconds) => {
                let row = Row::new("bao", series, size as u64, label.clone(), seconds);
                eprintln!("bench: bao {:<26} {:>8}  {:>9.2} GB/s", row.series, row.label, row.gbps());
                rows.push(row);
            }
            Err(e) => eprintln!("bench: bao {series} at {label}: {e}"),
        };
        let outboard = |d: Device, k: u8| outboard_on(d, input, k, Order::Pre).map(drop).map_err(|e| e.to_string());
        let Ok((encoded, hash)) = encode_on(Device::Cpu, input, 0) else { continue };
        let mut out = vec![0u8; size];
        let mut decode = || decode_into(&encoded, &hash, 0, &mut out).map_err(|e| e.to_string());
        let hash_cpu = || b3accel::hash_on(Device::Cpu, input).map(drop).map_err(|e| e.to_string());
        // One thread, then the whole pool: each against the plain hash in the same turns.
        let single = one_thread.install(|| {
            time_interleaved(budget, &mut [&mut || outboard(Device::Cpu, 0), &mut || outboard(Device::Cpu, 4)])
        });
        let (mut hash_f, mut k0, mut k4) = (hash_cpu, || outboard(Device::Cpu, 0), || outboard(Device::Cpu, 4));
        // Into a buffer kept from turn to turn: the walk alone, no fresh memory to fault in.
        let cpu = b3accel::backend(Device::Cpu).map_err(|e| e.to_string());
        let mut parents = vec![0u8; size.div_ceil(1024).saturating_sub(1) * 64];
        let mut k0_into = || {
            let cpu = cpu.as_ref().map_err(Clone::clone)?;
            outboard_into(&**cpu, input, 0, Order::Pre, &mut parents).map(drop).map_err(|e| e.to_string())
        };
        let pool = time_interleaved(budget, &mut [&mut hash_f, &mut k0, &mut k4, &mut decode, &mut k0_into]);
        let mut single = single.into_iter();
        push("outboard k=0 cpu (1 thread)".into(), single.next().expect("two series"));
        push("outboard k=4 cpu (1 thread)".into(), single.next().expect("two series"));
        let mut pool = pool.into_iter();
        push("hash cpu".into(), pool.next().expect("five series"));
        push("outboard k=0 cpu".into(), pool.next().expect("five series"));
        push("outboard k=4 cpu".into(), pool.next().expect("five series"));
        push("decode k=0 cpu".into(), pool.next().expect("five series"));
        push("outboard k=0 cpu (into)".into(), pool.next().expect("five series"));
        for g in gpus.iter().filter(|g| !g.info.is_software_gpu() || size <= SOFTWARE_GPU_MAX) {
            push(format!("outboard k=4 {} host", g.info.device), time(budget, || outboard(g.info.device, 4)));
        }
    }
}
