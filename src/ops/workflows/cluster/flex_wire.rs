//! The wire form of a flex-start pool (GKE's "flex-start" and "flex-start with queued
//! provisioning"), as the GKE documentation creates them:
//! `gcloud container node-pools create ... --flex-start [--enable-queued-provisioning]
//! --enable-autoscaling --num-nodes=0 --total-max-nodes=N --location-policy=ANY
//! --reservation-affinity=none --no-enable-autorepair` ("Run a large-scale workload with
//! flex-start with queued provisioning", cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest,
//! and the AI Hypercomputer guide to GKE clusters of A4 / A3 Ultra VMs, whose flex-start
//! tab adds "for flex-start, [the number of nodes] must be set to 0").
//!
//! Invariant: a flex-start pool is never spot, never consumes a reservation, starts at 0
//! nodes, scales with location policy ANY, and has auto-repair off; a queued pool also
//! has queued provisioning on and leaves the run duration to each ProvisioningRequest
//! (`maxRunDurationSeconds`).

use crate::cloud::gcp::types::container::{
    NodeManagement, NodePool, NodePoolAutoscaling, QueuedProvisioning, ReservationAffinity,
};
use crate::domain::provisioning::Provisioning;
use crate::store::PoolSpecRecord;

/// Turn `pool` (built from the record like any other) into flex-start pool `mode`.
pub fn flex_pool(mut pool: NodePool, p: &PoolSpecRecord, mode: Provisioning) -> NodePool {
    let zones = i32::try_from(p.zones.len().max(1)).unwrap_or(1);
    let queued = mode == Provisioning::Queued;
    if let Some(c) = pool.config.as_mut() {
        c.flex_start = Some(true);
        c.spot = None;
        c.reservation_affinity = Some(ReservationAffinity {
            consume_reservation_type: "NO_RESERVATION".into(),
            key: None,
            values: Vec::new(),
        });
        if queued {
            c.max_run_duration = None;
        }
    }
    pool.initial_node_count = Some(0);
    pool.autoscaling = Some(NodePoolAutoscaling {
        enabled: Some(true),
        total_min_node_count: Some(0),
        total_max_node_count: Some(p.max_nodes as i32 * zones),
        location_policy: Some("ANY".into()),
        ..Default::default()
    });
    pool.management = Some(NodeManagement {
        auto_repair: Some(false),
        auto_upgrade: Some(true),
    });
    pool.queued_provisioning = queued.then_some(QueuedProvisioning { enabled: true });
    pool
}
