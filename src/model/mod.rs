//! The API's resource representations (what clients read), with their OpenAPI schemas.
//! Service code builds them from records; handlers serialise them.
//!
//! Invariant: field names and shapes here are the contract of `API.md`; they change only
//! together with `openapi/kineticd.json`.

pub mod accelerator;
pub mod capacity;
pub mod cloud_enums;
pub mod cluster;
pub mod diagnose;
pub mod drill;
pub mod event;
pub mod money;
pub mod operation;
pub mod placement;
mod pool_view;
pub mod profile;
pub mod status;
pub mod team;
pub mod workload;

pub use cluster::{
    Cluster, ClusterResources, EstimatedCost, FailoverRef, GpuSharing, NodePool, Taint,
};
pub use operation::{Operation, OperationError, OperationMetadata, Progress, Step};
pub use profile::Profile;
pub use team::{Me, Member, Team, TeamRole};

use chrono::{DateTime, SecondsFormat, Utc};

/// RFC 3339 with millisecond precision and a `Z` suffix.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An opaque etag derived from a record version and its update time.
pub fn etag(version: i64, updated: DateTime<Utc>) -> String {
    format!("\"{:x}-{:x}\"", version, updated.timestamp_micros())
}
