//! Tests of the loopback fixture site over real HTTP: every page answers with its marker, uploads are recorded,
//! downloads are attachments, the slow page is delayed and the second site is a different host.

use browserd_fixtures::{FixtureSite, generate_elements_page, operable_elements};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;

/// `sha256sum` of the bytes `hello upload\n`.
const SHA256_HELLO_UPLOAD: &str = "993a327368cc9a443f6d9a11d146da9e9ba2d561a8ef1e9190d119b2b1a002e0";

struct Reply {
    status: StatusCode,
    headers: hyper::HeaderMap,
    body: String,
}

/// One HTTP/1.1 request over a fresh loopback connection.
async fn send(url: &str, method: &str, content_type: Option<&str>, body: Vec<u8>) -> Reply {
    let uri: hyper::Uri = url.parse().expect("fixture URL parses");
    let host = uri.host().expect("URL has a host").to_owned();
    let port = uri.port_u16().expect("URL has a port");
    let connect_host = if host == "localhost" { "127.0.0.1" } else { host.as_str() };
    let stream = tokio::net::TcpStream::connect((connect_host, port)).await.expect("connect to fixture site");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let mut request = Request::builder()
        .method(method)
        .uri(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .header(hyper::header::HOST, format!("{host}:{port}"));
    if let Some(content_type) = content_type {
        request = request.header(hyper::header::CONTENT_TYPE, content_type);
    }
    let response =
        sender.send_request(request.body(Full::new(Bytes::from(body))).expect("request")).await.expect("send");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.expect("read body").to_bytes();
    Reply { status, headers, body: String::from_utf8(bytes.to_vec()).expect("utf-8 body") }
}

async fn get(url: &str) -> Reply {
    send(url, "GET", None, Vec::new()).await
}

/// A page as the browser gets it: its HTML and, for an app page, the bundle it loads (which renders its text).
async fn get_with_bundle(url: &str) -> Reply {
    let mut reply = get(url).await;
    if let Some(start) = reply.body.find("<script src=\"/apps/") {
        let src = &reply.body[start + "<script src=\"".len()..];
        let src = src[..src.find('"').expect("closing quote")].to_owned();
        let origin = &url[..url.find("/apps/").expect("app page URL")];
        let bundle = get(&format!("{origin}{src}")).await;
        assert_eq!(bundle.status, StatusCode::OK, "{src}");
        reply.body.push_str(&bundle.body);
    }
    reply
}

#[tokio::test]
async fn every_page_is_served_with_its_marker_on_both_sites() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let pages = FixtureSite::pages();
    assert!(pages.len() >= 20, "expected every fixture category, got {}", pages.len());
    for page in pages {
        for url in [site.url(page.path), site.cross_origin_url(page.path)] {
            let reply = get_with_bundle(&url).await;
            assert_eq!(reply.status, StatusCode::OK, "{url}");
            assert!(reply.body.contains(page.marker), "{url} lacks marker {:?}", page.marker);
            assert_eq!(reply.headers[hyper::header::CONTENT_TYPE], "text/html; charset=utf-8", "{url}");
        }
    }
    let css = get(&site.url("/style.css")).await;
    assert_eq!(css.headers[hyper::header::CONTENT_TYPE], "text/css; charset=utf-8");
}

#[test]
fn pages_cover_every_fixture_category_of_the_brief() {
    let categories: std::collections::BTreeSet<&str> = FixtureSite::pages().iter().map(|p| p.category).collect();
    for expected in [
        "duplicates",
        "overlay",
        "form",
        "contenteditable",
        "ime",
        "iframes",
        "shadow",
        "virtual-list",
        "long-list",
        "canvas",
        "dialogs",
        "popup",
        "upload",
        "download",
        "toast",
        "slow",
        "never-idle",
        "clickables",
        "generated",
    ] {
        assert!(categories.contains(expected), "no fixture page for {expected}");
    }
    let mut paths: Vec<&str> = FixtureSite::pages().iter().map(|p| p.path).collect();
    let total = paths.len();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), total, "duplicate page paths");
}

#[tokio::test]
async fn index_links_every_other_page() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let index = get(&site.url("/")).await.body;
    for page in FixtureSite::pages().iter().filter(|p| p.category != "index") {
        let href = format!("href=\"{}\"", page.path);
        assert!(index.contains(&href), "index lacks {href}");
    }
}

