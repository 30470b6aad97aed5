//! Simulated Artifact Registry v1: repositories (listed per location) created and deleted
//! by long-running operations that finish [`OP_DELAY`] later on the sim clock (at once at
//! speed 0), and the locations they may be in.
//!
//! Invariant: a repository is visible (get) from the moment its create operation is
//! done until its delete operation is done; a second create of the same name while it
//! exists or is being created is 409; validation happens before anything changes.

mod list;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State as AxState};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;

use super::iam::policy;
use crate::cloud::gcp::types::artifact_registry::{Operation, Repository, docker_host};
use crate::cloud::gcp::types::iam::{Policy, SetIamPolicyRequest};
use crate::sim::body::strict;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::method::Service;
use crate::sim::world::World;
use crate::sim::{Sim, tag};

const SVC: &str = "artifactregistry";
const F: Flavor = Flavor::Aip193;
const API: Service = Service::new(SVC, F);

/// Virtual time a repository create or delete takes.
pub const OP_DELAY: Duration = Duration::from_secs(5);

const FORMATS: [&str; 9] = [
    "DOCKER", "MAVEN", "NPM", "PYTHON", "APT", "YUM", "GO", "KFP", "GENERIC",
];
const MULTI_REGIONS: [&str; 3] = ["us", "europe", "asia"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    Creating,
    Ready,
    Deleting,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Repo {
    pub repository: Repository,
    pub phase: Phase,
    pub policy: policy::Stored,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Op {
    pub operation: Operation,
    /// The repository it creates or deletes.
    pub target: String,
    pub delete: bool,
    #[serde(skip)]
    due: SimTime,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By full name.
    pub repositories: BTreeMap<String, Repo>,
    /// By full operation name.
    pub operations: BTreeMap<String, Op>,
}

impl State {
    fn advance(&mut self, clock: &Clock) {
        for op in self.operations.values_mut() {
            if op.operation.done || !clock.is_due(op.due) {
                continue;
            }
            let response = if op.delete {
                self.repositories.remove(&op.target);
                json!({"@type": "type.googleapis.com/google.protobuf.Empty"})
            } else if let Some(repo) = self.repositories.get_mut(&op.target) {
                repo.phase = Phase::Ready;
                let mut v = serde_json::to_value(&repo.repository).unwrap_or_default();
                v["@type"] =
                    json!("type.googleapis.com/google.devtools.artifactregistry.v1.Repository");
                v
            } else {
                json!({})
            };
            op.operation.done = true;
            op.operation.response = Some(response);
        }
    }

    fn start(&mut self, clock: &Clock, parent: &str, target: &str, delete: bool) -> Operation {
        let name = format!("{parent}/operations/{}", uuid::Uuid::new_v4());
        let operation = Operation {
            name: name.clone(),
            metadata: Some(json!({
                "@type": "type.googleapis.com/google.devtools.artifactregistry.v1.OperationMetadata",
            })),
            ..Operation::default()
        };
        self.operations.insert(
            name.clone(),
            Op {
                operation,
                target: target.to_owned(),
                delete,
                due: clock.now() + OP_DELAY,
            },
        );
        self.advance(clock);
        self.operations
            .get(&name)
            .map(|o| o.operation.clone())
            .unwrap_or_default()
    }
}

pub fn routes() -> Router<Sim> {
    const P: &str = "/artifactregistry/v1/projects/{project}/locations";
    let locations = || get(API.method("locations.list", list::locations));
    Router::new()
        .route(
            &format!("{P}/{{location}}/repositories"),
            post(API.method("repositories.create", create))
                .get(API.method("repositories.list", list::repositories)),
        )
        .route(P, locations())
        .route(
            "/artifactregistry/v1beta2/projects/{project}/locations",
            locations(),
        )
        .route(
            &format!("{P}/{{location}}/repositories/{{repo}}"),
            get(get_repo)
                .delete(API.method("repositories.delete", delete_repo))
                .post(set_policy),
        )
        .route(
            &format!("{P}/{{location}}/operations/{{op}}"),
            get(API.method("operations.get", get_operation)),
        )
}

pub fn tick(world: &mut World, clock: &Clock) {
    world.artifact_registry.advance(clock);
}

fn valid_location(l: &str) -> bool {
    if MULTI_REGIONS.contains(&l) {
        return true;
    }
    // Regions: `us-central1`, `europe-west4`, `northamerica-northeast2`, ...
    let mut parts = l.split('-');
    let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let digits = b.trim_start_matches(|c: char| c.is_ascii_lowercase());
    !a.is_empty()
        && a.bytes().all(|c| c.is_ascii_lowercase())
        && digits.len() < b.len()
        && !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
}

/// A repository ID: a lowercase label of at most 63 characters.
fn valid_repository_id(id: &str) -> bool {
    super::is_lowercase_label(id, 63)
}

fn valid_label(k: &str, v: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    k.starts_with(|c: char| c.is_ascii_lowercase())
        && k.len() <= 63
        && k.chars().all(ok)
        && v.len() <= 63
        && v.chars().all(ok)
}

fn check_location(location: &str) -> Result<(), SimError> {
    if valid_location(location) {
        Ok(())
    } else {
        Err(SimError::invalid(
            F,
            format!("Invalid location: {location:?} is not a supported location."),
        ))
    }
}

fn not_found() -> SimError {
    SimError::new(
        F,
        404,
        "NOT_FOUND",
        "NOT_FOUND",
        "Requested entity was not found.",
    )
}

fn create(
    sim: &Sim,
    Path((project, location)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    do_create(sim, &project, &location, q.get("repositoryId"), &body)
}

fn do_create(
    sim: &Sim,
    project: &str,
    location: &str,
    id: Option<&String>,
    body: &Bytes,
) -> Result<Json<Operation>, SimError> {
    let req: Repository = strict(F, body)?;
    check_location(location)?;
    let id = id.map(String::as_str).unwrap_or("");
    if !valid_repository_id(id) {
        return Err(SimError::invalid(
            F,
            format!(
                "Invalid repository ID {id:?}: it must start with a lowercase letter, contain \
                 only lowercase letters, digits and hyphens, end with a letter or digit, and be \
                 at most 63 characters."
            ),
        ));
    }
    if !FORMATS.contains(&req.format.as_str()) {
        return Err(SimError::invalid(
            F,
            format!("Invalid repository format {:?}.", req.format),
        ));
    }
    if let Some((k, v)) = req.labels.iter().find(|(k, v)| !valid_label(k, v)) {
        return Err(SimError::invalid(F, format!("Invalid label {k:?}={v:?}.")));
    }
    let parent = format!("projects/{project}/locations/{location}");
    let name = format!("{parent}/repositories/{id}");
    let mut w = sim.world();
    let st = &mut w.artifact_registry;
    if st.repositories.contains_key(&name) {
        return Err(SimError::already_exists_as(format!(
            "the repository already exists: {name}"
        )));
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let repository = Repository {
        registry_uri: if req.format == "DOCKER" {
            docker_host(location, project, id)
        } else {
            String::new()
        },
        name: name.clone(),
        format: req.format,
        description: req.description,
        labels: req.labels,
        mode: "STANDARD_REPOSITORY".into(),
        create_time: now.clone(),
        update_time: now,
        size_bytes: None,
    };
    st.repositories.insert(
        name.clone(),
        Repo {
            repository,
            phase: Phase::Creating,
            policy: policy::Stored::new(Vec::new(), 0),
        },
    );
    Ok(Json(st.start(sim.clock(), &parent, &name, false)))
}

async fn get_repo(
    AxState(sim): AxState<Sim>,
    Path((project, location, repo)): Path<(String, String, String)>,
) -> Response {
    if let Some(repo) = repo.strip_suffix(":getIamPolicy") {
        return sim
            .serve((SVC, F), "repositories.getIamPolicy", || {
                let name = format!("projects/{project}/locations/{location}/repositories/{repo}");
                let mut w = sim.world();
                ready(&mut w.artifact_registry, &name).map(|r| Json(r.policy.policy.clone()))
            })
            .await;
    }
    sim.serve((SVC, F), "repositories.get", || {
        check_location(&location)?;
        let name = format!("projects/{project}/locations/{location}/repositories/{repo}");
        let mut w = sim.world();
        ready(&mut w.artifact_registry, &name).map(|r| Json(r.repository.clone()))
    })
    .await
}

/// A repository whose create is done (deleting ones still count), or 404.
fn ready<'a>(st: &'a mut State, name: &str) -> Result<&'a mut Repo, SimError> {
    st.repositories
        .get_mut(name)
        .filter(|r| r.phase != Phase::Creating)
        .ok_or_else(not_found)
}

/// `POST .../repositories/{id}:setIamPolicy` (one path segment).
async fn set_policy(
    AxState(sim): AxState<Sim>,
    Path((project, location, seg)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let Some(repo) = seg.strip_suffix(":setIamPolicy") else {
        return tag("repositories.unknown", SimError::no_method(F, &seg));
    };
    sim.serve((SVC, F), "repositories.setIamPolicy", || {
        let name = format!("projects/{project}/locations/{location}/repositories/{repo}");
        do_set_policy(&sim, &name, &body)
    })
    .await
}

fn do_set_policy(sim: &Sim, name: &str, body: &Bytes) -> Result<Json<Policy>, SimError> {
    let req: SetIamPolicyRequest = strict(F, body)?;
    // Artifact Registry's request and policy have fewer fields than IAM's.
    let unknown = if req.update_mask.is_some() {
        Some(("updateMask", ""))
    } else if !req.policy.audit_configs.is_empty() {
        Some(("auditConfigs", "policy"))
    } else {
        None
    };
    if let Some((field, at)) = unknown {
        return Err(SimError::invalid(
            F,
            format!(
                "Invalid JSON payload received. Unknown name \"{field}\" at '{at}': Cannot find field."
            ),
        ));
    }
    let mut w = sim.world();
    let w = &mut *w;
    let iam = &w.iam;
    let repo = ready(&mut w.artifact_registry, name)?;
    repo.policy.set(req, |email| iam.exists(email)).map(Json)
}

fn delete_repo(
    sim: &Sim,
    Path((project, location, repo)): Path<(String, String, String)>,
) -> Result<Json<Operation>, SimError> {
    check_location(&location)?;
    let parent = format!("projects/{project}/locations/{location}");
    let name = format!("{parent}/repositories/{repo}");
    let mut w = sim.world();
    let st = &mut w.artifact_registry;
    match st.repositories.get_mut(&name) {
        Some(r) if r.phase == Phase::Ready => r.phase = Phase::Deleting,
        _ => return Err(not_found()),
    }
    Ok(Json(st.start(sim.clock(), &parent, &name, true)))
}

fn get_operation(
    sim: &Sim,
    Path((project, location, op)): Path<(String, String, String)>,
) -> Result<Json<Operation>, SimError> {
    let name = format!("projects/{project}/locations/{location}/operations/{op}");
    let w = sim.world();
    w.artifact_registry
        .operations
        .get(&name)
        .map(|o| Json(o.operation.clone()))
        .ok_or_else(not_found)
}
