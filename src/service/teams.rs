//! Teams and members: creation (the caller becomes OWNER), project claims, role changes.
//!
//! Invariant: a team always has at least one OWNER, a project with live clusters never
//! leaves its team, and a project joins a team only after [`project_authority`] found
//! the caller may bind it (checked before the transaction that claims it; a refusal
//! changes nothing). Projects a team already holds are not checked again. Creating or
//! deleting a team and every change of its roster is an audit event written in the
//! change's own transaction.

use super::replies;
use crate::ops::queue::Idempotency;
use std::collections::BTreeSet;

use crate::cloud::Cloud;
use crate::domain::access::Member as RosterEntry;
use crate::domain::{ProjectId, Role, TeamId};
use crate::model::{self, Member, Team};
use crate::ops::workflows::cluster::access::SyncReason;
use crate::store::{self, Db, teams::MemberRecord, teams::TeamRecord};

use super::access::{self, Caller, team_not_found};
use super::{Error, Page, PageRequest, Result, access_sync, audit, project_authority};
use crate::domain::states::EventType;
use serde_json::json;

pub fn render_team(t: TeamRecord) -> Team {
    Team {
        name: format!("teams/{}", t.team_id),
        team_id: t.team_id,
        display_name: t.display_name,
        projects: t.projects,
        create_time: model::timestamp(t.create_time),
        update_time: model::timestamp(t.update_time),
        etag: model::etag(t.version, t.update_time),
    }
}

fn render_member(m: MemberRecord) -> Member {
    Member {
        email: m.email,
        role: Role::parse(&m.role).unwrap_or(Role::Viewer),
        add_time: model::timestamp(m.add_time),
    }
}

/// Validate and de-duplicate a project list (sorted).
fn parse_projects(projects: &[String]) -> Result<Vec<String>> {
    let mut set = BTreeSet::new();
    for p in projects {
        let id = ProjectId::parse(p)
            .map_err(|e| Error::invalid("INVALID_PROJECT", e.to_string()).with("project", p))?;
        set.insert(id.to_string());
    }
    Ok(set.into_iter().collect())
}

fn check_display_name(s: &str) -> Result<()> {
    if s.chars().count() > 100 || s.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(
            "INVALID_DISPLAY_NAME",
            "displayName must be at most 100 characters without control characters",
        ));
    }
    Ok(())
}

pub struct NewTeam {
    pub team_id: String,
    pub display_name: Option<String>,
    pub projects: Vec<String>,
}

pub async fn create(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    req: NewTeam,
    idem: Option<&Idempotency>,
) -> Result<Team> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team_id = TeamId::parse(&req.team_id)?;
    let display = req.display_name.unwrap_or_default();
    check_display_name(&display)?;
    let projects = parse_projects(&req.projects)?;
    project_authority::check_all(cloud, caller, team_id.as_str(), &projects).await?;
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let t = store::teams::insert_team(&mut tx, team_id.as_str(), &display, &projects, who).await?;
    let team = render_team(t);
    let details = json!({"displayName": display, "projects": projects});
    let team_id = team_id.as_str();
    audit::append_by(
        &mut *tx,
        caller,
        Some(team_id),
        EventType::TeamCreated,
        &team.name,
        details,
    )
    .await?;
    replies::commit(tx, who, idem, &team).await?;
    tracing::info!(team = %team_id, by = %caller.email.log_id(), "team created");
    Ok(team)
}

pub async fn list(db: &Db, caller: &Caller, page: &PageRequest) -> Result<Page<Team>> {
    let member = (!caller.admin).then(|| caller.email.as_str());
    let after: Option<String> = page.after("teams")?;
    let rows = store::teams::list_teams(db, member, after.as_deref(), page.limit()? + 1).await?;
    page.page("teams", rows, |t| t.team_id.clone(), render_team)
}

pub async fn get(db: &Db, caller: &Caller, team: &TeamId) -> Result<Team> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading the team").await?;
    store::teams::get_team(db, team)
        .await?
        .map(render_team)
        .ok_or_else(|| team_not_found(team))
}

/// A team change: the fields to set (`None`: leave as is) and the etag the caller saw.
#[derive(Debug, Default)]
pub struct TeamPatch {
    pub display_name: Option<String>,
    pub projects: Option<Vec<String>>,
    pub etag: Option<String>,
}

/// The paths an `updateMask` may name.
pub const TEAM_MASK_PATHS: [&str; 2] = ["displayName", "projects"];

