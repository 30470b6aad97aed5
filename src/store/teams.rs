//! Teams, their projects and members. A project row's primary key is the project id, so
//! the database itself guarantees a project belongs to at most one team.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;
use sqlx::{PgConnection, PgExecutor};

use super::{StoreError, keyed, unique_violation};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TeamRecord {
    pub team_id: String,
    pub display_name: String,
    pub projects: Vec<String>,
    pub create_time: DateTime<Utc>,
    pub update_time: DateTime<Utc>,
    pub version: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemberRecord {
    pub email: String,
    pub role: String,
    pub add_time: DateTime<Utc>,
}

const MEMBER_COLUMNS: &str = "email, role, add_time";

const TEAM_COLUMNS: &str = "t.team_id, t.display_name, t.create_time, t.update_time, t.version, \
     COALESCE((SELECT array_agg(p.project_id ORDER BY p.project_id) FROM team_projects p \
               WHERE p.team_id = t.team_id), '{}') AS projects";

/// Create a team with its projects and its first OWNER, in the caller's transaction.
pub async fn insert_team(
    tx: &mut PgConnection,
    team_id: &str,
    display_name: &str,
    projects: &[String],
    owner: &str,
) -> Result<TeamRecord, StoreError> {
    sqlx::query("INSERT INTO teams (team_id, display_name) VALUES ($1, $2)")
        .bind(team_id)
        .bind(display_name)
        .execute(&mut *tx)
        .await
        .map_err(|e| match unique_violation(&e) {
            Some(_) => StoreError::TeamExists,
            None => StoreError::Db(e),
        })?;
    claim_projects(tx, team_id, projects).await?;
    let sql = "INSERT INTO team_members (team_id, email, role) VALUES ($1, $2, 'OWNER')";
    keyed::execute(&mut *tx, sql, &[team_id, owner]).await?;
    get_team(&mut *tx, team_id)
        .await?
        .ok_or(StoreError::Db(sqlx::Error::RowNotFound))
}

async fn claim_projects(
    tx: &mut PgConnection,
    team_id: &str,
    projects: &[String],
) -> Result<(), StoreError> {
    for p in projects {
        // A savepoint-free check keeps the error precise: which project is taken.
        sqlx::query("INSERT INTO team_projects (project_id, team_id) VALUES ($1, $2)")
            .bind(p)
            .bind(team_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| match unique_violation(&e) {
                Some(_) => StoreError::ProjectClaimed(p.clone()),
                None => StoreError::Db(e),
            })?;
    }
    Ok(())
}

pub async fn get_team(
    ex: impl PgExecutor<'_>,
    team_id: &str,
) -> Result<Option<TeamRecord>, StoreError> {
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams t WHERE t.team_id = $1");
    keyed::optional(ex, AssertSqlSafe(sql), &[team_id]).await
}

/// Teams ordered by id after `after`; only those `member` belongs to unless `None` (admin).
pub async fn list_teams(
    ex: impl PgExecutor<'_>,
    member: Option<&str>,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<TeamRecord>, StoreError> {
    // A member's teams are read from `team_members_by_email` in team order (a page
    // costs the page, not the number of teams); an admin's from the primary key. The
    // keyset bound is in the text only when there is one.
    let bound = if after.is_some() {
        " AND t.team_id > $2"
    } else {
        ""
    };
    let sql = match member {
        Some(_) => format!(
            "SELECT {TEAM_COLUMNS} FROM team_members m JOIN teams t ON t.team_id = m.team_id \
             WHERE m.email = $1{bound} ORDER BY m.team_id LIMIT $3"
        ),
        None => format!(
            "SELECT {TEAM_COLUMNS} FROM teams t WHERE true{bound} ORDER BY t.team_id LIMIT $3"
        ),
    };
    keyed::page(ex, AssertSqlSafe(sql), &[member, after], limit).await
}

/// Lock the team row for an update; `None` when it does not exist.
pub async fn lock_team(tx: &mut PgConnection, team_id: &str) -> Result<Option<i64>, StoreError> {
    let sql = "SELECT version FROM teams WHERE team_id = $1 FOR UPDATE";
    Ok(keyed::scalars(sql, &[team_id])
        .fetch_optional(&mut *tx)
        .await?)
}

pub async fn update_display_name(
    tx: &mut PgConnection,
    team_id: &str,
    display_name: &str,
) -> Result<(), StoreError> {
    let sql = "UPDATE teams SET display_name = $2 WHERE team_id = $1";
    keyed::execute(&mut *tx, sql, &[team_id, display_name]).await?;
    Ok(())
}

/// Replace the team's project set (adds claimed with a precise conflict error).
pub async fn set_projects(
    tx: &mut PgConnection,
    team_id: &str,
    projects: &[String],
) -> Result<(), StoreError> {
    keyed::execute(
        &mut *tx,
        "DELETE FROM team_projects WHERE team_id = $1 AND NOT (project_id = ANY($2))",
        (team_id, projects),
    )
    .await?;
    let sql = "SELECT project_id FROM team_projects WHERE team_id = $1";
    let current: Vec<String> = keyed::scalars(sql, &[team_id]).fetch_all(&mut *tx).await?;
    let new: Vec<String> = projects
        .iter()
        .filter(|p| !current.contains(p))
        .cloned()
        .collect();
    claim_projects(tx, team_id, &new).await
}

pub async fn touch_team(tx: &mut PgConnection, team_id: &str) -> Result<(), StoreError> {
    let sql = "UPDATE teams SET update_time = now(), version = version + 1 WHERE team_id = $1";
    keyed::execute(&mut *tx, sql, &[team_id]).await?;
    Ok(())
}

pub async fn delete_team(tx: &mut PgConnection, team_id: &str) -> Result<bool, StoreError> {
    // Finished operations keep their history; their team reference is cleared by FK.
    // DELETED cluster records (history) go with the team: `clusters.team_id` has no
    // ON DELETE action, so they would otherwise block the delete. The caller has
    // checked, under the team lock, that no live cluster remains.
    let history = "DELETE FROM clusters WHERE team_id = $1 AND state = 'DELETED'";
    keyed::execute(&mut *tx, history, &[team_id]).await?;
    let team = "DELETE FROM teams WHERE team_id = $1";
    Ok(keyed::execute(&mut *tx, team, &[team_id]).await? > 0)
}

/// The team owning a GCP project, if any.
pub async fn project_team(
    ex: impl PgExecutor<'_>,
    project: &str,
) -> Result<Option<String>, StoreError> {
    let sql = "SELECT team_id FROM team_projects WHERE project_id = $1";
    Ok(keyed::scalars(sql, &[project]).fetch_optional(ex).await?)
}

/// Every (team, role) the user holds, ordered by team.
pub async fn roles_of(
    ex: impl PgExecutor<'_>,
    email: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let sql = "SELECT team_id, role FROM team_members WHERE email = $1 ORDER BY team_id";
    Ok(keyed::rows(sql, &[email]).fetch_all(ex).await?)
}

pub async fn role_in(
    ex: impl PgExecutor<'_>,
    team_id: &str,
    email: &str,
) -> Result<Option<String>, StoreError> {
    let sql = "SELECT role FROM team_members WHERE team_id = $1 AND email = $2";
    Ok(keyed::scalars(sql, &[team_id, email])
        .fetch_optional(ex)
        .await?)
}

pub async fn list_members(
    ex: impl PgExecutor<'_>,
    team_id: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<MemberRecord>, StoreError> {
    MEMBERS.page(ex, team_id, after, limit).await
}

const MEMBERS: keyed::Children = keyed::Children {
    table: "team_members",
    columns: MEMBER_COLUMNS,
    parent: "team_id",
    key: "email",
};

/// Lock the team's member rows and return the OWNER count (serialises owner changes).
pub async fn lock_owner_count(tx: &mut PgConnection, team_id: &str) -> Result<i64, StoreError> {
    let sql = "SELECT email FROM team_members WHERE team_id = $1 AND role = 'OWNER' FOR UPDATE";
    let owners: Vec<String> = keyed::scalars(sql, &[team_id]).fetch_all(&mut *tx).await?;
    Ok(owners.len() as i64)
}

pub async fn upsert_member(
    tx: &mut PgConnection,
    team_id: &str,
    email: &str,
    role: &str,
) -> Result<MemberRecord, StoreError> {
    let sql = format!(
        "INSERT INTO team_members (team_id, email, role) VALUES ($1, $2, $3) \
         ON CONFLICT (team_id, email) DO UPDATE SET role = EXCLUDED.role \
         RETURNING {MEMBER_COLUMNS}"
    );
    Ok(keyed::rows(AssertSqlSafe(sql), &[team_id, email, role])
        .fetch_one(&mut *tx)
        .await?)
}

pub async fn delete_member(
    tx: &mut PgConnection,
    team_id: &str,
    email: &str,
) -> Result<bool, StoreError> {
    let sql = "DELETE FROM team_members WHERE team_id = $1 AND email = $2";
    Ok(keyed::execute(&mut *tx, sql, &[team_id, email]).await? > 0)
}
