"""Every kind of buffer is read in place; a strided one is a ValueError."""

from __future__ import annotations

import array
import mmap
import os
import tempfile

import blake3 as upstream
import numpy as np
import pytest

import b3accel
from conftest import Buffer, buf

DATA = os.urandom(70_001)
EXPECTED = upstream.blake3(DATA).digest()


def test_bytes_like_objects() -> None:
    objects: list[Buffer] = [DATA, bytearray(DATA), memoryview(DATA), memoryview(bytearray(DATA)),
               array.array("B", DATA), array.array("b", DATA)]
    for obj in objects:
        assert b3accel.blake3(obj).digest() == EXPECTED
        assert b3accel.blake3().update(obj).digest() == EXPECTED


def test_memoryview_slices() -> None:
    view = memoryview(DATA)[100:5000]
    assert b3accel.blake3(view).digest() == upstream.blake3(DATA[100:5000]).digest()


def test_mmap() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(DATA)
        f.flush()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            assert b3accel.blake3(m).digest() == EXPECTED


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex128])
def test_numpy_any_dtype(dtype: type) -> None:
    """The bytes of a C-contiguous array are hashed, whatever its dtype and shape."""
    array_: np.typing.NDArray[np.generic] = np.frombuffer(DATA[:70_000], dtype=np.uint8).view(dtype).reshape(5, -1)
    assert array_.flags.c_contiguous
    expected = upstream.blake3(array_.tobytes()).digest()
    assert b3accel.blake3(buf(array_)).digest() == expected
    assert b3accel.blake3().update(buf(array_)).digest() == expected


def test_non_contiguous_is_a_value_error() -> None:
    array_ = np.arange(1000, dtype=np.uint8)
    for strided in [array_[::2], np.arange(64, dtype=np.uint8).reshape(8, 8).T,
                    np.lib.stride_tricks.as_strided(array_, shape=(2,), strides=(2,))]:
        assert not strided.flags.c_contiguous
        with pytest.raises(ValueError, match="not C-contiguous"):
            b3accel.blake3(buf(strided))
        with pytest.raises(ValueError, match="not C-contiguous"):
            b3accel.blake3().update(buf(strided))
        with pytest.raises(ValueError, match="not C-contiguous"):
            b3accel.subtree(buf(strided), 0)


def test_buffers_are_released() -> None:
    """A bytearray can grow again once hashing it is done: the export was released."""
    key = bytearray(32)
    message = bytearray(5000)
    h = b3accel.blake3(message, key=key)
    h.update(message)
    b3accel.subtree(message[:1024], 0)
    key.extend(b"more")
    message.extend(b"more")
    with pytest.raises(ValueError):
        b3accel.blake3(message, key=key)  # a 36-byte key: refused, and released too
    key.extend(b"again")


def test_readonly_and_empty() -> None:
    assert b3accel.blake3(b"").digest() == upstream.blake3(b"").digest()
    assert b3accel.blake3(buf(np.zeros(0, dtype=np.float64))).digest() == upstream.blake3(b"").digest()
    assert b3accel.blake3(memoryview(b"")).digest() == upstream.blake3(b"").digest()
