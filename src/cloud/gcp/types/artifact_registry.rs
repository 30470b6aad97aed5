//! Artifact Registry v1 wire types: repositories; operations are AIP-151's.
//!
//! Invariant: every field name is one `artifactregistry.v1.json` defines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::service_usage::{Operation, Status};

/// `Repository`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Repository {
    /// `projects/{p}/locations/{l}/repositories/{id}` (output; ignored on create).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// DOCKER, MAVEN, NPM, PYTHON, APT, YUM, GO, KFP, GENERIC, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub format: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// STANDARD_REPOSITORY | VIRTUAL_REPOSITORY | REMOTE_REPOSITORY (output default).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mode: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
    #[serde(with = "super::int64::option", skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    /// `{location}-docker.pkg.dev/{project}/{id}` for Docker repositories (output).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub registry_uri: String,
}

/// Docker host path of a repository: `{location}-docker.pkg.dev/{project}/{id}`.
pub fn docker_host(location: &str, project: &str, repository_id: &str) -> String {
    format!("{location}-docker.pkg.dev/{project}/{repository_id}")
}
