"""b3accel.dask on a real LocalCluster of worker processes: outputs equal blake3-py and b3sum."""

from __future__ import annotations

import email.utils
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import blake3 as upstream
import fsspec  # type: ignore[import-untyped]
import pytest
from distributed import Client, LocalCluster

import b3accel
import b3accel.dask as bd
from b3accel import _b3accel
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
        monkeypatch.setattr(bd, "_look_up", lambda urls, options: ([size - change], [None]))
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
    file_stat: os.stat_result

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _file(self) -> bytes | None:
        path = self.server.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return None
        self.file_stat = path.stat()
        return path.read_bytes()

    def _identity(self) -> None:
        """An ETag from the file's inode, size and modification time, as web servers make
        theirs, and its Last-Modified."""
        st = self.file_stat
        self.send_header("ETag", f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"')
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))

    def do_HEAD(self) -> None:
        data = self._file()
        if data is not None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self._identity()
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
        self._identity()
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
    monkeypatch.setattr(bd, "_look_up", lambda urls, options: ([9 * PIECE + 4], [{}]))
    with pytest.raises(bd.ObjectReadError, match=rf"{urls[3]}: bytes \d+\.\.\d+"):
        bd.hash_file(urls[3], client=client, piece_bytes=PIECE)


def run_cli(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "b3accel.dask", *args], input=stdin, capture_output=True, timeout=120, cwd=cwd
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


def test_relative_paths_are_the_clients_files(client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The workers run in another directory, where the same relative names lead to other files.
    for side in ("client", "workers"):
        (tmp_path / side / "sub").mkdir(parents=True)
    paths = write_files(tmp_path / "client", [100, 3 * PIECE + 5])
    decoys = write_files(tmp_path / "workers", [100, 3 * PIECE + 5])
    assert [p.name for p in decoys] == [p.name for p in paths]
    worker_dirs: dict[str, str] = client.run(os.getcwd)
    client.run(os.chdir, str(tmp_path / "workers" / "sub"))
    try:
        monkeypatch.chdir(tmp_path / "client" / "sub")
        names = [f"../{p.name}" for p in paths]
        want = [expected(p.read_bytes(), {}) for p in paths]
        assert bd.hash_files(names, client=client, piece_bytes=PIECE) == want
        assert bd.hash_files([f"file://{n}" for n in names], client=client, piece_bytes=PIECE) == want
        cli = run_cli("--scheduler", client.scheduler_info()["address"], "--piece", "64K", *names,
                      cwd=tmp_path / "client" / "sub")
        assert cli.returncode == 0, cli.stderr.decode()
        assert cli.stdout.decode() == "".join(f"{w.hex()}  {n}\n" for w, n in zip(want, names))
    finally:
        for address, directory in worker_dirs.items():
            client.run(os.chdir, directory, workers=[address])


def flip_first_byte(path: Path) -> None:
    """Rewrites ``path`` in place at the same size (same inode): its first byte inverted."""
    with open(path, "r+b") as f:
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 0xFF]))


def replace_keeping_times(path: Path) -> None:
    """Replaces ``path`` by another file of the same size and modification time (a new inode)."""
    st = path.stat()
    new = path.with_name(path.name + ".new")
    new.write_bytes(bytes(reversed(path.read_bytes())))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, path)


def rewrite_after_look_up(monkeypatch: pytest.MonkeyPatch, rewrite: Callable[[], None]) -> None:
    """Runs ``rewrite`` once the client has looked its objects up, before any task runs."""
    look_up = bd._look_up

    def hooked(urls: list[str], options: dict[str, Any]) -> tuple[list[int], list[bd.Identity]]:
        found = look_up(urls, options)
        rewrite()
        return found

    monkeypatch.setattr(bd, "_look_up", hooked)


@pytest.mark.parametrize("size", [100, 3 * PIECE + 5], ids=["batch", "pieces"])
@pytest.mark.parametrize(
    ("rewrite", "what"),
    [(flip_first_byte, "modification time"), (replace_keeping_times, "inode")],
    ids=["in-place", "replaced"],
)
def test_local_file_rewritten_at_same_size_fails(
    client: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    size: int,
    rewrite: Callable[[Path], None],
    what: str,
) -> None:
    # Written just now: the client's look-up must still see a rewrite a moment later.
    (path,) = write_files(tmp_path, [size])
    rewrite_after_look_up(monkeypatch, lambda: rewrite(path))
    with pytest.raises(bd.ObjectReadError, match=rf"{path.name}: bytes \d+\.\.\d+: .*changed.*{what}"):
        bd.hash_file(str(path), client=client, piece_bytes=PIECE)
    assert path.stat().st_size == size
    monkeypatch.undo()
    assert bd.hash_file(str(path), client=client, piece_bytes=PIECE) == expected(path.read_bytes(), {})


