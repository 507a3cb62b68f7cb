"""hash_file's read= modes (auto, map, stream) against blake3-py, at sizes around the map and
read-whole thresholds and the 8 MiB block; a file that changes while it is read (mapped or from
the front) is an OSError naming it that adds nothing to a hasher; a bad mode is an error."""

import os
import threading
import time
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


@pytest.mark.parametrize("read", ["auto", "map", "stream"])
def test_os_errors_name_the_file(tmp_path: Path, read: str) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError) as e:
        b3accel.hash_file(missing, read=read)  # type: ignore[arg-type]
    assert e.value.filename == str(missing)
    h = b3accel.blake3(b"kept")
    with pytest.raises(IsADirectoryError) as d:
        h.update_mmap(tmp_path)
    assert d.value.filename == str(tmp_path)
    assert h.digest() == upstream(b"kept").digest()


@pytest.mark.parametrize("read", ["map", "stream"])
def test_a_file_cut_while_hashed_is_an_os_error_or_a_hash_of_what_it_was(tmp_path: Path, read: str) -> None:
    """One byte cut off the end while the file is hashed: the hash of the file before or after the
    cut (it came after or before the read), or an OSError naming the path with the hasher as it
    was; never the hash of a file with a zero where its last byte was (a cut inside the last page
    of a map)."""
    path = tmp_path / "f"
    content = os.urandom((64 << 20) + 1234)
    prefix = upstream(b"prefix").digest()
    whole = upstream(content).digest()
    states = {whole, upstream(content[:-1]).digest()}
    with_prefix = {upstream(b"prefix" + content).digest(), upstream(b"prefix" + content[:-1]).digest()}
    path.write_bytes(content)
    start = time.perf_counter()
    assert b3accel.hash_file(path, read=read) == whole  # type: ignore[arg-type]
    took = time.perf_counter() - start
    errors = 0
    for attempt in range(8):
        path.write_bytes(content)
        cut = threading.Timer(took * (attempt + 1) / 10, os.truncate, (path, len(content) - 1))
        h = b3accel.blake3(b"prefix", max_threads=b3accel.blake3.AUTO)
        cut.start()
        try:
            if read == "map":
                h.update_mmap(path)
                assert h.digest() in with_prefix
            else:
                assert b3accel.hash_file(path, read=read) in states  # type: ignore[arg-type]
        except OSError as e:
            errors += 1
            assert str(path) in str(e), e
            assert h.digest() == prefix, "a failed update_mmap added nothing"
        finally:
            cut.join()
    assert errors > 0, "no cut landed while the file was hashed"
