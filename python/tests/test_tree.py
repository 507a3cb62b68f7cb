"""Beyond blake3-py: files, the subtree API, hash_many and Merkle trees."""

from __future__ import annotations

import os
from pathlib import Path

import blake3 as upstream
import numpy as np
import pytest

import b3accel
from conftest import SOFTWARE, buf

KEY = bytes(range(1, 33))
CONTEXT = "b3accel python tests 2026-11-28 subtree"
MODES: list[dict[str, object]] = [{}, {"key": KEY}, {"derive_key_context": CONTEXT}]


@pytest.mark.parametrize("n", [1, 1024, 100_000, (3 << 20) + 1])
def test_hash_file(device: str, tmp_path: Path, n: int) -> None:
    data = os.urandom(n)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert b3accel.hash_file(path, device=device) == upstream.blake3(data).digest()
    assert b3accel.hash_file(str(path), key=KEY, device=device) == upstream.blake3(data, key=KEY).digest()
    assert b3accel.blake3(device=device).update_mmap(path).digest() == upstream.blake3(data).digest()


@pytest.mark.parametrize("total", [1025, 2048, 5000, 64 * 1024, 1_000_001, (3 << 20) + 100])
@pytest.mark.parametrize("piece_bytes", [1024, 3000, 64 * 1024, 1 << 20])
@pytest.mark.parametrize("mode", range(3), ids=["hash", "keyed", "derive_key"])
def test_subtree_and_merge(total: int, piece_bytes: int, mode: int) -> None:
    data = os.urandom(total)
    kwargs = MODES[mode]
    plan = b3accel.plan_pieces(total, piece_bytes)
    assert plan[0][0] == 0 and sum(n for _, n in plan) == total
    if len(plan) == 1:
        return  # one piece: the input is hashed whole (the single-piece cases are tested below)
    pieces = [(o, n, b3accel.subtree(data[o : o + n], o, **kwargs)) for o, n in plan]  # type: ignore[arg-type]
    theirs = upstream.blake3(data, **kwargs)  # type: ignore[arg-type]
    assert b3accel.merge(pieces, **kwargs) == theirs.digest()  # type: ignore[arg-type]
    assert b3accel.merge(reversed(pieces), length=100, seek=5, **kwargs) == theirs.digest(100, seek=5)  # type: ignore[arg-type]


def test_subtree_on_every_device(device: str) -> None:
    n = (1 << 20) if device in SOFTWARE else (4 << 20)
    data = os.urandom(2 * n + 7)
    pieces = [(o, len(data[o : o + n]), b3accel.subtree(data[o : o + n], o, device=device)) for o in range(0, len(data), n)]
    assert b3accel.merge(pieces) == upstream.blake3(data).digest()


def test_plan_pieces() -> None:
    assert b3accel.plan_pieces(0, 1024) == [(0, 0)]
    assert b3accel.plan_pieces(1000, 1 << 20) == [(0, 1000)]
    assert b3accel.plan_pieces(5000, 3000) == [(0, 2048), (2048, 2048), (4096, 904)]
    assert b3accel.plan_pieces(3000, 1) == [(0, 1024), (1024, 1024), (2048, 952)]
    with pytest.raises(ValueError):
        b3accel.plan_pieces(-1, 1024)
    with pytest.raises(ValueError):
        b3accel.plan_pieces(10, 0)


def test_plan_pieces_plans_only_what_can_be_hashed() -> None:
    """Byte offsets are 64-bit: before the fix, plan_pieces(2**64 + 5, 2**63) gave a piece at byte
    2**64 that subtree and merge refuse."""
    for total in [2**64, 2**64 + 5, 2**65, 2**70]:
        for piece_bytes in [1024, 2**63, 2**64, 2**80]:
            with pytest.raises(ValueError, match="2\\*\\*64 - 1"):
                b3accel.plan_pieces(total, piece_bytes)
    assert b3accel.MAX_INPUT_LEN == 2**64 - 1
    # The longest input is planned, and merge accepts the cover (its pieces' places, not cvs).
    cv = bytes(32)
    for total in [2**64 - 1, 2**64 - 1024, 2**63 + 1]:
        plan = b3accel.plan_pieces(total, 2**63)
        assert sum(n for _, n in plan) == total and all(o + n <= 2**64 - 1 for o, n in plan)
        assert len(b3accel.merge([(o, n, cv) for o, n in plan])) == 32
    assert b3accel.plan_pieces(2**64 - 1, 2**64) == [(0, 2**64 - 1)]


def test_subtree_rules() -> None:
    with pytest.raises(ValueError, match="chunk"):
        b3accel.subtree(bytes(10), 100)
    with pytest.raises(ValueError):
        b3accel.subtree(bytes(2048), 1024)  # at most one chunk starts at chunk 1
    with pytest.raises(ValueError):
        b3accel.subtree(bytes(3000), 0)  # a whole input: its top node is the root
    with pytest.raises(ValueError):
        b3accel.subtree(b"", 4096)
    assert len(b3accel.subtree(bytes(2048), 0)) == 32


