#!/usr/bin/env bash
# Runs blake3-py's own test suite against b3accel.blake3: fetches the blake3 sdist from PyPI
# (its tests are not copied into this repository), puts a `blake3` module that is b3accel first
# on the path, and runs the suite with pytest. Usage: run_upstream_suite.sh [VERSION]
#
# Deselected, with why:
# - test_int_array_fails: b3accel hashes the bytes of any C-contiguous buffer, whatever its item
#   type (as hashlib does, and as NumPy arrays of any dtype need); blake3-py refuses buffers of
#   items wider than a byte, such as array.array("i").
set -euo pipefail
version="${1:-1.0.11}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Only blake3 from source (its tests are in the sdist); its build backend may come as a wheel.
python -m pip download --quiet --no-deps --no-binary blake3 "blake3==$version" -d "$work"
tar -xzf "$work/blake3-$version.tar.gz" -C "$work"
suite="$work/blake3-$version/tests"

mkdir -p "$work/shim/blake3"
cat > "$work/shim/blake3/__init__.py" <<'PY'
"""blake3-py's import name, resolved to b3accel for its test suite."""
from b3accel import __version__, blake3

__all__ = ["__version__", "blake3"]
PY
export PYTHONPATH="$work/shim${PYTHONPATH:+:$PYTHONPATH}"
# The suite must be testing b3accel, not an installed blake3-py.
python -c 'import b3accel, blake3; assert blake3.blake3 is b3accel.blake3, blake3.__file__'

cd "$suite"
python -m pytest -p no:cacheprovider -q -rA test_blake3.py -k "not test_int_array_fails"
