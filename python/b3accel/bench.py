"""b3accel against blake3-py, interleaved in one run: one-call hashes at several sizes (one thread
and AUTO), update_mmap of a file, and 8 Python threads hashing at once.

Every digest is checked against blake3-py's (or b3accel's on the CPU): a mismatch stops the run.
Each row times the two libraries in turn, sample after sample, so that both see the same machine
state; it prints the median time of a call and the spread (the middle half of the samples), and
the ratio blake3-py / b3accel (above 1: b3accel is faster). Without blake3-py installed, b3accel
alone is timed.

    python -m b3accel.bench                                 # 64 B .. 1 GiB, a 1 GiB file
    python -m b3accel.bench --sizes 64,1K,16K,1M --file-size 64M --samples 5   # a small machine
    python -m b3accel.bench --model-dir DIR [...]   # sigstore model_signing: b3accel.model_signing_bench

(python/bench.py in the repository runs the same.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import b3accel

upstream: Any
try:
    import blake3 as upstream
except ImportError:
    upstream = None

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """`64`, `16K`, `1M`, `1G` as bytes."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1] if text and text[-1] in UNITS else ""
    return int(text[: len(text) - len(unit)]) * UNITS[unit]


def show_size(n: int) -> str:
    for unit in ["G", "M", "K"]:
        if n >= UNITS[unit] and n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]} {unit}iB"
    return f"{n} B"


