//! The state a page shows only by styling: the current page of a pagination, the open entry of a sidebar menu, the
//! chosen item of a list — marked by a class (`active`, `ant-pagination-item-active`, `is-active`, `Mui-selected`)
//! or a `data-active` attribute where no ARIA state says it, so the accessibility tree has nothing for it.

/// What a class list or `data-active` says of an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClassState {
    /// `active` / `current`: the page, entry or step the user is on.
    Current,
    /// `selected`: the item chosen in a list.
    Selected,
}

impl ClassState {
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Selected => "selected",
        }
    }
}

/// Class tokens that end in `-active` but mark the item under the pointer or the keyboard's highlight, not the
/// chosen one (rc-menu's hover, rc-select's highlighted option), or that only give a control its pressed look
/// (Mantine puts `mantine-active` on every button).
const HOVER_SUFFIXES: &[&str] = &["menu-item-active", "menu-submenu-active", "option-active", "mantine-active"];

/// Class tokens a transition sets while it runs (Vue's `<Transition>`, React Transition Group): `el-zoom-in-center-
/// enter-active` is on every Element Plus tag for the 300 ms it appears in, and says nothing of a choice.
const TRANSITION_SUFFIXES: &[&str] = &["enter-active", "leave-active", "appear-active", "exit-active"];

/// What a class list says: a whole token `active`, `current` or `selected` (optionally `is-`), or one ending in
/// `-active`, `--active`, `_active` (and the same for `current` and `selected`), or MUI's `Mui-selected`. A
/// `data-active` attribute (Mantine) reads as `active`, a `data-selected` one (Mantine's calendar day, React Aria,
/// Headless UI) as `selected`.
pub(crate) fn from_attrs(
    class: Option<&str>,
    data_active: Option<&str>,
    data_selected: Option<&str>,
) -> Option<ClassState> {
    if data_active.is_some_and(|v| v != "false") {
        return Some(ClassState::Current);
    }
    if data_selected.is_some_and(|v| v != "false") {
        return Some(ClassState::Selected);
    }
    class?.split_ascii_whitespace().find_map(from_token)
}

fn from_token(t: &str) -> Option<ClassState> {
    if HOVER_SUFFIXES.iter().chain(TRANSITION_SUFFIXES).any(|h| t.ends_with(h)) {
        return None;
    }
    let word = t.strip_prefix("is-").unwrap_or(t);
    let tail = ["--", "-", "_"].iter().find_map(|sep| word.rsplit_once(sep).map(|(_, w)| w)).unwrap_or(word);
    match tail {
        "active" | "current" => Some(ClassState::Current),
        "selected" => Some(ClassState::Selected),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_component_libraries_mark_the_current_item_with_are_read() {
        for (class, want) in [
            ("ant-pagination-item ant-pagination-item-1 ant-pagination-item-active", Some(ClassState::Current)),
            ("page-item active", Some(ClassState::Current)),
            ("el-menu-item is-active", Some(ClassState::Current)),
            ("v-list-item v-list-item--active", Some(ClassState::Current)),
            ("ant-menu-item ant-menu-item-selected", Some(ClassState::Selected)),
            ("MuiButtonBase-root Mui-selected", Some(ClassState::Selected)),
            ("nav_link nav_current", Some(ClassState::Current)),
            // The pointer's hover and the keyboard's highlight are not a choice.
            ("ant-menu-item ant-menu-item-active", None),
            ("ant-select-item ant-select-item-option ant-select-item-option-active", None),
            ("mantine-focus-auto mantine-active mantine-Button-root", None),
            // A transition running (a tag appearing, a panel leaving).
            ("el-tag el-tag--light el-zoom-in-center-enter-from el-zoom-in-center-enter-active", None),
            ("fade-leave-active fade-leave-to", None),
            ("item-appear item-appear-active", None),
            ("alert-exit alert-exit-active", None),
            // Words that only contain the marks.
            ("inactive interactive", None),
            ("btn active:bg-gray-200 hover:bg-gray-100", None),
            ("activeness", None),
        ] {
            assert_eq!(from_attrs(Some(class), None, None), want, "{class}");
        }
        assert_eq!(from_attrs(None, Some("true"), None), Some(ClassState::Current));
        assert_eq!(from_attrs(None, Some(""), None), Some(ClassState::Current));
        assert_eq!(from_attrs(Some("x"), Some("false"), None), None);
        assert_eq!(from_attrs(Some("day"), None, Some("true")), Some(ClassState::Selected));
        assert_eq!(from_attrs(Some("day"), None, Some("false")), None);
    }
}
