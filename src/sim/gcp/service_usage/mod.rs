//! Simulated Service Usage v1: the set of enabled services per project (listed with
//! their state, filtered by `state:` as gcloud asks), changed by
//! `batchEnable` long-running operations that finish [`ENABLE_DELAY`] later on the sim
//! clock (at once at speed 0).
//!
//! Invariant: a service becomes ENABLED exactly when the operation enabling it is done;
//! a batch with nothing to enable answers `operations/noop.DONE_OPERATION`; a batch is
//! validated whole (size, syntax, catalogue) before anything changes.

mod list;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State as AxState};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;

use super::resource_manager::{project_number, valid_project_id};
use crate::cloud::gcp::types::service_usage::{
    BATCH_ENABLE_MAX, BatchEnableServicesRequest, NOOP_OPERATION, Operation, Service, ServiceConfig,
};
use crate::sim::body::strict;
use crate::sim::clock::{Clock, SimTime};
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::method::Service as Api;
use crate::sim::world::World;
use crate::sim::{Sim, tag};

const SVC: &str = "serviceusage";
const F: Flavor = Flavor::Aip193;
const API: Api = Api::new(SVC, F);

/// Virtual time a batchEnable takes.
pub const ENABLE_DELAY: Duration = Duration::from_secs(15);

/// Services the simulator knows (anything else is "not found or permission denied").
pub const CATALOGUE: [(&str, &str); 24] = [
    ("aiplatform.googleapis.com", "Vertex AI API"),
    ("artifactregistry.googleapis.com", "Artifact Registry API"),
    ("bigquery.googleapis.com", "BigQuery API"),
    ("cloudapis.googleapis.com", "Google Cloud APIs"),
    ("cloudbuild.googleapis.com", "Cloud Build API"),
    (
        "cloudresourcemanager.googleapis.com",
        "Cloud Resource Manager API",
    ),
    ("cloudtrace.googleapis.com", "Cloud Trace API"),
    ("compute.googleapis.com", "Compute Engine API"),
    ("container.googleapis.com", "Kubernetes Engine API"),
    ("containerregistry.googleapis.com", "Container Registry API"),
    ("dns.googleapis.com", "Cloud DNS API"),
    ("file.googleapis.com", "Cloud Filestore API"),
    (
        "iam.googleapis.com",
        "Identity and Access Management (IAM) API",
    ),
    (
        "iamcredentials.googleapis.com",
        "IAM Service Account Credentials API",
    ),
    ("logging.googleapis.com", "Cloud Logging API"),
    ("monitoring.googleapis.com", "Cloud Monitoring API"),
    ("networkmanagement.googleapis.com", "Network Management API"),
    ("oslogin.googleapis.com", "Cloud OS Login API"),
    ("pubsub.googleapis.com", "Cloud Pub/Sub API"),
    ("secretmanager.googleapis.com", "Secret Manager API"),
    ("serviceusage.googleapis.com", "Service Usage API"),
    (
        "storage-api.googleapis.com",
        "Google Cloud Storage JSON API",
    ),
    ("storage.googleapis.com", "Cloud Storage"),
    ("tpu.googleapis.com", "Cloud TPU API"),
];

/// Enabled in every new project, as in a fresh Google Cloud project.
pub const DEFAULT_ENABLED: [&str; 6] = [
    "bigquery.googleapis.com",
    "cloudapis.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "serviceusage.googleapis.com",
    "storage-api.googleapis.com",
];

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// Enabled service IDs by project ID.
    pub enabled: BTreeMap<String, BTreeSet<String>>,
    /// By operation name (`operations/...`).
    pub operations: BTreeMap<String, PendingEnable>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingEnable {
    pub operation: Operation,
    pub project: String,
    pub service_ids: Vec<String>,
    #[serde(skip)]
    due: SimTime,
}

impl State {
    /// The enabled set of `project` (initialised with [`DEFAULT_ENABLED`]).
    pub fn enabled_mut(&mut self, project: &str) -> &mut BTreeSet<String> {
        self.enabled
            .entry(project.to_owned())
            .or_insert_with(|| DEFAULT_ENABLED.iter().map(|s| (*s).to_owned()).collect())
    }

    /// Whether `service_id` is enabled in `project`.
    pub fn is_enabled(&mut self, project: &str, service_id: &str) -> bool {
        self.enabled_mut(project).contains(service_id)
    }

    /// Finish every operation whose time has come.
    fn advance(&mut self, clock: &Clock) {
        let due: Vec<String> = self
            .operations
            .iter()
            .filter(|(_, p)| !p.operation.done && clock.is_due(p.due))
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            let Some(p) = self.operations.get(&name).cloned() else {
                continue;
            };
            self.enabled_mut(&p.project)
                .extend(p.service_ids.iter().cloned());
            let services: Vec<Service> = p
                .service_ids
                .iter()
                .map(|id| service(&p.project, id, true))
                .collect();
            if let Some(op) = self.operations.get_mut(&name) {
                op.operation.done = true;
                op.operation.response = Some(json!({
                    "@type": "type.googleapis.com/google.api.serviceusage.v1.BatchEnableServicesResponse",
                    "services": services,
                }));
            }
        }
    }
}

fn service(project: &str, id: &str, enabled: bool) -> Service {
    let number = project_number(project);
    Service {
        name: format!("projects/{number}/services/{id}"),
        parent: format!("projects/{number}"),
        state: if enabled { "ENABLED" } else { "DISABLED" }.into(),
        config: Some(ServiceConfig {
            name: id.to_owned(),
            title: CATALOGUE
                .iter()
                .find(|(n, _)| *n == id)
                .map(|(_, t)| (*t).to_owned())
                .unwrap_or_default(),
        }),
    }
}

