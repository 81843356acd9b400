//! The loopback fixture site: two HTTP servers on ephemeral loopback ports (two different sites, so an iframe of
//! the second one is a cross-origin OOPIF) serving deterministic pages for every fixture category of BRIEF §10.
//! The pages are embedded in the binary; nothing is read from disk at run time.

mod apps;
mod cut;
mod generated;
mod operable;
mod vision;

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Multipart, Query, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use apps::{AppOperable, AppTruth, app_truth};
pub use generated::{BenchElement, BenchManifest, MAX_ELEMENTS, generate as generate_elements_page};
pub use operable::operable_elements;
pub use vision::{VISION_FONT, VisionAnswer, VisionChallenge};

/// A page of the fixture site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixturePage {
    /// Path (with query where the page needs one) on either origin, e.g. `/form.html`.
    pub path: &'static str,
    /// The BRIEF §10 category it covers, e.g. `overlay`.
    pub category: &'static str,
    /// One line saying what it is for.
    pub description: &'static str,
    /// A stable text that is visible on the page once it has loaded.
    pub marker: &'static str,
}

/// A file the `/upload` endpoint received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedFile {
    /// The multipart field name (`document` for the upload page's form).
    pub field: String,
    /// The file name the browser sent.
    pub file_name: String,
    /// The content type the browser sent, if any.
    pub content_type: Option<String>,
    /// Size in bytes.
    pub size: usize,
    /// Lower-case hex SHA-256 of the content.
    pub sha256: String,
    /// The content itself.
    pub bytes: Vec<u8>,
}

