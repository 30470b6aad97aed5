//! Leases of background tasks that must have one owner across replicas (the usage
//! collector): a row per task, held by one process until its `expire_time`.
//!
//! Invariants: at most one holder at a time (a takeover only after expiry, decided in
//! one statement); each successful hold is the task's next round, and a round after a
//! break (another holder, or the holder's own lease lapsed) skips a number, so the task
//! can tell "continued" from "resumed after a gap" by `round - 1`.

use sqlx::PgExecutor;

use super::{StoreError, keyed};

/// Take or renew task `name` for `holder` for `ttl_seconds`; the round this hold is, or
/// `None` when another holder's lease is current.
pub async fn hold(
    ex: impl PgExecutor<'_>,
    name: &str,
    holder: &str,
    ttl_seconds: f64,
) -> Result<Option<i64>, StoreError> {
    let round: Option<i64> = keyed::scalars(
        "INSERT INTO task_leases AS l (name, holder, expire_time, round) \
         VALUES ($1, $2, now() + make_interval(secs => $3), 1) \
         ON CONFLICT (name) DO UPDATE SET \
             round = CASE WHEN l.holder = EXCLUDED.holder AND l.expire_time >= now() \
                          THEN l.round + 1 ELSE l.round + 2 END, \
             holder = EXCLUDED.holder, expire_time = EXCLUDED.expire_time \
         WHERE l.holder = EXCLUDED.holder OR l.expire_time < now() \
         RETURNING round",
        (name, holder, ttl_seconds),
    )
    .fetch_optional(ex)
    .await?;
    Ok(round)
}

/// Give task `name` up (a clean shutdown), so another replica takes over at once.
pub async fn release(ex: impl PgExecutor<'_>, name: &str, holder: &str) -> Result<(), StoreError> {
    keyed::execute(
        ex,
        "UPDATE task_leases SET expire_time = now() - interval '1 second' \
         WHERE name = $1 AND holder = $2",
        (name, holder),
    )
    .await?;
    Ok(())
}
