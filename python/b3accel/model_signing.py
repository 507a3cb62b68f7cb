"""b3accel as the hashing engine of sigstore's ``model_signing`` (PyPI ``model-signing``).

``hashing_config()`` is a ``model_signing.hashing.Config`` whose BLAKE3 file serialization hashes
with b3accel: every file of the model in one parallel pass (small files side by side, one per
thread; each large file over the whole pool or on ``device``), without the GIL, through b3accel's
file reader. Everything else is model_signing's own: the walk of the model directory, the ignore
and symlink rules, the manifest and the serialization description written into the signature. The
manifest is byte for byte the one of ``use_file_serialization(hashing_algorithm="blake3")``, so a
signature made through b3accel verifies with stock model_signing, and the other way round::

    import b3accel.model_signing
    from model_signing import signing, verifying

    config = b3accel.model_signing.hashing_config()
    signing.Config().use_elliptic_key_signer(private_key="key").set_hashing_config(config).sign(model, sig)
    verifying.Config().use_elliptic_key_verifier(public_key="key.pub").set_hashing_config(config).verify(model, sig)

From a shell, ``python -m b3accel.model_signing sign|verify METHOD ...`` takes model_signing's own
arguments (methods ``key``, ``certificate`` and ``sigstore``) and hashes through b3accel.
"""

# model_signing's constructors carry no type annotations.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import base64
import binascii
import concurrent.futures
import itertools
import json
import os
import pathlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

try:
    from model_signing import hashing, manifest
    from model_signing._hashing import hashing as _digests
    from model_signing._hashing import io as _file_io
    from model_signing._serialization import file as _file_serialization
    from model_signing._serialization import serialization as _serialization
except ImportError as err:  # pragma: no cover: the message is the point
    raise ImportError(
        "b3accel.model_signing needs model-signing and pyOpenSSL (which model-signing 1.1.1 imports "
        "without declaring it): pip install 'b3accel[model-signing]'"
    ) from err

import b3accel
from b3accel import _b3accel

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "AUTO",
    "Config",
    "FileHasher",
    "Serializer",
    "config_for",
    "hash_paths",
    "hashing_config",
    "main",
    "signed_serialization",
]

#: ``max_threads=AUTO``: every core (rayon's global pool), as blake3-py's ``blake3.AUTO``.
AUTO: int = b3accel.blake3.AUTO

#: Files shorter than this are hashed whole on one thread each, many side by side; longer ones one
#: at a time over the whole pool (or device), where splitting one file pays for itself.
SMALL_FILE_BYTES = 4 << 20

#: Small files go to a thread in batches of about this many bytes (or this many files), so that
#: a directory of thousands of tiny files costs a few calls, not thousands.
BATCH_BYTES = 16 << 20
BATCH_FILES = 256

DeviceArg = Union[str, Sequence[str], None]
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def _pool_threads(max_threads: int) -> int:
    """How many threads ``max_threads`` stands for (AUTO: the CPUs this process may run on)."""
    if max_threads != AUTO:
        return max_threads
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover: not on Linux
        return os.cpu_count() or 1


def _check_max_threads(max_threads: int) -> int:
    if isinstance(max_threads, bool) or not isinstance(max_threads, int):
        raise TypeError(f"max_threads must be an int, not {type(max_threads).__name__}")
    if max_threads != AUTO and max_threads < 1:
        raise ValueError(f"max_threads must be a positive number of threads or AUTO (-1), not {max_threads}")
    return max_threads


def _hash_one(path: pathlib.Path, device: DeviceArg, max_threads: int) -> bytes:
    """The BLAKE3 hash of the file at ``path``, over ``max_threads`` threads or on ``device``."""
    return b3accel.blake3(max_threads=max_threads, device=device).update_mmap(path).digest()


