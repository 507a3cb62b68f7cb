"""Hash huge objects, or many files, on a Dask cluster: exactly what ``b3sum`` prints.

``hash_file(url)`` cuts one object into subtree-aligned pieces; each Dask task reads its byte
range on its worker (a local file in Rust, anything else through fsspec) and returns the piece's
chaining value, hashed on the task's own thread (the worker's thread slots are the parallelism:
one core each) or on the worker's GPU; the client merges them (``b3accel.merge``).
``hash_files(urls)`` does the same for many objects and batches small ones, several per task.
A task that cannot read its whole range fails the hash with ``ObjectReadError`` naming the
object and range: a changed or missing object never yields a hash. Needs ``dask``,
``distributed`` and ``fsspec`` (plus the fsspec driver of each protocol used) on the client and
every worker. Command line: ``python -m b3accel.dask --help``; docs/dask.md in the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Union

import fsspec  # type: ignore[import-untyped]

import b3accel
from b3accel import _b3accel

if TYPE_CHECKING:
    from distributed import Client, Future

DeviceArg = Union[str, Sequence[str], None]

#: Default piece length: 256 MiB keeps Dask's cost per task (about 0.6 ms) far below a piece's
#: read and hash time (about 50 ms on one core) while a 10 GiB object still makes 40 tasks; on
#: 16 cores it hashed a page-cached file 1.2-1.4x faster than 64 MiB pieces (docs/dask.md).
DEFAULT_PIECE_BYTES = 256 << 20

#: At most this many small objects are hashed by one task (bytes are capped at a piece too).
DEFAULT_FILES_PER_TASK = 256


class ObjectReadError(OSError):
    """An object's byte range could not be read whole: missing, unreadable, or changed size."""


class Piece(NamedTuple):
    """One task: bytes ``offset..offset + length`` of object ``object_index`` (``total`` bytes long)."""

    object_index: int
    offset: int
    length: int
    total: int


class Batch(NamedTuple):
    """One task: whole objects ``indices``, each of at most one piece, with their ``sizes``."""

    indices: tuple[int, ...]
    sizes: tuple[int, ...]


Task = Union[Piece, Batch]


def plan(sizes: Sequence[int], piece_bytes: int, files_per_task: int = DEFAULT_FILES_PER_TASK) -> list[Task]:
    """The tasks that hash objects of ``sizes`` bytes (pure: no I/O).

    An object longer than one piece (``piece_bytes`` rounded as ``b3accel.plan_pieces`` does)
    becomes one ``Piece`` per piece; the others are grouped, in input order, into ``Batch`` es of
    at most ``files_per_task`` objects and one piece's bytes.
    """
    if files_per_task < 1:
        raise ValueError(f"files_per_task must be >= 1, not {files_per_task}")
    tasks: list[Task] = []
    batch_indices: list[int] = []
    batch_sizes: list[int] = []
    batch_bytes = 0
    piece_len = _piece_len(piece_bytes)

    def flush() -> None:
        nonlocal batch_bytes
        if batch_indices:
            tasks.append(Batch(tuple(batch_indices), tuple(batch_sizes)))
            batch_indices.clear()
            batch_sizes.clear()
            batch_bytes = 0

    for index, size in enumerate(sizes):
        if size > piece_len:
            tasks.extend(Piece(index, o, n, size) for o, n in b3accel.plan_pieces(size, piece_bytes))
            continue
        if len(batch_indices) >= files_per_task or (batch_indices and batch_bytes + size > piece_len):
            flush()
        batch_indices.append(index)
        batch_sizes.append(size)
        batch_bytes += size
    flush()
    return tasks


def _piece_len(piece_bytes: int) -> int:
    """``piece_bytes`` rounded as ``plan_pieces`` rounds it (its only piece of a longer input)."""
    # An input of twice piece_bytes is at least two pieces: its first is a whole one.
    return b3accel.plan_pieces(2 * max(piece_bytes, b3accel.CHUNK_LEN), piece_bytes)[0][1]


def _plain_path(url: str) -> bool:
    """Whether ``url`` is a plain file system path: no protocol, no fsspec chain."""
    return "://" not in url and "::" not in url


def _local_path(url: str) -> str | None:
    """The file system path of a local ``url`` (a plain path or ``file://``), else None: local
    objects skip fsspec, whose per-call cost would dominate small files."""
    if url.startswith("file://"):
        return url[len("file://") :]
    return url if _plain_path(url) else None


