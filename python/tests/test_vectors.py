"""The official BLAKE3 test vectors, in all three modes, on every device."""

from __future__ import annotations

from typing import Any

import pytest

import b3accel
from conftest import load_vectors, pattern

VECTORS = load_vectors()


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: str(c["input_len"]))
def test_official_vectors(device: str, case: dict[str, Any]) -> None:
    data = pattern(case["input_len"])
    key = VECTORS["key"].encode()
    context = VECTORS["context_string"]
    for expected, hasher in [
        (case["hash"], b3accel.blake3(data, device=device)),
        (case["keyed_hash"], b3accel.blake3(data, key=key, device=device)),
        (case["derive_key"], b3accel.blake3(data, derive_key_context=context, device=device)),
    ]:
        length = len(expected) // 2
        assert hasher.hexdigest(length) == expected
        assert hasher.hexdigest() == expected[:64]
        # Any window of the extendable output, through seek.
        assert hasher.digest(length - 40, seek=40).hex() == expected[80:]
