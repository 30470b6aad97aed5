//! All simulated state, one struct per service, behind one lock. Time-driven changes
//! (an LRO reaching DONE, a cluster becoming RUNNING, the autoscaler adding nodes) are
//! applied by [`World::tick`] before any handler looks at the state.
//!
//! Invariant: handlers never hold the world lock across an `.await`.

use std::cell::Cell;
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
    /// the node counts they change) and those of the services the caps do not read
    /// ([`answering`]), and by every tick step that changed something.
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
        if !CAPS_BLIND.get() {
            self.0.caps_fresh = false;
        }
        &mut self.0
    }
}

/// The Google services whose state the quota caps do not read: none of their handlers
/// writes GKE's clusters, Compute's quotas or reservations, or the Kubernetes side.
const CAPS_BLIND_SERVICES: [&str; 5] = [
    "iam",
    "storage",
    "cloudresourcemanager",
    "serviceusage",
    "artifactregistry",
];

thread_local! {
    /// Set while a handler of one of [`CAPS_BLIND_SERVICES`] answers (synchronously, on
    /// this thread): its mutable borrows of the world leave the quota caps fresh.
    static CAPS_BLIND: Cell<bool> = const { Cell::new(false) };
}

/// Run `answer`, a handler of `service`, marking the quota caps stale on a mutable borrow
/// only when `service`'s state may be what they read.
pub fn answering<R>(service: &str, answer: impl FnOnce() -> R) -> R {
    if !CAPS_BLIND_SERVICES.contains(&service) {
        return answer();
    }
    /// Clears the flag however `answer` ends (a panic included).
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CAPS_BLIND.set(false);
        }
    }
    CAPS_BLIND.set(true);
    let _reset = Reset;
    answer()
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
        // What these reconciles change in the node counts is flagged, and taken above
        // at the next tick, before anything reads the caps.
        kube::tick(&mut self.kube, clock);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Borrow the world mutably through a guard, as a handler does; whether the quota
    /// caps are still fresh afterwards.
    fn write(m: &Mutex<World>, how: impl FnOnce(&mut WorldGuard<'_>)) -> bool {
        m.lock().unwrap().caps_fresh = true;
        how(&mut WorldGuard(m.lock().unwrap()));
        m.lock().unwrap().caps_fresh
    }

    #[test]
    fn only_writes_the_caps_may_read_mark_them_stale() {
        let m = Mutex::new(World::default());
        let plain = |g: &mut WorldGuard<'_>| {
            let _: &mut World = g;
        };
        assert!(!write(&m, plain), "a write of anything");
        assert!(write(&m, |g| answering("iam", || plain(g))), "IAM's");
        assert!(
            write(&m, |g| answering("storage", || plain(g))),
            "Storage's"
        );
        assert!(!write(&m, |g| answering("container", || plain(g))), "GKE's");
        assert!(
            !write(&m, |g| answering("compute", || plain(g))),
            "Compute's"
        );
        assert!(
            write(&m, |g| {
                g.kube_mut();
            }),
            "the Kubernetes side's (its reconciles flag the node counts)"
        );
        let _ = std::panic::catch_unwind(|| answering("iam", || panic!("a handler panics")));
        assert!(!write(&m, plain), "the flag does not outlive its answer");
    }
}
