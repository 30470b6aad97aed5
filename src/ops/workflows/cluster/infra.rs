//! Ensure steps for the project-level resources of a cluster: APIs, buckets, network,
//! router with Cloud NAT, service accounts, IAM bindings (read-modify-write with etag
//! retry in the clients), the Artifact Registry repository, and the caller's profile.
//!
//! Invariant: each function re-reads the resource first; it creates only what is
//! missing, adopts what carries our mark, refuses what does not, and treats "already
//! gone" as success when deleting.

use serde_json::Value;

use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::iam::is_unknown_service_account;
use crate::cloud::gcp::lro::LroPolicy;
use crate::cloud::gcp::storage::is_bucket_not_empty;
use crate::domain::hash::fnv1a;
use crate::domain::resource_names::APIS;
use crate::ops::steps::{RpcCode, StepError};
use crate::plan::up::project_roles as roles_of;
use crate::plan::{Account, ActionId, BucketKind};
use crate::store;

use super::results::{BucketDeleted, Outcome, ProfileSaved, outcome, result};
use super::step::Step;
use super::wire;
use super::{gcp_error, store_error};

const BUCKET_ROLES: [&str; 2] = [
    "roles/storage.objectAdmin",
    "roles/storage.legacyBucketReader",
];

impl<Id: ActionId> Step<'_, Id> {
    fn lro(&self) -> LroPolicy {
        self.env.timing.lro_policy()
    }

    /// A request id stable across retries of this step of this operation (AIP-155), so
    /// Compute deduplicates a create whose answer was lost.
    pub fn request_id(&self) -> uuid::Uuid {
        let key = format!("{}/{}", self.ctx.op.id, self.action.id);
        let hi = fnv1a(key.bytes());
        let lo = fnv1a(format!("{key}#").bytes());
        uuid::Uuid::from_u64_pair(hi, lo)
    }
}

/// IAM may not know a just-created account for a few seconds: worth retrying.
fn iam_error(e: GcpError) -> StepError {
    let unknown = is_unknown_service_account(&e);
    let mut s = gcp_error(e);
    if unknown {
        s.class = crate::ops::steps::ErrorClass::Retryable;
    }
    s
}

pub async fn apis(s: &Step<'_>) -> Result<Value, StepError> {
    let gcp = &s.env.cloud.gcp;
    gcp.service_usage
        .enable_services(&s.names.project, &APIS, s.lro(), &s.ctx.cancel)
        .await
        .map_err(gcp_error)?;
    outcome(Outcome::Enabled)
}

fn bucket_name(s: &Step<'_>, kind: BucketKind) -> String {
    match kind {
        BucketKind::State => s.names.state_bucket.clone(),
        BucketKind::Jobs => s.names.jobs_bucket.clone(),
        BucketKind::Builds => s.names.builds_bucket.clone(),
    }
}