def _read(url: str, offset: int, length: int, whole_len: int, storage_options: dict[str, Any]) -> memoryview | bytes:
    """Bytes ``offset..offset + length`` of the fsspec object ``url`` (``whole_len`` bytes long),
    whole or an ``ObjectReadError`` naming the object and range."""
    where = f"{url}: bytes {offset}..{offset + length}"
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options)
        if offset == 0 and length == whole_len:
            data = fs.cat_file(path)
        else:
            # One byte past the range where it ends the object: a longer object is caught.
            end = offset + length + (1 if offset + length == whole_len else 0)
            data = fs.cat_file(path, start=offset, end=end)
    except Exception as exc:
        raise ObjectReadError(f"{where}: {type(exc).__name__}: {exc}") from exc
    if len(data) != length:
        raise ObjectReadError(
            f"{where}: read {len(data)} bytes where {length} were planned (the object changed size)"
        )
    return bytes(data)


def _run_task(
    task: Task,
    urls: tuple[str, ...],
    *,
    key: bytes | None,
    derive_key_context: str | None,
    length: int,
    seek: int,
    device: DeviceArg,
    storage_options: dict[str, Any],
) -> bytes:
    """On a worker: a ``Piece`` gives its chaining value, a ``Batch`` the outputs of its objects
    concatenated (one bytes object: Dask gathers a list of many small ones a hundred times slower).
    Local files are read and hashed in Rust on the task's own thread (``_b3accel``'s
    ``local_file_subtree`` / ``hash_local_files``): the worker's thread slots are the parallelism."""
    mode: dict[str, Any] = {"key": key, "derive_key_context": derive_key_context, "device": device}
    if isinstance(task, Piece):
        local = _local_path(urls[0])
        if local is not None:
            with _object_read_errors():
                return _b3accel.local_file_subtree(local, task.offset, task.length, task.total, **mode)
        data = _read(urls[0], task.offset, task.length, task.total, storage_options)
        return b3accel.subtree(data, task.offset, **mode)
    outputs: list[bytes] = [b""] * len(urls)
    paths = [_local_path(u) for u in urls]
    local_files = [(i, p) for i, p in enumerate(paths) if p is not None]
    if local_files:
        with _object_read_errors():
            hashed = _b3accel.hash_local_files(
                [p for _, p in local_files], [task.sizes[i] for i, _ in local_files], length=length, seek=seek, **mode
            )
        for (i, _), output in zip(local_files, hashed):
            outputs[i] = output
    for i, (url, size, path) in enumerate(zip(urls, task.sizes, paths)):
        if path is None:
            data = _read(url, 0, size, size, storage_options)
            outputs[i] = b3accel.blake3(data, max_threads=1, **mode).digest(length, seek=seek)
    return b"".join(outputs)


@contextlib.contextmanager
def _object_read_errors() -> Iterator[None]:
    """The ``OSError`` of a local read (its message names the file and range) as an
    ``ObjectReadError``."""
    try:
        yield
    except OSError as exc:
        raise ObjectReadError(str(exc)) from exc


def _distributed() -> Any:
    """The ``distributed`` module, imported when first used (its API is untyped)."""
    import distributed

    return distributed


def _client(client: Client | None) -> Any:
    """``client``, or the current default client."""
    if client is not None:
        return client
    try:
        return _distributed().default_client()
    except ValueError:
        raise ValueError("no Dask client: pass client=, or create a distributed.Client first") from None


def _check_mode(key: bytes | None, derive_key_context: str | None, length: int, seek: int) -> None:
    """Bad arguments fail on the client, before any task runs."""
    if key is not None and derive_key_context is not None:
        raise ValueError("key and derive_key_context cannot be used together")
    if key is not None and len(key) != 32:
        raise ValueError(f"a key is 32 bytes, not {len(key)}")
    if length < 0 or seek < 0:
        raise ValueError("length and seek must be >= 0")


def _sizes(urls: Sequence[str], storage_options: dict[str, Any]) -> list[int]:
    """Each object's size, looked up on the client (a missing one is a FileNotFoundError): local
    files all at once in parallel (a stat each, which for 100,000 files one after the other
    took a third of a second), the others through fsspec."""
    if all(map(_plain_path, urls)):
        # Plain paths only (the common case of many files): one call, nothing per path here.
        sizes = _b3accel.local_file_sizes(urls)
        if min(sizes, default=0) >= 0:
            return sizes
    paths = [_local_path(u) for u in urls]
    local = [(i, path) for i, path in enumerate(paths) if path is not None]
    sizes = [0] * len(urls)
    for (i, _), size in zip(local, _b3accel.local_file_sizes([path for _, path in local])):
        if size == -1:
            raise FileNotFoundError(f"{urls[i]}: no such object")
        if size == -2:
            raise IsADirectoryError(f"{urls[i]}: is a directory")
        sizes[i] = size
    for i, (url, local_path) in enumerate(zip(urls, paths)):
        if local_path is not None:
            continue
        try:
            fs, path = fsspec.core.url_to_fs(url, **storage_options)
            info = fs.info(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"{url}: no such object") from None
        if info.get("type") == "directory":
            raise IsADirectoryError(f"{url}: is a directory")
        size = info.get("size")
        if size is None:
            raise ObjectReadError(f"{url}: its store does not report a size")
        sizes[i] = int(size)
    return sizes


