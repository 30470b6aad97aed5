//! The simulated Kubernetes API of each simulated GKE cluster, served under
//! `/kube/{cluster}/` ([`http`]), with node objects that follow the GKE node pools,
//! a scheduler, a cluster autoscaler and status controllers on the simulator clock
//! ([`cluster`]), plus admin endpoints: the simulator's own manifests and spot reclaims
//! ([`admin`]), and objects held unhealthy ([`ailments`]); requests by users are
//! authenticated and authorised with RBAC ([`rbac`]).
//!
//! Invariant: the GKE simulator drives this module only through [`State`]'s pool and
//! cluster functions; every change marks the cluster for reconciliation, which
//! [`tick`] (run before any handler reads the world) performs, so callers always see
//! nodes, pods and statuses consistent with the pools and the virtual time.

pub mod admin;
pub mod admission;
pub mod ailments;
pub mod cluster;
pub mod compute_class;
pub mod controller_pods;
pub mod controllers;
pub mod device_plugin;
pub mod events;
pub mod http;
pub mod manifests;
pub mod node_view;
pub mod nodes;
pub mod objects;
pub mod openapi;
pub mod pod_sets;
pub mod provisioning_request;
pub mod quantities;
pub mod rbac;
pub mod request;
pub mod resources;
pub mod scale_up_events;
pub mod sched;
pub mod selectors;
pub mod status;
pub mod strategic;
pub mod table;
pub mod validation;
pub mod verbs;
pub mod watch;
pub mod workloads;

use std::collections::BTreeMap;

use axum::Router;
use serde::Serialize;

use crate::sim::Sim;
use crate::sim::clock::{Clock, SimTime};

pub use cluster::{ClusterKube, PoolRuntime, Reclaim};

/// The simulated clusters' CA certificate (PEM; self-signed, no private key kept).
/// GKE's `masterAuth.clusterCaCertificate` is the base64 of such a PEM.
pub const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBljCCAT2gAwIBAgIUU5plAbUNr0t8n0HR9MaQMA3A/T0wCgYIKoZIzj0EAwIw\nIDEeMBwGA1UEAwwVa2luZXRpY2Qtc2ltdWxhdG9yLWNhMCAXDTI2MTEyOTIwNDMx\nMVoYDzIxMjYxMTA1MjA0MzExWjAgMR4wHAYDVQQDDBVraW5ldGljZC1zaW11bGF0\nb3ItY2EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAT2iL0uaF1UZ9W0e7NJkxtx\nL3B4U2J1pqMOEK46lWluYOXDrGRB0iUrdtOq54nCVxMIvQRB8sDwW58Ipx+6XjqF\no1MwUTAdBgNVHQ4EFgQUtkVyWa1lKg3Sc5wAh5mPiD/JxygwHwYDVR0jBBgwFoAU\ntkVyWa1lKg3Sc5wAh5mPiD/JxygwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD\nAgNHADBEAiBFmWZt3jaPzchJBw6v+XVgHE8zwuZQk4c3S7meraxDPwIgRfrot3cT\nIKmnFAxhzrXJOqHNCpg1Sbb0p1BD9xQjT+k=\n-----END CERTIFICATE-----";

/// What the GKE side tells the Kubernetes side about one node pool.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolNodes {
    pub pool: String,
    pub machine_type: String,
    pub zones: Vec<String>,
    /// Autoscaling bounds (per zone, like GKE's minNodeCount/maxNodeCount). The
    /// autoscaler never grows a pool beyond `max` (use `max = count` without autoscaling).
    pub min: u32,
    pub max: u32,
    /// Nodes now (per zone).
    pub count: u32,
    pub spot: bool,
    /// Node labels as GKE sets them (incl. cloud.google.com/gke-nodepool, ...).
    pub labels: BTreeMap<String, String>,
    /// (key, value, effect) with effect NoSchedule | PreferNoSchedule | NoExecute.
    pub taints: Vec<(String, String, String)>,
    /// Extended resources per node, e.g. `nvidia.com/gpu` -> "1".
    pub allocatable: BTreeMap<String, String>,
}

