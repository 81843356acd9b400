//! The picture check (`/vision-check.html`, issue 19): a canvas that shows a random code and a random red dot that
//! exist only in its pixels. The server makes a challenge with each page load (cells to fill and a dot to draw, never
//! the code as text; `POST /api/vision/new` makes one alone), keeps the ground truth, and judges what the page posts when the picture is clicked
//! (`POST /api/vision/answer`: what was typed into Code and where in the picture the click landed). Tests read the
//! verdicts with [`crate::FixtureSite::vision_challenges`], or over HTTP (`GET /api/vision/results`, verdicts only).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The block font the page draws the code in (shared with the adapters' tests, which decode the picture with it).
pub const VISION_FONT: &str = include_str!("../fixtures/vision-font.json");

/// Picture size in canvas pixels (the canvas's CSS size too).
const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 200.0;
/// Canvas pixels per font cell.
const CELL: f64 = 6.0;
/// Characters in a code.
const CODE_LEN: usize = 5;
/// Radius of the target dot; a click within it (plus one pixel for rounding) hits.
const DOT_RADIUS: f64 = 10.0;
/// Challenges kept.
const KEPT: usize = 64;

/// One answer the page posted, and the server's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VisionAnswer {
    /// What was typed into Code.
    pub typed: String,
    /// Where the click landed, in picture pixels.
    pub x: f64,
    /// Where the click landed, in picture pixels.
    pub y: f64,
    /// Distance from the dot's centre.
    pub distance: f64,
    /// The typed text is the code (case and surrounding spaces aside).
    pub typed_ok: bool,
    /// The click landed on the dot.
    pub click_ok: bool,
    /// Both.
    pub passed: bool,
}

/// A challenge and its ground truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VisionChallenge {
    /// `c1`, `c2`, ... (shown on the page).
    pub id: String,
    /// The code drawn.
    pub code: String,
    /// The dot: centre x, y and radius in picture pixels.
    pub dot: (f64, f64, f64),
    /// The code's box: x, y, width, height in picture pixels.
    pub code_box: (f64, f64, f64, f64),
    /// Answers posted, oldest first.
    pub answers: Vec<VisionAnswer>,
}

/// The challenges of a site, newest last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Challenges(Arc<Mutex<(u64, Vec<VisionChallenge>)>>);

fn random() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

fn font() -> HashMap<String, Vec<String>> {
    let v: Value = serde_json::from_str(VISION_FONT).unwrap_or_default();
    serde_json::from_value(v["glyphs"].clone()).unwrap_or_default()
}

