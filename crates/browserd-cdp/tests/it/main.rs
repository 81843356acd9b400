//! Integration tests of browserd-cdp: the connection against a scripted peer, and everything against a real Chromium.

mod marks;
mod real_chromium;
mod scripted;
mod wss;
