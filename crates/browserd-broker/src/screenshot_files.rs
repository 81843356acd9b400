//! Screenshot files, shared by the MCP server and the CLI's text output: which objects of a result are screenshots
//! (the protocol's `Screenshot`: a string `imageId`, a string `format` and non-empty base64 `data`), and writing one
//! to a private file (0600 in a 0700 directory) that the directory's `[retention]` sweep then keeps in bounds.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::retention::{RetentionConfig, sweep};

/// Whether `object` is a screenshot with its bytes still inline.
#[must_use]
pub fn is_screenshot(object: &Map<String, Value>) -> bool {
    object.get("imageId").is_some_and(Value::is_string)
        && object.get("format").is_some_and(Value::is_string)
        && object.get("data").and_then(Value::as_str).is_some_and(|data| !data.is_empty())
}

/// Calls `f` on every screenshot object of `value` (not looking inside one).
pub fn for_each_screenshot(value: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Object(object) if is_screenshot(object) => f(object),
        Value::Object(object) => object.values_mut().for_each(|child| for_each_screenshot(child, f)),
        Value::Array(items) => items.iter_mut().for_each(|item| for_each_screenshot(item, f)),
        _ => {}
    }
}

/// The file-name stem an image id gives: its ASCII letters, digits, `-` and `_`, at most 64 (`img/1` → `img1`).
#[must_use]
pub fn image_stem(image_id: &str) -> String {
    image_id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).take(64).collect()
}

/// The file extension of a screenshot `format`.
#[must_use]
pub fn extension(format: &str) -> &'static str {
    match format {
        "png" => "png",
        "webp" => "webp",
        _ => "jpg",
    }
}

/// Writes the base64 `data` of a screenshot as `dir/<stem>.<ext of format>` (the directory made 0700 on first use,
/// the file 0600), then sweeps `dir` under `limits`. The error says what could not be done, for the result's
/// `pathError`.
pub fn save(dir: &Path, stem: &str, format: &str, data: &str, limits: RetentionConfig) -> Result<PathBuf, String> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the screenshot data is not base64: {e}"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(format!("{stem}.{}", extension(format)));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
        file.write_all(&bytes)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let _ = sweep(dir, limits, SystemTime::now());
    Ok(path)
}