@pytest.mark.parametrize("size", [100, 3 * PIECE + 5], ids=["batch", "pieces"])
def test_http_object_rewritten_at_same_size_fails(
    client: Client, http_root: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    root, base = http_root
    (path,) = write_files(root, [size])
    os.utime(path, (1_000_000_000, 1_000_000_000))  # an old time: the rewrite changes the ETag
    url = f"{base}/{path.name}"
    rewrite_after_look_up(monkeypatch, lambda: flip_first_byte(path))
    with pytest.raises(bd.ObjectReadError, match=rf"{url}: bytes \d+\.\.\d+: the object changed .*ETag"):
        bd.hash_file(url, client=client, piece_bytes=PIECE)
    monkeypatch.undo()
    assert bd.hash_file(url, client=client, piece_bytes=PIECE) == expected(path.read_bytes(), {})


@pytest.fixture(scope="module")
def thread_client() -> Iterator[Client]:
    """A cluster of threads in this process: they share its memory:// store."""
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    with Client(cluster, set_as_default=False) as c:  # type: ignore[no-untyped-call]
        yield c
    cluster.close()


def test_memory_store_object_rewritten_fails(thread_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = fsspec.filesystem("memory")
    blobs = {"/b3accel-dask-test/small": os.urandom(100), "/b3accel-dask-test/big": os.urandom(3 * PIECE + 5)}
    fs.pipe(blobs)
    try:
        urls = [f"memory://{name}" for name in blobs]
        want = [expected(data, {}) for data in blobs.values()]
        assert bd.hash_files(urls, client=thread_client, piece_bytes=PIECE) == want
        for (name, data), url in zip(blobs.items(), urls):
            rewrite_after_look_up(monkeypatch, lambda: fs.pipe_file(name, bytes(reversed(data))))
            with pytest.raises(bd.ObjectReadError, match=rf"{url}: bytes \d+\.\.\d+: the object changed .*created"):
                bd.hash_file(url, client=thread_client, piece_bytes=PIECE)
            monkeypatch.undo()
    finally:
        fs.rm(list(blobs))


@pytest.mark.parametrize(
    "bad",
    [
        {"length": 2**40},
        {"length": bd.MAX_LENGTH + 1},
        {"length": 2**62},
        {"seek": 2**64},
        {"seek": 2**64 - 10, "length": 11},
        {"piece_bytes": 0},
        {"piece_bytes": -PIECE},
        {"piece_bytes": 2**64},
    ],
    ids=str,
)
def test_bounds_fail_on_the_client(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: dict[str, int]
) -> None:
    # Two objects: a batch (outputs made on a worker) and pieces (merged on the client).
    paths = [str(p) for p in write_files(tmp_path, [10, 3 * PIECE])]
    submitted: list[Any] = []
    real_map = client.map

    def recorded_map(*args: Any, **kwargs: Any) -> Any:
        submitted.append(args)
        return real_map(*args, **kwargs)

    monkeypatch.setattr(client, "map", recorded_map)
    with pytest.raises(ValueError, match="length|seek|piece_bytes"):
        bd.hash_files(paths, client=client, **{"piece_bytes": PIECE, **bad})  # type: ignore[arg-type]
    assert submitted == [], "no task was submitted"


def test_largest_seek(client: Client, tmp_path: Path) -> None:
    paths = write_files(tmp_path, [10, 3 * PIECE])
    outputs = bd.hash_files([str(p) for p in paths], client=client, piece_bytes=PIECE, seek=2**64 - 32)
    assert outputs == [expected(p.read_bytes(), {}, 32, 2**64 - 32) for p in paths]


def test_batches_bound_their_outputs() -> None:
    tasks = bd.plan([10] * 10, PIECE, length=PIECE // 4)
    assert [t.indices for t in tasks if isinstance(t, bd.Batch)] == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]
    assert [len(t.indices) for t in bd.plan([10] * 3, PIECE, length=bd.MAX_LENGTH) if isinstance(t, bd.Batch)] == [
        1, 1, 1
    ]


def test_worker_refuses_unbounded_outputs(tmp_path: Path) -> None:
    # A task called with arguments no client checked allocates nothing unbounded.
    paths = write_files(tmp_path, [10, 10])
    run = functools.partial(
        bd._run_task, key=None, derive_key_context=None, seek=0, device="cpu", storage_options={}
    )
    batch = bd.Batch((0, 1), (10, 10))
    urls = tuple(str(p) for p in paths)
    for length in (2**40, 2**62):
        with pytest.raises(ValueError, match="length|too large"):
            run(batch, urls, (None, None), length=length)
    with pytest.raises(ValueError, match="too large"):
        run(batch, urls, (None, None), length=bd.MAX_LENGTH)


def test_a_rust_panic_is_a_task_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pyo3's PanicException derives from BaseException, which Dask's workers do not report as a
    # task's error: gathering would wait forever.
    class PanicException(BaseException):
        pass

    def panics(*args: Any, **kwargs: Any) -> list[bytes]:
        raise PanicException("index out of bounds")

    (path,) = write_files(tmp_path, [10])
    monkeypatch.setattr(_b3accel, "hash_local_files", panics)
    with pytest.raises(RuntimeError, match="PanicException: index out of bounds"):
        bd._run_task(
            bd.Batch((0,), (10,)), (str(path),), (None,), key=None, derive_key_context=None, length=32, seek=0,
            device="cpu", storage_options={},
        )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--local", "0"], b"at least 1"),
        (["--local", "-1"], b"at least 1"),
        (["--local", "two"], b"not a whole number"),
        (["--local", "1", "--threads", "0"], b"at least 1"),
        (["--local", "1", "-l", str(2**40)], b"length"),
        (["--local", "1", "--seek", str(2**64)], b"seek"),
        (["--local", "1", "--piece", "0"], b"piece_bytes"),
    ],
    ids=str,
)
def test_cli_rejects_bad_numbers(tmp_path: Path, args: list[str], message: bytes) -> None:
    (path,) = write_files(tmp_path, [10])
    ours = subprocess.run(
        [sys.executable, "-m", "b3accel.dask", *args, str(path)], capture_output=True, timeout=30
    )
    assert ours.returncode == 2 and ours.stdout == b""
    assert b"usage:" in ours.stderr and message in ours.stderr