const PAGES: &[FixturePage] = &[
    FixturePage {
        path: "/index.html",
        category: "index",
        description: "Links to every fixture page",
        marker: "browserd fixture site",
    },
    FixturePage {
        path: "/duplicates.html",
        category: "duplicates",
        description: "Same-name Delete buttons in different sections and a link and a button both named Settings",
        marker: "Deleted: none",
    },
    FixturePage {
        path: "/overlay.html",
        category: "overlay",
        description: "A Subscribe button covered by a cookie-consent overlay with its own Accept button",
        marker: "Clicked: none",
    },
    FixturePage {
        path: "/cookie-bar.html",
        category: "overlay",
        description: "A Read more button in view but under a cookie bar fixed at the bottom of a page that scrolls",
        marker: "Clicked: none",
    },
    FixturePage {
        path: "/search-later.html",
        category: "effects",
        description: "A Search button whose answer renders after the next frame, a spinner first, as a React transition renders",
        marker: "Results: none",
    },
    FixturePage {
        path: "/menu-fade.html",
        category: "popup",
        description: "A sort menu drawn as MUI draws its menus (an invisible backdrop over the page that stays while the list fades out) and an account menu drawn as Mantine draws its (the fade begins frames after the button says closed)",
        marker: "Sorted by: Newest",
    },
    FixturePage {
        path: "/apps/bootstrap-orders.html",
        category: "popup",
        description: "A server-rendered Bootstrap 5 page (Bootstrap's own JS and CSS): a navbar dropdown, an orders table whose Delete buttons open one modal by data attributes (the backdrop fades in before the dialog shows, and out after it has gone), an accordion",
        marker: "No order deleted",
    },
    FixturePage {
        path: "/chips.html",
        category: "clickables",
        description: "Chips drawn as MUI draws a Chip with onDelete: each an aria-hidden delete icon a document listener serves",
        marker: "Topics: React, Vue, Svelte",
    },
    FixturePage {
        path: "/rating.html",
        category: "clickables",
        description: "A rating drawn as MUI draws one: a pointer <span> around a label and a visually hidden radio per star",
        marker: "Rating: 2 Stars",
    },
    FixturePage {
        path: "/badges.html",
        category: "clickables",
        description: "Counts, separators and step numbers drawn as MUI draws them, aria-hidden: a Badge on folder links and a button, a Breadcrumbs, a Stepper's number",
        marker: "Opened: none",
    },
    FixturePage {
        path: "/tag-select.html",
        category: "clickables",
        description: "A multiple Select drawn as Ant Design draws it: each chosen tag's remove icon an aria-hidden span with a pointer, a document listener",
        marker: "Colours: Red, Blue",
    },
    FixturePage {
        path: "/checklist.html",
        category: "clickables",
        description: "Checkboxes drawn by CSS (a 0×0 transparent input inside each label, a span draws the box) and a \"Select all\" that is indeterminate while some items are checked",
        marker: "Packed: 1 of 3",
    },
    FixturePage {
        path: "/calendar.html",
        category: "table",
        description: "A month drawn as jQuery UI's datepicker draws it: weeks of day links, the days before the 1st as empty cells",
        marker: "Chosen: none",
    },
    FixturePage {
        path: "/sortable.html",
        category: "table",
        description: "Sortable column headers as DataTables 2 draws them: the header cell takes the click and holds a sort icon button named by aria-label",
        marker: "Sorted by: none",
    },
    FixturePage {
        path: "/form.html",
        category: "form",
        description: "React-style controlled form in vanilla JS: assigning .value from script is ignored",
        marker: "Not submitted",
    },
    FixturePage {
        path: "/contenteditable.html",
        category: "contenteditable",
        description: "A contenteditable editor and a mirror of its text",
        marker: "Mirror:",
    },
    FixturePage {
        path: "/ime.html",
        category: "ime",
        description: "An input that records composition events (Chinese IME input)",
        marker: "Value: (empty)",
    },
    FixturePage {
        path: "/iframes.html",
        category: "iframes",
        description: "A same-origin iframe and a cross-site iframe (OOPIF) of frame-inner.html",
        marker: "Outer clicks: 0",
    },
    FixturePage {
        path: "/frame-inner.html",
        category: "iframes",
        description: "The page inside the iframes: a button, an input and a click counter",
        marker: "Inner clicks: 0",
    },
    FixturePage {
        path: "/shadow.html",
        category: "shadow",
        description: "A custom element with an open shadow root holding a button, an input and a nested shadow root",
        marker: "Shadow clicks: none",
    },
    FixturePage {
        path: "/virtual-list.html",
        category: "virtual-list",
        description: "A 10000-row virtual list: only visible rows exist, more render on scroll",
        marker: "Selected: none",
    },
    FixturePage {
        path: "/large-table.html",
        category: "large-table",
        description: "A 1000-row table with a button per row, read by window",
        marker: "Viewing: none",
    },
    FixturePage {
        path: "/long-list.html",
        category: "long-list",
        description: "A plain list of 1000 items",
        marker: "Item 1000",
    },
    FixturePage {
        path: "/canvas.html",
        category: "canvas",
        description: "A canvas that records click coordinates and draws a marker",
        marker: "Clicks: 0, last: none",
    },
    FixturePage {
        path: "/dialogs.html",
        category: "dialogs",
        description: "Buttons that open alert, confirm and prompt and write the result",
        marker: "Dialog result: none",
    },
    FixturePage {
        path: "/popup.html",
        category: "popup",
        description: "A target=_blank link and a window.open button",
        marker: "Opened: none",
    },
    FixturePage {
        path: "/popup-target.html",
        category: "popup",
        description: "The page the popups open",
        marker: "Popup target",
    },
    FixturePage {
        path: "/upload.html",
        category: "upload",
        description: "A file input and a form that POSTs multipart to /upload",
        marker: "Chosen file: none",
    },
    FixturePage {
        path: "/download.html",
        category: "download",
        description: "A link to /download/report.csv served as an attachment",
        marker: "Download report.csv",
    },
    FixturePage {
        path: "/toast.html",
        category: "toast",
        description: "A Save button that shows a toast in an aria-live region for 1.5 s",
        marker: "Saves: 0",
    },
    FixturePage {
        path: "/slow.html?delay=1500",
        category: "slow",
        description: "The server delays the response by the delay query parameter (ms, default 1500)",
        marker: "Slow page loaded after",
    },
    FixturePage {
        path: "/never-idle.html",
        category: "never-idle",
        description: "Polls every 200 ms forever and keeps a long-poll request open",
        marker: "Long poll: pending",
    },
    FixturePage {
        path: "/clickables.html",
        category: "clickables",
        description: "Operable elements without ARIA roles, a custom tree and a menu button",
        marker: "Activated: none",
    },
    FixturePage {
        path: "/apps/tracker.html",
        category: "app",
        description: "Issue tracker (React): sidebar of <a> without href, 20 issue rows with delegated title links and status chips, a confirmation popup",
        marker: "Opened: none",
    },
    FixturePage {
        path: "/apps/dashboard.html",
        category: "app",
        description: "Dashboard (React): clickable cards, custom div tabs, an instruction with inline emphasis and its field",
        marker: "Selected card: none",
    },
    FixturePage {
        path: "/apps/mail.html",
        category: "app",
        description: "Mail (Vue): a folder tree of nested lists with toggles, clickable mail rows, a HUD of adjacent status divs",
        marker: "Open: none",
    },
    FixturePage {
        path: "/apps/admin.html",
        category: "app",
        description: "Workspace settings (Vue): tabs and a breadcrumb handled on their parent, a teleported menu, hidden-checkbox switches, icon chips, clickable table rows",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/shop.html",
        category: "app",
        description: "Shop (React): clickable cards holding buttons, a portal combobox, svg-titled icon buttons, a sticky footer, an inert-making modal",
        marker: "Viewing: none",
    },
    FixturePage {
        path: "/apps/components.html",
        category: "app",
        description: "Settings console (Lit web components, open shadow roots): nav items handled on the host via composedPath, host-element switches, a shadow-DOM table two roots deep, slotted card content split across the boundary, an icon button named on its host",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/board.html",
        category: "app",
        description: "Sprint board (Svelte 5): every click delegated to the root, task cards holding a menu button, uppercase column headings with an inline count, a menu with a transition closed by a window listener, a toast",
        marker: "Opened: none",
    },
    FixturePage {
        path: "/apps/crm.html",
        category: "app",
        description: "Customers of a CRM (jQuery 3.7.1, every click on a document listener): href=\"#\" links, sortable headers with caret glyphs, nameless row checkboxes, title-only icon buttons, a row menu appended to <body>, pagination with a disabled Previous, a fixed cookie banner",
        marker: "Selected: none",
    },
    FixturePage {
        path: "/apps/account.html",
        category: "app",
        description: "Account settings (React 19 + Radix UI primitives): a user menu that opens on pointerdown and takes pointer events from the page, tabs that activate on mousedown, a Select in a portal, a Switch, an Accordion, a Dialog that hides the rest",
        marker: "Nothing saved yet",
    },
    FixturePage {
        path: "/apps/chat.html",
        category: "app",
        description: "Team chat (React 19 + @tanstack/react-virtual): a virtualised message list that opens at its newest rows, channel rows with unread badges, author names and reply counts as pointer spans, reaction chips, reply buttons transparent until hovered, a contenteditable composer with a CSS ::before placeholder, a mention picker",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/checkout.html",
        category: "app",
        description: "Checkout (React 19): controlled fields that format what is typed (card number in groups of four, expiry as MM / YY, phone as (555) 123-4567), a digits-only security code, radio cards whose radio is hidden, inline validation errors, a quantity stepper, a pay button naming the total",
        marker: "Not paid yet",
    },
    FixturePage {
        path: "/apps/console.html",
        category: "app",
        description: "Team console (Ant Design 6 on React 19): a Select whose unnamed input sits in a clickable box beside its placeholder and whose open list is drawn twice (a 0×0 accessible listbox, the options a user clicks), tabs inside clickable wrappers, a table with row selection and a pagination of focusable <li>s around <a>s without href, a checkable tree whose switchers are icons named caret-down, a rating of radios drawn as two star icons",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/people.html",
        category: "app",
        description: "People admin (Element Plus 2 on Vue 3): a side menu whose open entry is marked only by its class, a Select whose combobox is invisible behind its placeholder, a Switch whose form label points at its 0×0 input while the drawn switch takes the click, a Rate drawn as a slider of stars, radio buttons, a Dialog and a delete confirmation that fade out before they are removed",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/ledger.html",
        category: "app",
        description: "Invoices (Mantine 9 on React 19): an AppShell whose header and sidebar are fixed-position landmarks, nav links whose open entry is marked only by data-active and whose disabled one only by pointer-events: none, a tooltip shown open that Floating UI makes focusable, a date input (a button named by its label, showing the date), a multiple select whose input takes no pointer events and whose chosen tags have aria-hidden remove buttons, an account menu that fades out before it is removed",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/apps/delegated.html",
        category: "app",
        description: "Settings (plain JS, jQuery-style document listener): sidebar items, result links, table rows",
        marker: "Last action: none",
    },
    FixturePage {
        path: "/gen/elements?n=100",
        category: "generated",
        description: "A realistic generated page with about 100 elements",
        marker: "Generated page (100 elements)",
    },
    FixturePage {
        path: "/gen/elements?n=1000",
        category: "generated",
        description: "A realistic generated page with about 1000 elements",
        marker: "Generated page (1000 elements)",
    },
    FixturePage {
        path: "/gen/elements?n=5000",
        category: "generated",
        description: "A realistic generated page with about 5000 elements",
        marker: "Generated page (5000 elements)",
    },
];