def submit(
    urlpaths: Sequence[str],
    *,
    client: Client | None = None,
    piece_bytes: int = DEFAULT_PIECE_BYTES,
    files_per_task: int = DEFAULT_FILES_PER_TASK,
    key: bytes | None = None,
    derive_key_context: str | None = None,
    length: int = 32,
    seek: int = 0,
    device: DeviceArg = "auto",
    storage_options: dict[str, Any] | None = None,
) -> tuple[list[Task], list[int], list[Future[Any]]]:
    """Plan and submit the tasks of ``hash_files``; returns ``(tasks, sizes, futures)`` for
    ``collect`` (the command line shows Dask's progress bar on the futures in between)."""
    _check_mode(key, derive_key_context, length, seek)
    dask_client = _client(client)
    options = dict(storage_options or {})
    urls = [os.fspath(u) for u in urlpaths]
    sizes = _sizes(urls, options)
    tasks = plan(sizes, piece_bytes, files_per_task)
    task_urls = [
        (urls[t.object_index],) if isinstance(t, Piece) else tuple(urls[i] for i in t.indices) for t in tasks
    ]
    # The constants travel in a partial: client.map's own keywords (key=, pure=) are Dask's.
    run = functools.partial(
        _run_task,
        key=bytes(key) if key is not None else None,
        derive_key_context=derive_key_context,
        length=length,
        seek=seek,
        device=device,
        storage_options=options,
    )
    futures: list[Future[Any]] = dask_client.map(run, tasks, task_urls, pure=False)
    return tasks, sizes, futures


def collect(
    client: Client | None,
    tasks: list[Task],
    sizes: list[int],
    futures: list[Future[Any]],
    *,
    key: bytes | None = None,
    derive_key_context: str | None = None,
    length: int = 32,
    seek: int = 0,
) -> list[bytes]:
    """Gather ``submit``'s results and merge each object's pieces: outputs in input order. The
    first failed task's error is raised and the other tasks are cancelled."""
    dask_client = _client(client)
    try:
        results = dask_client.gather(futures)
    except BaseException:
        dask_client.cancel(futures)
        raise
    outputs: list[bytes | None] = [None] * len(sizes)
    pieces: dict[int, list[tuple[int, int, bytes]]] = {}
    for task, result in zip(tasks, results):
        if isinstance(task, Piece):
            pieces.setdefault(task.object_index, []).append((task.offset, task.length, result))
        else:
            for k, index in enumerate(task.indices):
                outputs[index] = result[k * length : (k + 1) * length]
    for index, cvs in pieces.items():
        outputs[index] = b3accel.merge(
            cvs, key=key, derive_key_context=derive_key_context, length=length, seek=seek
        )
    assert all(o is not None for o in outputs), "every object is in exactly one task"
    return [o for o in outputs if o is not None]


def hash_files(
    urlpaths: Sequence[str],
    *,
    client: Client | None = None,
    piece_bytes: int = DEFAULT_PIECE_BYTES,
    files_per_task: int = DEFAULT_FILES_PER_TASK,
    key: bytes | None = None,
    derive_key_context: str | None = None,
    length: int = 32,
    seek: int = 0,
    device: DeviceArg = "auto",
    storage_options: dict[str, Any] | None = None,
) -> list[bytes]:
    """BLAKE3 of each object of ``urlpaths`` (local paths or fsspec URLs), in input order, hashed
    on ``client``'s cluster (default: the current Dask client).

    Each output is ``length`` bytes from output offset ``seek``, in the default mode, keyed
    (``key``, 32 bytes) or key derivation (``derive_key_context``): what ``b3sum`` prints with the
    same flags. Objects longer than ``piece_bytes`` are split into pieces hashed in parallel;
    smaller ones go ``files_per_task`` to a task. ``storage_options`` go to fsspec on the client
    and the workers. A missing object is a ``FileNotFoundError``; a range a worker cannot read
    whole is an ``ObjectReadError`` naming the object and range.
    """
    tasks, sizes, futures = submit(
        urlpaths,
        client=client,
        piece_bytes=piece_bytes,
        files_per_task=files_per_task,
        key=key,
        derive_key_context=derive_key_context,
        length=length,
        seek=seek,
        device=device,
        storage_options=storage_options,
    )
    return collect(
        client, tasks, sizes, futures, key=key, derive_key_context=derive_key_context, length=length, seek=seek
    )


