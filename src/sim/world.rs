//! All simulated state, one struct per service, behind one lock. Time-driven changes
//! (an LRO reaching DONE, a cluster becoming RUNNING, the autoscaler adding nodes) are
//! applied by [`World::tick`] before any handler looks at the state.
//!
//! Invariant: handlers never hold the world lock across an `.await`.

use serde::Serialize;

use super::clock::Clock;
use super::gcp;
use super::kube;

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct World {
    pub container: gcp::container::State,
    pub compute: gcp::compute::State,
    pub storage: gcp::storage::State,
    pub iam: gcp::iam::State,
    pub resource_manager: gcp::resource_manager::State,
    pub service_usage: gcp::service_usage::State,
    pub artifact_registry: gcp::artifact_registry::State,
    pub kube: kube::State,
}

impl World {
    /// An empty world under `config`'s quotas.
    pub fn new(config: &super::SimConfig) -> World {
        let mut w = World::default();
        w.compute.default_quotas = config.quotas.clone();
        w
    }

    /// Apply every change whose virtual time has come.
    pub fn tick(&mut self, clock: &Clock) {
        gcp::service_usage::tick(self, clock);
        gcp::artifact_registry::tick(self, clock);
        gcp::compute::tick(self, clock);
        gcp::container::tick(self, clock);
        gcp::container::quota_caps(self);
        kube::tick(&mut self.kube, clock);
    }
}
