//! Coordinate (vision) targets: the geometry of recent screenshots per tab, and the re-validation that maps a point
//! of a screenshot to the current top-level viewport before any input is sent.

use std::collections::VecDeque;

use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::TabHandle;
use browserd_protocol::{ImagePoint, codes};
use serde_json::json;

use crate::provider::ChromiumProvider;
use crate::world::{self, WorldError};

/// How many screenshots per tab keep their geometry for coordinate actions.
pub(crate) const IMAGE_WINDOW: usize = 8;
/// Tolerance when comparing CSS sizes, zoom and device pixel ratios.
const EPS: f64 = 0.01;

/// What a screenshot's pixels meant when it was taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImageGeom {
    pub(crate) image_id: String,
    /// Main-frame document epoch at capture.
    pub(crate) doc_epoch: u64,
    /// Image pixels per CSS pixel.
    pub(crate) scale: f64,
    /// Page (document) CSS coordinates of image pixel (0, 0).
    pub(crate) clip: (f64, f64),
    /// Image size in pixels.
    pub(crate) pixels: (f64, f64),
    /// The viewport at capture time.
    pub(crate) view: Viewport,
}

/// The top-level visual viewport: CSS size, page scroll offset, page zoom and device pixel ratio (which counts the zoom),
/// the pinch zoom (`visualViewport.scale`) and where the pinch-zoomed view lies in the layout viewport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Viewport {
    pub(crate) width: f64,
    pub(crate) height: f64,
    pub(crate) scroll_x: f64,
    pub(crate) scroll_y: f64,
    pub(crate) zoom: f64,
    pub(crate) dpr: f64,
    pub(crate) pinch: f64,
    /// The visual viewport's offset in the layout viewport (CSS pixels; non-zero only when pinch-zoomed and panned).
    pub(crate) offset: (f64, f64),
}

impl Viewport {
    /// The viewport of `Page.getLayoutMetrics`'s `cssVisualViewport` and a device pixel ratio.
    pub(crate) fn of_metrics(m: &serde_json::Value, dpr: f64) -> Self {
        let vv = &m["cssVisualViewport"];
        let f = |k: &str, d: f64| vv[k].as_f64().unwrap_or(d);
        Viewport {
            width: f("clientWidth", 0.0),
            height: f("clientHeight", 0.0),
            scroll_x: f("pageX", 0.0),
            scroll_y: f("pageY", 0.0),
            zoom: f("zoom", 1.0),
            dpr,
            pinch: f("scale", 1.0),
            offset: (f("offsetX", 0.0), f("offsetY", 0.0)),
        }
    }
}

/// Reads the top-level viewport of a page session the way screenshots record it. The device pixel ratio is read in
/// browserd's isolated world: the page's own `devicePixelRatio` is replaceable, and a forged one would map a
/// screenshot point to another place than the one shown.
pub(crate) async fn current_viewport(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    deadline: Instant,
) -> Result<Viewport, WorldError> {
    let (m, dpr) = tokio::join!(
        p.call(Some(session), "Page.getLayoutMetrics", json!({}), deadline),
        world::eval(p, tab, session, "window.devicePixelRatio", deadline),
    );
    let (m, dpr) = (m.map_err(WorldError::Link)?, dpr?);
    // The ratio counts the page zoom already (as screenshots record it).
    Ok(Viewport::of_metrics(&m, dpr.as_f64().unwrap_or(1.0)))
}

/// Recent screenshots of one tab, newest last.
#[derive(Debug, Default)]
pub(crate) struct ImageLog(VecDeque<ImageGeom>);

impl ImageLog {
    /// Records a screenshot, forgetting the oldest beyond the window and those of earlier documents.
    pub(crate) fn push(&mut self, g: ImageGeom) {
        let epoch = g.doc_epoch;
        // Images of a replaced document can never be used again; keep one so its id reports "stale", not "unknown".
        let last_old = self.0.iter().rposition(|o| o.doc_epoch != epoch);
        let mut i = 0;
        self.0.retain(|o| {
            i += 1;
            o.doc_epoch == epoch || Some(i - 1) == last_old
        });
        self.0.push_back(g);
        while self.0.len() > IMAGE_WINDOW {
            self.0.pop_front();
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&ImageGeom> {
        self.0.iter().find(|g| g.image_id == id)
    }
}

/// Why a point cannot be used; `code` is an action result code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal { code, message: message.into() }
}

/// A screenshot point mapped to the current viewport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mapped {
    /// Top-level visual viewport CSS coordinates (what the Input domain takes; the pinch-zoomed view's own).
    pub(crate) x: f64,
    pub(crate) y: f64,
    /// The same point in layout viewport CSS coordinates (what hit tests take): `x, y` plus the pinch-zoomed view's
    /// offset in the layout viewport.
    pub(crate) hit_x: f64,
    pub(crate) hit_y: f64,
    /// How far the page scrolled since the screenshot (CSS pixels), when it did.
    pub(crate) scrolled: Option<(f64, f64)>,
}