/// Static files embedded at build time, by path. Pages here but not in [`PAGES`] serve one test each and are kept out
/// of the index and the benchmarks: `/hostile.html`, `/hostile-actions.html` and its cross-site `/hostile-frame.html`
/// (pages whose scripts lie to anything running in their world), `/transient-cover.html`; the site-policy pages
/// `/policy-frame.html` (an allowed page with a frame of the other site, `/policy-inner.html`: a secret, an injected
/// instruction and a "Transfer everything" button that records `partner:transfer`), `/policy-redirect.html` (links to
/// the other site's `/policy-landing.html`, one through `/redirect`), `/delete-account.html` (a "Delete account"
/// button that records `account:delete`), `/twin-buttons.html` (two "Remove card" buttons nothing tells apart, which
/// record `card:remove:first` and `card:remove:second`), `/transfer-form.html` (a form headed "Transfer money" whose
/// submit button says only "Continue", recording `transfer:submit`, next to a search form recording `search:submit`),
/// `/scheme-popup.html` (buttons whose popups go to `data:` and `chrome:`), `/broken-download.html` (a link to
/// `/download/broken.csv`, whose connection the server cuts mid-file) and `/injection.html` (a title and text
/// that try to pass for browserd's own lines), `/diagnose.html` (what a leaky log would pick up: it logs its URL, its
/// text and what is typed to the console), `/server-save.html` (a Save and a Sync button that send the form to
/// `POST /api/save?delay=` and show the server's answer only once it replied, after 300 ms and 6 s; the server records
/// `save:weekly`, `sync:weekly` when it answers) and `/server-save-frame.html` (that form in a frame of the other site,
/// an out-of-process iframe). A page names the other site as `{{OTHER_ORIGIN}}`.
const STATIC: &[(&str, &str)] = &[
    ("/style.css", include_str!("../fixtures/style.css")),
    ("/duplicates.html", include_str!("../fixtures/duplicates.html")),
    ("/overlay.html", include_str!("../fixtures/overlay.html")),
    ("/cookie-bar.html", include_str!("../fixtures/cookie-bar.html")),
    ("/search-later.html", include_str!("../fixtures/search-later.html")),
    ("/menu-fade.html", include_str!("../fixtures/menu-fade.html")),
    ("/chips.html", include_str!("../fixtures/chips.html")),
    ("/rating.html", include_str!("../fixtures/rating.html")),
    ("/badges.html", include_str!("../fixtures/badges.html")),
    ("/tag-select.html", include_str!("../fixtures/tag-select.html")),
    ("/checklist.html", include_str!("../fixtures/checklist.html")),
    ("/calendar.html", include_str!("../fixtures/calendar.html")),
    ("/sortable.html", include_str!("../fixtures/sortable.html")),
    ("/form.html", include_str!("../fixtures/form.html")),
    ("/contenteditable.html", include_str!("../fixtures/contenteditable.html")),
    ("/ime.html", include_str!("../fixtures/ime.html")),
    ("/iframes.html", include_str!("../fixtures/iframes.html")),
    ("/frame-inner.html", include_str!("../fixtures/frame-inner.html")),
    ("/shadow.html", include_str!("../fixtures/shadow.html")),
    ("/virtual-list.html", include_str!("../fixtures/virtual-list.html")),
    ("/large-table.html", include_str!("../fixtures/large-table.html")),
    ("/canvas.html", include_str!("../fixtures/canvas.html")),
    ("/dialogs.html", include_str!("../fixtures/dialogs.html")),
    ("/popup.html", include_str!("../fixtures/popup.html")),
    ("/popup-target.html", include_str!("../fixtures/popup-target.html")),
    ("/upload.html", include_str!("../fixtures/upload.html")),
    ("/download.html", include_str!("../fixtures/download.html")),
    ("/toast.html", include_str!("../fixtures/toast.html")),
    ("/never-idle.html", include_str!("../fixtures/never-idle.html")),
    ("/clickables.html", include_str!("../fixtures/clickables.html")),
    ("/hostile.html", include_str!("../fixtures/hostile.html")),
    ("/hostile-actions.html", include_str!("../fixtures/hostile-actions.html")),
    ("/hostile-frame.html", include_str!("../fixtures/hostile-frame.html")),
    ("/transient-cover.html", include_str!("../fixtures/transient-cover.html")),
    ("/policy-frame.html", include_str!("../fixtures/policy-frame.html")),
    ("/policy-inner.html", include_str!("../fixtures/policy-inner.html")),
    ("/policy-landing.html", include_str!("../fixtures/policy-landing.html")),
    ("/policy-redirect.html", include_str!("../fixtures/policy-redirect.html")),
    ("/delete-account.html", include_str!("../fixtures/delete-account.html")),
    ("/injection.html", include_str!("../fixtures/injection.html")),
    ("/twin-buttons.html", include_str!("../fixtures/twin-buttons.html")),
    ("/transfer-form.html", include_str!("../fixtures/transfer-form.html")),
    ("/scheme-popup.html", include_str!("../fixtures/scheme-popup.html")),
    ("/broken-download.html", include_str!("../fixtures/broken-download.html")),
    ("/diagnose.html", include_str!("../fixtures/diagnose.html")),
    ("/server-save.html", include_str!("../fixtures/server-save.html")),
    ("/server-save-frame.html", include_str!("../fixtures/server-save-frame.html")),
];

