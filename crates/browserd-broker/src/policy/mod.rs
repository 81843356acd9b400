//! The broker's policy layer (BRIEF §8, the second of the three checks): which sites a session may see and act on,
//! which actions need the user's approval.

pub mod approvals;
pub mod classes;
pub mod enforce;
pub mod sites;