pub async fn ensure_bucket(s: &Step<'_>, kind: BucketKind) -> Result<Value, StepError> {
    let storage = &s.env.cloud.gcp.storage;
    let want = wire::bucket(s.names, kind);
    // The state bucket is one per project and named for kinetic; it is shared, not owned.
    let check = |b: &crate::cloud::gcp::types::storage::Bucket| {
        if kind == BucketKind::State || wire::is_ours(&b.labels) {
            outcome(Outcome::Adopted)
        } else {
            Err(s.foreign("bucket", &b.name, "it has no label kinetic=true"))
        }
    };
    match storage.get_bucket(&want.name).await {
        Ok(b) => return check(&b),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(gcp_error(e)),
    }
    match storage.insert_bucket(&s.names.project, &want).await {
        Ok(_) => outcome(Outcome::Created),
        Err(e) if e.is_already_exists() => {
            let b = storage.get_bucket(&want.name).await.map_err(gcp_error)?;
            check(&b)
        }
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_bucket(s: &Step<'_>, kind: BucketKind) -> Result<Value, StepError> {
    let storage = &s.env.cloud.gcp.storage;
    let name = bucket_name(s, kind);
    let force = s.action.resource.force_destroy();
    match storage.get_bucket(&name).await {
        Ok(_) => {}
        Err(e) if e.is_not_found() => return outcome(Outcome::Absent),
        Err(e) => return Err(gcp_error(e)),
    }
    let mut emptied = 0;
    if force {
        emptied = storage.empty_bucket(&name).await.map_err(gcp_error)?;
    }
    match storage.delete_bucket(&name).await {
        Ok(()) => result(BucketDeleted {
            outcome: Outcome::Deleted,
            objects_deleted: emptied,
        }),
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) if is_bucket_not_empty(&e) => Err(StepError::terminal(
            RpcCode::FailedPrecondition,
            "BUCKETS_NOT_EMPTY",
            format!(
                "bucket {name} is not empty and the cluster has forceDestroy: false: empty it (gcloud storage rm -r gs://{name}/**) or PUT the cluster with forceDestroy: true, then run down again"
            ),
        )
        .with("buckets", &name)
        .with("bucket", &name)
        .was("BUCKET_NOT_EMPTY")),
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn ensure_network(s: &Step<'_>) -> Result<Value, StepError> {
    let compute = &s.env.cloud.gcp.compute;
    let want = wire::network(s.names);
    let p = &s.names.project;
    let check = |n: &crate::cloud::gcp::types::compute::Network| {
        if wire::network_is_ours(n) {
            outcome(Outcome::Adopted)
        } else {
            Err(s.foreign("network", &n.name, "its description does not say kinetic"))
        }
    };
    match compute.get_network(p, &want.name).await {
        Ok(n) => return check(&n),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(gcp_error(e)),
    }
    match compute.insert_network(p, &want, s.request_id()).await {
        Ok(op) => {
            compute
                .wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                .await
                .map_err(gcp_error)?;
            outcome(Outcome::Created)
        }
        Err(e) if e.is_already_exists() => {
            let n = compute
                .get_network(p, &want.name)
                .await
                .map_err(gcp_error)?;
            check(&n)
        }
        Err(e) => Err(gcp_error(e)),
    }
}

/// A Compute delete's answer: wait for its operation; already gone counts as done.
async fn compute_deleted(
    s: &Step<'_>,
    answer: Result<crate::cloud::gcp::types::compute::Operation, GcpError>,
) -> Result<Value, StepError> {
    match answer {
        Ok(op) => {
            s.env
                .cloud
                .gcp
                .compute
                .wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                .await
                .map_err(gcp_error)?;
            outcome(Outcome::Deleted)
        }
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_network(s: &Step<'_>) -> Result<Value, StepError> {
    let compute = &s.env.cloud.gcp.compute;
    let p = &s.names.project;
    match compute.get_network(p, &s.names.network).await {
        Ok(_) => {}
        Err(e) if e.is_not_found() => return outcome(Outcome::Absent),
        Err(e) => return Err(gcp_error(e)),
    }
    let answer = compute
        .delete_network(p, &s.names.network, s.request_id())
        .await;
    compute_deleted(s, answer).await
}

pub async fn ensure_router(s: &Step<'_>) -> Result<Value, StepError> {
    let compute = &s.env.cloud.gcp.compute;
    let n = s.names;
    let want = wire::router(n);
    let mut found = Outcome::Created;
    match compute.get_router(&n.project, &n.region, &n.router).await {
        Ok(r) if !wire::router_is_ours(n, &r) => {
            return Err(s.foreign("router", &r.name, "it routes another network"));
        }
        Ok(r) if wire::router_has_nat(n, &r) => return outcome(Outcome::Adopted),
        Ok(_) => {
            // Ours but without its Cloud NAT: built again whole (the NAT is all it does).
            let op = compute
                .delete_router(&n.project, &n.region, &n.router, s.request_id())
                .await
                .map_err(gcp_error)?;
            compute
                .wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                .await
                .map_err(gcp_error)?;
            found = Outcome::Recreated;
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(gcp_error(e)),
    }
    // A fresh request id: the delete above used this step's.
    let request_id = if found == Outcome::Recreated {
        uuid::Uuid::new_v4()
    } else {
        s.request_id()
    };
    match compute
        .insert_router(&n.project, &n.region, &want, request_id)
        .await
    {
        Ok(op) => {
            compute
                .wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                .await
                .map_err(gcp_error)?;
            outcome(found)
        }
        Err(e) if e.is_already_exists() => {
            let r = compute
                .get_router(&n.project, &n.region, &n.router)
                .await
                .map_err(gcp_error)?;
            if wire::router_is_ours(n, &r) {
                outcome(Outcome::Adopted)
            } else {
                Err(s.foreign("router", &r.name, "it routes another network"))
            }
        }
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_router(s: &Step<'_>) -> Result<Value, StepError> {
    let compute = &s.env.cloud.gcp.compute;
    let n = s.names;
    match compute.get_router(&n.project, &n.region, &n.router).await {
        Ok(_) => {}
        Err(e) if e.is_not_found() => return outcome(Outcome::Absent),
        Err(e) => return Err(gcp_error(e)),
    }
    let answer = compute
        .delete_router(&n.project, &n.region, &n.router, s.request_id())
        .await;
    compute_deleted(s, answer).await
}

fn sa(s: &Step<'_>, account: Account) -> (String, String) {
    match account {
        Account::Build => (s.names.build_sa_id.clone(), s.names.build_sa_email()),
        Account::Node => (s.names.node_sa_id.clone(), s.names.node_sa_email()),
    }
}

pub async fn ensure_service_account(s: &Step<'_>, account: Account) -> Result<Value, StepError> {
    let iam = &s.env.cloud.gcp.iam;
    let p = &s.names.project;
    let (id, email) = sa(s, account);
    let check = |a: &crate::cloud::gcp::types::iam::ServiceAccount| {
        if a.display_name.starts_with("kinetic") || a.description.starts_with("kinetic") {
            outcome(Outcome::Adopted)
        } else {
            Err(s.foreign(
                "service account",
                &email,
                "its display name does not say kinetic",
            ))
        }
    };
    match iam.get_service_account(p, &email).await {
        Ok(a) => return check(&a),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(gcp_error(e)),
    }
    let (display, description) = wire::service_account_text(s.names, account);
    match iam
        .create_service_account(p, &id, &display, &description)
        .await
    {
        Ok(_) => outcome(Outcome::Created),
        Err(e) if e.is_already_exists() => {
            let a = iam
                .get_service_account(p, &email)
                .await
                .map_err(gcp_error)?;
            check(&a)
        }
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_service_account(s: &Step<'_>, account: Account) -> Result<Value, StepError> {
    let iam = &s.env.cloud.gcp.iam;
    let (_, email) = sa(s, account);
    match iam.delete_service_account(&s.names.project, &email).await {
        Ok(()) => outcome(Outcome::Deleted),
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) => Err(gcp_error(e)),
    }
}

/// Grant (or, for `down`, revoke) a service account's project roles.
pub async fn project_roles(
    s: &Step<'_>,
    account: Account,
    grant: bool,
) -> Result<Value, StepError> {
    let rm = &s.env.cloud.gcp.resource_manager;
    let (_, email) = sa(s, account);
    let member = format!("serviceAccount:{email}");
    let roles = roles_of(account);
    let grants: Vec<(&str, &str)> = roles.iter().map(|r| (*r, member.as_str())).collect();
    let p = &s.names.project;
    if grant {
        rm.add_bindings(p, &grants, &s.ctx.cancel)
            .await
            .map_err(iam_error)?;
        return outcome(Outcome::Granted);
    }
    // Revoking: say whether there was anything to revoke (a rerun finds nothing).
    let policy = rm.get_iam_policy(p).await.map_err(iam_error)?;
    let held = policy.bindings.iter().any(|b| {
        grants
            .iter()
            .any(|(role, m)| b.role == *role && b.members.iter().any(|x| x == m))
    });
    if !held {
        return outcome(Outcome::Absent);
    }
    rm.remove_bindings(p, &grants, &s.ctx.cancel)
        .await
        .map_err(iam_error)?;
    outcome(Outcome::Revoked)
}

fn members(s: &Step<'_>) -> [String; 2] {
    [
        format!("serviceAccount:{}", s.names.node_sa_email()),
        format!("serviceAccount:{}", s.names.build_sa_email()),
    ]
}

pub async fn bucket_roles(s: &Step<'_>, kind: BucketKind) -> Result<Value, StepError> {
    let m = members(s);
    let grants: Vec<(&str, &str)> = BUCKET_ROLES
        .iter()
        .flat_map(|r| m.iter().map(move |x| (*r, x.as_str())))
        .collect();
    s.env
        .cloud
        .gcp
        .storage
        .add_bucket_bindings(&bucket_name(s, kind), &grants, &s.ctx.cancel)
        .await
        .map_err(iam_error)?;
    outcome(Outcome::Granted)
}

pub async fn repository_roles(s: &Step<'_>) -> Result<Value, StepError> {
    let [node, build] = members(s);
    let grants = [
        ("roles/artifactregistry.reader", node.as_str()),
        ("roles/artifactregistry.writer", build.as_str()),
    ];
    let n = s.names;
    s.env
        .cloud
        .gcp
        .artifact_registry
        .add_repository_bindings(
            &n.project,
            &n.repository_location,
            &n.repository,
            &grants,
            &s.ctx.cancel,
        )
        .await
        .map_err(iam_error)?;
    outcome(Outcome::Granted)
}

pub async fn workload_identity(s: &Step<'_>) -> Result<Value, StepError> {
    let n = s.names;
    let member = n.ksa_member();
    s.env
        .cloud
        .gcp
        .iam
        .add_service_account_bindings(
            &n.project,
            &n.node_sa_email(),
            &[("roles/iam.workloadIdentityUser", member.as_str())],
            &s.ctx.cancel,
        )
        .await
        .map_err(iam_error)?;
    outcome(Outcome::Granted)
}

/// Wait for an Artifact Registry operation to finish.
async fn repository_op_done(
    s: &Step<'_>,
    op: crate::cloud::gcp::types::artifact_registry::Operation,
) -> Result<(), StepError> {
    let ar = &s.env.cloud.gcp.artifact_registry;
    ar.wait_operation(op, s.lro(), &s.ctx.cancel)
        .await
        .map_err(gcp_error)?;
    Ok(())
}

pub async fn ensure_repository(s: &Step<'_>) -> Result<Value, StepError> {
    let ar = &s.env.cloud.gcp.artifact_registry;
    let n = s.names;
    let check = |r: &crate::cloud::gcp::types::artifact_registry::Repository| {
        if wire::is_ours(&r.labels) {
            outcome(Outcome::Adopted)
        } else {
            Err(s.foreign("repository", &r.name, "it has no label kinetic=true"))
        }
    };
    match ar
        .get_repository(&n.project, &n.repository_location, &n.repository)
        .await
    {
        Ok(r) => return check(&r),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(gcp_error(e)),
    }
    let want = wire::repository(n);
    match ar
        .create_repository(&n.project, &n.repository_location, &n.repository, &want)
        .await
    {
        Ok(op) => {
            repository_op_done(s, op).await?;
            outcome(Outcome::Created)
        }
        Err(e) if e.is_already_exists() => {
            let r = ar
                .get_repository(&n.project, &n.repository_location, &n.repository)
                .await
                .map_err(gcp_error)?;
            check(&r)
        }
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_repository(s: &Step<'_>) -> Result<Value, StepError> {
    let ar = &s.env.cloud.gcp.artifact_registry;
    let n = s.names;
    match ar
        .delete_repository(&n.project, &n.repository_location, &n.repository)
        .await
    {
        Ok(op) => {
            repository_op_done(s, op).await?;
            outcome(Outcome::Deleted)
        }
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) => Err(gcp_error(e)),
    }
}

/// The caller's profile named after the cluster, made their active one.
pub async fn save_profile(s: &Step<'_>) -> Result<Value, StepError> {
    let n = s.names;
    let owner = &s.ctx.op.created_by;
    let cluster = format!(
        "projects/{}/zones/{}/clusters/{}",
        n.project, n.zone, n.cluster
    );
    let mut tx = s.env.db.begin().await.map_err(|e| store_error(e.into()))?;
    store::profiles::upsert(&mut *tx, owner, &n.cluster, &cluster, "default")
        .await
        .map_err(store_error)?;
    store::profiles::activate(&mut tx, owner, &n.cluster)
        .await
        .map_err(store_error)?;
    tx.commit().await.map_err(|e| store_error(e.into()))?;
    result(ProfileSaved {
        outcome: Outcome::Saved,
        profile: format!("profiles/{}", n.cluster),
    })
}
