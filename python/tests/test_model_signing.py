"""b3accel.model_signing against stock model_signing: the same manifests byte for byte, signatures
that verify across the two engines, tampering caught, the same ignore and symlink rules, and the
command line."""

# model_signing's constructors carry no type annotations.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import datetime
import importlib
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Literal

import blake3 as upstream
import pytest

from conftest import SOFTWARE, ci

if not ci():
    pytest.importorskip("model_signing", reason="model-signing is not installed: pip install './python[model-signing]'")
    pytest.importorskip("OpenSSL", reason="pyOpenSSL (which model-signing imports) is not installed")

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from model_signing import hashing, manifest, signing, verifying
from model_signing._cli import main as stock_cli_main
from model_signing._signing import signing as signing_internals
from click.testing import CliRunner

import b3accel.model_signing as b3ms
from b3accel import _b3accel

# Larger than b3ms.SMALL_FILE_BYTES: hashed alone over the pool.
LARGE = b3ms.SMALL_FILE_BYTES + 12345


def stock() -> hashing.Config:
    """Stock model_signing's BLAKE3 file serialization."""
    return hashing.Config().use_file_serialization(hashing_algorithm="blake3")


# protobuf, which model_signing uses, has no type information of its own.
json_format: Any = importlib.import_module("google.protobuf.json_format")


def payload(m: manifest.Manifest) -> bytes:
    """The bytes model_signing signs for a manifest (its key signer's DSSE payload)."""
    text: str = json_format.MessageToJson(signing_internals.Payload(m).statement.pb)
    return text.encode("utf-8")


