//! The IAM half of a sync: for each policy a team role grants on (the project; the
//! state, jobs and builds buckets; the repository; the builds service account), grant
//! what the roster asks for and revoke what kineticd granted that the roster no longer
//! justifies, in one read-modify-write with the policy's etag.
//!
//! Invariant: a grant is recorded PENDING before the write that makes it and GRANTED
//! after; a grant the member already held from someone else is left theirs (never
//! recorded, never revoked); conditional bindings and roles kineticd does not manage are
//! never edited. A refusal to read or set a policy names the permission kineticd lacks.

use std::collections::BTreeSet;

use tokio_util::sync::CancellationToken;

use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::types::iam::Policy;
use crate::domain::access::{GrantOn, iam_grants};
use crate::ops::steps::{RpcCode, StepError};
use crate::plan::up::access::grant_resource;
use crate::store::access as ledger;

use super::super::{Env, gcp_error, store_error};
use super::{AccessSyncReport, GrantChange, Scope};
use crate::domain::access::Roster;

/// A policy kineticd converges.
enum Target<'a> {
    Project(&'a str),
    Bucket(&'a str),
    Repository {
        project: &'a str,
        location: &'a str,
        id: &'a str,
    },
    ServiceAccount {
        project: &'a str,
        email: String,
    },
}

impl Target<'_> {
    /// The permission `setIamPolicy` on it needs.
    fn set_permission(&self) -> &'static str {
        match self {
            Target::Project(_) => "resourcemanager.projects.setIamPolicy",
            Target::Bucket(_) => "storage.buckets.setIamPolicy",
            Target::Repository { .. } => "artifactregistry.repositories.setIamPolicy",
            Target::ServiceAccount { .. } => "iam.serviceAccounts.setIamPolicy",
        }
    }

    async fn modify(
        &self,
        env: &Env,
        cancel: &CancellationToken,
        mutate: impl FnMut(&mut Policy) -> bool,
    ) -> Result<Policy, GcpError> {
        let gcp = &env.cloud.gcp;
        match self {
            Target::Project(p) => {
                gcp.resource_manager
                    .modify_iam_policy(p, cancel, mutate)
                    .await
            }
            Target::Bucket(b) => {
                gcp.storage
                    .modify_bucket_iam_policy(b, cancel, mutate)
                    .await
            }
            Target::Repository {
                project,
                location,
                id,
            } => {
                gcp.artifact_registry
                    .modify_repository_iam_policy(project, location, id, cancel, mutate)
                    .await
            }
            Target::ServiceAccount { project, email } => {
                gcp.iam
                    .modify_service_account_iam_policy(project, email, cancel, mutate)
                    .await
            }
        }
    }
}

/// What the roster asks for on `on`: `(role, IAM member)` pairs.
fn desired(roster: &Roster, on: GrantOn) -> BTreeSet<(String, String)> {
    roster
        .members
        .iter()
        .flat_map(|(m, role)| {
            iam_grants(*role)
                .into_iter()
                .filter(move |g| g.on == on)
                .map(move |g| (g.role.to_owned(), m.iam_member()))
        })
        .collect()
}

/// A failed policy call as a step error; a refusal (403) names the missing permission
/// and is terminal: retrying will not grant it.
fn policy_error(t: &Target<'_>, resource: &str, e: GcpError) -> StepError {
    if e.http_status == 403 {
        let permission = if e.method.ends_with("getIamPolicy") {
            t.set_permission().replace("setIamPolicy", "getIamPolicy")
        } else {
            t.set_permission().to_owned()
        };
        return StepError::terminal(
            RpcCode::PermissionDenied,
            "ACCESS_SYNC_FORBIDDEN",
            format!(
                "kineticd may not change the IAM policy of {}: it lacks {permission} (Google said: {}). Grant kineticd's service account a role with it (see deploy/README.md), then POST .../clusters/{{c}}:syncAccess; access already granted is unchanged",
                resource,
                e.message
            ),
        )
        .with("resource", resource)
        .with("permission", permission);
    }
    gcp_error(e)
}

