//! Profiles: per-caller named pointers at a cluster. A partial unique index keeps at most
//! one active profile per caller; activation flips flags in one transaction.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;
use sqlx::{PgConnection, PgExecutor};

use super::{StoreError, keyed};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProfileRecord {
    pub owner_email: String,
    pub profile_id: String,
    pub cluster: String,
    pub namespace: String,
    pub active: bool,
    pub create_time: DateTime<Utc>,
    pub update_time: DateTime<Utc>,
}

const COLUMNS: &str =
    "owner_email, profile_id, cluster, namespace, active, create_time, update_time";

/// Create or replace; keeps `active` of an existing profile.
pub async fn upsert(
    ex: impl PgExecutor<'_>,
    owner: &str,
    profile_id: &str,
    cluster: &str,
    namespace: &str,
) -> Result<(ProfileRecord, bool), StoreError> {
    let sql = format!(
        "INSERT INTO profiles (owner_email, profile_id, cluster, namespace) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (owner_email, profile_id) DO UPDATE \
           SET cluster = EXCLUDED.cluster, namespace = EXCLUDED.namespace, update_time = now() \
         RETURNING {COLUMNS}, (xmax = 0) AS created"
    );
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        p: ProfileRecord,
        created: bool,
    }
    let keys = [owner, profile_id, cluster, namespace];
    let r: Row = keyed::rows(AssertSqlSafe(sql), &keys).fetch_one(ex).await?;
    Ok((r.p, r.created))
}

pub async fn get(
    ex: impl PgExecutor<'_>,
    owner: &str,
    profile_id: &str,
) -> Result<Option<ProfileRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM profiles WHERE owner_email = $1 AND profile_id = $2");
    keyed::optional(ex, AssertSqlSafe(sql), &[owner, profile_id]).await
}

pub async fn active(
    ex: impl PgExecutor<'_>,
    owner: &str,
) -> Result<Option<ProfileRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM profiles WHERE owner_email = $1 AND active");
    keyed::optional(ex, AssertSqlSafe(sql), &[owner]).await
}

/// The caller's profiles in id order, after `after`.
pub async fn list(
    ex: impl PgExecutor<'_>,
    owner: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<ProfileRecord>, StoreError> {
    BY_OWNER.page(ex, owner, after, limit).await
}

const BY_OWNER: keyed::Children = keyed::Children {
    table: "profiles",
    columns: COLUMNS,
    parent: "owner_email",
    key: "profile_id",
};

pub async fn delete(
    ex: impl PgExecutor<'_>,
    owner: &str,
    profile_id: &str,
) -> Result<bool, StoreError> {
    let sql = "DELETE FROM profiles WHERE owner_email = $1 AND profile_id = $2";
    Ok(keyed::execute(ex, sql, &[owner, profile_id]).await? > 0)
}

/// Make `profile_id` the caller's only active profile; `None` if it does not exist.
pub async fn activate(
    tx: &mut PgConnection,
    owner: &str,
    profile_id: &str,
) -> Result<Option<ProfileRecord>, StoreError> {
    // Serialise activations of one caller: without this, two concurrent activations
    // of different profiles both see nothing to deactivate and the second trips the
    // one-active unique index.
    let lock = "SELECT 1 FROM profiles WHERE owner_email = $1 ORDER BY profile_id FOR UPDATE";
    keyed::execute(&mut *tx, lock, &[owner]).await?;
    let others = "UPDATE profiles SET active = false, update_time = now() \
                  WHERE owner_email = $1 AND active AND profile_id <> $2";
    keyed::execute(&mut *tx, others, &[owner, profile_id]).await?;
    let sql = format!(
        "UPDATE profiles SET active = true, update_time = now() \
         WHERE owner_email = $1 AND profile_id = $2 RETURNING {COLUMNS}"
    );
    keyed::optional(&mut *tx, AssertSqlSafe(sql), &[owner, profile_id]).await
}
