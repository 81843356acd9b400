//! The icon an element draws, read from the markup icon libraries leave (Font Awesome, Bootstrap Icons, Lucide, jQuery UI,
//! Material UI, Material Design Icons, Ant Design, Tabler, Remix, Phosphor, Boxicons, SVG sprites): what a button
//! with no name of its own shows, `e4 button icon=trash`, so an agent can tell the pencil from the bin.

/// Class prefixes of icon libraries, each followed by the icon's name (`fa-trash`, `bi-pencil`, `lucide-trash-2`).
const PREFIXES: &[&str] = &[
    "fa-",
    "ui-icon-",
    "bi-",
    "lucide-",
    "mdi-",
    "anticon-",
    "ti-",
    "ri-",
    "ph-",
    "bx-",
    "bxs-",
    "bxl-",
    "glyphicon-",
    "feather-",
    "octicon-",
    "codicon-",
    "icon-",
    "icon_",
];

/// Class names after those prefixes that are a style, size or animation, not an icon.
const MODIFIERS: &[&str] = &[
    "solid",
    "regular",
    "light",
    "thin",
    "duotone",
    "brands",
    "sharp",
    "fw",
    "lg",
    "xs",
    "sm",
    "xl",
    "2xs",
    "2xl",
    "spin",
    "pulse",
    "beat",
    "bounce",
    "fade",
    "shake",
    "flip",
    "border",
    "inverse",
    "li",
    "ul",
    "stack",
    "stack-1x",
    "stack-2x",
    "spin-pulse",
    "beat-fade",
    "rotate-90",
    "rotate-180",
    "rotate-270",
    "flip-horizontal",
    "flip-vertical",
    "flip-both",
    "light",
    "bold",
    "fill",
    "duotone",
    "small",
    "large",
    "button",
    "btn",
    "wrapper",
    "container",
    "only",
    "left",
    "right",
    "icon",
];

/// The icon an element names in its own markup: `data-icon` (Font Awesome's SVG), a Material UI icon's
/// `data-testid` (`DeleteOutlinedIcon` → `delete`), a class of an icon library (`fa-trash`, `bi bi-pencil`,
/// `lucide lucide-trash-2`, `anticon anticon-delete`), or the symbol an SVG `<use>` points at (`#icon-trash`).
pub(super) fn of(tag: &str, attr: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(v) = attr("data-icon").map(|v| clean(&v)).filter(|v| !v.is_empty()) {
        return Some(v);
    }
    if let Some(id) = attr("data-testid")
        && let Some(stem) = id.strip_suffix("Icon")
        && stem.chars().next().is_some_and(|c| c.is_ascii_uppercase())
    {
        let stem = ["Outlined", "Rounded", "Sharp", "TwoTone"].iter().fold(stem, |s, v| s.strip_suffix(v).unwrap_or(s));
        let kebab = kebab(stem);
        if !kebab.is_empty() {
            return Some(kebab);
        }
    }
    if let Some(class) = attr("class") {
        // Every icon class has a prefix ending in `-` or `_`: other tokens are passed over unread.
        for token in class.split_whitespace().filter(|t| t.contains(['-', '_'])) {
            let lower = token.to_ascii_lowercase();
            for p in PREFIXES {
                if let Some(rest) = lower.strip_prefix(p) {
                    // Lucide's Vue and React builds add `lucide-trash-2-icon` beside `lucide-trash-2`.
                    let rest = clean(rest.strip_suffix("-icon").unwrap_or(rest));
                    if !rest.is_empty()
                        && !MODIFIERS.contains(&rest.as_str())
                        && !rest.chars().next().is_some_and(|c| c.is_ascii_digit())
                    {
                        return Some(rest);
                    }
                }
            }
        }
    }
    if let Some(class) = attr("class")
        && let Some(name) = class.split_whitespace().find_map(mui_slot_icon)
    {
        return Some(name);
    }
    // Mantine's calendar steps months with unnamed buttons whose chevron says its way only by `data-direction`.
    if let Some(way) = attr("data-direction").filter(|w| matches!(w.as_str(), "previous" | "next")) {
        return Some(way);
    }
    // Mantine draws every close and remove button (a pill's, a notification's) as its CloseButton, an unnamed SVG.
    if attr("class").is_some_and(|c| c.split_whitespace().any(|t| t == "mantine-CloseButton-root")) {
        return Some("close".to_owned());
    }
    if tag == "use" {
        let target = attr("href").or_else(|| attr("xlink:href"))?;
        let symbol = target.rsplit_once('#').map(|(_, s)| s)?;
        let symbol = PREFIXES.iter().find_map(|p| symbol.strip_prefix(p)).unwrap_or(symbol);
        let symbol = clean(symbol);
        if !symbol.is_empty() {
            return Some(symbol);
        }
    }
    None
}

