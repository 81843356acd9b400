//! `install`, `doctor` and `uninstall`: native-host manifests at the right per-browser, per-OS location (Linux live;
//! macOS paths and Windows registry keys as data), a wrapper script that runs `browserd native-host`, and an install
//! receipt so `uninstall` removes exactly what `install` created.
//!
//! Edge is a brand overlay (its own directories and registry key, the same host name and manifest); it is described
//! here as data and **not tested on a real Edge**.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::install_steps::{self, Pending};

/// The Native Messaging host name (the manifest file is `<HOST_NAME>.json`).
pub const HOST_NAME: &str = "com.browserd.native_host";
/// The development id of `extension/` (from the fixed `key` in its manifest): the Chrome/Chromium build.
pub const DEV_EXTENSION_ID: &str = "menplffdljednpgdojaklnbhimafddmj";

/// The id of the Edge build (`scripts/build-extension.sh edge`: the `key` of `extension/brands/edge.json`).
pub const EDGE_EXTENSION_ID: &str = "hnaabhlhfiongocpohjakodfnpaiibhe";

/// A Chromium-family browser brand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Brand {
    Chrome,
    Chromium,
    Edge,
}

/// Which operating system's rules to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

impl Brand {
    /// Every brand.
    pub const ALL: [Brand; 3] = [Brand::Chrome, Brand::Chromium, Brand::Edge];

    /// The id of this brand's extension build (its manifest overlay's `key`), which its host manifest allows.
    pub fn extension_id(self) -> &'static str {
        match self {
            Brand::Chrome | Brand::Chromium => DEV_EXTENSION_ID,
            Brand::Edge => EDGE_EXTENSION_ID,
        }
    }

    /// The brand's name for people.
    pub fn display(self) -> &'static str {
        match self {
            Brand::Chrome => "Google Chrome",
            Brand::Chromium => "Chromium",
            Brand::Edge => "Microsoft Edge",
        }
    }

    /// The per-user manifest directory relative to `$XDG_CONFIG_HOME` (Linux) or `$HOME` (macOS).
    pub fn user_manifest_dir(self, os: Os) -> Option<&'static str> {
        match (os, self) {
            (Os::Linux, Brand::Chrome) => Some("google-chrome/NativeMessagingHosts"),
            (Os::Linux, Brand::Chromium) => Some("chromium/NativeMessagingHosts"),
            (Os::Linux, Brand::Edge) => Some("microsoft-edge/NativeMessagingHosts"),
            (Os::MacOs, Brand::Chrome) => Some("Library/Application Support/Google/Chrome/NativeMessagingHosts"),
            (Os::MacOs, Brand::Chromium) => Some("Library/Application Support/Chromium/NativeMessagingHosts"),
            (Os::MacOs, Brand::Edge) => Some("Library/Application Support/Microsoft Edge/NativeMessagingHosts"),
            (Os::Windows, _) => None,
        }
    }

    /// The system-wide manifest directory (not written by `install`; `doctor` looks there too).
    pub fn system_manifest_dir(self, os: Os) -> Option<&'static str> {
        match (os, self) {
            (Os::Linux, Brand::Chrome) => Some("/etc/opt/chrome/native-messaging-hosts"),
            (Os::Linux, Brand::Chromium) => Some("/etc/chromium/native-messaging-hosts"),
            (Os::Linux, Brand::Edge) => Some("/etc/opt/edge/native-messaging-hosts"),
            (Os::MacOs, Brand::Chrome) => Some("/Library/Google/Chrome/NativeMessagingHosts"),
            (Os::MacOs, Brand::Chromium) => Some("/Library/Application Support/Chromium/NativeMessagingHosts"),
            (Os::MacOs, Brand::Edge) => Some("/Library/Microsoft/Edge/NativeMessagingHosts"),
            (Os::Windows, _) => None,
        }
    }

    /// The Windows registry key (under `HKEY_CURRENT_USER`) whose default value is the manifest path.
    pub fn windows_registry_key(self) -> String {
        let base = match self {
            Brand::Chrome => r"Software\Google\Chrome\NativeMessagingHosts",
            Brand::Chromium => r"Software\Chromium\NativeMessagingHosts",
            Brand::Edge => r"Software\Microsoft\Edge\NativeMessagingHosts",
        };
        format!(r"HKEY_CURRENT_USER\{base}\{HOST_NAME}")
    }

    /// Executable names to look for on `PATH` (for the version check).
    pub fn executables(self) -> &'static [&'static str] {
        match self {
            Brand::Chrome => &["google-chrome", "google-chrome-stable"],
            Brand::Chromium => &["/usr/lib/chromium/chromium", "chromium", "chromium-browser"],
            Brand::Edge => &["microsoft-edge", "microsoft-edge-stable"],
        }
    }
}

