//! Simulated Cloud Resource Manager v3: projects and project IAM policies.
//!
//! Every well-formed project ID (6-30 characters, `[a-z][-a-z0-9]*[a-z0-9]`) exists: it
//! comes into being, ACTIVE, on first reference, with a deterministic 12-digit project
//! number and a policy granting `roles/owner` to [`OWNER`] and to [`EVERY_CALLER`]
//! (`allAuthenticatedUsers`): a development convenience, so that whoever uses
//! `serve --dev` owns the projects they name and may bind them to a team. Google never
//! lets a project policy name `allAuthenticatedUsers`; a test that needs real ownership
//! rules sets the policy it wants through `setIamPolicy`, which is kept exactly as
//! written. Anything else answers 403 "(or it may not exist)", as Google does for
//! projects the caller cannot see.
//!
//! Invariant: a project's policy etag changes on every successful set; a set with a
//! stale etag is refused with 409 ABORTED and changes nothing.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State as AxState};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::iam::policy;
use crate::cloud::gcp::types::resource_manager::{
    Binding, GetIamPolicyRequest, Policy, Project, SetIamPolicyRequest,
};
use crate::sim::body::strict;
use crate::sim::clock::Clock;
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::method::Service;
use crate::sim::world::World;
use crate::sim::{Sim, tag};

const SVC: &str = "cloudresourcemanager";
const F: Flavor = Flavor::Aip193;
const API: Service = Service::new(SVC, F);

/// The member every simulated project policy starts with, as owner.
pub const OWNER: &str = "user:owner@example.com";
/// The member that makes every caller an owner of a project the simulator created on
/// first use (see the module docs).
pub const EVERY_CALLER: &str = "allAuthenticatedUsers";

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By project ID.
    pub projects: BTreeMap<String, ProjectRecord>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectRecord {
    pub project: Project,
    pub policy: policy::Stored,
}

/// Whether `id` is a well-formed project ID.
/// (A lowercase label of 6 to 30 characters.)
pub fn valid_project_id(id: &str) -> bool {
    id.len() >= 6 && super::is_lowercase_label(id, 30)
}

/// The simulated project number of `id` (12 digits, stable across runs).
pub fn project_number(id: &str) -> u64 {
    100_000_000_000 + crate::domain::hash::fnv1a(id.bytes()) % 900_000_000_000
}

fn denied(permission: &str, key: &str) -> SimError {
    SimError::new(
        F,
        403,
        "PERMISSION_DENIED",
        "IAM_PERMISSION_DENIED",
        format!(
            "Permission '{permission}' denied on resource \
             '//cloudresourcemanager.googleapis.com/projects/{key}' (or it may not exist)."
        ),
    )
}

impl State {
    /// The record of project `id`, created on first reference (`None`: malformed ID).
    pub fn ensure(&mut self, id: &str) -> Option<&mut ProjectRecord> {
        if !valid_project_id(id) {
            return None;
        }
        Some(self.projects.entry(id.to_owned()).or_insert_with(|| {
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            ProjectRecord {
                project: Project {
                    name: format!("projects/{}", project_number(id)),
                    project_id: id.to_owned(),
                    state: "ACTIVE".into(),
                    display_name: id.to_owned(),
                    etag: format!("W/\"{:x}\"", project_number(id)),
                    create_time: now.clone(),
                    update_time: now,
                    ..Project::default()
                },
                policy: policy::Stored::new(
                    vec![Binding {
                        role: "roles/owner".into(),
                        members: vec![EVERY_CALLER.into(), OWNER.into()],
                        condition: None,
                    }],
                    1,
                ),
            }
        }))
    }

    /// Project `key` (ID, or the number of a project already seen), or 403.
    fn resolve(&mut self, key: &str, permission: &str) -> Result<&mut ProjectRecord, SimError> {
        let id = if key.bytes().all(|c| c.is_ascii_digit()) {
            self.projects
                .values()
                .find(|p| p.project.name == format!("projects/{key}"))
                .map(|p| p.project.project_id.clone())
        } else {
            Some(key.to_owned())
        };
        id.and_then(|id| self.ensure(&id))
            .ok_or_else(|| denied(permission, key))
    }

    /// IAM deleted `email`: its grants turn into `deleted:serviceAccount:...`.
    pub fn account_deleted(&mut self, email: &str, unique_id: &str) {
        for p in self.projects.values_mut() {
            p.policy.mark_deleted(email, unique_id);
        }
    }
}

pub fn routes() -> Router<Sim> {
    Router::new().route(
        "/cloudresourcemanager/v3/projects/{project}",
        get(API.method("projects.get", get_project)).post(verb),
    )
}

/// Projects do not change with time.
pub fn tick(_world: &mut World, _clock: &Clock) {}

fn get_project(sim: &Sim, Path(project): Path<String>) -> Result<Json<Project>, SimError> {
    let mut w = sim.world();
    w.resource_manager
        .resolve(&project, "resourcemanager.projects.get")
        .map(|p| Json(p.project.clone()))
}

/// `POST projects/{p}:getIamPolicy` and `:setIamPolicy` (one path segment).
async fn verb(AxState(sim): AxState<Sim>, Path(seg): Path<String>, body: Bytes) -> Response {
    if let Some(project) = seg.strip_suffix(":getIamPolicy") {
        return sim
            .serve((SVC, F), "projects.getIamPolicy", || {
                get_policy(&sim, project, &body)
            })
            .await;
    }
    if let Some(project) = seg.strip_suffix(":setIamPolicy") {
        return sim
            .serve((SVC, F), "projects.setIamPolicy", || {
                set_policy(&sim, project, &body)
            })
            .await;
    }
    tag("projects.unknown", SimError::no_method(F, &seg))
}

fn get_policy(sim: &Sim, project: &str, body: &Bytes) -> Result<Json<Policy>, SimError> {
    let req: GetIamPolicyRequest = strict(F, body)?;
    if let Some(v) = req.options.and_then(|o| o.requested_policy_version)
        && ![0, 1, 3].contains(&v)
    {
        return Err(SimError::invalid(
            F,
            format!("Invalid requested policy version {v}."),
        ));
    }
    let mut w = sim.world();
    let rec = w
        .resource_manager
        .resolve(project, "resourcemanager.projects.getIamPolicy")?;
    Ok(Json(rec.policy.policy.clone()))
}

fn set_policy(sim: &Sim, project: &str, body: &Bytes) -> Result<Json<Policy>, SimError> {
    let req: SetIamPolicyRequest = strict(F, body)?;
    let mut w = sim.world();
    let w = &mut *w;
    let iam = &w.iam;
    let rec = w
        .resource_manager
        .resolve(project, "resourcemanager.projects.setIamPolicy")?;
    rec.policy.set(req, |email| iam.exists(email)).map(Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_ids() {
        assert_eq!(
            project_number("demo-project"),
            project_number("demo-project")
        );
        assert_eq!(project_number("demo-project").to_string().len(), 12);
        assert!(valid_project_id("demo-project"));
        assert!(!valid_project_id("demo"));
        assert!(!valid_project_id("Demo-project"));
        assert!(!valid_project_id("demo-project-"));
    }
}
