"""Signing-time hashing of a model-shaped directory: b3accel's engine for sigstore's model_signing
(``b3accel.model_signing.hashing_config()``) against model_signing's own BLAKE3 and SHA-256 file
serialization, in one run, interleaved sample after sample so that all see the same machine state.

The directory (``--shards`` shards of ``--shard-size`` bytes plus ``--small-files`` small files of
0 B to 2 MiB, as a model repository holds) is written once and reused while its files keep their
sizes. Warm (the default), every engine first hashes it once so that it is in the page cache;
``--cold`` drops the page cache before every sample instead (root only). Each row prints the
median seconds of a whole manifest, the spread (the middle half of the samples), the throughput
and the ratio engine / b3accel (above 1: b3accel is faster). b3accel's manifest is checked against
stock BLAKE3's: a mismatch stops the run.

    python -m b3accel.bench --model-dir /tmp/model                          # 8 x 1 GiB + 200 files
    python -m b3accel.bench --model-dir /tmp/model --shard-size 128M --samples 5
    sudo .venv/bin/python -m b3accel.bench --model-dir /data/model --cold
"""

# model_signing's constructors carry no type annotations.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence

import b3accel
from b3accel.bench import make_data, parse_size, show_size, show_time, summary

ENGINES = ("b3accel", "blake3", "sha256")


def layout(shards: int, shard_size: int, small_files: int) -> dict[str, int]:
    """The model's files (relative path -> size): safetensors shards, then small files of the
    sizes a repository's configs, tokenizers and cards have (fixed by a seeded generator)."""
    files = {f"model-{i + 1:05}-of-{shards:05}.safetensors": shard_size for i in range(shards)}
    sizes = random.Random(54)
    for i in range(small_files):
        folder = ("", "tokenizer/", "configs/nested/", "docs/")[i % 4]
        files[f"{folder}file-{i:04}.json"] = min(int(sizes.lognormvariate(9, 2.5)), 2 << 20)
    return files


def write_model(root: pathlib.Path, files: dict[str, int]) -> None:
    """Writes the files of `files` under `root` that are missing or of another size."""
    block = make_data(64 << 20)
    for name, size in files.items():
        path = root / name
        if path.is_file() and path.stat().st_size == size:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            left = size
            while left:
                left -= f.write(block[: min(left, len(block))])


def drop_caches() -> None:
    """Empties the page cache (root only), so that the next run reads from the storage."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as err:
        raise SystemExit(f"--cold needs root to drop the page cache: {err}") from err


def engines(device: str, max_threads: int) -> dict[str, Callable[[pathlib.Path], object]]:
    from model_signing import hashing

    import b3accel.model_signing as b3ms

    return {
        "b3accel": lambda model: b3ms.hashing_config(device=device, max_threads=max_threads).hash(model),
        "blake3": lambda model: hashing.Config().use_file_serialization(hashing_algorithm="blake3").hash(model),
        "sha256": lambda model: hashing.Config().use_file_serialization(hashing_algorithm="sha256").hash(model),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", required=True, type=pathlib.Path, help="where the model is (written if missing)")
    parser.add_argument("--shards", type=int, default=8, help="large files (default %(default)s)")
    parser.add_argument("--shard-size", default="1G", help="bytes per shard (default %(default)s)")
    parser.add_argument("--small-files", type=int, default=200, help="small files (default %(default)s)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="which to time (default %(default)s)")
    parser.add_argument("--device", default="auto", help="b3accel's device= (default %(default)s)")
    parser.add_argument(
        "--max-threads", type=int, default=b3accel.blake3.AUTO, help="b3accel's max_threads (default: all)"
    )
    parser.add_argument("--samples", type=int, default=5, help="samples per engine (default %(default)s)")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before every sample (root)")
    args = parser.parse_args(argv)

    import model_signing

    files = layout(args.shards, parse_size(args.shard_size), args.small_files)
    total = sum(files.values())
    write_model(args.model_dir, files)
    chosen = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(chosen) - set(ENGINES)
    if unknown:
        raise SystemExit(f"unknown engines {sorted(unknown)}: choose among {', '.join(ENGINES)}")
    runs = {name: run for name, run in engines(args.device, args.max_threads).items() if name in chosen}

    print(
        f"model_signing {model_signing.__version__}, b3accel {b3accel.__version__} on device={args.device}; "
        f"{os.cpu_count()} CPUs; {'cold (page cache dropped before each sample)' if args.cold else 'warm'}"
    )
    print(
        f"{args.model_dir}: {args.shards} x {show_size(parse_size(args.shard_size))} + {args.small_files} small files, "
        f"{total / 1e9:.2f} GB in {len(files)} files\n"
    )

    if "b3accel" in runs and "blake3" in runs:
        if args.cold:
            drop_caches()
        if runs["b3accel"](args.model_dir) != runs["blake3"](args.model_dir):
            raise SystemExit("MISMATCH: b3accel's manifest differs from model_signing's BLAKE3 manifest")
    elif not args.cold:
        for run in runs.values():
            run(args.model_dir)

    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.samples):
        for name, run in runs.items():
            if args.cold:
                drop_caches()
            start = time.perf_counter()
            run(args.model_dir)
            times[name].append(time.perf_counter() - start)

    base = statistics.median(times["b3accel"]) if "b3accel" in times else None
    print(f"{'engine':28} {'median':>10} {'spread (middle half)':>22} {'GB/s':>7} {'/ b3accel':>10}")
    labels = {"b3accel": "b3accel (model_signing)", "blake3": "model_signing BLAKE3", "sha256": "model_signing SHA-256"}
    for name, samples in times.items():
        median, spread = summary(samples)
        ratio = f"{median / base:9.2f}x" if base else ""
        print(
            f"{labels[name]:28} {show_time(median):>10} {spread:>22} {total / median / 1e9:7.2f} {ratio:>10}",
            flush=True,
        )


if __name__ == "__main__":
    main()