const SLOW_PAGE: &str = include_str!("../fixtures/slow.html");
/// The bytes `/download/report.csv` serves (as an attachment): the ground truth of a download's receipt.
pub const REPORT_CSV: &str = "id,item,amount\n1,Widget,12.50\n2,Gadget,7.25\n3,Doohickey,3.00\n";
const DEFAULT_SLOW_MS: u64 = 1500;
const MAX_SLOW_MS: u64 = 60_000;
const MAX_UPLOAD_BYTES: usize = 64 * 1024 * 1024;

/// The running fixture site. Dropping it (or [`FixtureSite::shutdown`]) stops both servers.
#[derive(Debug)]
pub struct FixtureSite {
    primary: SocketAddr,
    second: SocketAddr,
    uploads: Arc<Mutex<Vec<UploadedFile>>>,
    records: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<Vec<String>>>,
    long_polls: Arc<AtomicUsize>,
    vision: vision::Challenges,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

#[derive(Debug, Clone)]
struct SiteState {
    /// This site's own origin, as the request log names it.
    own_origin: String,
    /// Origin of the *other* site, used by pages that embed or link across sites.
    other_origin: String,
    /// Every request either site received, as `<origin><path and query>`.
    requests: Arc<Mutex<Vec<String>>>,
    uploads: Arc<Mutex<Vec<UploadedFile>>>,
    records: Arc<Mutex<Vec<String>>>,
    long_polls: Arc<AtomicUsize>,
    vision: vision::Challenges,
    stop: CancellationToken,
}

impl FixtureSite {
    /// Binds the primary site on `http://127.0.0.1:P1` and the second site on `http://localhost:P2` (both
    /// ephemeral loopback ports) and starts serving. Must be called inside a Tokio runtime.
    pub async fn start() -> std::io::Result<FixtureSite> {
        let primary_listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let second_listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let primary = primary_listener.local_addr()?;
        let second = second_listener.local_addr()?;
        // `localhost` may resolve to ::1 first; serve there too when the machine has IPv6 loopback, so the browser
        // does not depend on falling back to 127.0.0.1.
        let second_v6 = TcpListener::bind((Ipv6Addr::LOCALHOST, second.port())).await.ok();

        let uploads = Arc::new(Mutex::new(Vec::new()));
        let records = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let long_polls = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let vision = vision::Challenges::default();
        let primary_state = SiteState {
            vision: vision.clone(),
            own_origin: format!("http://127.0.0.1:{}", primary.port()),
            other_origin: format!("http://localhost:{}", second.port()),
            requests: requests.clone(),
            uploads: uploads.clone(),
            records: records.clone(),
            long_polls: long_polls.clone(),
            stop: stop.clone(),
        };
        let second_state = SiteState {
            vision: vision.clone(),
            own_origin: format!("http://localhost:{}", second.port()),
            other_origin: format!("http://127.0.0.1:{}", primary.port()),
            requests: requests.clone(),
            uploads: uploads.clone(),
            records: records.clone(),
            long_polls: long_polls.clone(),
            stop: stop.clone(),
        };
        let mut tasks = vec![
            spawn_server(primary_listener, router(primary_state), stop.clone()),
            spawn_server(second_listener, router(second_state.clone()), stop.clone()),
        ];
        if let Some(listener) = second_v6 {
            tasks.push(spawn_server(listener, router(second_state), stop.clone()));
        }
        Ok(FixtureSite { primary, second, uploads, records, requests, long_polls, vision, stop, tasks })
    }

