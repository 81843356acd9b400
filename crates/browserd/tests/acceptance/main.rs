//! The end-to-end acceptance suite: the lifecycle seed's nine real acceptance checks (§ 真实验收) and every defect of
//! issue 14, each driven the way a user meets browserd — the real `browserd mcp` spawned as Claude Code spawns it
//! (its whole environment and `CLAUDE_CODE_SESSION_ID`) or as Codex does (a bare environment, turn metadata in each
//! call's `_meta`), turn ends and session ends through `browserd hook turn-end|session-end` with each host's hook
//! JSON, against the managed Chromium and the fixture site. Every check asserts what the user would see: which tabs
//! are open in the browser itself (asked of Chromium's own DevTools endpoint, not of browserd), `isError`, and what
//! `browser_status` / `browserd status` say.
//!
//! Environment notes: a Codex-spawned server and Codex's hooks get only `HOME LANG PATH SHELL TERM PWD` (no
//! `XDG_RUNTIME_DIR`) and reach the broker by the `/run/user/<uid>` rule, whose root each test points at its own
//! home (`BROWSERD_TEST_RUN_USER_BASE`, the rule's test hook); Claude Code's environment has `XDG_RUNTIME_DIR` set to
//! that same directory, as a login session does. The disk-full check mounts a real tmpfs and needs root, as CI has;
//! without it the test fails, it never skips.
//!
//! - [`harness`]: homes, the MCP client, hooks, and the questions asked of Chromium.
//! - [`lifecycle`]: the seed's nine checks (`ac1_…` to `ac9_…`).
//! - [`defects`]: one test per defect of issue 14 (`d1_…` to `d9_…`).
//! - [`vision`]: the `--vision` modes (issue 19).

mod defects;
mod harness;
mod lifecycle;
mod pages;
mod vision;
