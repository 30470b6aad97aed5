//! `/v1/testing/noopOperations`: enqueue the NOOP test workflow; `/v1/testing/panic`: a
//! handler that panics (to prove the panic layer). Both answer 404 unless the server runs
//! in development mode or with KINETIC_TEST_WORKFLOWS=true.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::Call;
use super::state::AppState;
use crate::domain::OperationTarget;
use crate::model::Operation;
use crate::service;
use crate::service::noop_operations::NoopSpec;

use super::error::ApiError;
use super::extract::ApiJson;
use super::idempotency::{RequestIdQuery, RequestKey};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_noop))
        // Not in the OpenAPI document: it exists only to prove the panic layer.
        .route("/v1/testing/panic", axum::routing::post(deliberate_panic))
}

fn disabled() -> ApiError {
    ApiError::not_found(
        "ROUTE_NOT_FOUND",
        "test workflows are disabled on this server (enable with --dev or KINETIC_TEST_WORKFLOWS=true)",
    )
}

/// Panic inside a handler (development and test mode only): the answer is the panic
/// layer's 500 with the request id.
async fn deliberate_panic(Call(s, _): Call) -> Result<StatusCode, ApiError> {
    if !s.test_workflows {
        return Err(disabled());
    }
    panic!("deliberate panic from /v1/testing/panic");
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoopRequest {
    /// Team the operation belongs to (MEMBER or more).
    pub team: String,
    /// The operation's target. The team's NOOPs with the same target run one at a
    /// time; a target naming a cluster in one of the team's projects also queues with
    /// that cluster's own operations (any other team's target never does).
    pub target: Option<String>,
    /// Number of steps (1-100).
    pub steps: u32,
    #[serde(default)]
    #[schema(format = Int32)]
    pub step_millis: u64,
    #[serde(default)]
    pub parallel: bool,
    /// Step index -> retryable failures before success.
    #[serde(default)]
    pub fail_retryable: BTreeMap<String, u32>,
    pub fail_terminal_at: Option<u32>,
    pub hang_at: Option<u32>,
}

/// Enqueue a NOOP operation (engine testing; development and test mode only).
#[utoipa::path(post, path = "/v1/testing/noopOperations", operation_id = "createNoopOperation", tag = "testing",
    request_body = NoopRequest, params(RequestIdQuery),
    responses((status = 202, description = "The queued NOOP operation", body = Operation)))]
async fn create_noop(
    Call(s, caller): Call,
    key: RequestKey,
    ApiJson(req): ApiJson<NoopRequest>,
) -> Result<(StatusCode, Json<Operation>), ApiError> {
    if !s.test_workflows {
        return Err(disabled());
    }
    let idem = key.bind(&req)?;
    let spec = NoopSpec {
        steps: req.steps,
        step_millis: req.step_millis,
        parallel: req.parallel,
        fail_retryable: req.fail_retryable,
        fail_terminal_at: req.fail_terminal_at,
        hang_at: req.hang_at,
    };
    let target = req
        .target
        .as_deref()
        .map(OperationTarget::parse)
        .transpose()?
        .map(|t| t.to_string());
    let (op, _) =
        service::noop_operations::enqueue_noop(&s.db, &caller, &req.team, target, spec, idem)
            .await?;
    Ok((StatusCode::ACCEPTED, Json(op)))
}
