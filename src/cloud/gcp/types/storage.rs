//! Cloud Storage JSON API v1 wire types: buckets, objects, bucket IAM policies.
//!
//! Invariant: every field name is one `storage.v1.json` defines; int64/uint64 fields
//! (`projectNumber`, `metageneration`, `generation`, `size`) go out as JSON strings and
//! are read from strings or numbers; requests serialise only what the caller set.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::iam::{Binding, Expr};
use super::int64;

/// `Bucket`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Bucket {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub location: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub storage_class: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iam_configuration: Option<IamConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versioning: Option<Versioning>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    // Output only.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub self_link: String,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub project_number: Option<i64>,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub metageneration: Option<i64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub location_type: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub time_created: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub updated: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Lifecycle {
    pub rule: Vec<LifecycleRule>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LifecycleRule {
    pub action: LifecycleAction,
    pub condition: LifecycleCondition,
}

impl LifecycleRule {
    /// Delete objects older than `days`.
    pub fn delete_after_days(days: i32) -> LifecycleRule {
        LifecycleRule {
            action: LifecycleAction {
                kind: "Delete".into(),
                storage_class: String::new(),
            },
            condition: LifecycleCondition {
                age: Some(days),
                ..LifecycleCondition::default()
            },
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LifecycleAction {
    /// Delete | SetStorageClass | AbortIncompleteMultipartUpload.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub storage_class: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LifecycleCondition {
    /// Days since creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_live: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_newer_versions: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub days_since_noncurrent_time: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches_prefix: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches_suffix: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches_storage_class: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IamConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uniform_bucket_level_access: Option<UniformBucketLevelAccess>,
    /// The feature's former name; Google mirrors `uniformBucketLevelAccess` here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_policy_only: Option<UniformBucketLevelAccess>,
    /// `inherited` | `enforced`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub public_access_prevention: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UniformBucketLevelAccess {
    pub enabled: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub locked_time: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Versioning {
    pub enabled: bool,
}

/// `Object` (metadata).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Object {
    pub name: String,
    pub bucket: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub self_link: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content_type: String,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub metageneration: Option<i64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub storage_class: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub time_created: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub updated: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
}

/// `Objects` (one page of objects.list). Google omits `items` when there are none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Objects {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Object>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// A bucket IAM `Policy` (Storage's own shape: IAM's plus `kind` and `resourceId`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BucketPolicy {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<Binding>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etag: String,
}
