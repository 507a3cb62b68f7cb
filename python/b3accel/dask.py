"""Hash huge objects, or many files, on a Dask cluster: exactly what ``b3sum`` prints.

``hash_file(url)`` cuts one object into subtree-aligned pieces; each Dask task reads its byte
range on its worker (a local file in Rust, anything else through fsspec) and returns the piece's
chaining value, hashed on the task's own thread (the worker's thread slots are the parallelism:
one core each) or on the worker's GPU; the client merges them (``b3accel.merge``).
``hash_files(urls)`` does the same for many objects and batches small ones, several per task.
The client resolves relative paths against its own directory and records each object's size and
identity (modification and change times and inode of a local file; ETag, generation, version or
modification time where an fsspec store reports them); a task that cannot read its whole range,
or that finds the object changed once its bytes are read, fails the hash with ``ObjectReadError``
naming the object and range: a changed or missing object never yields a hash. Needs ``dask``,
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
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Union

import fsspec  # type: ignore[import-untyped]

import b3accel
from b3accel import _b3accel

if TYPE_CHECKING:
    from distributed import Client, Future

DeviceArg = Union[str, Sequence[str], None]

#: Default piece length: 256 MiB keeps Dask's cost per task far below a piece's read and hash
#: time while a 10 GiB object still makes 40 tasks, and beat 64 MiB pieces (docs/dask.md).
DEFAULT_PIECE_BYTES = 256 << 20

#: At most this many small objects are hashed by one task (bytes are capped at a piece too).
DEFAULT_FILES_PER_TASK = 256

#: The longest output (``length``) of one object: outputs are held whole in worker and client
#: memory and travel through Dask, so a length is bounded before any task runs.
MAX_LENGTH = 1 << 30

#: The output stream's positions are 64-bit: ``seek + length`` must not pass it.
_OUTPUT_END = 1 << 64

#: A local file modified this recently (nanoseconds) may be modified again within the same tick
#: of the kernel's file-time clock and keep the same times: the client waits this long and looks
#: it up again, so a later change always shows.
_RACY_NS = 50_000_000

#: The ``info()`` fields of fsspec stores that change when an object is rewritten: HTTP
#: (``ETag``, ``Last-Modified``, checksums), S3 (``ETag``, ``LastModified``, ``VersionId``),
#: GCS (``generation``, ``etag``, ``md5Hash``, ``crc32c``, ``updated``), Azure (``etag``,
#: ``last_modified``, ``version_id``), SFTP/HDFS (``mtime``), memory (``created``).
STORE_IDENTITY_FIELDS = (
    "ETag", "etag", "Last-Modified", "LastModified", "last_modified", "Content-MD5", "Digest",
    "VersionId", "version_id", "generation", "md5Hash", "crc32c", "updated", "mtime", "created",
)

#: What the client recorded of an object: a local file's (mtime s, ns, ctime s, ns, inode), a
#: store's identity fields (``STORE_IDENTITY_FIELDS`` it reports), or None.
Identity = Union[tuple[int, int, int, int, int], dict[str, Any], None]


class ObjectReadError(OSError):
    """An object's byte range could not be read whole, or the object changed after the client
    looked it up (size, or identity: times, inode, ETag, version...): no hash is returned."""


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


def plan(
    sizes: Sequence[int], piece_bytes: int, files_per_task: int = DEFAULT_FILES_PER_TASK, *, length: int = 32
) -> list[Task]:
    """The tasks that hash objects of ``sizes`` bytes (pure: no I/O).

    An object longer than one piece (``piece_bytes`` rounded as ``b3accel.plan_pieces`` does)
    becomes one ``Piece`` per piece; the others are grouped, in input order, into ``Batch`` es of
    at most ``files_per_task`` objects and one piece's bytes, whose outputs (``length`` bytes
    each) fill at most one piece or ``MAX_LENGTH`` (a batch always takes one object).
    """
    if files_per_task < 1:
        raise ValueError(f"files_per_task must be >= 1, not {files_per_task}")
    tasks: list[Task] = []
    batch_indices: list[int] = []
    batch_sizes: list[int] = []
    batch_bytes = 0
    piece_len = _piece_len(piece_bytes)
    files_per_task = min(files_per_task, max(1, min(piece_len, MAX_LENGTH) // max(length, 1)))

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


def _check_piece_bytes(piece_bytes: int) -> None:
    """A piece length ``plan_pieces`` can round: at least one byte, at most 2**62."""
    if not 1 <= piece_bytes <= 1 << 62:
        raise ValueError(f"piece_bytes must be between 1 and 2**62, not {piece_bytes}")


def _plain_path(url: str) -> bool:
    """Whether ``url`` is a plain file system path: no protocol, no fsspec chain."""
    return "://" not in url and "::" not in url


def _local_path(url: str) -> str | None:
    """The file system path of a local ``url`` (a plain path or ``file://``), else None: local
    objects skip fsspec, whose per-call cost would dominate small files."""
    if url.startswith("file://"):
        return url[len("file://") :]
    return url if _plain_path(url) else None


def _absolute(urls: list[str]) -> list[str]:
    """``urls`` with each relative local path (plain or ``file://``) joined to the client's
    working directory: a worker would resolve it against its own. Joined, not normalized: ``..``
    after a symbolic link means what the kernel says it means."""
    if all(url.startswith("/") for url in urls):
        return urls  # the common case of many absolute paths: nothing per path here
    cwd = os.getcwd()
    out = []
    for url in urls:
        path = _local_path(url)
        if path is not None and not os.path.isabs(path):
            joined = os.path.join(cwd, path)
            url = "file://" + joined if url.startswith("file://") else joined
        out.append(url)
    return out


def _store_identity(info: dict[str, Any]) -> dict[str, Any]:
    """The fields of an fsspec ``info()`` that tell one version of an object from another."""
    return {name: info[name] for name in STORE_IDENTITY_FIELDS if info.get(name) is not None}


def _read(
    url: str, offset: int, length: int, whole_len: int, storage_options: dict[str, Any], identity: Identity
) -> memoryview | bytes:
    """Bytes ``offset..offset + length`` of the fsspec object ``url`` (``whole_len`` bytes long),
    whole and still of the ``identity`` the client recorded once read, or an ``ObjectReadError``
    naming the object and range."""
    where = f"{url}: bytes {offset}..{offset + length}"
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options)
        if offset == 0 and length == whole_len:
            data = fs.cat_file(path)
        else:
            # One byte past the range where it ends the object: a longer object is caught.
            end = offset + length + (1 if offset + length == whole_len else 0)
            data = fs.cat_file(path, start=offset, end=end)
        now: Identity = identity
        if isinstance(identity, dict) and identity:
            fs.invalidate_cache(path)  # a listing's cached info would say nothing of a change
            now = _store_identity(fs.info(path))
    except Exception as exc:
        raise ObjectReadError(f"{where}: {type(exc).__name__}: {exc}") from exc
    if len(data) != length:
        raise ObjectReadError(
            f"{where}: read {len(data)} bytes where {length} were planned (the object changed size)"
        )
    if now != identity:
        assert isinstance(identity, dict) and isinstance(now, dict)
        changed = ", ".join(
            f"{name} {identity.get(name)!r} -> {now.get(name)!r}"
            for name in STORE_IDENTITY_FIELDS
            if identity.get(name) != now.get(name)
        )
        raise ObjectReadError(f"{where}: the object changed while the job ran ({changed})")
    return bytes(data)


def _run_task(
    task: Task,
    urls: tuple[str, ...],
    identities: tuple[Identity, ...],
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
    ``local_file_subtree`` / ``hash_local_files``): the worker's thread slots are the parallelism.
    Each object is checked against the size and identity the client recorded once it is read."""
    # The client checked these; a worker bounds what it allocates whoever called it.
    _check_mode(key, derive_key_context, length, seek)
    if isinstance(task, Batch) and len(task.indices) > 1 and len(task.indices) * length > MAX_LENGTH:
        raise ValueError(f"a task of {len(task.indices)} outputs of {length} bytes is too large")
    try:
        return _hash_task(task, urls, identities, key, derive_key_context, length, seek, device, storage_options)
    except (Exception, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        # A Rust panic (pyo3's PanicException) is a BaseException, which Dask's worker does not
        # report as the task's error: gathering the job would wait forever.
        raise RuntimeError(f"b3accel failed on this task: {type(exc).__name__}: {exc}") from exc


def _hash_task(
    task: Task,
    urls: tuple[str, ...],
    identities: tuple[Identity, ...],
    key: bytes | None,
    derive_key_context: str | None,
    length: int,
    seek: int,
    device: DeviceArg,
    storage_options: dict[str, Any],
) -> bytes:
    """``_run_task``'s work."""
    mode: dict[str, Any] = {"key": key, "derive_key_context": derive_key_context, "device": device}
    if isinstance(task, Piece):
        local = _local_path(urls[0])
        if local is not None:
            local_id = identities[0] if isinstance(identities[0], tuple) else None
            with _object_read_errors():
                return _b3accel.local_file_subtree(
                    local, task.offset, task.length, task.total, identity=local_id, **mode
                )
        data = _read(urls[0], task.offset, task.length, task.total, storage_options, identities[0])
        return b3accel.subtree(data, task.offset, **mode)
    outputs: list[bytes] = [b""] * len(urls)
    paths = [_local_path(u) for u in urls]
    local_files = [(i, p) for i, p in enumerate(paths) if p is not None]
    if local_files:
        local_ids = [ident for i, _ in local_files if isinstance(ident := identities[i], tuple)]
        with _object_read_errors():
            hashed = _b3accel.hash_local_files(
                [p for _, p in local_files],
                [task.sizes[i] for i, _ in local_files],
                length=length,
                seek=seek,
                identities=local_ids if len(local_ids) == len(local_files) else None,
                **mode,
            )
        for (i, _), output in zip(local_files, hashed):
            outputs[i] = output
    for i, (url, size, path) in enumerate(zip(urls, task.sizes, paths)):
        if path is None:
            data = _read(url, 0, size, size, storage_options, identities[i])
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
    if length > MAX_LENGTH:
        raise ValueError(f"length is at most {MAX_LENGTH} bytes (2**30) per object, not {length}")
    if seek + length > _OUTPUT_END:
        raise ValueError(f"seek + length is at most 2**64 (the end of BLAKE3's output), not {seek + length}")


def _look_up(urls: Sequence[str], storage_options: dict[str, Any]) -> tuple[list[int], list[Identity]]:
    """Each object's size and identity, looked up on the client (a missing one is a
    FileNotFoundError): local files all at once in parallel (a stat each, slow one after the
    other for many files), the others through fsspec."""
    if all(map(_plain_path, urls)):
        # Plain paths only (the common case of many files): one call, nothing per path here.
        plain_sizes, plain_ids = _local_identities(list(urls))
        if min(plain_sizes, default=0) >= 0:
            return plain_sizes, plain_ids
    paths = [_local_path(u) for u in urls]
    local = [(i, path) for i, path in enumerate(paths) if path is not None]
    sizes = [0] * len(urls)
    identities: list[Identity] = [None] * len(urls)
    if local:
        local_sizes, local_ids = _local_identities([path for _, path in local])
        for (i, _), size, identity in zip(local, local_sizes, local_ids):
            if size == -1:
                raise FileNotFoundError(f"{urls[i]}: no such object")
            if size == -2:
                raise IsADirectoryError(f"{urls[i]}: is a directory")
            sizes[i], identities[i] = size, identity
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
        sizes[i], identities[i] = int(size), _store_identity(info)
    return sizes, identities


def _local_identities(paths: list[str]) -> tuple[list[int], list[Identity]]:
    """``_b3accel.local_file_sizes(paths, identities=True)``, where no file's times are so recent
    that a change made now could leave them as they are (``_RACY_NS``): those are looked up again
    once that much time has passed."""
    start = time.time_ns()
    sizes, identities = _b3accel.local_file_sizes(paths, identities=True)
    for _ in range(3):
        # Whole seconds first: one comparison per file is what 100,000 files can afford.
        since = (start - _RACY_NS) // 1_000_000_000
        recent = [i for i, ident in enumerate(identities) if ident is not None and max(ident[0], ident[2]) >= since]
        racy = [i for i in recent if _ns(identities[i]) > start - _RACY_NS]  # type: ignore[arg-type]
        if not racy:
            break
        time.sleep(_RACY_NS / 1e9)
        start = time.time_ns()
        again_sizes, again_ids = _b3accel.local_file_sizes([paths[i] for i in racy], identities=True)
        for i, size, ident in zip(racy, again_sizes, again_ids):
            sizes[i], identities[i] = size, ident
    return sizes, list(identities)


def _ns(identity: tuple[int, int, int, int, int]) -> int:
    """The later of a local file's modification and change times, in nanoseconds."""
    return max(identity[0] * 1_000_000_000 + identity[1], identity[2] * 1_000_000_000 + identity[3])


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
    _check_piece_bytes(piece_bytes)
    dask_client = _client(client)
    options = dict(storage_options or {})
    urls = _absolute([os.fspath(u) for u in urlpaths])
    sizes, identities = _look_up(urls, options)
    tasks = plan(sizes, piece_bytes, files_per_task, length=length)
    indices = [(t.object_index,) if isinstance(t, Piece) else t.indices for t in tasks]
    task_urls = [tuple(urls[i] for i in ix) for ix in indices]
    task_identities = [tuple(identities[i] for i in ix) for ix in indices]
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
    futures: list[Future[Any]] = dask_client.map(run, tasks, task_urls, task_identities, pure=False)
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
    and the workers. A relative local path is resolved against the client's working directory
    (the workers read that absolute path). A missing object is a ``FileNotFoundError``; a range a
    worker cannot read whole, or an object that changed after the client looked it up, is an
    ``ObjectReadError`` naming the object and range. ``length`` is at most ``MAX_LENGTH``.
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


def b3sum_line(output: bytes, path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """``b3sum``'s line for ``path``, as b3sum 1.8.7 prints it: bytes that are not UTF-8 (a
    ``str`` path carries them as surrogate escapes, as ``sys.argv`` does) become U+FFFD as Rust's
    ``to_string_lossy`` replaces them, and
    a name with a backslash, newline or carriage return is escaped (``\\\\``, ``\\n``,
    ``\\r``) on a line that starts with a backslash."""
    name = os.fsencode(path).decode("utf-8", errors="replace")
    if "\\" in name or "\n" in name or "\r" in name:
        escaped = name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "\\" + output.hex() + "  " + escaped
    return output.hex() + "  " + name


def _count_arg(text: str) -> int:
    """A count of at least one (workers, threads)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count


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
    where.add_argument("--local", metavar="N", type=_count_arg,
                       help="start a LocalCluster of N worker processes (default: one per core)")
    parser.add_argument("--threads", type=_count_arg, default=None, help="threads per --local worker")
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
    try:
        _check_mode(None, None, args.length, args.seek)
        _check_piece_bytes(args.piece)
    except ValueError as exc:
        parser.error(str(exc))

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
            workers = args.local if args.local is not None else os.cpu_count() or 1
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=args.threads,
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
        # UTF-8 whatever the locale, as b3sum writes (U+FFFD included).
        lines = "".join(b3sum_line(output, path) + "\n" for path, output in zip(args.paths, outputs))
        sys.stdout.flush()
        sys.stdout.buffer.write(lines.encode("utf-8"))
        sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
