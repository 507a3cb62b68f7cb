"""Type stubs of the Rust extension (b3accel._b3accel)."""

import sys
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Literal, TypedDict, Union, overload

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
else:
    from typing_extensions import Buffer

__version__: str

DeviceArg = Union[str, Sequence[str], None]
#: A local file's modification time (s, ns), change time (s, ns) and inode.
FileIdentity = tuple[int, int, int, int, int]

class DeviceError(RuntimeError):
    """A device that is not there, not built in, or that failed."""

class DeviceInfo(TypedDict):
    device: str
    backend: str
    kind: str
    name: str
    api: str
    driver: str
    memory_bytes: int | None
    compute_units: int | None
    software: bool

class blake3:
    name: str
    digest_size: int
    block_size: int
    key_size: int
    AUTO: int
    def __init__(
        self,
        data: Buffer = ...,
        /,
        *,
        key: Buffer | None = ...,
        derive_key_context: str | None = ...,
        max_threads: int = ...,
        usedforsecurity: bool = ...,
        device: DeviceArg = ...,
    ) -> None: ...
    def update(self, data: Buffer, /) -> blake3: ...
    def update_mmap(self, path: str | PathLike[str]) -> blake3: ...
    def copy(self) -> blake3: ...
    def reset(self) -> None: ...
    def digest(self, length: int = ..., *, seek: int = ...) -> bytes: ...
    def hexdigest(self, length: int = ..., *, seek: int = ...) -> str: ...

class MerkleTree:
    @property
    def root(self) -> bytes: ...
    @property
    def leaf_count(self) -> int: ...
    def proof(self, index: int) -> bytes:
        """The proof of leaf ``index``: the leaf count as 8 little-endian bytes, then the
        siblings on the leaf's path, 32 bytes each, bottom up."""
    def __len__(self) -> int: ...

def devices() -> list[DeviceInfo]: ...
def built_backends() -> list[str]: ...
def hash_file(
    path: str | PathLike[str],
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    device: DeviceArg = ...,
    read: Literal["auto", "map", "stream"] = ...,
) -> bytes: ...
def subtree(
    data: Buffer,
    offset: int,
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    device: DeviceArg = ...,
) -> bytes: ...
def hash_local_files(
    paths: Sequence[str | PathLike[str]],
    sizes: Sequence[int],
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    length: int = ...,
    seek: int = ...,
    device: DeviceArg = ...,
    identities: Sequence[FileIdentity] | None = ...,
) -> list[bytes]:
    """``length`` output bytes from ``seek`` of each file (each ``sizes[i]`` bytes long, as
    planned), hashed on the calling thread without the GIL; a file missing, unreadable, a
    directory, of another size or (where ``identities`` are given) of another identity once read
    raises its ``OSError`` naming the path and byte range; outputs that do not fit in memory
    raise ``MemoryError``."""
def local_file_subtree(
    path: str | PathLike[str],
    offset: int,
    length: int,
    file_size: int,
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    device: DeviceArg = ...,
    identity: FileIdentity | None = ...,
) -> bytes:
    """The chaining value of bytes ``offset..offset + length`` of the file at ``path`` (which
    must be ``file_size`` bytes long, and of ``identity`` where given), hashed on the calling
    thread without the GIL; errors as ``hash_local_files``."""
@overload
def local_file_sizes(paths: Sequence[str | PathLike[str]], *, identities: Literal[False] = ...) -> list[int]:
    """Each local file's size, looked up in parallel without the GIL: ``-1`` where the path is
    missing, ``-2`` where it is a directory; any other failure raises its ``OSError``."""
@overload
def local_file_sizes(
    paths: Sequence[str | PathLike[str]], *, identities: Literal[True]
) -> tuple[list[int], list[FileIdentity | None]]:
    """The sizes, as above, and each file's identity (None where the size is negative)."""
def merge(
    pieces: Iterable[tuple[int, int, Buffer]],
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    length: int = ...,
    seek: int = ...,
) -> bytes: ...
def hash_many(
    data: Buffer,
    message_len: int,
    *,
    key: Buffer | None = ...,
    derive_key_context: str | None = ...,
    device: DeviceArg = ...,
) -> bytes: ...
def merkle_root(leaves: Buffer, *, device: DeviceArg = ...) -> bytes: ...
def merkle_tree(leaves: Buffer, *, device: DeviceArg = ...) -> MerkleTree: ...
def verify(root: Buffer, leaf: Buffer, index: int, proof: Buffer, *, leaf_count: int) -> bool:
    """Whether ``proof`` shows that ``leaf`` is leaf ``index`` of the tree of ``leaf_count``
    leaves whose root is ``root``: ``leaf_count`` is the size the verifier trusts, never one read
    from the proof. A proof made for another size, index or root is ``False``."""
def bao_outboard(
    data: Buffer, *, group_log: int = ..., post_order: bool = ..., device: DeviceArg = ...
) -> tuple[bytes, bytes]: ...
def bao_encode(data: Buffer, *, group_log: int = ..., device: DeviceArg = ...) -> tuple[bytes, bytes]: ...
def bao_decode(
    encoded: Buffer, hash: Buffer, *, group_log: int = ..., outboard: Buffer | None = ..., post_order: bool = ...
) -> bytes: ...
def bao_slice(
    encoded: Buffer,
    start: int,
    length: int,
    *,
    group_log: int = ...,
    outboard: Buffer | None = ...,
    post_order: bool = ...,
) -> bytes: ...
def bao_decode_slice(slice: Buffer, hash: Buffer, start: int, length: int, *, group_log: int = ...) -> bytes: ...
