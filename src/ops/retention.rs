//! Removes finished operations older than the retention period (default 30 days) and
//! expired idempotency keys, and refreshes the queue-depth gauges.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::OperationState;
use crate::store::{Db, StoreError, operations};

use super::queue::IDEMPOTENCY_TTL_HOURS;

/// One pass: delete what is past retention; returns the number of operations removed.
pub async fn purge_once(db: &Db, retention: Duration) -> Result<u64, StoreError> {
    let cutoff = chrono::Utc::now()
        - chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::days(30));
    let n = operations::purge_finished(db, cutoff, IDEMPOTENCY_TTL_HOURS).await?;
    if n > 0 {
        tracing::info!(removed = n, "finished operations past retention removed");
    }
    Ok(n)
}

/// Refresh `kineticd_operations_unfinished{state}`.
pub async fn refresh_gauges(db: &Db) -> Result<(), StoreError> {
    let counts = operations::counts_by_state(db).await?;
    for state in [
        OperationState::Queued,
        OperationState::Running,
        OperationState::Cancelling,
    ] {
        let n = counts
            .iter()
            .find(|(s, _)| *s == state)
            .map(|(_, n)| *n)
            .unwrap_or(0);
        metrics::gauge!("kineticd_operations_unfinished", "state" => state.as_str()).set(n as f64);
    }
    Ok(())
}

/// Run purges every `every` until `stop`.
pub async fn run(db: Db, retention: Duration, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        if let Err(e) = purge_once(&db, retention).await {
            tracing::warn!(error = %format_args!("{e:#}"), "retention pass failed");
        }
    }
}

/// Refresh gauges every `every` until `stop`.
pub async fn run_gauges(db: Db, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        if let Err(e) = refresh_gauges(&db).await {
            tracing::debug!(error = %format_args!("{e:#}"), "queue gauge refresh failed");
        }
    }
}
