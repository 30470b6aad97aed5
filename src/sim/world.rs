//! All simulated state, one struct per service, behind one lock. Time-driven changes
//! (an LRO reaching DONE, a cluster becoming RUNNING, the autoscaler adding nodes) are
//! applied by [`World::tick`] before any handler looks at the state.
//!
//! Invariant: handlers never hold the world lock across an `.await`.

use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

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
    /// The quota caps handed to the Kubernetes side match the state: nothing they read
    /// (pools, node counts, quotas, reservations) changed since they were computed.
    /// Cleared by every mutable borrow of the world outside a tick ([`crate::sim::Sim::world`]'s
    /// guard) but the Kubernetes side's ([`WorldGuard::kube_mut`]: its reconciles flag
    /// the node counts they change), and by every tick step that changed something.
    #[serde(skip)]
    pub caps_fresh: bool,
}

/// The world under its lock, ticked. Reading through it leaves the quota caps as they
/// are; a mutable borrow marks them for computing again at the next tick, so no caller
/// can change what they read without it being noticed.
pub struct WorldGuard<'a>(pub(super) MutexGuard<'a, World>);

impl Deref for WorldGuard<'_> {
    type Target = World;
    fn deref(&self) -> &World {
        &self.0
    }
}

impl DerefMut for WorldGuard<'_> {
    fn deref_mut(&mut self) -> &mut World {
        self.0.caps_fresh = false;
        &mut self.0
    }
}

impl WorldGuard<'_> {
    /// The Kubernetes side, mutably, leaving the quota caps fresh: of what they read, only
    /// the pools' node counts are there, and the reconcile that changes one flags it
    /// ([`kube::take_counts_changed`]). So the Kubernetes API's own writes (objects, the
    /// authorizations it records) do not recompute every cluster's caps.
    pub fn kube_mut(&mut self) -> &mut kube::State {
        &mut self.0.kube
    }
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
        let compute = gcp::compute::tick(self, clock);
        let container = gcp::container::tick(self, clock);
        let counts = kube::take_counts_changed(&mut self.kube);
        // Quota caps cost a pass over every cluster's pools: with a thousand clusters
        // that was half the simulator's time when done before every call. They are
        // computed again only when something they read may have changed.
        if compute || container || counts || !self.caps_fresh {
            gcp::container::quota_caps(self);
            self.caps_fresh = true;
        }
        if kube::tick(&mut self.kube, clock) {
            self.caps_fresh = false;
        }
    }
}
