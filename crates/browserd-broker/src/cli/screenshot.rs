//! Screenshots in the CLI's text output (`browserd observe --screenshot`): each image of a result is written to a
//! private file (0600, in a 0700 directory) and the result keeps its `path` instead of the base64 bytes, so the text
//! names the file, its format and its pixel size. The directory is the MCP server's
//! ([`crate::retention::screenshot_dir`]), kept under `[retention]` like it ([`crate::screenshot_files`]): swept after
//! every file written here and every minute by the broker. `--json` keeps the image in the JSON (`data`) and writes
//! nothing.

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use crate::screenshot_files;

/// Moves every screenshot of `value` into a file under `dir`: its `data` becomes `""` and it gains `path`, or
/// `pathError` saying why no file was written.
pub(super) fn save_all(value: &mut Value, dir: &Path) {
    // The config is read only when a result holds a screenshot.
    let mut retention = None;
    screenshot_files::for_each_screenshot(value, &mut |object| {
        let retention =
            *retention.get_or_insert_with(|| crate::config::load().map(|e| e.config.retention).unwrap_or_default());
        let data = object.insert("data".to_owned(), Value::String(String::new()));
        let data = data.as_ref().and_then(Value::as_str).unwrap_or_default();
        let id = object.get("imageId").and_then(Value::as_str).unwrap_or_default();
        let format = object.get("format").and_then(Value::as_str).unwrap_or_default();
        // `<imageId>-<time>`: the id alone repeats across tabs and broker restarts.
        let stem = screenshot_files::image_stem(id);
        let stamp = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let stem = format!("{}-{stamp}", if stem.is_empty() { "screenshot" } else { &stem });
        match screenshot_files::save(dir, &stem, format, data, retention) {
            Ok(path) => object.insert("path".to_owned(), Value::String(path.display().to_string())),
            Err(message) => object.insert("pathError".to_owned(), Value::String(message)),
        };
    });
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

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
