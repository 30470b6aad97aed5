//! The Google Cloud enums that the API passes through as it reads them (a GKE cluster's
//! or node pool's `status`, a repository's `format`), and the GPU driver versions a pool
//! may ask for: schema types only, so typed clients get the values Google's discovery
//! documents list (container.v1, artifactregistry.v1).
//!
//! Invariant: each enum lists exactly its discovery document's values; the fields that
//! use them (`#[schema(value_type = ...)]`) hold the cloud's string unchanged.

use serde::Serialize;
use utoipa::ToSchema;

/// A GKE cluster's `status` (container.v1 `Cluster.status`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GkeClusterState {
    StatusUnspecified,
    Provisioning,
    Running,
    Reconciling,
    Stopping,
    Error,
    Degraded,
}

/// A GKE node pool's `status` (container.v1 `NodePool.status`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GkeNodePoolState {
    StatusUnspecified,
    Provisioning,
    Running,
    RunningWithError,
    Reconciling,
    Stopping,
    Error,
}

/// An Artifact Registry repository's `format` (kineticd's are DOCKER).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RepositoryFormat {
    FormatUnspecified,
    Docker,
    Maven,
    Npm,
    Apt,
    Yum,
    Googet,
    Python,
    Kfp,
    Go,
    Generic,
    Ruby,
    Conda,
}

/// GKE's `gpuDriverVersion` values a GPU pool may ask for.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GpuDriverVersion {
    Default,
    Latest,
    InstallationDisabled,
}
