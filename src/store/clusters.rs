//! Cluster records. At most one non-DELETED record holds a (project, zone, name); deleted
//! records stay for history, so a later `up` of the same name creates a new record.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::PgExecutor;
use sqlx::types::Json;
use uuid::Uuid;

use super::keyset::{self, Teams};
use super::persisted::{ClusterSpecRecord, Corrupt, Row, Stored, all, maybe, one};
use super::{StoreError, keyed};
use crate::domain::{ClusterState, SettledState};

#[derive(Debug, Clone)]
pub struct ClusterRecord {
    pub id: Uuid,
    pub project_id: String,
    pub zone: String,
    pub name: String,
    pub team_id: String,
    pub state: ClusterState,
    pub spec: ClusterSpecRecord,
    pub resources: Value,
    pub endpoint: Option<String>,
    pub reconciling: bool,
    pub created_by: String,
    pub create_time: DateTime<Utc>,
    pub update_time: DateTime<Utc>,
    pub version: i64,
    /// When the cluster's TTL runs out (it is then brought down), on the cloud's clock.
    pub expire_time: Option<DateTime<Utc>>,
}

/// A row as stored; [`ClusterRow::decode`] checks its state and spec.
#[derive(sqlx::FromRow)]
pub(super) struct ClusterRow {
    pub(super) id: Uuid,
    project_id: String,
    zone: String,
    name: String,
    team_id: String,
    state: String,
    spec: Value,
    resources: Value,
    endpoint: Option<String>,
    reconciling: bool,
    created_by: String,
    create_time: DateTime<Utc>,
    update_time: DateTime<Utc>,
    version: i64,
    expire_time: Option<DateTime<Utc>>,
}

impl Stored for ClusterRow {
    type Record = ClusterRecord;

    fn decode(self) -> Result<ClusterRecord, Corrupt> {
        let row = Row {
            table: "clusters",
            id: &self.id,
        };
        let (state, spec) = row.state_and_spec(&self.state, self.spec)?;
        Ok(ClusterRecord {
            state,
            spec,
            id: self.id,
            project_id: self.project_id,
            zone: self.zone,
            name: self.name,
            team_id: self.team_id,
            resources: self.resources,
            endpoint: self.endpoint,
            reconciling: self.reconciling,
            created_by: self.created_by,
            create_time: self.create_time,
            update_time: self.update_time,
            version: self.version,
            expire_time: self.expire_time,
        })
    }
}

/// What a new record holds; everything else starts at its default.
#[derive(Debug, Clone)]
pub struct NewCluster<'a> {
    pub project_id: &'a str,
    pub zone: &'a str,
    pub name: &'a str,
    pub team_id: &'a str,
    pub state: ClusterState,
    pub spec: ClusterSpecRecord,
    pub resources: Value,
    pub created_by: &'a str,
}

pub(super) const COLUMNS: &str = "id, project_id, zone, name, team_id, state, spec, resources, endpoint, \
                       reconciling, created_by, create_time, update_time, version, expire_time";

pub async fn insert(
    ex: impl PgExecutor<'_>,
    c: NewCluster<'_>,
) -> Result<ClusterRecord, StoreError> {
    let sql = format!(
        "INSERT INTO clusters (id, project_id, zone, name, team_id, state, spec, resources, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING {COLUMNS}"
    );
    one::<ClusterRow>(
        keyed::one(
            ex,
            AssertSqlSafe(sql),
            (
                Uuid::now_v7(),
                c.project_id,
                c.zone,
                c.name,
                c.team_id,
                c.state.as_str(),
                Json(&c.spec),
                c.resources,
                c.created_by,
            ),
        )
        .await?,
    )
}

/// Which record of a (project, zone, name) [`by_name`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The live record, or else the most recently deleted one.
    LiveOrLastDeleted,
    /// The live record, locked for the rest of the transaction (enqueue decisions).
    LockLive,
}

impl Pick {
    fn tail(self) -> &'static str {
        match self {
            Pick::LiveOrLastDeleted => {
                "ORDER BY (state <> 'DELETED') DESC, create_time DESC LIMIT 1"
            }
            Pick::LockLive => "AND state <> 'DELETED' FOR UPDATE",
        }
    }
}

/// The record of a (project, zone, name) that `pick` picks.
pub async fn by_name(
    ex: impl PgExecutor<'_>,
    pick: Pick,
    [project, zone, name]: [&str; 3],
) -> Result<Option<ClusterRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM clusters WHERE project_id = $1 AND zone = $2 AND name = $3 {}",
        pick.tail()
    );
    maybe::<ClusterRow>(keyed::optional(ex, AssertSqlSafe(sql), (project, zone, name)).await?)
}

