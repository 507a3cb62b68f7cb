//! `Resident::bao_outboard` on every OpenCL device and wgpu adapter, against the CPU outboard
//! (`bao::outboard_on`): sizes around chunks and chunk groups (group logs 0, 1, 4 and 6),
//! chunk counts that are no power of two, a few MiB, both orders, host and device destinations,
//! a range that starts inside the buffer, and the errors a caller can make.
//!
//! Under `CI=true` a built GPU backend without a device fails here (tests/common/mod.rs).
#![cfg(any(feature = "opencl", feature = "wgpu"))]

mod common;

use b3accel::bao::{outboard_on, Order};
use b3accel::{BackendKind, Device, OutboardDest, Resident};

/// Where a test range starts in its buffer: chunk-aligned, as OpenCL asks, and aligned for
/// every wgpu device.
const AT: u64 = 4096;

/// Content lengths for group log `k`: around a chunk, a group and two groups, and chunk counts
/// that are no power of two.
fn lengths(k: u8) -> Vec<u64> {
    let g = 1024u64 << k;
    let mut v = vec![0, 1, 1023, 1024, 1025, 2048, 3 * 1024 + 1, g - 1, g, g + 1, 2 * g - 1, 2 * g, 2 * g + 1];
    for chunks in [7u64, 13, 100, 1000, 4097] {
        v.extend([chunks * 1024, chunks * 1024 + 300]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A backend's buffers, for the checks below: one holding `data` from byte `at`, one of `len`
/// bytes to write into, and reading one back.
struct Buffers<B> {
    with: WithData<B>,
    blank: Box<dyn Fn(u64) -> B>,
    read: ReadBack<B>,
}

type WithData<B> = Box<dyn Fn(u64, &[u8]) -> B>;
type ReadBack<B> = Box<dyn Fn(&B, u64) -> Vec<u8>>;

fn data(len: u64) -> Vec<u8> {
    common::pattern(len as usize)
}

/// Every length and group log, both orders, into host memory and into a device buffer, from
/// byte `AT` of the buffer.
fn check_outboards<R: Resident>(r: &R, name: &str, b: &Buffers<R::Buffer>, extra: &[u64]) {
    for k in [0u8, 1, 4, 6] {
        for &len in lengths(k).iter().chain(extra) {
            check_outboard(r, name, b, k, len);
        }
    }
}

/// One length and group log, both orders, into host memory and into a device buffer.
fn check_outboard<R: Resident>(r: &R, name: &str, b: &Buffers<R::Buffer>, k: u8, len: u64) {
    let data = data(len);
    let buf = (b.with)(AT, &data);
    for order in [Order::Pre, Order::Post] {
        let (want, want_hash) = outboard_on(Device::Cpu, &data, k, order).unwrap();
        let what = format!("{name}: {len} bytes, group log {k}, {order:?}");
        let mut got = vec![0xEEu8; want.parents().len()];
        let t = r.bao_outboard(&buf, AT..AT + len, k, order, OutboardDest::Host(&mut got)).unwrap();
        assert_eq!(t.value, want_hash, "{what}: hash");
        assert!(got == want.parents(), "{what}: parents into host memory");
        assert!(t.total >= t.kernel, "{what}: times");
        // A device destination with room to spare, which keeps its last bytes.
        let room = want.parents().len() as u64 + 64;
        let dest = (b.blank)(room);
        let hash = r.bao_outboard(&buf, AT..AT + len, k, order, OutboardDest::Device(&dest)).unwrap().value;
        assert_eq!(hash, want_hash, "{what}: hash, device destination");
        let back = (b.read)(&dest, room);
        assert!(back[..want.parents().len()] == *want.parents(), "{what}: parents on the device");
        assert!(back[want.parents().len()..].iter().all(|&x| x == 0), "{what}: bytes after the parents");
    }
}

/// Wrong destinations and ranges are errors, not panics.
fn check_errors<R: Resident>(r: &R, name: &str, b: &Buffers<R::Buffer>, misaligned: u64) {
    let data = data(10 * 1024);
    let buf = (b.with)(0, &data);
    let mut short = vec![0u8; 8 * 64];
    let mut long = vec![0u8; 10 * 64];
    let ok = vec![0u8; 9 * 64];
    for (what, res) in [
        (
            "a host destination too short",
            r.bao_outboard(&buf, 0..10 * 1024, 0, Order::Pre, OutboardDest::Host(&mut short)),
        ),
        (
            "a host destination too long",
            r.bao_outboard(&buf, 0..10 * 1024, 0, Order::Post, OutboardDest::Host(&mut long)),
        ),
        (
            "a device destination too short",
            r.bao_outboard(&buf, 0..10 * 1024, 0, Order::Pre, OutboardDest::Device(&(b.blank)(8 * 64))),
        ),
        (
            "a range past the buffer",
            r.bao_outboard(&buf, 0..11 * 1024, 0, Order::Pre, OutboardDest::Host(&mut ok.clone())),
        ),
        (
            "a range past the buffer's end",
            r.bao_outboard(&buf, 1024..11 * 1024, 0, Order::Pre, OutboardDest::Host(&mut ok.clone())),
        ),
        #[allow(clippy::reversed_empty_ranges)]
        ("a backwards range", r.bao_outboard(&buf, 2048..1024, 0, Order::Pre, OutboardDest::Host(&mut [][..]))),
        (
            "a group log above the largest",
            r.bao_outboard(&buf, 0..10 * 1024, 21, Order::Pre, OutboardDest::Host(&mut [][..])),
        ),
        (
            "a misaligned range start",
            r.bao_outboard(
                &buf,
                misaligned..misaligned + 9 * 1024,
                0,
                Order::Pre,
                OutboardDest::Host(&mut vec![0u8; 8 * 64]),
            ),
        ),
    ] {
        assert!(res.is_err(), "{name}: {what} is no error");
    }
    // One group: no parents, the plain hash.
    let h = r.bao_outboard(&buf, 0..1024, 0, Order::Pre, OutboardDest::Host(&mut [][..])).unwrap().value;
    assert_eq!(h, blake3::hash(&data[..1024]), "{name}: one group");
}

/// A few MiB, in a run of its own.
const BIG: [u64; 1] = [(3 << 20) + 5];

#[cfg(feature = "opencl")]
mod opencl {
    use super::*;
    use b3accel::opencl::OpenClBackend;

    fn buffers(be: &OpenClBackend) -> Buffers<ocl::Buffer<u8>> {
        let (q1, q2, q3) = (be.queue().clone(), be.queue().clone(), be.queue().clone());
        Buffers {
            with: Box::new(move |at, bytes| {
                let buf = ocl::Buffer::<u8>::builder()
                    .queue(q1.clone())
                    .len(at as usize + bytes.len().max(1))
                    .fill_val(0)
                    .build()
                    .unwrap();
                if !bytes.is_empty() {
                    buf.write(bytes).offset(at as usize).queue(&q1).enq().unwrap();
                }
                buf
            }),
            blank: Box::new(move |len| {
                ocl::Buffer::<u8>::builder().queue(q2.clone()).len(len.max(1) as usize).fill_val(0).build().unwrap()
            }),
            read: Box::new(move |buf, len| {
                let mut out = vec![0u8; len as usize];
                buf.read(&mut out).queue(&q3).enq().unwrap();
                out
            }),
        }
    }

    #[test]
    fn outboards_match_the_cpu() {
        for i in common::device_indices(BackendKind::OpenCl) {
            let be = OpenClBackend::open(i).unwrap_or_else(|e| panic!("opencl:{i}: {e}"));
            check_outboards(&be, &format!("opencl:{i}"), &buffers(&be), &BIG);
        }
    }

    #[test]
    fn errors_are_errors() {
        for i in common::device_indices(BackendKind::OpenCl) {
            let be = OpenClBackend::open(i).unwrap_or_else(|e| panic!("opencl:{i}: {e}"));
            check_errors(&be, &format!("opencl:{i}"), &buffers(&be), 512);
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu_adapters {
    use super::*;
    use b3accel::wgpu::WgpuBackend;
    use b3accel::Backend;

    fn adapters() -> Vec<WgpuBackend> {
        common::device_indices(BackendKind::Wgpu)
            .into_iter()
            .map(|i| WgpuBackend::open(i).unwrap_or_else(|e| panic!("wgpu:{i}: {e}")))
            .collect()
    }

    fn buffers(device: &wgpu::Device, queue: &wgpu::Queue) -> Buffers<wgpu::Buffer> {
        let (d1, d2, d3) = (device.clone(), device.clone(), device.clone());
        let (q1, q3) = (queue.clone(), queue.clone());
        let storage = |d: &wgpu::Device, size: u64| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("test buffer"),
                size: size.next_multiple_of(4).max(4),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        Buffers {
            with: Box::new(move |at, bytes| {
                let buf = storage(&d1, at + bytes.len() as u64);
                let mut padded = bytes.to_vec();
                padded.resize(bytes.len().next_multiple_of(4), 0);
                if !padded.is_empty() {
                    q1.write_buffer(&buf, at, &padded);
                }
                buf
            }),
            blank: Box::new(move |len| storage(&d2, len)),
            read: Box::new(move |buf, len| {
                let rb = d3.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("test readback"),
                    size: len.next_multiple_of(4).max(4),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = d3.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(buf, 0, &rb, 0, len.next_multiple_of(4).max(4));
                q3.submit([enc.finish()]);
                rb.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
                d3.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
                let view = rb.get_mapped_range(..).expect("mapped");
                view[..len as usize].to_vec()
            }),
        }
    }

    fn name(be: &WgpuBackend) -> String {
        format!("{} ({})", be.info().device, be.info().name)
    }

    #[test]
    fn outboards_match_the_cpu() {
        let _serial = common::one_at_a_time();
        for be in adapters() {
            check_outboards(be.resident(), &name(&be), &buffers(be.device(), be.queue()), &BIG);
        }
    }

    #[test]
    fn errors_are_errors() {
        let _serial = common::one_at_a_time();
        for be in adapters() {
            check_errors(be.resident(), &name(&be), &buffers(be.device(), be.queue()), 4);
        }
    }

    /// A device of the caller's with 64 KiB storage bindings (segments of 64 chunks): groups in
    /// several capped runs of one submission, runs of one group, and groups larger than a
    /// segment, each with a partial last group.
    #[test]
    fn outboards_in_small_bindings() {
        let _serial = common::one_at_a_time();
        for be in adapters() {
            let info = be.device().adapter_info();
            let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
            desc.backends = wgpu::Backends::all();
            // Our own instance, its drivers' start-up chatter kept off stderr as the library's is.
            let adapters = b3accel::stderr::quiet(|| {
                let instance = wgpu::Instance::new(desc);
                pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
            });
            let adapter = adapters
                .into_iter()
                .find(|a| a.get_info() == info)
                .unwrap_or_else(|| panic!("{}: no matching adapter", name(&be)));
            let limits = wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..wgpu::Limits::default() };
            let desc =
                wgpu::DeviceDescriptor { label: Some("caller's"), required_limits: limits, ..Default::default() };
            let (device, queue) = pollster::block_on(adapter.request_device(&desc)).expect("caller's device");
            let r = b3accel::wgpu::ResidentHasher::new(&device, &queue).unwrap();
            assert_eq!(r.max_segment_bytes(), 64 << 10);
            let what = format!("{} with 64 KiB bindings", name(&be));
            let b = buffers(&device, &queue);
            // Runs of 64, 4, 1 group and groups of 2 and 4 segments, each + a partial group.
            for (k, len) in [
                (0u8, 200 * 1024 + 5),
                (4, 300 * 1024 + 7),
                (6, 5 * 65536 + 2048 + 3),
                (7, 3 << 17),
                (8, (3 << 18) + 1000),
            ] {
                check_outboard(&r, &what, &b, k, len);
            }
        }
    }
}
