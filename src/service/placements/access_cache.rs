//! How to reach each team cluster's Kubernetes API, remembered between searches (as the
//! usage collector remembers it): a placement search over 50 clusters would otherwise
//! ask GKE for 50 endpoints every time.
//!
//! Invariant: an entry is used for at most [`ACCESS_TTL`] and is dropped as soon as a
//! read through it fails (the cluster may have been recreated with a new endpoint or
//! certificate), so a stale endpoint costs one failed read, never a wrong answer.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cloud::kube::ClusterAccess;

/// How long a cluster's endpoint is reused before GKE is asked again.
pub const ACCESS_TTL: Duration = Duration::from_secs(600);

/// Cluster key (`projects/p/locations/z/clusters/c`) -> access and when it was read.
#[derive(Debug, Default)]
pub struct AccessCache(Mutex<HashMap<String, (ClusterAccess, Instant)>>);

impl AccessCache {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, (ClusterAccess, Instant)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The remembered access of `key`, while fresh.
    pub fn get(&self, key: &str) -> Option<ClusterAccess> {
        self.map()
            .get(key)
            .filter(|(_, at)| at.elapsed() < ACCESS_TTL)
            .map(|(a, _)| a.clone())
    }

    pub fn put(&self, key: &str, access: ClusterAccess) {
        self.map().insert(key.to_owned(), (access, Instant::now()));
    }

    pub fn forget(&self, key: &str) {
        self.map().remove(key);
    }
}