def hash_paths(paths: Sequence[pathlib.Path], *, device: DeviceArg = "auto", max_threads: int = AUTO) -> list[bytes]:
    """The 32-byte BLAKE3 hash of each file of ``paths``, in order, all hashed in one parallel pass.

    Files shorter than ``SMALL_FILE_BYTES`` are hashed in batches, one file per thread, on up to
    ``max_threads`` threads side by side; each longer file is then hashed alone over all of them
    (or on ``device``). Every read goes through b3accel's file reader and the GIL is released while
    it works. A file that cannot be read raises its ``OSError``; one that changes size while this
    runs raises too (``OSError``, naming it), rather than hashing what it happened to hold.
    """
    _check_max_threads(max_threads)
    sizes = _b3accel.local_file_sizes(list(paths))
    for path, size in zip(paths, sizes):
        if size == -1:
            raise FileNotFoundError(2, "No such file", str(path))
        if size == -2:
            raise IsADirectoryError(21, "Is a directory", str(path))
    digests: list[bytes] = [b""] * len(paths)
    small = [i for i, size in enumerate(sizes) if size < SMALL_FILE_BYTES]
    large = [i for i, size in enumerate(sizes) if size >= SMALL_FILE_BYTES]

    batches: list[list[int]] = []
    batch: list[int] = []
    batch_bytes = 0
    for i in small:
        if batch and (batch_bytes + sizes[i] > BATCH_BYTES or len(batch) == BATCH_FILES):
            batches.append(batch)
            batch, batch_bytes = [], 0
        batch.append(i)
        batch_bytes += sizes[i]
    if batch:
        batches.append(batch)

    def hash_batch(batch: list[int]) -> None:
        got = _b3accel.hash_local_files([paths[i] for i in batch], [sizes[i] for i in batch], device=device)
        for i, digest in zip(batch, got):
            digests[i] = digest

    threads = min(_pool_threads(max_threads), len(batches))
    if threads <= 1:
        for b in batches:
            hash_batch(b)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="b3accel") as pool:
            # list() re-raises the first error of any batch.
            list(pool.map(hash_batch, batches))
    for i in large:
        digests[i] = _hash_one(paths[i], device, max_threads)
    return digests


class FileHasher(_file_io.FileHasher):
    """model_signing's file hash engine (``io.FileHasher``) for BLAKE3, hashing with b3accel.

    The digest is named "blake3", as model_signing's own ``Blake3FileHasher`` names it, so the
    two engines' manifests are interchangeable.
    """

    def __init__(self, file: pathlib.Path, *, device: DeviceArg = "auto", max_threads: int = AUTO) -> None:
        self._file = file
        self._device = device
        self._max_threads = _check_max_threads(max_threads)

    def set_file(self, file: pathlib.Path) -> None:
        """Redefines the file to be hashed in ``compute``."""
        self._file = file

    @property
    def digest_name(self) -> str:
        return "blake3"

    @property
    def digest_size(self) -> int:
        return 32

    def compute(self) -> _digests.Digest:
        return _digests.Digest(self.digest_name, _hash_one(self._file, self._device, self._max_threads))


class Serializer(_file_serialization.Serializer):
    """model_signing's file serializer, hashing every file of the model in one parallel pass.

    ``serialize`` finds the files to hash with model_signing's own rules (the same walk, symlink
    check and ignore test as its ``file.Serializer``), hashes them all with ``hash_paths``, then
    lets model_signing's ``serialize`` build the manifest from those digests: its items, model
    name and serialization description are model_signing's own code's.
    """

    def __init__(
        self,
        *,
        device: DeviceArg = "auto",
        max_threads: int = AUTO,
        allow_symlinks: bool = False,
        ignore_paths: Iterable[pathlib.Path] = frozenset(),
    ) -> None:
        self._device = device
        self._max_threads = _check_max_threads(max_threads)
        # The digests of the call in progress, which the stock serialize asks for file by file.
        self._digests: dict[pathlib.Path, bytes] = {}
        self._lock = threading.Lock()
        factory: Callable[[pathlib.Path], _file_io.FileHasher] = lambda path: FileHasher(
            path, device=device, max_threads=max_threads
        )
        super().__init__(factory, max_workers=1, allow_symlinks=allow_symlinks, ignore_paths=ignore_paths)

    def serialize(
        self,
        model_path: pathlib.Path,
        *,
        ignore_paths: Iterable[pathlib.Path] = frozenset(),
        files_to_hash: Optional[Iterable[pathlib.Path]] = None,
    ) -> manifest.Manifest:
        model_path = pathlib.Path(model_path)
        ignore_paths = list(ignore_paths)
        if files_to_hash is None:
            candidates: Iterable[pathlib.Path] = itertools.chain((model_path,), model_path.glob("**/*"))
        else:
            candidates = (pathlib.Path(p) for p in files_to_hash)
        paths = []
        for path in candidates:
            _serialization.check_file_or_directory(path, allow_symlinks=self._allow_symlinks)
            if path.is_file() and not _serialization.should_ignore(path, ignore_paths):
                paths.append(path)
        digests = hash_paths(paths, device=self._device, max_threads=self._max_threads)
        with self._lock:
            self._digests = dict(zip(paths, digests))
            try:
                return super().serialize(model_path, ignore_paths=ignore_paths, files_to_hash=paths)
            finally:
                self._digests = {}

    def _compute_hash(self, model_path: pathlib.Path, path: pathlib.Path) -> manifest.FileManifestItem:
        digest = self._digests.get(path)
        if digest is None:  # a file the stock serializer found that the pass above did not
            digest = _hash_one(path, self._device, self._max_threads)
        return manifest.FileManifestItem(path=path.relative_to(model_path), digest=_digests.Digest("blake3", digest))


