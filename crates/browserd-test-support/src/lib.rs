//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer and the loopback fixture site.