def show_time(seconds: float) -> str:
    for unit, scale in [("s", 1.0), ("ms", 1e-3), ("us", 1e-6)]:
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def make_data(n: int) -> bytes:
    """n random bytes (random so that no page is shared or compressed away)."""
    block = os.urandom(min(n, 16 << 20))
    return (block * (n // len(block) + 1))[:n] if n else b""


def repeats_for(call: Callable[[], Any], min_seconds: float) -> int:
    """How many calls make one sample last at least min_seconds."""
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            call()
        if time.perf_counter() - start >= min_seconds or count >= 1 << 20:
            return count
        count *= 4


def interleaved(calls: list[Callable[[], Any]], samples: int, min_seconds: float) -> list[list[float]]:
    """Per-call times of each of `calls`, sampled in turn."""
    counts = [repeats_for(c, min_seconds) for c in calls]
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(samples):
        for i, (call, count) in enumerate(zip(calls, counts)):
            start = time.perf_counter()
            for _ in range(count):
                call()
            times[i].append((time.perf_counter() - start) / count)
    return times


def summary(samples: list[float]) -> tuple[float, str]:
    """The median, and the middle half of the samples as a text."""
    ordered = sorted(samples)
    q1, q3 = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
    return statistics.median(ordered), f"{show_time(q1)}..{show_time(q3)}"


def row(name: str, ours: list[float], theirs: list[float] | None, nbytes: int) -> None:
    our_median, our_spread = summary(ours)
    rate = f"{nbytes / our_median / 1e9:7.2f}" if nbytes else "      -"
    line = f"{name:34} {show_time(our_median):>10} {our_spread:>22} {rate}"
    if theirs is not None:
        their_median, their_spread = summary(theirs)
        line += f" {show_time(their_median):>10} {their_spread:>22} {their_median / our_median:6.2f}x"
    print(line, flush=True)


def header() -> None:
    columns = f"{'':34} {'b3accel':>10} {'spread (middle half)':>22} {'GB/s':>7}"
    if upstream is not None:
        columns += f" {'blake3-py':>10} {'spread (middle half)':>22} {'ratio':>7}"
    print(columns)


def check(digest: bytes, data: bytes) -> None:
    """Stops the run if b3accel's digest differs from blake3-py's (or, without it, from b3accel's
    on the CPU): a fast wrong answer is no result."""
    expected = (upstream.blake3(data, max_threads=-1) if upstream else b3accel.blake3(data, device="cpu", max_threads=-1)).digest()
    if digest != expected:
        raise SystemExit(f"MISMATCH at {show_size(len(data))}: {digest.hex()} != {expected.hex()}")


def bench_calls(sizes: list[int], device: str, samples: int, min_seconds: float) -> None:
    for threads, label in [(1, "1 thread"), (-1, "AUTO")]:
        for n in sizes:
            data = make_data(n)
            calls: list[Callable[[], Any]] = [lambda: b3accel.blake3(data, max_threads=threads, device=device).digest()]
            if upstream is not None:
                calls.append(lambda: upstream.blake3(data, max_threads=threads).digest())
            times = interleaved(calls, samples, min_seconds)
            row(f"{show_size(n)}, {label}", times[0], times[1] if upstream else None, n)
            check(b3accel.blake3(data, max_threads=threads, device=device).digest(), data)
            del data


def bench_mmap(file_size: int, device: str, samples: int) -> None:
    with tempfile.NamedTemporaryFile(prefix="b3accel-bench-", delete=False) as f:
        path = f.name
        block = make_data(min(file_size, 64 << 20))
        left = file_size
        while left:
            left -= f.write(block[: min(left, len(block))])
    try:
        for threads, label in [(1, "1 thread"), (-1, "AUTO")]:
            calls: list[Callable[[], Any]] = [
                lambda: b3accel.blake3(max_threads=threads, device=device).update_mmap(path).digest()
            ]
            expected = (upstream.blake3 if upstream else b3accel.blake3)(max_threads=-1).update_mmap(path).digest()
            if calls[0]() != expected:
                raise SystemExit(f"MISMATCH: update_mmap of {show_size(file_size)}")
            if upstream is not None:
                calls.append(lambda: upstream.blake3(max_threads=threads).update_mmap(path).digest())
            times = interleaved(calls, samples, 0.0)
            row(f"update_mmap {show_size(file_size)}, {label}", times[0], times[1] if upstream else None, file_size)
    finally:
        os.unlink(path)


def threads_wall(hash_one: Callable[[bytes], Any], inputs: list[bytes], rounds: int) -> float:
    """Seconds for len(inputs) Python threads to hash their own input `rounds` times each."""
    barrier = threading.Barrier(len(inputs) + 1)

    def work(data: bytes) -> None:
        barrier.wait()
        for _ in range(rounds):
            hash_one(data)

    workers = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def bench_threads(size: int, count: int, device: str, samples: int) -> None:
    inputs = [make_data(size) for _ in range(count)]
    libraries: list[tuple[str, Callable[[bytes], Any]]] = [
        ("b3accel", lambda d: b3accel.blake3(d, device=device).digest())
    ]
    if upstream is not None:
        libraries.append(("blake3-py", lambda d: upstream.blake3(d).digest()))
    rounds = 4
    one: dict[str, list[float]] = {name: [] for name, _ in libraries}
    many: dict[str, list[float]] = {name: [] for name, _ in libraries}
    for _ in range(samples):
        for name, f in libraries:
            one[name].append(threads_wall(f, inputs[:1], rounds) / rounds)
            many[name].append(threads_wall(f, inputs, rounds) / rounds)
    total = size * count
    row(f"{count} threads x {show_size(size)}", many["b3accel"], many.get("blake3-py"), total)
    for name, _ in libraries:
        scaling = statistics.median(one[name]) * count / statistics.median(many[name])
        print(f"  {name}: {count} threads give {scaling:.2f}x the throughput of 1 thread")


def main() -> None:
    if any(arg == "--model-dir" or arg.startswith("--model-dir=") for arg in sys.argv[1:]):
        from b3accel.model_signing_bench import main as model_signing_main

        model_signing_main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,1K,16K,1M,64M,1G", help="one-call input sizes (default %(default)s)")
    parser.add_argument("--file-size", default="1G", help="update_mmap's file size (default %(default)s; 0: skip)")
    parser.add_argument("--thread-size", default="16M", help="each Python thread's input (default %(default)s)")
    parser.add_argument("--threads", type=int, default=8, help="Python threads at once (default %(default)s; 0: skip)")
    parser.add_argument("--device", default="auto", help="b3accel's device= (default %(default)s)")
    parser.add_argument("--samples", type=int, default=9, help="samples per row (default %(default)s)")
    parser.add_argument("--min-sample", type=float, default=0.02, help="seconds a sample lasts at least")
    parser.add_argument("--model-dir", help="time model_signing's hashing of a model there instead (see b3accel.model_signing_bench)")
    args = parser.parse_args()

    print(f"b3accel {b3accel.__version__} on device={args.device}; devices: "
          + ", ".join(f"{d['device']} ({d['name']})" for d in b3accel.devices()))
    print(f"blake3-py {upstream.__version__}" if upstream else "blake3-py is not installed: b3accel alone")
    print(f"{os.cpu_count()} CPUs; ratio = blake3-py time / b3accel time (above 1: b3accel is faster)\n")
    header()
    bench_calls([parse_size(s) for s in args.sizes.split(",") if s], args.device, args.samples, args.min_sample)
    if parse_size(args.file_size):
        bench_mmap(parse_size(args.file_size), args.device, args.samples)
    if args.threads:
        bench_threads(parse_size(args.thread_size), args.threads, args.device, args.samples)


if __name__ == "__main__":
    main()