/// Converge the policy of `target` (the resource `on` names, [`grant_resource`]: the
/// ledger, the report and the preview of `up` name it alike) with what the roster asks
/// for there; false when the resource is not there (404).
async fn converge(
    s: &Scope<'_>,
    on: GrantOn,
    target: &Target<'_>,
    report: &mut AccessSyncReport,
) -> Result<bool, StepError> {
    let (env, team, cancel) = (s.env, s.team, s.cancel);
    let want = desired(s.roster, on);
    let resource = grant_resource(s.names, on);
    let recorded = ledger::grants(&env.db, &resource)
        .await
        .map_err(store_error)?;
    let ours: BTreeSet<(String, String)> = recorded
        .iter()
        .map(|g| (g.role.clone(), g.member.clone()))
        .collect();
    let fresh: Vec<(String, String)> = want.difference(&ours).cloned().collect();
    let revoke: Vec<(String, String)> = ours.difference(&want).cloned().collect();
    ledger::record(&env.db, &resource, team, &fresh, "PENDING")
        .await
        .map_err(store_error)?;
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    let result = target
        .modify(env, cancel, |p| {
            added.clear();
            removed.clear();
            for (role, member) in &want {
                if p.add_binding(role, member) {
                    added.push((role.clone(), member.clone()));
                }
            }
            for (role, member) in &revoke {
                if p.remove_binding(role, member) {
                    removed.push((role.clone(), member.clone()));
                }
            }
            !added.is_empty() || !removed.is_empty()
        })
        .await;
    if let Err(e) = result {
        // Nothing of this attempt is in force: forget its fresh rows.
        ledger::forget(&env.db, &resource, &fresh)
            .await
            .map_err(store_error)?;
        if e.http_status == 404 {
            return Ok(false);
        }
        return Err(policy_error(target, &resource, e));
    }
    // Held from someone else before we came: theirs, not ours.
    let held: Vec<(String, String)> = fresh
        .iter()
        .filter(|g| !added.contains(g))
        .cloned()
        .collect();
    let kept: Vec<(String, String)> = want.iter().filter(|g| !held.contains(g)).cloned().collect();
    ledger::forget(&env.db, &resource, &held)
        .await
        .map_err(store_error)?;
    ledger::forget(&env.db, &resource, &revoke)
        .await
        .map_err(store_error)?;
    ledger::record(&env.db, &resource, team, &kept, "GRANTED")
        .await
        .map_err(store_error)?;
    let change = |(role, member): &(String, String)| GrantChange {
        resource: resource.clone(),
        role: role.clone(),
        member: member.clone(),
    };
    report.granted.extend(added.iter().map(change));
    report.revoked.extend(removed.iter().map(change));
    report.already_held.extend(held.iter().map(change));
    Ok(true)
}

/// The project's policy.
pub(super) async fn project(s: &Scope<'_>) -> Result<AccessSyncReport, StepError> {
    let n = s.names;
    let mut report = s.report();
    report.skipped = s.roster.skipped.clone();
    if !converge(
        s,
        GrantOn::Project,
        &Target::Project(&n.project),
        &mut report,
    )
    .await?
    {
        return Err(StepError::terminal(
            RpcCode::NotFound,
            "CLOUD_NOT_FOUND",
            format!(
                "project {} was not found: its IAM policy cannot be read",
                n.project
            ),
        ));
    }
    Ok(report)
}

/// The buckets', repository's and builds service account's policies, one after the
/// other (a resource `up` has not made yet is skipped: the sync after `up` grants it).
pub(super) async fn resources(s: &Scope<'_>) -> Result<AccessSyncReport, StepError> {
    let n = s.names;
    let mut report = s.report();
    let targets = [
        (GrantOn::StateBucket, Target::Bucket(&n.state_bucket)),
        (GrantOn::JobsBucket, Target::Bucket(&n.jobs_bucket)),
        (GrantOn::BuildsBucket, Target::Bucket(&n.builds_bucket)),
        (
            GrantOn::Repository,
            Target::Repository {
                project: &n.project,
                location: &n.repository_location,
                id: &n.repository,
            },
        ),
        (
            GrantOn::BuildsServiceAccount,
            Target::ServiceAccount {
                project: &n.project,
                email: n.build_sa_email(),
            },
        ),
    ];
    for (on, target) in &targets {
        if !converge(s, *on, target, &mut report).await? {
            report.skipped.push(format!(
                "{}: not found (up makes it; the sync after up grants on it)",
                grant_resource(n, *on)
            ));
        }
    }
    Ok(report)
}