pub fn routes() -> Router<Sim> {
    Router::new()
        .route(
            "/serviceusage/v1/projects/{project}/{verb}",
            post(batch_enable),
        )
        .route(
            "/serviceusage/v1/projects/{project}/services",
            get(API.method("services.list", list::services)),
        )
        .route(
            "/serviceusage/v1/projects/{project}/services/{service}",
            get(API.method("services.get", get_service)),
        )
        .route(
            "/serviceusage/v1/operations/{op}",
            get(API.method("operations.get", get_operation)),
        )
}

pub fn tick(world: &mut World, clock: &Clock) {
    world.service_usage.advance(clock);
}

fn project_denied(project: &str) -> SimError {
    SimError::new(
        F,
        403,
        "PERMISSION_DENIED",
        "USER_PROJECT_DENIED",
        format!("Project '{project}' not found or permission denied."),
    )
}

fn well_formed(id: &str) -> bool {
    id.contains('.')
        && !id.starts_with('.')
        && !id.ends_with('.')
        && id
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
}

/// `POST projects/{p}/services:batchEnable` (`services:batchEnable` is one segment).
async fn batch_enable(
    AxState(sim): AxState<Sim>,
    Path((project, verb)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    if verb != "services:batchEnable" {
        return tag("services.unknown", SimError::no_method(F, &verb));
    }
    sim.serve((SVC, F), "services.batchEnable", || {
        do_batch_enable(&sim, &project, &body)
    })
    .await
}

fn do_batch_enable(sim: &Sim, project: &str, body: &Bytes) -> Result<Json<Operation>, SimError> {
    let req: BatchEnableServicesRequest = strict(F, body)?;
    if !valid_project_id(project) {
        return Err(project_denied(project));
    }
    let ids = req.service_ids;
    if ids.is_empty() {
        return Err(SimError::invalid(
            F,
            "serviceIds must contain at least one service.",
        ));
    }
    if ids.len() > BATCH_ENABLE_MAX {
        return Err(SimError::invalid(
            F,
            format!(
                "Request contains an invalid argument: at most {BATCH_ENABLE_MAX} services \
                 can be enabled in one batch ({} given).",
                ids.len()
            ),
        ));
    }
    if let Some(bad) = ids.iter().find(|id| !well_formed(id)) {
        return Err(SimError::invalid(
            F,
            format!("Invalid service name: {bad:?}."),
        ));
    }
    let unknown: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| !CATALOGUE.iter().any(|(n, _)| n == id))
        .collect();
    if !unknown.is_empty() {
        return Err(SimError::new(
            F,
            403,
            "PERMISSION_DENIED",
            "SERVICE_CONFIG_NOT_FOUND_OR_PERMISSION_DENIED",
            format!(
                "Not found or permission denied for service(s): {}.",
                unknown.join(", ")
            ),
        ));
    }
    let mut w = sim.world();
    let st = &mut w.service_usage;
    let enabled = st.enabled_mut(project);
    let todo: Vec<String> = ids
        .into_iter()
        .filter(|id| !enabled.contains(id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if todo.is_empty() {
        return Ok(Json(Operation {
            name: NOOP_OPERATION.into(),
            done: true,
            ..Operation::default()
        }));
    }
    let number = project_number(project);
    let name = format!("operations/acf.p2-{number}-{}", uuid::Uuid::new_v4());
    let resource_names: Vec<String> = todo
        .iter()
        .map(|id| format!("services/{id}/projectSettings/{number}"))
        .collect();
    let operation = Operation {
        name: name.clone(),
        metadata: Some(json!({
            "@type": "type.googleapis.com/google.api.serviceusage.v1.OperationMetadata",
            "resourceNames": resource_names,
        })),
        ..Operation::default()
    };
    st.operations.insert(
        name.clone(),
        PendingEnable {
            operation,
            project: project.to_owned(),
            service_ids: todo,
            due: sim.clock().now() + ENABLE_DELAY,
        },
    );
    st.advance(sim.clock());
    let op = st.operations.get(&name).map(|p| p.operation.clone());
    op.map(Json)
        .ok_or_else(|| SimError::new(F, 500, "INTERNAL", "INTERNAL", "operation vanished"))
}

fn get_service(
    sim: &Sim,
    Path((project, id)): Path<(String, String)>,
) -> Result<Json<Service>, SimError> {
    if !valid_project_id(&project) {
        return Err(project_denied(&project));
    }
    if !CATALOGUE.iter().any(|(n, _)| *n == id) {
        return Err(SimError::new(
            F,
            403,
            "PERMISSION_DENIED",
            "SERVICE_CONFIG_NOT_FOUND_OR_PERMISSION_DENIED",
            format!("Not found or permission denied for service(s): {id}."),
        ));
    }
    let mut w = sim.world();
    let on = w.service_usage.is_enabled(&project, &id);
    Ok(Json(service(&project, &id, on)))
}

fn get_operation(sim: &Sim, Path(op): Path<String>) -> Result<Json<Operation>, SimError> {
    let name = format!("operations/{op}");
    if name == NOOP_OPERATION {
        return Ok(Json(Operation {
            name,
            done: true,
            ..Operation::default()
        }));
    }
    let w = sim.world();
    w.service_usage
        .operations
        .get(&name)
        .map(|p| Json(p.operation.clone()))
        .ok_or_else(|| SimError::not_found(F, &name))
}