/// The extension id Chromium derives from a manifest `key` (base64 DER SubjectPublicKeyInfo).
pub fn extension_id_from_key(key_b64: &str) -> Option<String> {
    let der = base64::engine::general_purpose::STANDARD.decode(key_b64.trim()).ok()?;
    let digest = Sha256::digest(&der);
    Some(digest[..16].iter().flat_map(|b| [b >> 4, b & 0x0f]).map(|n| char::from(b'a' + n)).collect())
}

/// Whether `id` looks like an extension id (32 letters a–p).
pub fn is_extension_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b))
}

/// Where install writes, resolved from the environment (or given, in tests).
#[derive(Debug, Clone)]
pub struct Locations {
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config`.
    pub config_home: PathBuf,
    /// Where the wrapper script and receipt live: `$XDG_DATA_HOME/browserd` or `~/.local/share/browserd`.
    pub data_dir: PathBuf,
}

impl Locations {
    /// From `HOME`, `XDG_CONFIG_HOME` and `XDG_DATA_HOME`.
    pub fn from_env() -> anyhow::Result<Locations> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| anyhow::anyhow!("HOME is not set; set it to your home directory and retry"))?;
        let xdg = |var: &str, fallback: &str| {
            std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or_else(|| home.join(fallback))
        };
        Ok(Locations {
            config_home: xdg("XDG_CONFIG_HOME", ".config"),
            data_dir: xdg("XDG_DATA_HOME", ".local/share").join("browserd"),
            home,
        })
    }

    /// The manifest path for `brand` (or inside a custom `--user-data-dir`, where Chromium looks first).
    pub fn manifest_path(&self, brand: Brand, user_data_dir: Option<&Path>) -> PathBuf {
        let dir = match user_data_dir {
            Some(u) => u.join("NativeMessagingHosts"),
            None => self.config_home.join(brand.user_manifest_dir(Os::Linux).unwrap_or("NativeMessagingHosts")),
        };
        dir.join(format!("{HOST_NAME}.json"))
    }

    pub fn wrapper_path(&self) -> PathBuf {
        self.data_dir.join("native-host")
    }

    pub fn receipt_path(&self) -> PathBuf {
        self.data_dir.join("install-receipt.json")
    }
}

/// What `install` does.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub brands: Vec<Brand>,
    pub user_data_dir: Option<PathBuf>,
    /// Extra allowed extension ids (store ids); the development id is always included.
    pub extension_ids: Vec<String>,
    /// The `browserd` executable the wrapper runs (`<exe> native-host <origin>`).
    pub exe: PathBuf,
}

/// One file install wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptEntry {
    pub path: PathBuf,
    /// `manifest` or `wrapper`.
    pub kind: String,
    pub sha256: String,
    #[serde(default)]
    pub brand: Option<Brand>,
}

/// The install receipt (`install-receipt.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub version: u32,
    pub files: Vec<ReceiptEntry>,
}