/// Filters for [`list`]; `None` means "any" (except `state`: `None` hides DELETED
/// records, which are listed only when asked for with `state = DELETED`).
#[derive(Debug, Default, Clone)]
pub struct ClusterFilter {
    /// Restrict to these teams (`None`: every team, for service admins).
    pub teams: Option<Vec<String>>,
    /// Restrict to the teams this email is a member of, looked up in the same statement
    /// (`None`: no such restriction).
    pub member: Option<String>,
    pub team: Option<String>,
    pub state: Option<ClusterState>,
    pub project: Option<String>,
    pub zone: Option<String>,
}

/// Keyset position: the last (project, zone, name, id) of the previous page.
pub type ClusterKey = (String, String, String, Uuid);

pub async fn list(
    ex: impl PgExecutor<'_>,
    f: &ClusterFilter,
    after: Option<&ClusterKey>,
    limit: i64,
) -> Result<Vec<ClusterRecord>, StoreError> {
    let rows: Vec<ClusterRow> = list_rows(ex, f, after, limit, |s| s).await?;
    all(rows)
}

/// The rows of `wrap(the list statement)`: `wrap` may put the page in a CTE and join
/// more to it (see `reads::cluster_page`); the filter and its parameters stay here.
/// Keyset in `(project_id, zone, name, id)` order, one index range per visible team
/// (see [`keyset`]); the indexes are `clusters_live_*` and `clusters_*_by_state`.
pub(super) async fn list_rows<R>(
    ex: impl PgExecutor<'_>,
    f: &ClusterFilter,
    after: Option<&ClusterKey>,
    limit: i64,
    wrap: impl FnOnce(String) -> String,
) -> Result<Vec<R>, StoreError>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    // Live records by default: the partial indexes hold no DELETED history, however
    // much of it accumulates.
    let mut conds = vec![match f.state {
        None => "state <> 'DELETED'".to_owned(),
        Some(_) => "state = $3".to_owned(),
    }];
    conds.extend(keyset::set_conditions([
        (f.project.is_some(), "project_id = $4"),
        (f.zone.is_some(), "zone = $5"),
        (
            after.is_some(),
            "(project_id, zone, name, id) > ($6, $7, $8, $9)",
        ),
    ]));
    let teams = Teams {
        member: f.member.as_ref().map(|_| "$11"),
        team: f.team.as_ref().map(|_| "$2"),
        any_of: f.teams.as_ref().map(|_| "$1"),
    };
    let sql = keyset::page(
        COLUMNS,
        "clusters",
        &conds,
        "project_id, zone, name, id",
        "$10",
        teams,
    );
    let (a, b, c, d) = match after {
        Some((a, b, c, d)) => (
            Some(a.as_str()),
            Some(b.as_str()),
            Some(c.as_str()),
            Some(*d),
        ),
        None => (None, None, None, None),
    };
    keyed::all(
        ex,
        AssertSqlSafe(wrap(sql)),
        (
            f.teams.as_deref(),
            f.team.as_deref(),
            f.state.map(ClusterState::as_str),
            f.project.as_deref(),
            f.zone.as_deref(),
            a,
            b,
            c,
            d,
            limit,
            f.member.as_deref(),
        ),
    )
    .await
}

/// Number of live (not DELETED) clusters in any of `projects`.
pub async fn count_live_in_projects(
    ex: impl PgExecutor<'_>,
    projects: &[String],
) -> Result<i64, StoreError> {
    Ok(keyed::scalars(
        "SELECT count(*) FROM clusters WHERE project_id = ANY($1) AND state <> 'DELETED'",
        (projects,),
    )
    .fetch_one(ex)
    .await?)
}

/// Number of live clusters owned by a team.
pub async fn count_live_in_team(ex: impl PgExecutor<'_>, team: &str) -> Result<i64, StoreError> {
    Ok(keyed::scalars(
        "SELECT count(*) FROM clusters WHERE team_id = $1 AND state <> 'DELETED'",
        (team,),
    )
    .fetch_one(ex)
    .await?)
}

/// Which of `names` (project, zone, name) are live clusters of one of `teams` (any team
/// when `None`): one statement for a whole list page.
pub async fn live_among(
    ex: impl PgExecutor<'_>,
    names: &[(&str, &str, &str)],
    teams: Option<&[String]>,
) -> Result<HashSet<(String, String, String)>, StoreError> {
    if names.is_empty() {
        return Ok(HashSet::new());
    }
    let column = |i: usize| -> Vec<&str> { names.iter().map(|n| [n.0, n.1, n.2][i]).collect() };
    let rows: Vec<(String, String, String)> = keyed::all(
        ex,
        "SELECT DISTINCT c.project_id, c.zone, c.name \
         FROM unnest($1::text[], $2::text[], $3::text[]) AS n(project_id, zone, name) \
         JOIN clusters c ON c.project_id = n.project_id AND c.zone = n.zone AND c.name = n.name \
         WHERE c.state <> 'DELETED' AND ($4::text[] IS NULL OR c.team_id = ANY($4))",
        (column(0), column(1), column(2), teams),
    )
    .await?;
    Ok(rows.into_iter().collect())
}

