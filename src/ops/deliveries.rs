//! The webhook delivery loop (one per process with workers): claims due deliveries with
//! a short lease, POSTs each signed body, records every try, and either marks the
//! delivery DELIVERED or schedules its next try with exponential backoff and jitter,
//! until [`RETRY_PERIOD`] after it was written, then FAILED.
//!
//! Invariants:
//! - At least once: a delivery is PENDING until a 2xx answer is recorded; a process
//!   that dies mid-try leaves it leased, and it is claimed again when the lease ends.
//!   Several replicas never send one delivery at once (`FOR UPDATE SKIP LOCKED` and the
//!   lease), and only the lease's owner records the outcome.
//! - The loop wakes on the trigger's NOTIFY (through [`Events`]) and polls as a
//!   fallback, so a missed notification delays a delivery by one poll at most.
//! - No transaction is held across a POST.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::cloud::webhook::WebhookClient;
use crate::domain::webhooks::{self, Allow, DeliveryState, RETRY_PERIOD, WebhookFormat};
use crate::store::Db;
use crate::store::webhooks::{self as store, Attempt, Claimed};

use super::delivery_body;
use super::events::Events;

/// How deliveries are sent and retried.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Which addresses beyond public ones a delivery may reach (`KINETIC_WEBHOOK_ALLOW`).
    pub allow: Allow,
    /// The delay after the first failed try (doubled after each one).
    pub backoff_base: Duration,
    /// The longest delay between tries.
    pub backoff_cap: Duration,
    /// How long after it was written a delivery is still tried.
    pub retry_period: Duration,
    /// A try is given up after this.
    pub timeout: Duration,
    /// How long a claim holds a delivery (longer than `timeout`).
    pub lease: Duration,
    /// Fallback poll when no notification arrives.
    pub poll: Duration,
    /// Deliveries claimed (and sent concurrently) at once at most.
    pub batch: usize,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            allow: Allow::default(),
            backoff_base: Duration::from_secs(10),
            backoff_cap: Duration::from_secs(3600),
            retry_period: RETRY_PERIOD,
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(60),
            poll: Duration::from_secs(5),
            batch: 16,
        }
    }
}

/// Run the loop until `stop` (the tries in flight finish first).
pub async fn run(
    db: Db,
    events: Arc<Events>,
    owner: String,
    cfg: DeliveryConfig,
    stop: CancellationToken,
) {
    let client = match WebhookClient::new(cfg.allow, cfg.timeout) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "webhook client not built; no deliveries from this process");
            return;
        }
    };
    for outcome in ["DELIVERED", "NOT_DELIVERED"] {
        metrics::counter!("kineticd_webhook_attempts_total", "outcome" => outcome).increment(0);
    }
    while !stop.is_cancelled() {
        // Register for a wake-up before looking, so a notification in between counts.
        let notified = events.deliveries().notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let claimed = store::claim(&db, &owner, cfg.lease.as_secs_f64(), cfg.batch as i64).await;
        let full = match claimed {
            Ok(rows) => {
                let full = rows.len() == cfg.batch;
                let mut tries = JoinSet::new();
                for d in rows {
                    let (db, client, owner, cfg) =
                        (db.clone(), client.clone(), owner.clone(), cfg.clone());
                    tries.spawn(async move { attempt(&db, &client, &owner, &cfg, d).await });
                }
                while tries.join_next().await.is_some() {}
                full
            }
            Err(e) => {
                tracing::warn!(error = %format_args!("{e:#}"), "claiming webhook deliveries failed");
                false
            }
        };
        if full {
            continue;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep(cfg.poll) => {}
            _ = stop.cancelled() => break,
        }
    }
}

/// One try of `d`, recorded.
async fn attempt(db: &Db, client: &WebhookClient, owner: &str, cfg: &DeliveryConfig, d: Claimed) {
    let format = WebhookFormat::parse(&d.format).unwrap_or(WebhookFormat::Json);
    let body = delivery_body::body(format, d.id, &d.event, &d.payload);
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let now = Utc::now();
    let headers = [
        (
            "x-kinetic-signature",
            webhooks::signature(&d.secret, now.timestamp(), &bytes),
        ),
        ("x-kinetic-delivery", d.id.to_string()),
        ("x-kinetic-event", d.event.clone()),
    ];
    let sent = client.post(&d.url, &headers, bytes).await;
    let tries = u32::try_from(d.attempts).unwrap_or(0) + 1;
    let after = Utc::now();
    let (state, next) = if sent.delivered() {
        (DeliveryState::Delivered, after)
    } else {
        let delay = webhooks::backoff(
            tries,
            cfg.backoff_base,
            cfg.backoff_cap,
            0.5 + rand::random::<f64>() / 2.0,
        );
        let next = after + chrono::Duration::from_std(delay).unwrap_or_default();
        let end = d.create_time + chrono::Duration::from_std(cfg.retry_period).unwrap_or_default();
        if next > end {
            (DeliveryState::Failed, after)
        } else {
            (DeliveryState::Pending, next)
        }
    };
    let outcome = if sent.delivered() {
        "DELIVERED"
    } else {
        "NOT_DELIVERED"
    };
    metrics::counter!("kineticd_webhook_attempts_total", "outcome" => outcome).increment(1);
    let a = Attempt {
        time: now,
        duration_ms: i32::try_from(sent.duration.as_millis()).unwrap_or(i32::MAX),
        status: sent.status.map(i32::from),
        error: sent.error.as_deref(),
        state: state.as_str(),
        next,
    };
    match store::record_attempt(db, d.id, owner, &a).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(delivery.id = %d.id, "delivery's lease lost or webhook deleted; try not recorded")
        }
        Err(e) => {
            tracing::warn!(delivery.id = %d.id, error = %format_args!("{e:#}"), "webhook try not recorded")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_outlasts_a_try() {
        let c = DeliveryConfig::default();
        assert!(c.lease > c.timeout * 2);
        assert!(c.backoff_base < c.backoff_cap);
    }
}
