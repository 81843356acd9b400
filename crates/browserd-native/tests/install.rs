//! install / doctor / uninstall in a temp HOME (library and the real binary), and the per-OS location data.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use browserd_native::install::{
    Brand, CheckStatus, DEV_EXTENSION_ID, DoctorOptions, HOST_NAME, InstallOptions, Locations, Os, check_manifest,
    doctor, extension_id_from_key, install, installed_extension_ids, uninstall,
};
use serde_json::Value;

fn locations(root: &std::path::Path) -> Locations {
    Locations {
        home: root.join("home"),
        config_home: root.join("home/.config"),
        data_dir: root.join("home/.local/share/browserd"),
    }
}

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_browserd-native"))
}

#[test]
fn the_committed_key_gives_the_development_id() {
    let manifest: Value = serde_json::from_str(include_str!("../../../extension/manifest.json")).unwrap();
    assert_eq!(extension_id_from_key(manifest["key"].as_str().unwrap()).as_deref(), Some(DEV_EXTENSION_ID));
    // Minimal permissions, each documented in extension/README.md.
    let readme = include_str!("../../../extension/README.md");
    for p in manifest["permissions"].as_array().unwrap() {
        assert!(readme.contains(&format!("`{}`", p.as_str().unwrap())), "{p} is not justified in the README");
    }
    assert!(manifest.get("host_permissions").is_none());
}

#[test]
fn per_os_locations_are_data() {
    assert_eq!(Brand::Chrome.user_manifest_dir(Os::Linux), Some("google-chrome/NativeMessagingHosts"));
    assert_eq!(Brand::Edge.user_manifest_dir(Os::Linux), Some("microsoft-edge/NativeMessagingHosts"));
    assert_eq!(
        Brand::Chrome.user_manifest_dir(Os::MacOs),
        Some("Library/Application Support/Google/Chrome/NativeMessagingHosts")
    );
    assert_eq!(
        Brand::Edge.user_manifest_dir(Os::MacOs),
        Some("Library/Application Support/Microsoft Edge/NativeMessagingHosts")
    );
    assert_eq!(Brand::Chromium.user_manifest_dir(Os::Windows), None, "Windows uses the registry");
    assert_eq!(
        Brand::Chrome.windows_registry_key(),
        format!(r"HKEY_CURRENT_USER\Software\Google\Chrome\NativeMessagingHosts\{HOST_NAME}")
    );
    assert_eq!(
        Brand::Edge.windows_registry_key(),
        format!(r"HKEY_CURRENT_USER\Software\Microsoft\Edge\NativeMessagingHosts\{HOST_NAME}")
    );
    assert_eq!(Brand::Chromium.system_manifest_dir(Os::Linux), Some("/etc/chromium/native-messaging-hosts"));
}

