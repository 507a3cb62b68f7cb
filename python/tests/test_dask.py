"""b3accel.dask on a real LocalCluster of worker processes: outputs equal blake3-py and b3sum."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import blake3 as upstream
import pytest
from distributed import Client, LocalCluster

import b3accel
import b3accel.dask as bd
from conftest import ci

PIECE = 64 << 10
MODES: list[dict[str, Any]] = [
    {},
    {"key": bytes(range(32))},
    {"derive_key_context": "b3accel dask tests 2026-01-01 context"},
]
MODE_IDS = ["hash", "keyed", "derive_key"]
SIZES = [0, 1, 1023, 1024, 1025, PIECE - 1, PIECE, PIECE + 1, 5 * PIECE + 1024 + 500, (2 << 20) + 3]


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with Client(cluster) as c:  # type: ignore[no-untyped-call]
        yield c
    cluster.close()


def expected(data: bytes, mode: dict[str, Any], length: int = 32, seek: int = 0) -> bytes:
    """blake3-py's output for ``data`` in ``mode``."""
    hasher = upstream.blake3(data, key=mode["key"]) if "key" in mode else (
        upstream.blake3(data, derive_key_context=mode["derive_key_context"])
        if "derive_key_context" in mode
        else upstream.blake3(data)
    )
    return hasher.digest(length, seek=seek)


def write_files(root: Path, sizes: list[int]) -> list[Path]:
    paths = []
    for size in sizes:
        path = root / f"object-{size}"
        path.write_bytes(os.urandom(size))
        paths.append(path)
    return paths


def b3sum() -> str:
    path = os.environ.get("B3SUM", "/opt/b3sum/bin/b3sum")
    if not shutil.which(path):
        if ci():
            pytest.fail(f"b3sum not found at {path}")
        pytest.skip(f"b3sum not found at {path}")
    return path


def test_plan_covers_each_object_once() -> None:
    sizes = [0, 5, PIECE, PIECE + 1, 3 * PIECE + 7, 10, 20, 30]
    tasks = bd.plan(sizes, PIECE, files_per_task=2)
    batched = [i for t in tasks if isinstance(t, bd.Batch) for i in t.indices]
    assert batched == [0, 1, 2, 5, 6, 7]
    assert all(len(t.indices) <= 2 for t in tasks if isinstance(t, bd.Batch))
    for index in (3, 4):
        pieces = [(t.offset, t.length) for t in tasks if isinstance(t, bd.Piece) and t.object_index == index]
        assert pieces == [tuple(p) for p in b3accel.plan_pieces(sizes[index], PIECE)]
        assert sum(n for _, n in pieces) == sizes[index]
    # Batches are capped at one piece's bytes.
    assert [t.indices for t in bd.plan([PIECE, 1, PIECE - 1, 1], PIECE) if isinstance(t, bd.Batch)] == [
        (0,), (1, 2), (3,)
    ]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_awkward_sizes_all_modes(client: Client, tmp_path: Path, mode: dict[str, Any]) -> None:
    paths = write_files(tmp_path, SIZES)
    outputs = bd.hash_files([str(p) for p in paths], client=client, piece_bytes=PIECE, **mode)
    assert outputs == [expected(p.read_bytes(), mode) for p in paths]


@pytest.mark.parametrize("piece", [1 << 10, 16 << 10, 1 << 20])
def test_piece_sizes_and_xof_seek(client: Client, tmp_path: Path, piece: int) -> None:
    paths = write_files(tmp_path, [piece - 1, piece + 1, 7 * piece + 100])
    for mode in MODES:
        outputs = bd.hash_files(
            [str(p) for p in paths], client=client, piece_bytes=piece, length=131, seek=1000, **mode
        )
        assert outputs == [expected(p.read_bytes(), mode, 131, 1000) for p in paths]


def test_32_mib_object(client: Client, tmp_path: Path) -> None:
    (path,) = write_files(tmp_path, [(32 << 20) + 4097])
    assert bd.hash_file(str(path), client=client, piece_bytes=1 << 20) == expected(path.read_bytes(), {})


def test_tree_of_small_files_equals_b3sum(client: Client, tmp_path: Path) -> None:
    rng_sizes = [(i * 7919) % 3000 for i in range(10_000)]
    for i, size in enumerate(rng_sizes):
        (tmp_path / f"d{i % 100}").mkdir(exist_ok=True)
        (tmp_path / f"d{i % 100}" / f"f{i:05}").write_bytes(os.urandom(size))
    paths = sorted(str(p) for p in tmp_path.rglob("f*"))
    outputs = bd.hash_files(paths, client=client, piece_bytes=PIECE)
    lines = subprocess.run([b3sum(), *paths], check=True, capture_output=True, text=True).stdout.splitlines()
    assert [bd.b3sum_line(o, p) for o, p in zip(outputs, paths)] == lines