/// States a record rests in once no operation holds it (the others show an intent), as
/// stored.
pub(crate) fn settled_strings() -> Vec<&'static str> {
    SettledState::ALL.iter().map(|s| s.as_str()).collect()
}

/// Set a record's state (and `reconciling`), bumping its version; DELETED also stamps
/// `delete_time`. The state it leaves, when settled, is kept in `settled_state`: an
/// operation that sets an intent (DELETING, RECONCILING) and ends without running
/// shows it again.
pub async fn set_state(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    state: ClusterState,
    reconciling: bool,
) -> Result<(), StoreError> {
    let sql = "UPDATE clusters SET state = $2, reconciling = $3, update_time = now(), version = version + 1, \
         settled_state = CASE WHEN state = ANY($4) THEN state ELSE settled_state END, \
         delete_time = CASE WHEN $2 = 'DELETED' THEN now() ELSE delete_time END \
         WHERE id = $1";
    keyed::execute(
        ex,
        sql,
        (id, state.as_str(), reconciling, settled_strings()),
    )
    .await?;
    Ok(())
}

/// A record's shown state and its last settled one (`None`: never settled), locked for
/// the rest of the transaction.
pub async fn lock_states(
    ex: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<(ClusterState, Option<SettledState>)>, StoreError> {
    let row: Option<(String, Option<String>)> = keyed::optional(
        ex,
        "SELECT state, settled_state FROM clusters WHERE id = $1 FOR UPDATE",
        (id,),
    )
    .await?;
    let Some((state, settled)) = row else {
        return Ok(None);
    };
    let row = Row {
        table: "clusters",
        id: &id,
    };
    Ok(Some(row.states(&state, settled.as_deref())?))
}

/// Show `state` with `settled` as the last settled state (`reconciling` follows
/// RECONCILING); nothing changes when both already hold.
pub async fn show(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    state: ClusterState,
    settled: Option<SettledState>,
) -> Result<(), StoreError> {
    keyed::execute(
        ex,
        "UPDATE clusters SET state = $2, settled_state = $3, reconciling = ($2 = 'RECONCILING'), \
         update_time = now(), version = version + 1, \
         delete_time = CASE WHEN $2 = 'DELETED' THEN now() ELSE delete_time END \
         WHERE id = $1 AND (state, settled_state) IS DISTINCT FROM ($2, $3)",
        (id, state.as_str(), settled.map(SettledState::as_str)),
    )
    .await?;
    Ok(())
}

/// Record the cluster's API endpoint (known once GKE created it).
pub async fn set_endpoint(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    endpoint: &str,
) -> Result<(), StoreError> {
    change(ex, id, "endpoint", endpoint, Change::IfDifferent).await
}

/// Replace the desired spec of a record (a second `up` may change forceDestroy).
pub async fn set_spec(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    spec: &ClusterSpecRecord,
) -> Result<(), StoreError> {
    change(ex, id, "spec", Json(spec), Change::Always).await
}

/// Set (or clear) the cluster's TTL expiry; a change of the record (new etag).
pub async fn set_expire_time(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    at: Option<DateTime<Utc>>,
) -> Result<(), StoreError> {
    change(ex, id, "expire_time", at, Change::Always).await
}

/// Whether [`change`] writes a value equal to the stored one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Always,
    /// Only a different value is a change (an equal one keeps the version).
    IfDifferent,
}

/// Set `column` of record `id` to `value`, a change of the record (new `update_time`
/// and version, so a new etag).
async fn change<'q>(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    column: &'static str,
    value: impl 'q + sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    when: Change,
) -> Result<(), StoreError> {
    let guard = match when {
        Change::Always => String::new(),
        Change::IfDifferent => format!(" AND {column} IS DISTINCT FROM $2"),
    };
    let sql = format!(
        "UPDATE clusters SET {column} = $2, update_time = now(), version = version + 1 \
         WHERE id = $1{guard}"
    );
    keyed::execute(ex, AssertSqlSafe(sql), (id, value)).await?;
    Ok(())
}

/// The record by id.
pub async fn by_id(ex: impl PgExecutor<'_>, id: Uuid) -> Result<Option<ClusterRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM clusters WHERE id = $1");
    maybe::<ClusterRow>(keyed::optional(ex, AssertSqlSafe(sql), (id,)).await?)
}
