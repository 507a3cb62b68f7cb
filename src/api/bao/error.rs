//! What goes wrong with bao encodings: a node that does not verify (where it starts, and which
//! content it covers), a stream that ends too soon, bad arguments, I/O and device errors.

use std::{fmt, io};

/// The kind of node that failed to verify.
///
/// ```
/// assert_eq!(b3accel::bao::Block::Parent.to_string(), "parent node");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// A parent node: two children's chaining values.
    Parent,
    /// Content: a chunk group, or the chunks of a slice inside a group.
    Data,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Block::Parent => "parent node",
            Block::Data => "content block",
        })
    }
}

/// An error of the bao functions.
///
/// ```
/// use b3accel::bao::{Block, Error};
/// let e = Error::Corrupt { block: Block::Data, offset: 72, content: 1024 };
/// assert!(e.to_string().contains("offset 72"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A node does not verify against the hash: it starts at byte `offset` of the stream it was
    /// read from (the encoding or slice; for a decode with an outboard, the outboard for a parent
    /// node and the content for data) and covers the content from byte `content` on. Nothing from
    /// it or after it was released.
    Corrupt {
        /// What failed.
        block: Block,
        /// Where it starts in its stream.
        offset: u64,
        /// The first content byte it covers.
        content: u64,
    },
    /// The stream ended at byte `offset`, before the node it was reading.
    Truncated {
        /// Where the stream ended.
        offset: u64,
    },
    /// Bad arguments, a malformed outboard, or a size header too large for any encoding.
    Invalid(String),
    /// Reading or writing failed.
    Io(io::Error),
    /// The device failed.
    Device(crate::tree::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Corrupt { block, offset, content } => {
                write!(f, "hash mismatch: the {block} at offset {offset} (content from byte {content}) does not verify")
            }
            Error::Truncated { offset } => write!(f, "the encoding ends too soon, at offset {offset}"),
            Error::Invalid(msg) => f.write_str(msg),
            Error::Io(e) => write!(f, "{e}"),
            Error::Device(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Device(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl From<crate::tree::Error> for Error {
    fn from(e: crate::tree::Error) -> Error {
        Error::Device(e)
    }
}

/// As an I/O error: corrupt and truncated input are `InvalidData` and `UnexpectedEof`.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            Error::Truncated { .. } => io::Error::new(io::ErrorKind::UnexpectedEof, e),
            Error::Invalid(_) => io::Error::new(io::ErrorKind::InvalidInput, e),
            _ => io::Error::new(io::ErrorKind::InvalidData, e),
        }
    }
}
