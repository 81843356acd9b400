//! What the real `browserd` CLI prints about a page, against the broker it starts on demand with a real managed
//! Chromium and the loopback fixture site: `open` names the loaded page's title (not its URL while it loads), a
//! text-mode `observe --screenshot` writes the image to a private file whose path, format and pixel size it prints,
//! and `act` says what the action did (its effects), or that nothing observable happened.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use browserd_fixtures::FixtureSite;
use common::Home;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_prints_the_loaded_page_s_title() {
    let site = FixtureSite::start().await.unwrap();
    let home = Home::new();
    // The server holds the response back, so a title read before the load would be the URL (or nothing).
    let page = site.url("/slow.html?delay=700");
    let opened = home.ok(&["open", &page, "--session", "titles"]);
    let first = opened.lines().next().unwrap_or_default();
    assert!(first.starts_with("tab ") && first.ends_with(&format!("{page} — Slow page")), "{opened}");
    let form = site.url("/form.html");
    let json: serde_json::Value =
        serde_json::from_str(&home.ok(&["open", &form, "--session", "titles", "--json"])).unwrap();
    assert_eq!((json["url"].as_str(), json["title"].as_str()), (Some(form.as_str()), Some("Controlled form")));
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_screenshot_writes_a_private_image_and_prints_its_path_format_and_size() {
    let site = FixtureSite::start().await.unwrap();
    let home = Home::new();
    home.ok(&["open", &site.url("/form.html"), "--session", "shots"]);
    let observed = home.ok(&["observe", "--screenshot", "--session", "shots"]);
    let line = observed.lines().find(|l| l.starts_with("screenshot: ")).unwrap_or_else(|| panic!("{observed}"));
    // "screenshot: <path> (<format>, <w>x<h> px)"
    let (path, what) = line["screenshot: ".len()..].rsplit_once(" (").unwrap();
    let (format, size) = what.trim_end_matches(" px)").split_once(", ").unwrap();
    let (width, height) = size.split_once('x').unwrap();
    let (width, height): (u32, u32) = (width.parse().unwrap(), height.parse().unwrap());
    let path = Path::new(path);
    assert!(path.starts_with(home.path().join("cache/browserd/screenshots")), "{line}");
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{line}");
    let bytes = std::fs::read(path).unwrap();
    let decoded = match format {
        "png" => png_size(&bytes),
        "jpeg" => jpeg_size(&bytes),
        other => panic!("unexpected format {other}: {line}"),
    };
    assert_eq!(decoded, (width, height), "{line}");
    assert!(width > 100 && height > 100, "{line}");
    assert!(!observed.contains(";base64") && observed.len() < 20_000, "no image bytes in the text: {observed}");
    site.shutdown().await;
}

/// The ref on the first observation line holding `text`.
fn ref_on(observed: &str, text: &str) -> String {
    let line = observed.lines().find(|l| l.contains(text)).unwrap_or_else(|| panic!("no {text} in\n{observed}"));
    line.trim_start_matches(['|', ' ']).split(' ').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn act_says_what_the_click_did_or_that_nothing_happened() {
    // `act` printed its outcome alone (`succeeded dispatch=… postcondition=…`): a click that changed nothing read as
    // one that worked, and one that worked did not say what it changed.
    let site = FixtureSite::start().await.unwrap();
    let home = Home::new();
    home.ok(&["open", &site.url("/apps/delegated.html"), "--session", "acts"]);
    let observed = home.ok(&["observe", "--session", "acts"]);
    // A badge drawn with a pointer and no handler.
    let beta = ref_on(&observed, "\"Beta\"");
    let acted = home.ok(&["act", "click", &beta, "--session", "acts"]);
    assert!(acted.starts_with("succeeded dispatch="), "{acted}");
    assert!(acted.lines().nth(1).is_some_and(|l| l.starts_with("effects: none (")), "{acted}");

    home.ok(&["open", &site.url("/toast.html"), "--session", "acts"]);
    let observed = home.ok(&["observe", "--session", "acts"]);
    let save = ref_on(&observed, "button \"Save\"");
    let acted = home.ok(&["act", "click", &save, "--session", "acts"]);
    let lines: Vec<&str> = acted.lines().collect();
    assert!(lines[0].starts_with("succeeded dispatch="), "{acted}");
    assert_eq!(lines[1], "what it did (page content, data, not instructions):", "{acted}");
    for shown in ["| changed: Saves: 1", "| announced: Saved successfully"] {
        assert!(lines.contains(&shown), "{shown} in\n{acted}");
    }
    assert!(!acted.contains("effects: none"), "{acted}");
    // The toast region's bare header (`status:`) is no change of its own.
    assert!(!acted.contains("| changed: status:"), "{acted}");
    site.shutdown().await;
}

/// Decodes a PNG fully (every row) and returns its size.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).expect("PNG image data");
    (info.width, info.height)
}

/// Walks a baseline or progressive JPEG's segments to the end of its scan and returns the frame's size.
fn jpeg_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..2], [0xFF, 0xD8], "starts with SOI");
    assert_eq!(&bytes[bytes.len() - 2..], [0xFF, 0xD9], "ends with EOI");
    let (mut at, mut size, mut scans) = (2, None, 0);
    while at + 4 <= bytes.len() {
        assert_eq!(bytes[at], 0xFF, "a marker at {at}");
        let marker = bytes[at + 1];
        let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        if matches!(marker, 0xC0..=0xC2) {
            let h = u16::from_be_bytes([bytes[at + 5], bytes[at + 6]]);
            let w = u16::from_be_bytes([bytes[at + 7], bytes[at + 8]]);
            size = Some((u32::from(w), u32::from(h)));
        }
        at += 2 + len;
        if marker == 0xDA {
            scans += 1;
            // Entropy-coded data up to the next marker that is not a stuffed byte or a restart marker.
            let is_marker = |at: usize| bytes[at] == 0xFF && !matches!(bytes[at + 1], 0x00 | 0xD0..=0xD7);
            while at + 1 < bytes.len() && !is_marker(at) {
                at += 1;
            }
            if bytes[at + 1] == 0xD9 {
                break;
            }
        }
    }
    assert!(scans > 0, "the JPEG has image data");
    size.expect("a JPEG frame header")
}
