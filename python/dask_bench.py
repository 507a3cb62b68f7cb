"""b3accel.dask against single-process b3accel on one machine: one big file and a tree of small
files, both already in the page cache. Prints throughput, the ratio, and Dask's per-task overhead.

    python dask_bench.py B3ACCEL_BINARY WORKDIR [--file-gib 16] [--files 100000] [--workers 4] [--threads 4] [--piece BYTES]...
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

import b3accel.dask as bd


def best_of(runs: int, fn: Any) -> tuple[float, Any]:
    """The fastest of ``runs`` timed calls of ``fn`` (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def make_file(path: Path, size: int) -> None:
    """``size`` bytes: a 64 MiB random block repeated (the hash cost does not depend on content)."""
    if path.exists() and path.stat().st_size == size:
        return
    block = os.urandom(64 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
        f.write(block[: size % len(block)])


def make_tree(root: Path, count: int) -> list[str]:
    """``count`` files of 1-8 KiB under ``root`` in 100 folders; their paths, sorted."""
    paths = []
    for i in range(count):
        folder = root / f"d{i % 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{i:06}"
        if not path.exists():
            path.write_bytes(os.urandom(1024 + (i * 7919) % 7168))
        paths.append(str(path))
    return sorted(paths)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--file-gib", type=int, default=16)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--piece", type=int, action="append", help="piece bytes (repeat for several; default: b3accel.dask's)")
    args = parser.parse_args()
    pieces = args.piece or [bd.DEFAULT_PIECE_BYTES]
    args.workdir.mkdir(parents=True, exist_ok=True)

    big = args.workdir / "big.bin"
    size = args.file_gib << 30
    make_file(big, size)
    tree = make_tree(args.workdir / "tree", args.files)
    # Bring both into the page cache before any timing.
    subprocess.run([args.binary, str(big)], check=True, capture_output=True)
    subprocess.run([args.binary, "-r", str(args.workdir / "tree")], check=True, capture_output=True)

    def single_file() -> str:
        out = subprocess.run([args.binary, str(big)], check=True, capture_output=True, text=True).stdout
        return out.split()[0]

    def single_tree() -> set[str]:
        cmd = [args.binary, "-r", str(args.workdir / "tree")]
        return set(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines())

    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=args.threads, processes=True, dashboard_address=None
    )
    with Client(cluster) as client:
        client.wait_for_workers(args.workers)
        # Dask's own cost per task: trivial tasks through the same scheduler and workers.
        n = 5000
        overhead, _ = best_of(2, lambda: client.gather(client.map(abs, range(n), pure=False)))
        print(f"per-task overhead: {overhead / n * 1e6:.0f} us per task ({n} trivial tasks, "
              f"{args.workers} workers x {args.threads} threads)")

        t_single, want = best_of(2, single_file)
        print(f"file {args.file_gib} GiB, b3accel single process: {size / t_single / 1e9:.2f} GB/s ({t_single:.2f} s)")
        for piece in pieces:
            tasks = len(bd.plan([size], piece))
            for device in ("auto", "cpu"):
                t, got = best_of(2, lambda: bd.hash_file(str(big), client=client, piece_bytes=piece, device=device))
                assert got.hex() == want, f"dask ({device}) hash differs from b3accel's"
                print(f"file, dask device={device}: {size / t / 1e9:.2f} GB/s ({t:.2f} s, {tasks} tasks of "
                      f"{piece >> 20} MiB): {t_single / t:.2f}x single process")

        tree_bytes = sum(os.path.getsize(p) for p in tree)
        t_single, want_lines = best_of(2, single_tree)
        print(f"tree {len(tree)} files ({tree_bytes / 1e6:.0f} MB), b3accel -r: {len(tree) / t_single:.0f} files/s "
              f"({t_single:.2f} s)")
        start = time.perf_counter()
        sizes = bd._sizes(tree, {})
        t_stat = time.perf_counter() - start
        tasks = len(bd.plan(sizes, pieces[0]))
        t_plan = time.perf_counter() - start - t_stat
        print(f"tree, on the client: sizes {t_stat:.2f} s, plan {t_plan:.2f} s")
        t, outputs = best_of(2, lambda: bd.hash_files(tree, client=client, piece_bytes=pieces[0]))
        assert {bd.b3sum_line(o, p) for o, p in zip(outputs, tree)} == want_lines, "dask tree differs from b3accel -r"
        print(f"tree, dask: {len(tree) / t:.0f} files/s ({t:.2f} s, {tasks} tasks): {t_single / t:.2f}x b3accel -r")
    cluster.close()


if __name__ == "__main__":
    main()