/// The icon a Material UI slot class names (`MuiChip-deleteIcon` → `delete`): a production build sets no
/// `data-testid` on its icons, but each component's icon slot has a class of its own.
fn mui_slot_icon(token: &str) -> Option<String> {
    let (component, slot) = token.strip_prefix("Mui")?.split_once('-')?;
    let stem = slot.strip_suffix("Icon")?;
    if component.is_empty() || !stem.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
        return None;
    }
    Some(kebab(stem)).filter(|s| !s.is_empty())
}

/// Lower case, letters, digits and single dashes only, at most 40 characters.
fn clean(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if matches!(c, '-' | '_' | ' ') && !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// `MoreVert` → `more-vert`.
fn kebab(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c);
    }
    clean(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icon(tag: &str, attrs: &[(&str, &str)]) -> Option<String> {
        of(tag, |name| attrs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn icon_libraries_name_their_icons_and_modifiers_are_not_icons() {
        assert_eq!(icon("i", &[("class", "fa-solid fa-trash-can fa-fw")]).as_deref(), Some("trash-can"));
        assert_eq!(icon("i", &[("class", "fas fa-lg fa-pencil")]).as_deref(), Some("pencil"));
        assert_eq!(icon("svg", &[("data-icon", "trash"), ("class", "svg-inline--fa")]).as_deref(), Some("trash"));
        assert_eq!(icon("i", &[("class", "bi bi-pencil-square")]).as_deref(), Some("pencil-square"));
        assert_eq!(icon("svg", &[("class", "lucide lucide-trash-2")]).as_deref(), Some("trash-2"));
        assert_eq!(icon("svg", &[("class", "lucide lucide-trash-2-icon lucide-trash-2")]).as_deref(), Some("trash-2"));
        assert_eq!(icon("svg", &[("class", "lucide lucide-icon")]), None);
        assert_eq!(icon("svg", &[("data-testid", "DeleteOutlinedIcon")]).as_deref(), Some("delete"));
        assert_eq!(icon("svg", &[("data-testid", "MoreVertIcon")]).as_deref(), Some("more-vert"));
        assert_eq!(icon("span", &[("class", "anticon anticon-delete")]).as_deref(), Some("delete"));
        assert_eq!(icon("use", &[("href", "/sprite.svg#icon-archive")]).as_deref(), Some("archive"));
        assert_eq!(icon("use", &[("xlink:href", "#star")]).as_deref(), Some("star"));
        assert_eq!(icon("span", &[("class", "ui-icon ui-icon-closethick")]).as_deref(), Some("closethick"));
        // Material UI's production build: the slot class names the icon.
        let chip = "MuiSvgIcon-root MuiSvgIcon-fontSizeMedium MuiChip-deleteIcon MuiChip-deleteIconMedium css-1";
        assert_eq!(icon("svg", &[("class", chip)]).as_deref(), Some("delete"));
        assert_eq!(icon("svg", &[("class", "MuiSelect-icon MuiSelect-iconOutlined")]), None);
        // Mantine's close and remove buttons are its CloseButton around an unnamed SVG.
        let remove = "mantine-focus-auto mantine-active mantine-Pill-remove mantine-CloseButton-root";
        assert_eq!(icon("button", &[("class", remove)]).as_deref(), Some("close"));
        // Not icons: sizes, styles, a test id that is not an icon's, a plain class.
        assert_eq!(icon("i", &[("class", "fa fa-2x fa-spin")]), None);
        assert_eq!(icon("button", &[("data-testid", "save-button")]), None);
        assert_eq!(icon("button", &[("class", "btn btn-primary")]), None);
        assert_eq!(icon("span", &[("class", "icon-btn")]), None);
    }
}
