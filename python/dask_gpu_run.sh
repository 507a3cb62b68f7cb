#!/usr/bin/env bash
# Run ON the GPU machine (16 cores), from the repository root, with python/dist carried from
# python/gpu_wheels.sh:  python/dask_gpu_run.sh /path/to/release/b3accel [WORKDIR [--piece BYTES]...]
# A LocalCluster of 4 workers x 4 threads hashes a 16 GiB page-cached file and a 100,000-file tree
# through b3accel.dask, against single-process `b3accel FILE` and `b3accel -r DIR` (every output
# checked against the binary's). Output in ${OUT:-/tmp}/dask-bench.txt; WORKDIR (default
# /tmp/b3accel-dask-bench, 16.5 GB) is removed at the end. (-P: the installed b3accel, not the
# source folder beside the script, which lacks the compiled module.)
set -euo pipefail
binary="$(realpath "$1")"
work="${2:-/tmp/b3accel-dask-bench}"
out="${OUT:-/tmp}"
venv="$(mktemp -d)/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --no-index --find-links python/dist b3accel dask distributed fsspec
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" -P python/dask_bench.py "$binary" "$work" --workers 4 --threads 4 "${@:3}" 2>&1 \
    | grep -v 'distributed\.' | tee "$out/dask-bench.txt"
