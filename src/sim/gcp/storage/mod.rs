//! Simulated Cloud Storage JSON API v1: buckets in one global namespace (listed per
//! project), objects (media upload, paged list, delete) and bucket IAM policies, answering errors in Storage's
//! legacy shape (`errors[{domain, reason, message}]`, no `status`).
//!
//! Invariant: a bucket name is held by at most one project; a bucket holding objects is
//! never deleted (409 "not empty"); a bucket policy's etag changes on each set, and a
//! set with another etag is refused with 412 and changes nothing.

mod list;
mod objects;

use std::collections::{BTreeMap, HashMap};

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::iam::policy::etag;
use super::resource_manager::project_number;
use crate::cloud::gcp::types::storage::{
    Binding, Bucket, BucketPolicy, IamConfiguration, Object, UniformBucketLevelAccess,
};
use crate::domain::RpcCode;
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::clock::Clock;
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::method::Service;
use crate::sim::world::World;

const SVC: &str = "storage";
const F: Flavor = Flavor::Storage;
const API: Service = Service::new(SVC, F);

const STORAGE_CLASSES: [&str; 7] = [
    "STANDARD",
    "NEARLINE",
    "COLDLINE",
    "ARCHIVE",
    "MULTI_REGIONAL",
    "REGIONAL",
    "DURABLE_REDUCED_AVAILABILITY",
];
const MULTI_REGIONS: [&str; 3] = ["US", "EU", "ASIA"];
const DUAL_REGIONS: [&str; 4] = ["NAM4", "EUR4", "ASIA1", "EUR5"];
const LIFECYCLE_ACTIONS: [&str; 3] = [
    "Delete",
    "SetStorageClass",
    "AbortIncompleteMultipartUpload",
];

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By bucket name (one namespace for every project).
    pub buckets: BTreeMap<String, BucketRecord>,
    /// Last object generation handed out.
    #[serde(skip)]
    generation: i64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketRecord {
    pub project: String,
    pub bucket: Bucket,
    /// By object name.
    pub objects: BTreeMap<String, Object>,
    pub policy: BucketPolicy,
    pub policy_rev: u64,
}

pub fn routes() -> Router<Sim> {
    Router::new()
        .route(
            "/storage/v1/b",
            post(API.method("buckets.insert", insert_bucket))
                .get(API.method("buckets.list", list::buckets)),
        )
        .route(
            "/storage/v1/b/{bucket}",
            get(API.method("buckets.get", get_bucket))
                .delete(API.method("buckets.delete", delete_bucket)),
        )
        .route(
            "/storage/v1/b/{bucket}/iam",
            get(API.method("buckets.getIamPolicy", get_policy))
                .put(API.method("buckets.setIamPolicy", set_policy)),
        )
        .route(
            "/storage/v1/b/{bucket}/o",
            get(API.method("objects.list", objects::list)),
        )
        .route(
            "/storage/v1/b/{bucket}/o/{*object}",
            get(API.method("objects.get", objects::get))
                .delete(API.method("objects.delete", objects::delete)),
        )
        .route(
            "/upload/storage/v1/b/{bucket}/o",
            post(API.method("objects.insert", objects::upload)),
        )
}

/// Lifecycle rules are recorded, not enforced (no object ages in the simulator).
pub fn tick(_world: &mut World, _clock: &Clock) {}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn storage_error(http: u16, reason: &str, message: impl Into<String>) -> SimError {
    let status = RpcCode::from_http(http).name();
    SimError::new(F, http, status, reason, message)
}

fn no_such_bucket() -> SimError {
    storage_error(404, "notFound", "The specified bucket does not exist.")
}

impl State {
    fn bucket(&mut self, name: &str) -> Result<&mut BucketRecord, SimError> {
        self.buckets.get_mut(name).ok_or_else(no_such_bucket)
    }

    /// IAM deleted `email`: its bucket grants turn into `deleted:serviceAccount:...`
    /// (the etag stays), as Google shows them.
    pub fn account_deleted(&mut self, email: &str, unique_id: &str) {
        for rec in self.buckets.values_mut() {
            for b in &mut rec.policy.bindings {
                super::iam::policy::mark_deleted_members(&mut b.members, email, unique_id);
            }
        }
    }
}

/// Google's bucket naming rules.
pub fn valid_bucket_name(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = name.as_bytes();
    let max = if name.contains('.') { 222 } else { 63 };
    let dotted_quad = name.split('.').count() == 4
        && name
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()));
    (3..=max).contains(&b.len())
        && b.first().copied().is_some_and(alnum)
        && b.last().copied().is_some_and(alnum)
        && b.iter()
            .all(|&c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
        && name.split('.').all(|p| !p.is_empty() && p.len() <= 63)
        && !dotted_quad
        && !name.starts_with("goog")
        && !name.contains("google")
}

