//! What the command line's tests share: the library's test helpers (tests/common at the
//! repository's root: backends, inputs, scratch directories, upstream's answers), and `cli`,
//! running the binary.
#![allow(dead_code)]

#[path = "../../../../tests/common/mod.rs"]
mod library;

pub use library::*;

pub mod cli;
