//! Simulated IAM custom roles of a project (`projects.roles.create`, `.get`, `.delete`):
//! what a team project's owner defines, and what kineticd reads to learn whether a
//! custom role bound to a caller grants `resourcemanager.projects.setIamPolicy`.
//!
//! Invariant: a role ID is unique within its project, deleted or not (Google keeps a
//! deleted custom role for 7 days and refuses to reuse its ID meanwhile); a deleted
//! role answers `get` with `deleted: true`; an ALPHA role's `stage` is omitted on
//! output, as Google omits it. Predefined roles (`roles/...`) are not simulated.

use axum::body::Bytes;
use axum::extract::Path;
use axum::{Json, Router, routing::post};

use crate::cloud::gcp::types::iam::{CreateRoleRequest, Role};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::error::SimError;
use crate::sim::gcp::resource_manager::valid_project_id;

use super::{API, F, policy};

/// Launch stages a custom role may be created in.
const STAGES: [&str; 6] = ["ALPHA", "BETA", "GA", "DEPRECATED", "DISABLED", "EAP"];

pub fn routes() -> Router<Sim> {
    Router::new()
        .route(
            "/iam/v1/projects/{project}/roles",
            post(API.method("projects.roles.create", create)),
        )
        .route(
            "/iam/v1/projects/{project}/roles/{role}",
            axum::routing::get(API.method("projects.roles.get", get))
                .delete(API.method("projects.roles.delete", delete)),
        )
}

/// IAM's rule for a role ID: 3-64 of `[a-zA-Z0-9_.]`.
fn valid_role_id(id: &str) -> bool {
    (3..=64).contains(&id.len())
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
}

/// A permission's shape: `service.resource.verb`, each part alphanumeric.
fn valid_permission(p: &str) -> bool {
    let parts: Vec<&str> = p.split('.').collect();
    parts.len() >= 3
        && parts.iter().all(|s| {
            s.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.bytes().all(|c| c.is_ascii_alphanumeric())
        })
}

fn not_found(name: &str) -> SimError {
    SimError::new(
        F,
        404,
        "NOT_FOUND",
        "NOT_FOUND",
        format!("The role named {name} was not found."),
    )
}

/// The role as Google shows it: no `stage` for ALPHA.
fn shown(r: &Role) -> Role {
    let mut r = r.clone();
    if r.stage == "ALPHA" {
        r.stage.clear();
    }
    r
}

fn create(sim: &Sim, Path(project): Path<String>, body: Bytes) -> Result<Json<Role>, SimError> {
    let req: CreateRoleRequest = strict(F, &body)?;
    if !valid_project_id(&project) {
        return Err(SimError::invalid(
            F,
            format!("Invalid project {project:?}."),
        ));
    }
    if !valid_role_id(&req.role_id) {
        return Err(SimError::invalid(
            F,
            format!(
                "The role ID {:?} is invalid: it must be 3 to 64 characters of letters, digits, '_' and '.'.",
                req.role_id
            ),
        ));
    }
    let given = req.role.unwrap_or_default();
    if !given.name.is_empty() {
        return Err(SimError::invalid(
            F,
            "The role name must not be set in a create request: it is derived from the role ID.",
        ));
    }
    if given.title.len() > 100 {
        return Err(SimError::invalid(
            F,
            "The role title must be at most 100 bytes.",
        ));
    }
    if let Some(bad) = given
        .included_permissions
        .iter()
        .find(|p| !valid_permission(p))
    {
        return Err(SimError::invalid(
            F,
            format!("Permission {bad} is not valid."),
        ));
    }
    let stage = if given.stage.is_empty() {
        "ALPHA".to_owned()
    } else if STAGES.contains(&given.stage.as_str()) {
        given.stage
    } else {
        return Err(SimError::invalid(
            F,
            format!("Invalid value for stage: {:?}.", given.stage),
        ));
    };
    let name = format!("projects/{project}/roles/{}", req.role_id);
    let mut w = sim.world();
    if w.iam.roles.contains_key(&name) {
        return Err(SimError::already_exists(F, &name));
    }
    let mut permissions = given.included_permissions;
    permissions.sort();
    permissions.dedup();
    let role = Role {
        name: name.clone(),
        title: given.title,
        description: given.description,
        included_permissions: permissions,
        stage,
        etag: policy::etag(1),
        deleted: false,
    };
    w.iam.roles.insert(name, role.clone());
    Ok(Json(shown(&role)))
}

fn get(sim: &Sim, Path((project, role)): Path<(String, String)>) -> Result<Json<Role>, SimError> {
    let name = format!("projects/{project}/roles/{role}");
    let w = sim.world();
    w.iam
        .roles
        .get(&name)
        .map(|r| Json(shown(r)))
        .ok_or_else(|| not_found(&name))
}

fn delete(
    sim: &Sim,
    Path((project, role)): Path<(String, String)>,
) -> Result<Json<Role>, SimError> {
    let name = format!("projects/{project}/roles/{role}");
    let mut w = sim.world();
    let r = w.iam.roles.get_mut(&name).ok_or_else(|| not_found(&name))?;
    if r.deleted {
        return Err(SimError::precondition(
            F,
            format!("You can't delete role_id ({role}) as it is already deleted."),
        ));
    }
    r.deleted = true;
    r.etag = policy::etag(2);
    Ok(Json(shown(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_permissions() {
        let ids = [
            ("kineticdTeamProject", true),
            ("a.b_c", true),
            ("ab", false),
            ("has-dash", false),
        ];
        for (id, valid) in ids {
            assert_eq!(valid_role_id(id), valid, "{id}");
        }
        let permissions = [
            ("resourcemanager.projects.setIamPolicy", true),
            ("resourcemanager.projects", false),
            ("resourcemanager..setIamPolicy", false),
        ];
        for (p, valid) in permissions {
            assert_eq!(valid_permission(p), valid, "{p}");
        }
    }
}
