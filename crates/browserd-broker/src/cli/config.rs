//! `browserd config`: the effective configuration and where each value came from.

use serde_json::{Value, json};

use crate::config;

pub(super) fn print(json_out: bool) -> i32 {
    let effective = match config::load() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if json_out {
        let values: serde_json::Map<String, Value> = config::KEYS
            .iter()
            .map(|k| {
                let value = serde_json::to_value(&effective.config).ok().and_then(|v| match k.split_once('.') {
                    // A section key (`advanced.enabled`): the section's object, then the key.
                    Some((section, key)) => v.get(to_camel(section))?.get(to_camel(key)).cloned(),
                    None => v.get(to_camel(k)).cloned(),
                });
                (
                    (*k).to_owned(),
                    json!({"value": value, "source": effective.sources.get(k), "env": config::env_name(k)}),
                )
            })
            .collect();
        println!("{}", json!({"file": effective.file, "fileExists": effective.file_exists, "values": values}));
        return 0;
    }
    match &effective.file {
        Some(path) => {
            println!("config file: {} ({})", path.display(), if effective.file_exists { "present" } else { "absent" })
        }
        None => println!("config file: none (no XDG_CONFIG_HOME or HOME)"),
    }
    for key in config::KEYS {
        let source = effective.sources.get(key).map_or_else(|| "default".to_owned(), ToString::to_string);
        println!(
            "{key} = {}  [{source}; env {}]",
            config::display_value(&effective.config, key),
            config::env_name(key)
        );
    }
    0
}

pub(super) fn to_camel(key: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
