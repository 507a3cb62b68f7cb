"""b3accel._b3accel's local-file functions for b3accel.dask's tasks: outputs against blake3-py,
and the errors that name the file and range."""

from __future__ import annotations

import os
from pathlib import Path

import blake3 as upstream
import pytest

import b3accel
from b3accel import _b3accel

KEY = bytes(range(1, 33))
CONTEXT = "b3accel python tests 2026-11-29 local files"
MODES: list[dict[str, object]] = [{}, {"key": KEY}, {"derive_key_context": CONTEXT}]
# Across the sizes read whole and the sizes mapped (16 KiB and more).
SIZES = [0, 1, 1024, 1025, 16383, 16384, 100_000, (1 << 20) + 7]


def upstream_hasher(data: bytes, mode: dict[str, object]) -> upstream.blake3:
    return upstream.blake3(data, **mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", range(3), ids=["hash", "keyed", "derive_key"])
@pytest.mark.parametrize(("length", "seek"), [(32, 0), (0, 0), (100, 0), (33, 1000)])
def test_hash_local_files(tmp_path: Path, mode: int, length: int, seek: int) -> None:
    blobs = [os.urandom(n) for n in SIZES]
    paths = []
    for i, blob in enumerate(blobs):
        path = tmp_path / f"f{i}"
        path.write_bytes(blob)
        paths.append(str(path) if i % 2 else path)
    got = _b3accel.hash_local_files(paths, SIZES, length=length, seek=seek, **MODES[mode])  # type: ignore[arg-type]
    want = [upstream_hasher(b, MODES[mode]).digest(length, seek=seek) for b in blobs]
    assert got == want
    assert _b3accel.hash_local_files([], []) == []


@pytest.mark.parametrize("mode", range(3), ids=["hash", "keyed", "derive_key"])
@pytest.mark.parametrize("total", [5000, 100_000, (3 << 20) + 100])
def test_local_file_subtree(tmp_path: Path, mode: int, total: int) -> None:
    data = os.urandom(total)
    path = tmp_path / "f"
    path.write_bytes(data)
    for piece_bytes in (1024, 64 * 1024, 1 << 20):
        plan = b3accel.plan_pieces(total, piece_bytes)
        if len(plan) == 1:
            continue
        cvs = [(o, n, _b3accel.local_file_subtree(path, o, n, total, **MODES[mode])) for o, n in plan]  # type: ignore[arg-type]
        assert cvs == [(o, n, b3accel.subtree(data[o : o + n], o, **MODES[mode])) for o, n in plan]  # type: ignore[arg-type]
        assert b3accel.merge(cvs, **MODES[mode]) == upstream_hasher(data, MODES[mode]).digest()  # type: ignore[arg-type]


def test_errors_name_the_file_and_range(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(5000))
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError, match=rf"{missing}: bytes 0\.\.7: "):
        _b3accel.hash_local_files([path, missing], [5000, 7])
    with pytest.raises(IsADirectoryError, match=rf"{tmp_path}: bytes 0\.\.7: "):
        _b3accel.hash_local_files([tmp_path], [7])
    with pytest.raises(OSError, match=rf"{path}: bytes 0\.\.4999: the object is 5000 bytes, not the 4999 planned"):
        _b3accel.hash_local_files([path], [4999])
    with pytest.raises(ValueError, match="2 paths but 1 sizes"):
        _b3accel.hash_local_files([path, path], [5000])

    with pytest.raises(FileNotFoundError, match=rf"{missing}: bytes 2048\.\.3072: "):
        _b3accel.local_file_subtree(missing, 2048, 1024, 5000)
    with pytest.raises(IsADirectoryError, match=rf"{tmp_path}: bytes 2048\.\.3072: "):
        _b3accel.local_file_subtree(tmp_path, 2048, 1024, 5000)
    with pytest.raises(OSError, match=rf"{path}: bytes 4096\.\.5120: the object is 5000 bytes, not the 6000"):
        _b3accel.local_file_subtree(path, 4096, 1024, 6000)
    with pytest.raises(OSError, match=rf"{path}: bytes 4096\.\.5120: .*past the end"):
        _b3accel.local_file_subtree(path, 4096, 1024, 5000)
    with pytest.raises(ValueError, match="multiple of the chunk length"):
        _b3accel.local_file_subtree(path, 100, 1024, 5000)


def test_identity_catches_a_file_rewritten_at_its_size(tmp_path: Path) -> None:
    data = os.urandom(100_000)
    path = tmp_path / "f"
    path.write_bytes(data)
    os.utime(path, ns=(10**18, 10**18))  # a modification time the rewrite below cannot keep
    sizes, ids = _b3accel.local_file_sizes([path, tmp_path, tmp_path / "missing"], identities=True)
    assert sizes == [100_000, -2, -1] and ids[1:] == [None, None]
    identity = ids[0]
    assert identity is not None and identity[0] == 10**9 and identity[4] == path.stat().st_ino
    assert _b3accel.local_file_sizes([path]) == [100_000]
    digest = upstream.blake3(data).digest()
    assert _b3accel.hash_local_files([path], [100_000], identities=[identity]) == [digest]
    cv = _b3accel.local_file_subtree(path, 65536, 100_000 - 65536, 100_000, identity=identity)
    assert cv == b3accel.subtree(data[65536:], 65536)

    with open(path, "r+b") as f:  # in place: same inode, same size, other bytes
        f.write(b"x")
    changed = rf"{path}: bytes {{}}: the object changed while the job ran: its modification time differs"
    with pytest.raises(OSError, match=changed.format(r"0\.\.100000")):
        _b3accel.hash_local_files([path], [100_000], identities=[identity])
    with pytest.raises(OSError, match=changed.format(r"65536\.\.100000")):
        _b3accel.local_file_subtree(path, 65536, 100_000 - 65536, 100_000, identity=identity)
    # Without an identity only the size is checked, as before.
    assert _b3accel.hash_local_files([path], [100_000]) == [upstream.blake3(path.read_bytes()).digest()]
    with pytest.raises(ValueError, match="1 paths but 1 sizes and 2 identities"):
        _b3accel.hash_local_files([path], [100_000], identities=[identity, identity])


def test_output_lengths_beyond_memory_are_memory_errors(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with pytest.raises(MemoryError, match=f"2 outputs of {2**62} bytes"):
        _b3accel.hash_local_files([path, path], [3, 3], length=2**62)
    with pytest.raises(MemoryError, match=f"1 outputs of {2**40} bytes"):
        _b3accel.hash_local_files([path], [3], length=2**40)
    with pytest.raises(OverflowError):
        _b3accel.hash_local_files([path], [3], length=2**64)
    assert _b3accel.hash_local_files([path], [3], length=100) == [upstream.blake3(b"abc").digest(100)]
