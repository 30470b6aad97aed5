//! The simulated Kubernetes API of each simulated GKE cluster, served under
//! `/kube/{cluster}/`. The GKE simulator creates and removes clusters and node pools
//! through the functions below; nodes follow the pools.

use std::collections::BTreeMap;

/// The simulated clusters' CA certificate (PEM; self-signed, no private key kept).
/// GKE's `masterAuth.clusterCaCertificate` is the base64 of such a PEM.
pub const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBljCCAT2gAwIBAgIUU5plAbUNr0t8n0HR9MaQMA3A/T0wCgYIKoZIzj0EAwIw\nIDEeMBwGA1UEAwwVa2luZXRpY2Qtc2ltdWxhdG9yLWNhMCAXDTI2MTEyOTIwNDMx\nMVoYDzIxMjYxMTA1MjA0MzExWjAgMR4wHAYDVQQDDBVraW5ldGljZC1zaW11bGF0\nb3ItY2EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAT2iL0uaF1UZ9W0e7NJkxtx\nL3B4U2J1pqMOEK46lWluYOXDrGRB0iUrdtOq54nCVxMIvQRB8sDwW58Ipx+6XjqF\no1MwUTAdBgNVHQ4EFgQUtkVyWa1lKg3Sc5wAh5mPiD/JxygwHwYDVR0jBBgwFoAU\ntkVyWa1lKg3Sc5wAh5mPiD/JxygwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD\nAgNHADBEAiBFmWZt3jaPzchJBw6v+XVgHE8zwuZQk4c3S7meraxDPwIgRfrot3cT\nIKmnFAxhzrXJOqHNCpg1Sbb0p1BD9xQjT+k=\n-----END CERTIFICATE-----";

use axum::Router;
use serde::Serialize;

use crate::sim::Sim;
use crate::sim::clock::Clock;
use crate::sim::world::World;

/// What the GKE side tells the Kubernetes side about one node pool.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolNodes {
    pub pool: String,
    pub machine_type: String,
    pub zones: Vec<String>,
    /// Autoscaling bounds (per zone, like GKE's minNodeCount/maxNodeCount).
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

#[derive(Debug, Default, Serialize)]
pub struct ClusterKube {
    pub pools: BTreeMap<String, PoolNodes>,
}

#[derive(Debug, Default, Serialize)]
pub struct State {
    pub clusters: BTreeMap<String, ClusterKube>,
}

impl State {
    /// A new, empty API server for cluster `key` (URL-safe; served at `/kube/{key}`).
    pub fn add_cluster(&mut self, key: &str) {
        self.clusters.entry(key.to_owned()).or_default();
    }

    pub fn remove_cluster(&mut self, key: &str) {
        self.clusters.remove(key);
    }

    /// Create or replace a pool's nodes.
    pub fn upsert_pool(&mut self, key: &str, pool: PoolNodes) {
        if let Some(c) = self.clusters.get_mut(key) {
            c.pools.insert(pool.pool.clone(), pool);
        }
    }

    pub fn remove_pool(&mut self, key: &str, pool: &str) {
        if let Some(c) = self.clusters.get_mut(key) {
            c.pools.remove(pool);
        }
    }

    /// Current node count per zone (the autoscaler may have changed it).
    pub fn pool_node_count(&self, key: &str, pool: &str) -> Option<u32> {
        self.clusters.get(key)?.pools.get(pool).map(|p| p.count)
    }

    pub fn set_pool_size(&mut self, key: &str, pool: &str, count: u32) {
        if let Some(p) = self
            .clusters
            .get_mut(key)
            .and_then(|c| c.pools.get_mut(pool))
        {
            p.count = count;
        }
    }
}

pub fn routes() -> Router<Sim> {
    Router::new()
}

pub fn tick(_world: &mut World, _clock: &Clock) {}