#[tokio::test]
async fn cross_origin_url_is_another_host_and_iframes_embed_it() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let primary: hyper::Uri = site.url("/").parse().unwrap();
    let cross: hyper::Uri = site.cross_origin_url("/").parse().unwrap();
    assert_eq!(primary.host(), Some("127.0.0.1"));
    assert_eq!(cross.host(), Some("localhost"));
    assert_ne!(primary.port_u16(), cross.port_u16());

    let page = get(&site.url("/iframes.html")).await.body;
    assert!(page.contains(&format!("src=\"{}\"", site.cross_origin_url("/frame-inner.html?frame=cross-origin"))));
    assert!(page.contains("src=\"/frame-inner.html?frame=same-origin\""));
    // Served from the second site, the page points back at the primary one.
    let back = get(&site.cross_origin_url("/iframes.html")).await.body;
    assert!(back.contains(&format!("src=\"{}\"", site.url("/frame-inner.html?frame=cross-origin"))));
}

#[tokio::test]
async fn upload_records_the_file() {
    let site = FixtureSite::start().await.expect("start fixture site");
    assert!(site.uploads().is_empty());
    let boundary = "fixture-boundary-42";
    let content = "hello upload\n";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"document\"; filename=\"notes.txt\"\r\n\
         Content-Type: text/plain\r\n\r\n{content}\r\n--{boundary}--\r\n"
    );
    let reply = send(
        &site.url("/upload"),
        "POST",
        Some(&format!("multipart/form-data; boundary={boundary}")),
        body.into_bytes(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(reply.body.contains("Uploaded: notes.txt (13 bytes)"), "{}", reply.body);
    let uploads = site.uploads();
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].field, "document");
    assert_eq!(uploads[0].file_name, "notes.txt");
    assert_eq!(uploads[0].content_type.as_deref(), Some("text/plain"));
    assert_eq!(uploads[0].size, content.len());
    assert_eq!(uploads[0].bytes, content.as_bytes());
    assert_eq!(uploads[0].sha256, SHA256_HELLO_UPLOAD);
}

#[tokio::test]
async fn upload_without_a_file_is_refused_and_records_nothing() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let boundary = "b";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"document\"; filename=\"\"\r\n\r\n\r\n--{boundary}--\r\n"
    );
    let reply = send(&site.url("/upload"), "POST", Some("multipart/form-data; boundary=b"), body.into_bytes()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.body.contains("No file was chosen."));
    assert!(site.uploads().is_empty());
}

#[tokio::test]
async fn download_is_an_attachment() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let reply = get(&site.url("/download/report.csv")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[hyper::header::CONTENT_DISPOSITION], "attachment; filename=\"report.csv\"");
    assert!(reply.body.starts_with("id,item,amount\n"));
}

#[tokio::test]
async fn slow_page_completes_and_reports_its_delay() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let reply = get(&site.url("/slow.html?delay=300")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body.contains("Slow page loaded after 300 ms"));
    let default = get(&site.url("/slow.html")).await;
    assert!(default.body.contains("Slow page loaded after 1500 ms"));
}

#[tokio::test]
async fn polling_endpoints_answer_and_long_poll_ends_at_shutdown() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let poll = get(&site.url("/api/poll")).await;
    assert_eq!(poll.status, StatusCode::OK);
    assert_eq!(poll.body, "{\"ok\":true}");
    let url = site.url("/api/long-poll");
    let long_poll = tokio::spawn(async move { get(&url).await });
    for _ in 0..500 {
        if site.pending_long_polls() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(site.pending_long_polls(), 1, "the long-poll request never reached the server");
    assert!(!long_poll.is_finished(), "the long poll answered while the site runs");
    site.shutdown().await;
    let reply = long_poll.await.expect("long-poll task");
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn dropping_the_site_stops_serving() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let addr = site.primary_addr();
    drop(site);
    tokio::task::yield_now().await;
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(refused, "the server still accepts connections after drop");
}

