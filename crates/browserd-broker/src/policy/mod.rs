//! The broker's policy checks (BRIEF §8, the second of the three checks), one file per layer: URL schemes
//! (`schemes`), the `[files]` section (`files`), uploads and download receipts (`transfer`), which sites a session may
//! see and act on (`sites`, enforced by `enforce`), action classes (`classes`), the user's approvals (`approvals`) and files
//! the user approves for one upload (`approved_files`).

pub mod approvals;
pub mod approved_files;
pub mod classes;
pub mod enforce;
pub mod files;
pub mod schemes;
pub mod sites;
pub mod transfer;