NAMES = [
    b"carriage\rreturn",
    b"back\\slash",
    b"new\nline",
    b"all\\\r\n\\three",
    b"caf\xc3\xa9",
    b"bad\xffbyte",
    b"truncated\xe2\x82",
    b"surrogate\xed\xa0\x80x",
    b"overlong\xc0\xafx",
    b"\xf0\x9f\x98\xe2\x82\xacmixed\xfe\r",
]


def test_b3sum_line_escaping() -> None:
    output = bytes(32)
    assert bd.b3sum_line(output, "plain") == "00" * 32 + "  plain"
    assert bd.b3sum_line(output, "a\rb\\c\nd") == "\\" + "00" * 32 + "  a\\rb\\\\c\\nd"
    assert bd.b3sum_line(output, os.fsdecode(b"x\xff\xfey")) == "00" * 32 + "  x\ufffd\ufffdy"
    assert bd.b3sum_line(output, b"x\xe2\x82\r") == "\\" + "00" * 32 + "  x\ufffd\\r"


def test_cli_escapes_names_as_b3sum(client: Client, tmp_path: Path) -> None:
    b3sum_path = b3sum()
    paths = []
    for i, name in enumerate(NAMES):
        path = os.fsencode(tmp_path) + b"/" + name
        with open(path, "wb") as f:
            f.write(os.urandom(100 + i * PIECE // 2))
        paths.append(path)
    ours = run_cli("--scheduler", client.scheduler_info()["address"], "--piece", "64K", *map(os.fsdecode, paths))
    assert ours.returncode == 0, ours.stderr.decode(errors="replace")
    theirs = subprocess.run([b3sum_path, *paths], capture_output=True, check=True)
    assert ours.stdout == theirs.stdout
    assert ours.stdout.count(b"\n") == len(NAMES)
