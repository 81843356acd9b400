//! Key definitions and chord parsing for the Input domain.

/// One key as CDP wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyDef {
    pub(crate) key: String,
    pub(crate) code: String,
    pub(crate) vk: u32,
    pub(crate) text: Option<String>,
}

/// Modifier bit of a modifier key name (Alt=1, Control=2, Meta=4, Shift=8).
pub(crate) fn modifier_bit(name: &str) -> Option<u32> {
    match name {
        "Alt" => Some(1),
        "Control" | "Ctrl" => Some(2),
        "Meta" | "Command" | "Cmd" => Some(4),
        "Shift" => Some(8),
        _ => None,
    }
}

/// The definition of a named key or a single character.
pub(crate) fn key_def(name: &str) -> Option<KeyDef> {
    let named = |key: &str, code: &str, vk: u32, text: Option<&str>| KeyDef {
        key: key.to_owned(),
        code: code.to_owned(),
        vk,
        text: text.map(str::to_owned),
    };
    let d = match name {
        "Enter" | "Return" => named("Enter", "Enter", 13, Some("\r")),
        "Tab" => named("Tab", "Tab", 9, None),
        "Backspace" => named("Backspace", "Backspace", 8, None),
        "Delete" => named("Delete", "Delete", 46, None),
        "Escape" | "Esc" => named("Escape", "Escape", 27, None),
        "Space" => named(" ", "Space", 32, Some(" ")),
        "ArrowLeft" | "Left" => named("ArrowLeft", "ArrowLeft", 37, None),
        "ArrowUp" | "Up" => named("ArrowUp", "ArrowUp", 38, None),
        "ArrowRight" | "Right" => named("ArrowRight", "ArrowRight", 39, None),
        "ArrowDown" | "Down" => named("ArrowDown", "ArrowDown", 40, None),
        "Home" => named("Home", "Home", 36, None),
        "End" => named("End", "End", 35, None),
        "PageUp" => named("PageUp", "PageUp", 33, None),
        "PageDown" => named("PageDown", "PageDown", 34, None),
        "Insert" => named("Insert", "Insert", 45, None),
        "Alt" => named("Alt", "AltLeft", 18, None),
        "Control" | "Ctrl" => named("Control", "ControlLeft", 17, None),
        "Meta" | "Command" | "Cmd" => named("Meta", "MetaLeft", 91, None),
        "Shift" => named("Shift", "ShiftLeft", 16, None),
        "Plus" => named("+", "Equal", 187, Some("+")),
        f if f.len() >= 2 && f.starts_with('F') && f[1..].parse::<u32>().is_ok_and(|n| (1..=12).contains(&n)) => {
            let n: u32 = f[1..].parse().ok()?;
            named(f, f, 111 + n, None)
        }
        other => {
            let mut chars = other.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            return Some(char_def(c));
        }
    };
    Some(d)
}

/// The definition of a printable character.
pub(crate) fn char_def(c: char) -> KeyDef {
    let (code, vk) = if c.is_ascii_alphabetic() {
        (format!("Key{}", c.to_ascii_uppercase()), u32::from(c.to_ascii_uppercase()))
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), u32::from(c))
    } else {
        match c {
            ' ' => ("Space".into(), 32),
            '-' | '_' => ("Minus".into(), 189),
            '=' | '+' => ("Equal".into(), 187),
            ',' | '<' => ("Comma".into(), 188),
            '.' | '>' => ("Period".into(), 190),
            '/' | '?' => ("Slash".into(), 191),
            ';' | ':' => ("Semicolon".into(), 186),
            '\'' | '"' => ("Quote".into(), 222),
            '[' | '{' => ("BracketLeft".into(), 219),
            ']' | '}' => ("BracketRight".into(), 221),
            '\\' | '|' => ("Backslash".into(), 220),
            '`' | '~' => ("Backquote".into(), 192),
            _ => (String::new(), 0),
        }
    };
    KeyDef { key: c.to_string(), code, vk, text: Some(c.to_string()) }
}

/// Parses `Control+Shift+A` into (modifier keys, main key). `+` alone or at the end means the plus key.
pub(crate) fn parse_chord(chord: &str) -> Result<(Vec<KeyDef>, u32, KeyDef), String> {
    let chord = chord.trim();
    let mut parts: Vec<&str> = chord.split('+').collect();
    if chord.ends_with('+') {
        // "Control++" → ["Control", "", ""]; "+" → ["", ""].
        while parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.last() == Some(&"") || parts.is_empty() || chord.ends_with("++") || chord == "+" {
            parts.retain(|p| !p.is_empty());
            parts.push("Plus");
        }
    }
    let Some((main, mods)) = parts.split_last() else {
        return Err(format!("empty key chord {chord:?}; use e.g. `Enter` or `Control+A`"));
    };
    let mut mod_keys = Vec::new();
    let mut bits = 0;
    for m in mods {
        let bit = modifier_bit(m).ok_or_else(|| format!("{m:?} is not a modifier; use Alt, Control, Meta or Shift"))?;
        bits |= bit;
        mod_keys.push(key_def(m).ok_or_else(|| format!("unknown key {m:?}"))?);
    }
    let mut key = key_def(main).ok_or_else(|| {
        format!("unknown key {main:?}; use a single character or a name like Enter, Tab, Escape, ArrowDown, F5")
    })?;
    if bits & 8 != 0
        && let Some(t) = key.text.clone()
        && t.len() == 1
        && t.chars().all(|c| c.is_ascii_alphabetic())
    {
        key.text = Some(t.to_ascii_uppercase());
        key.key = t.to_ascii_uppercase();
    }
    if bits & (1 | 2 | 4) != 0 {
        key.text = None;
    }
    Ok((mod_keys, bits, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_parse_with_modifiers() {
        let (mods, bits, key) = parse_chord("Control+A").unwrap();
        assert_eq!(mods.len(), 1);
        assert_eq!(bits, 2);
        assert_eq!(key.code, "KeyA");
        assert_eq!(key.text, None);
        let (_, bits, key) = parse_chord("Shift+a").unwrap();
        assert_eq!(bits, 8);
        assert_eq!(key.text.as_deref(), Some("A"));
        let (_, _, key) = parse_chord("Enter").unwrap();
        assert_eq!(key.text.as_deref(), Some("\r"));
        let (_, bits, key) = parse_chord("Control++").unwrap();
        assert_eq!((bits, key.key.as_str()), (2, "+"));
        assert!(parse_chord("Hyper+A").is_err());
        assert!(parse_chord("Foo").is_err());
    }
}
