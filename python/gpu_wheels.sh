#!/usr/bin/env bash
# Run HERE (a machine with Rust and network): fills python/dist/ with the wheels the GPU machine
# needs (it reaches no network): b3accel (release build, wgpu built in, abi3: any CPython >= 3.11)
# and blake3-py, NumPy, pytest, Dask and distributed for its Python 3.12. Carry python/dist to it
# and run python/gpu_run.sh (and python/dask_gpu_run.sh) there.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf dist
mkdir dist
# wgpu only: an OpenCL build links libOpenCL at load time, which that machine may lack.
python3 -m pip wheel . --no-deps -w dist
python3 -m pip download --quiet --only-binary :all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d dist "blake3==1.0.11" numpy pytest
# b3accel.dask and python/dask_gpu_run.sh: Dask, distributed and all they depend on (the GPU
# machine has some of them; carrying all keeps the offline install complete).
python3 -m pip download --quiet --only-binary :all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d dist dask distributed fsspec aiohttp requests
ls -l dist
