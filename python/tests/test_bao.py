"""b3accel.bao: round trips on every device, the library's bytes, and corrupt input refused."""

from __future__ import annotations

import os

import blake3 as upstream
import pytest

from b3accel import bao


@pytest.mark.parametrize("n", [0, 1, 1024, 1025, 100_000])
@pytest.mark.parametrize("group_log", [0, 4])
def test_round_trips(device: str, n: int, group_log: int) -> None:
    data = os.urandom(n)
    encoded, hash = bao.encode(data, group_log=group_log, device=device)
    assert hash == upstream.blake3(data).digest()
    assert bao.decode(encoded, hash, group_log=group_log) == data
    assert bao.decode(memoryview(encoded), bytearray(hash), group_log=group_log) == data
    for post_order in [False, True]:
        ob, h = bao.outboard(data, group_log=group_log, post_order=post_order, device=device)
        assert h == hash
        assert bao.decode(data, hash, group_log=group_log, outboard=ob, post_order=post_order) == data
        s = bao.slice(data, n // 3, 2000, group_log=group_log, outboard=ob, post_order=post_order)
        assert s == bao.slice(encoded, n // 3, 2000, group_log=group_log)
        assert bao.decode_slice(s, hash, n // 3, 2000, group_log=group_log) == data[n // 3 : n // 3 + 2000]


def test_encoding_is_bao_format() -> None:
    encoded, _ = bao.encode(b"hello")
    assert encoded == (5).to_bytes(8, "little") + b"hello"
    ob, _ = bao.outboard(bytes(2048))
    assert len(ob) == 8 + 64


def test_corrupt_input_is_a_value_error() -> None:
    data = os.urandom(10_000)
    encoded, hash = bao.encode(data)
    bad = bytearray(encoded)
    bad[-1] ^= 1
    with pytest.raises(ValueError, match="offset"):
        bao.decode(bad, hash)
    with pytest.raises(ValueError):
        bao.decode(encoded, bytes(32))
    with pytest.raises(ValueError):
        bao.decode(encoded, b"short")
    with pytest.raises(ValueError):
        bao.encode(data, group_log=40)
