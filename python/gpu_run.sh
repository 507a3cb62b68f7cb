#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, with python/dist carried from
# python/gpu_wheels.sh: installs the wheels offline, runs the tests on every device, then the
# benchmark against blake3-py, then 1 GiB on wgpu:0 checked against blake3-py. Output under
# ${OUT:-/tmp}. The Dask tests run too (their HTTP server is local).
set -euo pipefail
out="${OUT:-/tmp}"
venv="$(mktemp -d)/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --no-index --find-links python/dist b3accel blake3 numpy pytest \
    dask distributed fsspec aiohttp requests
py="$venv/bin/python"
"$py" -c 'import b3accel; [print(d) for d in b3accel.devices()]' | tee "$out/devices.txt"
"$py" -m pytest python/tests -q -rs 2>&1 | tail -15 | tee "$out/pytest.txt"
"$py" -m b3accel.bench 2>&1 | tee "$out/bench-auto.txt"
# The CPU backend alone (max_threads as blake3-py means it: auto may pick a GPU for large inputs).
"$py" -m b3accel.bench --device cpu --sizes 64,1K,16K,1M,64M,1G 2>&1 | tee "$out/bench-cpu.txt"
"$py" -m b3accel.bench --device wgpu:0 --sizes 64M,1G --file-size 1G --threads 0 2>&1 | tee "$out/bench-wgpu0.txt"
