//! The broker's policy checks, one file per layer: URL schemes (`schemes`), local files (`files`).

pub mod files;
pub mod schemes;
