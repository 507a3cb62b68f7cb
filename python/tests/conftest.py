"""What the tests run on: every device this machine offers, and what CI expects of it.

Under CI (CI=true) a backend built into the package that finds no device fails the run instead of
being skipped, and B3ACCEL_EXPECT (the list `.ci/run` computes, as for the crate's tests: see
src/core/expect.rs) names the devices that must be there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

if sys.version_info >= (3, 12):
    from collections.abc import Buffer as Buffer
else:
    from typing_extensions import Buffer as Buffer

import pytest

import b3accel

VECTORS_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "test_vectors.json"


def ci() -> bool:
    """Whether this is a CI run."""
    return os.environ.get("CI", "") in ("true", "1")


def expected_items() -> list[str]:
    """B3ACCEL_EXPECT's items, lowercase."""
    raw = os.environ.get("B3ACCEL_EXPECT", "")
    return [item.strip().lower() for item in raw.split(",") if item.strip()]


def device_names() -> list[str]:
    """Every device of this machine, by the name `device=` takes: "cpu" first."""
    return [info["device"] for info in b3accel.devices()]


# Software GPUs (PoCL, llvmpipe, lavapipe) hash a few MiB in seconds: the largest inputs go to
# the CPU and hardware GPUs only.
SOFTWARE = {info["device"] for info in b3accel.devices() if info["software"]}


@pytest.fixture(params=device_names())
def device(request: pytest.FixtureRequest) -> str:
    """Each device of this machine in turn."""
    name: str = request.param
    return name


def load_vectors() -> dict[str, Any]:
    """The official BLAKE3 test vectors (input byte i is i % 251)."""
    with open(VECTORS_PATH) as f:
        vectors: dict[str, Any] = json.load(f)
    return vectors


def pattern(n: int) -> bytes:
    """The official vectors' input of n bytes."""
    return bytes(i % 251 for i in range(n))


def buf(obj: object) -> Buffer:
    """`obj` (a NumPy array) typed as the buffer it is: NumPy's stubs declare the buffer
    protocol only from Python 3.12 on."""
    return cast(Buffer, obj)