def test_missing_object_is_named(client: Client, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-object")
    with pytest.raises(FileNotFoundError, match="no-such-object"):
        bd.hash_file(missing, client=client, piece_bytes=PIECE)


@pytest.mark.parametrize("change", [-1, +1, -PIECE], ids=["shrank", "grew", "shrank-a-piece"])
def test_changed_size_fails_naming_object_and_range(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: int
) -> None:
    # The plan sees a size the workers then do not find: the object changed between the two.
    for size in (3 * PIECE + 5, 100):
        (path,) = write_files(tmp_path, [size])
        monkeypatch.setattr(bd, "_sizes", lambda urls, options: [size - change])
        with pytest.raises(bd.ObjectReadError, match=rf"{path.name}: bytes \d+\.\.\d+"):
            bd.hash_file(str(path), client=client, piece_bytes=PIECE)


def test_worker_killed_mid_job(client: Client, tmp_path: Path) -> None:
    (path,) = write_files(tmp_path, [(32 << 20) + 5])
    tasks, sizes, futures = bd.submit([str(path)], client=client, piece_bytes=16 << 10)
    while not any(f.status == "finished" for f in futures):
        time.sleep(0.01)
    pids: dict[str, int] = client.run(os.getpid)
    assert not all(f.status == "finished" for f in futures), "the job ended before a worker could be killed"
    os.kill(next(iter(pids.values())), signal.SIGKILL)
    outputs = bd.collect(client, tasks, sizes, futures)
    assert outputs == [expected(path.read_bytes(), {})]
    client.wait_for_workers(2, timeout=60)


class RangeHandler(BaseHTTPRequestHandler):
    """Serves the files of ``server.root`` with HEAD and single byte-range GETs."""

    server: RangeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _file(self) -> bytes | None:
        path = self.server.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return None
        return path.read_bytes()

    def do_HEAD(self) -> None:
        data = self._file()
        if data is not None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

    def do_GET(self) -> None:
        data = self._file()
        if data is None:
            return
        spec = self.headers.get("Range")
        if spec is None:
            self.send_response(200)
            body = data
        else:
            first, _, last = spec.removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last) + 1 if last else len(data), len(data))
            if start >= len(data):
                self.send_error(416)
                return
            body = data[start:end]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class RangeServer(ThreadingHTTPServer):
    root: Path


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    server = RangeServer(("127.0.0.1", 0), RangeHandler)
    server.root = tmp_path
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_range_reads(client: Client, http_root: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    root, base = http_root
    paths = write_files(root, [0, 1025, PIECE + 1, 9 * PIECE + 3])
    urls = [f"{base}/{p.name}" for p in paths]
    for mode in MODES:
        outputs = bd.hash_files(urls, client=client, piece_bytes=PIECE, length=40, seek=3, **mode)
        assert outputs == [expected(p.read_bytes(), mode, 40, 3) for p in paths]
    with pytest.raises(FileNotFoundError, match="missing-object"):
        bd.hash_file(f"{base}/missing-object", client=client)
    monkeypatch.setattr(bd, "_sizes", lambda urls, options: [9 * PIECE + 4])
    with pytest.raises(bd.ObjectReadError, match=rf"{urls[3]}: bytes \d+\.\.\d+"):
        bd.hash_file(urls[3], client=client, piece_bytes=PIECE)


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "b3accel.dask", *args], input=stdin, capture_output=True, timeout=120
    )


@pytest.mark.parametrize(
    "flags", [[], ["--keyed"], ["--derive-key", "ctx"], ["-l", "100", "--seek", "7"]], ids=str
)
def test_cli_equals_b3sum(client: Client, tmp_path: Path, flags: list[str]) -> None:
    paths = [str(p) for p in write_files(tmp_path, [0, 1025, 3 * PIECE + 1])]
    weird = tmp_path / "back\\slash\nnewline"
    weird.write_bytes(b"x" * 5000)
    paths.append(str(weird))
    key = bytes(range(100, 132)) if "--keyed" in flags else b""
    ours = run_cli("--scheduler", client.scheduler_info()["address"], "--piece", "64K", *flags, *paths, stdin=key)
    assert ours.returncode == 0, ours.stderr.decode()
    theirs = subprocess.run([b3sum(), *flags, *paths], input=key, capture_output=True, check=True)
    assert ours.stdout == theirs.stdout


def test_cli_local_cluster_json(tmp_path: Path) -> None:
    (path,) = write_files(tmp_path, [PIECE * 2 + 1])
    ours = run_cli("--local", "1", "--piece", "64K", "--json", str(path))
    assert ours.returncode == 0, ours.stderr.decode()
    assert json.loads(ours.stdout) == [{"path": str(path), "hash": expected(path.read_bytes(), {}).hex()}]


def test_cli_bad_key_and_unreachable_scheduler(tmp_path: Path) -> None:
    (path,) = write_files(tmp_path, [10])
    short_key = run_cli("--local", "1", "--keyed", str(path), stdin=b"k" * 31)
    assert short_key.returncode == 1 and b"32 bytes" in short_key.stderr and short_key.stdout == b""
    with socket.socket() as s:  # a port that was free a moment ago and that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    ours = run_cli("--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "3", str(path))
    assert ours.returncode == 1 and ours.stdout == b""
    assert b"cannot reach the scheduler" in ours.stderr
    assert time.monotonic() - start < 60, "the connect timeout bounds the wait"


def test_file_url_and_pathlike_inputs(client: Client, tmp_path: Path) -> None:
    (path,) = write_files(tmp_path, [3 * PIECE + 9])
    want = expected(path.read_bytes(), {})
    assert bd.hash_files([path.as_uri(), str(path)], client=client, piece_bytes=PIECE) == [want, want]
