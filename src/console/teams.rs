//! Teams and members (ADMIN+ change roles; anyone may create a team and becomes its
//! OWNER) and the accelerator catalog with prices.
//!
//! Invariant: every read and change goes through `service::teams`, so a non-member gets
//! the same 404 and a too-small role the same 403 as from the API.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use crate::domain::{Role, TeamId};
use crate::service::clusters::ListClusters;
use crate::service::{self, PageRequest};

use super::ConsoleState;
use super::error::PageError;
use super::form::Posted;
use super::home::{ClusterRow, all_clusters};
use super::identity::Visit;
use super::paths::ConsoleTeam;
use super::view::{self, Chrome};

pub const ROLES: [&str; 4] = ["VIEWER", "MEMBER", "ADMIN", "OWNER"];

pub struct TeamRow {
    pub id: String,
    pub href: String,
    pub display_name: String,
    pub projects: String,
}

#[derive(Template)]
#[template(path = "teams.html")]
struct Teams {
    chrome: Chrome,
    teams: Vec<TeamRow>,
}

fn page_of(s: &ConsoleState) -> PageRequest {
    PageRequest {
        size: Some(service::page::MAX_PAGE_SIZE),
        token: None,
        key: s.services.page_key.clone(),
    }
}

pub async fn list(Visit(s, v): Visit) -> Result<Response, PageError> {
    let teams = service::teams::list(&s.services.db, &v.caller, &page_of(&s)).await?;
    view::render(&Teams {
        chrome: Chrome::new(&v, "Teams", "/console/teams"),
        teams: teams
            .items
            .into_iter()
            .map(|t| TeamRow {
                href: format!("/console/teams/{}", t.team_id),
                id: t.team_id,
                display_name: t.display_name,
                projects: t.projects.join(", "),
            })
            .collect(),
    })
}

/// `POST /console/teams`: create a team (the caller becomes OWNER).
pub async fn create(State(s): State<ConsoleState>, p: Posted) -> Result<Response, PageError> {
    let display = p.field("displayName").trim();
    let team = service::teams::create(
        &s.services.db,
        &s.services.cloud,
        &p.viewer.caller,
        service::teams::NewTeam {
            team_id: p.field("teamId").trim().to_owned(),
            display_name: (!display.is_empty()).then(|| display.to_owned()),
            projects: p
                .field("projects")
                .split([',', ' ', '\n'])
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect(),
        },
        None,
    )
    .await?;
    Ok(Redirect::to(&format!("/console/teams/{}", team.team_id)).into_response())
}

pub struct RoleOption {
    pub value: &'static str,
    pub selected: bool,
}

pub struct MemberRow {
    pub email: String,
    pub role: String,
    pub added: String,
    pub options: Vec<RoleOption>,
}

fn options(selected: &str) -> Vec<RoleOption> {
    ROLES
        .iter()
        .map(|r| RoleOption {
            value: r,
            selected: *r == selected,
        })
        .collect()
}

#[derive(Template)]
#[template(path = "team.html")]
struct TeamPage {
    chrome: Chrome,
    id: String,
    display_name: String,
    projects: Vec<String>,
    my_role: String,
    can_administer: bool,
    members: Vec<MemberRow>,
    clusters: Vec<ClusterRow>,
    new_member_options: Vec<RoleOption>,
    /// The policy's limits against the team's usage (`policy:evaluate`).
    limits: Vec<LimitRow>,
    usage: String,
    approvals: Vec<ApprovalRow>,
    /// The team's webhooks (read-only: the API adds and deletes them).
    webhooks: Vec<HookRow>,
}

/// A webhook as the team page lists it: its URL's host only (a Slack URL's path is a
/// credential), never its secret.
struct HookRow {
    name: String,
    host: String,
    events: String,
    format: String,
}

struct LimitRow {
    rule: String,
    limit: String,
    current: String,
    exceeded: bool,
}

struct ApprovalRow {
    operation: String,
    href: String,
    requested_by: String,
    expires: String,
    reasons: String,
}