    /// `path` on the primary origin (`http://127.0.0.1:P1`); `path` starts with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.primary.port(), path)
    }

    /// `path` on the second site (`http://localhost:P2`), which is cross-site to the primary origin.
    pub fn cross_origin_url(&self, path: &str) -> String {
        format!("http://localhost:{}{}", self.second.port(), path)
    }

    /// The primary server's socket address.
    pub fn primary_addr(&self) -> SocketAddr {
        self.primary
    }

    /// The second site's socket address (on 127.0.0.1; the site is addressed as `localhost`).
    pub fn cross_origin_addr(&self) -> SocketAddr {
        self.second
    }

    /// Every file the `/upload` endpoint has received so far, oldest first.
    pub fn uploads(&self) -> Vec<UploadedFile> {
        lock(&self.uploads).clone()
    }

    /// What the app pages have recorded (`POST /api/record`: `nav:Inbox`, `open:TRK-101`, ...), oldest first, on
    /// either site.
    pub fn records(&self) -> Vec<String> {
        lock(&self.records).clone()
    }

    /// Waits up to `timeout` for a record equal to `event` (the page sends it without waiting for an answer).
    pub async fn wait_for_record(&self, event: &str, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if lock(&self.records).iter().any(|r| r == event) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every request either site received so far, oldest first, as `<origin><path and query>`
    /// (`http://localhost:P2/policy-landing.html`): what a test checks to prove a page was never requested.
    pub fn requests(&self) -> Vec<String> {
        lock(&self.requests).clone()
    }

    /// The requests that reached the second site (`http://localhost:P2`) for `path` (query included when given).
    pub fn cross_origin_requests(&self, path: &str) -> Vec<String> {
        let prefix = self.cross_origin_url(path);
        lock(&self.requests).iter().filter(|r| r.starts_with(&prefix)).cloned().collect()
    }

    /// The picture checks of `/vision-check.html` with their ground truth (code, dot) and judged answers, oldest
    /// first.
    pub fn vision_challenges(&self) -> Vec<VisionChallenge> {
        self.vision.all()
    }

    /// How many `/api/long-poll` requests are waiting right now (they end only at shutdown).
    pub fn pending_long_polls(&self) -> usize {
        self.long_polls.load(Ordering::SeqCst)
    }

    /// Every fixture page: path, category, description and marker text.
    pub fn pages() -> &'static [FixturePage] {
        PAGES
    }

