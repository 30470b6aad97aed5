//! Preview and apply: `up` and `pool add` forms show the plan and its cost from
//! `validateOnly` before a confirm button runs it with a request id; `pool remove` and
//! `down` show their plan on a confirm page.
//!
//! Invariant: previews are GETs and change nothing (the service's `validateOnly`);
//! applies are POSTs through [`Posted`] (CSRF-checked) and call the same service
//! functions as the API with the same request-id fingerprint (method, resource, body),
//! so a preview and its confirm name the same pools and a repeated confirm is the same
//! operation.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Serialize;
use serde_json::Value;

use crate::domain::TeamId;
use crate::model::TeamRole;
use crate::service::clusters::ClusterPath;
use crate::service::provision::pools::AddPoolRequest;
use crate::service::provision::up::UpRequest;
use crate::service::provision::{self, Mutation, Plan, Submitted};
use crate::service::{self, Caller};

use super::ConsoleState;
use super::error::PageError;
use super::form::Posted;
use super::identity::{Viewer, Visit};
use super::paths::{ConsoleCluster, ConsolePool};
use super::view::{self, Chrome};

pub struct ActionRow {
    pub id: String,
    pub action: String,
    pub resource_type: String,
    pub name: String,
    pub reason: String,
    pub after: String,
}

pub struct PlanView {
    pub actions: Vec<ActionRow>,
    pub warnings: Vec<String>,
    pub cost: String,
    /// The team policy's verdict (empty on plans it does not judge) and its reasons.
    pub verdict: String,
    pub violations: Vec<String>,
}

fn plan_view(plan: &Plan) -> PlanView {
    let v = serde_json::to_value(plan).unwrap_or_default();
    let s = |a: &Value, k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let actions = v["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| ActionRow {
            id: s(a, "id"),
            action: s(a, "action"),
            resource_type: s(a, "type"),
            name: s(a, "name"),
            reason: s(a, "reason"),
            after: a["dependsOn"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
        })
        .collect();
    PlanView {
        actions,
        warnings: plan.warnings.clone(),
        cost: plan.estimated_hourly_cost.as_ref().map_or_else(
            || "no estimate".to_owned(),
            |c| view::cost_range(&c.currency, c.at_min, c.at_max),
        ),
        verdict: plan
            .policy
            .as_ref()
            .map(|p| p.verdict.as_str().to_owned())
            .unwrap_or_default(),
        violations: plan
            .policy
            .iter()
            .flat_map(|p| p.violations.iter().map(|v| v.message.clone()))
            .collect(),
    }
}

/// The mutation as the API would build it (`method resource body` fingerprinted).
fn mutation(
    caller: &Caller,
    path: ClusterPath,
    validate_only: bool,
    request_id: Option<&str>,
    method: &str,
    resource: &str,
    body: &impl Serialize,
) -> Result<Mutation, PageError> {
    // A blank hidden field is no key (the API has no such case: an absent one is none).
    let key = request_id.map(str::trim).filter(|k| !k.is_empty());
    Ok(Mutation {
        caller: caller.clone(),
        path,
        validate_only,
        idempotency: service::request_id::bind(key, method, resource, body)?,
        if_match: None,
        pool_if_match: None,
        approving: None,
    })
}

/// `ClusterPath` is not `Clone`: a copy from its (already valid) parts.
fn copy_of(p: &ClusterPath) -> ClusterPath {
    ClusterPath {
        project: p.project.clone(),
        zone: p.zone.clone(),
        cluster: p.cluster.clone(),
    }
}

fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Where an accepted mutation goes: its operation's page.
fn accepted(s: Submitted) -> Response {
    match s {
        Submitted::Operation(op) => Redirect::to(&view::operation_href(&op.name)).into_response(),
        // Not asked for (validate_only is false on apply), but harmless: back home.
        Submitted::Plan(_) => Redirect::to("/console/").into_response(),
    }
}