def hash_file(
    urlpath: str,
    *,
    client: Client | None = None,
    piece_bytes: int = DEFAULT_PIECE_BYTES,
    key: bytes | None = None,
    derive_key_context: str | None = None,
    length: int = 32,
    seek: int = 0,
    device: DeviceArg = "auto",
    storage_options: dict[str, Any] | None = None,
) -> bytes:
    """BLAKE3 of one object (a local path or an fsspec URL), hashed in pieces on ``client``'s
    cluster; see ``hash_files`` for the arguments and errors."""
    return hash_files(
        [urlpath],
        client=client,
        piece_bytes=piece_bytes,
        key=key,
        derive_key_context=derive_key_context,
        length=length,
        seek=seek,
        device=device,
        storage_options=storage_options,
    )[0]


def b3sum_line(output: bytes, path: str) -> str:
    """``b3sum``'s line for ``path``: a path with a backslash or newline is escaped and the line
    starts with a backslash, as b3sum does."""
    if "\\" in path or "\n" in path:
        return "\\" + output.hex() + "  " + path.replace("\\", "\\\\").replace("\n", "\\n")
    return output.hex() + "  " + path


def _size_arg(text: str) -> int:
    """A byte count with an optional K/M/G suffix (powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m b3accel.dask``: b3sum's lines for objects hashed on a Dask cluster."""
    parser = argparse.ArgumentParser(
        prog="python -m b3accel.dask", description="BLAKE3 of files or fsspec URLs, hashed on a Dask cluster."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (tcp://host:8786)")
    where.add_argument("--local", metavar="N", type=int, help="start a LocalCluster of N worker processes")
    parser.add_argument("--threads", type=int, default=None, help="threads per --local worker")
    parser.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--keyed", action="store_true", help="keyed mode, the 32-byte key read from stdin")
    modes.add_argument("--derive-key", metavar="CONTEXT", help="key derivation mode with this context")
    parser.add_argument("-l", "--length", type=int, default=32, help="output bytes (default 32)")
    parser.add_argument("--seek", type=int, default=0, help="output offset in bytes (default 0)")
    parser.add_argument("--piece", type=_size_arg, default=DEFAULT_PIECE_BYTES, metavar="SIZE",
                        help="piece length, e.g. 64M (default 256M)")
    parser.add_argument("--device", default="auto", help='device on each worker (default "auto")')
    parser.add_argument("--json", action="store_true", help="print a JSON list of {path, hash}")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    args = parser.parse_args(argv)
    if args.length < 0 or args.seek < 0:
        parser.error("--length and --seek must be >= 0")

    key = None
    if args.keyed:
        key = sys.stdin.buffer.read(33)
        if len(key) != 32:
            print(f"{parser.prog}: the key on stdin must be exactly 32 bytes", file=sys.stderr)
            return 1

    distributed = _distributed()
    cluster = None
    try:
        if args.scheduler:
            try:
                client = distributed.Client(args.scheduler, timeout=args.connect_timeout)
            except OSError as exc:
                print(f"{parser.prog}: cannot reach the scheduler {args.scheduler} "
                      f"within {args.connect_timeout:g} s: {exc}", file=sys.stderr)
                return 1
        else:
            cluster = distributed.LocalCluster(n_workers=args.local or os.cpu_count() or 1, threads_per_worker=args.threads,
                                   processes=True, dashboard_address=None)
            client = distributed.Client(cluster)
        with client:
            mode = {"key": key, "derive_key_context": args.derive_key, "length": args.length, "seek": args.seek}
            tasks, sizes, futures = submit(args.paths, client=client, piece_bytes=args.piece,
                                           device=args.device, **mode)
            if sys.stderr.isatty() and not args.json:
                distributed.progress(futures)
                print(file=sys.stderr)
            outputs = collect(client, tasks, sizes, futures, **mode)
            futures.clear()  # the results leave the cluster before it closes
    except (OSError, ValueError) as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a Dask failure (KilledWorker, ...): one line, not a traceback
        print(f"{parser.prog}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.close()
    if args.json:
        print(json.dumps([{"path": p, "hash": o.hex()} for p, o in zip(args.paths, outputs)]))
    else:
        for path, output in zip(args.paths, outputs):
            print(b3sum_line(output, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