/// Normalised location and its type, or `None` when Storage does not know it.
fn location(l: &str) -> Option<(String, &'static str)> {
    let up = l.to_ascii_uppercase();
    if MULTI_REGIONS.contains(&up.as_str()) {
        return Some((up, "multi-region"));
    }
    if DUAL_REGIONS.contains(&up.as_str()) {
        return Some((up, "dual-region"));
    }
    let mut parts = up.split('-');
    let region = match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), None) => {
            let digits = b.trim_start_matches(|c: char| c.is_ascii_uppercase());
            !a.is_empty()
                && a.bytes().all(|c| c.is_ascii_uppercase())
                && !digits.is_empty()
                && digits.len() < b.len()
                && digits.bytes().all(|c| c.is_ascii_digit())
        }
        _ => false,
    };
    region.then_some((up, "region"))
}

fn insert_bucket(
    sim: &Sim,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Json<Bucket>, SimError> {
    do_insert(sim, q.get("project"), &body)
}

fn do_insert(sim: &Sim, project: Option<&String>, body: &Bytes) -> Result<Json<Bucket>, SimError> {
    let mut b: Bucket = strict(F, body)?;
    let project = project
        .filter(|p| !p.is_empty())
        .ok_or_else(|| storage_error(400, "required", "Required parameter: project"))?;
    if b.name.is_empty() {
        return Err(storage_error(400, "required", "Required"));
    }
    if !valid_bucket_name(&b.name) {
        return Err(storage_error(
            400,
            "invalid",
            format!("Invalid bucket name: '{}'", b.name),
        ));
    }
    let (loc, loc_type) = location(if b.location.is_empty() {
        "US"
    } else {
        &b.location
    })
    .ok_or_else(|| {
        storage_error(
            400,
            "invalid",
            "The specified location constraint is not valid.",
        )
    })?;
    if b.storage_class.is_empty() {
        b.storage_class = "STANDARD".into();
    }
    if !STORAGE_CLASSES.contains(&b.storage_class.as_str()) {
        return Err(storage_error(
            400,
            "invalid",
            "Invalid argument: storageClass.",
        ));
    }
    for r in b.lifecycle.iter().flat_map(|l| &l.rule) {
        if !LIFECYCLE_ACTIONS.contains(&r.action.kind.as_str()) {
            return Err(storage_error(
                400,
                "invalid",
                format!(
                    "Invalid argument: lifecycle action type {:?}.",
                    r.action.kind
                ),
            ));
        }
        if r.condition.age.is_some_and(|a| a < 0) {
            return Err(storage_error(
                400,
                "invalid",
                "Invalid argument: lifecycle condition age.",
            ));
        }
    }
    let mut w = sim.world();
    if let Some(existing) = w.storage.buckets.get(&b.name) {
        let message = if existing.project == *project {
            "Your previous request to create the named bucket succeeded and you already own it."
        } else {
            "The requested bucket name is not available. The bucket namespace is shared by all \
             users of the system. Please select a different name and try again."
        };
        return Err(storage_error(409, "conflict", message));
    }
    let stamp = now();
    let ubla = b
        .iam_configuration
        .as_ref()
        .and_then(|c| c.uniform_bucket_level_access.as_ref())
        .is_some_and(|u| u.enabled);
    let locked = ubla.then(|| {
        (chrono::Utc::now() + chrono::Duration::days(90))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    });
    let access = UniformBucketLevelAccess {
        enabled: ubla,
        locked_time: locked.unwrap_or_default(),
    };
    b.iam_configuration = Some(IamConfiguration {
        uniform_bucket_level_access: Some(access.clone()),
        bucket_policy_only: Some(access),
        public_access_prevention: b
            .iam_configuration
            .as_ref()
            .map(|c| c.public_access_prevention.clone())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "inherited".into()),
    });
    b.kind = "storage#bucket".into();
    b.id.clone_from(&b.name);
    b.self_link = format!("https://www.googleapis.com/storage/v1/b/{}", b.name);
    b.project_number = i64::try_from(project_number(project)).ok();
    b.metageneration = Some(1);
    b.location = loc;
    b.location_type = loc_type.into();
    b.time_created.clone_from(&stamp);
    b.updated = stamp;
    b.etag = "CAE=".into();
    let policy = BucketPolicy {
        kind: "storage#policy".into(),
        resource_id: format!("projects/_/buckets/{}", b.name),
        version: Some(1),
        bindings: vec![
            Binding {
                role: "roles/storage.legacyBucketOwner".into(),
                members: vec![
                    format!("projectEditor:{project}"),
                    format!("projectOwner:{project}"),
                ],
                condition: None,
            },
            Binding {
                role: "roles/storage.legacyBucketReader".into(),
                members: vec![format!("projectViewer:{project}")],
                condition: None,
            },
        ],
        etag: etag(1),
    };
    w.storage.buckets.insert(
        b.name.clone(),
        BucketRecord {
            project: project.clone(),
            bucket: b.clone(),
            objects: BTreeMap::new(),
            policy,
            policy_rev: 1,
        },
    );
    Ok(Json(b))
}

