//! A running operation whose write failed because the database is unavailable (down,
//! restarting, every connection busy) is handed back as soon as the database answers
//! again, so that it resumes at once instead of after its lease runs out (30 s by
//! default: longer than many outages).
//!
//! Invariant: the failed write is never repeated blindly. It may have committed before
//! the connection broke (an in-doubt commit), and a step's completion carries the step's
//! effect; handing back (a fenced release) makes the next claim resume from what is
//! stored, which is right whichever way the write went. Another kind of error, a moved
//! fence, a lease known lost, or the end of the shutdown grace stop the wait at once:
//! the lease then runs out as before.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::{Db, StoreError, operations};

use super::outcome::Outcome;

const FIRST_RETRY: Duration = Duration::from_millis(250);
const MAX_RETRY: Duration = Duration::from_secs(2);

/// Whether `e` means the database cannot be reached right now (retrying may succeed).
pub fn is_unavailable(e: &StoreError) -> bool {
    matches!(e, StoreError::Db(d) if crate::store::db::is_unavailable(d))
}

/// After `failed` (a write of operation `id` under claim `generation`): hand the
/// operation back once the database is back, or give up as the module docs say.
/// `stop`: the lease is known lost, or the shutdown grace is over.
pub async fn hand_back(
    db: &Db,
    id: Uuid,
    generation: i64,
    failed: &StoreError,
    stop: [&CancellationToken; 2],
) -> Outcome {
    if !is_unavailable(failed) {
        tracing::warn!(operation.id = %id, error = %format_args!("{failed:#}"), "writing the operation failed; the lease will expire and another worker resumes");
        return Outcome::LeaseLost;
    }
    tracing::warn!(operation.id = %id, error = %format_args!("{failed:#}"), "database unavailable; the operation is handed back when it answers again");
    let mut delay = FIRST_RETRY;
    loop {
        let e = match operations::release(db, id, generation).await {
            Ok(true) => {
                tracing::info!(operation.id = %id, "database back; operation handed back to resume");
                return Outcome::Released;
            }
            Ok(false) => return Outcome::LeaseLost,
            Err(e) if is_unavailable(&e) => e,
            Err(e) => {
                tracing::warn!(operation.id = %id, error = %format_args!("{e:#}"), "handing the operation back failed; the lease will expire and another worker resumes");
                return Outcome::LeaseLost;
            }
        };
        tracing::debug!(operation.id = %id, error = %format_args!("{e:#}"), "database still unavailable");
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop[0].cancelled() => return Outcome::LeaseLost,
            _ = stop[1].cancelled() => return Outcome::LeaseLost,
        }
        delay = (delay * 2).min(MAX_RETRY);
    }
}
