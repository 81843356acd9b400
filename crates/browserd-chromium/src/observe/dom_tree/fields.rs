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
        if d.display(i) != Some("table") || !d.attrs[i].iter().all(|(k, _)| super::neutral_attr(k)) {
            return None;
        }
        let parts: Vec<usize> = d.kids[i].iter().copied().filter(|&k| d.kind[k] == 1).collect();
        let [caption, head, body] = parts.as_slice() else { return None };
        let (caption, head, body) = (*caption, *head, *body);
        if d.tag[caption] != "caption" || d.tag[head] != "thead" || d.tag[body] != "tbody" {
            return None;
        }
        if [caption, head, body]
            .iter()
            .any(|&k| !d.rendered(k) || !d.attrs[k].iter().all(|(a, _)| super::neutral_attr(a)))
        {
            return None;
        }
        let name = self.content_name(caption)?;
        let caption_kids = self.children(caption, 0)?;
        self.nodes.insert(
            id(caption),
            AxNode {
                role: "caption".into(),
                children: caption_kids,
                backend: Some(self.doc.backend[caption]),
                ..Default::default()
            },
        );
        let head_rows = self.rows(head, "th")?;
        let body_rows = self.rows(body, "td")?;
        self.nodes.insert(
            id(head),
            AxNode {
                role: "rowgroup".into(),
                children: head_rows,
                backend: Some(self.doc.backend[head]),
                ..Default::default()
            },
        );
        self.nodes.insert(
            id(body),
            AxNode {
                ignored: true,
                role: "none".into(),
                children: body_rows,
                backend: Some(self.doc.backend[body]),
                ..Default::default()
            },
        );
        let d = &self.doc;
        self.nodes.insert(
            id(i),
            AxNode {
                role: "table".into(),
                name,
                props: vec![("labelledby".into(), json!([d.backend[caption]]))],
                children: vec![id(caption), id(head), id(body)],
                backend: Some(d.backend[i]),
                ..Default::default()
            },
        );
        Some(id(i))
    }

    /// The rows of a table section, each of `cell` elements only.
    fn rows(&mut self, section: usize, cell: &str) -> Option<Vec<String>> {
        let rows: Vec<usize> = self.doc.kids[section].iter().copied().filter(|&k| self.doc.kind[k] == 1).collect();
        let mut out = Vec::new();
        for r in rows {
            let d = &self.doc;
            if d.tag[r] != "tr" || !d.rendered(r) || !d.attrs[r].iter().all(|(a, _)| super::neutral_attr(a)) {
                return None;
            }
            let cells: Vec<usize> = d.kids[r].iter().copied().filter(|&k| d.kind[k] == 1).collect();
            let mut kids = Vec::new();
            for c in cells {
                let d = &self.doc;
                if d.tag[c] != cell || !d.rendered(c) || !d.attrs[c].iter().all(|(a, _)| super::neutral_attr(a)) {
                    return None;
                }
                let name = self.content_name(c)?;
                let children = self.children(c, 0)?;
                let (role, props) = if cell == "th" {
                    ("columnheader", vec![("readonly".into(), json!(false)), ("required".into(), json!(false))])
                } else {
                    ("cell", Vec::new())
                };
                self.nodes.insert(
                    id(c),
                    AxNode {
                        role: role.into(),
                        name,
                        props,
                        children,
                        backend: Some(self.doc.backend[c]),
                        ..Default::default()
                    },
                );
                kids.push(id(c));
            }
            self.nodes.insert(
                id(r),
                AxNode { role: "row".into(), children: kids, backend: Some(self.doc.backend[r]), ..Default::default() },
            );
            out.push(id(r));
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
        for &c in &self.doc.kids[i] {
            if let Some(t) = self.text.get(&c) {
                let text = AxNode {
                    role: "StaticText".into(),
                    name: t.clone(),
                    backend: Some(self.doc.backend[c]),
                    ..Default::default()
                };
                let node = if toggle { AxNode { ignored: true, role: "none".into(), ..text } } else { text };
                self.nodes.insert(id(c), node);
                kids.push(id(c));
            }
        }
        let role = if toggle { "none" } else { "LabelText" };
        self.nodes.insert(
            id(i),
            AxNode {
                ignored: toggle,
                role: role.into(),
                children: kids,
                backend: Some(self.doc.backend[i]),
                ..Default::default()
            },
        );
        Some(id(i))
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
        self.nodes.insert(
            id(i),
            AxNode {
                role: role.into(),
                name,
                value,
                props,
                children,
                backend: Some(self.doc.backend[i]),
                ..Default::default()
            },
        );
        Some(id(i))
    }

    /// A single-choice `<select>` of text options: a `combobox` showing the selected option, its options under a
    /// `MenuListPopup`.
    pub(super) fn select(&mut self, i: usize) -> Option<String> {
        let d = &self.doc;
        let options: Vec<usize> = d.kids[i].iter().copied().filter(|&k| d.kind[k] == 1).collect();
        if options.is_empty() || options.iter().any(|&o| d.tag[o] != "option") {
            return None;
        }
        let mut props: Vec<(String, Value)> =
            vec![("invalid".into(), json!("false")), ("focusable".into(), json!(true))];
        props.extend([("hasPopup".into(), json!("menu")), ("expanded".into(), json!(false))]);
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
            self.nodes.insert(
                id(o),
                AxNode {
                    role: "option".into(),
                    name: text,
                    props: vec![("focusable".into(), json!(true)), ("selected".into(), json!(selected))],
                    backend: Some(d.backend[o]),
                    ..Default::default()
                },
            );
            kids.push(id(o));
        }
        let popup = format!("{}p", id(i));
        self.nodes.insert(popup.clone(), AxNode { role: "MenuListPopup".into(), children: kids, ..Default::default() });
        self.nodes.insert(
            id(i),
            AxNode {
                role: "combobox".into(),
                name,
                value,
                props,
                children: vec![popup],
                backend: Some(self.doc.backend[i]),
                ..Default::default()
            },
        );
        Some(id(i))
    }
}
