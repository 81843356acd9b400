//! Upload: set an authorised file on a file input and read the file name back.

use std::path::Path;
use std::time::Instant;

use browserd_protocol::{ActParams, Dispatch, codes};
use serde_json::json;

use crate::act::fail::{Fail, cdp_fail};
use crate::act::run::{Run, ms};

impl Run<'_> {
    /// Sets a file from an authorised upload directory on a file input.
    pub(super) async fn upload(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let path = params
            .value
            .clone()
            .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "upload needs `value` (an authorised file path)"))?;
        let canon = std::fs::canonicalize(&path)
            .map_err(|e| Fail::new(codes::INVALID_PARAMS, format!("cannot read {path}: {e}")))?;
        let allowed = self
            .p
            .config
            .upload_roots
            .iter()
            .any(|root| std::fs::canonicalize(root).is_ok_and(|r| canon.starts_with(r)));
        if !allowed || !canon.is_file() {
            return Err(Fail::new(
                codes::POLICY_DENIED,
                format!("{path} is not inside an authorised upload directory; ask the user to authorise it"),
            ));
        }
        let res = self.resolve(params.target.as_ref())?;
        self.res.timings.resolve = ms(r0.elapsed());
        let obj = self.object(&res).await?;
        let pr = self.probe(&res, &obj).await?;
        if pr["tag"] != json!("INPUT") || pr["type"] != json!("file") {
            return Err(Fail::new(codes::NOT_ACTIONABLE, "the target is not a file input (<input type=file>)"));
        }
        let d0 = Instant::now();
        self.sending()?;
        self.p
            .call(
                Some(&res.session),
                "DOM.setFileInputFiles",
                json!({"files": [canon], "backendNodeId": res.backend}),
                self.deadline,
            )
            .await
            .map_err(|e| cdp_fail(&e, "setting the file", false))?;
        self.res.dispatch = Dispatch::Dispatched;
        self.res.timings.dispatch = ms(d0.elapsed());
        let n = self
            .call_on(
                &res.session,
                &obj,
                "function(){ return Array.from(this.files || []).map(f => f.name).join(','); }",
                json!([]),
            )
            .await?;
        let name = Path::new(&canon).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if n.as_str() != Some(name.as_str()) {
            return Err(Fail::new(codes::INPUT_NOT_APPLIED, format!("the input holds {n} instead of {name}")));
        }
        self.res.effects.value = Some(name);
        self.res.dispatch = Dispatch::Observed;
        Ok(())
    }
}