#[tokio::test]
async fn install_doctor_uninstall_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let loc = locations(root.path());
    // Something of the user's in the same directory must survive.
    let chrome_dir = loc.config_home.join("google-chrome/NativeMessagingHosts");
    std::fs::create_dir_all(&chrome_dir).unwrap();
    std::fs::write(chrome_dir.join("other.host.json"), "{}").unwrap();

    let store_id = "abcdefghijklmnopabcdefghijklmnop".to_owned();
    let report = install(
        &loc,
        &InstallOptions {
            brands: Brand::ALL.to_vec(),
            user_data_dir: None,
            extension_ids: vec![store_id.clone()],
            exe: exe(),
        },
    )
    .unwrap();
    assert_eq!(report.manifests.len(), 3);
    let chrome_manifest = chrome_dir.join(format!("{HOST_NAME}.json"));
    assert!(report.manifests.contains(&chrome_manifest));
    let m: Value = serde_json::from_slice(&std::fs::read(&chrome_manifest).unwrap()).unwrap();
    assert_eq!(m["name"], HOST_NAME);
    assert_eq!(m["type"], "stdio");
    assert_eq!(
        m["allowed_origins"],
        serde_json::json!([
            format!("chrome-extension://{DEV_EXTENSION_ID}/"),
            format!("chrome-extension://{store_id}/")
        ])
    );
    // The broker's endpoint pairs exactly the ids the installed manifests allow (Edge's manifest: the Edge build's).
    assert_eq!(
        installed_extension_ids(&loc),
        vec![DEV_EXTENSION_ID.to_owned(), store_id.clone(), browserd_native::install::EDGE_EXTENSION_ID.to_owned()]
    );
    let wrapper = PathBuf::from(m["path"].as_str().unwrap());
    assert_eq!(wrapper, report.wrapper);
    assert!(std::fs::metadata(&wrapper).unwrap().permissions().mode() & 0o111 != 0);
    let script = std::fs::read_to_string(&wrapper).unwrap();
    assert!(
        script.contains("native-host \"$@\"")
            && script.contains(&std::fs::canonicalize(exe()).unwrap().display().to_string())
    );

    let opts = DoctorOptions {
        brands: Brand::ALL.to_vec(),
        user_data_dir: None,
        extension_ids: vec![store_id.clone()],
        socket: Some(root.path().join("no.sock")),
    };
    let checks = doctor(&loc, &opts).await;
    let manifests: Vec<_> = checks.iter().filter(|c| c.name.starts_with("manifest ")).collect();
    assert_eq!(manifests.len(), 3);
    assert!(manifests.iter().all(|c| c.status == CheckStatus::Pass), "{checks:#?}");
    assert!(checks.iter().any(|c| c.name == "browserd binary" && c.status == CheckStatus::Pass), "{checks:#?}");
    let socket = checks.iter().find(|c| c.name == "endpoint socket").unwrap();
    assert_eq!(socket.status, CheckStatus::Warn);
    assert!(checks.iter().filter(|c| c.status != CheckStatus::Pass).all(|c| c.fix.is_some()), "{checks:#?}");

    // A manifest that lost an id fails with the exact fix.
    let edited =
        std::fs::read_to_string(&chrome_manifest).unwrap().replace(&store_id, "pppppppppppppppppppppppppppppppp");
    std::fs::write(&chrome_manifest, edited).unwrap();
    let c = check_manifest(&chrome_manifest, &[DEV_EXTENSION_ID.to_owned(), store_id.clone()]);
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(c.fix.as_deref(), Some(format!("run `browserd install --extension-id {store_id}`").as_str()));

    // Uninstall removes exactly what install wrote; the edited manifest and the user's file stay.
    let un = uninstall(&loc).unwrap();
    assert!(un.removed.contains(&wrapper));
    assert!(!un.removed.contains(&chrome_manifest));
    assert!(un.kept.iter().any(|(p, _)| *p == chrome_manifest));
    for m in report.manifests.iter().filter(|m| **m != chrome_manifest) {
        assert!(!m.exists(), "{} was removed", m.display());
    }
    assert!(chrome_manifest.exists());
    assert!(chrome_dir.join("other.host.json").exists());
    assert!(!loc.receipt_path().exists());
    assert_eq!(installed_extension_ids(&loc), vec![DEV_EXTENSION_ID.to_owned()], "after uninstall: the dev id only");
    // Nothing left to do the second time.
    let again = uninstall(&loc).unwrap();
    assert!(again.removed.is_empty());
}

#[test]
fn install_into_a_user_data_dir_and_reject_bad_ids() {
    let root = tempfile::tempdir().unwrap();
    let loc = locations(root.path());
    let udd = root.path().join("profile");
    let r = install(
        &loc,
        &InstallOptions {
            brands: vec![Brand::Chromium],
            user_data_dir: Some(udd.clone()),
            extension_ids: vec![],
            exe: exe(),
        },
    )
    .unwrap();
    assert_eq!(r.manifests, vec![udd.join("NativeMessagingHosts").join(format!("{HOST_NAME}.json"))]);
    let err = install(
        &loc,
        &InstallOptions {
            brands: vec![Brand::Chrome],
            user_data_dir: None,
            extension_ids: vec!["*".into()],
            exe: exe(),
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("not an extension id"), "{err}");
}

#[test]
fn the_binary_installs_reports_and_uninstalls() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(exe())
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_RUNTIME_DIR", root.path().join("run"))
            .env_remove("BROWSERD_EXTENSION_SOCKET")
            .output()
            .unwrap()
    };
    let out = run(&["install", "--browser", "chromium", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest = home.join(".config/chromium/NativeMessagingHosts").join(format!("{HOST_NAME}.json"));
    assert_eq!(report["manifests"][0], manifest.display().to_string());
    let out = run(&["doctor", "--browser", "chromium", "--json"]);
    let checks: Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest_check =
        checks.as_array().unwrap().iter().find(|c| c["name"].as_str().unwrap().starts_with("manifest ")).unwrap();
    assert_eq!(manifest_check["status"], "pass", "{checks:#}");
    let out = run(&["uninstall"]);
    assert!(out.status.success());
    assert!(!manifest.exists());
    let out = run(&["doctor", "--browser", "chromium"]);
    assert_eq!(out.status.code(), Some(1), "doctor fails when nothing is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fix: run `browserd install"), "{text}");
}

/// The failing checks of `checks`, as (name, fix).
fn failures(checks: &[browserd_native::install::Check]) -> Vec<(String, String)> {
    checks
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .map(|c| (c.name.clone(), c.fix.clone().expect("every failure carries its fix")))
        .collect()
}

