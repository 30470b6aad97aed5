//! Compute Engine's capacity advice: `advice.capacity`, POST
//! `projects/{p}/regions/{r}/advice/capacity`, how likely Compute can create VMs of a
//! shape in the zones named, now (obtainability 0..1, and for spot VMs an uptime
//! estimate).
//!
//! Invariant: one method per Google call; the call changes nothing in the cloud, so a
//! rate-limited answer is sent again by the HTTP layer like any other call, and a
//! failure is returned as it is: callers treat advice as optional.

use super::super::error::GcpError;
use super::super::http::Call;
use super::super::types::advice::{CapacityAdviceRequest, CapacityAdviceResponse};
use super::{Compute, SVC};

impl Compute {
    /// `advice.capacity` in `project`/`region`.
    pub async fn capacity_advice(
        &self,
        project: &str,
        region: &str,
        request: &CapacityAdviceRequest,
    ) -> Result<CapacityAdviceResponse, GcpError> {
        let path = format!("projects/{project}/regions/{region}/advice/capacity");
        let call = Call::post(SVC, "advice.capacity", path).json(request);
        self.http.call(call).await
    }
}