pub async fn page(Visit(s, v): Visit, ConsoleTeam(id): ConsoleTeam) -> Result<Response, PageError> {
    let db = &s.services.db;
    let t = service::teams::get(db, &v.caller, &id).await?;
    let role = service::access::team_role(db, &v.caller, id.as_str())
        .await?
        .unwrap_or(Role::Viewer);
    let members = service::teams::list_members(db, &v.caller, &id, &page_of(&s)).await?;
    let eval = service::policy::evaluate(db, &v.caller, &id).await?;
    let approvals =
        service::provision::approval::pending(&s.services, &v.caller, id.as_str()).await?;
    let clusters = all_clusters(&s, &v.caller, || ListClusters {
        team: Some(id.clone()),
        ..ListClusters::default()
    })
    .await?;
    let webhooks = service::webhooks::list(db, &v.caller, &id).await?;
    view::render(&TeamPage {
        chrome: Chrome::new(
            &v,
            format!("Team {}", t.team_id),
            format!("/console/teams/{}", t.team_id),
        ),
        display_name: t.display_name,
        projects: t.projects,
        my_role: role.as_str().to_owned(),
        can_administer: role >= Role::Admin,
        members: members
            .items
            .into_iter()
            .map(|m| MemberRow {
                email: m.email,
                role: m.role.as_str().to_owned(),
                added: view::short_time(&m.add_time),
                options: options(m.role.as_str()),
            })
            .collect(),
        clusters: clusters.iter().map(ClusterRow::of).collect(),
        new_member_options: options("MEMBER"),
        usage: format!(
            "{} clusters, {} node pools, {:.2} USD/h at the pools' maximum sizes",
            eval.usage.clusters, eval.usage.node_pools, eval.usage.hourly_cost_usd
        ),
        limits: eval
            .limits
            .into_iter()
            .map(|l| LimitRow {
                rule: l.rule,
                limit: l.limit,
                current: l.current,
                exceeded: l.exceeded,
            })
            .collect(),
        approvals: approvals
            .into_iter()
            .map(|a| ApprovalRow {
                href: view::operation_href(&a.operation),
                operation: a.operation,
                requested_by: a.requested_by,
                expires: view::short_time(&a.expire_time),
                reasons: a.reasons.join("; "),
            })
            .collect(),
        webhooks: webhooks
            .into_iter()
            .map(|w| HookRow {
                host: url::Url::parse(&w.url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default(),
                events: w
                    .events
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                format: w.format.as_str().to_owned(),
                name: w.name,
            })
            .collect(),
        id: t.team_id,
    })
}

/// `POST /console/teams/{team}/members`: add a member or change a role (ADMIN+).
pub async fn put_member(
    State(s): State<ConsoleState>,
    Path(team): Path<String>,
    p: Posted,
) -> Result<Response, PageError> {
    let id = TeamId::parse(&team)?;
    let member = crate::domain::access::Member::parse(p.field("email"))?;
    let role = Role::parse(p.field("role")).ok_or_else(|| {
        PageError::from(service::Error::invalid(
            "INVALID_ROLE",
            format!("role must be one of {}", ROLES.join(", ")),
        ))
    })?;
    service::teams::put_member(
        &s.services.db,
        &p.viewer.caller,
        &id,
        &member,
        role,
        None,
        None,
    )
    .await?;
    Ok(Redirect::to(&format!("/console/teams/{}", id.as_str())).into_response())
}

pub struct AccelRow {
    pub name: String,
    pub kind: String,
    pub family: String,
    pub machine_type: String,
    pub count: String,
    pub topology: String,
    pub aliases: String,
    pub on_demand: String,
    pub spot: String,
}

#[derive(Template)]
#[template(path = "accelerators.html")]
struct Accelerators {
    chrome: Chrome,
    rows: Vec<AccelRow>,
}

/// The catalog with prices (any authenticated caller).
pub async fn accelerators(Visit(s, v): Visit) -> Result<Response, PageError> {
    let rows = service::accelerators::list(&s.services.prices)
        .into_iter()
        .map(|a| AccelRow {
            count: a
                .count
                .or(a.chips)
                .map_or_else(String::new, |n| n.to_string()),
            topology: a.topology.unwrap_or_default(),
            aliases: a.aliases.join(", "),
            on_demand: a.prices.as_ref().map_or_else(
                || "–".to_owned(),
                |p| view::per_hour(&p.currency, p.on_demand_per_node_hour),
            ),
            spot: a.prices.as_ref().map_or_else(
                || "–".to_owned(),
                |p| view::per_hour(&p.currency, p.spot_per_node_hour),
            ),
            name: a.name,
            kind: a.kind.as_str().to_owned(),
            family: a.family,
            machine_type: a.machine_type,
        })
        .collect();
    view::render(&Accelerators {
        chrome: Chrome::new(&v, "Accelerators", "/console/accelerators"),
        rows,
    })
}
