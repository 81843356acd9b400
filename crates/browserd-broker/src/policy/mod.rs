//! The broker's policy checks, one file per layer: URL schemes (`schemes`), the `[files]` section (`files`), uploads
//! and download receipts (`transfer`).

pub mod files;
pub mod schemes;
pub mod transfer;
