//! The fixture apps: pages built the way real products are (React, Vue, Lit and Svelte production builds, Radix UI
//! primitives, a jQuery 3.7.1 page, a jQuery-style delegated page), each with its data and its ground truth declared here, on the server side, never in the page.
//! The server puts the data into the page as JSON; what is operable and which texts must be read is known only here.
//! A click that reaches a page's handler is POSTed to `/api/record` and kept in order ([`crate::FixtureSite::records`]).

use serde_json::{Value, json};

/// One element a user can operate on an app page right after it loads, with the record its click leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppOperable {
    /// The ARIA role (`generic` for an element without one: an `<a>` without `href`, a clickable `div`).
    pub role: &'static str,
    /// Its accessible name, or for a `generic` element its visible text (the part that names it).
    pub name: String,
    /// What `/api/record` receives when it is clicked (`None`: typing into a field records nothing).
    pub records: Option<String>,
}

/// The ground truth of one app page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppTruth {
    /// Every operable element right after load, in document order.
    pub operable: Vec<AppOperable>,
    /// Texts an agent must be able to read exactly as the page renders them, each on one line of its own.
    pub texts: Vec<String>,
}

/// An app page: its path, the bundle it loads and its title.
struct App {
    path: &'static str,
    script: &'static str,
    title: &'static str,
}

const APPS: &[App] = &[
    App { path: "/apps/tracker.html", script: "/apps/tracker.js", title: "Tracker — issues" },
    App { path: "/apps/dashboard.html", script: "/apps/dashboard.js", title: "Dashboard" },
    App { path: "/apps/mail.html", script: "/apps/mail.js", title: "Mail" },
    App { path: "/apps/admin.html", script: "/apps/admin.js", title: "Workspace settings" },
    App { path: "/apps/shop.html", script: "/apps/shop.js", title: "Shop" },
    App { path: "/apps/components.html", script: "/apps/components.js", title: "Settings console" },
    App { path: "/apps/board.html", script: "/apps/board.js", title: "Sprint board" },
    App { path: "/apps/crm.html", script: "/apps/crm.js", title: "Customers — Acme CRM" },
    App { path: "/apps/account.html", script: "/apps/account.js", title: "Account settings" },
    App { path: "/apps/chat.html", script: "/apps/chat.js", title: "general — Acme chat" },
    App { path: "/apps/checkout.html", script: "/apps/checkout.js", title: "Checkout" },
    App { path: "/apps/console.html", script: "/apps/console.js", title: "Team console" },
    App { path: "/apps/people.html", script: "/apps/people.js", title: "People admin" },
    App { path: "/apps/ledger.html", script: "/apps/ledger.js", title: "Invoices — Ledgerly" },
];

/// The built bundles and the hand-written app files, by path.
pub(crate) const FILES: &[(&str, &str, &str)] = &[
    ("/apps/tracker.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/tracker.js")),
    ("/apps/dashboard.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/dashboard.js")),
    ("/apps/mail.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/mail.js")),
    ("/apps/admin.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/admin.js")),
    ("/apps/shop.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/shop.js")),
    ("/apps/components.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/components.js")),
    ("/apps/board.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/board.js")),
    ("/apps/crm.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/crm.js")),
    ("/apps/account.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/account.js")),
    ("/apps/chat.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/chat.js")),
    ("/apps/checkout.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/checkout.js")),
    ("/apps/console.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/console.js")),
    ("/apps/people.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/people.js")),
    ("/apps/ledger.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/ledger.js")),
    ("/apps/bootstrap.js", "text/javascript; charset=utf-8", include_str!("../fixtures/apps/bootstrap.js")),
    ("/apps/bootstrap-orders.html", "text/html; charset=utf-8", include_str!("../fixtures/bootstrap-orders.html")),
    ("/apps/apps.css", "text/css; charset=utf-8", include_str!("../fixtures/apps/apps.css")),
    ("/apps/delegated.html", "text/html; charset=utf-8", include_str!("../fixtures/delegated.html")),
];

const VIEWS: &[&str] = &["Inbox", "My issues", "Projects", "Settings"];

/// The tracker's issues: id, title, status. Some titles are longer than 80 characters, with the status after them.
const ISSUES: &[(&str, &str, &str)] = &[
    ("TRK-101", "Login button does nothing on Safari", "Open"),
    (
        "TRK-102",
        "Checkout page shows the wrong currency for customers who switch their billing country during the session",
        "In progress",
    ),
    ("TRK-103", "Typo in the welcome email", "Done"),
    ("TRK-104", "Export to CSV drops the last row", "Open"),
    (
        "TRK-105",
        "Search results flicker and reorder themselves while the user is still typing the query into the search box",
        "Open",
    ),
    ("TRK-106", "Dark mode: chart labels unreadable", "In progress"),
    ("TRK-107", "Avatar upload fails for PNG files over 2 MB", "Open"),
    (
        "TRK-108",
        "Notification settings are not saved when the user leaves the page before the confirmation toast disappears",
        "Done",
    ),
    ("TRK-109", "Keyboard shortcut conflicts with browser zoom", "Open"),
    ("TRK-110", "Invoice PDF has a blank second page", "Done"),
    (
        "TRK-111",
        "Password reset links expire after five minutes instead of the twenty-four hours promised in the help centre",
        "In progress",
    ),
    ("TRK-112", "Sidebar collapses on every navigation", "Open"),
    ("TRK-113", "Time zone missing in the activity feed", "Open"),
    (
        "TRK-114",
        "Bulk archive of more than one hundred conversations times out and leaves some of them half archived",
        "Open",
    ),
    ("TRK-115", "Broken link in the footer", "Done"),
    ("TRK-116", "Slow first load on mobile networks", "In progress"),
    (
        "TRK-117",
        "Team members invited by email cannot accept the invitation when their address contains a plus sign",
        "Open",
    ),
    ("TRK-118", "Tooltip covers the save button", "Open"),
    ("TRK-119", "Drag and drop reorders the wrong card", "Done"),
    (
        "TRK-120",
        "Calendar view shows events one day early for users whose week starts on Monday in the regional settings",
        "Open",
    ),
];

const TABS: &[&str] = &["Overview", "Reports", "Alerts"];
const CARDS: &[(&str, &str)] =
    &[("Revenue", "$12,400"), ("Active users", "1,204"), ("Open tickets", "17"), ("Uptime", "99.95%")];
const EXPECTED_NAME: &str = "Ada";

/// Folder tree: (depth, name, open at load). Children follow their parent with a greater depth.
/// The mail's labels: plain list items, their clicks handled by one listener on the list.
const MAIL_LABELS: &[&str] = &["Work", "Personal", "Receipts"];

