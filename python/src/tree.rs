//! Beyond blake3-py: whole files, the subtree API (hashing one input in pieces anywhere, then
//! merging), batches of equal-length messages and Merkle trees.

use crate::buffer::Bytes;
use crate::errors::{file_error, OrPy};
use crate::hasher::GIL_MIN_BYTES;
use crate::mode::mode;
use crate::target::Target;
use b3accel::file::{FileOptions, Input, ReadMode};
use b3accel::hazmat::{self, ChainingValue, HasherExt, Piece};
use b3accel::merkle::{self, Node, Proof};
use b3accel::{Device, Hasher, Mode, OUT_LEN};
use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;

/// `device=` of a function: `None` is "auto".
fn target(device: Option<&Bound<'_, PyAny>>) -> PyResult<Target> {
    device.map_or(Ok(Target::One(Device::Auto)), Target::extract)
}

/// Runs `f` without the GIL unless `len` bytes are few.
fn maybe_detach<R: Send>(py: Python<'_>, len: usize, f: impl FnOnce() -> R + Send) -> R {
    if len < GIL_MIN_BYTES {
        f()
    } else {
        py.detach(f)
    }
}

/// The 32-byte BLAKE3 hash (or keyed hash, or derived key) of the file at `path`, on `device`,
/// read as `read` says: "auto" (mapped where its pages are in memory, else read from the front),
/// "map" or "stream".
#[pyfunction]
#[pyo3(signature = (path, *, key = None, derive_key_context = None, device = None, read = "auto"))]
pub fn hash_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    device: Option<&Bound<'py, PyAny>>,
    read: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let mode = mode(key, derive_key_context)?;
    let target = target(device)?;
    let read: ReadMode = read.parse().map_err(PyValueError::new_err)?;
    let options = FileOptions { read, progress: None };
    let backend = py.detach(|| target.open()).py()?;
    let hash = py
        .detach(|| {
            let (mut reader, _) = Input::open(&path)?.hash_with(backend, &mode, &options)?;
            let mut hash = [0u8; 32];
            reader.fill(&mut hash);
            Ok::<_, b3accel::Error>(hash)
        })
        .map_err(|e| file_error(e, &path))?;
    Ok(PyBytes::new(py, &hash))
}

/// The 32-byte chaining value of `data` as the subtree of a larger input that starts at byte
/// `offset` of it (BLAKE3's tree: see `plan_pieces` for valid pieces). The crate's rules:
/// `offset` is a multiple of 1024; `data` is not empty and at most the largest power of two
/// of KiB that divides `offset` (any length at offset 0 only if it is a power of two of KiB,
/// since otherwise it is the whole input, whose top node is the root). A piece that breaks
/// them is a `ValueError`.
#[pyfunction]
#[pyo3(signature = (data, offset, *, key = None, derive_key_context = None, device = None))]
pub fn subtree<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offset: u64,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mode = mode(key, derive_key_context)?;
    let target = target(device)?;
    let bytes = Bytes::get(data)?;
    let data = bytes.as_slice();
    hazmat::check_subtree(offset, data.len() as u64).py()?;
    let cv = maybe_detach(py, data.len(), || {
        let mut hasher = Hasher::with_backend(target.open()?, &mode);
        hasher.set_input_offset(offset)?.update(data)?;
        hasher.finalize_non_root()
    })
    .py()?;
    Ok(PyBytes::new(py, &cv))
}

/// One piece of `merge`: `(offset, length, cv)`.
fn piece(index: usize, item: &Bound<'_, PyAny>) -> PyResult<Piece> {
    let (offset, len, cv): (u64, u64, Bound<'_, PyAny>) = item.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "piece {index}: expected a tuple (offset, length, chaining value of 32 bytes)"
        ))
    })?;
    let bytes = Bytes::get(&cv)?;
    let cv: ChainingValue = bytes.as_slice().try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "piece {index}: a chaining value is {OUT_LEN} bytes, not {}",
            bytes.as_slice().len()
        ))
    })?;
    Ok(Piece { offset, len, cv })
}

/// The root output of an input from the chaining values of pieces that cover it: `pieces` is
/// a list of `(offset, length, cv)` in any order, each cv from `subtree` over those bytes in
/// the same mode; `length` bytes of output from byte `seek` (32 bytes from 0: the hash). A
/// cover with a gap, an overlap or a piece that is not a subtree where it lies, or a single
/// piece (its cv is not the root: hash such an input whole), is a `ValueError` naming the piece.
#[pyfunction]
#[pyo3(signature = (pieces, *, key = None, derive_key_context = None, length = OUT_LEN, seek = 0))]
pub fn merge<'py>(
    py: Python<'py>,
    pieces: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    length: usize,
    seek: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    if length > isize::MAX as usize {
        return Err(PyOverflowError::new_err("length overflows isize"));
    }
    let mode = mode(key, derive_key_context)?;
    let pieces: Vec<Piece> =
        pieces.try_iter()?.enumerate().map(|(i, item)| piece(i, &item?)).collect::<PyResult<_>>()?;
    let (key, context_key);
    let tree_mode = match &mode {
        Mode::Hash => hazmat::Mode::Hash,
        Mode::Keyed(k) => {
            key = *k;
            hazmat::Mode::KeyedHash(&key)
        }
        Mode::DeriveKey(context) => {
            context_key = hazmat::hash_derive_key_context(context);
            hazmat::Mode::DeriveKeyMaterial(&context_key)
        }
    };
    let mut reader = hazmat::merge_pieces_root_xof(&pieces, tree_mode).py()?;
    reader.set_position(seek);
    PyBytes::new_with(py, length, |out| {
        maybe_detach(py, out.len(), || reader.fill(out));
        Ok(())
    })
}