impl Receipt {
    fn load(path: &Path) -> anyhow::Result<Receipt> {
        match std::fs::read(path) {
            Ok(b) => Ok(serde_json::from_slice(&b).map_err(|e| {
                anyhow::anyhow!(
                    "the install receipt {} is unreadable ({e}); remove it and run `browserd install` again",
                    path.display()
                )
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Receipt { version: 1, files: Vec::new() }),
            Err(e) => Err(e.into()),
        }
    }

    fn record(&mut self, entry: ReceiptEntry) {
        self.files.retain(|f| f.path != entry.path);
        self.files.push(entry);
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path.parent().ok_or_else(|| anyhow::anyhow!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}; check permissions", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("browserd")));
    std::fs::write(&tmp, bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}; check permissions", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    install_steps::step_done();
    std::fs::rename(&tmp, path)?;
    install_steps::step_done();
    Ok(())
}

/// The extension ids the installed manifests (those in the install receipt) allow, the development id first. The broker's
/// extension endpoint pairs exactly these, so an id added with `browserd install --extension-id` can pair too.
pub fn installed_extension_ids(loc: &Locations) -> Vec<String> {
    let mut ids = vec![DEV_EXTENSION_ID.to_owned()];
    let Ok(receipt) = Receipt::load(&loc.receipt_path()) else { return ids };
    for entry in receipt.files.iter().filter(|f| f.kind == "manifest") {
        let Ok(bytes) = std::fs::read(&entry.path) else { continue };
        let Ok(manifest) = serde_json::from_slice::<serde_json::Value>(&bytes) else { continue };
        for origin in manifest["allowed_origins"].as_array().into_iter().flatten().filter_map(|o| o.as_str()) {
            if let Some(id) = origin.strip_prefix("chrome-extension://").and_then(|r| r.strip_suffix('/'))
                && is_extension_id(id)
                && !ids.iter().any(|i| i == id)
            {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

/// The wrapper script: Chromium runs it with the origin as `$1`.
pub fn wrapper_script(exe: &Path) -> String {
    let quoted = exe.display().to_string().replace('\'', r"'\''");
    format!(
        "#!/bin/sh\n# Written by `browserd install`: the browser starts this Native Messaging host.\nexec '{quoted}' native-host \"$@\"\n"
    )
}

/// The native-host manifest for `ids`.
pub fn manifest_json(wrapper: &Path, ids: &[String]) -> serde_json::Value {
    let origins: Vec<String> = ids.iter().map(|id| format!("chrome-extension://{id}/")).collect();
    json!({
        "name": HOST_NAME,
        "description": "browserd native host (relays the browserd extension to the local broker)",
        "path": wrapper,
        "type": "stdio",
        "allowed_origins": origins,
    })
}

/// What install wrote.
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    pub wrapper: PathBuf,
    pub manifests: Vec<PathBuf>,
    pub extension_ids: Vec<String>,
    pub receipt: PathBuf,
}

/// Writes the wrapper, one manifest per brand (or one in the user-data dir) and the receipt.
pub fn install(loc: &Locations, opts: &InstallOptions) -> anyhow::Result<InstallReport> {
    let mut ids = vec![DEV_EXTENSION_ID.to_owned()];
    for id in &opts.extension_ids {
        if !is_extension_id(id) {
            anyhow::bail!("`{id}` is not an extension id (32 letters a-p); copy it from chrome://extensions");
        }
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    if !opts.exe.is_file() {
        anyhow::bail!(
            "the browserd executable {} does not exist; reinstall browserd or pass its path",
            opts.exe.display()
        );
    }
    let exe = std::fs::canonicalize(&opts.exe)?;
    let mut receipt = Receipt::load(&loc.receipt_path())?;
    receipt.version = 1;
    let wrapper = loc.wrapper_path();
    let script = wrapper_script(&exe);
    let brands: Vec<Brand> =
        if opts.user_data_dir.is_some() { opts.brands.iter().take(1).copied().collect() } else { opts.brands.clone() };
    // Every file with its contents, the wrapper first: a manifest is never written before the wrapper it names.
    let mut plan = vec![(
        ReceiptEntry {
            path: wrapper.clone(),
            kind: "wrapper".into(),
            sha256: sha256_hex(script.as_bytes()),
            brand: None,
        },
        script.into_bytes(),
        0o755,
    )];
    // The ids the written manifests allow, each brand's own build first.
    let mut reported: Vec<String> = Vec::new();
    for brand in brands {
        let path = loc.manifest_path(brand, opts.user_data_dir.as_deref());
        // The brand's own build first, then the ids added with --extension-id.
        let mut brand_ids = vec![brand.extension_id().to_owned()];
        brand_ids.extend(ids.iter().filter(|id| *id != DEV_EXTENSION_ID && *id != brand.extension_id()).cloned());
        let body = serde_json::to_vec_pretty(&manifest_json(&wrapper, &brand_ids))?;
        for id in brand_ids {
            if !reported.contains(&id) {
                reported.push(id);
            }
        }
        let entry = ReceiptEntry { path, kind: "manifest".into(), sha256: sha256_hex(&body), brand: Some(brand) };
        plan.push((entry, body, 0o644));
    }
    // An interrupted run before this one: its temporary files go; what it named is rewritten below.
    let mut earlier = receipt.files.clone();
    earlier.extend(Pending::load(loc).map(|p| p.files).unwrap_or_default());
    install_steps::remove_leftovers(loc, &earlier)?;
    // Recorded before anything else, so an `uninstall` after an interruption removes whatever of it was written.
    let mut pending = Pending::load(loc).unwrap_or_default();
    pending.files.retain(|f| !plan.iter().any(|(e, _, _)| e.path == f.path && e.sha256 == f.sha256));
    pending.files.extend(plan.iter().map(|(e, _, _)| e.clone()));
    write_file(&install_steps::pending_path(loc), &serde_json::to_vec_pretty(&pending)?, 0o600)?;
    let mut manifests = Vec::new();
    for (entry, body, mode) in plan {
        write_file(&entry.path, &body, mode)?;
        if entry.kind == "manifest" {
            manifests.push(entry.path.clone());
        }
        receipt.record(entry);
    }
    write_file(&loc.receipt_path(), &serde_json::to_vec_pretty(&receipt)?, 0o600)?;
    std::fs::remove_file(install_steps::pending_path(loc))?;
    install_steps::step_done();
    Ok(InstallReport { wrapper, manifests, extension_ids: reported, receipt: loc.receipt_path() })
}

/// What uninstall did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UninstallReport {
    pub removed: Vec<PathBuf>,
    /// Files that changed since install (left in place, with why).
    pub kept: Vec<(PathBuf, String)>,
}

/// Removes exactly the files in the receipt (and in the pending record of an interrupted install) that still hold what
/// install wrote — manifests before the wrapper they name — then the temporary files of an interrupted run, the receipt
/// and the pending record.
pub fn uninstall(loc: &Locations) -> anyhow::Result<UninstallReport> {
    let receipt = Receipt::load(&loc.receipt_path())?;
    let mut entries = receipt.files.clone();
    entries.extend(Pending::load(loc).map(|p| p.files).unwrap_or_default());
    // Manifests first: stopping half-way never leaves a manifest that names a removed wrapper.
    entries.sort_by_key(|f| f.kind != "manifest");
    let mut report = UninstallReport::default();
    let mut seen: Vec<&Path> = Vec::new();
    for f in &entries {
        if seen.contains(&f.path.as_path()) {
            continue;
        }
        seen.push(&f.path);
        let ours = |sha: &str| entries.iter().any(|e| e.path == f.path && e.sha256 == sha);
        match std::fs::read(&f.path) {
            Ok(b) if ours(&sha256_hex(&b)) => {
                std::fs::remove_file(&f.path)?;
                install_steps::step_done();
                report.removed.push(f.path.clone());
            }
            Ok(_) => report.kept.push((f.path.clone(), "changed since install; remove it by hand if unwanted".into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => report.kept.push((f.path.clone(), e.to_string())),
        }
    }
    report.removed.extend(install_steps::remove_leftovers(loc, &entries)?);
    for record in [loc.receipt_path(), install_steps::pending_path(loc)] {
        if record.exists() {
            std::fs::remove_file(&record)?;
            install_steps::step_done();
            report.removed.push(record);
        }
    }
    Ok(report)
}

/// The result of one doctor check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Pass,
    Warn,
    Fail,
}

/// One doctor check, with a concrete fix when it did not pass.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
    Check { name: name.into(), status: CheckStatus::Pass, detail: detail.into(), fix: None }
}
fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check { name: name.into(), status: CheckStatus::Fail, detail: detail.into(), fix: Some(fix.into()) }
}
fn warn(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check { name: name.into(), status: CheckStatus::Warn, detail: detail.into(), fix: Some(fix.into()) }
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Checks one manifest file: JSON, name, path, origins.
pub fn check_manifest(path: &Path, required_ids: &[String]) -> Check {
    let name = format!("manifest {}", path.display());
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return fail(name, format!("cannot read it: {e}"), "run `browserd install`"),
    };
    let Ok(m) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return fail(name, "not valid JSON", "run `browserd install` to rewrite it");
    };
    if m["name"] != HOST_NAME || path.file_stem().and_then(|s| s.to_str()) != Some(HOST_NAME) {
        return fail(
            name,
            format!("its name is {} but must be {HOST_NAME} (and match the file name)", m["name"]),
            "run `browserd install`",
        );
    }
    if m["type"] != "stdio" {
        return fail(name, "its type is not \"stdio\"", "run `browserd install`");
    }
    let target = PathBuf::from(m["path"].as_str().unwrap_or_default());
    if !target.is_absolute() || !is_executable(&target) {
        return fail(
            name,
            format!("its path {} is not an executable absolute path", target.display()),
            "run `browserd install` again (the browserd binary may have moved)",
        );
    }
    let origins: Vec<&str> = m["allowed_origins"].as_array().into_iter().flatten().filter_map(|o| o.as_str()).collect();
    for o in &origins {
        let ok = o.strip_prefix("chrome-extension://").and_then(|r| r.strip_suffix('/')).is_some_and(is_extension_id);
        if !ok {
            return fail(
                name,
                format!("allowed origin `{o}` is not an exact `chrome-extension://<id>/`"),
                "run `browserd install` (wildcards are not allowed)",
            );
        }
    }
    for id in required_ids {
        if !origins.contains(&format!("chrome-extension://{id}/").as_str()) {
            return fail(
                name,
                format!("extension {id} is not in allowed_origins"),
                format!("run `browserd install --extension-id {id}`"),
            );
        }
    }
    pass(name, format!("host {} allowed for {}", target.display(), origins.join(", ")))
}

/// What doctor looks at.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    pub brands: Vec<Brand>,
    pub user_data_dir: Option<PathBuf>,
    pub extension_ids: Vec<String>,
    /// The endpoint socket (`None`: the default location).
    pub socket: Option<PathBuf>,
}

/// Runs every check. A check that did not pass carries the fix.
pub async fn doctor(loc: &Locations, opts: &DoctorOptions) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut ids = vec![DEV_EXTENSION_ID.to_owned()];
    ids.extend(opts.extension_ids.iter().cloned());
    // binary and wrapper
    let wrapper = loc.wrapper_path();
    match std::fs::read_to_string(&wrapper) {
        Ok(s) => {
            let exe =
                s.lines().find_map(|l| l.strip_prefix("exec '")).and_then(|l| l.split('\'').next()).map(PathBuf::from);
            match exe {
                Some(e) if is_executable(&e) => {
                    checks.push(pass("browserd binary", format!("{} (run by {})", e.display(), wrapper.display())))
                }
                Some(e) => checks.push(fail(
                    "browserd binary",
                    format!("the wrapper runs {}, which is missing or not executable", e.display()),
                    "run `browserd install` from the browserd you want to use",
                )),
                None => checks.push(fail(
                    "browserd binary",
                    format!("{} was not written by browserd install", wrapper.display()),
                    "run `browserd install`",
                )),
            }
            if !is_executable(&wrapper) {
                checks.push(fail(
                    "native-host wrapper",
                    format!("{} is not executable", wrapper.display()),
                    format!("chmod 755 {}", wrapper.display()),
                ));
            }
        }
        Err(_) => checks.push(fail(
            "browserd binary",
            format!("no native-host wrapper at {}", wrapper.display()),
            "run `browserd install --browser chrome` (or chromium, edge, all)",
        )),
    }
    // an interrupted install or uninstall
    for what in install_steps::half_done(loc) {
        checks.push(fail("install state", what, "run `browserd install` again to finish it, or `browserd uninstall`"));
    }
    // manifests
    let mut any_manifest = false;
    for brand in &opts.brands {
        let path = loc.manifest_path(*brand, opts.user_data_dir.as_deref());
        if path.exists() {
            any_manifest = true;
            let mut brand_ids = vec![brand.extension_id().to_owned()];
            brand_ids.extend(ids.iter().filter(|id| *id != DEV_EXTENSION_ID).cloned());
            checks.push(check_manifest(&path, &brand_ids));
        } else if opts.user_data_dir.is_some() || opts.brands.len() == 1 {
            checks.push(fail(
                format!("{} manifest", brand.display()),
                format!("missing: {}", path.display()),
                format!("run `browserd install --browser {}`", format!("{brand:?}").to_lowercase()),
            ));
        }
    }
    if !any_manifest && opts.brands.len() > 1 && opts.user_data_dir.is_none() {
        checks.push(fail(
            "manifests",
            "no native-host manifest for any browser",
            "run `browserd install --browser all`",
        ));
    }
    // socket
    let socket = match opts.socket.clone() {
        Some(sock) => Ok(sock),
        None => crate::host::endpoint_socket(),
    };
    match socket {
        Ok(sock) => match std::fs::symlink_metadata(&sock) {
            Ok(m) => {
                use std::os::unix::fs::FileTypeExt;
                let mode = m.permissions().mode() & 0o777;
                if !m.file_type().is_socket() {
                    checks.push(fail(
                        "endpoint socket",
                        format!("{} is not a socket", sock.display()),
                        format!(
                            "rm {} && browserd broker stop; browserd status   (restarts the broker)",
                            sock.display()
                        ),
                    ));
                } else if mode & 0o077 != 0 {
                    checks.push(fail(
                        "endpoint socket",
                        format!("{} has mode {mode:o}, open to other users", sock.display()),
                        "browserd broker stop; browserd status   (the restarted broker creates the socket 0600)",
                    ));
                } else {
                    checks.push(pass("endpoint socket", format!("{} (mode {mode:o})", sock.display())));
                    match crate::link::probe(&sock).await {
                        Ok(Some(ext)) => checks.push(pass(
                            "extension connection",
                            format!(
                                "paired: extension {} {}",
                                ext["extensionId"].as_str().unwrap_or("?"),
                                ext["components"]["extension"].as_str().unwrap_or("")
                            ),
                        )),
                        Ok(None) => checks.push(warn(
                            "extension connection",
                            "browserd is listening but no extension is paired",
                            "open the browser with the browserd extension installed; check its popup for an error",
                        )),
                        Err(e) => checks.push(fail(
                            "extension connection",
                            format!("the socket does not answer: {e}"),
                            "browserd broker stop; browserd status   (restarts the broker)",
                        )),
                    }
                }
            }
            Err(_) => checks.push(warn(
                "endpoint socket",
                format!("nothing at {}: browserd is not running", sock.display()),
                "browserd status   (starts the broker; the extension connects when it is up)",
            )),
        },
        Err(e) => checks.push(fail(
            "endpoint socket",
            format!("the runtime directory is unusable: {e}"),
            crate::doctor::runtime_dir_fix(&e),
        )),
    }
    // browser versions
    for brand in &opts.brands {
        let found = brand.executables().iter().find_map(|e| which(e));
        match found {
            Some(exe) => {
                let v = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    tokio::process::Command::new(&exe).arg("--version").output(),
                )
                .await;
                match v {
                    Ok(Ok(o)) if o.status.success() => checks.push(pass(
                        format!("{} version", brand.display()),
                        String::from_utf8_lossy(&o.stdout).trim().to_owned(),
                    )),
                    _ => checks.push(warn(
                        format!("{} version", brand.display()),
                        format!("{} did not report a version", exe.display()),
                        format!("{} --version   (shows why it does not start)", exe.display()),
                    )),
                }
            }
            None => checks.push(warn(
                format!("{} version", brand.display()),
                "not found on this machine",
                format!("install {} or skip it with --browser", brand.display()),
            )),
        }
    }
    checks
}

fn which(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.is_absolute() {
        return is_executable(p).then(|| p.to_path_buf());
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|c| is_executable(c)))
}