const FOLDERS: &[(usize, &str, bool)] = &[
    (0, "Inbox", false),
    (0, "Projects", true),
    (1, "Apollo", false),
    (2, "Apollo designs", false),
    (1, "Gemini", false),
    (0, "Archive", false),
    (1, "2025", false),
    (1, "2024", false),
    (0, "Sent", false),
];
const MAILS: &[(&str, &str, &str, &str)] = &[
    ("m1", "Grace Hopper", "Compiler meeting moved to Thursday", "09:12"),
    ("m2", "Alan Turing", "Re: the imitation game draft", "08:40"),
    ("m3", "Katherine Johnson", "Trajectory numbers for review", "Yesterday"),
    ("m4", "Linus Torvalds", "Patch series v3", "Yesterday"),
    ("m5", "Barbara Liskov", "Substitution principle slides", "Mon"),
    ("m6", "Dennis Ritchie", "Lunch?", "Sun"),
];
/// The HTML bodies of the mails that have one, as a mail client shows them once opened. `m3`: an HTML email laid out
/// with tables (no header cells: Chromium reads them as layout), a corrected figure struck through beside the new
/// one, and a sentence that ends right after its link. `m4`: a patch mail, its diffstat preformatted (the columns
/// line up only with their spaces kept) and a chart with a text alternative.
const MAIL_BODIES: &[(&str, &str)] = &[
    (
        "m3",
        r#"<table width="100%" cellpadding="0" cellspacing="0" role="presentation"><tr><td>
<p>Hi all, the corrected numbers are below.</p>
<table cellpadding="4" cellspacing="0"><tr><td>Orbit insertion</td><td><s>T+11:42</s> T+11:38</td></tr>
<tr><td>Splashdown</td><td>Atlantic, <span class="was">29.9 N</span> 29.4 N</td></tr></table>
<p>Struck figures are superseded. The method is in the <a href="https://example.test/trajectory">full report</a>.</p>
</td></tr></table>"#,
    ),
    (
        "m4",
        r#"<p>Hi all, v3 addresses the review comments.</p>
<pre> fs/ext4/inode.c | 12 ++++++------
 fs/ext4/super.c |  3 ++-
 2 files changed, 8 insertions(+), 7 deletions(-)</pre>
<p><img width="120" height="40" alt="Build time per commit: 9 minutes before the series, 6 after" src="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='120' height='40'%3E%3Cpath d='M0 10 L120 30' stroke='black'/%3E%3C/svg%3E"></p>"#,
    ),
];
/// The share of the mailbox's storage in use, drawn as a bar beside its text.
const STORAGE_USED: u32 = 41;
const FLAGGED: usize = 1;
const STORAGE: &str = "41% of 15 GB";

/// The admin app: breadcrumb, tabs, the actions of its menu, switches (id, label, on at load), tags, members
/// (name, email, role) and the plan.
const CRUMBS: &[&str] = &["Home", "Acme Corp", "Workspace"];
const ADMIN_TABS: &[&str] = &["General", "Members", "Billing", "Integrations"];
const ACTIONS: &[&str] = &["Duplicate workspace", "Export settings", "Archive workspace"];
const TOGGLES: &[(&str, &str, bool)] =
    &[("email", "Email notifications", true), ("digest", "Weekly digest", false), ("mentions", "Mentions only", false)];
const TAGS: &[&str] = &["design", "backend", "urgent"];
const MEMBERS: &[(&str, &str, &str)] = &[
    ("Ada Lovelace", "ada@acme.test", "Owner"),
    ("Grace Hopper", "grace@acme.test", "Admin"),
    ("Edsger Dijkstra", "edsger@acme.test", "Member"),
];
const PLAN: &str = "Team (annual)";
/// What a tag's remove icon shows.
const REMOVE_ICON: &str = "\u{d7}";

/// The shop's products: id, short name, full name (the first longer than 160 characters), price in cents.
const PRODUCTS: &[(&str, &str, &str, u32)] = &[
    (
        "p1",
        "Trail runner",
        "Trail runner waterproof hiking shoes with a breathable mesh upper, a reinforced toe cap, a cushioned midsole \
         for long distances and a grippy rubber outsole for wet and rocky paths",
        12900,
    ),
    ("p2", "Desk lamp", "Desk lamp with an adjustable arm and a warm dimmable light", 4500),
    ("p3", "Coffee grinder", "Burr coffee grinder with 40 grind settings", 8900),
];
/// The shop's sale prices: product id, the price before (shown struck through beside the price), and whether it is
/// marked up as `<s>` (else a `<span>` the stylesheet strikes through, as shop themes do).
const WAS: &[(&str, u32, bool)] = &[("p2", 5900, true), ("p3", 9900, false)];
const SHIPPING: &str = "Free shipping over $50";

/// The settings console (web components): its nav items, switches (id, label, on at load), the members table reuses
/// the admin app's members, the card (title, the word to type, its button) and the icon button's label.
const CONSOLE_NAV: &[&str] = &["Profile", "Security", "Team", "Billing"];
const CONSOLE_TOGGLES: &[(&str, &str, bool)] =
    &[("sso", "Single sign-on", true), ("audit", "Audit log", false), ("beta", "Beta features", false)];
const DANGER: (&str, &str, &str) = ("Danger zone", "admin", "Reset workspace");
const REFRESH: &str = "Refresh members";

