//! Service Usage v1 wire types, and `google.longrunning.Operation` (AIP-151), which
//! Artifact Registry and Resource Manager answer with the same shape.
//!
//! Invariant: every field name is one `serviceusage.v1.json` defines.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most service IDs one `batchEnable` accepts.
pub const BATCH_ENABLE_MAX: usize = 20;

/// The name Service Usage gives an operation that had nothing to do.
pub const NOOP_OPERATION: &str = "operations/noop.DONE_OPERATION";

/// `google.longrunning.Operation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Operation {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Omitted (false) while running.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}

/// `google.rpc.Status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub code: i32,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
}

/// `BatchEnableServicesRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BatchEnableServicesRequest {
    pub service_ids: Vec<String>,
}

/// `GoogleApiServiceusageV1Service`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Service {
    /// `projects/{number}/services/{id}`.
    pub name: String,
    /// `projects/{number}`.
    pub parent: String,
    /// ENABLED | DISABLED | STATE_UNSPECIFIED.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ServiceConfig>,
}

impl Service {
    pub fn is_enabled(&self) -> bool {
        self.state == "ENABLED"
    }
}

/// `GoogleApiServiceusageV1ServiceConfig` (the parts kineticd reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceConfig {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
}