#[cfg(test)]
impl PoolNodes {
    /// A test pool `name` of one-GPU `g2-standard-4` nodes in `us-central1-a` (at most
    /// `max`), labelled and tainted as GKE does a GPU pool, plus the label and NoSchedule
    /// taint `tag` (key, value) when given.
    pub(crate) fn gpu_for_tests(name: &str, max: u32, tag: Option<(&str, &str)>) -> PoolNodes {
        let mut labels =
            BTreeMap::from([("cloud.google.com/gke-nodepool".to_owned(), name.to_owned())]);
        let mut taints = vec![(
            "nvidia.com/gpu".to_owned(),
            "present".to_owned(),
            "NoSchedule".to_owned(),
        )];
        if let Some((key, value)) = tag {
            labels.insert(key.into(), value.into());
            taints.push((key.into(), value.into(), "NoSchedule".into()));
        }
        PoolNodes {
            pool: name.into(),
            machine_type: "g2-standard-4".into(),
            zones: vec!["us-central1-a".into()],
            max,
            labels,
            taints,
            allocatable: BTreeMap::from([("nvidia.com/gpu".to_owned(), "1".to_owned())]),
            ..PoolNodes::default()
        }
    }
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub clusters: BTreeMap<String, ClusterKube>,
    /// Downloads of the simulator's own manifests, by file name.
    pub manifest_downloads: BTreeMap<String, u64>,
}

impl State {
    /// A new, empty API server for cluster `key` (URL-safe; served at `/kube/{key}`).
    pub fn add_cluster(&mut self, key: &str) {
        self.clusters
            .entry(key.to_owned())
            .or_insert_with(|| ClusterKube::new(key));
    }

    pub fn remove_cluster(&mut self, key: &str) {
        self.clusters.remove(key);
    }

    /// Create or replace a pool's nodes (the autoscaler's plans for the pool are kept).
    pub fn upsert_pool(&mut self, key: &str, pool: PoolNodes) {
        if let Some(c) = self.clusters.get_mut(key) {
            c.pools.insert(pool.pool.clone(), pool);
            c.mark_dirty();
        }
    }

    pub fn remove_pool(&mut self, key: &str, pool: &str) {
        if let Some(c) = self.clusters.get_mut(key) {
            c.pools.remove(pool);
            c.runtime.remove(pool);
            c.mark_dirty();
        }
    }

    /// Current node count per zone (the autoscaler may have changed it).
    pub fn pool_node_count(&self, key: &str, pool: &str) -> Option<u32> {
        self.clusters.get(key)?.pools.get(pool).map(|p| p.count)
    }

    pub fn set_pool_size(&mut self, key: &str, pool: &str, count: u32) {
        if let Some(c) = self.clusters.get_mut(key)
            && let Some(p) = c.pools.get_mut(pool)
        {
            p.count = count;
            if let Some(rt) = c.runtime.get_mut(pool)
                && rt.scale_to.is_some_and(|(_, t)| t <= count)
            {
                rt.scale_to = None;
            }
            c.mark_dirty();
        }
    }

    /// Spot reclaim of `pool` at virtual time `now` (see [`ClusterKube::reclaim`]).
    pub fn reclaim_pool(
        &mut self,
        key: &str,
        pool: &str,
        now: SimTime,
    ) -> Result<Reclaim, (u16, String)> {
        match self.clusters.get_mut(key) {
            Some(c) => c.reclaim(pool, now),
            None => Err((404, format!("cluster {key} not found"))),
        }
    }
}

pub fn routes() -> Router<Sim> {
    Router::new()
        .merge(http::routes())
        .merge(admin::routes())
        .merge(ailments::routes())
}

/// Reconcile every cluster that changed or has a transition due (the node counts they
/// change are flagged for [`take_counts_changed`]).
pub fn tick(state: &mut State, clock: &Clock) {
    for c in state.clusters.values_mut() {
        c.tick(clock);
    }
}

/// Whether a reconcile (a tick's, or one an API call ran) changed a pool's node count
/// since the last look.
pub fn take_counts_changed(state: &mut State) -> bool {
    state
        .clusters
        .values_mut()
        .fold(false, |any, c| c.take_counts_changed() | any)
}
