//! The clap subcommands (`native-host`, `install`, `doctor`, `uninstall`) and [`run`], wired into `browserd` by the
//! binary crate.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

use crate::install::{self, Brand, CheckStatus, DoctorOptions, InstallOptions, Locations};

/// `--browser` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BrowserArg {
    Chrome,
    Chromium,
    Edge,
    All,
}

impl BrowserArg {
    /// The brands this value names.
    pub fn brands(self) -> Vec<Brand> {
        match self {
            BrowserArg::Chrome => vec![Brand::Chrome],
            BrowserArg::Chromium => vec![Brand::Chromium],
            BrowserArg::Edge => vec![Brand::Edge],
            BrowserArg::All => Brand::ALL.to_vec(),
        }
    }
}

/// The real-profile subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Run the Native Messaging host (the browser starts this with the extension origin; not for people).
    NativeHost {
        /// `chrome-extension://<id>/`, passed by the browser.
        origin: String,
        /// Further arguments some platforms pass (e.g. `--parent-window` on Windows); ignored.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<String>,
    },
    /// Register the native host with Chrome, Chromium or Edge so the browserd extension can reach browserd.
    Install {
        #[arg(long, value_enum, default_value = "chrome")]
        browser: BrowserArg,
        /// Write the manifest into this profile directory instead (for a browser started with --user-data-dir).
        #[arg(long)]
        user_data_dir: Option<PathBuf>,
        /// Also allow this extension id (e.g. a store id); repeatable. The development id is always allowed.
        #[arg(long = "extension-id")]
        extension_ids: Vec<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Test hook: kill this process after its Nth file-system step (see `install_steps`).
        #[arg(long, hide = true)]
        fault_after: Option<usize>,
    },
    /// Check the binary, manifests, ids, socket, browsers and the live connection; print a fix for each failure.
    Doctor {
        /// Also check the extension path for this browser (checked anyway when `browserd install` ran).
        #[arg(long, value_enum)]
        browser: Option<BrowserArg>,
        #[arg(long)]
        user_data_dir: Option<PathBuf>,
        #[arg(long = "extension-id")]
        extension_ids: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove exactly what `install` created (files changed since are kept and listed).
    Uninstall {
        #[arg(long)]
        json: bool,
        /// Test hook: kill this process after its Nth file-system step (see `install_steps`).
        #[arg(long, hide = true)]
        fault_after: Option<usize>,
    },
}

/// Runs one subcommand; returns the process exit code.
pub async fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::NativeHost { origin, .. } => {
            init_stderr_logging();
            match crate::host::run_native_host(&origin).await {
                Ok(code) => Ok(code),
                Err(e) => {
                    tracing::error!("{e}");
                    Ok(1)
                }
            }
        }
        Command::Install { browser, user_data_dir, extension_ids, json, fault_after } => {
            if let Some(n) = fault_after {
                crate::install_steps::arm_fault_after(n);
            }
            let loc = Locations::from_env()?;
            let exe = std::env::current_exe()?;
            let report = install::install(
                &loc,
                &InstallOptions { brands: browser.brands(), user_data_dir, extension_ids, exe },
            )?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("wrote the native-host wrapper {}", report.wrapper.display());
                for m in &report.manifests {
                    println!("wrote {}", m.display());
                }
                println!("allowed extensions: {}", report.extension_ids.join(", "));
                println!(
                    "next: load the extension (chrome://extensions → Developer mode → Load unpacked → the `extension` folder), then run `browserd doctor`"
                );
            }
            Ok(0)
        }
        Command::Doctor { browser, user_data_dir, extension_ids, json } => {
            let loc = Locations::from_env()?;
            // The default path first: what works without any extension.
            let mut checks = crate::doctor::default_path().await;
            let installed = loc.wrapper_path().exists();
            let extension = browser.is_some() || installed || user_data_dir.is_some() || !extension_ids.is_empty();
            if extension {
                let brands = browser.unwrap_or(BrowserArg::All).brands();
                checks.extend(
                    install::doctor(&loc, &DoctorOptions { brands, user_data_dir, extension_ids, socket: None }).await,
                );
            }
            let failed = checks.iter().any(|c| c.status == CheckStatus::Fail);
            if json {
                println!("{}", serde_json::to_string_pretty(&checks)?);
            } else {
                for c in &checks {
                    let tag = match c.status {
                        CheckStatus::Pass => "ok  ",
                        CheckStatus::Warn => "warn",
                        CheckStatus::Fail => "FAIL",
                    };
                    println!("[{tag}] {}: {}", c.name, c.detail);
                    if let Some(fix) = &c.fix {
                        println!("       fix: {fix}");
                    }
                }
                if !extension {
                    println!(
                        "[optional] extension (your own logged-in browser): not installed; to use it, load \
                         `extension/` and run `browserd install --browser chrome`, then `browserd doctor --browser chrome`"
                    );
                }
            }
            Ok(i32::from(failed))
        }
        Command::Uninstall { json, fault_after } => {
            if let Some(n) = fault_after {
                crate::install_steps::arm_fault_after(n);
            }
            let loc = Locations::from_env()?;
            let report = install::uninstall(&loc)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for p in &report.removed {
                    println!("removed {}", p.display());
                }
                for (p, why) in &report.kept {
                    println!("kept {}: {why}", p.display());
                }
                if report.removed.is_empty() && report.kept.is_empty() {
                    println!("nothing to remove: browserd's native host is not installed");
                }
            }
            Ok(0)
        }
    }
}

/// Logs go to stderr only: stdout carries Native Messaging frames.
fn init_stderr_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BROWSERD_LOG").unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).try_init();
}