/// The hashes of `len(data) // message_len` messages of `message_len` bytes each, laid end to
/// end in `data`, in any of the three modes, as 32 bytes each, concatenated (the package's
/// `hash_many` shapes them).
#[pyfunction]
#[pyo3(signature = (data, message_len, *, key = None, derive_key_context = None, device = None))]
pub fn hash_many<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    message_len: usize,
    key: Option<&Bound<'py, PyAny>>,
    derive_key_context: Option<&str>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    if message_len == 0 {
        return Err(PyValueError::new_err(
            "hash_many: message_len must be at least 1 (the hash of an empty message is blake3(b\"\").digest())",
        ));
    }
    let mode = mode(key, derive_key_context)?;
    let target = target(device)?;
    let bytes = Bytes::get(data)?;
    let data = bytes.as_slice();
    if !data.len().is_multiple_of(message_len) {
        return Err(PyValueError::new_err(format!(
            "hash_many: {} bytes cannot be split into messages of {message_len} bytes",
            data.len()
        )));
    }
    // The hashes are written straight into the bytes object: 32 bytes a message can be many
    // times the input, and an allocation that fails is a MemoryError.
    let out_len = (data.len() / message_len)
        .checked_mul(OUT_LEN)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| PyMemoryError::new_err("hash_many: the hashes would not fit in memory"))?;
    PyBytes::new_with(py, out_len, |out| {
        let (hashes, _) = out.as_chunks_mut::<OUT_LEN>();
        maybe_detach(py, data.len(), || merkle::hash_many_into(&*target.open()?, &mode, data, message_len, hashes)).py()
    })
}

/// `data` as 32-byte leaves.
fn leaves(data: &[u8]) -> PyResult<&[Node]> {
    match data.as_chunks::<OUT_LEN>() {
        (leaves, []) => Ok(leaves),
        _ => {
            Err(PyValueError::new_err(format!("leaves: {} bytes are not a whole number of 32-byte leaves", data.len())))
        }
    }
}

/// The root of the binary Merkle tree over 32-byte `leaves` (one buffer of n * 32 bytes), with
/// BLAKE3 as the 2-to-1 hash, computed on `device`.
#[pyfunction]
#[pyo3(signature = (leaves, *, device = None))]
pub fn merkle_root<'py>(
    py: Python<'py>,
    leaves: &Bound<'py, PyAny>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let target = target(device)?;
    let bytes = Bytes::get(leaves)?;
    let nodes = self::leaves(bytes.as_slice())?;
    let root = maybe_detach(py, bytes.as_slice().len(), || merkle::merkle_root_with(&*target.open()?, nodes)).py()?;
    Ok(PyBytes::new(py, root.as_bytes()))
}

/// A binary Merkle tree over 32-byte leaves: its root and a proof for each leaf.
#[pyclass(name = "MerkleTree", module = "b3accel", frozen)]
pub struct MerkleTree(merkle::MerkleTree<'static>);

#[pymethods]
impl MerkleTree {
    /// The 32-byte root.
    #[getter]
    fn root<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.0.root().as_bytes())
    }

    /// How many leaves the tree has.
    #[getter]
    fn leaf_count(&self) -> usize {
        self.0.leaf_count()
    }

    /// The proof that leaf `index` is in the tree, serialized (give it to `verify`): the leaf
    /// count as 8 little-endian bytes, then the siblings on the leaf's path, 32 bytes each,
    /// bottom up. An index out of range is a `ValueError`.
    fn proof<'py>(&self, py: Python<'py>, index: u64) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.0.proof(index).py()?.to_bytes()))
    }

    fn __len__(&self) -> usize {
        self.0.leaf_count()
    }
}

/// The Merkle tree over 32-byte `leaves` (one buffer of n * 32 bytes), computed on `device`.
#[pyfunction]
#[pyo3(signature = (leaves, *, device = None))]
pub fn merkle_tree(
    py: Python<'_>,
    leaves: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<MerkleTree> {
    let target = target(device)?;
    let bytes = Bytes::get(leaves)?;
    let nodes = self::leaves(bytes.as_slice())?;
    let tree = maybe_detach(py, bytes.as_slice().len(), || {
        merkle::MerkleTree::build_with(&*target.open()?, nodes).map(merkle::MerkleTree::into_owned)
    })
    .py()?;
    Ok(MerkleTree(tree))
}

/// Whether `proof` (from `MerkleTree.proof`) shows that the 32-byte `leaf` is leaf `index` of
/// the tree of `leaf_count` leaves whose root is `root`. `leaf_count` is the size the verifier
/// trusts (a root fits trees of several sizes); a proof made for another size, index or root is
/// `False`. A malformed proof or node is a `ValueError`.
#[pyfunction]
#[pyo3(signature = (root, leaf, index, proof, *, leaf_count))]
pub fn verify(
    root: &Bound<'_, PyAny>,
    leaf: &Bound<'_, PyAny>,
    index: u64,
    proof: &Bound<'_, PyAny>,
    leaf_count: u64,
) -> PyResult<bool> {
    let node = |obj: &Bound<'_, PyAny>, what: &str| -> PyResult<Node> {
        let bytes = Bytes::get(obj)?;
        bytes.as_slice().try_into().map_err(|_| PyValueError::new_err(format!("{what} must be 32 bytes")))
    };
    let root = b3accel::Hash::from_bytes(node(root, "root")?);
    let leaf = node(leaf, "leaf")?;
    let proof = Proof::from_bytes(Bytes::get(proof)?.as_slice()).py()?;
    Ok(merkle::verify(&root, &leaf, index, &proof, leaf_count))
}
