//! The id of a message too long to keep: a streaming scan over an over-long JSON-RPC line that finds its top-level
//! `"id"` (a number or a string) wherever it sits, in constant memory, so the answer to "too long" names the request.

use serde_json::Value;

/// Longest id value kept (bytes of its JSON text); a longer one is treated as no id.
const MAX_ID_BYTES: usize = 256;

/// Where the scan stands at the top level of the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Before the opening `{`.
    Open,
    /// A key (after `{` or `,`).
    Key,
    /// The `:` after a key.
    Colon,
    /// A value (after `:`).
    Value,
    /// Inside a value, until the `,` or `}` that ends it.
    InValue,
    /// The line is not an object, or the object ended: nothing more to learn.
    Done,
}

/// Feeds on the bytes of one line, piece by piece; [`IdScanner::id`] says the top-level `"id"` if one was seen.
#[derive(Debug, Clone)]
pub struct IdScanner {
    expect: Expect,
    /// Nesting depth (1 = inside the top-level object).
    depth: usize,
    in_string: bool,
    escape: bool,
    /// The current top-level key, while it is short enough to be `id`.
    key: Vec<u8>,
    key_is_long: bool,
    /// Whether the value being read belongs to the key `id`.
    capturing: bool,
    captured: Vec<u8>,
    captured_long: bool,
    id: Option<Value>,
}

impl Default for IdScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl IdScanner {
    /// A scanner at the start of a line.
    #[must_use]
    pub fn new() -> Self {
        Self {
            expect: Expect::Open,
            depth: 0,
            in_string: false,
            escape: false,
            key: Vec::new(),
            key_is_long: false,
            capturing: false,
            captured: Vec::new(),
            captured_long: false,
            id: None,
        }
    }

    /// The request id seen so far (a JSON number or string), if any.
    #[must_use]
    pub fn id(&self) -> Option<Value> {
        self.id.clone()
    }

    /// Reads the next bytes of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.expect == Expect::Done {
                return;
            }
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        if self.capturing {
            if self.captured.len() <= MAX_ID_BYTES {
                self.captured.push(b);
            } else {
                self.captured_long = true;
            }
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.expect == Expect::Key {
                    self.expect = Expect::Colon;
                }
            } else if self.expect == Expect::Key && self.depth == 1 {
                if self.key.len() < 2 {
                    self.key.push(b);
                } else {
                    self.key_is_long = true;
                }
            }
            if self.escape && self.expect == Expect::Key {
                self.key_is_long = true;
            }
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        match self.expect {
            Expect::Open => {
                self.expect = if b == b'{' { Expect::Key } else { Expect::Done };
                self.depth = 1;
            }
            Expect::Key => match b {
                b'"' => {
                    self.in_string = true;
                    self.key.clear();
                    self.key_is_long = false;
                }
                b'}' => self.expect = Expect::Done,
                _ => self.expect = Expect::Done,
            },
            Expect::Colon => {
                if b == b':' {
                    self.expect = Expect::Value;
                } else {
                    self.expect = Expect::Done;
                }
            }
            Expect::Value => {
                self.capturing = !self.key_is_long && self.key == b"id";
                self.captured.clear();
                if self.capturing {
                    self.captured.push(b);
                }
                self.expect = Expect::InValue;
                self.value_byte(b);
            }
            Expect::InValue => self.value_byte(b),
            Expect::Done => {}
        }
    }

    /// A byte of a value outside any string.
    fn value_byte(&mut self, b: u8) {
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 1 => self.depth -= 1,
            b',' | b'}' if self.depth == 1 => {
                self.end_value();
                self.expect = if b == b',' { Expect::Key } else { Expect::Done };
            }
            _ => {}
        }
    }

    fn end_value(&mut self) {
        if self.capturing {
            self.captured.pop(); // the `,` or `}` that ended it
            if !self.captured_long {
                self.id =
                    serde_json::from_slice::<Value>(&self.captured).ok().filter(|v| v.is_number() || v.is_string());
            }
        }
        self.capturing = false;
        self.captured_long = false;
        self.captured.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id_of(line: &str, piece: usize) -> Option<Value> {
        let mut scan = IdScanner::new();
        for chunk in line.as_bytes().chunks(piece.max(1)) {
            scan.feed(chunk);
        }
        scan.id()
    }

    #[test]
    fn finds_the_top_level_id_anywhere_in_any_pieces() {
        let big = "x".repeat(5000);
        for piece in [1, 3, 7, 4096, 1 << 20] {
            assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":7,"method":"m"}"#, piece), Some(json!(7)));
            assert_eq!(id_of(&format!(r#"{{"params":{{"id":1,"t":"{big}"}},"id":"r-9"}}"#), piece), Some(json!("r-9")));
            assert_eq!(id_of(r#" { "id" : -3 , "x":[1,{"id":2}]}"#, piece), Some(json!(-3)));
            assert_eq!(id_of(r#"{"a":"he said \"id\": 5","id":"q\"uote"}"#, piece), Some(json!("q\"uote")));
        }
    }

    #[test]
    fn no_id_when_there_is_none_or_it_is_not_an_id() {
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#, 5), None);
        assert_eq!(id_of(r#"{"id":null}"#, 5), None);
        assert_eq!(id_of(r#"{"id":{"n":1}}"#, 5), None);
        assert_eq!(id_of(r#"{"idx":4,"params":{"id":4}}"#, 5), None);
        assert_eq!(id_of(r#"[{"id":1}]"#, 5), None);
        // A line cut short (the reader stopped keeping it) still tells an id that was complete.
        assert_eq!(id_of(r#"{"id":12,"params":{"text":"aaaa"#, 5), Some(json!(12)));
        assert_eq!(id_of(r#"{"params":{"text":"aaaa"#, 5), None);
        assert_eq!(id_of(&format!(r#"{{"id":"{}"}}"#, "z".repeat(MAX_ID_BYTES)), 64), None);
    }
}