fn get_bucket(sim: &Sim, Path(bucket): Path<String>) -> Result<Json<Bucket>, SimError> {
    let mut w = sim.world();
    w.storage.bucket(&bucket).map(|r| Json(r.bucket.clone()))
}

fn delete_bucket(sim: &Sim, Path(bucket): Path<String>) -> Result<StatusCode, SimError> {
    let mut w = sim.world();
    if !w.storage.bucket(&bucket)?.objects.is_empty() {
        return Err(storage_error(
            409,
            "conflict",
            "The bucket you tried to delete is not empty.",
        ));
    }
    w.storage.buckets.remove(&bucket);
    Ok(StatusCode::NO_CONTENT)
}

fn get_policy(sim: &Sim, Path(bucket): Path<String>) -> Result<Json<BucketPolicy>, SimError> {
    let mut w = sim.world();
    w.storage.bucket(&bucket).map(|r| Json(r.policy.clone()))
}

fn set_policy(
    sim: &Sim,
    Path(bucket): Path<String>,
    body: Bytes,
) -> Result<Json<BucketPolicy>, SimError> {
    do_set_policy(sim, &bucket, &body)
}

const BUCKET_MEMBER_PREFIXES: [&str; 12] = [
    "user:",
    "serviceAccount:",
    "group:",
    "domain:",
    "projectOwner:",
    "projectEditor:",
    "projectViewer:",
    "principal:",
    "principalSet:",
    "deleted:user:",
    "deleted:serviceAccount:",
    "deleted:group:",
];

fn do_set_policy(sim: &Sim, bucket: &str, body: &Bytes) -> Result<Json<BucketPolicy>, SimError> {
    let p: BucketPolicy = strict(F, body)?;
    let mut w = sim.world();
    let rec = w.storage.bucket(bucket)?;
    if !p.etag.is_empty() && p.etag != rec.policy.etag {
        return Err(storage_error(412, "conditionNotMet", "Precondition Failed"));
    }
    let ubla = rec
        .bucket
        .iam_configuration
        .as_ref()
        .and_then(|c| c.uniform_bucket_level_access.as_ref())
        .is_some_and(|u| u.enabled);
    let mut bindings: Vec<Binding> = Vec::new();
    for b in p.bindings {
        if !b.role.starts_with("roles/") && !b.role.starts_with("projects/") {
            return Err(storage_error(
                400,
                "invalid",
                format!("Role ({}) is not valid.", b.role),
            ));
        }
        if b.condition.is_some() && (p.version != Some(3) || !ubla) {
            return Err(storage_error(
                400,
                "invalid",
                "IAM conditions need policy version 3 and uniform bucket-level access.",
            ));
        }
        if let Some(m) = b.members.iter().find(|m| {
            *m != "allUsers"
                && *m != "allAuthenticatedUsers"
                && !BUCKET_MEMBER_PREFIXES.iter().any(|pre| m.starts_with(pre))
        }) {
            return Err(storage_error(
                400,
                "invalid",
                format!("Invalid argument: member {m:?}."),
            ));
        }
        if !b.members.is_empty() {
            bindings.push(b);
        }
    }
    rec.policy_rev += 1;
    rec.policy = BucketPolicy {
        kind: "storage#policy".into(),
        resource_id: format!("projects/_/buckets/{bucket}"),
        version: Some(if p.version == Some(3) { 3 } else { 1 }),
        bindings,
        etag: etag(rec.policy_rev),
    };
    Ok(Json(rec.policy.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names() {
        for ok in ["abc", "my-project-kinetic-state", "a_b.c-d", "1bucket"] {
            assert!(valid_bucket_name(ok), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "-abc",
            "abc-",
            "a..b",
            "192.168.5.4",
            "googlebucket",
            "goog-x",
            &"a".repeat(64),
        ] {
            assert!(!valid_bucket_name(bad), "{bad}");
        }
    }

    #[test]
    fn locations() {
        assert_eq!(location("us"), Some(("US".into(), "multi-region")));
        assert_eq!(
            location("us-central1"),
            Some(("US-CENTRAL1".into(), "region"))
        );
        assert_eq!(location("nam4"), Some(("NAM4".into(), "dual-region")));
        assert_eq!(location("mars"), None);
        assert_eq!(location("us-central"), None);
    }
}
