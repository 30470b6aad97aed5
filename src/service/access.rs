//! Who the caller is and what they may do to a team's resources.
//!
//! Invariant: a caller with no role in a team learns nothing about it: lookups answer
//! `None` and callers turn that into 404. Only members with too small a role get 403.

use crate::domain::{Email, Role};
use crate::store::{self, Db};

use super::{Error, Result};

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub email: Email,
    /// A service admin (from `KINETIC_ADMINS`): acts as OWNER of every team.
    pub admin: bool,
}

/// The caller's role in `team`: admins are OWNER everywhere; `None` for non-members
/// and for teams that do not exist.
pub async fn team_role(db: &Db, caller: &Caller, team: &str) -> Result<Option<Role>> {
    if caller.admin {
        return Ok(store::teams::get_team(db, team).await?.map(|_| Role::Owner));
    }
    Ok(store::teams::role_in(db, team, caller.email.as_str())
        .await?
        .and_then(|r| Role::parse(&r)))
}

/// The caller's role from their stored role in a team read in the same statement as
/// the record (the team exists: every team reference is a foreign key). Same answer as
/// [`team_role`]: admins are OWNER, unknown role strings count as no role.
pub fn role_from(caller: &Caller, stored: Option<String>) -> Option<Role> {
    if caller.admin {
        return Some(Role::Owner);
    }
    stored.and_then(|r| Role::parse(&r))
}

pub fn team_not_found(team: &str) -> Error {
    Error::not_found(
        "TEAM_NOT_FOUND",
        format!("team teams/{team} not found (or you are not a member of it)"),
    )
    .with("team", team)
}

/// Require `need` (or more) in `team`; 404 for non-members, 403 for a smaller role.
pub async fn require(
    db: &Db,
    caller: &Caller,
    team: &str,
    need: Role,
    action: &str,
) -> Result<Role> {
    let role = team_role(db, caller, team)
        .await?
        .ok_or_else(|| team_not_found(team))?;
    check(role, need, action, team)?;
    Ok(role)
}

/// 403 unless `role` is at least `need`.
pub fn check(role: Role, need: Role, action: &str, team: &str) -> Result<()> {
    if role >= need {
        Ok(())
    } else {
        Err(Error::forbidden(format!(
            "your role in teams/{team} is {}; {action} needs {} or higher: ask a team ADMIN",
            role.as_str(),
            need.as_str()
        ))
        .with("team", team)
        .with("role", role.as_str())
        .with("requiredRole", need.as_str()))
    }
}

/// The member whose teams' resources the caller may see, for a list statement to look
/// up itself (same teams as [`visible_teams`], one round trip less): `None` means all
/// (service admin).
pub fn visible_member(caller: &Caller) -> Option<String> {
    (!caller.admin).then(|| caller.email.as_str().to_owned())
}

/// Teams whose resources the caller may see: `None` means all (service admin).
pub async fn visible_teams(db: &Db, caller: &Caller) -> Result<Option<Vec<String>>> {
    if caller.admin {
        return Ok(None);
    }
    Ok(Some(
        store::teams::roles_of(db, caller.email.as_str())
            .await?
            .into_iter()
            .map(|(t, _)| t)
            .collect(),
    ))
}
