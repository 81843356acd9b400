//! The fault run's own loopback site: one page of high-risk buttons (submit an order, send a message, delete one of six
//! items — the six share the name "Delete") per page id, and a server that counts what really happened. A click posts
//! `{page, button}` to `/effect`; the harness reads `/counts/<page>` and never trusts the page or browserd for it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::response::Html;
use axum::routing::{get, post};
use serde_json::Value;
use tokio::net::TcpListener;

/// The buttons of a page, by element id, in document order.
pub(crate) const BUTTONS: [&str; 8] =
    ["submit", "send", "delete-1", "delete-2", "delete-3", "delete-4", "delete-5", "delete-6"];

type Counts = Arc<Mutex<BTreeMap<String, BTreeMap<String, u64>>>>;

/// The running site.
pub(crate) struct Counter {
    origin: String,
    counts: Counts,
    task: tokio::task::JoinHandle<()>,
}

impl Counter {
    pub(crate) async fn start() -> Counter {
        let counts: Counts = Arc::default();
        let app =
            Router::new().route("/risk/{page}", get(page)).route("/effect", post(effect)).with_state(counts.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Counter { origin, counts, task }
    }

    pub(crate) fn url(&self, page: &str) -> String {
        format!("{}/risk/{page}", self.origin)
    }

    /// What the server saw for `page`: button id → number of effects.
    pub(crate) fn counts(&self, page: &str) -> BTreeMap<String, u64> {
        self.counts.lock().unwrap().get(page).cloned().unwrap_or_default()
    }

    /// Every effect on every page.
    pub(crate) fn total(&self) -> u64 {
        self.counts.lock().unwrap().values().flat_map(|m| m.values()).sum()
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn effect(State(counts): State<Counts>, Json(body): Json<Value>) -> &'static str {
    let page = body["page"].as_str().unwrap_or("?").to_owned();
    let button = body["button"].as_str().unwrap_or("?").to_owned();
    *counts.lock().unwrap().entry(page).or_default().entry(button).or_default() += 1;
    "counted"
}

async fn page(Path(page): Path<String>) -> Html<String> {
    let items: String =
        (1..=6).map(|i| format!("<li>Item {i} <button id=\"delete-{i}\">Delete</button></li>")).collect();
    Html(format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Risky actions {page}</title></head>
<body>
<h1>Risky actions</h1>
<section aria-labelledby="o"><h2 id="o">Order</h2><button id="submit">Submit order</button></section>
<section aria-labelledby="m"><h2 id="m">Message</h2><button id="send">Send message</button></section>
<section aria-labelledby="i"><h2 id="i">Items</h2><ul>{items}</ul></section>
<p id="status" role="status">Done: none</p>
<script>
  const page = {page:?};
  for (const b of document.querySelectorAll('button')) {{
    b.addEventListener('click', () => {{
      fetch('/effect', {{method: 'POST', keepalive: true, headers: {{'content-type': 'application/json'}},
                         body: JSON.stringify({{page, button: b.id}})}});
      document.getElementById('status').textContent = 'Done: ' + b.id;
    }});
  }}
</script>
</body></html>
"#
    ))
}
