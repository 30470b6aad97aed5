//! The audit trail's events (`/v1/teams/{team}/events`, `/v1/events`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::states::EventType;

/// One thing that happened: who did what to which resource, and when.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `teams/{team}/events/{id}`, or `events/{id}` for an event of no team.
    #[schema(example = "teams/ml-research/events/7d3f0a52-3c1e-4c59-9c55-1e0b1f3f6a10")]
    pub name: String,
    #[schema(format = DateTime)]
    pub time: String,
    /// The caller's email, `anonymous` for an unauthenticated request, or `kineticd`
    /// for what it does by itself.
    #[schema(example = "alice@example.com")]
    pub actor: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The resource acted on, e.g. `teams/ml-research/members/bob@example.com` or
    /// `operations/{id}`.
    pub target: String,
    /// The `x-request-id` of the request that did it (absent for what no request did).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub request_id: Option<String>,
    /// What the type records: `{method, path, status, reason}` for requests, `{from, to,
    /// operationType, operationTarget, reason}` for operation states, `{before,
    /// after}` roles for members, `{cluster}` for credentials.
    #[schema(value_type = Object)]
    pub details: Value,
}
