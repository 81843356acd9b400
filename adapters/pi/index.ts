//! Entry point Pi discovers (`~/.pi/agent/extensions/<dir>/index.ts`, `pi -e`, or `"pi": {"extensions"}`); the
//! extension itself is plain JavaScript in `extension.mjs`, so Node's test runner can load it without a TS step.
export { default } from "./extension.mjs";
