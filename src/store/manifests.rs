//! Cached Kubernetes manifests, keyed by (url, sha256 of the body).
//!
//! Invariant: a row's body always hashes to its `sha256` (the caller computes it before
//! inserting) and is never updated; inserting a row that exists is a no-op.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgExecutor};

use super::{StoreError, keyed};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ManifestRecord {
    pub url: String,
    pub version: String,
    pub sha256: String,
    pub body: String,
    pub fetch_time: DateTime<Utc>,
}

const COLUMNS: &str = "url, version, sha256, body, fetch_time";

/// The body of `url` with digest `sha256`, if it was fetched before.
pub async fn get(
    ex: impl PgExecutor<'_>,
    url: &str,
    sha256: &str,
) -> Result<Option<ManifestRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM manifests WHERE url = $1 AND sha256 = $2");
    keyed::optional(ex, AssertSqlSafe(sql), &[url, sha256]).await
}

/// The first body fetched for `url` at `version` (for manifests without a pinned digest).
pub async fn first_for_version(
    ex: impl PgExecutor<'_>,
    url: &str,
    version: &str,
) -> Result<Option<ManifestRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM manifests \
         WHERE url = $1 AND version = $2 ORDER BY fetch_time, sha256 LIMIT 1"
    );
    keyed::optional(ex, AssertSqlSafe(sql), &[url, version]).await
}

/// Record a fetched body; a row with the same (url, sha256) is kept as it is.
pub async fn insert(
    ex: impl PgExecutor<'_>,
    url: &str,
    version: &str,
    sha256: &str,
    body: &str,
) -> Result<(), StoreError> {
    let sql = "INSERT INTO manifests (url, version, sha256, body) VALUES ($1, $2, $3, $4) \
               ON CONFLICT (url, sha256) DO NOTHING";
    keyed::execute(ex, sql, &[url, version, sha256, body]).await?;
    Ok(())
}
