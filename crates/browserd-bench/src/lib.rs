//! browserd's benchmark harness: observes the fixture site's pages with each observer (Playwright MCP,
//! chrome-devtools-mcp, agent-browser and browserd's own observation and action loop) and reports latency percentiles, size in bytes and o200k tokens, and whether
//! every interactive element of the generated pages is addressable, one JSON object per line. Each browserd observer
//! runs in a child process of its own, so its refs and cursors are those of a fresh broker's first browser connection
//! (see [`run`]).

pub mod addressability;
pub mod agent_browser;
pub mod broker_rtt;
pub mod broker_soak;
pub mod browserd;
pub mod browserd_mcp;
pub mod devtools;
pub mod fidelity;
pub mod node_mcp;
pub mod observer;
pub mod playwright;
pub mod report;
pub mod run;
pub mod stats;
pub mod tokens;