impl Challenges {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Vec<VisionChallenge>)> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every challenge, oldest first.
    pub(crate) fn all(&self) -> Vec<VisionChallenge> {
        self.lock().1.clone()
    }

    /// A new challenge: what the page draws.
    pub(crate) fn create(&self) -> Value {
        let glyphs = font();
        let mut chars: Vec<&String> = glyphs.keys().collect();
        chars.sort();
        let mut r = random();
        let mut next = |n: u64| {
            r = r.rotate_left(17) ^ random();
            r % n.max(1)
        };
        let code: String =
            (0..CODE_LEN).map(|_| chars[usize::try_from(next(chars.len() as u64)).unwrap_or(0)].as_str()).collect();
        let (bw, bh) = ((1.0 + 6.0 * CODE_LEN as f64) * CELL, 9.0 * CELL);
        let bx = 10.0 + next((WIDTH - bw - 20.0) as u64) as f64;
        let by = 10.0 + next((HEIGHT - bh - 20.0) as u64) as f64;
        let margin = DOT_RADIUS + 12.0;
        let dot = loop {
            let x = margin + next((WIDTH - 2.0 * margin) as u64) as f64;
            let y = margin + next((HEIGHT - 2.0 * margin) as u64) as f64;
            let clear = x + margin < bx || x - margin > bx + bw || y + margin < by || y - margin > by + bh;
            if clear {
                break (x, y, DOT_RADIUS);
            }
        };
        let mut cells = Vec::new();
        for (i, ch) in code.chars().enumerate() {
            let rows = glyphs.get(&ch.to_string()).cloned().unwrap_or_default();
            for (row, line) in rows.iter().enumerate() {
                for (col, c) in line.chars().enumerate() {
                    if c == '#' {
                        let x = bx + (1.0 + 6.0 * i as f64 + col as f64) * CELL;
                        let y = by + (1.0 + row as f64) * CELL;
                        cells.push(json!([x, y, CELL, CELL]));
                    }
                }
            }
        }
        let mut state = self.lock();
        state.0 += 1;
        let id = format!("c{}", state.0);
        state.1.push(VisionChallenge { id: id.clone(), code, dot, code_box: (bx, by, bw, bh), answers: Vec::new() });
        if state.1.len() > KEPT {
            state.1.remove(0);
        }
        json!({"id": id, "box": [bx, by, bw, bh], "cells": cells, "dot": [dot.0, dot.1, dot.2]})
    }

    /// Judges an answer the page posted; `None` for an unknown challenge.
    pub(crate) fn answer(&self, a: &AnswerBody) -> Option<VisionAnswer> {
        let mut state = self.lock();
        let c = state.1.iter_mut().find(|c| c.id == a.id)?;
        let distance = ((a.x - c.dot.0).powi(2) + (a.y - c.dot.1).powi(2)).sqrt();
        let typed_ok = a.typed.trim().eq_ignore_ascii_case(&c.code);
        let click_ok = distance <= c.dot.2 + 1.0;
        let verdict = VisionAnswer {
            typed: a.typed.clone(),
            x: a.x,
            y: a.y,
            distance,
            typed_ok,
            click_ok,
            passed: typed_ok && click_ok,
        };
        c.answers.push(verdict.clone());
        Some(verdict)
    }

    /// The verdicts without the codes (what `GET /api/vision/results` serves).
    pub(crate) fn results(&self) -> Value {
        let all = self.all();
        Value::Array(
            all.iter()
                .map(|c| {
                    let answers: Vec<Value> = c
                        .answers
                        .iter()
                        .map(|a| {
                            json!({"typedOk": a.typed_ok, "clickOk": a.click_ok, "passed": a.passed,
                                   "distance": a.distance})
                        })
                        .collect();
                    json!({"id": c.id, "answers": answers})
                })
                .collect(),
        )
    }
}

/// What the page posts.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AnswerBody {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) typed: String,
    pub(crate) x: f64,
    pub(crate) y: f64,
}

/// The page with a new challenge, and `spacer` CSS pixels of blank space above the picture (so a test can scroll to
/// it).
pub(crate) fn page(challenges: &Challenges, spacer: u32) -> String {
    include_str!("../fixtures/vision-check.html")
        .replace("{{SPACER}}", &spacer.min(20_000).to_string())
        .replace("{{CHALLENGE}}", &challenges.create().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_draws_its_code_and_judges_answers() {
        let c = Challenges::default();
        let drawn = c.create();
        let truth = c.all().pop().unwrap();
        assert_eq!(truth.code.len(), CODE_LEN);
        assert!(!drawn.to_string().contains(&format!("\"{}\"", truth.code)), "the code is never sent as text");
        assert!(drawn["cells"].as_array().unwrap().len() > 20);
        let miss = AnswerBody { id: truth.id.clone(), typed: truth.code.to_lowercase(), x: 0.0, y: 0.0 };
        let v = c.answer(&miss).unwrap();
        assert!(v.typed_ok && !v.click_ok && !v.passed);
        let hit = AnswerBody {
            id: truth.id.clone(),
            typed: format!(" {} ", truth.code),
            x: truth.dot.0 + 3.0,
            y: truth.dot.1,
        };
        assert!(c.answer(&hit).unwrap().passed);
        assert!(c.answer(&AnswerBody { id: "c999".into(), typed: String::new(), x: 0.0, y: 0.0 }).is_none());
        assert_eq!(c.results()[0]["answers"][1]["passed"], true);
    }
}
