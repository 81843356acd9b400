//! Pages for the text side of observation (issue 13): text as a user reads it — an instruction with inline
//! `<span>` emphasis, a HUD of adjacent status `<div>`s, `<br>`, hidden and `display: contents` elements,
//! `text-transform`, an issue list of 20 rows with long titles and status chips, long paragraphs and long names, a
//! receipt (a header-less table, struck prices, a sentence ending after its link), docs (a code block, a message
//! that keeps its line breaks).
//! Served as `data:` URLs (kept apart from the fixture site until it moves into its own crate). What each page must
//! read is declared here, never in the page: [`TextPage::must_read`].

/// One page and the lines an observation of it must show exactly (each as one whole line of the observation).
#[derive(Debug, Clone, Copy)]
pub struct TextPage {
    /// Short name, e.g. `instruction`.
    pub name: &'static str,
    /// The page's HTML.
    pub html: &'static str,
    /// Lines the page renders that an observation must show whole and exactly, as lines of their own.
    pub must_read: &'static [&'static str],
}

impl TextPage {
    /// The page as a `data:` URL (percent-encoded HTML).
    #[must_use]
    pub fn url(&self) -> String {
        data_url(self.html)
    }
}

/// `html` as a `data:text/html` URL.
#[must_use]
pub fn data_url(html: &str) -> String {
    let mut url = String::from("data:text/html;charset=utf-8,");
    for b in html.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

const INSTRUCTION: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Task</title></head><body>
<h1>Sign-up task</h1>
<p class="task">Enter "<span class="name">Ada</span>" into the field, then press <b>Save</b>.</p>
<p>Hello <b>world</b>! Then <em>read</em> <i>this</i>.</p>
<label>Name <input name="n"></label>
</body></html>"#;

const HUD: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>HUD</title>
<style>.hud{display:flex;gap:8px}.up{text-transform:uppercase}.c{display:contents}</style></head><body>
<div class="hud"><div>HP 10/12</div><div>MP 5</div><div>Gold 7</div><div>Level 2</div></div>
<div>Status: <span class="up">ready</span></div>
<p>first line<br>second line</p>
<p>shown<span hidden>HIDDEN</span> text<span style="display:none">GONE</span>.</p>
<div class="c"><span>contents</span> flow on</div>
<span>inline a</span><span>inline b</span>
</body></html>"#;

const ISSUES: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Issues</title>
<style>.row{display:flex;gap:6px;padding:2px}.chip{border:1px solid #888;border-radius:6px;padding:0 4px}</style></head><body>
<h1>Issues</h1>
<div class="list">
<div class="row"><span class="id">#1</span><span class="title">Login page shows a blank screen after the session expires on Safari with private mode</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#2</span><span class="title">Export to CSV drops the last column when a value contains a comma inside quotes</span><span class="chip">In progress</span></div>
<div class="row"><span class="id">#3</span><span class="title">Dashboard cards overlap on narrow screens below 360 pixels in landscape orientation</span><span class="chip">Closed</span></div>
<div class="row"><span class="id">#4</span><span class="title">Password reset email arrives twice when the user double-clicks the submit button</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#5</span><span class="title">Search results ignore the selected date range filter after switching between tabs</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#6</span><span class="title">Notifications badge keeps counting messages that were already read on another device</span><span class="chip">Blocked</span></div>
<div class="row"><span class="id">#7</span><span class="title">Uploading a file larger than 2 GB fails silently without any message to the user</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#8</span><span class="title">Keyboard shortcut for archive conflicts with the browser's own shortcut on Windows</span><span class="chip">In review</span></div>
<div class="row"><span class="id">#9</span><span class="title">Timezone of scheduled reports is shown in UTC instead of the account's own timezone</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#10</span><span class="title">Dark mode leaves the table header white and its text unreadable in the settings page</span><span class="chip">Closed</span></div>
<div class="row"><span class="id">#11</span><span class="title">Drag and drop reorder of columns resets after a page reload in the board view</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#12</span><span class="title">Invoice PDF shows the wrong currency symbol for accounts billed in Swiss francs</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#13</span><span class="title">Mentions autocomplete does not list users whose names contain accented characters</span><span class="chip">In progress</span></div>
<div class="row"><span class="id">#14</span><span class="title">Two-factor prompt appears again on every navigation after enabling remember device</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#15</span><span class="title">Bulk edit applies the label to one item fewer than the number of selected items</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#16</span><span class="title">Audit log entries older than ninety days disappear before the retention period ends</span><span class="chip">Blocked</span></div>
<div class="row"><span class="id">#17</span><span class="title">Webhook retries stop after the first failure instead of backing off as documented</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#18</span><span class="title">Copy link button copies the link of the previous item when the list was filtered</span><span class="chip">Closed</span></div>
<div class="row"><span class="id">#19</span><span class="title">Printing a report cuts off the chart legend and the last page footer on A4 paper</span><span class="chip">Open</span></div>
<div class="row"><span class="id">#20</span><span class="title">Mobile menu stays open behind the modal after the user confirms a destructive action</span><span class="chip">Open</span></div>
</div>
<p>This summary paragraph is deliberately long: it runs past one hundred and sixty characters, which is where an older renderer cut every text line with an ellipsis, so that whatever followed was silently lost to the agent reading it.</p>
<button>Archive the selected issues that have been closed for more than ninety days and notify every watcher by email</button>
</body></html>"#;

/// The text pages.
const RECEIPT: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Receipt</title>
<style>.was{text-decoration:line-through;color:#777}</style></head><body>
<table cellpadding="4"><tr><td>Subtotal</td><td>$40.00</td></tr><tr><td>Discount</td><td><del>$5.00</del> $4.00</td></tr></table>
<p>Plan: <s>$20</s> <ins>$15</ins> per month, <span class="was"><b>$99.00</b></span> $89.00 a year.</p>
<p>Read our <a href="/privacy">privacy policy</a>.</p>
</body></html>"#;

const DOCS: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Docs</title></head><body>
<h2>Configure</h2>
<p>Put this in <code>app.yml</code>:</p>
<pre><code>server:
  port: 8080
  hosts:
    - a.example</code></pre>
<p style="white-space:pre-wrap">Hi Bob,
see you   at 5.</p>
<img alt="Architecture diagram" width="20" height="20" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<progress value="70" max="100" aria-label="Setup">70%</progress>
</body></html>"#;

pub const TEXT_PAGES: &[TextPage] = &[
    TextPage {
        name: "instruction",
        html: INSTRUCTION,
        must_read: &["Enter \"Ada\" into the field, then press Save.", "Hello world! Then read this."],
    },
    TextPage {
        name: "hud",
        html: HUD,
        must_read: &[
            "HP 10/12",
            "MP 5",
            "Gold 7",
            "Level 2",
            "Status: READY",
            "first line",
            "second line",
            "shown text.",
            "contents flow on inline ainline b",
        ],
    },
    TextPage {
        name: "issues",
        html: ISSUES,
        must_read: &[
            "Login page shows a blank screen after the session expires on Safari with private mode",
            "In review",
            "Mobile menu stays open behind the modal after the user confirms a destructive action",
            "This summary paragraph is deliberately long: it runs past one hundred and sixty characters, which is \
             where an older renderer cut every text line with an ellipsis, so that whatever followed was silently \
             lost to the agent reading it.",
        ],
    },
    TextPage {
        name: "receipt",
        html: RECEIPT,
        // A table with no header cells is read as layout: its cells are still apart as `innerText` has them. Text
        // drawn struck through sits between `~~` marks. A sentence that ends right after its link is one line.
        must_read: &[
            "Subtotal | $40.00",
            "Discount | ~~$5.00~~ $4.00",
            "Plan: ~~$20~~ $15 per month, ~~$99.00~~ $89.00 a year.",
            "Read our privacy policy.",
        ],
    },
    TextPage {
        name: "docs",
        html: DOCS,
        // Preformatted text: a line per line, spaces kept (the observation's own indent is not part of it here).
        must_read: &[
            "```",
            "server:",
            "port: 8080",
            "- a.example",
            "Hi Bob,",
            "see you   at 5.",
            "Put this in app.yml:",
        ],
    },
];
