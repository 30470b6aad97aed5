//! `GET /v1/teams/{team}/usage`: a team's measured usage, as JSON or (for
//! `Accept: text/csv`) CSV.
//!
//! Invariant: the handler only parses and picks the representation; the service
//! authorises, checks the question and sums.

use axum::Json;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::call::Call;
use super::error::{ApiError, ErrorBody};
use super::extract::{ApiQuery, TeamAt};
use super::state::AppState;
use crate::service;
use crate::service::usage::{UsageAsk, UsageReport};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_usage))
}

const CSV: &str = "text/csv; charset=utf-8";

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct UsageParams {
    /// RFC 3339; default: the start of the current month (UTC, the cloud's clock).
    pub start_time: Option<String>,
    /// RFC 3339, after startTime, at most 400 days later; default: now.
    pub end_time: Option<String>,
    /// cluster (default), pool, accelerator, provisioning, member or day.
    pub group_by: Option<String>,
}

/// What the team's nodes ran between startTime and endTime (any member): node hours,
/// accelerator hours (busy: requested by pods; idle: not), and the cost at the price in
/// force when each node ran, grouped; `gaps` lists where a cluster could not be read
/// (unknown, not zero). `Accept: text/csv` answers the rows as CSV. A bad groupBy, an
/// end not after the start or a range over 400 days is 400 INVALID_USAGE_QUERY.
#[utoipa::path(get, path = "/v1/teams/{team}/usage", operation_id = "getTeamUsage", tag = "teams",
    params(("team" = String, Path, description = "team id"), UsageParams),
    responses((status = 200, description = "Usage rows (JSON, or CSV with Accept: text/csv)",
            content((UsageReport = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorBody, description = "INVALID_USAGE_QUERY: the message names the parameter")))]
async fn get_usage(
    Call(s, caller): Call,
    TeamAt(team): TeamAt,
    ApiQuery(q): ApiQuery<UsageParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let ask = UsageAsk {
        start_time: q.start_time,
        end_time: q.end_time,
        group_by: q.group_by,
    };
    let report = service::usage::report(&s.db, &s.cloud, &caller, &team, &ask).await?;
    if wants_csv(&headers) {
        let name = format!(
            "attachment; filename=\"usage-{}-{}.csv\"",
            team.as_str(),
            report.group_by.as_str()
        );
        let mut r = (
            [(CONTENT_TYPE, HeaderValue::from_static(CSV))],
            service::usage::csv(&report),
        )
            .into_response();
        if let Ok(v) = HeaderValue::from_str(&name) {
            r.headers_mut().insert(CONTENT_DISPOSITION, v);
        }
        return Ok(r);
    }
    Ok(Json(report).into_response())
}

/// Whether `Accept` names `text/csv` before any JSON range.
fn wants_csv(headers: &HeaderMap) -> bool {
    super::extract::accepted(headers)
        .into_iter()
        .find(|m| m == "text/csv" || m == "application/json")
        .is_some_and(|m| m == "text/csv")
}
