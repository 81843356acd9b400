//! Tables, labels and form fields of the tree built from the DOM: a data table's caption, header and rows; a
//! `<label for>` and the field it names; text fields, checkboxes and selects with the properties Chromium gives them.

use serde_json::{Value, json};

use super::{Builder, collapse, id};
use crate::ax::AxNode;

impl Builder<'_> {
    /// A data table: a `<caption>`, a `<thead>` of `<th>` and a `<tbody>` of `<td>` rows (layout tables and other
    /// shapes are left to Chromium's heuristics).
    pub(super) fn table(&mut self, i: usize) -> Option<String> {
        let d = &self.doc;
        if d.display(i) != Some("table") || !self.plain(i) {
            return None;
        }
        let parts: Vec<usize> = d.kids[i].iter().copied().filter(|&k| d.kind[k] == 1).collect();
        let [caption, head, body] = parts.as_slice() else { return None };
        let (caption, head, body) = (*caption, *head, *body);
        if d.tag[caption] != "caption" || d.tag[head] != "thead" || d.tag[body] != "tbody" {
            return None;
        }
        if [caption, head, body].iter().any(|&k| !d.rendered(k) || !self.plain(k)) {
            return None;
        }
        let name = self.content_name(caption)?;
        let children = self.children(caption, 0)?;
        let caption_id = self.put(caption, AxNode { role: "caption".into(), children, ..Default::default() });
        let children = self.rows(head, "th")?;
        let head_id = self.put(head, AxNode { role: "rowgroup".into(), children, ..Default::default() });
        let children = self.rows(body, "td")?;
        let body_id = self.put(body, AxNode { ignored: true, role: "none".into(), children, ..Default::default() });
        let props = vec![("labelledby".into(), json!([self.doc.backend[caption]]))];
        let children = vec![caption_id, head_id, body_id];
        Some(self.put(i, AxNode { role: "table".into(), name, props, children, ..Default::default() }))
    }

    /// The rows of a table section, each of `cell` elements only.
    fn rows(&mut self, section: usize, cell: &str) -> Option<Vec<String>> {
        let rows: Vec<usize> = self.doc.kids[section].iter().copied().filter(|&k| self.doc.kind[k] == 1).collect();
        let mut out = Vec::new();
        for r in rows {
            let d = &self.doc;
            if d.tag[r] != "tr" || !d.rendered(r) || !self.plain(r) {
                return None;
            }
            let cells: Vec<usize> = d.kids[r].iter().copied().filter(|&k| d.kind[k] == 1).collect();
            let mut kids = Vec::new();
            for c in cells {
                let d = &self.doc;
                if d.tag[c] != cell || !d.rendered(c) || !self.plain(c) {
                    return None;
                }
                let name = self.content_name(c)?;
                let children = self.children(c, 0)?;
                let (role, props) = if cell == "th" {
                    ("columnheader", vec![("readonly".into(), json!(false)), ("required".into(), json!(false))])
                } else {
                    ("cell", Vec::new())
                };
                kids.push(self.put(c, AxNode { role: role.into(), name, props, children, ..Default::default() }));
            }
            out.push(self.put(r, AxNode { role: "row".into(), children: kids, ..Default::default() }));
        }
        Some(out)
    }

    /// The field a `<label for>` names, if it is one the subset has.
    fn labelled(&self, label: usize) -> Option<usize> {
        let target = *self.doc.ids.get(self.doc.attr(label, "for")?)?;
        matches!(self.doc.tag[target].as_str(), "input" | "select").then_some(target)
    }

    /// The `<label for>` naming a field, if any (one at most).
    fn label_of(&self, field: usize) -> Option<Option<usize>> {
        let Some(own) = self.doc.attr(field, "id") else { return Some(None) };
        match self.labels.get(own).map(Vec::as_slice).unwrap_or_default() {
            [] => Some(None),
            [l] => Some(Some(*l)),
            _ => None,
        }
    }

    /// A `<label for>` of a text field or select (its own node, `LabelText`), or of a checkbox (left out: its text is
    /// the checkbox's name).
    pub(super) fn label(&mut self, i: usize) -> Option<String> {
        let target = self.labelled(i)?;
        if self.doc.kids[i].iter().any(|&k| self.doc.kind[k] == 1) {
            return None;
        }
        let toggle = self.doc.attr(target, "type") == Some("checkbox");
        let mut kids = Vec::new();
        for c in self.doc.kids[i].clone() {
            if let Some(name) = self.text.get(&c).cloned() {
                let role = if toggle { "none" } else { "StaticText" };
                kids.push(self.put(c, AxNode { ignored: toggle, role: role.into(), name, ..Default::default() }));
            }
        }
        let role = if toggle { "none" } else { "LabelText" };
        Some(self.put(i, AxNode { ignored: toggle, role: role.into(), children: kids, ..Default::default() }))
    }

    /// The accessible name from a field's `<label for>`, with the `labelledby` relation to it.
    fn field_name(&self, i: usize, props: &mut Vec<(String, Value)>) -> Option<String> {
        match self.label_of(i)? {
            Some(l) => {
                props.push(("labelledby".into(), json!([self.doc.backend[l]])));
                self.content_name(l)
            }
            None => Some(String::new()),
        }
    }

    /// A text or e-mail field (with what was typed into it), or a checkbox.
    pub(super) fn input(&mut self, i: usize) -> Option<String> {
        let d = &self.doc;
        let ty = d.attr(i, "type").unwrap_or("text");
        let mut props: Vec<(String, Value)> =
            vec![("invalid".into(), json!("false")), ("focusable".into(), json!(true))];
        let role = match ty {
            "checkbox" => {
                props.push(("checked".into(), json!(if d.checked[i] { "true" } else { "false" })));
                "checkbox"
            }
            _ => {
                props.extend([
                    ("editable".into(), json!("plaintext")),
                    ("settable".into(), json!(true)),
                    ("multiline".into(), json!(false)),
                    ("readonly".into(), json!(false)),
                    ("required".into(), json!(false)),
                ]);
                "textbox"
            }
        };
        let name = self.field_name(i, &mut props)?;
        let value =
            if role == "textbox" { self.doc.input_value[i].unwrap_or_default().to_owned() } else { String::new() };
        if role == "textbox" {
            // The field's inner editor: an editable `generic` without DOM node in the snapshot, holding the value.
            let editable = || vec![("editable".to_owned(), json!("plaintext"))];
            let mut inner = Vec::new();
            if !value.is_empty() {
                inner.push(format!("{}v", id(i)));
                let text =
                    AxNode { role: "StaticText".into(), name: value.clone(), props: editable(), ..Default::default() };
                self.nodes.insert(format!("{}v", id(i)), text);
            }
            let editor = AxNode { role: "generic".into(), props: editable(), children: inner, ..Default::default() };
            self.nodes.insert(format!("{}e", id(i)), editor);
        }
        let children = if role == "textbox" { vec![format!("{}e", id(i))] } else { Vec::new() };
        Some(self.put(i, AxNode { role: role.into(), name, value, props, children, ..Default::default() }))
    }

    /// A single-choice `<select>` of text options: a `combobox` showing the selected option, its options under a
    /// `MenuListPopup`.
    pub(super) fn select(&mut self, i: usize) -> Option<String> {
        let d = &self.doc;
        let options: Vec<usize> = d.kids[i].iter().copied().filter(|&k| d.kind[k] == 1).collect();
        if options.is_empty() || options.iter().any(|&o| d.tag[o] != "option") {
            return None;
        }
        let mut props: Vec<(String, Value)> = vec![
            ("invalid".into(), json!("false")),
            ("focusable".into(), json!(true)),
            ("hasPopup".into(), json!("menu")),
            ("expanded".into(), json!(false)),
        ];
        let name = self.field_name(i, &mut props)?;
        let mut kids = Vec::new();
        let mut value = String::new();
        let first_selected = options.iter().position(|&o| self.doc.selected[o]).unwrap_or(0);
        for (k, &o) in options.iter().enumerate() {
            let d = &self.doc;
            if !d.attrs[o].iter().all(|(a, _)| super::neutral_attr(a) || matches!(*a, "value" | "selected"))
                || d.kids[o].iter().any(|&c| d.kind[c] != 3)
            {
                return None;
            }
            let text = collapse(&d.kids[o].iter().map(|&c| d.value[c]).collect::<String>()).trim().to_owned();
            let selected = k == first_selected;
            if selected {
                value.clone_from(&text);
            }
            let props = vec![("focusable".into(), json!(true)), ("selected".into(), json!(selected))];
            kids.push(self.put(o, AxNode { role: "option".into(), name: text, props, ..Default::default() }));
        }
        let popup = format!("{}p", id(i));
        self.nodes.insert(popup.clone(), AxNode { role: "MenuListPopup".into(), children: kids, ..Default::default() });
        let children = vec![popup];
        Some(self.put(i, AxNode { role: "combobox".into(), name, value, props, children, ..Default::default() }))
    }
}