#[test]
fn every_manifest_failure_names_the_command_that_fixes_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("NativeMessagingHosts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{HOST_NAME}.json"));
    let exe = std::fs::canonicalize(exe()).unwrap();
    let good = serde_json::json!({
        "name": HOST_NAME, "type": "stdio", "path": exe,
        "allowed_origins": [format!("chrome-extension://{DEV_EXTENSION_ID}/")],
    });
    let with = |key: &str, value: Value| {
        let mut m = good.clone();
        m[key] = value;
        m.to_string()
    };
    std::fs::write(&path, good.to_string()).unwrap();
    assert_eq!(check_manifest(&path, &[DEV_EXTENSION_ID.to_owned()]).status, CheckStatus::Pass);
    for (content, says, fix) in [
        (None, "cannot read it", "run `browserd install`"),
        (Some("{not json".to_owned()), "not valid JSON", "run `browserd install` to rewrite it"),
        (Some(with("name", "other.host".into())), "must be", "run `browserd install`"),
        (Some(with("type", "pipe".into())), "stdio", "run `browserd install`"),
        (
            Some(with("path", "relative/browserd".into())),
            "not an executable absolute path",
            "run `browserd install` again",
        ),
        (
            Some(with("allowed_origins", serde_json::json!(["chrome-extension://*/"]))),
            "not an exact",
            "run `browserd install` (wildcards are not allowed)",
        ),
    ] {
        match &content {
            Some(text) => std::fs::write(&path, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        let c = check_manifest(&path, &[DEV_EXTENSION_ID.to_owned()]);
        assert_eq!(c.status, CheckStatus::Fail, "{content:?}: {c:?}");
        assert!(c.detail.contains(says), "{content:?}: {c:?}");
        assert!(c.fix.as_deref().is_some_and(|f| f.starts_with(fix)), "{content:?}: {c:?}");
    }
}

#[tokio::test]
async fn every_install_and_socket_failure_names_the_command_that_fixes_it() {
    let root = tempfile::tempdir().unwrap();
    let loc = locations(root.path());
    let opts = |brands: Vec<Brand>, socket: PathBuf| DoctorOptions {
        brands,
        user_data_dir: None,
        extension_ids: Vec::new(),
        socket: Some(socket),
    };
    let nothing = root.path().join("no.sock");

    // Nothing installed: no wrapper, no manifest (one brand, or any of them).
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], nothing.clone())).await);
    assert!(
        f.contains(&(
            "browserd binary".into(),
            "run `browserd install --browser chrome` (or chromium, edge, all)".into()
        )),
        "{f:?}"
    );
    assert!(
        f.iter().any(|(n, fix)| n.ends_with(" manifest") && fix == "run `browserd install --browser chrome`"),
        "{f:?}"
    );
    let f = failures(&doctor(&loc, &opts(Brand::ALL.to_vec(), nothing.clone())).await);
    assert!(f.contains(&("manifests".into(), "run `browserd install --browser all`".into())), "{f:?}");

    // A wrapper browserd did not write, a wrapper that is not executable, a wrapper whose binary is gone.
    install(
        &loc,
        &InstallOptions { brands: vec![Brand::Chrome], user_data_dir: None, extension_ids: Vec::new(), exe: exe() },
    )
    .unwrap();
    let wrapper = loc.wrapper_path();
    let script = std::fs::read_to_string(&wrapper).unwrap();
    std::fs::write(&wrapper, "#!/bin/sh\necho hi\n").unwrap();
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], nothing.clone())).await);
    assert!(f.contains(&("browserd binary".into(), "run `browserd install`".into())), "{f:?}");
    std::fs::write(
        &wrapper,
        script.replace(&std::fs::canonicalize(exe()).unwrap().display().to_string(), "/gone/browserd"),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], nothing.clone())).await);
    assert!(
        f.contains(&("browserd binary".into(), "run `browserd install` from the browserd you want to use".into())),
        "{f:?}"
    );
    assert!(f.contains(&("native-host wrapper".into(), format!("chmod 755 {}", wrapper.display()))), "{f:?}");
    install(
        &loc,
        &InstallOptions { brands: vec![Brand::Chrome], user_data_dir: None, extension_ids: Vec::new(), exe: exe() },
    )
    .unwrap();
    assert_eq!(
        failures(&doctor(&loc, &opts(vec![Brand::Chrome], nothing.clone())).await),
        Vec::<(String, String)>::new()
    );

    // The endpoint socket: not a socket, open to other users, a socket nobody answers on.
    let restart = "browserd broker stop; browserd status";
    let file = root.path().join("file.sock");
    std::fs::write(&file, b"").unwrap();
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], file.clone())).await);
    assert_eq!(
        f,
        [("endpoint socket".to_owned(), format!("rm {} && {restart}   (restarts the broker)", file.display()))]
    );
    let open = root.path().join("open.sock");
    let listener = std::os::unix::net::UnixListener::bind(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], open.clone())).await);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].0 == "endpoint socket" && f[0].1.starts_with(restart), "{f:?}");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o600)).unwrap();
    drop(listener);
    let f = failures(&doctor(&loc, &opts(vec![Brand::Chrome], open.clone())).await);
    assert_eq!(f, [("extension connection".to_owned(), format!("{restart}   (restarts the broker)"))]);
}