    /// Stops both servers: pending long-polls and delayed responses end, idle connections close. Waits up to 5 s
    /// for the servers to finish, then aborts them.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        for task in std::mem::take(&mut self.tasks) {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        self.stop.cancel();
        for task in &self.tasks {
            // Graceful shutdown was requested above; abort too so no server outlives the site when dropped.
            task.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn spawn_server(listener: TcpListener, app: Router, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        // An accept-loop error ends the server; the site's owner sees it as connection failures in its test.
        let _ = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await;
    })
}

fn router(state: SiteState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/iframes.html", get(iframes))
        .route("/slow.html", get(slow))
        .route("/long-list.html", get(long_list))
        .route("/gen/elements", get(gen_elements))
        .route("/gen/manifest", get(gen_manifest))
        .route("/upload", post(upload).layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES)))
        .route("/download/report.csv", get(download))
        .route("/download/broken.csv", get(cut::broken_download))
        .route("/scheme-redirect", get(scheme_redirect))
        .route("/api/poll", get(poll))
        .route("/api/record", post(record))
        .route("/api/save", post(save))
        .route("/api/long-poll", get(long_poll))
        .route("/redirect", get(redirect))
        .route("/vision-check.html", get(vision_page))
        .route("/api/vision/new", post(vision_new))
        .route("/api/vision/answer", post(vision_answer))
        .route("/api/vision/results", get(vision_results))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(get(static_file))
        .layer(axum::middleware::from_fn_with_state(state.clone(), log_request))
        .with_state(state)
}

/// Keeps every request in the site's request log before it is served.
async fn log_request(
    State(state): State<SiteState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let target = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    lock(&state.requests).push(format!("{}{target}", state.own_origin));
    next.run(request).await
}

fn html(body: String) -> Response {
    typed(StatusCode::OK, "text/html; charset=utf-8", body)
}

fn typed(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn static_file(State(state): State<SiteState>, uri: Uri) -> Response {
    let path = uri.path();
    if let Some(page) = apps::shell(path) {
        return html(page);
    }
    if let Some((_, content_type, body)) = apps::FILES.iter().find(|(p, _, _)| *p == path) {
        return typed(StatusCode::OK, content_type, (*body).to_owned());
    }
    match STATIC.iter().find(|(p, _)| *p == path) {
        Some((p, body)) if p.ends_with(".css") => typed(StatusCode::OK, "text/css; charset=utf-8", (*body).to_owned()),
        // Pages that embed the other site name it as `{{OTHER_ORIGIN}}`.
        Some((_, body)) => html(body.replace("{{OTHER_ORIGIN}}", &state.other_origin)),
        None => typed(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            format!("404: no fixture page at {path}; see /index.html for the list\n"),
        ),
    }
}

async fn index() -> Response {
    let mut body = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>browserd fixtures</title>\
         <link rel=\"stylesheet\" href=\"/style.css\"></head>\n<body>\n<h1>browserd fixture site</h1>\n<ul>\n",
    );
    for page in PAGES.iter().filter(|p| p.category != "index") {
        body.push_str(&format!(
            "<li><a href=\"{}\">{}</a> ({}): {}</li>\n",
            page.path.replace('&', "&amp;"),
            page.path.trim_start_matches('/'),
            page.category,
            page.description
        ));
    }
    body.push_str("</ul>\n</body>\n</html>\n");
    html(body)
}

