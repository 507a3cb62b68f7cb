//! The shape of a bao tree for the bao API: [`Tree`] and its constants live in the tree layer
//! (`tree::bao_shape`, where the GPU backends use them too); here they are re-exported, and
//! `Tree::new` gives the shape's checks the bao API's error type.

use super::error::Error;
pub(crate) use crate::tree::bao_shape::{Node, Place};
pub use crate::tree::bao_shape::{Order, Tree, HEADER_LEN, MAX_GROUP_LOG, PARENT_LEN};

impl Tree {
    /// The tree of `size` content bytes in groups of 2^`group_log` chunks; an error for a group
    /// log above [`MAX_GROUP_LOG`], or a size whose encoding's length does not fit in a `u64` (a
    /// corrupt size header: the offsets of its nodes would overflow).
    ///
    /// ```
    /// assert!(b3accel::bao::Tree::new(5, 21).is_err());
    /// assert!(b3accel::bao::Tree::new(u64::MAX, 0).is_err());
    /// ```
    pub fn new(size: u64, group_log: u8) -> Result<Tree, Error> {
        Tree::checked(size, group_log).map_err(|e| Error::Invalid(e.to_string()))
    }
}
