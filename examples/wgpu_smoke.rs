fn main() {
    for d in b3accel::devices() {
        println!("{} {} {} {} [{}]", d.device, d.kind, d.name, d.api, d.driver);
    }
    for s in b3accel::backend_status() {
        if let Err(e) = s.devices {
            println!("{}: {e}", s.backend);
        }
    }
    let n: usize = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(5000);
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    for d in b3accel::devices().into_iter().filter(|d| d.backend == b3accel::BackendKind::Wgpu) {
        let t = std::time::Instant::now();
        let h = b3accel::hash_on(d.device, &data);
        println!(
            "{}: {:?} {:?} expected {}",
            d.device,
            h.map(|h| h.to_hex().to_string()),
            t.elapsed(),
            blake3::hash(&data)
        );
    }
}
