//! Screenshots in the CLI's text output (`browserd observe --screenshot`): each image of a result is written to a
//! private file (0600, in a 0700 directory) and the result keeps its `path` instead of the base64 bytes, so the text
//! names the file, its format and its pixel size. The directory is the MCP server's
//! ([`crate::retention::screenshot_dir`]), kept under `[retention]` like it: swept after every file written here
//! and every minute by the broker. `--json` keeps the image in the JSON (`data`) and writes nothing.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine as _;
use serde_json::{Map, Value};

/// Moves every screenshot of `value` (an object with a string `imageId`, a string `format` and non-empty `data`)
/// into a file under `dir`: its `data` becomes `""` and it gains `path`, or `pathError` saying why no file was
/// written. Sweeps `dir` under the config's `[retention]` limits afterwards.
pub(super) fn save_all(value: &mut Value, dir: &Path) {
    let mut saved = false;
    walk(value, dir, &mut saved);
    if saved {
        let retention = crate::config::load().map(|e| e.config.retention).unwrap_or_default();
        let _ = crate::retention::sweep(dir, retention, SystemTime::now());
    }
}

fn walk(value: &mut Value, dir: &Path, saved: &mut bool) {
    match value {
        Value::Object(object) if is_screenshot(object) => {
            let data = object.insert("data".to_owned(), Value::String(String::new()));
            let data = data.as_ref().and_then(Value::as_str).unwrap_or_default();
            let id = object.get("imageId").and_then(Value::as_str).unwrap_or_default();
            let format = object.get("format").and_then(Value::as_str).unwrap_or_default();
            match save(dir, id, format, data) {
                Ok(path) => {
                    *saved = true;
                    object.insert("path".to_owned(), Value::String(path.display().to_string()));
                }
                Err(message) => {
                    object.insert("pathError".to_owned(), Value::String(message));
                }
            }
        }
        Value::Object(object) => object.values_mut().for_each(|child| walk(child, dir, saved)),
        Value::Array(items) => items.iter_mut().for_each(|item| walk(item, dir, saved)),
        _ => {}
    }
}

fn is_screenshot(object: &Map<String, Value>) -> bool {
    object.get("imageId").is_some_and(Value::is_string)
        && object.get("format").is_some_and(Value::is_string)
        && object.get("data").and_then(Value::as_str).is_some_and(|data| !data.is_empty())
}

/// Writes one image as `<imageId>-<time>.<ext>` (the id alone repeats across tabs and broker restarts).
fn save(dir: &Path, image_id: &str, format: &str, data: &str) -> Result<PathBuf, String> {
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
    let id: String =
        image_id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).take(64).collect();
    let stamp = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let ext = match format {
        "png" => "png",
        "webp" => "webp",
        _ => "jpg",
    };
    let path = dir.join(format!("{}-{stamp}.{ext}", if id.is_empty() { "screenshot" } else { &id }));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(&bytes)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_become_private_files_and_bad_data_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let shots = dir.path().join("screenshots");
        let mut v = json!({"url": "u", "screenshot": {"imageId": "i/1", "format": "png", "data": "AAEC"},
                           "other": [{"imageId": "i2", "format": "jpeg", "data": "not base64!"}]});
        save_all(&mut v, &shots);
        let path = PathBuf::from(v["screenshot"]["path"].as_str().unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), [0, 1, 2]);
        assert_eq!(v["screenshot"]["data"], "");
        assert!(path.file_name().unwrap().to_str().unwrap().starts_with("i1-"), "{path:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&shots).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(v["other"][0]["pathError"].as_str().unwrap().contains("not base64"), "{v}");
    }
}
