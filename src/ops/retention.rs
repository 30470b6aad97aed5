//! Removes finished operations older than the retention period (default 30 days), and
//! settled webhook deliveries with them, expired idempotency keys and audit events older
//! than theirs (default 400 days), and
//! refreshes the queue gauges every few seconds from the
//! database (so they count every process's operations; see `docs/metrics.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::OperationState;
use crate::store::{Db, StoreError, events, operations, webhooks};

use super::queue::IDEMPOTENCY_TTL_HOURS;

/// One pass: delete what is past retention; returns the number of operations removed.
pub async fn purge_once(db: &Db, retention: Duration) -> Result<u64, StoreError> {
    let n = operations::purge_finished(db, cutoff(retention, 30), IDEMPOTENCY_TTL_HOURS).await?;
    Ok(logged(n, "finished operations"))
}

/// One pass over the audit trail: delete events older than `retention`; returns how many.
pub async fn purge_events_once(db: &Db, retention: Duration) -> Result<u64, StoreError> {
    let n = events::purge_before(db, cutoff(retention, 400)).await?;
    Ok(logged(n, "audit events"))
}

/// One pass over webhook deliveries: delete DELIVERED and FAILED ones older than
/// `retention` (the operations'); returns how many.
pub async fn purge_deliveries_once(db: &Db, retention: Duration) -> Result<u64, StoreError> {
    let n = webhooks::purge_settled_before(db, cutoff(retention, 30)).await?;
    Ok(logged(n, "webhook deliveries"))
}

/// Now minus `retention` (minus `fallback_days` when `retention` is beyond dates).
fn cutoff(retention: Duration, fallback_days: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
        - chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::days(fallback_days))
}

/// `n`, logged when a purge removed any `what`.
fn logged(n: u64, what: &str) -> u64 {
    if n > 0 {
        tracing::info!(removed = n, "{what} past retention removed");
    }
    n
}

/// Refresh the queue gauges from the database (all processes' operations):
/// `kineticd_operations_unfinished{type,state}`, `kineticd_queue_depth` and
/// `kineticd_queue_oldest_age_seconds`. `seen` holds the (type, state) pairs reported
/// before, so a pair that emptied drops to 0 instead of keeping its last value.
pub async fn refresh_gauges(
    db: &Db,
    seen: &mut BTreeSet<(String, String)>,
) -> Result<(), StoreError> {
    let stats = operations::queue_stats(db).await?;
    let now: BTreeMap<(String, String), i64> = stats
        .unfinished
        .into_iter()
        .map(|(t, s, n)| ((t, s), n))
        .collect();
    seen.extend(now.keys().cloned());
    for (ty, state) in seen.iter() {
        let n = now.get(&(ty.clone(), state.clone())).copied().unwrap_or(0);
        metrics::gauge!("kineticd_operations_unfinished",
            "type" => ty.clone(), "state" => state.clone())
        .set(n as f64);
    }
    let depth: i64 = now
        .iter()
        .filter(|((_, s), _)| s == OperationState::Queued.as_str())
        .map(|(_, n)| n)
        .sum();
    metrics::gauge!("kineticd_queue_depth").set(depth as f64);
    metrics::gauge!("kineticd_queue_oldest_age_seconds").set(stats.oldest_queued_seconds);
    Ok(())
}

/// Run purges every `every` until `stop`: operations past `retention`, audit events
/// past `audit_retention`.
pub async fn run(
    db: Db,
    retention: Duration,
    audit_retention: Duration,
    every: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        if let Err(e) = purge_once(&db, retention).await {
            tracing::warn!(error = %format_args!("{e:#}"), "retention pass failed");
        }
        if let Err(e) = purge_deliveries_once(&db, retention).await {
            tracing::warn!(error = %format_args!("{e:#}"), "webhook delivery retention pass failed");
        }
        if let Err(e) = purge_events_once(&db, audit_retention).await {
            tracing::warn!(error = %format_args!("{e:#}"), "audit retention pass failed");
        }
    }
}

/// Refresh gauges every `every` until `stop`.
pub async fn run_gauges(db: Db, every: Duration, stop: CancellationToken) {
    let mut seen = BTreeSet::new();
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        if let Err(e) = refresh_gauges(&db, &mut seen).await {
            tracing::debug!(error = %format_args!("{e:#}"), "queue gauge refresh failed");
        }
    }
}