def write(path: pathlib.Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def model_dir(root: pathlib.Path) -> pathlib.Path:
    """A model-shaped directory: large and small files, empty ones, nested folders, names with
    spaces and non-ASCII, and the git files model_signing ignores by default."""
    model = root / "model"
    write(model / "model-00001-of-00002.safetensors", os.urandom(LARGE))
    write(model / "model-00002-of-00002.safetensors", os.urandom(LARGE // 3))
    write(model / "config.json", b'{"hidden_size": 4096}')
    write(model / "empty", b"")
    write(model / "nested" / "deeper" / "still" / "weights.bin", os.urandom(70_000))
    write(model / "nested" / "empty too", b"")
    write(model / "with spaces" / "a file.txt", b"spaces")
    write(model / "données" / "modèle ünïcödé.bin", os.urandom(1025))
    write(model / ".git" / "HEAD", b"ref: refs/heads/main\n")
    write(model / ".gitattributes", b"*.safetensors filter=lfs\n")
    write(model / ".github" / "workflows" / "ci.yml", b"on: push\n")
    write(model / ".gitignore", b"*.pyc\n")
    for i in range(40):
        write(model / "tokenizer" / f"part{i:03}.txt", os.urandom(i * 37))
    return model


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return model_dir(tmp_path_factory.mktemp("shared"))


@pytest.fixture
def fresh_model(tmp_path: pathlib.Path) -> pathlib.Path:
    """A model of the test's own, to tamper with."""
    return model_dir(tmp_path)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """An EC P-256 key pair as PEM files: (private, public)."""
    root = tmp_path_factory.mktemp("keys")
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = root / "key", root / "key.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def other_dirs(root: pathlib.Path) -> list[pathlib.Path]:
    """Directories of other shapes: one file, none, only empty files, one large file."""
    single = root / "single.bin"
    write(single, os.urandom(5000))
    empty = root / "empty_dir"
    empty.mkdir()
    empties = root / "empties"
    for name in ("a", "b", "c/d"):
        write(empties / name, b"")
    large = root / "large"
    write(large / "shard", os.urandom(LARGE))
    return [single, empty, empties, large]


def test_manifests_equal_stock_on_several_directories(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    for directory in [model, *other_dirs(tmp_path)]:
        want = stock().hash(directory)
        got = b3ms.hashing_config().hash(directory)
        assert got == want, directory
        assert payload(got) == payload(want), directory
        assert got.serialization_type == want.serialization_type
        assert got.serialization_type["method"] == "files" and got.serialization_type["hash_type"] == "blake3"


def test_the_digests_are_blake3_of_each_file(model: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every file goes through the parallel pass: the two large ones alone, the rest in batches.
    calls = {"one": 0, "batch": 0}
    hash_one, hash_local_files = b3ms._hash_one, _b3accel.hash_local_files

    def counted_one(*args: Any) -> bytes:
        calls["one"] += 1
        return hash_one(*args)

    def counted_batch(*args: Any, **kwargs: Any) -> list[bytes]:
        calls["batch"] += 1
        digests: list[bytes] = hash_local_files(*args, **kwargs)
        return digests

    monkeypatch.setattr(b3ms, "_hash_one", counted_one)
    monkeypatch.setattr(_b3accel, "hash_local_files", counted_batch)
    items = {rd.identifier: rd.digest for rd in b3ms.hashing_config().hash(model).resource_descriptors()}
    assert calls == {"one": 1, "batch": 1}
    assert "données/modèle ünïcödé.bin" in items and "with spaces/a file.txt" in items
    assert not any(name.startswith(".git") for name in items)
    assert len(items) == 8 + 40
    for name, digest in items.items():
        assert digest.algorithm == "blake3"
        assert digest.digest_value == upstream.blake3((model / name).read_bytes()).digest(), name


@pytest.mark.parametrize("max_threads", [1, 2, 3, b3ms.AUTO])
def test_max_threads(model: pathlib.Path, max_threads: int) -> None:
    assert payload(b3ms.hashing_config(max_threads=max_threads).hash(model)) == payload(stock().hash(model))
    # model_signing's own max_workers (BLAKE3's thread count there) is taken too.
    config = b3ms.hashing_config().use_file_serialization(max_workers=max_threads)
    assert payload(config.hash(model)) == payload(stock().hash(model))


@pytest.mark.parametrize(("batch_files", "batch_bytes"), [(1, 1 << 20), (7, 1 << 20), (1000, 5000)])
def test_small_files_in_batches(
    model: pathlib.Path, monkeypatch: pytest.MonkeyPatch, batch_files: int, batch_bytes: int
) -> None:
    monkeypatch.setattr(b3ms, "BATCH_FILES", batch_files)
    monkeypatch.setattr(b3ms, "BATCH_BYTES", batch_bytes)
    assert payload(b3ms.hashing_config().hash(model)) == payload(stock().hash(model))


def test_device(device: str, tmp_path: pathlib.Path) -> None:
    model = tmp_path / "m"
    for i, size in enumerate([0, 1, 1024, 1025, 100_000, 1 << 20]):
        write(model / f"f{i}", os.urandom(size))
    if device not in SOFTWARE:
        write(model / "large", os.urandom(LARGE))
    assert payload(b3ms.hashing_config(device=device).hash(model)) == payload(stock().hash(model))


def test_bad_arguments_are_clear_errors(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="max_threads"):
        b3ms.hashing_config(max_threads=0)
    with pytest.raises(TypeError, match="max_threads"):
        b3ms.hashing_config(max_threads="4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nope"):
        b3ms.hashing_config(device="nope").hash(model_dir(tmp_path))
    with pytest.raises(FileNotFoundError):
        b3ms.hash_paths([tmp_path / "missing"])
    with pytest.raises(IsADirectoryError):
        b3ms.hash_paths([tmp_path])


def test_sign_with_b3accel_verify_with_stock(
    model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(b3ms.hashing_config()).sign(
        model, sig
    )
    verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(stock()).verify(model, sig)
    # With the hashing configuration guessed from the signature, as model_signing does by default.
    verifying.Config().use_elliptic_key_verifier(public_key=public).verify(model, sig)
    verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(b3ms.hashing_config()).verify(
        model, sig
    )


def test_sign_with_stock_verify_with_b3accel(
    model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(stock()).sign(model, sig)
    verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(b3ms.hashing_config()).verify(
        model, sig
    )
    # The configuration the command line picks from the signature.
    config = b3ms.config_for(b3ms.signed_serialization(sig))
    assert isinstance(config._serializer, b3ms.Serializer)
    verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(config).verify(model, sig)


def change_a_byte(model: pathlib.Path, name: str) -> None:
    path = model / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


TAMPERING: dict[str, tuple[Callable[[pathlib.Path], object], str]] = {
    "byte of a large file": (lambda m: change_a_byte(m, "model-00001-of-00002.safetensors"), "Hash mismatch"),
    "byte of a small file": (lambda m: change_a_byte(m, "données/modèle ünïcödé.bin"), "Hash mismatch"),
    "empty file filled": (lambda m: (m / "nested" / "empty too").write_bytes(b"\0"), "Hash mismatch"),
    "file added": (lambda m: write(m / "nested" / "extra.bin", b"x"), "Extra files"),
    "empty file added": (lambda m: write(m / "new empty", b""), "Extra files"),
    "file removed": (lambda m: (m / "tokenizer" / "part007.txt").unlink(), "Missing files"),
    "empty file removed": (lambda m: (m / "empty").unlink(), "Missing files"),
    "file renamed": (lambda m: (m / "config.json").rename(m / "config2.json"), "Missing files"),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_tampering_is_caught(
    fresh_model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path, case: str
) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(b3ms.hashing_config()).sign(
        fresh_model, sig
    )
    tamper, message = TAMPERING[case]
    tamper(fresh_model)
    for config in (b3ms.hashing_config(), stock()):
        with pytest.raises(ValueError, match=message):
            verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(config).verify(
                fresh_model, sig
            )


def test_git_paths_are_ignored_by_default_and_on_request(model: pathlib.Path) -> None:
    for ignore_git_paths in (True, False):
        want = stock().set_ignored_paths(paths=[], ignore_git_paths=ignore_git_paths).hash(model)
        got = b3ms.hashing_config().set_ignored_paths(paths=[], ignore_git_paths=ignore_git_paths).hash(model)
        assert payload(got) == payload(want)
        assert any(rd.identifier == ".git/HEAD" for rd in got.resource_descriptors()) is not ignore_git_paths


def test_ignore_rules_agree_with_stock(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    rules: list[list[Any]] = [
        ["config.json"],
        ["tokenizer", "with spaces/a file.txt", "données"],
        ["nested/deeper"],
        ["../outside", "no such path"],
        [pathlib.Path("model-00001-of-00002.safetensors")],
    ]
    for paths in rules:
        want = stock().set_ignored_paths(paths=paths).hash(model)
        got = b3ms.hashing_config().set_ignored_paths(paths=paths).hash(model)
        assert payload(got) == payload(want), paths
    for paths in rules:
        want_config, got_config = stock(), b3ms.hashing_config()
        want_config.add_ignored_paths(model_path=model, paths=paths)
        got_config.add_ignored_paths(model_path=model, paths=paths)
        assert payload(got_config.hash(model)) == payload(want_config.hash(model)), paths
    # Ignored paths given to the serialization itself, as a guessed configuration gives them.
    ignore = [pathlib.Path("config.json")]
    want = hashing.Config().use_file_serialization(hashing_algorithm="blake3", ignore_paths=ignore).hash(model)
    got = b3ms.hashing_config().use_file_serialization(ignore_paths=ignore).hash(model)
    assert payload(got) == payload(want)


def test_ignored_paths_travel_in_the_signature(
    model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    config = b3ms.hashing_config().set_ignored_paths(paths=["config.json", "tokenizer"])
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(config).sign(model, sig)
    recorded = b3ms.signed_serialization(sig)
    assert set(recorded["ignore_paths"]) >= {"config.json", "tokenizer", ".git", ".gitignore"}
    # Stock verification, guessing the configuration, ignores what the signature says was ignored.
    verifying.Config().use_elliptic_key_verifier(public_key=public).verify(model, sig)
    verifying.Config().use_elliptic_key_verifier(public_key=public).set_hashing_config(b3ms.hashing_config()).verify(
        model, sig
    )


def symlinked_model(root: pathlib.Path) -> pathlib.Path:
    model = root / "linked"
    write(model / "real.bin", os.urandom(3000))
    write(root / "outside.bin", os.urandom(LARGE))
    (model / "link.bin").symlink_to(model / "real.bin")
    (model / "outside link").symlink_to(root / "outside.bin")
    return model


def test_symlink_rules_agree_with_stock(tmp_path: pathlib.Path) -> None:
    model = symlinked_model(tmp_path)
    for config in (stock(), b3ms.hashing_config()):
        with pytest.raises(ValueError, match="is a symlink"):
            config.hash(model)
    want = stock().set_allow_symlinks(True).hash(model)
    got = b3ms.hashing_config().set_allow_symlinks(True).hash(model)
    assert payload(got) == payload(want)
    assert got.serialization_type["allow_symlinks"] is True
    assert len(list(got.resource_descriptors())) == 3


def test_files_to_hash_is_honoured(model: pathlib.Path) -> None:
    subsets = [
        [model / "config.json", model / "model-00001-of-00002.safetensors"],
        [model / "données" / "modèle ünïcödé.bin", model / "empty"],
        [],
        [model / ".gitignore", model / "config.json"],  # still ignored
    ]
    for files in subsets:
        want = stock().hash(model, files_to_hash=files)
        got = b3ms.hashing_config().hash(model, files_to_hash=iter(files))
        assert payload(got) == payload(want)
    with pytest.raises(ValueError, match="missing"):
        b3ms.hashing_config().hash(model, files_to_hash=[model / "missing"])


def test_unsigned_files_can_be_ignored(
    fresh_model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(b3ms.hashing_config()).sign(
        fresh_model, sig
    )
    write(fresh_model / "unsigned.txt", b"added later")
    verifier = verifying.Config().use_elliptic_key_verifier(public_key=public)
    with pytest.raises(ValueError, match="Extra files"):
        verifier.set_hashing_config(b3ms.hashing_config()).verify(fresh_model, sig)
    verifier.set_hashing_config(b3ms.hashing_config()).set_ignore_unsigned_files(True).verify(fresh_model, sig)


def test_other_algorithms_fall_back_to_stock(model: pathlib.Path) -> None:
    algorithms: list[Literal["sha256", "blake2"]] = ["sha256", "blake2"]
    for algorithm in algorithms:
        want = hashing.Config().use_file_serialization(hashing_algorithm=algorithm).hash(model)
        got = b3ms.hashing_config().use_file_serialization(hashing_algorithm=algorithm).hash(model)
        assert payload(got) == payload(want)
        want = hashing.Config().use_shard_serialization(hashing_algorithm=algorithm, shard_size=1 << 20).hash(model)
        got = b3ms.config_for(
            {"method": "shards", "hash_type": algorithm, "shard_size": 1 << 20, "allow_symlinks": False}
        ).hash(model)
        assert payload(got) == payload(want)
    # BLAKE3 shards are BLAKE3 files in model_signing, and so here.
    got = b3ms.hashing_config().use_shard_serialization(hashing_algorithm="blake3").hash(model)
    assert payload(got) == payload(stock().hash(model))


def test_file_hasher(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f"
    data = os.urandom(LARGE)
    path.write_bytes(data)
    hasher = b3ms.FileHasher(tmp_path / "other")
    hasher.set_file(path)
    digest = hasher.compute()
    assert (digest.algorithm, digest.digest_value) == ("blake3", upstream.blake3(data).digest())
    assert (hasher.digest_name, hasher.digest_size) == ("blake3", 32)


# The command line, in a subprocess as users run it.


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """The command line as users run it, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "b3accel.model_signing", *map(str, args)], capture_output=True, text=True
    )


def run(main: Any, *args: object) -> subprocess.CompletedProcess[str]:
    """A click command line run in this process (a subprocess costs seconds of imports)."""
    argv = [str(a) for a in args]
    result = CliRunner().invoke(main, argv)
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def ours(*args: object) -> subprocess.CompletedProcess[str]:
    return run(b3ms._cli(), *args)


def stock_cli(*args: object) -> subprocess.CompletedProcess[str]:
    return run(stock_cli_main, *args)


def test_cli_key(fresh_model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path) -> None:
    private, public = keys
    sig = tmp_path / "model.sig"
    done = cli(
        "sign",
        "key",
        fresh_model,
        "--signature",
        sig,
        "--private_key",
        private,
        "--ignore-paths",
        fresh_model / "config.json",
        "--max_threads",
        2,
    )
    assert done.returncode == 0 and "Signing succeeded" in done.stdout, done.stderr
    assert b3ms.signed_serialization(sig)["hash_type"] == "blake3"
    assert "config.json" in b3ms.signed_serialization(sig)["ignore_paths"]
    # Stock model_signing (its API: its 1.1.1 command line hashes with SHA-256 only) verifies it.
    verifying.Config().use_elliptic_key_verifier(public_key=public).verify(fresh_model, sig)
    done = ours("verify", "key", fresh_model, "--signature", sig, "--public_key", public, "--device", "cpu")
    assert done.returncode == 0 and "Verification succeeded" in done.stdout, done.stderr
    # A stock command-line signature (SHA-256) verifies through this command line too.
    stock_sig = tmp_path / "stock.sig"
    done = stock_cli("sign", "key", fresh_model, "--signature", stock_sig, "--private_key", private)
    assert done.returncode == 0, done.stderr
    done = ours("verify", "key", fresh_model, "--signature", stock_sig, "--public_key", public)
    assert done.returncode == 0 and "Verification succeeded" in done.stdout, done.stderr
    # Tampering fails with model_signing's message and status.
    change_a_byte(fresh_model, "model-00002-of-00002.safetensors")
    for signature in (sig, stock_sig):
        done = ours("verify", "key", fresh_model, "--signature", signature, "--public_key", public)
        assert done.returncode == 1 and "Verification failed with error: Signature mismatch" in done.stderr, done.stderr


def test_cli_signature_inside_the_model_is_ignored(
    fresh_model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    private, public = keys
    monkeypatch.chdir(fresh_model)
    done = ours("sign", "key", ".", "--private_key", private)
    assert done.returncode == 0, done.stderr
    assert (fresh_model / "model.sig").exists()
    assert "model.sig" in b3ms.signed_serialization(fresh_model / "model.sig")["ignore_paths"]
    done = ours("verify", "key", ".", "--signature", "model.sig", "--public_key", public)
    assert done.returncode == 0, done.stderr


def certificates(root: pathlib.Path, key_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A CA and a signing certificate for the key at ``key_path``: (signing certificate, CA)."""
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def usage(*, signing: bool) -> x509.KeyUsage:
        return x509.KeyUsage(
            digital_signature=signing,
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            key_cert_sign=not signing,
            crl_sign=not signing,
            encipher_only=False,
            decipher_only=False,
        )

    ca = (
        x509.CertificateBuilder()
        .subject_name(name("b3accel test CA"))
        .issuer_name(name("b3accel test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage(signing=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(name("b3accel test signer"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage(signing=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_path, ca_path = root / "signer.pem", root / "ca.pem"
    leaf_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return leaf_path, ca_path


def test_cli_certificate(
    fresh_model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    private, _ = keys
    leaf, ca = certificates(tmp_path, private)
    sig = tmp_path / "model.sig"
    done = ours(
        "sign",
        "certificate",
        fresh_model,
        "--signature",
        sig,
        "--private_key",
        private,
        "--signing_certificate",
        leaf,
        "--certificate_chain",
        ca,
    )
    assert done.returncode == 0 and "Signing succeeded" in done.stdout, done.stderr
    verifying.Config().use_certificate_verifier(certificate_chain=[ca]).verify(fresh_model, sig)
    done = ours("verify", "certificate", fresh_model, "--signature", sig, "--certificate_chain", ca)
    assert done.returncode == 0 and "Verification succeeded" in done.stdout, done.stderr
    write(fresh_model / "added", b"")
    done = ours("verify", "certificate", fresh_model, "--signature", sig, "--certificate_chain", ca)
    assert done.returncode == 1 and "Extra files" in done.stderr, done.stderr
    done = ours(
        "verify", "certificate", fresh_model, "--signature", sig, "--certificate_chain", ca, "--ignore_unsigned_files"
    )
    assert done.returncode == 0, done.stderr


def test_cli_usage() -> None:
    done = ours("sign", "--help")
    assert done.returncode == 0 and "PKI_METHOD" in done.stdout
    done = ours("sign", "key", "--help")
    for option in (
        "--signature",
        "--ignore-paths",
        "--ignore-git-paths",
        "--allow_symlinks",
        "--private_key",
        "--password",
        "--device",
        "--max_threads",
    ):
        assert option in done.stdout
    # Without a method, sigstore is taken, as model_signing does.
    done = ours("verify", "--help")
    assert done.returncode == 0
    done = ours("verify", "model", "--signature", "x.sig")
    assert done.returncode == 2 and "--identity" in done.stderr, done.stderr
    done = ours("sign", "key", "model")
    assert done.returncode == 2 and "--private_key" in done.stderr
    done = ours("sign", "key", "model", "--private_key", "k", "--max_threads", 0)
    assert done.returncode == 2 and "--max_threads" in done.stderr


def test_cli_unreadable_signature(
    model: pathlib.Path, keys: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    bad = tmp_path / "bad.sig"
    bad.write_text("not json")
    done = ours("verify", "key", model, "--signature", bad, "--public_key", keys[1])
    assert done.returncode == 1 and "cannot read the signature" in done.stderr, done.stderr


def test_cli_sigstore_is_passed_to_model_signing(
    fresh_model: pathlib.Path,
    keys: tuple[pathlib.Path, pathlib.Path],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sigstore needs the network: model_signing's sigstore signer and verifier are stood in for by
    # its key ones, recording what the command line asked of them.
    private, public = keys
    asked: dict[str, dict[str, Any]] = {}

    def sigstore_signer(self: signing.Config, **kwargs: Any) -> signing.Config:
        asked["signer"] = kwargs
        return self.use_elliptic_key_signer(private_key=private)

    def sigstore_verifier(self: verifying.Config, **kwargs: Any) -> verifying.Config:
        asked["verifier"] = kwargs
        return self.use_elliptic_key_verifier(public_key=public)

    monkeypatch.setattr(signing.Config, "use_sigstore_signer", sigstore_signer)
    monkeypatch.setattr(verifying.Config, "use_sigstore_verifier", sigstore_verifier)
    sig = tmp_path / "model.sig"
    # No method: sigstore, as model_signing's command line.
    done = ours(
        "sign", fresh_model, "--signature", sig, "--use_staging", "--identity_token", "TOKEN", "--client_id", "ID"
    )
    assert done.returncode == 0, done.stderr
    assert asked["signer"] == {
        "use_ambient_credentials": False,
        "use_staging": True,
        "identity_token": "TOKEN",
        "force_oob": False,
        "client_id": "ID",
        "client_secret": None,
        "trust_config": None,
    }
    assert b3ms.signed_serialization(sig)["hash_type"] == "blake3"
    done = ours(
        "verify",
        "sigstore",
        fresh_model,
        "--signature",
        sig,
        "--identity",
        "me@example.com",
        "--identity_provider",
        "https://issuer",
    )
    assert done.returncode == 0, done.stderr
    assert asked["verifier"] == {
        "identity": "me@example.com",
        "oidc_issuer": "https://issuer",
        "use_staging": False,
        "trust_config": None,
    }
