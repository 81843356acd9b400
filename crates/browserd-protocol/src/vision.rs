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

/// Longest side of a screenshot when neither the request nor the host says otherwise.
pub const DEFAULT_MAX_EDGE: u32 = 1280;

/// Largest encoded screenshot when the host says nothing: 3.75 MB, which is 5 MB as base64 (the image limit of
/// common model APIs).
pub const DEFAULT_MAX_IMAGE_BYTES: u32 = 3_750_000;

/// The largest image a host takes (`session.vision`'s `limits`): every screenshot of the session is sized and
/// encoded to fit, whatever the request asks (a request may ask for less).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageLimits {
    /// Longest side in image pixels (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_edge: Option<u32>,
    /// Largest encoded image in bytes (before base64; at least 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u32>,
    /// Where the limits come from (e.g. `anthropic's API limits`), shown in `browser_status` (at most 200
    /// characters); the `session.vision` source when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The image bounds in force for a session, as `browser_status.vision.limits` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageBounds {
    /// Longest side in image pixels: the host's limit, else the default longest side.
    pub max_edge: u32,
    /// Largest encoded image in bytes: the host's limit, else 3.75 MB (5 MB as base64).
    pub max_bytes: u32,
    /// Who set them: what the host said (e.g. `browserd mcp --max-image-edge 800`), or `default` (then a call may
    /// still ask for a larger `maxSize` or `maxBytes`).
    pub source: String,
    /// Set by the host: a cap on what a call may ask for (the defaults are only defaults).
    #[serde(skip)]
    #[schemars(skip)]
    host: bool,
}

impl Default for ImageBounds {
    fn default() -> Self {
        Self {
            max_edge: DEFAULT_MAX_EDGE,
            max_bytes: DEFAULT_MAX_IMAGE_BYTES,
            source: "default".to_owned(),
            host: false,
        }
    }
}

impl ImageBounds {
    /// The bounds of a host's limits (browserd's defaults where it gave none).
    #[must_use]
    pub fn of(limits: Option<&ImageLimits>, source: &str) -> Self {
        match limits {
            None | Some(ImageLimits { max_edge: None, max_bytes: None, .. }) => Self::default(),
            Some(l) => Self {
                max_edge: l.max_edge.unwrap_or(DEFAULT_MAX_EDGE),
                max_bytes: l.max_bytes.unwrap_or(DEFAULT_MAX_IMAGE_BYTES),
                source: l.source.clone().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| source.to_owned()),
                host: true,
            },
        }
    }

    /// Screenshot options fitted to these bounds: what the request asks for, never more than the host takes.
    #[must_use]
    pub fn fit(&self, opts: &crate::ScreenshotOptions) -> crate::ScreenshotOptions {
        if !self.host {
            return opts.clone();
        }
        let edge = opts.max_size.map_or(self.max_edge.min(DEFAULT_MAX_EDGE), |m| m.min(self.max_edge));
        let bytes = opts.max_bytes.map_or(self.max_bytes, |m| m.min(self.max_bytes));
        crate::ScreenshotOptions { max_size: Some(edge), max_bytes: Some(bytes), ..opts.clone() }
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
    /// The image bounds every screenshot of the session is fitted to.
    #[serde(default)]
    pub limits: ImageBounds,
}

impl VisionStatus {
    /// The mode of a session whose host never said: native (MCP hosts and the CLI show images).
    #[must_use]
    pub fn default_native() -> Self {
        Self { mode: VisionMode::NativeMultimodal, source: "default".to_owned(), limits: ImageBounds::default() }
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
    /// The largest image the host takes (its model's or route's limits); browserd's defaults where absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ImageLimits>,
}

impl Validate for SessionVisionParams {
    fn validate(&self) -> Result<(), String> {
        if let Some(l) = &self.limits {
            if l.max_edge.is_some_and(|e| e < 16) {
                return Err("limits.maxEdge must be at least 16 pixels".to_owned());
            }
            if l.max_bytes.is_some_and(|b| b < 4096) {
                return Err("limits.maxBytes must be at least 4096 bytes".to_owned());
            }
            if l.source.as_ref().is_some_and(|s| s.chars().count() > 200) {
                return Err("limits.source is longer than 200 characters".to_owned());
            }
        }
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
        let p = SessionVisionParams {
            session: SessionId::new("s1"),
            mode: VisionMode::SemanticOnly,
            source: None,
            limits: None,
        };
        assert!(p.validate().is_ok());
        let long = SessionVisionParams { source: Some("x".repeat(201)), ..p.clone() };
        assert!(long.validate().is_err());
        let tiny = SessionVisionParams { limits: Some(ImageLimits { max_edge: Some(8), ..Default::default() }), ..p };
        assert!(tiny.validate().unwrap_err().contains("maxEdge"));
    }

    #[test]
    fn host_limits_cap_what_a_screenshot_asks_for() {
        let limits = ImageLimits { max_edge: Some(400), max_bytes: Some(100_000), source: None };
        let host = ImageBounds::of(Some(&limits), "h");
        assert_eq!(host.source, "h");
        let fitted = host.fit(&crate::ScreenshotOptions::default());
        assert_eq!((fitted.max_size, fitted.max_bytes), (Some(400), Some(100_000)));
        let asked = crate::ScreenshotOptions { max_size: Some(4000), max_bytes: Some(50_000), ..Default::default() };
        let fitted = host.fit(&asked);
        assert_eq!((fitted.max_size, fitted.max_bytes), (Some(400), Some(50_000)), "less may be asked, not more");
        // A host that takes large images does not make the default image larger (only a request can).
        let big = ImageBounds::of(
            Some(&ImageLimits { max_edge: Some(8000), source: Some("api".into()), ..Default::default() }),
            "h",
        );
        assert_eq!(big.source, "api");
        let fitted = big.fit(&crate::ScreenshotOptions::default());
        assert_eq!((fitted.max_size, fitted.max_bytes), (Some(DEFAULT_MAX_EDGE), Some(DEFAULT_MAX_IMAGE_BYTES)));
        assert_eq!(ImageBounds::of(None, "h"), ImageBounds::default());
        // Without host limits a call may ask for more than the defaults.
        let fitted = ImageBounds::default().fit(&asked);
        assert_eq!((fitted.max_size, fitted.max_bytes), (Some(4000), Some(50_000)));
    }
}
