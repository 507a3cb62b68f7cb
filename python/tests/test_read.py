"""hash_file's read= modes (auto, map, stream) against blake3-py, at sizes around the map and
read-whole thresholds and the 8 MiB block; a file that changes while it is read from the front,
and a bad mode, are errors."""

import os
from pathlib import Path

import pytest
from blake3 import blake3 as upstream

import b3accel

SIZES = [0, 1, 16 * 1024 - 1, 16 * 1024, (4 << 20) + 1, (8 << 20) - 1, (8 << 20) + 1, (17 << 20) + 5]


def data(n: int) -> bytes:
    return bytes((i * 7 + (i >> 10)) & 0xFF for i in range(n)) if n < 4096 else os.urandom(n)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("read", ["auto", "map", "stream"])
def test_read_modes_match_blake3_py(tmp_path: Path, size: int, read: str) -> None:
    path = tmp_path / "f"
    content = data(size)
    path.write_bytes(content)
    assert b3accel.hash_file(path, read=read) == upstream(content).digest()  # type: ignore[arg-type]
    key = bytes(range(32))
    assert b3accel.hash_file(path, key=key, read=read) == upstream(content, key=key).digest()  # type: ignore[arg-type]


def test_update_mmap_matches_blake3_py(tmp_path: Path) -> None:
    path = tmp_path / "f"
    content = os.urandom((9 << 20) + 3)
    path.write_bytes(content)
    h = b3accel.blake3(b"prefix", max_threads=b3accel.blake3.AUTO)
    h.update_mmap(path)
    assert h.digest() == upstream(b"prefix" + content).digest()


def test_a_bad_read_mode_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="auto, map or stream"):
        b3accel.hash_file(path, read="seek")  # type: ignore[arg-type]


def test_a_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        b3accel.hash_file(tmp_path, read="stream")
