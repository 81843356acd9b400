//! A DOM snapshot of one document, indexed for the tree builder: tags, attributes, children, computed styles,
//! layout text and form state per node, and the kind of box each element is laid out as.

use std::collections::HashMap;

use serde_json::Value;

/// The snapshot of one document, indexed.
pub(super) struct Doc<'a> {
    pub(super) tag: Vec<String>,
    pub(super) kind: Vec<i64>,
    pub(super) value: Vec<&'a str>,
    pub(super) backend: Vec<i64>,
    pub(super) attrs: Vec<Vec<(&'a str, &'a str)>>,
    pub(super) kids: Vec<Vec<usize>>,
    pub(super) styles: Vec<Option<Vec<&'a str>>>,
    pub(super) layout_text: Vec<Option<&'a str>>,
    pub(super) pseudo: Vec<Option<&'a str>>,
    pub(super) clickable: Vec<bool>,
    pub(super) checked: Vec<bool>,
    pub(super) selected: Vec<bool>,
    pub(super) input_value: Vec<Option<&'a str>>,
    pub(super) ids: HashMap<&'a str, usize>,
    pub(super) url: &'a str,
}

impl<'a> Doc<'a> {
    pub(super) fn parse(v: &'a Value) -> Option<Doc<'a>> {
        let docs = v["documents"].as_array()?;
        let [d] = docs.as_slice() else { return None };
        let strings: Vec<&str> = v["strings"].as_array()?.iter().map(|s| s.as_str().unwrap_or("")).collect();
        let s = |x: &Value| x.as_i64().and_then(|i| usize::try_from(i).ok()).and_then(|i| strings.get(i).copied());
        let n = &d["nodes"];
        let parents = n["parentIndex"].as_array()?;
        let count = parents.len();
        let list = |k: &str| n[k].as_array().filter(|a| a.len() == count);
        let names = list("nodeName")?;
        let kinds = list("nodeType")?;
        let values = list("nodeValue")?;
        let backends = list("backendNodeId")?;
        let attrs = list("attributes")?;
        // Shadow roots (user-agent ones too: their content is not in the snapshot the way the tree has it).
        if n["shadowRootType"]["index"].as_array().is_some_and(|a| !a.is_empty()) {
            return None;
        }
        let mut doc = Doc {
            tag: names.iter().map(|x| s(x).unwrap_or("").to_ascii_lowercase()).collect(),
            kind: kinds.iter().map(|k| k.as_i64().unwrap_or(0)).collect(),
            value: values.iter().map(|x| s(x).unwrap_or("")).collect(),
            backend: backends.iter().map(|b| b.as_i64().unwrap_or(0)).collect(),
            attrs: attrs
                .iter()
                .map(|a| {
                    a.as_array()
                        .map(|a| {
                            a.chunks(2).map(|c| (s(&c[0]).unwrap_or(""), c.get(1).and_then(&s).unwrap_or(""))).collect()
                        })
                        .unwrap_or_default()
                })
                .collect(),
            kids: vec![Vec::new(); count],
            styles: vec![None; count],
            layout_text: vec![None; count],
            pseudo: vec![None; count],
            clickable: vec![false; count],
            checked: vec![false; count],
            selected: vec![false; count],
            input_value: vec![None; count],
            ids: HashMap::new(),
            url: s(&d["documentURL"]).unwrap_or(""),
        };
        for (i, p) in parents.iter().enumerate() {
            if let Some(p) = p.as_i64().and_then(|p| usize::try_from(p).ok()) {
                if p >= i {
                    return None;
                }
                doc.kids[p].push(i);
            }
        }
        let indexed = |o: &'a Value| -> Vec<(usize, Option<&'a Value>)> {
            let idx = o["index"].as_array().map(Vec::as_slice).unwrap_or_default();
            let val = o["value"].as_array();
            idx.iter()
                .enumerate()
                .filter_map(|(k, i)| Some((usize::try_from(i.as_i64()?).ok()?, val.and_then(|v| v.get(k)))))
                .filter(|(i, _)| *i < count)
                .collect()
        };
        for (i, v) in indexed(&n["pseudoType"]) {
            doc.pseudo[i] = Some(v.and_then(&s).unwrap_or("?"));
        }
        for (i, _) in indexed(&n["isClickable"]) {
            doc.clickable[i] = true;
        }
        for (i, _) in indexed(&n["inputChecked"]) {
            doc.checked[i] = true;
        }
        for (i, _) in indexed(&n["optionSelected"]) {
            doc.selected[i] = true;
        }
        for (i, v) in indexed(&n["inputValue"]) {
            doc.input_value[i] = v.and_then(&s);
        }
        if !indexed(&n["contentDocumentIndex"]).is_empty() {
            return None;
        }
        let layout = &d["layout"];
        let texts = layout["text"].as_array();
        for (li, (ni, st)) in layout["nodeIndex"].as_array()?.iter().zip(layout["styles"].as_array()?).enumerate() {
            let Some(ni) = ni.as_i64().and_then(|x| usize::try_from(x).ok()).filter(|&x| x < count) else { continue };
            if doc.styles[ni].is_some() {
                // A list marker's box, then its text's: the text is the marker's. Any other node is not modelled.
                doc.pseudo[ni]?;
                if let Some(t) = texts.and_then(|t| t.get(li)).and_then(&s).filter(|t| !t.is_empty()) {
                    doc.layout_text[ni] = Some(t);
                }
                continue;
            }
            doc.styles[ni] = Some(st.as_array()?.iter().map(|x| s(x).unwrap_or("")).collect());
            doc.layout_text[ni] = texts.and_then(|t| t.get(li)).and_then(&s);
        }
        for (i, a) in doc.attrs.iter().enumerate() {
            // Duplicate ids: which one a label points at is Chromium's choice.
            if let Some((_, id)) = a.iter().find(|(k, _)| *k == "id")
                && doc.ids.insert(id, i).is_some()
            {
                return None;
            }
        }
        Some(doc)
    }

    pub(super) fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attrs[i].iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }
    pub(super) fn style(&self, i: usize, k: usize) -> Option<&'a str> {
        self.styles[i].as_ref().and_then(|s| s.get(k).copied())
    }
    pub(super) fn display(&self, i: usize) -> Option<&'a str> {
        self.style(i, super::DISPLAY)
    }
    pub(super) fn rendered(&self, i: usize) -> bool {
        self.styles[i].is_some()
    }
    /// Laid out as an atomic inline box (a button, a field, an inline-block): whitespace beside it is not text.
    pub(super) fn atomic(&self, i: usize) -> bool {
        self.kind[i] == 1 && (self.display(i).is_some_and(|d| d.starts_with("inline-")) || self.tag[i] == "img")
    }
    /// Laid out as a block-level box (a line of its own).
    pub(super) fn block(&self, i: usize) -> bool {
        self.kind[i] == 1 && self.display(i).is_some_and(|d| !d.starts_with("inline") && d != "contents")
    }
    pub(super) fn inline(&self, i: usize) -> bool {
        self.kind[i] == 3 || (self.kind[i] == 1 && self.display(i) == Some("inline") && self.tag[i] != "img")
    }
}
