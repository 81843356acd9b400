//! Screenshots: viewport, element or full page, PNG/JPEG/WebP, downscaled to a maximum size, with geometry metadata.

use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use browserd_core::provider::{Provider as _, ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::{ImageFormat, Point, Screenshot, ScreenshotOptions, Size};
use serde_json::json;

use crate::observe::{RefError, resolve_ref};
use crate::origin::ORIGIN_NOT_AUTHORISED_PREFIX;
use crate::point::{ImageGeom, Viewport, current_viewport};
use crate::provider::{ChromiumProvider, cdp_err, gone};
use crate::world::WorldError;

static IMAGES: AtomicU64 = AtomicU64::new(0);

/// Default longest side of an image.
pub const DEFAULT_MAX_SIZE: u32 = browserd_protocol::vision::DEFAULT_MAX_EDGE;

/// Default largest encoded image: 3.75 MB, which is 5 MB as base64 (the image limit of common model APIs).
pub const DEFAULT_MAX_BYTES: u32 = browserd_protocol::vision::DEFAULT_MAX_IMAGE_BYTES;

/// The smallest `maxBytes` honoured (a smaller bound is raised to it).
const MIN_MAX_BYTES: u32 = 4096;

/// JPEG/WebP quality is not lowered below this to fit `maxBytes`; the image is downscaled instead.
const MIN_QUALITY: u8 = 40;

/// How many times a capture is encoded again to fit `maxBytes` before it is refused.
const BYTE_TRIES: u32 = 6;

/// How long a screenshot waits for browserd's isolated world before it reads the pixel ratio from the layout metrics.
const WORLD_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// Device pixels per CSS pixel from `Page.getLayoutMetrics` (the deprecated device-pixel `layoutViewport` over
/// `cssLayoutViewport`); `None` when either is missing.
fn metrics_dpr(m: &serde_json::Value) -> Option<f64> {
    let device = m["layoutViewport"]["clientWidth"].as_f64()?;
    let css = m["cssLayoutViewport"]["clientWidth"].as_f64()?;
    (device > 0.0 && css > 0.0).then(|| device / css)
}

/// How long the capture of a browser error page may take before it is answered with a typed error.
const ERROR_PAGE_WAIT: std::time::Duration = std::time::Duration::from_millis(2500);

/// A hidden (background) tab is laid out at another size than the one it gets in front, where an action brings it:
/// its screenshot's geometry would not hold for the points a caller then clicks (refused as a resized viewport).
/// Such a page is brought to the front first, as an action does; a visible one, or one whose visibility cannot be
/// read in browserd's world, is left where it is.
async fn bring_forward_if_hidden(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &browserd_cdp::SessionId,
    deadline: Instant,
) {
    // A browser error page may never give browserd its world (see `capture`): not waited for here.
    if p.st().tabs.get(&tab).is_some_and(|t| t.url.starts_with("chrome-error://")) {
        return;
    }
    let by = deadline.min(Instant::now() + WORLD_WAIT);
    let hidden = || async {
        crate::world::eval(p, tab, session, "document.visibilityState", by).await.ok() == Some(json!("hidden"))
    };
    if !hidden().await {
        return;
    }
    let _ = p.call(Some(session), "Page.bringToFront", json!({}), deadline).await;
    for _ in 0..20 {
        if !hidden().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The site policy: an image shows every pixel of the tab, frames included, so a tab whose page or any of whose
/// frames is on an origin the policy does not authorise is not captured (an observation shows such a frame as one
/// line; an image cannot leave it out). Checked before the capture and again after it, with the main frame's URL read
/// from the browser, so a page that navigated or redirected meanwhile is not sent either.
pub(crate) fn policy_refusal(
    p: &ChromiumProvider,
    tab: TabHandle,
    main_now: Option<&str>,
) -> Result<(), ProviderError> {
    let (shown, frames) = {
        let st = p.st();
        let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
        let frames: Vec<String> =
            t.frames.iter().filter(|(id, _)| **id != t.target_id).map(|(_, f)| f.url.clone()).collect();
        let main = t.frames.get(&t.target_id).map(|f| t.policy_url(&f.url));
        let shown: Vec<String> =
            std::iter::once(t.policy_url(&t.url)).chain(main_now.map(|u| t.policy_url(u))).collect();
        (shown, main.into_iter().chain(frames).collect::<Vec<_>>())
    };
    for u in &shown {
        if let Some(why) = p.origin_refusal(tab, u) {
            return Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!("{ORIGIN_NOT_AUTHORISED_PREFIX}tab {} shows {why}; no screenshot was taken or kept", tab.0),
            ));
        }
    }
    for u in &frames {
        if let Some(why) = p.origin_refusal(tab, u) {
            return Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!(
                    "{ORIGIN_NOT_AUTHORISED_PREFIX}tab {} has a frame that shows {why}; a screenshot would show that \
                     frame's pixels, so none was taken or kept — observe without a screenshot (the frame is one line \
                     there)",
                    tab.0
                ),
            ));
        }
    }
    Ok(())
}

