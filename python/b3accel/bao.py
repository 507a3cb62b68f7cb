"""Verified streaming in the formats of the ``bao`` and ``bao-tree`` crates.

An outboard keeps BLAKE3's parent nodes apart from the content; a combined encoding puts them
between the content's pieces; a slice proves one byte range. ``group_log`` makes the leaves
groups of 2**group_log chunks (0: bao's 1 KiB; 4: iroh's 16 KiB); ``post_order`` gives
bao-tree's post-order outboards. Every function reads any buffer in place and releases the GIL
while it works; ``device=`` picks where the outboard is computed. Input that does not verify is
a ``ValueError`` naming the offset of the first block that failed.

>>> from b3accel import bao
>>> encoded, hash = bao.encode(b"hello" * 1000)
>>> bao.decode(encoded, hash) == b"hello" * 1000
True
"""

from __future__ import annotations

from b3accel._b3accel import bao_decode as decode
from b3accel._b3accel import bao_decode_slice as decode_slice
from b3accel._b3accel import bao_encode as encode
from b3accel._b3accel import bao_outboard as outboard
from b3accel._b3accel import bao_slice as slice

__all__ = ["decode", "decode_slice", "encode", "outboard", "slice"]