fn status_of(e: &Option<PageError>) -> StatusCode {
    e.as_ref().map_or(StatusCode::OK, |e| e.status)
}

fn number(raw: &str, what: &str) -> Result<Option<u32>, PageError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse().map(Some).map_err(|_| {
        service::Error::invalid(
            "INVALID_NUMBER",
            format!("{what} must be a whole number of 0 or more, not {raw:?}"),
        )
        .into()
    })
}

/// Where a form's values come from: a preview's query (GET) or a posted confirm.
trait FormValues {
    /// A text field, trimmed ("" when absent).
    fn text(&self, k: &str) -> &str;
    /// A checkbox: present and not "", "off" or "false".
    fn flag(&self, k: &str) -> bool;
}

impl FormValues for HashMap<String, String> {
    fn text(&self, k: &str) -> &str {
        self.get(k).map_or("", |v| v.trim())
    }

    fn flag(&self, k: &str) -> bool {
        self.get(k)
            .is_some_and(|v| !matches!(v.as_str(), "" | "off" | "false"))
    }
}

impl FormValues for Posted {
    fn text(&self, k: &str) -> &str {
        self.field(k).trim()
    }

    fn flag(&self, k: &str) -> bool {
        self.checked(k)
    }
}

/// The first pool's (or the added pool's) choices both forms share, as request values:
/// a blank accelerator is none, a blank minimum is none, an unchecked spot is none.
struct PoolChoice {
    accelerator: Option<String>,
    min_nodes: Option<u32>,
    spot: Option<bool>,
}

impl PoolChoice {
    fn read(accelerator: &str, min_nodes: &str, spot: bool) -> Result<PoolChoice, PageError> {
        let acc = accelerator.trim();
        Ok(PoolChoice {
            accelerator: (!acc.is_empty()).then(|| acc.to_owned()),
            min_nodes: number(min_nodes, "min nodes")?,
            spot: spot.then_some(true),
        })
    }
}

/// The up form's values.
#[derive(Default, Clone)]
pub struct UpFields {
    pub project: String,
    pub zone: String,
    pub cluster: String,
    pub accelerator: String,
    pub min_nodes: String,
    pub spot: bool,
    pub request_id: String,
}

impl UpFields {
    fn read(v: &impl FormValues) -> UpFields {
        UpFields {
            project: v.text("project").to_owned(),
            zone: v.text("zone").to_owned(),
            cluster: v.text("cluster").to_owned(),
            accelerator: v.text("accelerator").to_owned(),
            min_nodes: v.text("minNodes").to_owned(),
            spot: v.flag("spot"),
            request_id: v.text("requestId").to_owned(),
        }
    }

    fn request(&self) -> Result<UpRequest, PageError> {
        let c = PoolChoice::read(&self.accelerator, &self.min_nodes, self.spot)?;
        Ok(UpRequest {
            accelerator: c.accelerator,
            min_nodes: c.min_nodes,
            spot: c.spot,
            ..UpRequest::default()
        })
    }

    /// The `up` mutation of these fields (`PUT` of the cluster), and its request.
    fn mutation(
        &self,
        caller: &Caller,
        validate_only: bool,
    ) -> Result<(Mutation, UpRequest), PageError> {
        let req = self.request()?;
        let path = self.path()?;
        let resource = path.name();
        let m = mutation(
            caller,
            path,
            validate_only,
            Some(&self.request_id),
            "PUT",
            &resource,
            &req,
        )?;
        Ok((m, req))
    }

    fn path(&self) -> Result<ClusterPath, PageError> {
        Ok(ClusterPath::parse(
            &self.project,
            &self.zone,
            &self.cluster,
        )?)
    }
}

#[derive(Template)]
#[template(path = "up.html")]
struct UpPage {
    chrome: Chrome,
    f: UpFields,
    projects: Vec<String>,
    accelerators: Vec<String>,
    plan: Option<PlanView>,
    error: Option<PageError>,
}

