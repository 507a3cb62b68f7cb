"""BLAKE3 on every device a machine has: a drop-in for blake3-py, and more.

``from b3accel import blake3`` replaces ``from blake3 import blake3``; every call also takes
``device=`` ("auto", "cpu", "wgpu:0", "opencl:1", "all", or a list of devices). Beyond blake3-py:
``hash_file``, ``hash_many``, ``merkle_root`` / ``merkle_tree`` / ``verify``, and the subtree API
(``plan_pieces``, ``subtree``, ``merge``) that hashes one input in pieces, anywhere, and merges
their chaining values into the hash of the whole. See docs/python.md in the repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

from b3accel._b3accel import (
    DeviceError,
    MerkleTree,
    __version__,
    blake3,
    built_backends,
    devices,
    hash_file,
    merge,
    merkle_root,
    merkle_tree,
    subtree,
    verify,
)
from b3accel._b3accel import hash_many as _hash_many

if TYPE_CHECKING:
    import sys

    if sys.version_info >= (3, 12):
        from collections.abc import Buffer
    else:
        from typing_extensions import Buffer

    import numpy
    import numpy.typing

__all__ = [
    "CHUNK_LEN",
    "DeviceError",
    "MAX_INPUT_LEN",
    "MerkleTree",
    "__version__",
    "blake3",
    "built_backends",
    "devices",
    "hash_file",
    "hash_many",
    "merge",
    "merkle_root",
    "merkle_tree",
    "plan_pieces",
    "subtree",
    "verify",
]

#: BLAKE3's chunk length in bytes: pieces of an input start at multiples of it.
CHUNK_LEN = 1024

#: The longest input ``plan_pieces`` plans: every piece's offset and end fit in 64 bits.
MAX_INPUT_LEN = 2**64 - 1

DeviceArg = Union[str, Sequence[str], None]


def hash_many(
    data: Buffer,
    message_len: int,
    *,
    key: Buffer | None = None,
    derive_key_context: str | None = None,
    device: DeviceArg = None,
) -> Union[numpy.typing.NDArray[numpy.uint8], bytes]:
    """Hash ``len(data) // message_len`` messages of ``message_len`` bytes laid end to end in
    ``data`` (any C-contiguous buffer), on ``device``; with ``key`` (32 bytes) or
    ``derive_key_context`` in BLAKE3's other modes (a way to keep Merkle leaves apart from
    inner nodes, see ``merkle_tree``).

    Returns a NumPy ``uint8`` array of shape ``(n, 32)`` (row i is the hash of message i), or,
    where NumPy is not installed, the ``n * 32`` bytes of the hashes concatenated. A
    ``message_len`` of 0, or a ``data`` length that is not a multiple of it, is a ``ValueError``.
    """
    flat = _hash_many(data, message_len, key=key, derive_key_context=derive_key_context, device=device)
    try:
        import numpy as np
    except ImportError:
        return flat
    return np.frombuffer(flat, dtype=np.uint8).reshape(-1, 32)


def plan_pieces(total_len: int, piece_bytes: int) -> list[tuple[int, int]]:
    """Cut an input of ``total_len`` bytes into ``(offset, length)`` pieces that ``subtree`` accepts.

    ``piece_bytes`` is rounded down to a power of two of KiB (at least 1 KiB); every piece has
    that length but the last, which is shorter where the input ends. Such pieces are subtrees of
    BLAKE3's tree wherever they lie, so ``merge([(o, n, subtree(data[o:o + n], o)) ...])`` is
    ``blake3(data).digest()``. An input of at most one piece comes back as the single piece
    ``(0, total_len)``: its chaining value is not its hash, so hash it whole with ``blake3``.
    An input longer than ``MAX_INPUT_LEN`` (2**64 - 1 bytes: byte offsets are 64-bit) is a
    ``ValueError``. The function is pure (no I/O, no device).
    """
    if not isinstance(total_len, int) or not isinstance(piece_bytes, int):
        raise TypeError("plan_pieces takes two ints: total_len and piece_bytes")
    if total_len < 0:
        raise ValueError(f"total_len must be >= 0, not {total_len}")
    if total_len > MAX_INPUT_LEN:
        raise ValueError(
            f"total_len {total_len} is more than the {MAX_INPUT_LEN} bytes (2**64 - 1) that subtree and merge "
            "can place: their byte offsets are 64-bit"
        )
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes must be >= 1, not {piece_bytes}")
    chunks = max(piece_bytes // CHUNK_LEN, 1)
    size = CHUNK_LEN << (chunks.bit_length() - 1)
    if total_len <= size:
        return [(0, total_len)]
    return [(offset, min(size, total_len - offset)) for offset in range(0, total_len, size)]


