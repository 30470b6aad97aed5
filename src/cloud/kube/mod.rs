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
pub mod rbac;
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

use crate::cloud::gcp::RetryClass;
use crate::cloud::retry::{Failure, Retries, RetryReason};

/// The `service` label of Kubernetes calls.
const SERVICE: &str = "kubernetes";

/// Tries of one idempotent call (an object's apply, a list) that fails with a retryable
/// error (429, 5xx, a timeout), under either budget: a step of many calls is not started
/// over for one transient error. The crash soak (tests/soak.rs) found a manifest step
/// needing a dozen attempts, and a drill's reclaim step (an inventory and five Google
/// calls) giving up after twelve, at 25% transient faults. The budget of the handle
/// ([`KubeClients::with_budget`]) sets the tries and the deadline.
pub const CALL_TRIES: u32 = crate::cloud::retry::MAX_TRIES;

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

    /// `call` (idempotent) of `method` (`nodes.list`: a bounded label), sent again on a
    /// retryable error after a backoff (or the server's `retryAfterSeconds`) within the
    /// handle's budget ([`crate::cloud::retry`], the mechanism Google's calls use too);
    /// the last error, classified for `action`.
    pub(crate) async fn idempotent<T, Fut>(
        &self,
        method: &'static str,
        action: &str,
        mut call: impl FnMut() -> Fut,
    ) -> Result<T, KubeError>
    where
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let mut retries = Retries::start(self.clients.budget(), SERVICE, method);
        loop {
            let e = match tokio::time::timeout_at(retries.deadline(), call()).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => e,
                // The budget's deadline (a request's own) is over: no retry either.
                Err(_) => {
                    return Err(KubeError::Transport {
                        action: action.to_owned(),
                        message: format!(
                            "no answer within the call's deadline (after {} tries)",
                            retries.tries()
                        ),
                    });
                }
            };
            let retry_after = match &e {
                kube::Error::Api(s) => s
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|s| *s > 0)
                    .map(|s| std::time::Duration::from_secs(u64::from(s))),
                _ => None,
            };
            let err = self.fail(action, e).await;
            let failure = Failure {
                retryable: err.retry() == RetryClass::Retryable,
                reason: match err.http_status() {
                    Some(code) => RetryReason::of_http(code),
                    None => RetryReason::Transport,
                },
                retry_after,
            };
            match retries.after(failure) {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Err(err),
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
