//! Dispatch: each action kind to its family (one file each), which resolves its target, checks it, sends the input
//! through the last-hop path ([`send`]) and reads back what it can.

mod choose;
mod dialog;
mod drag;
mod keys;
mod navigate;
mod pointer;
mod scroll;
mod send;
mod text;
mod upload;
mod value;

use std::time::Instant;

use browserd_protocol::{ActParams, ActionKind, codes};

use super::fail::{Fail, blocked_by};
use super::run::Run;

impl Run<'_> {
    /// Performs the action: the checks every kind shares, then its family.
    pub(super) async fn perform(&mut self, params: &ActParams) -> Result<(), Fail> {
        let r0 = Instant::now();
        if params.action != ActionKind::Dialog
            && let Some(d) = self.dialog_open()
        {
            return Err(blocked_by(&d));
        }
        let pointable =
            matches!(params.action, ActionKind::Click | ActionKind::Dblclick | ActionKind::Hover | ActionKind::Drag);
        if (params.at.is_some() && !pointable) || (params.drop_at.is_some() && params.action != ActionKind::Drag) {
            return Err(Fail::new(
                codes::INVALID_PARAMS,
                "`at` is for click, dblclick, hover and drag, and `dropAt` for drag only; use a `target` ref here",
            ));
        }
        match params.action {
            ActionKind::Click | ActionKind::Dblclick | ActionKind::Hover => self.pointer(params, r0).await,
            ActionKind::Fill | ActionKind::Type => self.fill_or_type(params, r0).await,
            ActionKind::Press => self.press(params, r0).await,
            ActionKind::Select => self.select(params, r0).await,
            ActionKind::Check | ActionKind::Uncheck => self.set_checked(params, r0).await,
            ActionKind::Scroll => self.scroll(params).await,
            ActionKind::Navigate | ActionKind::Back | ActionKind::Forward | ActionKind::Reload => {
                self.navigate(params).await
            }
            ActionKind::Upload => self.upload(params, r0).await,
            ActionKind::Wait => {
                if params.expected.is_empty() {
                    return Err(Fail::new(codes::INVALID_PARAMS, "wait needs `expected` (what to wait for)"));
                }
                Ok(())
            }
            ActionKind::Drag => self.drag(params, r0).await,
            ActionKind::Dialog => self.dialog(params).await,
        }
    }
}
