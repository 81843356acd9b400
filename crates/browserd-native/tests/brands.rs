//! Brand overlays: `scripts/build-extension.sh chrome|edge` builds each brand from the same shared files with only the
//! manifest overlaid (name, key → extension id), the shared code has no brand branch, and the real binary's
//! `install --browser edge` writes the Edge host manifest allowing exactly the Edge build's id (Chrome's, the Chrome
//! build's), which `doctor` accepts.

use std::path::{Path, PathBuf};

use browserd_native::install::{Brand, DEV_EXTENSION_ID, EDGE_EXTENSION_ID, HOST_NAME, extension_id_from_key};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path).into_iter().map(|p| Path::new(&entry.file_name()).join(p)));
        } else {
            out.push(PathBuf::from(entry.file_name()));
        }
    }
    out.sort();
    out
}

fn build(brand: &str, out: &Path) -> Value {
    let built = std::process::Command::new("bash")
        .arg(root().join("scripts/build-extension.sh"))
        .arg(brand)
        .arg(out)
        .output()
        .expect("runs scripts/build-extension.sh (needs bash, tar, node)");
    assert!(built.status.success(), "{brand}: {}", String::from_utf8_lossy(&built.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn each_brand_build_is_the_shared_files_with_its_own_name_and_id() {
    let tmp = tempfile::tempdir().unwrap();
    let shared: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("extension/manifest.json")).unwrap()).unwrap();
    let mut ids = Vec::new();
    for (brand, expected) in [("chrome", Brand::Chrome), ("edge", Brand::Edge)] {
        let out = tmp.path().join(brand);
        let manifest = build(brand, &out);
        let id = extension_id_from_key(manifest["key"].as_str().unwrap()).unwrap();
        assert_eq!(id, expected.extension_id(), "{brand}: the key gives the id its host manifest allows");
        ids.push(id);
        // Only name and key differ from the shared manifest.
        for (field, value) in manifest.as_object().unwrap() {
            if field != "name" && field != "key" {
                assert_eq!(&shared[field], value, "{brand}: {field} is the shared one");
            }
        }
        // Every other file is the shared one, byte for byte; the overlays are not shipped.
        let built = files(&out);
        let mut source = files(&root().join("extension"));
        source.retain(|p| !p.starts_with("brands"));
        assert_eq!(built, source, "{brand}: the same files");
        for file in built.iter().filter(|f| f.as_os_str() != "manifest.json") {
            let a = std::fs::read(out.join(file)).unwrap();
            let b = std::fs::read(root().join("extension").join(file)).unwrap();
            assert!(a == b, "{brand}: {} differs from the shared file", file.display());
        }
    }
    assert_eq!(ids, [DEV_EXTENSION_ID, EDGE_EXTENSION_ID]);
    let edge: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("edge/manifest.json")).unwrap()).unwrap();
    assert_ne!(edge["name"], shared["name"], "Edge's build is named for Edge");
}

#[test]
fn the_shared_extension_code_has_no_brand_branch() {
    let dir = root().join("extension");
    for file in files(&dir).iter().filter(|f| f.extension().is_some_and(|e| e == "js" || e == "html")) {
        let text = std::fs::read_to_string(dir.join(file)).unwrap().to_lowercase();
        // The user agent is reported to the broker (`hello`), never branched on: no brand word or UA token appears.
        for word in ["edge", "edg/", "brand", "useragentdata", "opr/"] {
            assert!(!text.contains(word), "{} mentions `{word}`: brands belong in extension/brands/", file.display());
        }
    }
}

#[test]
fn install_for_edge_writes_the_edge_manifest_with_the_edge_builds_id() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_browserd-native"))
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_RUNTIME_DIR", root.path().join("run"))
            .env_remove("BROWSERD_EXTENSION_SOCKET")
            .output()
            .unwrap()
    };
    for (brand, dir, id) in [
        ("edge", "microsoft-edge/NativeMessagingHosts", EDGE_EXTENSION_ID),
        ("chrome", "google-chrome/NativeMessagingHosts", DEV_EXTENSION_ID),
    ] {
        let out = run(&["install", "--browser", brand, "--json"]);
        assert!(out.status.success(), "{brand}: {}", String::from_utf8_lossy(&out.stderr));
        let path = home.join(".config").join(dir).join(format!("{HOST_NAME}.json"));
        let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(manifest["allowed_origins"], serde_json::json!([format!("chrome-extension://{id}/")]), "{brand}");
        let out = run(&["doctor", "--browser", brand, "--json"]);
        let checks: Value = serde_json::from_slice(&out.stdout).unwrap();
        let check =
            checks.as_array().unwrap().iter().find(|c| c["name"].as_str().unwrap().starts_with("manifest ")).unwrap();
        assert_eq!(check["status"], "pass", "{brand}: {checks:#}");
    }
}