/// The main frame's URL as the browser has it now (`Page.getFrameTree`), when a site policy is in force.
pub(crate) async fn main_frame_url(
    p: &ChromiumProvider,
    session: &browserd_cdp::SessionId,
    deadline: Instant,
) -> Result<Option<String>, ProviderError> {
    if p.config.origin_check.is_none() {
        return Ok(None);
    }
    let tree = p
        .call(Some(session), "Page.getFrameTree", json!({}), deadline)
        .await
        .map_err(|e| cdp_err(&e, "reading the page's address for the site policy"))?;
    let f = &tree["frameTree"]["frame"];
    let url = f["url"].as_str().unwrap_or_default();
    let fragment = f["urlFragment"].as_str().unwrap_or_default();
    Ok(Some(format!("{url}{fragment}")))
}

/// Captures a screenshot.
pub(crate) async fn capture(
    p: &ChromiumProvider,
    tab: TabHandle,
    opts: &ScreenshotOptions,
    deadline: Instant,
) -> Result<Screenshot, ProviderError> {
    let session = p.ensure_attached(tab, deadline).await?;
    if p.st().tabs.get(&tab).ok_or_else(|| gone(tab))?.dialog.is_some() {
        return Err(ProviderError::new(
            ProviderErrorKind::Refused,
            "DIALOG_BLOCKING: a JavaScript dialog is open; handle it with the dialog action first",
        ));
    }
    policy_refusal(p, tab, main_frame_url(p, &session, deadline).await?.as_deref())?;
    bring_forward_if_hidden(p, tab, &session, deadline).await;
    let m = p
        .call(Some(&session), "Page.getLayoutMetrics", json!({}), deadline)
        .await
        .map_err(|e| cdp_err(&e, "reading the layout metrics"))?;
    let vv = &m["cssVisualViewport"];
    let mut vw = vv["clientWidth"].as_f64().unwrap_or(0.0);
    let mut vh = vv["clientHeight"].as_f64().unwrap_or(0.0);
    let sx = vv["pageX"].as_f64().unwrap_or(0.0);
    let sy = vv["pageY"].as_f64().unwrap_or(0.0);
    let zoom = vv["zoom"].as_f64().unwrap_or(1.0);
    // Pinch zoom (`visualViewport.scale` ≠ 1): a capture with a clip resets it to 1 in Chromium (the clip's scale
    // replaces the page scale), which would change the page under the caller and void the image's own geometry. A
    // pinch-zoomed view is captured as shown, without a clip; a part of the page or the full page cannot be.
    let pinch = vv["scale"].as_f64().unwrap_or(1.0);
    let pinched = (pinch - 1.0).abs() > 0.01;
    if pinched && (opts.target.is_some() || opts.full_page) {
        return Err(ProviderError::new(
            ProviderErrorKind::Refused,
            format!(
                "the page is pinch-zoomed (scale {pinch:.2}): an element or full-page screenshot would reset the \
                 pinch zoom; take a screenshot of the view as shown (no target, no fullPage), or undo the pinch zoom \
                 first"
            ),
        ));
    }
    // Read in browserd's isolated world: the page's `devicePixelRatio` is replaceable, and a forged one would make
    // the image's recorded geometry map points to places other than the ones shown.
    // An error page (`chrome-error://`) or a blank one may never give browserd an isolated world: after a short wait
    // the ratio comes from the layout metrics (device pixels over CSS pixels), so the screenshot answers in time.
    let world_by = deadline.min(Instant::now() + WORLD_WAIT);
    let dpr = match crate::world::eval(p, tab, &session, "window.devicePixelRatio", world_by).await {
        // `devicePixelRatio` already counts the page zoom (150 % zoom at a device scale of 1 reads 1.5).
        Ok(v) => v.as_f64().unwrap_or(1.0),
        Err(e) => match metrics_dpr(&m) {
            Some(ratio) => ratio,
            None => {
                return Err(match e {
                    WorldError::Link(e) => cdp_err(&e, "reading the device pixel ratio"),
                    e => ProviderError::new(
                        ProviderErrorKind::Refused,
                        format!(
                            "reading the device pixel ratio: {e}; browserd never takes it from the page's own world \
                             — retry, and if it keeps failing observe the page instead"
                        ),
                    ),
                });
            }
        },
    };
    let (mut cur_x, mut cur_y) = (sx, sy);
    let (x, y, w, h, beyond) = if let Some(target) = &opts.target {
        let res = match resolve_ref(p, tab, target.as_str()) {
            Ok(r) => r,
            Err(RefError::TabGone) => return Err(gone(tab)),
            Err(RefError::Unknown) => {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!("TARGET_NOT_FOUND: ref {target} was never issued; observe first"),
                ));
            }
            Err(RefError::Stale(why)) => {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!("STALE_TARGET: ref {target} is stale: {why}; observe again"),
                ));
            }
        };
        let _ = p
            .call(Some(&res.session), "DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": res.backend}), deadline)
            .await;
        let q = crate::act::quad_center(p, tab, &res, deadline)
            .await
            .map_err(|e| ProviderError::new(ProviderErrorKind::InvalidRequest, format!("NOT_ACTIONABLE: {e}")))?;
        let m2 = p
            .call(Some(&session), "Page.getLayoutMetrics", json!({}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "reading the layout metrics"))?;
        let px = m2["cssVisualViewport"]["pageX"].as_f64().unwrap_or(0.0);
        let py = m2["cssVisualViewport"]["pageY"].as_f64().unwrap_or(0.0);
        (cur_x, cur_y) = (px, py);
        // Beyond-viewport capture only when the element does not fit on screen (it can change the page's layout).
        let fits = q.left >= 0.0 && q.top >= 0.0 && q.left + q.width <= vw && q.top + q.height <= vh;
        (q.left + px, q.top + py, q.width.max(1.0), q.height.max(1.0), !fits)
    } else if opts.full_page {
        let cs = &m["cssContentSize"];
        (0.0, 0.0, cs["width"].as_f64().unwrap_or(vw), cs["height"].as_f64().unwrap_or(vh), true)
    } else {
        (sx, sy, vw, vh, false)
    };
    let max = f64::from(opts.max_size.unwrap_or(DEFAULT_MAX_SIZE).max(16));
    // Image pixels per CSS pixel: the device ratio, reduced so the longest side fits `max`. A pinch-zoomed view as
    // shown has the device ratio times the pinch scale, and cannot be reduced (see above).
    let scale = if pinched { dpr * pinch } else { dpr.min(max / w.max(h)).max(0.01) };
    if pinched && (w.max(h) * scale).round() > max {
        return Err(ProviderError::new(
            ProviderErrorKind::Refused,
            format!(
                "the page is pinch-zoomed (scale {pinch:.2}): its view is {:.0}x{:.0} pixels as shown, over maxSize \
                 {max}, and a smaller image would reset the pinch zoom; ask for maxSize {:.0} or more (if the host takes \
                 it), or undo the pinch zoom first",
                w * scale,
                h * scale,
                (w.max(h) * scale).ceil()
            ),
        ));
    }
    // The capture's clip is in device-independent pixels (CSS pixels times the page zoom), and its output has
    // `clip.scale` times the device scale factor pixels per such pixel: `scale / dpr` gives `scale` image pixels per
    // CSS pixel (at 150 % zoom and a device scale of 1, a 510 CSS px viewport is a 765 DIP clip and 765 pixels).
    let z = zoom.max(0.01);
    let format = opts.format.unwrap_or_default();
    let max_bytes =
        usize::try_from(opts.max_bytes.unwrap_or(DEFAULT_MAX_BYTES).max(MIN_MAX_BYTES)).unwrap_or(usize::MAX);
    let (mut scale, mut quality) = (scale, opts.quality.unwrap_or(80).clamp(1, 100));
    let epoch = p.st().tabs.get(&tab).map_or(0, crate::state::Tab::main_epoch);
    let remote = p.kind() == browserd_core::provider::ProviderKind::Remote;
    if remote {
        // A remote browser keeps its tabs in one window, and a background tab draws no frames, so it cannot be
        // captured: bring it to the front of its window first.
        p.call(Some(&session), "Page.bringToFront", json!({}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "bringing the tab to the front for its screenshot"))?;
    }
    // Chromium often renders no frame of its error page (`chrome-error://`) in a background tab, and the capture
    // then never answers: bound it, and answer with a typed error that says what the tab shows, inside the deadline.
    // The tab's URL is the one that failed to load; its main frame's document is `chrome-error://chromewebdata/`.
    let error_page = p.st().tabs.get(&tab).is_some_and(|t| {
        t.url.starts_with("chrome-error://")
            || t.frames.get(&t.target_id).is_some_and(|f| f.url.starts_with("chrome-error://"))
    });
    let capture_by = if error_page { deadline.min(Instant::now() + ERROR_PAGE_WAIT) } else { deadline };
    let mut tries = 0;
    let r = loop {
        let mut params = json!({
            "format": match format { ImageFormat::Png => "png", ImageFormat::Jpeg => "jpeg", ImageFormat::Webp => "webp" },
            "clip": {"x": x * z, "y": y * z, "width": w * z, "height": h * z, "scale": scale / dpr},
            "captureBeyondViewport": beyond,
        });
        if pinched {
            // The view as shown: no clip (a clip resets the pinch zoom).
            params = json!({"format": params["format"].clone()});
        }
        if format != ImageFormat::Png {
            params["quality"] = json!(quality);
        }
        let r = match p.call(Some(&session), "Page.captureScreenshot", params, capture_by).await {
            Ok(r) => r,
            Err(_) if error_page && Instant::now() >= capture_by && capture_by < deadline => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Refused,
                    "the tab shows the browser's error page for a load that failed (chrome-error://), \
                 which Chromium did not render for a screenshot; observe without a screenshot (its text says what \
                 failed), or navigate the tab to a page that loads",
                ));
            }
            Err(browserd_cdp::CdpError::Timeout { .. }) if remote => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Unsupported(browserd_core::provider::UnsupportedReason::ByImplementation),
                    "this remote browser drew no frame for the tab in time even after bringing it to the front (a \
                 background tab of a browser without a visible window); observe the tab instead, or open it in the \
                 foreground",
                ));
            }
            Err(e) => return Err(cdp_err(&e, "capturing the screenshot")),
        };
        // Bounded in bytes as well as in size: a larger image is encoded again at a lower quality (JPEG, WebP), then at
        // a smaller scale, and its geometry says the scale it was really taken at.
        let bytes = r["data"].as_str().map_or(0, |d| d.len() / 4 * 3);
        if bytes <= max_bytes {
            break r;
        }
        if tries >= BYTE_TRIES {
            return Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!(
                    "the screenshot is {bytes} bytes even at scale {scale:.3}, over maxBytes {max_bytes}; ask for a \
                 smaller maxSize, a part of the page (target), or jpeg"
                ),
            ));
        }
        tries += 1;
        if format != ImageFormat::Png && quality > MIN_QUALITY {
            quality = (quality * 2 / 3).max(MIN_QUALITY);
        } else if pinched {
            return Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!(
                    "the page is pinch-zoomed (scale {pinch:.2}): its view as shown is {bytes} bytes, over maxBytes \
                     {max_bytes}, and a smaller image would reset the pinch zoom; ask for jpeg, or undo the pinch zoom \
                     first"
                ),
            ));
        } else {
            #[allow(clippy::cast_precision_loss)]
            let ratio = (max_bytes as f64 / bytes as f64).sqrt();
            scale = (scale * ratio * 0.9).max(0.01);
        }
    };
    // The page may have navigated (or been redirected) while it was captured: checked again before the image leaves.
    policy_refusal(p, tab, main_frame_url(p, &session, deadline).await?.as_deref())?;
    if beyond {
        // Capturing beyond the viewport can leave the page without its scrollbar (a wider layout viewport) in
        // Chromium: record the viewport the page has now, which is what later coordinate actions are checked against.
        if let Ok(v) = current_viewport(p, tab, &session, deadline).await {
            (vw, vh) = (v.width, v.height);
            (cur_x, cur_y) = (v.scroll_x, v.scroll_y);
        }
    }
    let image_id = format!("img{}", IMAGES.fetch_add(1, Ordering::Relaxed) + 1);
    let data = r["data"].as_str().unwrap_or_default().to_owned();
    // The size of the image really sent (the browser rounds the clip); what it asked for if the header is unreadable.
    let asked = Size { width: (w * scale).round(), height: (h * scale).round() };
    let pixel_size = base64::engine::general_purpose::STANDARD
        .decode(data.get(..data.len().min(64 * 1024)).unwrap_or_default())
        .ok()
        .and_then(|bytes| crate::image_size::image_size(&bytes))
        .map_or(asked, |(w, h)| Size { width: f64::from(w), height: f64::from(h) });
    if let Some(t) = p.st().tabs.get_mut(&tab) {
        t.images.push(ImageGeom {
            image_id: image_id.clone(),
            doc_epoch: epoch,
            scale,
            clip: (x, y),
            pixels: (pixel_size.width, pixel_size.height),
            view: Viewport {
                width: vw,
                height: vh,
                scroll_x: cur_x,
                scroll_y: cur_y,
                zoom,
                dpr,
                pinch,
                offset: (vv["offsetX"].as_f64().unwrap_or(0.0), vv["offsetY"].as_f64().unwrap_or(0.0)),
            },
        });
    }
    let captured_at =
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    Ok(Screenshot {
        image_id,
        format,
        data,
        viewport_css_size: Size { width: vw, height: vh },
        pixel_size,
        dpr,
        scale,
        scroll: Point { x: cur_x, y: cur_y },
        clip_origin: Point { x, y },
        document_epoch: epoch,
        captured_at,
    })
}