impl TeamPatch {
    /// Apply an AIP-134 `updateMask`: only masked fields change, a masked field absent
    /// from the body is cleared, `*` masks every field; no (or an empty) mask means the
    /// fields present in the body. Unknown paths are INVALID_UPDATE_MASK.
    pub fn masked(self, mask: Option<&str>) -> Result<TeamPatch> {
        let Some(mask) = mask.map(str::trim).filter(|m| !m.is_empty()) else {
            return Ok(self);
        };
        let paths: Vec<&str> = mask.split(',').map(str::trim).collect();
        if let Some(bad) = paths
            .iter()
            .find(|p| **p != "*" && !TEAM_MASK_PATHS.contains(p))
        {
            return Err(Error::invalid(
                "INVALID_UPDATE_MASK",
                format!(
                    "updateMask names {:?}, which is not a field a team update can change (known: {}, or *)",
                    bad.chars().take(60).collect::<String>(),
                    TEAM_MASK_PATHS.join(", ")
                ),
            ));
        }
        let has = |f: &str| paths.iter().any(|p| *p == f || *p == "*");
        Ok(TeamPatch {
            display_name: has("displayName").then(|| self.display_name.unwrap_or_default()),
            projects: has("projects").then(|| self.projects.unwrap_or_default()),
            etag: self.etag,
        })
    }
}

/// Lock the team row and check the caller's etag against it (under the lock).
async fn lock_checked(
    tx: &mut sqlx::PgConnection,
    team: &str,
    etag: Option<&str>,
) -> Result<TeamRecord> {
    store::teams::lock_team(tx, team)
        .await?
        .ok_or_else(|| team_not_found(team))?;
    let current = store::teams::get_team(&mut *tx, team)
        .await?
        .ok_or_else(|| team_not_found(team))?;
    let t = render_team(current.clone());
    super::etag::check(etag, &t.etag, &t.name)?;
    Ok(current)
}

/// The projects in `wanted` that `current` does not hold yet.
fn added(current: &[String], wanted: &[String]) -> Vec<String> {
    wanted
        .iter()
        .filter(|p| !current.contains(p))
        .cloned()
        .collect()
}

pub async fn update(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    team: &TeamId,
    patch: TeamPatch,
    idem: Option<&Idempotency>,
) -> Result<Team> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team = team.as_str();
    access::require(db, caller, team, Role::Admin, "changing the team").await?;
    if let Some(d) = &patch.display_name {
        check_display_name(d)?;
    }
    let projects = patch.projects.as_deref().map(parse_projects).transpose()?;
    // New claims are checked against Google before the transaction (no transaction is
    // held across a cloud call); under the lock, a claim that was not checked refuses.
    let checked = match &projects {
        Some(wanted) => {
            let before = store::teams::get_team(db, team)
                .await?
                .ok_or_else(|| team_not_found(team))?;
            let new = added(&before.projects, wanted);
            project_authority::check_all(cloud, caller, team, &new).await?;
            Some((render_team(before).etag, new))
        }
        None => None,
    };
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let current = lock_checked(&mut tx, team, patch.etag.as_deref()).await?;
    if let Some(d) = &patch.display_name {
        store::teams::update_display_name(&mut tx, team, d).await?;
    }
    if let Some(projects) = &projects {
        // The team changed between the check and the lock so that another project
        // would be added: refuse as a stale read (409 ABORTED ETAG_MISMATCH).
        if let Some((seen, checked)) = &checked
            && added(&current.projects, projects)
                .iter()
                .any(|p| !checked.contains(p))
        {
            let now = render_team(current.clone());
            super::etag::check(Some(seen), &now.etag, &now.name)?;
        }
        let removed: Vec<String> = current
            .projects
            .into_iter()
            .filter(|p| !projects.contains(p))
            .collect();
        if store::clusters::count_live_in_projects(&mut *tx, &removed).await? > 0 {
            return Err(Error::precondition(
                "PROJECT_HAS_CLUSTERS",
                format!(
                    "cannot remove project(s) {} from teams/{team}: they still have clusters; run down on them first",
                    removed.join(", ")
                ),
            ));
        }
        store::teams::set_projects(&mut tx, team, projects).await?;
    }
    store::teams::touch_team(&mut tx, team).await?;
    let t = store::teams::get_team(&mut *tx, team)
        .await?
        .ok_or_else(|| team_not_found(team))?;
    let t = render_team(t);
    replies::commit(tx, who, idem, &t).await?;
    Ok(t)
}

/// Delete a team; `etag`, if given, must be the team's current one.
pub async fn delete(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    etag: Option<&str>,
    idem: Option<&Idempotency>,
) -> Result<()> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team = team.as_str();
    access::require(db, caller, team, Role::Owner, "deleting the team").await?;
    let mut tx = replies::begin_or_replay!(db, who, idem);
    lock_checked(&mut tx, team, etag).await?;
    let live = store::clusters::count_live_in_team(&mut *tx, team).await?;
    if live > 0 {
        return Err(Error::precondition(
            "TEAM_HAS_CLUSTERS",
            format!("teams/{team} still has {live} cluster(s); run down on them before deleting the team"),
        )
        .with("clusters", live));
    }
    store::teams::delete_team(&mut tx, team).await?;
    let name = format!("teams/{team}");
    audit::append_by(
        &mut *tx,
        caller,
        Some(team),
        EventType::TeamDeleted,
        &name,
        json!({}),
    )
    .await?;
    replies::commit(tx, who, idem, &()).await?;
    tracing::info!(team, by = %caller.email.log_id(), "team deleted");
    Ok(())
}