/// Maps image pixels to the current viewport: page CSS = clip origin + pixel / scale, viewport = page − scroll now.
/// Refuses when the page's document, viewport size, zoom or pixel ratio changed, or the point is not on screen.
pub(crate) fn map_point(g: &ImageGeom, pt: &ImagePoint, epoch_now: u64, now: &Viewport) -> Result<Mapped, Refusal> {
    if g.doc_epoch != epoch_now {
        return Err(refuse(
            codes::STALE_TARGET,
            format!("the page changed since screenshot {} (a new document loaded); take a new one", g.image_id),
        ));
    }
    if !(pt.x.is_finite() && pt.y.is_finite()) || pt.x < 0.0 || pt.y < 0.0 || pt.x > g.pixels.0 || pt.y > g.pixels.1 {
        return Err(refuse(
            codes::INVALID_PARAMS,
            format!(
                "point ({}, {}) is outside screenshot {} ({}x{} pixels); use image pixel coordinates",
                pt.x, pt.y, g.image_id, g.pixels.0, g.pixels.1
            ),
        ));
    }
    let (was, is) = (&g.view, now);
    // The pinch zoom first: it changes the view's CSS size too, and "resized" would not say why.
    if (was.pinch - is.pinch).abs() > EPS {
        return Err(refuse(
            codes::STALE_TARGET,
            format!(
                "the pinch zoom changed since screenshot {} (scale {:.2} → {:.2}); take a new one",
                g.image_id, was.pinch, is.pinch
            ),
        ));
    }
    if (was.width - is.width).abs() > 0.5 || (was.height - is.height).abs() > 0.5 {
        return Err(refuse(
            codes::STALE_TARGET,
            format!(
                "the viewport was resized since screenshot {} ({}x{} → {}x{} CSS px); take a new one",
                g.image_id, was.width, was.height, is.width, is.height
            ),
        ));
    }
    if (was.zoom - is.zoom).abs() > EPS || (was.dpr - is.dpr).abs() > EPS {
        return Err(refuse(
            codes::STALE_TARGET,
            format!(
                "the page zoom changed since screenshot {} (zoom {} → {}, pixel ratio {} → {}); take a new one",
                g.image_id, was.zoom, is.zoom, was.dpr, is.dpr
            ),
        ));
    }
    let page_x = g.clip.0 + pt.x / g.scale;
    let page_y = g.clip.1 + pt.y / g.scale;
    let (x, y) = (page_x - is.scroll_x, page_y - is.scroll_y);
    let (dx, dy) = (is.scroll_x - was.scroll_x, is.scroll_y - was.scroll_y);
    let scrolled = (dx.abs() >= 0.5 || dy.abs() >= 0.5).then_some((dx, dy));
    if x < 0.0 || y < 0.0 || x >= is.width || y >= is.height {
        let why = match scrolled {
            Some((dx, dy)) => format!(
                "the page scrolled by ({dx:.0}, {dy:.0}) CSS px since screenshot {} and the point is now off screen; \
                 scroll it back into view or take a new screenshot",
                g.image_id
            ),
            None => format!(
                "the point of screenshot {} is outside the current viewport ({:.0}x{:.0} CSS px); scroll it into view \
                 and take a new screenshot",
                g.image_id, is.width, is.height
            ),
        };
        return Err(refuse(codes::OUT_OF_VIEWPORT, why));
    }
    Ok(Mapped { x, y, hit_x: x + is.offset.0, hit_y: y + is.offset.1, scrolled })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(sx: f64, sy: f64) -> Viewport {
        Viewport {
            width: 1000.0,
            height: 800.0,
            scroll_x: sx,
            scroll_y: sy,
            zoom: 1.0,
            dpr: 1.0,
            pinch: 1.0,
            offset: (0.0, 0.0),
        }
    }

    fn geom(scale: f64, sy: f64) -> ImageGeom {
        ImageGeom {
            image_id: "img1".into(),
            doc_epoch: 3,
            scale,
            clip: (0.0, sy),
            pixels: (1000.0 * scale, 800.0 * scale),
            view: view(0.0, sy),
        }
    }

    fn pt(x: f64, y: f64) -> ImagePoint {
        ImagePoint { image_id: "img1".into(), x, y }
    }

    #[test]
    fn downscaled_pixels_map_to_css_pixels() {
        let m = map_point(&geom(0.5, 0.0), &pt(100.0, 50.0), 3, &view(0.0, 0.0)).unwrap();
        assert_eq!((m.x, m.y, m.scrolled), (200.0, 100.0, None));
    }

    #[test]
    fn scrolling_adjusts_by_the_delta_or_refuses_off_screen() {
        let m = map_point(&geom(1.0, 100.0), &pt(10.0, 500.0), 3, &view(0.0, 300.0)).unwrap();
        assert_eq!((m.x, m.y, m.scrolled), (10.0, 300.0, Some((0.0, 200.0))));
        let r = map_point(&geom(1.0, 100.0), &pt(10.0, 50.0), 3, &view(0.0, 300.0)).unwrap_err();
        assert_eq!(r.code, codes::OUT_OF_VIEWPORT);
        assert!(r.message.contains("scrolled by (0, 200)"), "{}", r.message);
    }

    #[test]
    fn other_documents_sizes_and_zooms_are_stale() {
        assert_eq!(
            map_point(&geom(1.0, 0.0), &pt(1.0, 1.0), 4, &view(0.0, 0.0)).unwrap_err().code,
            codes::STALE_TARGET
        );
        let mut v = view(0.0, 0.0);
        v.width = 900.0;
        assert!(map_point(&geom(1.0, 0.0), &pt(1.0, 1.0), 3, &v).unwrap_err().message.contains("resized"));
        v = view(0.0, 0.0);
        v.zoom = 2.0;
        assert!(map_point(&geom(1.0, 0.0), &pt(1.0, 1.0), 3, &v).unwrap_err().message.contains("zoom"));
        v = view(0.0, 0.0);
        v.pinch = 2.0;
        assert!(map_point(&geom(1.0, 0.0), &pt(1.0, 1.0), 3, &v).unwrap_err().message.contains("pinch zoom changed"));
        let e = map_point(&geom(1.0, 0.0), &pt(1001.0, 1.0), 3, &view(0.0, 0.0)).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
    }

    #[test]
    fn a_pinch_zoomed_view_hit_tests_in_layout_coordinates() {
        // Pinch zoom 2 panned by (100, 50) in the layout viewport: the image shows the view at 2 px per CSS px.
        let mut v = view(100.0, 50.0);
        (v.width, v.height, v.pinch, v.offset) = (500.0, 400.0, 2.0, (100.0, 50.0));
        let g = ImageGeom {
            image_id: "img1".into(),
            doc_epoch: 3,
            scale: 2.0,
            clip: (100.0, 50.0),
            pixels: (1000.0, 800.0),
            view: v,
        };
        let m = map_point(&g, &pt(200.0, 100.0), 3, &v).unwrap();
        assert_eq!((m.x, m.y, m.hit_x, m.hit_y), (100.0, 50.0, 200.0, 100.0));
    }

    #[test]
    fn full_page_points_below_the_fold_are_out_of_viewport() {
        let mut g = geom(1.0, 0.0);
        g.pixels = (1000.0, 3000.0);
        let e = map_point(&g, &pt(10.0, 2000.0), 3, &view(0.0, 0.0)).unwrap_err();
        assert_eq!(e.code, codes::OUT_OF_VIEWPORT);
    }

    #[test]
    fn the_log_is_bounded_and_drops_old_documents() {
        let mut log = ImageLog::default();
        for i in 0..12 {
            let mut g = geom(1.0, 0.0);
            g.image_id = format!("img{i}");
            log.push(g);
        }
        assert!(log.get("img3").is_none() && log.get("img4").is_some() && log.get("img11").is_some());
        let mut g = geom(1.0, 0.0);
        g.image_id = "new".into();
        g.doc_epoch = 9;
        log.push(g);
        assert!(log.get("new").is_some() && log.get("img11").is_some() && log.get("img10").is_none());
    }
}
