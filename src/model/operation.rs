//! Operations (AIP-151) as clients see them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::{OperationState, OperationType, StepState};

/// google.rpc.Status of a failed or cancelled operation; `code` is a google.rpc.Code
/// (1 = CANCELLED), and `details[0].metadata.step` names the failed step.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OperationError {
    pub code: i32,
    #[schema(value_type = crate::domain::RpcCode)]
    pub status: String,
    pub message: String,
    #[schema(value_type = Vec<Object>)]
    pub details: Vec<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    pub description: String,
    pub state: StepState,
    #[schema(format = DateTime, required = true)]
    pub start_time: Option<String>,
    #[schema(format = DateTime, required = true)]
    pub end_time: Option<String>,
    pub attempts: u32,
    #[schema(required = true)]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub percent: u32,
    pub steps_done: u32,
    pub steps_total: u32,
    #[schema(required = true)]
    pub current_step: Option<String>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationMetadata {
    /// The kind of operation.
    #[serde(rename = "type")]
    pub op_type: OperationType,
    /// The resource the operation changes.
    pub target: String,
    /// `teams/{teamId}`.
    #[schema(required = true)]
    pub team: Option<String>,
    pub created_by: String,
    #[schema(required = true)]
    pub request_id: Option<String>,
    pub state: OperationState,
    #[schema(format = DateTime)]
    pub create_time: String,
    #[schema(format = DateTime, required = true)]
    pub start_time: Option<String>,
    #[schema(format = DateTime)]
    pub update_time: String,
    #[schema(format = DateTime, required = true)]
    pub end_time: Option<String>,
    pub cancel_requested: bool,
    /// Number of times a worker has claimed the operation.
    pub attempt: i32,
    pub progress: Progress,
    /// The plan this operation carries out (null for operations without one).
    #[schema(value_type = Option<Object>, required = true)]
    pub plan: Option<Value>,
}

/// A long-running operation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// `operations/{id}`.
    pub name: String,
    pub done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<OperationError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub response: Option<Value>,
    pub metadata: OperationMetadata,
}