/// The projects of the caller's teams where it may run `up` (MEMBER+), for suggestions.
async fn projects(s: &ConsoleState, caller: &Caller) -> Vec<String> {
    let Ok(me) = service::teams::me(&s.services.db, caller).await else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for TeamRole { team, role } in me.teams {
        if !role.can_operate() {
            continue;
        }
        let Ok(id) = TeamId::parse(team.strip_prefix("teams/").unwrap_or(&team)) else {
            continue;
        };
        if let Ok(t) = service::teams::get(&s.services.db, caller, &id).await {
            out.extend(t.projects);
        }
    }
    out.sort();
    out.dedup();
    out
}

fn accelerator_names(s: &ConsoleState) -> Vec<String> {
    let mut names: Vec<String> = service::accelerators::list(&s.services.prices)
        .into_iter()
        .map(|a| a.name)
        .collect();
    names.push("cpu".to_owned());
    names
}

async fn preview_up(
    s: &ConsoleState,
    caller: &Caller,
    f: &UpFields,
) -> Result<PlanView, PageError> {
    let (m, req) = f.mutation(caller, true)?;
    preview_only(provision::up::up(&s.services, &m, req).await?)
}

/// `GET /console/up`: the form; with `cluster` filled in, the preview and a confirm form.
pub async fn up_form(
    Visit(s, v): Visit,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    let mut f = UpFields {
        request_id: String::new(),
        ..UpFields::read(&q)
    };
    if f.zone.is_empty() {
        f.zone = "us-central1-a".to_owned();
    }
    let (mut plan, mut error) = (None, None);
    if q.contains_key("preview") && !f.cluster.is_empty() {
        f.request_id = new_request_id();
        match preview_up(&s, &v.caller, &f).await {
            Ok(p) => plan = Some(p),
            Err(e) => error = Some(e),
        }
    }
    let page = UpPage {
        chrome: Chrome::new(&v, "Up a cluster", "/console/up"),
        projects: projects(&s, &v.caller).await,
        accelerators: accelerator_names(&s),
        f,
        plan,
        error,
    };
    view::render_with(status_of(&page.error), &page)
}

/// `POST /console/up`: run the previewed `up` with its request id.
pub async fn up(State(s): State<ConsoleState>, p: Posted) -> Result<Response, PageError> {
    let (m, req) = UpFields::read(&p).mutation(&p.viewer.caller, false)?;
    Ok(accepted(provision::up::up(&s.services, &m, req).await?))
}

/// The pool-add form's values.
#[derive(Default, Clone)]
pub struct PoolFields {
    pub accelerator: String,
    pub min_nodes: String,
    pub spot: bool,
    pub failover: bool,
    pub request_id: String,
}

impl PoolFields {
    fn read(v: &impl FormValues) -> PoolFields {
        PoolFields {
            accelerator: v.text("accelerator").to_owned(),
            min_nodes: v.text("minNodes").to_owned(),
            spot: v.flag("spot"),
            failover: v.flag("failover"),
            request_id: v.text("requestId").to_owned(),
        }
    }

    fn request(&self) -> Result<AddPoolRequest, PageError> {
        let c = PoolChoice::read(&self.accelerator, &self.min_nodes, self.spot)?;
        Ok(AddPoolRequest {
            accelerator: c.accelerator,
            min_nodes: c.min_nodes,
            spot: c.spot,
            failover: self.failover.then_some(true),
            ..AddPoolRequest::default()
        })
    }

    /// The `pool add` mutation of these fields (`POST` of a node pool), and its request.
    fn mutation(
        &self,
        caller: &Caller,
        path: ClusterPath,
        validate_only: bool,
    ) -> Result<(Mutation, AddPoolRequest), PageError> {
        let req = self.request()?;
        let resource = format!("{}/nodePools", path.name());
        let m = mutation(
            caller,
            path,
            validate_only,
            Some(&self.request_id),
            "POST",
            &resource,
            &req,
        )?;
        Ok((m, req))
    }
}