/// The sprint board (Svelte): its filters, columns (name, tasks: id, title, assignee, initials, tag, points; the last
/// column is the done one) and the task an instruction asks to add.
const BOARD_FILTERS: &[&str] = &["All", "Mine", "Blocked"];
type Task = (&'static str, &'static str, &'static str, &'static str, &'static str, u32);
const BOARD: &[(&str, &[Task])] = &[
    (
        "To do",
        &[
            ("SB-1", "Set up the staging database", "Ada Lovelace", "AL", "backend", 3),
            (
                "SB-2",
                "Write the onboarding email for trial users who have not logged in since the first week of their trial",
                "Grace Hopper",
                "GH",
                "content",
                2,
            ),
            ("SB-3", "Fix the flaky login test", "Alan Turing", "AT", "qa", 1),
        ],
    ),
    (
        "Doing",
        &[
            ("SB-4", "Move billing to the new invoicing API", "Katherine Johnson", "KJ", "backend", 5),
            ("SB-5", "Design the empty states", "Barbara Liskov", "BL", "design", 2),
        ],
    ),
    (
        "Done",
        &[
            ("SB-6", "Upgrade Node to 20", "Dennis Ritchie", "DR", "infra", 3),
            ("SB-7", "Export the audit log as CSV", "Ada Lovelace", "AL", "backend", 5),
        ],
    ),
];
const BOARD_TASK: &str = "Write release notes";

/// The CRM (jQuery): its brand and nav, the sortable columns (key, label) and the customers (id, name, email,
/// company, status), five to a page.
const CRM_NAV: &[&str] = &["Customers", "Deals", "Reports"];
const CRM_COLUMNS: &[(&str, &str)] = &[("name", "Name"), ("email", "Email"), ("company", "Company")];
/// The owners the CRM's owner filter (a Select2 single choice) offers; none is chosen at load.
const CRM_OWNERS: &[&str] = &["Ada Lovelace", "Grace Hopper", "Alan Turing"];
/// The CRM's tags (a Select2 multiple choice) and whether each is chosen at load.
const CRM_TAGS: &[(&str, bool)] = &[("VIP", true), ("Churn risk", false), ("Trial", true)];
const CUSTOMERS: &[(&str, &str, &str, &str, &str)] = &[
    ("cust-1", "Ada Lovelace", "ada@analytical.test", "Analytical Engines", "Active"),
    ("cust-2", "Grace Hopper", "grace@cobol.test", "Compilers Inc", "Active"),
    ("cust-3", "Alan Turing", "alan@bletchley.test", "Bletchley Systems", "Churned"),
    ("cust-4", "Katherine Johnson", "katherine@orbit.test", "Orbit Dynamics", "Active"),
    ("cust-5", "Edsger Dijkstra", "edsger@paths.test", "Shortest Paths BV", "Trial"),
    ("cust-6", "Barbara Liskov", "barbara@subtype.test", "Subtype Labs", "Active"),
    ("cust-7", "Dennis Ritchie", "dennis@unix.test", "Bell Works", "Churned"),
    ("cust-8", "Margaret Hamilton", "margaret@apollo.test", "Apollo Guidance", "Active"),
    ("cust-9", "Donald Knuth", "don@tex.test", "Typeset Co", "Trial"),
    ("cust-10", "Frances Allen", "fran@optimize.test", "Optimizing Compilers", "Active"),
    ("cust-11", "John Backus", "john@fortran.test", "Formula Translation", "Active"),
    ("cust-12", "Radia Perlman", "radia@spanning.test", "Spanning Trees", "Trial"),
];
const CRM_PER_PAGE: usize = 5;

/// Account settings (Radix UI): the user and their menu, the tabs, the languages (value, label), the FAQ (id,
/// question, answer) and how many projects the delete dialog names.
const ACCOUNT_USER: &str = "Ada Lovelace";
const ACCOUNT_MENU: &[&str] = &["Profile", "Billing", "Sign out"];
const ACCOUNT_TABS: &[&str] = &["Profile", "Notifications", "Danger zone"];
/// The theme picker's choices (visually hidden radios, each clicked through its label); the first is chosen at load.
const ACCOUNT_THEMES: &[&str] = &["Light", "Dark", "System"];
/// The checkbox drawn as MUI's `FormControlLabel` draws one.
const ACCOUNT_SUMMARY: &str = "Email me a weekly summary";
const LANGUAGES: &[(&str, &str)] = &[("en", "English"), ("de", "Deutsch"), ("fr", "Français"), ("ja", "日本語")];
const FAQ: &[(&str, &str, &str)] = &[
    ("export", "How do I export my data?", "Open Settings, then Export, and pick a format."),
    ("email", "Can I change my email address?", "Yes: support changes it after a check of your identity."),
];

/// The chat (React + a virtualised list): its members (id, name), channels (name, unread count), and the last messages
/// of #general (id, author, time, HTML, reactions (emoji, count, mine), replies); [`chat_messages`] puts
/// `CHAT_FILLER` older ones before them, the first of all being [`CHAT_FIRST`]. At load the list shows the newest
/// rows only: the first message exists in the DOM only once the list is scrolled up to it.
const CHAT_MEMBERS: &[(&str, &str)] = &[
    ("ada", "Ada Lovelace"),
    ("alan", "Alan Turing"),
    ("barbara", "Barbara Liskov"),
    ("grace", "Grace Hopper"),
    ("gregor", "Gregor Mendel"),
    ("katherine", "Katherine Johnson"),
    ("linus", "Linus Torvalds"),
];
const CHAT_CHANNELS: &[(&str, u32)] = &[("general", 0), ("design", 3), ("random", 12), ("releases", 0)];
type ChatMessage = (&'static str, &'static str, &'static str, &'static str, &'static [(&'static str, u32, bool)], u32);
const CHAT_LAST: &[ChatMessage] = &[
    ("m115", "linus", "10:02", "Morning! Coffee is on the <b>third</b> floor today.", &[("☕", 2, false)], 0),
    ("m116", "grace", "10:05", "Deploy is <b>blocked</b> on <code>api-7</code> until the migration lands.", &[], 2),
    ("m117", "katherine", "10:11", "Numbers for the Q3 review are in the shared sheet.", &[], 0),
    ("m118", "alan", "10:20", "Can someone review PR #482 before lunch?", &[("👀", 1, true)], 0),
    ("m119", "barbara", "10:31", "The staging certificate expires on 12 December.", &[], 0),
    ("m120", "linus", "10:40", "Lunch at 12:30 — the usual place?", &[("👍", 3, false), ("🍕", 1, false)], 1),
];
const CHAT_FILLER: usize = 114;
const CHAT_FIRST: &str = "Welcome to #general — say hi to the team!";

/// Every message of #general, oldest first, as the page gets them.
fn chat_messages() -> Vec<Value> {
    let authors = ["grace", "alan", "barbara", "katherine", "gregor"];
    let filler = (1..=CHAT_FILLER).map(|i| {
        let text = if i == 1 { CHAT_FIRST.to_owned() } else { format!("Standup note {i}: nothing blocking on my side.") };
        json!({
            "id": format!("m{i}"), "author": authors[i % authors.len()], "time": format!("{:02}:{:02}", 8 + i / 60, i % 60),
            "html": text, "reactions": [], "replies": 0,
        })
    });
    let last = CHAT_LAST.iter().map(|(id, author, time, html, reactions, replies)| {
        json!({
            "id": id, "author": author, "time": time, "html": html, "replies": replies,
            "reactions": reactions.iter().map(|(emoji, count, mine)| json!({"emoji": emoji, "count": count, "mine": mine}))
                .collect::<Vec<_>>(),
        })
    });
    filler.chain(last).collect()
}

/// A chat member's name by id.
fn member(id: &str) -> &'static str {
    CHAT_MEMBERS.iter().find(|(m, _)| *m == id).map_or("", |(_, name)| name)
}

/// The checkout (React): the item (name, cents) and the shipping options (id, name, cents).
const CHECKOUT_ITEM: (&str, u32) = ("Mechanical keyboard", 8900);
const CHECKOUT_SHIPPING: &[(&str, &str, u32)] =
    &[("standard", "Standard (5–7 days)", 0), ("express", "Express (1–2 days)", 1500)];

