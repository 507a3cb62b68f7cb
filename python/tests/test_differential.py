"""b3accel against blake3-py at awkward sizes, in all modes, with XOF and seek, on every device."""

from __future__ import annotations

import os

import blake3 as upstream
import pytest

import b3accel
from conftest import SOFTWARE

# Around every boundary of BLAKE3's tree: blocks, chunks, non-power-of-two chunk counts, and
# inputs past the CPU backend's parallel split.
SIZES = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 2049, 3072, 4097, 8193, 31 * 1024 + 7,
         (64 << 10) - 1, 64 << 10, 100 * 1024 + 1, 1 << 20, 3 << 20, (3 << 20) + 1025]
KEY = bytes(range(32))
CONTEXT = "b3accel python tests 2026-11-28 differential"
MODES: list[dict[str, object]] = [{}, {"key": KEY}, {"derive_key_context": CONTEXT}]


def data_of(n: int) -> bytes:
    return os.urandom(n)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("mode", range(3), ids=["hash", "keyed", "derive_key"])
def test_one_call(device: str, n: int, mode: int) -> None:
    if device in SOFTWARE and n > (1 << 20):
        n = (1 << 20) + 1025  # keeps software GPUs' runs short, still many chunks
    data = data_of(n)
    kwargs = MODES[mode]
    ours = b3accel.blake3(data, device=device, **kwargs)  # type: ignore[arg-type]
    theirs = upstream.blake3(data, **kwargs)  # type: ignore[arg-type]
    assert ours.digest() == theirs.digest()
    assert ours.hexdigest() == theirs.hexdigest()
    assert ours.digest(200, seek=7) == theirs.digest(200, seek=7)
    assert ours.digest(1, seek=(1 << 40) + 3) == theirs.digest(1, seek=(1 << 40) + 3)


@pytest.mark.parametrize("n", [1025, 4097, 100 * 1024 + 1, (2 << 20) + 5])
def test_updates_in_pieces(device: str, n: int) -> None:
    """Any split of the input into update calls gives the one-call hash."""
    data = data_of(n)
    expected = upstream.blake3(data, key=KEY).digest()
    for step in [1000, 1024, 65536, 65536 + 3]:
        h = b3accel.blake3(key=KEY, device=device)
        for i in range(0, n, step):
            h.update(data[i : i + step])
        assert h.digest() == expected


def test_long_xof() -> None:
    data = data_of(5000)
    assert b3accel.blake3(data).digest(100_000, seek=999) == upstream.blake3(data).digest(100_000, seek=999)


@pytest.mark.parametrize("max_threads", [1, 2, 3, b3accel.blake3.AUTO])
def test_max_threads(max_threads: int) -> None:
    data = data_of((5 << 20) + 17)
    expected = upstream.blake3(data).digest()
    assert b3accel.blake3(data, max_threads=max_threads, device="cpu").digest() == expected
    assert b3accel.blake3(data, max_threads=max_threads).digest() == expected


def test_device_lists(device: str) -> None:
    """A list of devices (and "all") hashes together, bit-exactly."""
    data = data_of((9 << 20) + 3)
    expected = upstream.blake3(data).digest()
    assert b3accel.blake3(data, device=["cpu", device]).digest() == expected
    assert b3accel.blake3(data, device=f"cpu,{device}").digest() == expected
    assert b3accel.blake3(data, device="all").digest() == expected


def test_copy_and_reset(device: str) -> None:
    h = b3accel.blake3(b"hello ", device=device)
    c = h.copy()
    h.update(b"world")
    assert c.digest() == upstream.blake3(b"hello ").digest()
    assert h.digest() == upstream.blake3(b"hello world").digest()
    h.reset()
    assert h.digest() == upstream.blake3().digest()
    k = b3accel.blake3(key=KEY, device=device)
    k.update(b"x")
    k.reset()
    assert k.digest() == upstream.blake3(key=KEY).digest()


@pytest.mark.parametrize("first", [10, 64 * 1024, 64 * 1024 + 1, 300_000])
def test_copy_and_reset_at_every_stage(first: int) -> None:
    """Copies and resets behave the same before and after the input outgrows the first batch."""
    a, b = data_of(first), data_of(70_000)
    h = b3accel.blake3(a, key=KEY)
    c = h.copy()
    h.update(b)
    assert c.digest(40) == upstream.blake3(a, key=KEY).digest(40)
    assert h.digest(40) == upstream.blake3(a + b, key=KEY).digest(40)
    c.update(b)
    assert c.digest() == h.digest()
    h.reset()
    assert h.update(b"x").digest() == upstream.blake3(b"x", key=KEY).digest()
    h.reset()
    assert h.update(a).update(b).digest() == c.digest()