#[derive(Template)]
#[template(path = "pool_add.html")]
struct PoolAddPage {
    chrome: Chrome,
    cluster: String,
    base: String,
    f: PoolFields,
    accelerators: Vec<String>,
    plan: Option<PlanView>,
    error: Option<PageError>,
}

fn cluster_base(path: &ClusterPath) -> String {
    format!(
        "/console/clusters/{}/{}/{}",
        path.project.as_str(),
        path.zone.as_str(),
        path.cluster.as_str()
    )
}

async fn preview_pool(
    s: &ConsoleState,
    caller: &Caller,
    path: &ClusterPath,
    f: &PoolFields,
) -> Result<PlanView, PageError> {
    let (m, req) = f.mutation(caller, copy_of(path), true)?;
    preview_only(provision::pools::add_pool(&s.services, &m, req).await?)
}

/// `GET .../pools/add`: the form; with `preview`, the plan and a confirm form.
pub async fn pool_add_form(
    Visit(s, v): Visit,
    ConsoleCluster(path): ConsoleCluster,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, PageError> {
    // The record read decides visibility: 404 for outsiders before any form is shown.
    service::clusters::get(&s.services.db, &v.caller, &path).await?;
    let base = cluster_base(&path);
    let mut f = PoolFields {
        request_id: String::new(),
        ..PoolFields::read(&q)
    };
    let (mut plan, mut error) = (None, None);
    if q.contains_key("preview") {
        f.request_id = new_request_id();
        let result = preview_pool(&s, &v.caller, &path, &f).await;
        match result {
            Ok(p) => plan = Some(p),
            Err(e) => error = Some(e),
        }
    }
    let page = PoolAddPage {
        chrome: Chrome::new(
            &v,
            format!("Add a pool to {}", path.cluster.as_str()),
            format!("{base}/pools/add"),
        ),
        cluster: path.cluster.as_str().to_owned(),
        base,
        accelerators: accelerator_names(&s),
        f,
        plan,
        error,
    };
    view::render_with(status_of(&page.error), &page)
}

/// `POST .../pools/add`: run the previewed `pool add` with its request id.
pub async fn pool_add(
    State(s): State<ConsoleState>,
    ConsoleCluster(path): ConsoleCluster,
    p: Posted,
) -> Result<Response, PageError> {
    let (m, req) = PoolFields::read(&p).mutation(&p.viewer.caller, path, false)?;
    Ok(accepted(
        provision::pools::add_pool(&s.services, &m, req).await?,
    ))
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    heading: String,
    explain: String,
    action: String,
    button: String,
    back: String,
    request_id: String,
    plan: Option<PlanView>,
    error: Option<PageError>,
}

/// What a removal's confirm page says, and where its confirm posts.
struct Removal {
    title: String,
    heading: String,
    explain: &'static str,
    action: String,
    button: String,
}

/// A removal's confirm page: `submit` as a preview (`validateOnly`, nothing changes),
/// its plan, and a confirm button that posts a fresh request id to `texts.action`.
async fn confirm_removal(
    s: &ConsoleState,
    v: &Viewer,
    path: &ClusterPath,
    resource: &str,
    texts: Removal,
    submit: impl AsyncFnOnce(&Mutation) -> service::Result<Submitted>,
) -> Result<Response, PageError> {
    service::clusters::get(&s.services.db, &v.caller, path).await?;
    let m = mutation(
        &v.caller,
        copy_of(path),
        true,
        None,
        "DELETE",
        resource,
        &(),
    )?;
    let (plan, error) = match submit(&m).await {
        Ok(Submitted::Plan(p)) => (Some(plan_view(&p)), None),
        Ok(Submitted::Operation(_)) => (None, None),
        Err(e) => (None, Some(PageError::from(e))),
    };
    let page = ConfirmPage {
        chrome: Chrome::new(v, texts.title, texts.action.clone()),
        heading: texts.heading,
        explain: texts.explain.to_owned(),
        action: texts.action,
        button: texts.button,
        back: cluster_base(path),
        request_id: new_request_id(),
        plan,
        error,
    };
    view::render_with(status_of(&page.error), &page)
}

/// A removal's confirm (POST): `submit` with the posted request id, then its operation.
async fn run_removal(
    p: &Posted,
    path: ClusterPath,
    resource: &str,
    submit: impl AsyncFnOnce(&Mutation) -> service::Result<Submitted>,
) -> Result<Response, PageError> {
    let request_id = Some(p.field("requestId"));
    let m = mutation(
        &p.viewer.caller,
        path,
        false,
        request_id,
        "DELETE",
        resource,
        &(),
    )?;
    Ok(accepted(submit(&m).await?))
}

/// `GET .../pools/{pool}/remove`: the plan of removing the pool, and a confirm button.
pub async fn pool_remove_confirm(
    Visit(s, v): Visit,
    ConsolePool { path, pool }: ConsolePool,
) -> Result<Response, PageError> {
    let resource = format!("{}/nodePools/{pool}", path.name());
    let texts = Removal {
        title: format!("Remove pool {pool}"),
        heading: format!("Remove node pool {pool} from {}", path.cluster.as_str()),
        explain: "Its nodes are drained and deleted; workloads on them are evicted.",
        action: format!("{}/pools/{pool}/remove", cluster_base(&path)),
        button: format!("Remove {pool}"),
    };
    let submit = async |m: &Mutation| provision::pools::remove_pool(&s.services, m, &pool).await;
    confirm_removal(&s, &v, &path, &resource, texts, submit).await
}

/// `POST .../pools/{pool}/remove`.
pub async fn pool_remove(
    State(s): State<ConsoleState>,
    ConsolePool { path, pool }: ConsolePool,
    p: Posted,
) -> Result<Response, PageError> {
    let resource = format!("{}/nodePools/{pool}", path.name());
    let submit = async |m: &Mutation| provision::pools::remove_pool(&s.services, m, &pool).await;
    run_removal(&p, path, &resource, submit).await
}

/// `GET .../down`: the plan of deleting the cluster, and a confirm button.
pub async fn down_confirm(
    Visit(s, v): Visit,
    ConsoleCluster(path): ConsoleCluster,
) -> Result<Response, PageError> {
    let name = path.cluster.as_str();
    let texts = Removal {
        title: format!("Delete {name}"),
        heading: format!("Delete cluster {name} (down)"),
        explain: "Every node pool, the GKE cluster and the cluster's network, buckets, \
                  repository and service accounts are deleted.",
        action: format!("{}/down", cluster_base(&path)),
        button: format!("Delete {name}"),
    };
    let submit = async |m: &Mutation| provision::down::down(&s.services, m).await;
    confirm_removal(&s, &v, &path, &path.name(), texts, submit).await
}

/// `POST .../down`.
pub async fn down(
    State(s): State<ConsoleState>,
    ConsoleCluster(path): ConsoleCluster,
    p: Posted,
) -> Result<Response, PageError> {
    let resource = path.name();
    let submit = async |m: &Mutation| provision::down::down(&s.services, m).await;
    run_removal(&p, path, &resource, submit).await
}

/// A preview's answer as a page: the plan, or 409 ALREADY_APPLIED when the preview's
/// request id was already used for a real run (the service answered with its operation).
fn preview_only(submitted: Submitted) -> Result<PlanView, PageError> {
    match submitted {
        Submitted::Plan(p) => Ok(plan_view(&p)),
        Submitted::Operation(_) => Err(PageError::new(
            StatusCode::CONFLICT,
            "ALREADY_APPLIED",
            "this preview's request id has already been applied",
        )),
    }
}