def test_merge_errors() -> None:
    cv = bytes(32)
    with pytest.raises(ValueError, match="gap"):
        b3accel.merge([(0, 2048, cv), (3072, 10, cv)])
    with pytest.raises(ValueError, match="overlap"):
        b3accel.merge([(0, 2048, cv), (1024, 1024, cv)])
    with pytest.raises(ValueError, match="whole input"):
        b3accel.merge([(0, 1024, cv)])
    with pytest.raises(ValueError, match="no pieces"):
        b3accel.merge([])
    with pytest.raises(ValueError, match="32 bytes"):
        b3accel.merge([(0, 1024, bytes(31)), (1024, 1, cv)])


def test_hash_many(device: str) -> None:
    messages = [os.urandom(100) for _ in range(1000)]
    result = b3accel.hash_many(b"".join(messages), 100, device=device)
    assert isinstance(result, np.ndarray)
    assert result.shape == (1000, 32) and result.dtype == np.uint8
    for i in [0, 1, 500, 999]:
        assert result[i].tobytes() == upstream.blake3(messages[i]).digest()
    with pytest.raises(ValueError):
        b3accel.hash_many(bytes(250), 100)
    with pytest.raises(ValueError):
        b3accel.hash_many(bytes(250), 0)


def merkle_reference(leaves: list[bytes]) -> bytes:
    """The root as the crate's merkle module defines it: BLAKE3 of the two children's 64
    bytes at each level, an odd node carried up unchanged."""
    level = leaves
    while len(level) > 1:
        nxt = [upstream.blake3(level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


@pytest.mark.parametrize("n", [1, 2, 3, 9, 1000])
def test_merkle(device: str, n: int) -> None:
    leaves = [os.urandom(32) for _ in range(n)]
    flat = b"".join(leaves)
    root = b3accel.merkle_root(flat, device=device)
    assert root == merkle_reference(leaves)
    tree = b3accel.merkle_tree(buf(np.frombuffer(flat, dtype=np.uint8)), device=device)
    assert tree.root == root and tree.leaf_count == n and len(tree) == n
    for i in sorted({0, n // 2, n - 1}):
        proof = tree.proof(i)
        assert proof[:8] == n.to_bytes(8, "little") and len(proof) % 32 == 8
        assert b3accel.verify(root, leaves[i], i, proof, leaf_count=n)
        assert not b3accel.verify(root, os.urandom(32), i, proof, leaf_count=n)
        assert not b3accel.verify(root, leaves[i], i, proof, leaf_count=n + 1)
        assert not b3accel.verify(root, leaves[i], n, proof, leaf_count=n)
        assert not b3accel.verify(os.urandom(32), leaves[i], i, proof, leaf_count=n)
    with pytest.raises(ValueError):
        tree.proof(n)
    with pytest.raises(ValueError):
        b3accel.merkle_root(bytes(33))


def pair(left: bytes, right: bytes) -> bytes:
    """A parent of the Merkle tree: BLAKE3 of the two nodes."""
    return upstream.blake3(left + right).digest()


def test_verify_takes_the_leaf_count_from_the_verifier() -> None:
    """The forgery of issue 52: in the tree [A, B, C], a proof claiming the two-leaf tree
    [pair(A, B), C] made "C is leaf 1" verify, with leaves made as the docs advise."""
    context = "b3accel python tests merkle forged proof"
    records = [b"record A", b"record B", b"record C"]
    leaves = bytes(b3accel.hash_many(b"".join(records), 8, derive_key_context=context))
    a, b, c = leaves[:32], leaves[32:64], leaves[64:]
    root = b3accel.merkle_root(leaves)
    assert root == pair(pair(a, b), c)
    forged = (2).to_bytes(8, "little") + pair(a, b)
    assert not b3accel.verify(root, c, 1, forged, leaf_count=3)
    # Only a verifier that believed the proof's own count would accept it.
    assert b3accel.verify(root, c, 1, forged, leaf_count=2)
    relabelled = (3).to_bytes(8, "little") + pair(a, b)
    assert not b3accel.verify(root, c, 1, relabelled, leaf_count=3)
    genuine = b3accel.merkle_tree(leaves).proof(2)
    assert genuine == relabelled
    assert b3accel.verify(root, c, 2, genuine, leaf_count=3)
    for count in [0, 1, 2, 4, 2**64 - 1]:
        assert not b3accel.verify(root, c, 2, genuine, leaf_count=count)
    # The count is required, by keyword: a call of the old form is refused, not answered.
    with pytest.raises(TypeError, match="leaf_count"):
        b3accel.verify(root, c, 2, genuine)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="merkle proof"):
        b3accel.verify(root, c, 2, genuine[:-1], leaf_count=3)
    with pytest.raises(ValueError, match="leaf must be 32 bytes"):
        b3accel.verify(root, c[:31], 2, genuine, leaf_count=3)
    with pytest.raises(OverflowError):
        b3accel.verify(root, c, 2, genuine, leaf_count=-1)
