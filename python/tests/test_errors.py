"""Bad input gets the exception a user expects, with a clear message, and never a crash."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import blake3 as upstream
import pytest

import b3accel
from b3accel import _b3accel


def test_wrong_types() -> None:
    with pytest.raises(TypeError):
        b3accel.blake3("a str")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b3accel.blake3().update(12)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b3accel.blake3(data=b"")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        b3accel.blake3(derive_key_context=b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b3accel.blake3(key="a str of 32 characters, exactly.")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b3accel.blake3(device=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b3accel.merge([(0, 1024)])  # type: ignore[list-item]


def test_keys() -> None:
    with pytest.raises(ValueError, match="expected a 32-byte key, found 31 bytes"):
        b3accel.blake3(key=bytes(31))
    with pytest.raises(ValueError, match="cannot use key and derive_key_context"):
        b3accel.blake3(key=bytes(32), derive_key_context="ctx")
    with pytest.raises(ValueError, match="32-byte key"):
        b3accel.subtree(bytes(1024), 1024, key=bytes(33))


def test_max_threads() -> None:
    for bad in [0, -2, -100]:
        with pytest.raises(ValueError, match="max_threads"):
            b3accel.blake3(max_threads=bad)


def test_output_length_overflow() -> None:
    with pytest.raises(OverflowError):
        b3accel.blake3().digest(sys.maxsize + 1)
    with pytest.raises(OverflowError):
        b3accel.blake3().hexdigest(sys.maxsize // 2 + 1)
    with pytest.raises(OverflowError):
        b3accel.blake3().digest(-1)


def overcommit_refuses(n: int) -> bool:
    """Whether this kernel refuses an allocation of ``n`` bytes outright: always beyond the
    address space (2**61), and beyond RAM and swap unless overcommit is "always" (mode 1)."""
    if n >= 2**61:
        return True
    try:
        return Path("/proc/sys/vm/overcommit_memory").read_text().strip() != "1"
    except OSError:
        return False


# Output lengths no machine can allocate: the 2**40 (refused where overcommit is not
# "always") and 2**61 (beyond any address space). Before the fix, hexdigest aborted the process.
HUGE = [n for n in [2**40, 2**61] if overcommit_refuses(n)]


def test_huge_outputs_are_memory_errors() -> None:
    assert 2**61 in HUGE
    for n in HUGE:
        h = b3accel.blake3(b"abc")
        with pytest.raises(MemoryError):
            h.digest(n)
        with pytest.raises(MemoryError):
            h.hexdigest(n)
        with pytest.raises(MemoryError):
            h.hexdigest(n, seek=5)
        with pytest.raises(MemoryError):
            b3accel.merge([(0, 1024, bytes(32)), (1024, 1, bytes(32))], length=n)
        # The hasher is still usable, and its output unchanged.
        assert h.hexdigest(100, seek=7) == upstream.blake3(b"abc").hexdigest(100, seek=7)


def test_hexdigest_lengths_around_the_stack_buffer() -> None:
    ours, theirs = b3accel.blake3(b"abc"), upstream.blake3(b"abc")
    for n in [0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 2047, 2048, 2049, 100_000]:
        assert ours.hexdigest(n) == theirs.hexdigest(n), n
        assert ours.hexdigest(n, seek=1000) == theirs.hexdigest(n, seek=1000), n


def test_huge_hash_many_outputs_are_memory_errors(tmp_path: Path) -> None:
    """32 bytes of hash for each 1-byte message of a sparse 2**37-byte file: 4 TiB of output,
    refused before any hashing (before the fix, an abort)."""
    if not overcommit_refuses(2**42):
        pytest.skip("overcommit is 'always': 4 TiB would be granted, then written")
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as out:
        out.truncate(2**37)
    with open(sparse, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with pytest.raises(MemoryError):
            b3accel.hash_many(mapped, 1)


def test_huge_local_file_outputs_are_memory_errors(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    for n in HUGE:
        with pytest.raises(MemoryError):
            _b3accel.hash_local_files([path], [3], length=n)
    with pytest.raises(MemoryError):
        _b3accel.hash_local_files([path] * 4, [3] * 4, length=2**62)  # 4 * 2**62 overflows
    assert _b3accel.hash_local_files([path], [3], length=40) == [upstream.blake3(b"abc").digest(40)]


def test_hash_many_message_len_zero_names_what_python_has() -> None:
    with pytest.raises(ValueError, match="message_len must be at least 1") as e:
        b3accel.hash_many(bytes(250), 0)
    assert "hash_each" not in str(e.value)
    with pytest.raises(ValueError, match="250 bytes cannot be split into messages of 100 bytes"):
        b3accel.hash_many(bytes(250), 100)


def test_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        b3accel.blake3().update_mmap(missing)
    with pytest.raises(FileNotFoundError):
        b3accel.hash_file(missing)
    with pytest.raises(IsADirectoryError):
        b3accel.blake3().update_mmap(tmp_path)
    with pytest.raises(IsADirectoryError):
        b3accel.hash_file(str(tmp_path))
    plain = tmp_path / "plain"
    plain.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        b3accel.hash_file(plain / "below")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: no unreadable file to test with")
def test_unreadable_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"x" * 100_000)
    secret.chmod(0)
    with pytest.raises(PermissionError):
        b3accel.hash_file(secret)
    h = b3accel.blake3(b"kept")
    with pytest.raises(PermissionError):
        h.update_mmap(secret)
    assert h.digest() == b3accel.blake3(b"kept").digest()  # nothing was added


def test_devices() -> None:
    with pytest.raises(ValueError, match="invalid device 'tpu'"):
        b3accel.blake3(device="tpu")
    with pytest.raises(ValueError, match="not a device index"):
        b3accel.blake3(device="wgpu:x")
    with pytest.raises(ValueError):
        b3accel.blake3(device=[])
    with pytest.raises(ValueError, match="auto"):
        b3accel.blake3(device=["auto", "cpu"])
    for absent in ["opencl:1000", "wgpu:1000"]:
        with pytest.raises(b3accel.DeviceError, match=absent.split(":")[0]):
            b3accel.blake3(b"abc", device=absent)
        with pytest.raises(b3accel.DeviceError):
            b3accel.hash_file(__file__, device=absent)
        with pytest.raises(b3accel.DeviceError):
            b3accel.subtree(bytes(1024), 0, device=absent)
    assert issubclass(b3accel.DeviceError, RuntimeError)
