//! The answers of mutations that answer at once (teams, members, profiles, cancel),
//! kept under their AIP-155 request id (`request_replies`).
//!
//! Invariant: a key is claimed inside the mutation's own transaction and its answer
//! recorded before that transaction commits, so a key with a committed row always has
//! the answer of a mutation that happened, and a failed mutation leaves no key. A stored
//! answer that does not decode is a [`super::persisted::Corrupt`] error, never a default.

use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};

use super::StoreError;
use super::persisted::Row;

/// An answered request: the fingerprint it was bound to and its answer.
pub struct Answered {
    pub fingerprint: String,
    pub reply: Value,
}

/// The unexpired answer kept under `(caller, key)`, if any.
pub async fn answered(
    ex: impl PgExecutor<'_>,
    caller: &str,
    key: &str,
    ttl_hours: i64,
) -> Result<Option<Answered>, StoreError> {
    let row: Option<(String, Value)> = sqlx::query_as(
        "SELECT fingerprint, reply FROM request_replies \
         WHERE caller = $1 AND key = $2 AND create_time > now() - make_interval(hours => $3::int)",
    )
    .bind(caller)
    .bind(key)
    .bind(ttl_hours)
    .fetch_optional(ex)
    .await?;
    Ok(row.map(|(fingerprint, reply)| Answered { fingerprint, reply }))
}

/// Claim `(caller, key)` for this transaction's mutation: `None` when it is fresh (an
/// expired claim is replaced), else the answer of the request that holds it (a
/// concurrent identical request waits here for the holder to commit or roll back).
pub async fn claim(
    tx: &mut PgConnection,
    caller: &str,
    key: &str,
    fingerprint: &str,
    ttl_hours: i64,
) -> Result<Option<Answered>, StoreError> {
    let fresh = sqlx::query(
        "INSERT INTO request_replies (caller, key, fingerprint) VALUES ($1, $2, $3) \
         ON CONFLICT (caller, key) DO UPDATE \
           SET fingerprint = EXCLUDED.fingerprint, reply = 'null', create_time = now() \
           WHERE request_replies.create_time <= now() - make_interval(hours => $4::int)",
    )
    .bind(caller)
    .bind(key)
    .bind(fingerprint)
    .bind(ttl_hours)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        > 0;
    if fresh {
        return Ok(None);
    }
    let held = answered(&mut *tx, caller, key, ttl_hours).await?;
    held.map(Some)
        .ok_or(StoreError::Db(sqlx::Error::RowNotFound))
}

/// Record the answer of the claimed `(caller, key)` (in the claiming transaction).
pub async fn record(
    tx: &mut PgConnection,
    caller: &str,
    key: &str,
    reply: &Value,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE request_replies SET reply = $3 WHERE caller = $1 AND key = $2")
        .bind(caller)
        .bind(key)
        .bind(reply)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// A stored answer as `T` (a [`super::persisted::Corrupt`] error when it does not decode).
pub fn decode<T: serde::de::DeserializeOwned>(key: &str, reply: Value) -> Result<T, StoreError> {
    let row = Row {
        table: "request_replies",
        id: &key,
    };
    Ok(row.json("reply", reply)?)
}