class Config(hashing.Config):
    """A ``model_signing.hashing.Config`` whose BLAKE3 file serialization hashes with b3accel.

    It starts as ``hashing.Config().use_file_serialization(hashing_algorithm="blake3")`` and keeps
    every builder method and rule of its base (``set_ignored_paths``, ``add_ignored_paths``, git
    paths ignored by default, ``set_allow_symlinks``). ``use_file_serialization`` and
    ``use_shard_serialization`` with another algorithm (SHA-256, BLAKE2) fall back to
    model_signing's own hashing for it, so one Config can verify any signature.
    """

    def __init__(self, *, device: DeviceArg = "auto", max_threads: int = AUTO) -> None:
        self._device = device
        self._max_threads = _check_max_threads(max_threads)
        # The base's __init__ calls self.use_file_serialization(), which is BLAKE3 here.
        super().__init__()

    def use_file_serialization(
        self,
        *,
        hashing_algorithm: Literal["sha256", "blake2", "blake3"] = "blake3",
        chunk_size: int = 1048576,
        max_workers: Optional[int] = None,
        allow_symlinks: bool = False,
        ignore_paths: Iterable[pathlib.Path] = frozenset(),
    ) -> Self:
        """model_signing's ``use_file_serialization``, hashing with b3accel for BLAKE3 (the
        default here); ``max_workers`` (BLAKE3's thread count in model_signing) overrides
        ``max_threads``."""
        if hashing_algorithm != "blake3":
            super().use_file_serialization(
                hashing_algorithm=hashing_algorithm,
                chunk_size=chunk_size,
                max_workers=max_workers,
                allow_symlinks=allow_symlinks,
                ignore_paths=ignore_paths,
            )
            return self
        self._serializer = Serializer(
            device=self._device,
            max_threads=self._max_threads if max_workers is None else max_workers,
            allow_symlinks=allow_symlinks,
            ignore_paths=ignore_paths,
        )
        return self


def hashing_config(*, device: DeviceArg = "auto", max_threads: int = AUTO) -> Config:
    """A ``model_signing.hashing.Config`` for BLAKE3 file serialization that hashes with b3accel
    on ``device`` ("auto", "cpu", "wgpu:0", ... as every b3accel call takes it) over up to
    ``max_threads`` threads (``AUTO``: every core). Its manifests are byte for byte those of
    ``hashing.Config().use_file_serialization(hashing_algorithm="blake3")``.

    >>> from model_signing import signing                                    # doctest: +SKIP
    >>> signing.Config().use_elliptic_key_signer(private_key="key").set_hashing_config(
    ...     hashing_config()).sign("model", "model.sig")                      # doctest: +SKIP
    """
    return Config(device=device, max_threads=max_threads)


# The command line: model_signing's own (model_signing/_cli.py), hashing through b3accel.


