//! The handles every service function works with, built once by the composition root
//! (`app`) and shared by all requests.
//!
//! Invariant: one `Services` per process; it holds no per-request data, so cloning it is
//! cheap and every clone sees the same database pool, event listener and clients.

use std::sync::Arc;

use crate::cloud::Cloud;
use crate::domain::pricing::PriceTable;
use crate::ops::Events;
use crate::store::{self, Db};

use super::page::PageKey;

/// The database, the operation events, the cloud clients and the settings the service
/// layer reads.
#[derive(Clone)]
pub struct Services {
    pub db: Db,
    /// Operation events (wake-ups, cancels, waiters) from this process's LISTEN connection.
    pub events: Arc<Events>,
    /// Whether the NOOP test workflow may be enqueued.
    pub test_workflows: bool,
    /// Price estimates for plans and pools.
    pub prices: Arc<PriceTable>,
    /// Google and Kubernetes clients (live reads and checks; workflows make the changes).
    /// Behind an `Arc`: handlers get a clone of `Services` per request.
    pub cloud: Arc<Cloud>,
    /// Signs and checks page tokens (the database's key: shared by replicas).
    pub page_key: PageKey,
    /// How long a PENDING_APPROVAL operation waits for a decision.
    pub approval_ttl: std::time::Duration,
    /// Non-public addresses a webhook URL may name (`KINETIC_WEBHOOK_ALLOW`).
    pub webhook_allow: crate::domain::webhooks::Allow,
    /// The bound on a placement search's cloud reads (`KINETIC_PLACEMENT_DEADLINE_SECONDS`).
    pub placement_deadline: std::time::Duration,
    /// Team clusters' Kubernetes endpoints, remembered between placement searches.
    pub cluster_access: Arc<crate::service::placements::access_cache::AccessCache>,
}

impl Services {
    /// Readiness: the database answers and every migration is applied.
    pub async fn ready(&self) -> Result<bool, sqlx::Error> {
        store::db::ready(&self.db).await
    }
}
