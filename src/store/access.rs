//! Access derived from rosters: a team's whole roster as the sync reads it, the
//! namespaces its profiles name on a cluster, and the ledger of IAM grants kineticd made
//! (`access_grants`).
//!
//! Invariant: a grant is written PENDING before the policy that carries it is set and
//! marked GRANTED (or dropped, when the member already held it from someone else) after,
//! so every grant of ours in a policy has a row here, even across a crash; the sync
//! revokes only what has a row.

use sqlx::PgExecutor;

use super::{StoreError, keyed};

/// One recorded grant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, sqlx::FromRow)]
pub struct GrantRow {
    pub role: String,
    pub member: String,
    /// `PENDING` or `GRANTED`.
    pub state: String,
}

/// Every (entry, role) of the team's roster, ordered by entry.
pub async fn roster(
    ex: impl PgExecutor<'_>,
    team_id: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let all = super::teams::list_members(ex, team_id, None, i64::MAX).await?;
    Ok(all.into_iter().map(|m| (m.email, m.role)).collect())
}

/// The namespaces the team's members' profiles name for `cluster`
/// (`projects/p/zones/z/clusters/c`), distinct and ordered.
pub async fn profile_namespaces(
    ex: impl PgExecutor<'_>,
    team_id: &str,
    cluster: &str,
) -> Result<Vec<String>, StoreError> {
    let sql = "SELECT DISTINCT p.namespace FROM profiles p \
         JOIN team_members m ON m.email = p.owner_email AND m.team_id = $1 \
         WHERE p.cluster = $2 ORDER BY 1";
    Ok(keyed::scalars(sql, &[team_id, cluster])
        .fetch_all(ex)
        .await?)
}

/// The grants recorded on `resource`.
pub async fn grants(ex: impl PgExecutor<'_>, resource: &str) -> Result<Vec<GrantRow>, StoreError> {
    let sql =
        "SELECT role, member, state FROM access_grants WHERE resource = $1 ORDER BY role, member";
    Ok(keyed::rows(sql, &[resource]).fetch_all(ex).await?)
}

/// Run `sql` for `(role, member)` pairs on `resource`: `$1` the resource, `$2` and `$3`
/// the roles and members as arrays to unnest, then `tail` as `$4`, `$5`, … (nothing for
/// no pairs).
async fn for_pairs(
    ex: impl PgExecutor<'_>,
    sql: &'static str,
    resource: &str,
    grants: &[(String, String)],
    tail: &[&str],
) -> Result<(), StoreError> {
    if grants.is_empty() {
        return Ok(());
    }
    let (roles, members): (Vec<&str>, Vec<&str>) =
        grants.iter().map(|(r, m)| (r.as_str(), m.as_str())).unzip();
    let q = sqlx::query(sql).bind(resource).bind(roles).bind(members);
    tail.iter().fold(q, |q, k| q.bind(*k)).execute(ex).await?;
    Ok(())
}

/// Record `(role, member)` grants on `resource` in `state` (an existing row takes the
/// state).
pub async fn record(
    ex: impl PgExecutor<'_>,
    resource: &str,
    team_id: &str,
    grants: &[(String, String)],
    state: &str,
) -> Result<(), StoreError> {
    let sql = "INSERT INTO access_grants (resource, role, member, state, team_id) \
         SELECT $1, r, m, $4, $5 FROM unnest($2::text[], $3::text[]) AS g(r, m) \
         ON CONFLICT (resource, role, member) DO UPDATE SET state = EXCLUDED.state";
    for_pairs(ex, sql, resource, grants, &[state, team_id]).await
}

/// Forget `(role, member)` grants on `resource`.
pub async fn forget(
    ex: impl PgExecutor<'_>,
    resource: &str,
    grants: &[(String, String)],
) -> Result<(), StoreError> {
    let sql = "DELETE FROM access_grants g USING unnest($2::text[], $3::text[]) AS d(r, m) \
         WHERE g.resource = $1 AND g.role = d.r AND g.member = d.m";
    for_pairs(ex, sql, resource, grants, &[]).await
}

/// The team's clusters whose access a roster change must converge: live (not DELETED)
/// records, as `(id, project, zone, name)`.
pub async fn team_clusters(
    ex: impl PgExecutor<'_>,
    team_id: &str,
) -> Result<Vec<(uuid::Uuid, String, String, String)>, StoreError> {
    let sql = "SELECT id, project_id, zone, name FROM clusters \
         WHERE team_id = $1 AND state <> 'DELETED' ORDER BY project_id, zone, name";
    Ok(keyed::rows(sql, &[team_id]).fetch_all(ex).await?)
}

/// The operation of `op_type` still QUEUED under `serial_key`, if any (a sync queued
/// already covers every roster change before it runs).
pub async fn queued_with_key(
    ex: impl PgExecutor<'_>,
    serial_key: &str,
    op_type: &str,
) -> Result<Option<uuid::Uuid>, StoreError> {
    oldest_in(ex, serial_key, op_type, &["QUEUED"]).await
}

/// The oldest operation of `op_type` under `serial_key` that is not final (QUEUED,
/// RUNNING or CANCELLING), if any: access a status finds unconverged may be its to fix.
pub async fn unfinished_with_key(
    ex: impl PgExecutor<'_>,
    serial_key: &str,
    op_type: &str,
) -> Result<Option<uuid::Uuid>, StoreError> {
    oldest_in(
        ex,
        serial_key,
        op_type,
        &["QUEUED", "RUNNING", "CANCELLING"],
    )
    .await
}

/// The oldest operation of `op_type` under `serial_key` in one of `states`.
async fn oldest_in(
    ex: impl PgExecutor<'_>,
    serial_key: &str,
    op_type: &str,
    states: &[&str],
) -> Result<Option<uuid::Uuid>, StoreError> {
    Ok(keyed::scalars(
        "SELECT id FROM operations WHERE serial_key = $1 AND op_type = $2 \
         AND state = ANY($3) ORDER BY id LIMIT 1",
        (serial_key, op_type, states),
    )
    .fetch_optional(ex)
    .await?)
}
