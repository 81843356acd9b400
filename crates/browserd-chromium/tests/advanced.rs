//! Real-Chromium tests of the advanced tier: evaluation (values, promises, exceptions, large values), console and
//! network collection, and raw protocol commands.
mod common;

use browserd_core::provider::{Provider, ProviderErrorKind};
use browserd_protocol::TabId;
use browserd_protocol::tools::{
    ConsoleLevel, ConsoleParams, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
};
use common::{Page, ctx, env};
use serde_json::json;

async fn eval(page: &Page, expression: &str) -> EvaluateResult {
    let params = EvaluateParams { tab: TabId(page.tab.0), expression: expression.to_owned(), await_promise: true };
    env().provider.evaluate(&ctx(), page.tab, &params).await.expect("the evaluation call succeeds")
}

fn network_params(page: &Page) -> NetworkParams {
    NetworkParams {
        tab: TabId(page.tab.0),
        since: None,
        url_contains: None,
        failed_only: false,
        include_query: false,
        limit: None,
    }
}

/// Reads the network log until `done` holds for it (events arrive asynchronously from the browser process), at most
/// 50 reads.
async fn network_until(page: &Page, params: &NetworkParams, done: impl Fn(&NetworkResult) -> bool) -> NetworkResult {
    let mut last = None;
    for _ in 0..50 {
        let r = env().provider.network(&ctx(), page.tab, params).await.unwrap();
        if done(&r) {
            return r;
        }
        last = Some(r);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the network log never matched: {last:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_values_promises_exceptions_and_large_values() {
    let page = Page::open("/form.html").await;
    let r = eval(&page, "({title: document.title.length > 0, sum: 1 + 2, list: [1, 'a', null]})").await;
    assert_eq!(r.value, json!({"title": true, "sum": 3, "list": [1, "a", null]}), "{r:?}");
    assert_eq!(r.exception, None);

    let r = eval(&page, "new Promise(resolve => setTimeout(() => resolve('later'), 30))").await;
    assert_eq!(r.value, json!("later"));
    let r = eval(&page, "undefined").await;
    assert_eq!(r.value, serde_json::Value::Null);
    let r = eval(&page, "1 / 0").await;
    assert_eq!(r.value, json!("Infinity"), "unserializable numbers come back as their text");

    let r = eval(&page, "(() => { throw new TypeError('boom here'); })()").await;
    assert_eq!(r.value, serde_json::Value::Null);
    let exception = r.exception.expect("a thrown exception is reported");
    assert!(exception.contains("TypeError") && exception.contains("boom here"), "{exception}");
    let r = eval(&page, "Promise.reject(new Error('rejected later'))").await;
    assert!(r.exception.as_deref().is_some_and(|e| e.contains("rejected later")), "{r:?}");

    // The provider returns large values whole; the broker bounds and spills them.
    let r = eval(&page, "'x'.repeat(200000)").await;
    assert_eq!(r.value.as_str().map(str::len), Some(200_000));

    let r = eval(&page, "window.__advanced_marker = 41; window.__advanced_marker + 1").await;
    assert_eq!(r.value, json!(42), "the expression runs in the page's own world");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_collects_messages_and_exceptions_since_first_use() {
    let page = Page::open("/form.html").await;
    let params = ConsoleParams { tab: TabId(page.tab.0), since: None, level: None, limit: None };
    let first = env().provider.console(&ctx(), page.tab, &params).await.unwrap();
    eval(&page, "console.log('hello', 42, {a: 1}); console.warn('careful'); console.error('it broke')").await;
    eval(&page, "setTimeout(() => { throw new Error('uncaught later'); }, 0); new Promise(r => setTimeout(r, 50))")
        .await;

    let since = ConsoleParams { since: Some(first.cursor), ..params.clone() };
    let r = env().provider.console(&ctx(), page.tab, &since).await.unwrap();
    let texts: Vec<(ConsoleLevel, &str)> = r.entries.iter().map(|e| (e.level, e.text.as_str())).collect();
    assert!(texts.contains(&(ConsoleLevel::Log, "hello 42 Object")), "{texts:?}");
    assert!(texts.contains(&(ConsoleLevel::Warning, "careful")), "{texts:?}");
    assert!(texts.contains(&(ConsoleLevel::Error, "it broke")), "{texts:?}");
    assert!(
        r.entries.iter().any(|e| e.level == ConsoleLevel::Error && e.text.contains("uncaught later")),
        "an uncaught exception is an error entry: {texts:?}"
    );

    // The level filter and the cursor.
    let errors = ConsoleParams { level: Some(ConsoleLevel::Error), ..since.clone() };
    let r2 = env().provider.console(&ctx(), page.tab, &errors).await.unwrap();
    assert!(r2.entries.iter().all(|e| e.level == ConsoleLevel::Error) && r2.entries.len() >= 2, "{r2:#?}");
    let after = ConsoleParams { since: Some(r.cursor), ..params.clone() };
    let r3 = env().provider.console(&ctx(), page.tab, &after).await.unwrap();
    assert!(r3.entries.is_empty(), "nothing new after the cursor: {r3:#?}");
    let limited = ConsoleParams { limit: Some(1), ..since };
    let r4 = env().provider.console(&ctx(), page.tab, &limited).await.unwrap();
    assert_eq!(r4.entries.len(), 1);
    assert!(r4.truncated, "more entries were available than returned");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_lists_fetches_without_query_strings_unless_asked() {
    let page = Page::open("/form.html").await;
    let params = network_params(&page);
    env().provider.network(&ctx(), page.tab, &params).await.unwrap();
    let r = eval(
        &page,
        "const done = r => r.text().then(() => r.status); \
         Promise.all([fetch('/index.html?token=secret').then(done), \
         fetch('/no-such-page.json?x=1', {method: 'POST', body: 'a'}).then(done)])",
    )
    .await;
    // The fixture server answers a POST to an unknown path with 405.
    assert_eq!(r.value, json!([200, 405]), "{r:?}");

    let done = |r: &NetworkResult| {
        r.requests.iter().filter(|e| e.kind == "fetch" && e.duration_ms.is_some() && e.status.is_some()).count() >= 2
    };
    let r = network_until(&page, &params, done).await;
    let ok = r.requests.iter().find(|e| e.url.ends_with("/index.html")).expect("the first fetch is listed");
    assert_eq!((ok.method.as_str(), ok.kind.as_str(), ok.status), ("GET", "fetch", Some(200)), "{ok:?}");
    assert!(r.requests.iter().all(|e| !e.url.contains("token")), "no query strings by default: {r:#?}");
    let missing = r.requests.iter().find(|e| e.url.ends_with("/no-such-page.json")).expect("the 405 is listed");
    assert_eq!((missing.method.as_str(), missing.status), ("POST", Some(405)));

    let failed = NetworkParams { failed_only: true, ..params.clone() };
    let r = env().provider.network(&ctx(), page.tab, &failed).await.unwrap();
    assert!(!r.requests.is_empty() && r.requests.iter().all(|e| e.status == Some(405) || e.error.is_some()), "{r:#?}");

    let with_query = NetworkParams { include_query: true, url_contains: Some("token=".into()), ..params.clone() };
    let r = env().provider.network(&ctx(), page.tab, &with_query).await.unwrap();
    assert_eq!(r.requests.len(), 1, "{r:#?}");
    assert!(r.requests[0].url.ends_with("/index.html?token=secret"));

    // A request that fails at the network level carries the failure text.
    let before = env().provider.network(&ctx(), page.tab, &params).await.unwrap().cursor;
    eval(&page, "fetch('http://127.0.0.1:9/unreachable').then(() => 'ok', e => String(e))").await;
    let since = NetworkParams { since: Some(before), ..params.clone() };
    let r = network_until(&page, &since, |r| r.requests.iter().any(|e| e.error.is_some())).await;
    let failure = r.requests.iter().find(|e| e.error.is_some()).unwrap();
    assert!(failure.error.as_deref().unwrap().starts_with("net::"), "{failure:?}");
    assert!(r.requests.iter().all(|e| !e.url.ends_with("/index.html")), "the cursor skips earlier requests: {r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_protocol_commands_reach_the_tab_and_bad_ones_are_refused() {
    let page = Page::open("/form.html").await;
    let raw = |method: &str, params: serde_json::Value| RawProtocolParams {
        tab: TabId(page.tab.0),
        method: method.to_owned(),
        params: params.as_object().cloned(),
    };
    let r = env()
        .provider
        .raw_protocol(&ctx(), page.tab, &raw("Runtime.evaluate", json!({"expression": "6 * 7", "returnByValue": true})))
        .await
        .unwrap();
    assert_eq!(r.result["result"]["value"], 42, "{r:?}");
    let r = env().provider.raw_protocol(&ctx(), page.tab, &raw("Page.getFrameTree", json!({}))).await.unwrap();
    assert!(r.result["frameTree"]["frame"]["url"].as_str().unwrap().ends_with("/form.html"), "{r:?}");

    let err = env().provider.raw_protocol(&ctx(), page.tab, &raw("Page.noSuchMethod", json!({}))).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Refused, "{err}");
    let err = env().provider.raw_protocol(&ctx(), page.tab, &raw("Runtime.disable", json!({}))).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest, "{err}");
    assert!(err.message.contains("browserd relies on"), "{err}");
    // Observation still works after the raw commands.
    assert!(page.observe().await.untrusted_content.contains("textbox"));
    page.close().await;
}
