//! Simulated IAM v1: service accounts (`{accountId}@{project}.iam.gserviceaccount.com`,
//! 21-digit unique IDs, listed per project), their own IAM policies, and projects'
//! custom roles ([`roles`]).
//!
//! Invariant: an account ID is unique within its project while the account exists; a
//! deleted account's grants on project and bucket policies turn into the `deleted:` form; every
//! response, error or not, is tagged with its Google method.

mod list;
pub mod policy;
mod roles;

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State as AxState};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::cloud::gcp::types::iam::{
    CreateServiceAccountRequest, GetIamPolicyRequest, Policy, Role, ServiceAccount,
    SetIamPolicyRequest, service_account_email, validate_account_id,
};
use crate::sim::body::strict;
use crate::sim::clock::Clock;
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::method::Service;
use crate::sim::world::World;
use crate::sim::{Sim, tag};

const SVC: &str = "iam";
const F: Flavor = Flavor::Aip193;
const API: Service = Service::new(SVC, F);

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// By email.
    pub accounts: BTreeMap<String, Account>,
    /// Custom roles by full name (`projects/{p}/roles/{r}`), deleted ones included.
    pub roles: BTreeMap<String, Role>,
    #[serde(skip)]
    next_id: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub account: ServiceAccount,
    pub policy: policy::Stored,
}

impl State {
    /// Whether a live service account has this email.
    pub fn exists(&self, email: &str) -> bool {
        self.accounts.contains_key(email)
    }

    /// The account `key` (email or unique ID) names, seen from `project` (`-`: any): one
    /// lookup by email, a scan only for a unique ID.
    fn find(&self, project: &str, key: &str) -> Result<&Account, SimError> {
        let seen = |a: &&Account| project == "-" || a.account.project_id == project;
        self.accounts
            .get(key)
            .filter(seen)
            .or_else(|| {
                self.accounts
                    .values()
                    .find(|a| a.account.unique_id == key)
                    .filter(seen)
            })
            .ok_or_else(unknown_account)
    }
}

fn unknown_account() -> SimError {
    SimError::new(F, 404, "NOT_FOUND", "NOT_FOUND", "Unknown service account")
}

pub fn routes() -> Router<Sim> {
    Router::new()
        .route(
            "/iam/v1/projects/{project}/serviceAccounts",
            post(API.method("serviceAccounts.create", create))
                .get(API.method("serviceAccounts.list", list::accounts)),
        )
        .route(
            "/iam/v1/projects/{project}/serviceAccounts/{sa}",
            get(API.method("serviceAccounts.get", get_account))
                .delete(API.method("serviceAccounts.delete", delete_account))
                .post(verb),
        )
        .merge(roles::routes())
}

/// IAM has nothing that changes with time.
pub fn tick(_world: &mut World, _clock: &Clock) {}

fn create(
    sim: &Sim,
    Path(project): Path<String>,
    body: Bytes,
) -> Result<Json<ServiceAccount>, SimError> {
    let req: CreateServiceAccountRequest = strict(F, &body)?;
    validate_account_id(&req.account_id).map_err(|m| SimError::invalid(F, m))?;
    let given = req.service_account.unwrap_or_default();
    if given.display_name.chars().count() > 100 {
        return Err(SimError::invalid(
            F,
            "displayName must be at most 100 characters.",
        ));
    }
    if given.description.chars().count() > 256 {
        return Err(SimError::invalid(
            F,
            "description must be at most 256 characters.",
        ));
    }
    let email = service_account_email(&req.account_id, &project);
    let mut w = sim.world();
    let st = &mut w.iam;
    if st.accounts.contains_key(&email) {
        return Err(SimError::already_exists_as(format!(
            "Service account {} already exists within project projects/{project}.",
            req.account_id
        )));
    }
    st.next_id += 1;
    let unique_id = format!("1{:020}", 10_000_000_000 + st.next_id);
    let account = ServiceAccount {
        name: format!("projects/{project}/serviceAccounts/{email}"),
        project_id: project.clone(),
        unique_id: unique_id.clone(),
        email: email.clone(),
        display_name: given.display_name,
        description: given.description,
        etag: "MDEwMjE5MjA=".to_owned(),
        oauth2_client_id: unique_id,
        disabled: false,
    };
    st.accounts.insert(
        email,
        Account {
            account: account.clone(),
            policy: policy::Stored::new(Vec::new(), 0),
        },
    );
    Ok(Json(account))
}

