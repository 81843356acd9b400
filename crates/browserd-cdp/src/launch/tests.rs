//! Unit tests of executable discovery and of the browser's command line.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{LaunchOptions, browser_args, display_available, find_executable_among};
use crate::LaunchError;

fn make_file(dir: &Path, name: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn tried(err: LaunchError) -> Vec<String> {
    match err {
        LaunchError::ExecutableNotFound { tried } => tried,
        other => panic!("expected ExecutableNotFound, got {other:?}"),
    }
}

#[test]
fn discovery_follows_the_documented_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let fixed = make_file(dir.path(), "fixed-chromium", 0o755);
    let explicit = make_file(dir.path(), "explicit", 0o755);
    let from_env = make_file(dir.path(), "from-env", 0o755);
    let edge = make_file(&a, "microsoft-edge", 0o755);
    let chrome = make_file(&b, "google-chrome", 0o755);
    let path_var = std::env::join_paths([&a, &b]).unwrap();
    let env = Some(OsString::from(&from_env));
    let missing = dir.path().join("missing");

    let find = |explicit: Option<&Path>, env: Option<OsString>, fixed: &[&Path]| {
        find_executable_among(explicit, env, Some(path_var.clone()), fixed)
    };
    assert_eq!(find(Some(&explicit), env.clone(), &[&fixed]).unwrap(), explicit);
    assert_eq!(find(None, env.clone(), &[&fixed]).unwrap(), from_env);
    assert_eq!(find(None, Some(OsString::new()), &[&fixed]).unwrap(), fixed);
    assert_eq!(find(None, None, &[&missing, &fixed]).unwrap(), fixed);
    // On PATH, google-chrome comes before microsoft-edge whatever the directory order.
    assert_eq!(find(None, None, &[&missing]).unwrap(), chrome);
    std::fs::remove_file(&chrome).unwrap();
    assert_eq!(find(None, None, &[&missing]).unwrap(), edge);
}

#[test]
fn a_configured_executable_that_is_missing_is_an_error_not_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = make_file(dir.path(), "fixed-chromium", 0o755);
    let not_executable = make_file(dir.path(), "plain-file", 0o644);
    let err = find_executable_among(Some(&not_executable), None, None, &[&fixed]).unwrap_err();
    assert_eq!(tried(err), vec![format!("{} (the configured executable)", not_executable.display())]);
    let err = find_executable_among(None, Some(dir.path().join("nope").into()), None, &[&fixed]).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("BROWSERD_CHROMIUM") && message.contains("nope"), "{message}");
}

#[test]
fn when_nothing_is_found_the_error_lists_everything_tried_and_how_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = find_executable_among(None, None, Some(dir.path().into()), &[&missing]).unwrap_err();
    let message = err.to_string();
    assert_eq!(
        tried(err),
        vec![
            missing.display().to_string(),
            "chromium on PATH".into(),
            "chromium-browser on PATH".into(),
            "google-chrome on PATH".into(),
            "google-chrome-stable on PATH".into(),
            "microsoft-edge on PATH".into(),
        ]
    );
    assert!(message.contains("apt-get install chromium"), "{message}");
}

fn args(options: &LaunchOptions) -> Vec<String> {
    browser_args(options, Path::new("/tmp/profile")).into_iter().map(|a| a.into_string().unwrap()).collect()
}

#[test]
fn the_command_line_is_headless_quiet_and_ends_with_about_blank() {
    let args = args(&LaunchOptions::default());
    for flag in [
        "--remote-debugging-pipe",
        "--user-data-dir=/tmp/profile",
        "--headless=new",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-gpu",
        "--disable-quic",
    ] {
        assert!(args.iter().any(|a| a == flag), "{flag} missing from {args:?}");
    }
    assert_eq!(args.last().map(String::as_str), Some("about:blank"));
    assert!(!args.iter().any(|a| a.starts_with("--load-extension")));
}

#[test]
fn headed_extensions_window_size_and_extra_args_are_passed() {
    let options = LaunchOptions {
        headless: false,
        extensions: vec![PathBuf::from("/ext/one"), PathBuf::from("/ext/two")],
        window_size: Some((1280, 720)),
        extra_args: vec!["--lang=zh-CN".into()],
        ..LaunchOptions::default()
    };
    let args = args(&options);
    assert!(!args.iter().any(|a| a.starts_with("--headless")), "{args:?}");
    assert!(args.contains(&"--load-extension=/ext/one,/ext/two".to_owned()));
    assert!(args.contains(&"--disable-extensions-except=/ext/one,/ext/two".to_owned()));
    assert!(args.contains(&"--window-size=1280,720".to_owned()));
    let extra = args.iter().position(|a| a == "--lang=zh-CN").unwrap();
    assert_eq!(extra, args.len() - 2, "extra args come last, before the start URL: {args:?}");
}

#[test]
fn a_headed_browser_needs_a_display_from_the_options_or_the_environment() {
    let none = |_: &str| None;
    let x11 = |name: &str| (name == "DISPLAY").then(|| OsString::from(":99"));
    assert!(!display_available(&[], none));
    assert!(display_available(&[], x11));
    assert!(display_available(&[("WAYLAND_DISPLAY".into(), "wayland-0".into())], none));
    // An empty value in the options hides the process's display.
    assert!(!display_available(&[("DISPLAY".into(), String::new())], x11));
}
