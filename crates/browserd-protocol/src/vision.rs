//! Vision modes: whether a session's screenshots may go to its main model, to a grounding tool of the host, or
//! nowhere (`semantic-only`); `session.vision`, by which an adapter says which one its host offers; and the
//! observation's note on content that only pixels show (a drawing `<canvas>`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;
use crate::jsonrpc::Validate;
use crate::page::Size;

/// Where a session's screenshots may go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VisionMode {
    /// The main model takes images: screenshots go back as image content.
    #[default]
    NativeMultimodal,
    /// The main model takes no images, but a host grounding tool (dsh-vision-router's `vision_ground`) reads the
    /// screenshot as an attachment and answers points in its pixels, used as `at: {imageId, x, y}`.
    DshVisionRouter,
    /// No image route: a screenshot is refused with `VISION_UNAVAILABLE` and the page's text observation.
    SemanticOnly,
}

impl VisionMode {
    /// The wire name, e.g. `semantic-only`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            VisionMode::NativeMultimodal => "native-multimodal",
            VisionMode::DshVisionRouter => "dsh-vision-router",
            VisionMode::SemanticOnly => "semantic-only",
        }
    }

    /// Whether screenshots may be taken at all in this mode.
    #[must_use]
    pub const fn has_image_route(self) -> bool {
        !matches!(self, VisionMode::SemanticOnly)
    }
}

/// A session's vision mode and what chose it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisionStatus {
    /// The mode in use.
    pub mode: VisionMode,
    /// What the host said (e.g. `model faux/m1 declares input text`); `default` when it said nothing.
    pub source: String,
}

impl VisionStatus {
    /// The mode of a session whose host never said: native (MCP hosts and the CLI show images).
    #[must_use]
    pub fn default_native() -> Self {
        Self { mode: VisionMode::NativeMultimodal, source: "default".to_owned() }
    }
}

/// Params of `session.vision`: the adapter says which image route the host offers now (at session start and
/// whenever it changes, e.g. the user picks another model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionVisionParams {
    /// Session.
    pub session: SessionId,
    /// The mode.
    pub mode: VisionMode,
    /// What the host said, shown in `browser_status` (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Validate for SessionVisionParams {
    fn validate(&self) -> Result<(), String> {
        match &self.source {
            Some(s) if s.chars().count() > 200 => Err("source is longer than 200 characters".to_owned()),
            _ => Ok(()),
        }
    }
}

/// Content only pixels show: drawing canvases on the page (no text or ref reads what they draw).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PixelContent {
    /// Visible canvases of at least 64×64 CSS pixels.
    pub canvases: u32,
    /// The largest one, in CSS pixels.
    pub largest: Size,
    /// Set when the session has no image route: what the canvas shows cannot be read here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_vision: bool,
    /// What to do to read it.
    pub next_step: String,
}

/// The next step of [`PixelContent`] when the session has an image route.
pub const PIXEL_CONTENT_NEXT_STEP: &str =
    "what the canvas draws is only in its pixels: observe with screenshot: true to see it, and act on it with at";

/// The next step of [`PixelContent`] (and of `VISION_UNAVAILABLE`) when the session has none.
pub const NO_VISION_NEXT_STEP: &str = "This session has no image route (semantic-only): ask the user what the \
     picture shows, or enable a vision route (a model that takes images, or a grounding tool); until then work from \
     the page's text and refs.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_serialise_in_kebab_case() {
        for mode in [VisionMode::NativeMultimodal, VisionMode::DshVisionRouter, VisionMode::SemanticOnly] {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        assert!(serde_json::from_str::<VisionMode>("\"native\"").is_err());
        let p = SessionVisionParams { session: SessionId::new("s1"), mode: VisionMode::SemanticOnly, source: None };
        assert!(p.validate().is_ok());
        let long = SessionVisionParams { source: Some("x".repeat(201)), ..p };
        assert!(long.validate().is_err());
    }
}
