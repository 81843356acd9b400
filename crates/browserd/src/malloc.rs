//! The broker daemon's allocator settings. glibc raises its mmap threshold after a large block is freed and keeps freed
//! heap memory in per-thread arenas, so a few large frames (a 16 MB request) lift a long-lived broker's RSS for good.
//! `browserd broker run` therefore starts itself again, once, with `GLIBC_TUNABLES` fixing the mmap threshold (blocks
//! of 128 KiB and more come from and go back to the kernel), the trim threshold and two arenas. A `GLIBC_TUNABLES`
//! already set is left as it is (so is any other libc).

/// What `broker run` runs with.
pub(crate) const TUNABLES: &str =
    "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072:glibc.malloc.arena_max=2";

/// For `browserd broker run` without `GLIBC_TUNABLES`: replaces this process (same pid) with itself under
/// [`TUNABLES`]. Returns only when that is not needed or not possible (then the broker runs with the defaults).
pub(crate) fn reexec_broker_with_tunables() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        let mut args = std::env::args_os().skip(1);
        let is_broker_run = args.next().is_some_and(|a| a == "broker") && args.next().is_some_and(|a| a == "run");
        if !is_broker_run || std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let err =
            std::process::Command::new(exe).args(std::env::args_os().skip(1)).env("GLIBC_TUNABLES", TUNABLES).exec();
        eprintln!("browserd: could not restart the broker with its allocator settings ({err}); running without them");
    }
}
