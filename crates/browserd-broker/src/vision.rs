//! Vision modes per session (`session.vision`, shown by `browser_status`) and what `semantic-only` refuses: a
//! screenshot answers `VISION_UNAVAILABLE` with the page's text observation, a point of a screenshot (`at`,
//! `dropAt`) is refused before anything is sent, and an observation of a page that draws in a canvas says that it
//! needs vision; a raw protocol method that captures pixels (`browser_cdp Page.captureScreenshot`) is refused like a
//! screenshot. The host's image limits (`session.vision`'s `limits`) bound every screenshot of the session.

use browserd_protocol::vision::{NO_VISION_NEXT_STEP, SessionVisionParams};
use browserd_protocol::{ActParams, ErrorCode, ErrorData, ImageBounds, SessionId, VisionMode, VisionStatus};
use serde_json::{Value, json};

use crate::server::Broker;

impl Broker {
    /// `session.vision`: records the image route the host offers now.
    pub(crate) fn session_vision(&self, p: &SessionVisionParams) -> Result<VisionStatus, ErrorData> {
        let mut tables = self.tables();
        let info = tables.sessions.get_mut(&p.session).ok_or_else(|| {
            ErrorData::new(ErrorCode::UnknownSession, format!("no open session `{}` in this broker", p.session))
        })?;
        let source = p.source.clone().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "host".to_owned());
        info.vision = VisionStatus { mode: p.mode, limits: ImageBounds::of(p.limits.as_ref(), &source), source };
        tracing::info!(session = %p.session, mode = p.mode.as_str(), source = %info.vision.source, "vision mode set");
        Ok(info.vision.clone())
    }

    /// The session's vision mode (the default for a session the host said nothing about).
    pub(crate) fn vision_of(&self, id: &SessionId) -> VisionStatus {
        self.tables().sessions.get(id).map_or_else(VisionStatus::default_native, |info| info.vision.clone())
    }
}

/// `VISION_UNAVAILABLE` for a screenshot asked without an image route, carrying the text observation taken instead.
pub(crate) fn unavailable(observation: Value) -> ErrorData {
    ErrorData::new(
        ErrorCode::VisionUnavailable,
        "no screenshot was taken: this session has no image route (vision mode semantic-only); the page's text \
         observation is in details.observation",
    )
    .with_next_step(NO_VISION_NEXT_STEP)
    .with_details(json!({"vision": VisionMode::SemanticOnly, "observation": observation}))
}

/// Refuses points of screenshots (`at`, `dropAt`) in a session without an image route, before anything is sent.
pub(crate) fn refuse_points<'a>(
    mode: VisionMode,
    steps: impl IntoIterator<Item = &'a ActParams>,
) -> Result<(), ErrorData> {
    if mode.has_image_route() {
        return Ok(());
    }
    if steps.into_iter().any(|s| s.at.is_some() || s.drop_at.is_some()) {
        return Err(ErrorData::new(
            ErrorCode::VisionUnavailable,
            "a screenshot point (at/dropAt) cannot be used: this session has no image route (vision mode \
             semantic-only); nothing was sent",
        )
        .with_next_step(
            "Act on a ref from browser_observe instead; for what only a picture shows, ask the user or enable a \
             vision route.",
        )
        .with_details(json!({"vision": VisionMode::SemanticOnly})));
    }
    Ok(())
}

/// Refuses a raw protocol method that captures the page's pixels (`browser_cdp Page.captureScreenshot`, …) in a
/// session without an image route, before anything is sent: it would be a screenshot past `semantic-only`.
pub(crate) fn refuse_pixel_method(mode: VisionMode, method: &str) -> Result<(), ErrorData> {
    if mode.has_image_route() || !browserd_chromium::captures_pixels(method) {
        return Ok(());
    }
    Err(ErrorData::new(
        ErrorCode::VisionUnavailable,
        format!(
            "`{}` captures the page's pixels and this session has no image route (vision mode semantic-only); \
             nothing was sent",
            method.trim()
        ),
    )
    .with_next_step(NO_VISION_NEXT_STEP)
    .with_details(json!({"vision": VisionMode::SemanticOnly, "method": method.trim()})))
}

/// In a session without an image route, the observation's note on canvas content says vision is needed.
pub(crate) fn mark_pixel_content(value: &mut Value, mode: VisionMode) {
    if mode.has_image_route() {
        return;
    }
    if let Some(pixel) = value.get_mut("pixelContent").and_then(Value::as_object_mut) {
        pixel.insert("needsVision".to_owned(), Value::Bool(true));
        pixel.insert("nextStep".to_owned(), Value::String(NO_VISION_NEXT_STEP.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_only_marks_canvas_content_and_refuses_points() {
        let mut v =
            json!({"pixelContent": {"canvases": 1, "largest": {"width": 400.0, "height": 300.0}, "nextStep": "x"}});
        mark_pixel_content(&mut v, VisionMode::NativeMultimodal);
        assert_eq!(v["pixelContent"]["nextStep"], "x");
        mark_pixel_content(&mut v, VisionMode::SemanticOnly);
        assert_eq!(v["pixelContent"]["needsVision"], true);
        assert_eq!(v["pixelContent"]["nextStep"], NO_VISION_NEXT_STEP);

        let click: ActParams =
            serde_json::from_value(json!({"action": "click", "at": {"imageId": "img1", "x": 1, "y": 2}})).unwrap();
        assert!(refuse_points(VisionMode::DshVisionRouter, [&click]).is_ok());
        assert_eq!(refuse_points(VisionMode::SemanticOnly, [&click]).unwrap_err().code, ErrorCode::VisionUnavailable);
        let by_ref: ActParams = serde_json::from_value(json!({"action": "click", "target": "e1"})).unwrap();
        assert!(refuse_points(VisionMode::SemanticOnly, [&by_ref]).is_ok());

        let shot = refuse_pixel_method(VisionMode::SemanticOnly, "Page.captureScreenshot").unwrap_err();
        assert_eq!(shot.code, ErrorCode::VisionUnavailable);
        assert!(refuse_pixel_method(VisionMode::SemanticOnly, "Runtime.evaluate").is_ok());
        assert!(refuse_pixel_method(VisionMode::DshVisionRouter, "Page.captureScreenshot").is_ok());
    }
}