async fn vision_page(State(state): State<SiteState>, Query(query): Query<HashMap<String, String>>) -> Response {
    html(vision::page(&state.vision, query.get("spacer").and_then(|s| s.parse().ok()).unwrap_or(0)))
}

async fn vision_new(State(state): State<SiteState>) -> Response {
    typed(StatusCode::OK, "application/json", state.vision.create().to_string())
}

async fn vision_answer(State(state): State<SiteState>, body: String) -> Response {
    let Ok(answer) = serde_json::from_str::<vision::AnswerBody>(&body) else {
        return bad_request("send JSON {id, typed, x, y}\n".to_owned());
    };
    match state.vision.answer(&answer) {
        Some(v) => typed(StatusCode::OK, "application/json", serde_json::json!({"passed": v.passed}).to_string()),
        None => typed(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", format!("no challenge {}\n", answer.id)),
    }
}

async fn vision_results(State(state): State<SiteState>) -> Response {
    typed(StatusCode::OK, "application/json", state.vision.results().to_string())
}

async fn iframes(State(state): State<SiteState>) -> Response {
    let page = STATIC.iter().find(|(p, _)| *p == "/iframes.html").map(|(_, b)| *b).unwrap_or_default();
    html(page.replace("{{OTHER_ORIGIN}}", &state.other_origin))
}

async fn slow(State(state): State<SiteState>, Query(query): Query<HashMap<String, String>>) -> Response {
    let delay = query.get("delay").and_then(|d| d.parse::<u64>().ok()).unwrap_or(DEFAULT_SLOW_MS).min(MAX_SLOW_MS);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(delay)) => {}
        () = state.stop.cancelled() => {
            return shutting_down();
        }
    }
    html(SLOW_PAGE.replace("{{DELAY_MS}}", &delay.to_string()))
}

async fn long_list() -> Response {
    let mut body = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Long list</title>\
         <link rel=\"stylesheet\" href=\"/style.css\"></head>\n<body>\n<h1>Long list</h1>\n<p>1000 plain items.</p>\n<ol id=\"items\">\n",
    );
    for i in 1..=1000 {
        body.push_str(&format!("<li>Item {i}</li>\n"));
    }
    body.push_str("</ol>\n<p><a href=\"#\">Back to top</a></p>\n</body>\n</html>\n");
    html(body)
}

/// The `n` query parameter: 100 when absent (the generator clamps it to [`MAX_ELEMENTS`]); an error message that
/// says how to fix it when it is not a number.
fn requested_n(query: &HashMap<String, String>) -> Result<usize, String> {
    match query.get("n") {
        None => Ok(100),
        Some(n) => n
            .parse::<usize>()
            .map_err(|_| format!("n={n:?} is not a number of elements; use e.g. ?n=1000 (at most {MAX_ELEMENTS})\n")),
    }
}

fn bad_request(message: String) -> Response {
    typed(StatusCode::BAD_REQUEST, "text/plain; charset=utf-8", message)
}

async fn gen_elements(Query(query): Query<HashMap<String, String>>) -> Response {
    match requested_n(&query) {
        Ok(n) => html(generated::generate(n).0),
        Err(message) => bad_request(message),
    }
}

