"""The devices the package finds, against what the build includes and what CI expects."""

from __future__ import annotations

import pytest

import b3accel
from conftest import ci, expected_items


def test_cpu_is_listed_first() -> None:
    infos = b3accel.devices()
    assert infos[0]["device"] == "cpu"
    assert infos[0]["backend"] == "cpu"
    for info in infos:
        assert set(info) == {
            "device", "backend", "kind", "name", "api", "driver", "memory_bytes", "compute_units", "software",
        }


@pytest.mark.parametrize("backend", ["wgpu", "opencl"])
def test_built_backends_find_devices(backend: str) -> None:
    """A backend the build includes finds a device: under CI its absence fails the run."""
    if backend not in b3accel.built_backends():
        if ci() and any(item.startswith(backend) for item in expected_items()):
            pytest.fail(f"B3ACCEL_EXPECT names {backend} but this build does not include it")
        pytest.skip(f"this build has no {backend} backend")
    found = [info for info in b3accel.devices() if info["backend"] == backend]
    if not found:
        message = f"the {backend} backend is built in but finds no device"
        if ci():
            pytest.fail(message)
        pytest.skip(message)
    assert all(info["device"].startswith(backend + ":") for info in found)


def test_expected_devices_are_there() -> None:
    """Each device B3ACCEL_EXPECT names (opencl:N, wgpu:<api>) is listed and hashes."""
    items = expected_items()
    if not items:
        pytest.skip("B3ACCEL_EXPECT is not set: nothing is expected of this machine")
    infos = b3accel.devices()
    for item in items:
        kind, _, value = item.partition(":")
        if kind == "opencl" and value:
            found = [i for i in infos if i["backend"] == "opencl"]
            assert len(found) >= int(value), f"B3ACCEL_EXPECT={item}, found {len(found)} OpenCL devices"
        elif kind == "wgpu" and value:
            found = [i for i in infos if i["backend"] == "wgpu" and i["api"].lower().startswith(value)]
            assert found, f"B3ACCEL_EXPECT={item}: no wgpu adapter of that API among {infos}"
    for info in infos:
        assert b3accel.blake3(b"abc", device=info["device"]).hexdigest() == (
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        )
