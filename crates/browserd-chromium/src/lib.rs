//! browserd's Chromium provider: tabs over the Target domain, observation with stable document-bound refs, verified
//! actions through the Input domain and screenshots, on a managed Chromium (pipe) or a remote CDP endpoint.
//!
//! # Entry points
//! - [`ChromiumProvider::launch_managed`]: launch a headless Chromium and get a connected provider.
//! - [`ChromiumProvider::connect_remote`]: connect to a `ws://` / `http://host:port` DevTools endpoint.
//! - [`ChromiumProvider::new`]: wrap an existing [`browserd_cdp::Cdp`].
//!
//! Everything else goes through [`browserd_core::provider::Provider`] (`observe`, `act`, tabs, debugger attach) plus
//! [`ChromiumProvider::screenshot`]. Click, dblclick, hover and drag also take a point of a recent screenshot of the tab
//! (`ActParams::at`), re-validated against the current document, viewport, zoom and scroll before input.

mod act;
mod advanced;
mod ax;
#[cfg(test)]
mod fuzz_tests;
mod image_size;
mod input;
mod observe;
mod origin;
mod point;
mod provider;
mod screenshot;
mod scroller;
mod state;
mod world;

pub use advanced::{PIXEL_CAPTURE_METHODS, captures_pixels};
pub use ax::{AxStats, DomFirst};
pub use origin::{ORIGIN_NOT_AUTHORISED_PREFIX, OriginCheck, OriginCheckFn};
pub use provider::{ChromiumConfig, ChromiumProvider, SessionTabs, TabSettings};
pub use screenshot::{DEFAULT_MAX_BYTES, DEFAULT_MAX_SIZE};
