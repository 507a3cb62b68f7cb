#!/usr/bin/env python3
"""b3accel against blake3-py: runs `python -m b3accel.bench` of the installed package (see there)."""

import sys
from pathlib import Path

# This file lies beside the package's sources, which lack the compiled extension: import the
# installed package instead.
here = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p and str(Path(p).resolve()) != here]

from b3accel.bench import main  # noqa: E402

main()
