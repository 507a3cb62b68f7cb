//! What both GPU backends share, naming neither `ocl` nor `wgpu`: the pieces layout the kernels
//! hand back, where capped passes stop and what they hand back, how a chunk pass spreads a small input over work-groups, bounded pools of per-call resources, cutting host inputs into segments and merging
//! their results, the Merkle pass plan, the resident bao outboard's plan, the host policy for `merkle` and `hash_many`, the
//! cache files of compiled device code, and [`Resident`](resident::Resident), the one shape of
//! their calls on data on the device.

pub(crate) mod bao;
pub(crate) mod cache_file;
pub(crate) mod capped;
pub(crate) mod groups;
pub(crate) mod layout;
pub(crate) mod merkle_plan;
pub(crate) mod pieces;
pub(crate) mod policy;
pub(crate) mod pool;
pub(crate) mod resident;
pub(crate) mod segments;