def signed_serialization(signature_path: PathLike) -> dict[str, Any]:
    """The serialization a signature records (``{"method": "files", "hash_type": "blake3", ...}``),
    read without verifying anything: it only chooses how to hash the model, and verification then
    checks the signature and every digest. A signature of the pre-1.0 format, which records none,
    was made with SHA-256 file serialization. An unreadable file is a ``ValueError``."""
    try:
        with open(signature_path, "rb") as f:
            bundle = json.load(f)
        payload = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"], validate=True))
    except (OSError, ValueError, KeyError, TypeError, binascii.Error) as err:
        raise ValueError(f"cannot read the signature {os.fsdecode(signature_path)!r}: {err}") from err
    serialization = payload.get("predicate", {}).get("serialization") if isinstance(payload, dict) else None
    if not isinstance(serialization, dict):
        return {"method": "files", "hash_type": "sha256", "allow_symlinks": False}
    return serialization


def config_for(serialization: dict[str, Any], *, device: DeviceArg = "auto", max_threads: int = AUTO) -> Config:
    """A Config that hashes as ``serialization`` (``signed_serialization``'s) says: BLAKE3 file
    serialization with b3accel, anything else with model_signing's own hashing."""
    config = Config(device=device, max_threads=max_threads)
    method, hash_type = serialization.get("method"), serialization.get("hash_type", "sha256")
    if method == "shards":
        config.use_shard_serialization(hashing_algorithm=hash_type, shard_size=serialization["shard_size"])
    elif method == "files":
        config.use_file_serialization(hashing_algorithm=hash_type)
    else:
        raise ValueError(f"the signature's serialization method {method!r} is not one model_signing knows")
    return config


def _resolve_ignore_paths(model_path: pathlib.Path, paths: Iterable[pathlib.Path]) -> list[pathlib.Path]:
    """The paths under ``model_path`` among ``paths`` (relative to the working directory), relative
    to it, as model_signing's command line takes ``--ignore-paths``; others are dropped."""
    root = model_path.resolve()
    resolved = []
    for p in paths:
        candidate = (p if p.is_absolute() else pathlib.Path.cwd() / p).resolve()
        try:
            resolved.append(candidate.relative_to(root))
        except ValueError:
            continue
    return resolved