fn get_account(
    sim: &Sim,
    Path((project, sa)): Path<(String, String)>,
) -> Result<Json<ServiceAccount>, SimError> {
    let w = sim.world();
    w.iam.find(&project, &sa).map(|a| Json(a.account.clone()))
}

fn delete_account(
    sim: &Sim,
    Path((project, sa)): Path<(String, String)>,
) -> Result<Json<serde_json::Value>, SimError> {
    let mut w = sim.world();
    let (email, unique_id) = w
        .iam
        .find(&project, &sa)
        .map(|a| (a.account.email.clone(), a.account.unique_id.clone()))?;
    w.iam.accounts.remove(&email);
    w.resource_manager.account_deleted(&email, &unique_id);
    w.storage.account_deleted(&email, &unique_id);
    Ok::<_, SimError>(Json(serde_json::json!({})))
}

#[derive(Debug, Default, Deserialize)]
struct GetPolicyQuery {
    #[serde(rename = "options.requestedPolicyVersion")]
    requested_policy_version: Option<i32>,
}

/// `POST .../serviceAccounts/{sa}:getIamPolicy` and `:setIamPolicy` (one path segment).
async fn verb(
    AxState(sim): AxState<Sim>,
    Path((project, sa)): Path<(String, String)>,
    Query(q): Query<GetPolicyQuery>,
    body: Bytes,
) -> Response {
    if let Some(sa) = sa.strip_suffix(":getIamPolicy") {
        return sim
            .serve((SVC, F), "serviceAccounts.getIamPolicy", || {
                get_policy(&sim, &project, sa, q.requested_policy_version, &body)
            })
            .await;
    }
    if let Some(sa) = sa.strip_suffix(":setIamPolicy") {
        return sim
            .serve((SVC, F), "serviceAccounts.setIamPolicy", || {
                set_policy(&sim, &project, sa, &body)
            })
            .await;
    }
    tag("serviceAccounts.unknown", SimError::no_method(F, &sa))
}

fn get_policy(
    sim: &Sim,
    project: &str,
    sa: &str,
    version: Option<i32>,
    body: &Bytes,
) -> Result<Json<Policy>, SimError> {
    // The discovery document takes the options as a query parameter; accept the
    // Resource Manager style body too.
    let req: GetIamPolicyRequest = strict(F, body)?;
    let version = version.or(req.options.and_then(|o| o.requested_policy_version));
    if let Some(v) = version
        && ![0, 1, 3].contains(&v)
    {
        return Err(SimError::invalid(
            F,
            format!("Invalid requested policy version {v}."),
        ));
    }
    let w = sim.world();
    Ok(Json(w.iam.find(project, sa)?.policy.policy.clone()))
}

fn set_policy(sim: &Sim, project: &str, sa: &str, body: &Bytes) -> Result<Json<Policy>, SimError> {
    let req: SetIamPolicyRequest = strict(F, body)?;
    let mut w = sim.world();
    let iam = &mut w.iam;
    let email = iam.find(project, sa)?.account.email.clone();
    // Out of the map while its policy is set, so the others can be looked up.
    let mut acct = iam.accounts.remove(&email).ok_or_else(unknown_account)?;
    let set = acct
        .policy
        .set(req, |e| e == email || iam.accounts.contains_key(e));
    iam.accounts.insert(email, acct);
    set.map(Json)
}