#[tokio::test]
async fn unknown_paths_are_404() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let reply = get(&site.url("/no-such-page.html")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn generated_page_and_manifest_agree() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let page = get(&site.url("/gen/elements?n=1000")).await.body;
    let manifest: serde_json::Value =
        serde_json::from_str(&get(&site.url("/gen/manifest?n=1000")).await.body).expect("manifest is JSON");
    let items = manifest["interactive"].as_array().expect("interactive list");
    assert!(items.len() > 100, "a 1000-element page has many controls, got {}", items.len());
    for item in items {
        let id = item["id"].as_str().unwrap();
        assert!(page.contains(&format!("data-bench-id=\"{id}\"")), "page lacks {id}");
    }
    let bad = get(&site.url("/gen/elements?n=lots")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.body.contains("use e.g. ?n=1000"));
    let (html, local) = generate_elements_page(1000);
    assert_eq!(html, page);
    assert_eq!(local.interactive.len(), items.len());
}

#[tokio::test]
async fn operable_ground_truth_names_elements_that_exist() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let mut pages_with_truth = 0;
    for page in FixtureSite::pages().iter().filter(|p| p.category != "generated") {
        let Some(expected) = operable_elements(page.path) else { continue };
        pages_with_truth += 1;
        assert!(!expected.is_empty(), "{}", page.path);
        let mut body = get_with_bundle(&site.url(page.path)).await.body;
        if page.path == "/iframes.html" {
            body.push_str(&get(&site.url("/frame-inner.html")).await.body); // the frames' controls
        }
        for element in expected {
            // A row named by the text of its cells reads them joined by a space (a block box begins), as innerText
            // does; the page holds each cell's text apart.
            // A name CSS shows uppercase (`text-transform`) is held in any case; a count the app computes (`(3)`)
            // is not in the page's source.
            let lower = body.to_lowercase();
            let held = body.contains(&element.name)
                || element.name.split_whitespace().all(|w| {
                    body.contains(w) || lower.contains(&w.to_lowercase()) || !w.chars().any(char::is_alphabetic)
                });
            assert!(held, "{} has no {} {:?}", page.path, element.role, element.name);
        }
    }
    assert!(pages_with_truth >= 15, "only {pages_with_truth} pages have a ground truth");
    assert!(operable_elements("/gen/elements?n=100").is_none());
}

#[tokio::test]
async fn app_pages_carry_their_data_and_bundle_but_not_their_ground_truth() {
    let site = FixtureSite::start().await.expect("start fixture site");
    for page in FixtureSite::pages().iter().filter(|p| p.category == "app") {
        let truth = browserd_fixtures::app_truth(page.path).expect("every app page has a ground truth");
        assert!(!truth.operable.is_empty() && !truth.texts.is_empty(), "{}", page.path);
        assert_eq!(operable_elements(page.path).expect("bench elements").len(), truth.operable.len());
        let reply = get(&site.url(page.path)).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", page.path);
        // The records a click leaves are the ground truth's own words and never appear in the page.
        for op in &truth.operable {
            if let Some(record) = &op.records {
                assert!(!reply.body.contains(record.as_str()), "{} reveals {record:?}", page.path);
            }
        }
    }
    for bundle in [
        "/apps/tracker.js",
        "/apps/dashboard.js",
        "/apps/mail.js",
        "/apps/admin.js",
        "/apps/shop.js",
        "/apps/components.js",
    ] {
        let reply = get(&site.url(bundle)).await;
        assert_eq!(reply.status, StatusCode::OK, "{bundle}");
        assert_eq!(reply.headers[hyper::header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert!(reply.body.starts_with("// Built by crates/browserd-fixtures/fixtures-src"), "{bundle}");
    }
    let tracker = get(&site.url("/apps/tracker.html")).await.body;
    assert!(tracker.contains("TRK-120") && tracker.contains("<div id=\"root\"></div>"));
}

#[tokio::test]
async fn record_keeps_what_app_pages_report_and_refuses_empty_bodies() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let ok = send(&site.url("/api/record"), "POST", Some("text/plain"), b"nav:Inbox".to_vec()).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT);
    let empty = send(&site.url("/api/record"), "POST", Some("text/plain"), Vec::new()).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    assert!(empty.body.contains("nav:Inbox"), "the refusal says what to send: {}", empty.body);
    assert_eq!(site.records(), vec!["nav:Inbox".to_owned()]);
    assert!(site.wait_for_record("nav:Inbox", std::time::Duration::from_millis(10)).await);
}
