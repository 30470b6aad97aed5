//! The Kubernetes layer: clients per GKE cluster ([`client`]), server-side apply of
//! multi-document manifests ([`apply`]), pinned manifests cached in PostgreSQL
//! ([`manifests`]), wait conditions ([`wait`]) and the inventory of nodes and pods
//! ([`inventory`]).
//!
//! Invariant: every call goes through a [`KubeCluster`], which fetches a client with a
//! current token for each request (so long waits survive token expiry) and reports
//! failures as one [`KubeError`] with a retry class.

pub mod apply;
pub mod client;
pub mod error;
pub mod health;
pub mod inventory;
pub mod manifests;
pub mod metered;
pub mod objects;
pub mod quantity;
pub mod wait;

pub use apply::{Applied, FIELD_MANAGER, parse_manifest};
pub use client::{AccessToken, ClusterAccess, KubeClients, TokenProvider};
pub use error::KubeError;
pub use inventory::{Inventory, NodeInfo, PodInfo};
pub use manifests::{
    Downloaded, ManifestConfig, ManifestSpec, PoolAccelerator, needs_nvidia_driver_installer,
};
pub use objects::ObjectKind;
pub use wait::{WaitFor, WaitOptions};

/// Tries of one idempotent call (an object's apply, a list) that fails with a retryable
/// error (429, 5xx, a timeout), and the first delay between them (doubling): a step of
/// many calls is not started over for one transient error. The crash soak (tests/soak.rs)
/// found a manifest step needing a dozen attempts, and a drill's reclaim step (an
/// inventory and five Google calls) giving up after twelve, at 25% transient faults.
pub const CALL_TRIES: u32 = 4;
const CALL_FIRST_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// One cluster's API server, reached through the shared client cache; cheap to clone.
#[derive(Clone, Debug)]
pub struct KubeCluster {
    clients: KubeClients,
    access: ClusterAccess,
}

impl KubeCluster {
    pub fn new(clients: KubeClients, access: ClusterAccess) -> KubeCluster {
        KubeCluster { clients, access }
    }

    pub fn access(&self) -> &ClusterAccess {
        &self.access
    }

    /// A client with a current token (cached unless the token or endpoint changed).
    pub async fn client(&self) -> Result<kube::Client, KubeError> {
        self.clients.client(&self.access).await
    }

    /// Classify a kube error for `action`; after a 401 the next call gets a fresh token.
    pub(crate) async fn fail(&self, action: impl Into<String>, e: kube::Error) -> KubeError {
        let err = KubeError::from_kube(action, e);
        if err.http_status() == Some(401) {
            self.clients.unauthorized(&self.access.key).await;
        }
        err
    }

    /// `call` (idempotent), sent again at once on a retryable error, up to [`CALL_TRIES`]
    /// times with short backoff; the last error, classified for `action`.
    pub(crate) async fn idempotent<T, Fut>(
        &self,
        action: &str,
        mut call: impl FnMut() -> Fut,
    ) -> Result<T, KubeError>
    where
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let mut delay = CALL_FIRST_DELAY;
        let mut tries = 1;
        loop {
            match call().await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    let err = self.fail(action, e).await;
                    if tries >= CALL_TRIES
                        || err.retry() != crate::cloud::gcp::RetryClass::Retryable
                    {
                        return Err(err);
                    }
                    tracing::debug!(error = %err, tries, "{action} failed; sending it again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                    tries += 1;
                }
            }
        }
    }

    /// The API server's version (`/version`): a cheap reachability check.
    pub async fn version(&self) -> Result<String, KubeError> {
        let client = self.client().await?;
        match client.apiserver_version().await {
            Ok(info) => Ok(info.git_version),
            Err(e) => Err(self.fail("get /version", e).await),
        }
    }
}
