//! The observation's size budget counts tokens (issue 13 item 2), on real Chromium: a page whose text is well within
//! the byte budget but past the token budget (CJK text: three bytes a character, about a token each) is cut at a line
//! boundary by `maxTokens`, its last line saying what was left out and how to read it; every line before it whole.
mod common;

use browserd_protocol::{DEFAULT_MAX_BYTES, DEFAULT_MAX_TOKENS, ObserveParams};
use browserd_test_support::text_pages::data_url;
use common::Page;

/// Paragraph `i`: 100 CJK characters, distinct per paragraph so no two lines are the same.
fn paragraph(i: usize) -> String {
    const CHARS: &[char] =
        &['漢', '字', '文', '書', '読', '語', '国', '山', '川', '海', '空', '雨', '風', '花', '鳥', '月'];
    let mut s = format!("{i:03}");
    for k in 0..100 {
        s.push(CHARS[(i * 7 + k * 3 + k / 5) % CHARS.len()]);
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_counts_tokens_and_cuts_at_a_line() {
    let paragraphs: Vec<String> = (0..220).map(paragraph).collect();
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>")).collect();
    let bytes: usize = paragraphs.iter().map(|p| p.len() + 1).sum();
    assert!(bytes < DEFAULT_MAX_BYTES as usize - 4096, "the page's text fits the byte budget ({bytes} bytes)");
    let html = format!(
        "<!doctype html><html lang=\"ja\"><head><meta charset=\"utf-8\"><title>CJK</title></head><body>{body}</body></html>"
    );
    let page = Page::open(&data_url(&html)).await;

    let o = page.observe().await;
    let t = o.truncated.clone().expect("the observation is cut");
    assert_eq!(t.reason, "maxTokens", "{t:?}");
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let last = lines.last().expect("lines");
    assert!(last.starts_with("… cut at maxTokens: ") && last.contains("more lines not shown; observe"), "{last}");
    // Every paragraph line shown is whole, in order, from the first; none is cut inside.
    let shown: Vec<&str> = lines.iter().copied().filter(|l| !l.starts_with('#') && !l.starts_with('…')).collect();
    assert!(shown.len() > 50 && shown.len() < paragraphs.len(), "{} lines shown", shown.len());
    for (line, want) in shown.iter().zip(&paragraphs) {
        assert_eq!(line.trim(), want.as_str());
    }
    // Within the budget by o200k itself.
    let bpe = tiktoken_rs::o200k_base().expect("o200k");
    let real = bpe.encode_ordinary(&o.untrusted_content).len();
    assert!(real <= DEFAULT_MAX_TOKENS as usize, "{real} tokens");

    // A larger token budget shows all of it.
    let all = page.observe_with(ObserveParams { max_tokens: Some(100_000), ..Default::default() }).await;
    assert!(all.truncated.is_none(), "{:?}", all.truncated);
    assert!(all.untrusted_content.contains(&paragraphs[219]));
    page.close().await;
}
