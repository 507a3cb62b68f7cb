"""Bad input gets the exception a user expects, with a clear message, and never a crash."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import b3accel


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