/// A price in cents as the shop shows it (`$129.00`, `$1,299.00`).
fn money(cents: u32) -> String {
    let dollars = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in dollars.chars().enumerate() {
        if i > 0 && (dollars.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{:02}", cents % 100)
}

fn folder_tree(from: usize, depth: usize) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut i = from;
    while i < FOLDERS.len() && FOLDERS[i].0 == depth {
        let (_, name, open) = FOLDERS[i];
        let (children, next) = folder_tree(i + 1, depth + 1);
        out.push(json!({ "name": name, "open": open, "children": children }));
        i = next;
    }
    (out, i)
}

fn data(path: &str) -> Value {
    match path {
        "/apps/tracker.html" => json!({
            "views": VIEWS,
            "issues": ISSUES.iter().map(|(id, title, status)| json!({"id": id, "title": title, "status": status}))
                .collect::<Vec<_>>(),
        }),
        "/apps/dashboard.html" => json!({
            "tabs": TABS,
            "cards": CARDS.iter().map(|(title, value)| json!({"title": title, "value": value})).collect::<Vec<_>>(),
            "expectedName": EXPECTED_NAME,
        }),
        "/apps/mail.html" => json!({
            "folders": folder_tree(0, 0).0,
            "labels": MAIL_LABELS,
            "mails": MAILS.iter().map(|(id, from, subject, date)| json!({
                "id": id, "from": from, "subject": subject, "date": date,
                "html": MAIL_BODIES.iter().find(|b| b.0 == *id).map(|b| b.1),
            }))
                .collect::<Vec<_>>(),
            "flagged": FLAGGED,
            "storage": STORAGE,
            "storageUsed": STORAGE_USED,
        }),
        "/apps/admin.html" => json!({
            "crumbs": CRUMBS,
            "tabs": ADMIN_TABS,
            "actions": ACTIONS,
            // The last switch keeps its checkbox rendered, transparent and 0×0; the others hide it.
            "toggles": TOGGLES.iter().enumerate()
                .map(|(i, (id, label, on))| json!({"id": id, "label": label, "on": on, "transparent": i + 1 == TOGGLES.len()}))
                .collect::<Vec<_>>(),
            "tags": TAGS,
            "columns": ["Name", "Email", "Role"],
            "members": MEMBERS.iter().map(|(name, email, role)| json!({"name": name, "email": email, "role": role}))
                .collect::<Vec<_>>(),
            "plan": PLAN,
            "removeIcon": REMOVE_ICON,
        }),
        "/apps/components.html" => json!({
            "nav": CONSOLE_NAV,
            "toggles": CONSOLE_TOGGLES.iter().map(|(id, label, on)| json!({"id": id, "label": label, "on": on}))
                .collect::<Vec<_>>(),
            "columns": ["Name", "Email", "Role"],
            "members": MEMBERS.iter().map(|(name, email, role)| json!({"name": name, "email": email, "role": role}))
                .collect::<Vec<_>>(),
            "danger": {"title": DANGER.0, "word": DANGER.1, "button": DANGER.2},
            "refreshLabel": REFRESH,
        }),
        "/apps/board.html" => json!({
            "title": "Sprint board",
            "filters": BOARD_FILTERS,
            "columns": BOARD.iter().map(|(name, tasks)| json!({
                "name": name,
                "tasks": tasks.iter().map(|(id, title, assignee, initials, tag, points)| json!({
                    "id": id, "title": title, "assignee": assignee, "initials": initials, "tag": tag, "points": points,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "expectedTask": BOARD_TASK,
        }),
        "/apps/account.html" => json!({
            "product": "Acme Cloud",
            "user": ACCOUNT_USER,
            "menu": ACCOUNT_MENU,
            "tabs": ACCOUNT_TABS,
            "themes": ACCOUNT_THEMES,
            "languages": LANGUAGES.iter().map(|(value, label)| json!({"value": value, "label": label})).collect::<Vec<_>>(),
            "faq": FAQ.iter().map(|(id, q, a)| json!({"id": id, "q": q, "a": a})).collect::<Vec<_>>(),
            "projects": 7,
        }),
        "/apps/chat.html" => json!({
            "workspace": "Acme",
            "me": "ada",
            "members": CHAT_MEMBERS.iter().map(|(id, name)| json!({"id": id, "name": name})).collect::<Vec<_>>(),
            "channels": CHAT_CHANNELS.iter().map(|(name, unread)| json!({"name": name, "unread": unread})).collect::<Vec<_>>(),
            "messages": chat_messages(),
        }),
        "/apps/console.html" => json!({
            "title": "Team console",
            "crumbs": CONSOLE_CRUMBS,
            "regionPlaceholder": CONSOLE_REGION_PLACEHOLDER,
            "regions": CONSOLE_REGIONS.iter().map(|(value, label, disabled)| json!([value, label, disabled]))
                .collect::<Vec<_>>(),
            "tabs": CONSOLE_TABS,
            "members": CONSOLE_MEMBERS.iter().map(|(key, name, email, role)| json!([key, name, email, role]))
                .collect::<Vec<_>>(),
            "pageSize": CONSOLE_PAGE_SIZE,
            "permissions": CONSOLE_PERMISSIONS.iter().map(|(key, title, children)| json!([key, title,
                children.iter().map(|(k, t)| json!([k, t])).collect::<Vec<_>>()])).collect::<Vec<_>>(),
            "rating": CONSOLE_RATING,
        }),
        "/apps/people.html" => json!({
            "title": "People admin",
            "menu": PEOPLE_MENU,
            "active": PEOPLE_ACTIVE,
            "regionPlaceholder": PEOPLE_REGION_PLACEHOLDER,
            "regions": PEOPLE_REGIONS,
            "notify": true,
            "rate": PEOPLE_RATING,
            "sizes": PEOPLE_SIZES,
            "people": PEOPLE,
            "teams": PEOPLE_TEAMS,
            "invites": PEOPLE_INVITES,
            "more": PEOPLE_MORE,
            "tree": PEOPLE_TREE.iter().map(|(id, label, children)| json!([id, label, children])).collect::<Vec<_>>(),
        }),
        "/apps/ledger.html" => json!({
            "brand": "Ledgerly",
            "tooltip": LEDGER_TOOLTIP,
            "title": "Invoices",
            "nav": LEDGER_NAV,
            "active": LEDGER_NAV[LEDGER_ACTIVE].0,
            "menu": LEDGER_MENU,
            "due": LEDGER_DUE.0,
            "tags": LEDGER_TAGS,
            "chosenTags": &LEDGER_TAGS[..2],
            "customers": LEDGER_CUSTOMERS,
        }),
        "/apps/checkout.html" => json!({
            "item": {"name": CHECKOUT_ITEM.0, "cents": CHECKOUT_ITEM.1},
            "shipping": CHECKOUT_SHIPPING.iter().map(|(id, name, cents)| json!({"id": id, "name": name, "cents": cents}))
                .collect::<Vec<_>>(),
        }),
        "/apps/crm.html" => json!({
            "brand": "Acme CRM",
            "nav": CRM_NAV,
            "columns": CRM_COLUMNS.iter().map(|(key, label)| json!({"key": key, "label": label})).collect::<Vec<_>>(),
            "owners": CRM_OWNERS,
            "tags": CRM_TAGS.iter().map(|(name, shown)| json!({"name": name, "shown": shown})).collect::<Vec<_>>(),
            "customers": CUSTOMERS.iter().map(|(id, name, email, company, status)| json!({
                "id": id, "name": name, "email": email, "company": company, "status": status,
            })).collect::<Vec<_>>(),
        }),
        "/apps/shop.html" => json!({
            "products": PRODUCTS.iter().map(|(id, short, name, cents)| {
                let was = WAS.iter().find(|w| w.0 == *id);
                json!({"id": id, "short": short, "name": name, "cents": cents,
                       "was": was.map(|w| w.1), "wasTag": was.is_some_and(|w| w.2)})
            })
                .collect::<Vec<_>>(),
            "shipping": SHIPPING,
        }),
        _ => Value::Null,
    }
}

/// The antd console: breadcrumb, the region Select (value, label, disabled), tabs, members (key, name, email, role)
/// shown `CONSOLE_PAGE_SIZE` to a page, the permission tree (key, title, children; the first open at load) and the
/// rating at load (of 5).
const CONSOLE_CRUMBS: &[&str] = &["Home", "Acme", "Team"];
const CONSOLE_REGION_PLACEHOLDER: &str = "Pick a region";
const CONSOLE_REGIONS: &[(&str, &str, bool)] =
    &[("eu", "Europe", false), ("asia", "Asia", false), ("sa", "South America", true), ("na", "North America", false)];
const CONSOLE_TABS: &[&str] = &["Members", "Invites", "Audit log"];
const CONSOLE_MEMBERS: &[(&str, &str, &str, &str)] = &[
    ("u1", "Ada Lovelace", "ada@acme.test", "Owner"),
    ("u2", "Grace Hopper", "grace@acme.test", "Admin"),
    ("u3", "Alan Turing", "alan@acme.test", "Member"),
    ("u4", "Edsger Dijkstra", "edsger@acme.test", "Member"),
    ("u5", "Barbara Liskov", "barbara@acme.test", "Viewer"),
];
const CONSOLE_PAGE_SIZE: usize = 3;
type Permission = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
const CONSOLE_PERMISSIONS: &[Permission] = &[
    ("projects", "Projects", &[("projects.read", "Read projects"), ("projects.write", "Edit projects")]),
    ("billing", "Billing", &[("billing.view", "View invoices")]),
];
const CONSOLE_RATING: u32 = 3;

/// The Element Plus people admin: its menu (key, label; the one at `PEOPLE_ACTIVE` open at load), the region Select
/// (value, label), the rating at load (of 5), the density radio buttons (the second chosen at load) and the people
/// (id, name). Notifications are on at load.
const PEOPLE_MENU: &[(&str, &str)] = &[("overview", "Overview"), ("people", "People"), ("billing", "Billing")];
const PEOPLE_ACTIVE: usize = 1;
const PEOPLE_REGION_PLACEHOLDER: &str = "Choose a region";
const PEOPLE_REGIONS: &[(&str, &str)] = &[("eu", "Europe"), ("us", "Americas"), ("ap", "Asia Pacific")];
const PEOPLE_RATING: u32 = 3;
const PEOPLE_SIZES: &[&str] = &["Large", "Medium", "Small"];
/// The teams the "Add person" dialog's Select offers.
const PEOPLE_TEAMS: &[&str] = &["Design", "Engineering", "Support"];
const PEOPLE: &[(&str, &str)] = &[("p1", "Ada Lovelace"), ("p2", "Grace Hopper"), ("p3", "Alan Turing")];
/// The invitations table (id, email, team, status): a click on a row opens it.
const PEOPLE_INVITES: &[(&str, &str, &str, &str)] = &[
    ("i1", "edsger@paths.test", "Engineering", "Pending"),
    ("i2", "barbara@liskov.test", "Design", "Accepted"),
    ("i3", "donald@knuth.test", "Support", "Pending"),
];
/// A node of a tree fixture: id, label, and its children as (id, label).
type TreeNode = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
/// The Teams tree; all closed at load, a team without members a leaf.
const PEOPLE_TREE: &[TreeNode] = &[
    ("t-eng", "Engineering", &[("t-platform", "Platform"), ("t-web", "Web")]),
    ("t-design", "Design", &[]),
    ("t-support", "Support", &[("t-tier1", "Tier 1")]),
];
/// The "More" dropdown's items (command, label); the last one is set off by a divider.
const PEOPLE_MORE: &[(&str, &str)] = &[("export", "Export list"), ("archive", "Archive all")];

/// The Mantine invoicing app: its sidebar (key, label, disabled; the one at `LEDGER_ACTIVE` open at load), the open
/// tooltip of the search button, the account menu's items and the due date.
const LEDGER_NAV: &[(&str, &str, bool)] = &[
    ("dashboard", "Dashboard", false),
    ("invoices", "Invoices", false),
    ("payments", "Payments", false),
    ("settings", "Settings", true),
];
const LEDGER_ACTIVE: usize = 1;
const LEDGER_TOOLTIP: &str = "Search everything";
const LEDGER_MENU: &[&str] = &["Profile", "Billing", "Sign out"];
/// The invoice's tags to choose from; the first two are chosen at load.
const LEDGER_TAGS: &[&str] = &["Urgent", "Paid", "Overdue"];
/// The customers the new-invoice dialog's Select offers.
const LEDGER_CUSTOMERS: &[&str] = &["Northwind Traders", "Globex", "Initech"];
/// The due date at load, as the date input's value and as it draws it.
const LEDGER_DUE: (&str, &str) = ("2026-03-14", "March 14, 2026");

/// The HTML shell of the app page at `path`, or `None` when there is no such app: the data as JSON (`<` escaped so
/// no text can close the script element), a root element and the bundle.
pub(crate) fn shell(path: &str) -> Option<String> {
    let app = APPS.iter().find(|a| a.path == path)?;
    let data = data(path).to_string().replace('<', "\\u003c");
    Some(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{}</title>\
         <link rel=\"stylesheet\" href=\"/apps/apps.css\"></head>\n<body>\n<div id=\"root\"></div>\n\
         <script type=\"application/json\" id=\"app-data\">{data}</script>\n<script src=\"{}\"></script>\n</body>\n</html>\n",
        app.title, app.script
    ))
}

fn op(role: &'static str, name: impl Into<String>, records: impl Into<String>) -> AppOperable {
    AppOperable { role, name: name.into(), records: Some(records.into()) }
}

/// The folders shown at load: every top-level folder and the children of open ones.
fn visible_folders() -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut shown_depth = 0; // folders deeper than this are inside a closed parent
    for &(depth, name, open) in FOLDERS {
        if depth > shown_depth {
            continue;
        }
        out.push(name);
        shown_depth = if open { depth + 1 } else { depth };
    }
    out
}

/// The ground truth of the app page at `path` (query ignored), or `None` when it is not an app page.
pub fn app_truth(path: &str) -> Option<AppTruth> {
    let page = path.split('?').next().unwrap_or(path);
    let truth = match page {
        "/apps/tracker.html" => {
            let mut operable: Vec<AppOperable> = VIEWS.iter().map(|v| op("generic", *v, format!("nav:{v}"))).collect();
            operable.push(op("button", "Delete selected", "delete:ask"));
            operable.push(op("button", "Archive all", "archive:ask"));
            for (id, title, status) in ISSUES {
                operable.push(op("generic", *title, format!("open:{id}")));
                operable.push(op("generic", *status, format!("status:{id}")));
            }
            let mut texts = vec!["Opened: none".to_owned()];
            texts.extend(ISSUES.iter().map(|(_, title, _)| (*title).to_owned()));
            AppTruth { operable, texts }
        }
        "/apps/dashboard.html" => {
            let mut operable: Vec<AppOperable> = TABS.iter().map(|t| op("generic", *t, format!("tab:{t}"))).collect();
            operable.extend(CARDS.iter().map(|(title, _)| op("generic", *title, format!("card:{title}"))));
            operable.push(AppOperable { role: "textbox", name: "Name".into(), records: None });
            operable.push(op("button", "Check", "check:"));
            let mut texts = vec![format!("Enter \"{EXPECTED_NAME}\" into the field"), "Selected card: none".into()];
            texts.extend(CARDS.iter().map(|(_, value)| (*value).to_owned()));
            AppTruth { operable, texts }
        }
        "/apps/mail.html" => {
            let mut operable: Vec<AppOperable> =
                visible_folders().into_iter().map(|f| op("generic", f, format!("folder:{f}"))).collect();
            // Each label is an item of a list whose one listener handles them all.
            operable.extend(MAIL_LABELS.iter().map(|l| op("generic", *l, format!("label:{l}"))));
            // A mail row is named by its text: sender, subject, date.
            operable.extend(MAILS.iter().map(|(id, from, subject, date)| {
                op("generic", format!("{from} {subject} {date}"), format!("mail:{id}"))
            }));
            let texts = vec![
                format!("Folder: {}", FOLDERS[0].1),
                format!("Unread: {}", MAILS.len()),
                format!("Flagged: {FLAGGED}"),
                format!("Storage: {STORAGE}"),
                "Open: none".into(),
            ];
            AppTruth { operable, texts }
        }
        "/apps/admin.html" => {
            let mut operable: Vec<AppOperable> =
                CRUMBS.iter().map(|c| op("generic", *c, format!("crumb:{c}"))).collect();
            operable.push(op("generic", "Actions", "menu:toggle"));
            operable.extend(ADMIN_TABS.iter().map(|t| op("generic", *t, format!("tab:{t}"))));
            // A switch is named by its label; clicking it flips the state it had at load.
            operable.extend(TOGGLES.iter().map(|(id, label, on)| {
                op("generic", *label, format!("toggle:{id}:{}", if *on { "off" } else { "on" }))
            }));
            // Each tag's remove icon is an <i> that shows only "×".
            operable.extend(TAGS.iter().map(|t| op("generic", REMOVE_ICON, format!("untag:{t}"))));
            operable.extend(MEMBERS.iter().map(|(name, email, _)| op("generic", *name, format!("member:{email}"))));
            operable.push(op("link", "Help center and docs", "help"));
            // "Delete workspace" is aria-disabled: shown, but not operable.
            let texts = vec![
                "Last action: none".into(),
                "NOTIFICATIONS".into(),
                format!("Plan: {PLAN}"),
                "Only the owner can delete this workspace.".into(),
            ];
            AppTruth { operable, texts }
        }
        "/apps/shop.html" => {
            let mut operable = vec![
                AppOperable { role: "combobox", name: "Search products".into(), records: None },
                op("button", "Checkout", "checkout:open"),
            ];
            for (id, short, name, _) in PRODUCTS {
                // The card opens the product; its buttons do their own thing and stop the click there.
                operable.push(op("generic", *name, format!("view:{id}")));
                operable.push(op("button", "Add to cart", format!("add:{id}")));
                operable.push(op("button", format!("Save {short} for later"), format!("like:{id}")));
            }
            operable.push(AppOperable { role: "textbox", name: "Quantity per item".into(), records: None });
            let mut texts = vec!["Viewing: none".to_owned()];
            texts.extend(PRODUCTS.iter().flat_map(|(_, _, name, cents)| [(*name).to_owned(), money(*cents)]));
            texts.extend(["Your cart is empty".into(), "0 items".into(), "Total: $0.00".into(), SHIPPING.into()]);
            AppTruth { operable, texts }
        }
        "/apps/components.html" => {
            let mut operable = vec![op("button", REFRESH, "members:reload")];
            operable.extend(CONSOLE_NAV.iter().map(|n| op("generic", *n, format!("nav:{n}"))));
            // A switch is the custom element itself, named by its slotted label; clicking flips its state at load.
            operable.extend(CONSOLE_TOGGLES.iter().map(|(id, label, on)| {
                op("switch", *label, format!("toggle:{id}:{}", if *on { "off" } else { "on" }))
            }));
            operable.extend(MEMBERS.iter().map(|(name, email, _)| op("generic", *name, format!("member:{email}"))));
            operable.push(op("button", DANGER.2, "danger:reset"));
            let texts = vec!["Last action: none".into(), DANGER.0.into(), format!("Type \"{}\" to confirm", DANGER.1)];
            AppTruth { operable, texts }
        }
        "/apps/board.html" => {
            // Svelte delegates every onclick to the app's root: no card, pill, heading or menu entry has a listener.
            let mut operable: Vec<AppOperable> =
                BOARD_FILTERS.iter().map(|f| op("generic", *f, format!("filter:{f}"))).collect();
            for (column, tasks) in BOARD {
                // The heading is shown as CSS renders it, uppercase, with the count the app puts after the name.
                let heading = format!("{} ({})", column.to_uppercase(), tasks.len());
                operable.push(op("generic", heading, format!("column:{column}")));
                for (id, title, ..) in *tasks {
                    operable.push(op("generic", *title, format!("open:{id}")));
                    operable.push(op("button", format!("More actions for {id}"), format!("menu:{id}")));
                }
            }
            operable.push(AppOperable { role: "textbox", name: "Task name".into(), records: None });
            operable.push(op("button", "Add task", "add:"));
            operable.push(AppOperable { role: "generic", name: "Board settings".into(), records: None });
            let points = |tasks: &[Task]| tasks.iter().map(|t| t.5).sum::<u32>();
            let done = BOARD.last().map_or(0, |(_, tasks)| points(tasks));
            let total: u32 = BOARD.iter().map(|(_, tasks)| points(tasks)).sum();
            let mut texts = vec![
                format!("Story points: {done} of {total} done"),
                "Opened: none".into(),
                format!("Add a task named {BOARD_TASK} to {}", BOARD[0].0),
            ];
            texts.extend(BOARD.iter().map(|(name, tasks)| format!("{} ({})", name.to_uppercase(), tasks.len())));
            texts.extend(BOARD.iter().flat_map(|(_, tasks)| tasks.iter().map(|t| t.1.to_owned())));
            AppTruth { operable, texts }
        }
        "/apps/account.html" => {
            // The user menu opens on pointerdown; the tabs activate on mousedown; the select is only opened here
            // (while it is open the page takes no pointer events, so it is not clicked among the others).
            let mut operable = vec![op("button", format!("{ACCOUNT_USER} ▾"), "menu:open")];
            operable.extend(ACCOUNT_TABS.iter().map(|t| op("tab", *t, format!("tab:{t}"))));
            operable.push(AppOperable { role: "textbox", name: "Display name".into(), records: None });
            operable.push(AppOperable { role: "combobox", name: "Language".into(), records: None });
            operable.push(op("switch", "Public profile", "public:on"));
            // Clicked last first: each click chooses another theme than the one chosen (the first, at load).
            operable.extend(ACCOUNT_THEMES.iter().map(|t| op("radio", *t, format!("theme:{t}"))));
            operable.push(op("checkbox", ACCOUNT_SUMMARY, "summary:on"));
            operable.push(op("button", "Save changes", "save"));
            operable.extend(FAQ.iter().map(|(id, q, _)| op("button", *q, format!("faq:{id}"))));
            let texts = vec!["Nothing saved yet".into(), "Account settings".into()];
            AppTruth { operable, texts }
        }
        "/apps/console.html" => {
            // antd draws each of these inside a wrapper that takes clicks too (the tab's, the pagination item's, the
            // rating star's `<li>`, the Select's box); the wrapper is not an operable of its own. The Select only
            // opens its list (which then covers the tabs), so it is not clicked among the others; "Previous Page" is
            // disabled on the first page, and "2" is only reached (the clicks run from the end: "Next Page" has
            // shown page 2 by then, and clicking the current page changes nothing).
            let mut operable =
                vec![AppOperable { role: "combobox", name: CONSOLE_REGION_PLACEHOLDER.into(), records: None }];
            operable.push(op("button", "Invite member", "invite"));
            operable.extend(CONSOLE_TABS.iter().map(|t| op("tab", *t, format!("tab:{t}"))));
            // Clicked from the end: every row is selected by the time "Select all" is, which then clears them.
            operable.push(op("checkbox", "Select all", "select:all:false"));
            for (i, (key, ..)) in CONSOLE_MEMBERS[..CONSOLE_PAGE_SIZE].iter().enumerate() {
                operable.push(op("checkbox", format!("Select row {}", i + 1), format!("select:{key}:true")));
                operable.push(op("generic", "Edit", format!("edit:{key}")));
            }
            operable.push(op("generic", "1", "page:1"));
            operable.push(AppOperable { role: "generic", name: "2".into(), records: None });
            operable.push(op("button", "right", "page:2"));
            let (open, rest) = CONSOLE_PERMISSIONS.split_first().expect("permissions");
            let mut shown = vec![(open.0, open.1)];
            shown.extend(open.2.iter().copied());
            shown.extend(rest.iter().map(|(key, title, _)| (*key, *title)));
            for (key, title) in shown {
                operable.push(op("treeitem", title, format!("open:{key}")));
                // Checking both of its children has checked "Projects" by the time it is clicked: it clears.
                let checked = key != open.0;
                operable.push(op("checkbox", title, format!("perm:{key}:{checked}")));
            }
            operable.extend((1..=5).map(|n| op("radio", "star", format!("rate:{n}"))));
            let texts =
                vec!["Last action: none".into(), "Team console".into(), format!("{} of the team", CONSOLE_TABS[0])];
            AppTruth { operable, texts }
        }
        "/apps/people.html" => {
            // Element Plus draws the Select's combobox invisible behind its placeholder and the Rate as a slider: a
            // click on either only opens or moves it, so they are not clicked among the others; nor are "Delete"
            // (its confirmation covers the page) and "Add person" (its dialog does). The density chosen at load is
            // clicked after "Small", so each click changes it.
            let mut operable: Vec<AppOperable> =
                PEOPLE_MENU.iter().map(|(key, label)| op("menuitem", *label, format!("menu:{key}"))).collect();
            operable.push(AppOperable { role: "combobox", name: "Region".into(), records: None });
            operable.push(op("switch", "Notifications", "notify:false"));
            operable.push(AppOperable { role: "slider", name: "Satisfaction".into(), records: None });
            operable.extend(PEOPLE_SIZES.iter().map(|s| op("radio", *s, format!("size:{s}"))));
            for _ in PEOPLE {
                operable.push(AppOperable { role: "button", name: "Delete".into(), records: None });
            }
            operable.push(AppOperable { role: "button", name: "Add person".into(), records: None });
            // The Teams tree's nodes (a click on a team with members opens it too).
            operable.extend(PEOPLE_TREE.iter().map(|(id, label, _)| op("treeitem", *label, format!("team-node:{id}"))));
            // A click on an invitation's row opens it (named by its cells: the email first); "More" opens its menu.
            operable.extend(PEOPLE_INVITES.iter().map(|(id, email, ..)| op("generic", *email, format!("invite:{id}"))));
            operable.push(AppOperable { role: "button", name: "More".into(), records: None });
            let texts =
                vec!["Last action: none".into(), "People admin".into(), PEOPLE[0].1.into(), PEOPLE_INVITES[1].1.into()];
            AppTruth { operable, texts }
        }
        "/apps/ledger.html" => {
            // The disabled sidebar entry takes no clicks; "Account" only opens its menu.
            let mut operable = vec![op("button", "Search", "search")];
            for (key, label, disabled) in LEDGER_NAV {
                operable.push(if *disabled {
                    AppOperable { role: "link", name: (*label).into(), records: None }
                } else {
                    op("link", *label, format!("nav:{key}"))
                });
            }
            // The date input and the tags' combobox only open their popups (a chosen tag's remove button is named
            // only by its icon: the MCP test clicks it).
            operable.push(AppOperable { role: "button", name: "Due date".into(), records: None });
            operable.push(AppOperable { role: "combobox", name: "Tags".into(), records: None });
            operable.push(op("button", "New invoice", "invoice:new"));
            operable.push(AppOperable { role: "button", name: "Account".into(), records: None });
            let texts = vec!["Last action: none".into(), LEDGER_TOOLTIP.into(), "Ledgerly".into(), LEDGER_DUE.1.into()];
            AppTruth { operable, texts }
        }
        "/apps/crm.html" => {
            // Every click is handled by a jQuery listener on the document. The banner is first in the page.
            let mut operable = vec![op("link", "Learn more", "cookie:more"), op("button", "Accept", "cookie:accept")];
            operable.push(op("link", "Acme CRM", "nav:home"));
            operable.extend(CRM_NAV.iter().map(|n| op("link", *n, format!("nav:{n}"))));
            operable.push(AppOperable { role: "searchbox", name: "Search customers".into(), records: None });
            operable.push(AppOperable { role: "textbox", name: "Company".into(), records: None });
            operable.push(op("button", "Export CSV", "export"));
            // Select2: the owner combobox is named by its placeholder (its `aria-labelledby` is the drawn choice); the
            // tags combobox has no name; each chosen tag's chip has a remove button, and the tags have a search field.
            operable.push(AppOperable { role: "combobox", name: "Any owner".into(), records: None });
            operable.push(AppOperable { role: "combobox", name: String::new(), records: None });
            for _ in CRM_TAGS.iter().filter(|(_, shown)| *shown) {
                operable.push(AppOperable { role: "button", name: "Remove item".into(), records: None });
            }
            operable.push(AppOperable { role: "searchbox", name: "Search".into(), records: None });
            operable.push(op("checkbox", "Select all", "check:all:true"));
            // A sortable header shows its label and a caret glyph.
            operable.extend(CRM_COLUMNS.iter().map(|(key, label)| op("generic", *label, format!("sort:{key}"))));
            for (id, name, ..) in &CUSTOMERS[..CRM_PER_PAGE] {
                // The row's checkbox has no label, and the menu button is named by its glyph (`title` is only its
                // description): only their rows tell them apart.
                operable.push(op("checkbox", "", format!("check:{id}")));
                operable.push(op("link", *name, format!("open:{id}")));
                operable.push(op("button", "⋮", format!("menu:{id}")));
            }
            // "Previous" is disabled on the first page (no pointer events); the page numbers and "Next" are links.
            let pages = CUSTOMERS.len().div_ceil(CRM_PER_PAGE);
            operable.extend((1..=pages).map(|p| op("link", p.to_string(), format!("page:{p}"))));
            operable.push(op("link", "Next", "page:next"));
            operable.push(AppOperable { role: "spinbutton", name: "Rows per page".into(), records: None });
            let texts = vec![
                "We use cookies to improve your experience.".into(),
                "Selected: none".into(),
                format!("Showing 1 to {CRM_PER_PAGE} of {} entries", CUSTOMERS.len()),
            ];
            AppTruth { operable, texts }
        }
        "/apps/chat.html" => {
            // Channel rows and author names are spans and divs handled by React's root listener; the list is
            // virtualised, so only the operables of the newest messages are declared (the rows above them depend on
            // how far the list renders ahead). Each message's reply button is transparent until its row is hovered.
            let mut operable: Vec<AppOperable> =
                CHAT_CHANNELS.iter().map(|(c, _)| op("generic", format!("# {c}"), format!("channel:{c}"))).collect();
            operable.push(op("link", "release notes", "topic"));
            for (id, author, time, _, reactions, replies) in &CHAT_LAST[1..] {
                operable.push(op("generic", member(author), format!("profile:{author}")));
                operable.push(op("button", format!("Reply to {} at {time}", member(author)), format!("reply:{id}")));
                for (emoji, count, _) in *reactions {
                    operable.push(op("button", format!("{emoji} {count}"), format!("react:{id}:{emoji}")));
                }
                if *replies > 0 {
                    let label = if *replies == 1 { "reply" } else { "replies" };
                    operable.push(op("generic", format!("{replies} {label}"), format!("thread:{id}")));
                }
            }
            operable.push(AppOperable { role: "textbox", name: "Message #general".into(), records: None });
            let texts = vec![
                "Topic: ship the release notes by Friday".into(),
                "Last action: none".into(),
                "Deploy is blocked on api-7 until the migration lands.".into(),
                "Lunch at 12:30 — the usual place?".into(),
            ];
            AppTruth { operable, texts }
        }
        "/apps/checkout.html" => {
            // The fields format what is typed; the radios are hidden inside their label cards (the card takes the
            // click). The first option is chosen at load, so only the other one records a change.
            let field = |name: &str| AppOperable { role: "textbox", name: name.into(), records: None };
            let mut operable = vec![field("Email"), field("Phone (optional)")];
            operable.extend(
                CHECKOUT_SHIPPING
                    .iter()
                    .skip(1)
                    .map(|(id, name, cents)| op("radio", format!("{name} {}", money(*cents)), format!("ship:{id}"))),
            );
            // A date field: each tool gives it a role of its own (`date`, `textbox`, `Date`); matched by its name.
            operable.push(AppOperable { role: "generic", name: "Delivery date".into(), records: None });
            operable.push(op("switch", "Email me order updates", "updates:on"));
            operable.extend([field("Name on card"), field("Card number"), field("Expiry"), field("Security code")]);
            let total = money(CHECKOUT_ITEM.1 + CHECKOUT_SHIPPING[0].2);
            operable.push(op("button", format!("Pay {total}"), "invalid:email,card,expiry,cvc"));
            operable.push(op("button", "Fewer", "qty:-"));
            operable.push(op("button", "More", "qty:+"));
            let texts = vec!["Not paid yet".into(), format!("Total: {total}"), CHECKOUT_ITEM.0.into()];
            AppTruth { operable, texts }
        }
        "/apps/delegated.html" => {
            let sections = ["Profile", "Notifications", "Billing", "Security"];
            let results = ["Quarterly report 2026", "Team offsite agenda", "Budget forecast"];
            let devices = [("Work laptop", "laptop"), ("Phone", "phone"), ("Old tablet", "tablet")];
            let mut operable: Vec<AppOperable> =
                sections.iter().map(|s| op("generic", *s, format!("section:{s}"))).collect();
            operable.extend(results.iter().map(|r| op("generic", *r, format!("result:{r}"))));
            operable.extend(devices.iter().map(|(name, id)| op("generic", *name, format!("device:{id}"))));
            let texts = vec!["Section: Profile".into(), "Last action: none".into(), "PDF, 2 MB, edited Monday".into()];
            AppTruth { operable, texts }
        }
        _ => return None,
    };
    Some(truth)
}