pub async fn list_members(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    page: &PageRequest,
) -> Result<Page<Member>> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "listing members").await?;
    let scope = format!("members/{team}");
    let after: Option<String> = page.after(&scope)?;
    let rows = store::teams::list_members(db, team, after.as_deref(), page.limit()? + 1).await?;
    page.page(&scope, rows, |m| m.email.clone(), render_member)
}

/// A roster change begins: the team locked (its etag checked), then its OWNER rows
/// (serialising owner changes). The OWNER count, `member` as stored, and its role now.
async fn lock_roster(
    tx: &mut sqlx::PgConnection,
    team: &str,
    etag: Option<&str>,
    member: &RosterEntry,
) -> Result<(i64, String, Option<Role>)> {
    lock_checked(&mut *tx, team, etag).await?;
    let owners = store::teams::lock_owner_count(&mut *tx, team).await?;
    let entry = member.to_string();
    let old = store::teams::role_in(&mut *tx, team, &entry)
        .await?
        .and_then(|r| Role::parse(&r));
    Ok((owners, entry, old))
}

fn last_owner(team: &str) -> Error {
    Error::precondition(
        "LAST_OWNER",
        format!("teams/{team} must keep at least one OWNER: make someone else OWNER first"),
    )
}

pub async fn put_member(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    member: &RosterEntry,
    role: Role,
    team_etag: Option<&str>,
    idem: Option<&Idempotency>,
) -> Result<Member> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team = team.as_str();
    let my_role = access::require(db, caller, team, Role::Admin, "managing members").await?;
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let (owners, entry, old) = lock_roster(&mut tx, team, team_etag, member).await?;
    if role == Role::Owner || old == Some(Role::Owner) {
        access::check(my_role, Role::Owner, "granting or changing OWNER", team)?;
    }
    if old == Some(Role::Owner) && role != Role::Owner && owners <= 1 {
        return Err(last_owner(team));
    }
    let m = store::teams::upsert_member(&mut tx, team, &entry, role.as_str()).await?;
    store::teams::touch_team(&mut tx, team).await?;
    let (reason, event) = match old {
        None => (
            Some(SyncReason::MemberAdded),
            Some((
                EventType::MemberAdded,
                json!({"before": null, "after": role}),
            )),
        ),
        Some(r) if r != role => (
            Some(SyncReason::MemberChanged),
            Some((
                EventType::MemberRoleChanged,
                json!({"before": r, "after": role}),
            )),
        ),
        Some(_) => (None, None),
    };
    if let Some(reason) = reason {
        access_sync::enqueue_team(&mut tx, team, who, reason).await?;
    }
    if let Some((kind, details)) = event {
        let target = format!("teams/{team}/members/{entry}");
        audit::append_by(&mut *tx, caller, Some(team), kind, &target, details).await?;
    }
    let m = render_member(m);
    replies::commit(tx, who, idem, &m).await?;
    tracing::info!(team, member = %member.email.log_id(), role = role.as_str(), by = %caller.email.log_id(), "member set");
    Ok(m)
}

/// Remove a member; `team_etag`, if given, must be the team's current etag (membership
/// changes move it).
pub async fn delete_member(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    member: &RosterEntry,
    team_etag: Option<&str>,
    idem: Option<&Idempotency>,
) -> Result<()> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team = team.as_str();
    let my_role = access::team_role(db, caller, team)
        .await?
        .ok_or_else(|| team_not_found(team))?;
    let is_self = member.person() == Some(&caller.email);
    if !is_self {
        access::check(my_role, Role::Admin, "removing members", team)?;
    }
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let (owners, entry, old) = lock_roster(&mut tx, team, team_etag, member).await?;
    let old = old.ok_or_else(|| {
        Error::not_found(
            "MEMBER_NOT_FOUND",
            format!("{member} is not a member of teams/{team}"),
        )
    })?;
    if old == Role::Owner && !is_self {
        access::check(my_role, Role::Owner, "removing an OWNER", team)?;
    }
    if old == Role::Owner && owners <= 1 {
        return Err(last_owner(team));
    }
    store::teams::delete_member(&mut tx, team, &entry).await?;
    store::teams::touch_team(&mut tx, team).await?;
    access_sync::enqueue_team(&mut tx, team, who, SyncReason::MemberRemoved).await?;
    let target = format!("teams/{team}/members/{entry}");
    let details = json!({"before": old, "after": null});
    audit::append_by(
        &mut *tx,
        caller,
        Some(team),
        EventType::MemberRemoved,
        &target,
        details,
    )
    .await?;
    replies::commit(tx, who, idem, &()).await?;
    tracing::info!(team, member = %member.email.log_id(), by = %caller.email.log_id(), "member removed");
    Ok(())
}

pub async fn me(db: &Db, caller: &Caller) -> Result<model::Me> {
    let teams = store::teams::roles_of(db, caller.email.as_str())
        .await?
        .into_iter()
        .filter_map(|(t, r)| {
            Role::parse(&r).map(|role| model::TeamRole {
                team: format!("teams/{t}"),
                role,
            })
        })
        .collect();
    Ok(model::Me {
        email: caller.email.to_string(),
        admin: caller.admin,
        teams,
        active_profile: super::profiles::active(db, caller).await?,
    })
}