def _cli() -> Any:
    """model_signing's command line (its options, names and messages), built with click as its
    own is, with ``--device`` and ``--max_threads`` for b3accel."""
    import logging
    import sys

    import click
    import model_signing
    from model_signing import signing, verifying

    methods = ["sigstore", "key", "certificate"]

    class MethodGroup(click.Group):
        """A group whose subcommand (the PKI method) defaults to sigstore, as model_signing's."""

        def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
            return super().get_command(ctx, cmd_name if cmd_name in methods else "sigstore")

        def resolve_command(
            self, ctx: click.Context, args: list[str]
        ) -> tuple[Optional[str], Optional[click.Command], list[str]]:
            if args[0] in methods:
                return super().resolve_command(ctx, args)
            _, cmd, _ = super().resolve_command(ctx, args)
            return (cmd.name if cmd else None), cmd, args

    path = click.Path(path_type=pathlib.Path)

    def common(write: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """The model, signature, ignore, symlink and b3accel options every command takes, first."""
        options = [
            click.argument("model_path", type=path, metavar="MODEL_PATH"),
            click.option(
                "--signature",
                type=path,
                metavar="SIGNATURE_PATH",
                default=pathlib.Path("model.sig"),
                help="Location of the signature file to generate. Defaults to `model.sig`.",
            )
            if write
            else click.option(
                "--signature",
                type=path,
                metavar="SIGNATURE_PATH",
                required=True,
                help="Location of the signature file to verify.",
            ),
            click.option(
                "--ignore-paths",
                type=path,
                metavar="IGNORE_PATHS",
                multiple=True,
                help="File paths to ignore when signing or verifying.",
            ),
            click.option(
                "--ignore-git-paths/--no-ignore-git-paths",
                default=True,
                show_default=True,
                help="Ignore git-related files when signing or verifying.",
            ),
            click.option(
                "--allow_symlinks",
                is_flag=True,
                help="Whether to allow following symlinks when signing or verifying files.",
            ),
            click.option(
                "--device",
                default="auto",
                show_default=True,
                help="The device b3accel hashes on: auto, cpu, wgpu:N, opencl:N or all.",
            ),
            click.option(
                "--max_threads",
                type=click.IntRange(min=1),
                default=None,
                help="How many threads b3accel hashes on. Defaults to every core.",
            ),
        ]

        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            for option in reversed(options):
                f = option(f)
            return f

        return decorate

    def certificate_chain(f: Callable[..., Any]) -> Callable[..., Any]:
        return click.option(
            "--certificate_chain",
            type=path,
            metavar="CERTIFICATE_PATH",
            multiple=True,
            help="Path to certificate chain of trust.",
        )(f)

    def private_key(f: Callable[..., Any]) -> Callable[..., Any]:
        return click.option(
            "--private_key",
            type=path,
            metavar="PRIVATE_KEY",
            required=True,
            help="Path to the private key, as a PEM-encoded file.",
        )(f)

    def sigstore_common(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--trust_config", type=path, metavar="TRUST_CONFIG_PATH", help="The client trust configuration to use"
        )(f)
        return click.option("--use_staging", is_flag=True, help="Use Sigstore's staging instance.")(f)

    def ignore_unsigned(f: Callable[..., Any]) -> Callable[..., Any]:
        return click.option(
            "--ignore_unsigned_files/--no-ignore_unsigned_files",
            default=False,
            show_default=True,
            help="Ignore all files that were not originally signed.",
        )(f)

    def threads(max_threads: Optional[int]) -> int:
        return AUTO if max_threads is None else max_threads

    def sign(configure: Callable[[], signing.Config], kw: dict[str, Any]) -> None:
        try:
            model_path = kw["model_path"]
            ignored = _resolve_ignore_paths(model_path, [*kw["ignore_paths"], kw["signature"]])
            config = (
                hashing_config(device=kw["device"], max_threads=threads(kw["max_threads"]))
                .set_ignored_paths(paths=ignored, ignore_git_paths=kw["ignore_git_paths"])
                .set_allow_symlinks(kw["allow_symlinks"])
            )
            configure().set_hashing_config(config).sign(model_path, kw["signature"])
        except Exception as err:
            click.echo(f"Signing failed with error: {err}", err=True)
            sys.exit(1)
        click.echo("Signing succeeded")

    def verify(configure: Callable[[], verifying.Config], kw: dict[str, Any]) -> None:
        try:
            model_path = kw["model_path"]
            ignored = _resolve_ignore_paths(model_path, [*kw["ignore_paths"], kw["signature"]])
            # How to hash comes from the signature (BLAKE3 through b3accel, anything else through
            # model_signing); which files to hash from the options, as model_signing's command.
            config = (
                config_for(
                    signed_serialization(kw["signature"]), device=kw["device"], max_threads=threads(kw["max_threads"])
                )
                .set_ignored_paths(paths=ignored, ignore_git_paths=kw["ignore_git_paths"])
                .set_allow_symlinks(kw["allow_symlinks"])
            )
            configure().set_hashing_config(config).set_ignore_unsigned_files(kw["ignore_unsigned_files"]).verify(
                model_path, kw["signature"]
            )
        except Exception as err:
            click.echo(f"Verification failed with error: {err}", err=True)
            sys.exit(1)
        click.echo("Verification succeeded")

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(f"{b3accel.__version__} (model_signing {model_signing.__version__})", "--version")
    @click.option(
        "--log-level",
        type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
        default="INFO",
        show_default=True,
        metavar="LEVEL",
        help="Set the logging level.",
    )
    def main(log_level: str) -> None:
        """ML model signing and verification (sigstore's model_signing), hashing with b3accel.

        The arguments are model_signing's own; BLAKE3 hashes every file, on every core or device.
        Use each subcommand's `--help` option for details on each mode.
        """
        logging.basicConfig(format="%(message)s", level=getattr(logging, log_level.upper()))

    @main.group(name="sign", subcommand_metavar="PKI_METHOD", cls=MethodGroup)
    def sign_group() -> None:
        """Sign models (PKI_METHOD: sigstore, the default; key; certificate)."""

    @main.group(name="verify", subcommand_metavar="PKI_METHOD", cls=MethodGroup)
    def verify_group() -> None:
        """Verify models (PKI_METHOD: sigstore, the default; key; certificate)."""

    @sign_group.command(name="sigstore")
    @common(write=True)
    @sigstore_common
    @click.option("--use_ambient_credentials", is_flag=True, help="Use credentials from ambient environment.")
    @click.option("--identity_token", type=str, metavar="TOKEN", help="Fixed OIDC identity token to use.")
    @click.option("--oauth_force_oob", is_flag=True, default=False, help="Force an out-of-band OAuth flow.")
    @click.option("--client_id", type=str, metavar="ID", help="The custom OpenID Connect client ID.")
    @click.option("--client_secret", type=str, metavar="SECRET", help="The custom OpenID Connect client secret.")
    def sign_sigstore(**kw: Any) -> None:
        """Sign using Sigstore (DEFAULT signing method)."""
        sign(
            lambda: signing.Config().use_sigstore_signer(
                use_ambient_credentials=kw["use_ambient_credentials"],
                use_staging=kw["use_staging"],
                identity_token=kw["identity_token"],
                force_oob=kw["oauth_force_oob"],
                client_id=kw["client_id"],
                client_secret=kw["client_secret"],
                trust_config=kw["trust_config"],
            ),
            kw,
        )

    @sign_group.command(name="key")
    @common(write=True)
    @private_key
    @click.option("--password", type=str, metavar="PASSWORD", help="Password for the key encryption, if any")
    def sign_key(**kw: Any) -> None:
        """Sign using a private key (paired with a public one)."""
        sign(
            lambda: signing.Config().use_elliptic_key_signer(private_key=kw["private_key"], password=kw["password"]), kw
        )

    @sign_group.command(name="certificate")
    @common(write=True)
    @private_key
    @click.option(
        "--signing_certificate",
        type=path,
        metavar="CERTIFICATE_PATH",
        required=True,
        help="Path to the signing certificate, as a PEM-encoded file.",
    )
    @certificate_chain
    def sign_certificate(**kw: Any) -> None:
        """Sign using a certificate."""
        sign(
            lambda: signing.Config().use_certificate_signer(
                private_key=kw["private_key"],
                signing_certificate=kw["signing_certificate"],
                certificate_chain=kw["certificate_chain"],
            ),
            kw,
        )

    @verify_group.command(name="sigstore")
    @common(write=False)
    @sigstore_common
    @click.option(
        "--identity", type=str, metavar="IDENTITY", required=True, help="The expected identity of the signer."
    )
    @click.option(
        "--identity_provider",
        type=str,
        metavar="IDENTITY_PROVIDER",
        required=True,
        help="The expected identity provider.",
    )
    @ignore_unsigned
    def verify_sigstore(**kw: Any) -> None:
        """Verify using Sigstore (DEFAULT verification method)."""
        verify(
            lambda: verifying.Config().use_sigstore_verifier(
                identity=kw["identity"],
                oidc_issuer=kw["identity_provider"],
                use_staging=kw["use_staging"],
                trust_config=kw["trust_config"],
            ),
            kw,
        )

    @verify_group.command(name="key")
    @common(write=False)
    @click.option(
        "--public_key",
        type=path,
        metavar="PUBLIC_KEY",
        required=True,
        help="Path to the public key used for verification.",
    )
    @ignore_unsigned
    def verify_key(**kw: Any) -> None:
        """Verify using a public key (paired with a private one)."""
        verify(lambda: verifying.Config().use_elliptic_key_verifier(public_key=kw["public_key"]), kw)

    @verify_group.command(name="certificate")
    @common(write=False)
    @certificate_chain
    @click.option(
        "--log_fingerprints", is_flag=True, default=False, help="Log SHA256 fingerprints of all certificates."
    )
    @ignore_unsigned
    def verify_certificate(**kw: Any) -> None:
        """Verify using a certificate."""
        verify(
            lambda: verifying.Config().use_certificate_verifier(
                certificate_chain=kw["certificate_chain"], log_fingerprints=kw["log_fingerprints"]
            ),
            kw,
        )

    return main


def main(argv: Optional[Sequence[str]] = None) -> None:
    """``python -m b3accel.model_signing``: model_signing's command line, hashing with b3accel."""
    _cli().main(args=list(argv) if argv is not None else None, prog_name="python -m b3accel.model_signing")


if __name__ == "__main__":
    main()
