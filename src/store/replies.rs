//! The answers of mutations that answer at once (teams, members, profiles, cancel),
//! kept under their AIP-155 request id (`request_replies`).
//!
//! Invariant: a key is claimed inside the mutation's own transaction and its answer
//! recorded before that transaction commits, so a key with a committed row always has
//! the answer of a mutation that happened, and a failed mutation leaves no key. A stored
//! answer that does not decode is a [`super::persisted::Corrupt`] error, never a default.

use serde_json::Value;
use sqlx::{AssertSqlSafe, PgConnection, PgExecutor};

use super::persisted::Row;
use super::{StoreError, keyed};

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
    let columns = "fingerprint, reply";
    let row: Option<(String, Value)> =
        unexpired(ex, "request_replies", columns, caller, key, ttl_hours).await?;
    Ok(row.map(|(fingerprint, reply)| Answered { fingerprint, reply }))
}

/// `columns` of the row of `table` (`request_replies`, or `idempotency_keys`: rows
/// under a caller's `(caller, key)`, stamped `create_time`) not older than `ttl_hours`.
pub(super) async fn unexpired<T: keyed::Record>(
    ex: impl PgExecutor<'_>,
    table: &str,
    columns: &str,
    caller: &str,
    key: &str,
    ttl_hours: i64,
) -> Result<Option<T>, StoreError> {
    let sql = format!(
        "SELECT {columns} FROM {table} \
         WHERE caller = $1 AND key = $2 AND create_time > now() - make_interval(hours => $3::int)"
    );
    keyed::optional(ex, AssertSqlSafe(sql), (caller, key, ttl_hours)).await
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
    let fresh = keyed::execute(
        &mut *tx,
        "INSERT INTO request_replies (caller, key, fingerprint) VALUES ($1, $2, $3) \
         ON CONFLICT (caller, key) DO UPDATE \
           SET fingerprint = EXCLUDED.fingerprint, reply = 'null', create_time = now() \
           WHERE request_replies.create_time <= now() - make_interval(hours => $4::int)",
        (caller, key, fingerprint, ttl_hours),
    )
    .await?
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
    keyed::execute(
        &mut *tx,
        "UPDATE request_replies SET reply = $3 WHERE caller = $1 AND key = $2",
        (caller, key, reply),
    )
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