async fn gen_manifest(Query(query): Query<HashMap<String, String>>) -> Response {
    let n = match requested_n(&query) {
        Ok(n) => n,
        Err(message) => return bad_request(message),
    };
    let (_, manifest) = generated::generate(n);
    match serde_json::to_string(&manifest) {
        Ok(json) => typed(StatusCode::OK, "application/json", json),
        Err(e) => typed(StatusCode::INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", format!("manifest: {e}\n")),
    }
}

async fn upload(State(state): State<SiteState>, mut multipart: Multipart) -> Response {
    let mut received = Vec::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => {
                return typed(
                    StatusCode::BAD_REQUEST,
                    "text/plain; charset=utf-8",
                    format!("bad multipart body: {e}; send multipart/form-data with a file field\n"),
                );
            }
        };
        let Some(file_name) = field.file_name().filter(|n| !n.is_empty()).map(str::to_owned) else {
            continue; // a plain text field or an empty file input
        };
        let field_name = field.name().unwrap_or_default().to_owned();
        let content_type = field.content_type().map(str::to_owned);
        let bytes = match field.bytes().await {
            Ok(bytes) => bytes.to_vec(),
            Err(e) => {
                return typed(StatusCode::BAD_REQUEST, "text/plain; charset=utf-8", format!("upload failed: {e}\n"));
            }
        };
        let sha256 = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
        received.push(UploadedFile { field: field_name, file_name, content_type, size: bytes.len(), sha256, bytes });
    }
    if received.is_empty() {
        return typed(
            StatusCode::BAD_REQUEST,
            "text/html; charset=utf-8",
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Upload failed</title></head>\
             <body><h1>Upload failed</h1><p id=\"status\">No file was chosen.</p></body></html>\n"
                .into(),
        );
    }
    let mut body = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Upload received</title>\
         <link rel=\"stylesheet\" href=\"/style.css\"></head>\n<body>\n<h1>Upload received</h1>\n<ul id=\"received\">\n",
    );
    for file in &received {
        let name = file.file_name.replace('&', "&amp;").replace('<', "&lt;");
        body.push_str(&format!("<li>Uploaded: {name} ({} bytes)</li>\n", file.size));
    }
    body.push_str("</ul>\n<p><a href=\"/upload.html\">Upload another file</a></p>\n</body>\n</html>\n");
    lock(&state.uploads).extend(received);
    html(body)
}

async fn download() -> Response {
    let mut response = typed(StatusCode::OK, "text/csv; charset=utf-8", REPORT_CSV.to_owned());
    response
        .headers_mut()
        .insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"report.csv\""));
    response
}

/// `/scheme-redirect?to=URL`: a 302 to any URL (`file:`, `chrome:`, …), for the scheme policy's redirect case.
async fn scheme_redirect(Query(query): Query<HashMap<String, String>>) -> Response {
    let to = query.get("to").cloned().unwrap_or_default();
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(&to) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Keeps what an app page reports (a short text, at most 200 bytes) for [`FixtureSite::records`].
/// `/redirect?to=/path`: a 302 to `path` on the other site (a page that leads to another origin through a redirect).
async fn redirect(State(state): State<SiteState>, Query(query): Query<HashMap<String, String>>) -> Response {
    let to = query.get("to").map_or("/policy-landing.html", String::as_str);
    if !to.starts_with('/') || to.starts_with("//") {
        return bad_request(format!("to={to:?} must be a path on the other site, e.g. /policy-landing.html\n"));
    }
    let mut response = StatusCode::FOUND.into_response();
    match HeaderValue::from_str(&format!("{}{to}", state.other_origin)) {
        Ok(location) => {
            response.headers_mut().insert(header::LOCATION, location);
            response
        }
        Err(_) => bad_request(format!("to={to:?} is not a valid path\n")),
    }
}

async fn record(State(state): State<SiteState>, body: String) -> Response {
    if body.is_empty() || body.len() > 200 {
        return bad_request("send the event as a text body of 1 to 200 bytes, e.g. nav:Inbox\n".into());
    }
    lock(&state.records).push(body);
    StatusCode::NO_CONTENT.into_response()
}

/// A save that takes the server `delay` ms (at most 60 s): records the body (`save:weekly`) when it answers, then
/// answers `{"saved":"weekly"}`.
async fn save(State(state): State<SiteState>, Query(query): Query<HashMap<String, String>>, body: String) -> Response {
    let delay = query.get("delay").and_then(|d| d.parse::<u64>().ok()).unwrap_or(0).min(MAX_SLOW_MS);
    if body.is_empty() || body.len() > 200 {
        return bad_request("send what is saved as a text body of 1 to 200 bytes, e.g. save:weekly\n".into());
    }
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(delay)) => {}
        () = state.stop.cancelled() => {
            return shutting_down();
        }
    }
    let value = body.split_once(':').map_or("", |(_, v)| v).to_owned();
    lock(&state.records).push(body);
    typed(StatusCode::OK, "application/json", serde_json::json!({ "saved": value }).to_string())
}

async fn poll() -> Response {
    typed(StatusCode::OK, "application/json", "{\"ok\":true}".into())
}

async fn long_poll(State(state): State<SiteState>) -> Response {
    // Never answers while the site runs; ends only when the site shuts down.
    struct Pending(Arc<AtomicUsize>);
    impl Drop for Pending {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    state.long_polls.fetch_add(1, Ordering::SeqCst);
    let _pending = Pending(state.long_polls.clone());
    state.stop.cancelled().await;
    shutting_down()
}

fn shutting_down() -> Response {
    typed(StatusCode::SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", "fixture site is shutting down\n".into())
}
